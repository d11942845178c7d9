"""Precision and recall of the privacy check on the labelled texts in tests/data/privacy_eval.jsonl.

Run: python tests/perf/privacy_eval.py [CASES.jsonl]
A case is {"text", "expect": [{"category", "value"}], "lang", "provider"?}. A detection
is right when its category is expected and its span overlaps the expected value. Prints
precision and recall overall and per category, the time per text, and every miss and
false alarm; recall on the credential shapes of the major providers must be 1.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from mnemoscope.store.curation.privacy_scan import scan_text  # noqa: E402

CASES = Path(__file__).resolve().parents[1] / "data" / "privacy_eval.jsonl"


def evaluate(path: Path = CASES) -> dict:
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    per: dict[str, dict[str, int]] = {}
    misses, false_alarms, provider_misses = [], [], []
    t0 = time.perf_counter()
    detections = [scan_text(c["text"]) for c in cases]
    seconds = time.perf_counter() - t0
    for case, found in zip(cases, detections):
        text = case["text"]
        matched = set()
        for exp in case["expect"]:
            start = text.find(exp["value"])
            assert start >= 0, f"labelled value not in its text: {exp['value']!r}"
            end = start + len(exp["value"])
            stats = per.setdefault(exp["category"], {"tp": 0, "fp": 0, "fn": 0})
            hit = [i for i, d in enumerate(found) if d.category == exp["category"] and d.start < end and d.end > start]
            if hit:
                stats["tp"] += 1
                matched.update(hit)
            else:
                stats["fn"] += 1
                misses.append((exp["category"], text))
                if case.get("provider") and exp["category"] == "credential":
                    provider_misses.append(case["provider"])
        for i, d in enumerate(found):
            if i not in matched:
                per.setdefault(d.category, {"tp": 0, "fp": 0, "fn": 0})["fp"] += 1
                false_alarms.append((d.category, text[d.start:d.end][:6] + "…", text))
    tp = sum(s["tp"] for s in per.values())
    fp = sum(s["fp"] for s in per.values())
    fn = sum(s["fn"] for s in per.values())
    return {
        "texts": len(cases), "with_secrets": sum(1 for c in cases if c["expect"]),
        "languages": sorted({c.get("lang", "en") for c in cases}),
        "precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 1.0,
        "per_category": per, "misses": misses, "false_alarms": false_alarms, "provider_misses": provider_misses,
        "ms_per_text": seconds * 1000 / max(len(cases), 1),
    }


def main() -> None:
    r = evaluate(Path(sys.argv[1]) if len(sys.argv) > 1 else CASES)
    print(f"{r['texts']} texts ({r['with_secrets']} with something to find), languages {', '.join(r['languages'])}")
    print(f"precision {r['precision']:.3f}  recall {r['recall']:.3f}  ({r['ms_per_text']:.2f} ms per text)")
    for cat, s in sorted(r["per_category"].items()):
        p = s["tp"] / (s["tp"] + s["fp"]) if s["tp"] + s["fp"] else 1.0
        rec = s["tp"] / (s["tp"] + s["fn"]) if s["tp"] + s["fn"] else 1.0
        print(f"  {cat:<10} precision {p:.3f}  recall {rec:.3f}  (tp {s['tp']}, fp {s['fp']}, fn {s['fn']})")
    print("provider credential misses:", ", ".join(r["provider_misses"]) or "none")
    for cat, text in r["misses"]:
        print(f"  missed {cat}: {text!r}")
    for cat, preview, text in r["false_alarms"]:
        print(f"  false alarm {cat} {preview}: {text!r}")


if __name__ == "__main__":
    main()
