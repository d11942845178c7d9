"""A memory that looks lived in, at any size: what the inspector's benchmarks and README
screenshots open.

Run: python tests/perf/lived_memory.py PATH [N]   (default N 100,000; builds PATH once)

Unlike the uniform generators beside it (ui_bench's, store_bench's), the memories here
are sentences a person could have told an agent, about topics of very unequal size (a
few big ones, a long tail: Zipf-like, as a real memory is), mentioning entities of very
unequal fame (Mara in thousands of memories, most people in a handful), of every kind
and age, some recalled often. The map's sectors, labels and entity placement only show
their worth on such a memory: ten equal topics hide what unequal ones reveal. The
memories are embedded by the store's embedder (the default model), so search by meaning
and the arrangement by meaning work on it; at 100,000 the build takes minutes.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

DAY = 86400.0

# topic: (subjects, what is said about them); a sentence is "<subject> <predicate>".
TOPICS = {
    "cooking": (["Mara", "Theo", "the user", "Priya"],
                ["likes her curry with extra lime", "cannot eat peanuts", "bakes sourdough on Sundays",
                 "wants recipes under thirty minutes", "prefers cast iron to non-stick", "hates coriander",
                 "is trying to cook more lentils", "makes ramen from scratch once a month"]),
    "work": (["The release", "The deploy", "The standup", "The on-call rota", "The Lighthouse service"],
             ["runs every Tuesday after review", "moved to 10:15 on Mondays", "needs two approvals",
              "failed last week because of a flaky test", "is owned by the platform team",
              "pages whoever is on call after midnight", "must be tagged before it ships"]),
    "garden": (["The balcony tomatoes", "The basil", "The compost", "The fig tree", "The seed swap"],
               ["need water every second day in summer", "came back after the frost", "is turned on Saturdays",
                "is at the community hall in April", "got aphids in June", "likes the morning sun"]),
    "travel": (["The trip to Lisbon", "The flight to Tokyo", "The train to Porto", "The hotel in Kyoto"],
               ["is booked for the second week of May", "needs a visa checked", "leaves at 7:40 from gate 12",
                "has a window seat", "was moved by a day", "includes a day in Nara"]),
    "health": (["Mara", "Theo", "The user"], ["sees the dentist every six months", "takes the allergy pills in spring",
                                            "runs 5 km on Wednesdays", "sleeps badly after late coffee",
                                            "has physiotherapy for the left knee"]),
    "family": (["Mara's sister", "Theo's father", "Grandma Ines", "The twins"],
               ["has a birthday on 3 March", "lives in Coimbra", "calls on Sunday evenings",
                "started school this autumn", "likes postcards more than messages"]),
    "money": (["The rent", "The electricity bill", "The savings plan", "The tax return"],
              ["is due on the first of the month", "went up by eight percent", "is paid from the joint account",
               "must be filed before the end of June", "is reviewed every quarter"]),
    "reading": (["Mara", "The book club", "Theo"], ["is reading a novel by Le Guin", "meets on the last Thursday",
                                                  "prefers paper books to e-readers", "keeps notes in the margins"]),
    "music": (["Mara", "The cello lessons", "Theo"], ["practises the cello before breakfast",
                                                     "moved to Thursday evenings", "plays bass in a jazz trio"]),
    "climbing": (["The climbing gym", "Mara", "The Sintra trip"], ["is closed on public holidays",
                                                                  "leads 6b routes now", "is planned for October"]),
    "languages": (["Mara", "The Mandarin class", "Theo"], ["is learning Mandarin with a tutor",
                                                          "has a test in December", "practises Japanese on the train"]),
    "pets": (["Miso the cat", "The neighbour's dog"], ["eats only the salmon food", "hides under the bed in storms",
                                                      "needs the vet in March"]),
}
# Entities by fame: the first ones are mentioned in very many memories, the tail in few.
PEOPLE = ["Mara", "Theo", "Priya", "Jonas", "Aiko", "Ines", "Rui Sousa", "Lena", "Omar", "Sofia", "Kenji",
          "Beatriz", "Noah", "Hana", "Tomás", "Yara", "Felix", "Amara", "Diego", "Mei"]
PLACES = ["Lisbon", "Porto", "Tokyo", "Kyoto", "Coimbra", "Sintra", "Nara", "Berlin", "Lyon", "Oslo"]
THINGS = ["Lighthouse", "Quill", "Obsidian", "git", "calendar", "Balcony Garden Club", "Miso", "Postgres",
          "Grafana", "the cello"]
KINDS = (("fact", 5), ("event", 3), ("lesson", 1), ("skill", 1), ("reflection", 1))


def _zipf_choice(rng: random.Random, items: list, power: float = 1.0):
    weights = [1.0 / (rank + 1) ** power for rank in range(len(items))]
    return rng.choices(items, weights)[0]


def lines(n: int, seed: int = 11, now: float | None = None) -> list[str]:
    """``n`` JSONL lines of lived-in memories (ids ``l000001`` on)."""
    rng = random.Random(seed)
    now = time.time() if now is None else now
    topics = list(TOPICS)
    entities = PEOPLE + PLACES + THINGS
    kinds = [k for k, w in KINDS for _ in range(w)]
    out = []
    for i in range(n):
        topic = _zipf_choice(rng, topics, 0.9)
        subjects, predicates = TOPICS[topic]
        text = f"{rng.choice(subjects)} {rng.choice(predicates)}"
        if rng.random() < 0.5:
            text += f" ({rng.choice(['since spring', 'as of last week', 'said twice', 'noted in the call', 'again'])})"
        mentioned = sorted({_zipf_choice(rng, entities, 1.1) for _ in range(rng.choice([0, 1, 1, 2, 3]))})
        age = rng.expovariate(1 / 90)  # most memories recent, some very old
        out.append(json.dumps({
            "id": f"l{i + 1:06d}", "text": f"{text} #{i + 1}", "kind": rng.choice(kinds),
            "importance": round(rng.betavariate(2, 3), 2), "topic": topic if rng.random() < 0.85 else "",
            "entities": mentioned, "recall_count": rng.choice([0, 0, 0, 1, 2, 3, 8, 20]),
            "created_at": now - age * DAY, "ref_time": now - age * DAY * rng.random(),
            "scope": rng.choice(["global"] * 8 + ["group:family", "private:mara"]),
        }, ensure_ascii=False))
    return out


def build(path: str, n: int, embedder=None) -> None:
    """Import ``n`` lived-in memories into a new database at ``path`` and tick once."""
    from mnemoscope.store import MemoryStore

    if os.path.exists(path):
        raise SystemExit(f"{path} exists: give a new path")
    started = time.perf_counter()
    with MemoryStore(path, embedder=embedder) as store:
        step = 10_000
        data = lines(n)
        for first in range(0, n, step):
            store.import_jsonl(data[first:first + step])
            print(f"{min(first + step, n):,} / {n:,} imported ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr)
        store.tick()
    print(f"built {path}: {n:,} memories in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    build(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
