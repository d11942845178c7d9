"""The cosine over which remember takes a new text for one the scope already holds
(``limits.meaning_duplicate``): the default embedder's cosines of labelled pairs, the
same fact reworded (should merge) and two facts alike in subject (must not), and the
precision and recall of merging at each threshold. store.duplicates.difference then
keeps negations, numbers and names apart whatever the cosine.

Run: python tests/perf/duplicates_eval.py
"""

from __future__ import annotations

import numpy as np
from mnemoscope.store.curation.duplicates import difference
from mnemoscope.store.meaning.embedding import UseEmbedder

SAME = [
    ("Mara is allergic to peanuts.", "Mara has a peanut allergy."),
    ("Usually stays up past two in the morning.", "Mostly stays up past two in the morning."),
    ("Theo drinks his coffee black.", "Theo takes his coffee black."),
    ("Priya works at the city library.", "Priya is employed at the city library."),
    ("The standup is at 9:30 every weekday.", "Every weekday the standup is at 9:30."),
    ("Mara's cat is called Miso.", "Mara's cat is named Miso."),
    ("Prefers short answers.", "Prefers answers that are short."),
    ("玛拉对花生过敏。", "玛拉花生过敏。"),
    ("Theo lives in Porto.", "Theo lives in Porto now."),
    ("Priya likes green tea.", "Priya enjoys green tea."),
    ("The backups run on Fridays.", "Backups run every Friday."),
    ("Mara writes code mostly in Rust.", "Mara mostly writes Rust code."),
]
DIFFERENT = [
    ("Mara is allergic to peanuts.", "Mara is allergic to cats."),
    ("Theo drinks his coffee black.", "Theo drinks his tea black."),
    ("Priya works at the city library.", "Priya volunteers at the city library."),
    ("Mara's cat is called Miso.", "Mara's dog is called Miso."),
    ("Theo lives in Porto.", "Theo grew up in Porto."),
    ("Priya likes green tea.", "Priya likes green apples."),
    ("The backups run on Fridays.", "The deploys run on Fridays."),
    ("Mara writes code mostly in Rust.", "Mara reads books mostly in Spanish."),
    ("玛拉对花生过敏。", "玛拉对猫过敏。"),
    ("Prefers short answers.", "Prefers short meetings."),
    ("Mara is learning the cello.", "Mara is teaching the cello."),
    ("The invoice goes to the finance team.", "The invoice comes from the finance team."),
]


def main() -> None:
    e = UseEmbedder()

    def cos(pairs):
        out = []
        for a, b in pairs:
            v = e.embed([a, b])
            out.append(float(v[0] @ v[1]))
        return np.array(out)

    same, diff = cos(SAME), cos(DIFFERENT)
    print("same fact:     ", " ".join(f"{c:.2f}" for c in sorted(same)))
    print("different fact:", " ".join(f"{c:.2f}" for c in sorted(diff)))
    kept_apart = [difference(a, b) is not None for a, b in SAME]
    print(f"pairs of the same fact that difference() keeps apart: {sum(kept_apart)} of {len(SAME)}")
    for t in (0.8, 0.84, 0.88, 0.9, 0.92, 0.94, 0.95, 0.96, 0.98):
        tp = int(((same >= t) & ~np.array(kept_apart)).sum())
        fp = int((diff >= t).sum())
        print(f"threshold {t:.2f}: merges {tp} of {len(SAME)} rewordings, {fp} of {len(DIFFERENT)} different facts")


if __name__ == "__main__":
    main()
