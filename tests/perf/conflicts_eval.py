"""Precision and recall of conflict detection on the labelled pairs in tests/data/conflict_eval.jsonl.

Run: python tests/perf/conflicts_eval.py [PAIRS.jsonl]
A pair is {"a": {"text", "who"}, "b": {"text", "who"}, "label": "conflict" | "consistent" |
"unrelated", "lang"}. Each pair goes into a fresh store (a first, b a day later, as
``remember`` would write them); a conflict is predicted when the scan of the store finds
one, and separately when ``remember`` of b reports one. Targets: precision >= 0.8,
recall >= 0.6. Prints the misses and false alarms.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.conflicts import scan  # noqa: E402

PAIRS = Path(__file__).resolve().parents[1] / "data" / "conflict_eval.jsonl"
T0 = 1_790_000_000


def _score(pairs: list[dict], predicted: list[bool]) -> dict:
    tp = sum(1 for p, y in zip(pairs, predicted) if y and p["label"] == "conflict")
    fp = sum(1 for p, y in zip(pairs, predicted) if y and p["label"] != "conflict")
    fn = sum(1 for p, y in zip(pairs, predicted) if not y and p["label"] == "conflict")
    return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 1.0,
            "tp": tp, "fp": fp, "fn": fn}


def evaluate(path: Path = PAIRS) -> dict:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_scan, by_remember = [], []
    for pair in pairs:
        with MemoryStore() as s:
            a = s.remember(pair["a"]["text"], who=pair["a"].get("who", ""), now=T0, dedupe=False)
            b = s.remember(pair["b"]["text"], who=pair["b"].get("who", ""), now=T0 + 86400, dedupe=False)
            by_scan.append(any({c.newer, c.older} == {a.memory.id, b.memory.id} for c in scan(s)))
            by_remember.append(any(c.older == a.memory.id for c in b.conflicts))
    per_lang = {}
    for lang in sorted({p["lang"] for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if p["lang"] == lang]
        per_lang[lang] = _score([pairs[i] for i in idx], [by_scan[i] for i in idx])
    wrong = [(p["label"], p["a"]["text"], p["b"]["text"]) for p, y in zip(pairs, by_scan)
             if y != (p["label"] == "conflict")]
    return {"pairs": len(pairs), "labels": {k: sum(p["label"] == k for p in pairs)
                                            for k in ("conflict", "consistent", "unrelated")},
            "scan": _score(pairs, by_scan), "remember": _score(pairs, by_remember), "per_language": per_lang,
            "wrong": wrong}


def main() -> None:
    r = evaluate(Path(sys.argv[1]) if len(sys.argv) > 1 else PAIRS)
    print(f"{r['pairs']} pairs: " + ", ".join(f"{n} {k}" for k, n in r["labels"].items()))
    for name in ("scan", "remember"):
        s = r[name]
        print(f"{name:<9} precision {s['precision']:.3f}  recall {s['recall']:.3f}  "
              f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']})   targets 0.8 / 0.6")
    for lang, s in r["per_language"].items():
        print(f"  {lang}: precision {s['precision']:.3f}  recall {s['recall']:.3f}")
    for label, a, b in r["wrong"]:
        print(f"  {'missed' if label == 'conflict' else 'false alarm (' + label + ')'}: {a!r} / {b!r}")


if __name__ == "__main__":
    main()
