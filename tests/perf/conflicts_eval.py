"""Precision and recall of conflict detection on labelled pairs: the tuning set
(tests/data/conflict_eval.jsonl) and the held-out set (tests/data/conflict_holdout.jsonl).

Run: python tests/perf/conflicts_eval.py [PAIRS.jsonl ...]
A pair is {"a": {"text", "who"}, "b": {"text", "who"}, "label": "conflict" | "consistent" |
"unrelated", "lang", "unlike_rules"?}: ``unlike_rules`` marks the pairs phrased unlike any of
the rules' templates (changes of habit, diet, schedule and place, with time words), which
only conflicts by meaning (store/changes.py) can catch. Each pair goes into a fresh store
with the default embedder (a first, b a day later, as ``remember`` would write them); a
conflict is predicted when the scan of the store finds one, and separately when
``remember`` of b reports one. The held-out pairs after "written after tuning" were
written once the band and the words of store/changes.py were fixed, and were not tuned on.
Targets: precision >= 0.8 and recall >= 0.8 on both sets. Prints the misses and false alarms.

Crowded: a memory of a change is about one thing its subject did or had, not about everything
said of that subject ("Mara has moved to Porto" does not make "Mara is allergic to peanuts"
outdated), and a pair alone in a store cannot show it. So each pair is also put in a store with
five unrelated, older facts about the same subject between a and b (the subject's name put in
a fixed list of sentences, English or Chinese as the pair), and the newer memory's conflicts
are read: a conflict with one of those facts is a false alarm. Two lists: ``CROWD["tuning"]``,
and ``CROWD["held out"]``, written before the tuning and not tuned on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.changes import subject_of  # noqa: E402
from mnemoscope.store.conflicts import scan  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
SETS = {"tuning": DATA / "conflict_eval.jsonl", "held out": DATA / "conflict_holdout.jsonl"}
T0 = 1_790_000_000


CROWD = {
    "tuning": {"en": ["{} is allergic to peanuts.", "{} plays the cello on Sundays.", "{} has a dog called Pip.",
                      "{}'s birthday is in May.", "{} studied chemistry at university."],
               "zh": ["{}对花生过敏。", "{}每周日拉大提琴。", "{}有一只叫皮普的狗。", "{}的生日在五月。", "{}大学读的是化学。"]},
    "held out": {"en": ["{} speaks three languages.", "{} is left-handed.", "{} keeps a sourdough starter in the fridge.",
                        "{}'s sister is a nurse.", "{} collects old maps."],
                 "zh": ["{}会说三种语言。", "{}是左撇子。", "{}的姐姐是护士。", "{}收集旧地图。", "{}冰箱里养着酸面团酵头。"]},
}


def _score(pairs: list[dict], predicted: list[bool]) -> dict:
    tp = sum(1 for p, y in zip(pairs, predicted) if y and p["label"] == "conflict")
    fp = sum(1 for p, y in zip(pairs, predicted) if y and p["label"] != "conflict")
    fn = sum(1 for p, y in zip(pairs, predicted) if not y and p["label"] == "conflict")
    return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 1.0,
            "tp": tp, "fp": fp, "fn": fn, "pairs": len(pairs)}


def evaluate(path: Path = SETS["tuning"]) -> dict:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_scan, by_remember = [], []
    for pair in pairs:
        with MemoryStore() as s:
            a = s.remember(pair["a"]["text"], who=pair["a"].get("who", ""), now=T0, dedupe=False)
            b = s.remember(pair["b"]["text"], who=pair["b"].get("who", ""), now=T0 + 86400, dedupe=False)
            by_scan.append(any({c.newer, c.older} == {a.memory.id, b.memory.id} for c in scan(s)))
            by_remember.append(any(c.older == a.memory.id for c in b.conflicts))
    parts = {}
    for lang in sorted({p["lang"] for p in pairs}):
        parts[lang] = [i for i, p in enumerate(pairs) if p["lang"] == lang]
    parts["unlike rules"] = [i for i, p in enumerate(pairs) if p.get("unlike_rules")]
    parts["like rules"] = [i for i, p in enumerate(pairs) if not p.get("unlike_rules")]
    wrong = [(p["label"], p["a"]["text"], p["b"]["text"]) for p, y in zip(pairs, by_scan)
             if y != (p["label"] == "conflict")]
    return {"pairs": len(pairs), "labels": {k: sum(p["label"] == k for p in pairs)
                                            for k in ("conflict", "consistent", "unrelated")},
            "scan": _score(pairs, by_scan), "remember": _score(pairs, by_remember),
            "parts": {k: _score([pairs[i] for i in idx], [by_scan[i] for i in idx]) for k, idx in parts.items()},
            "wrong": wrong}


def _name(memory: dict) -> str:
    """The subject's name as the memory's text writes it (Mara, 玛拉), or "" if none is found."""
    text = memory["text"]
    found = subject_of(text) if not memory.get("who") or memory["who"].lower() not in text.lower() \
        else memory["who"].lower()
    at = text.lower().find(found) if found else -1
    return text[at:at + len(found)] if at >= 0 else ""


def evaluate_crowded(path: Path, crowd: dict[str, list[str]]) -> dict:
    """The pairs again, each with the subject's unrelated facts between a and b: the pair's
    own precision and recall, and how often the newer memory is said to conflict with one of
    those facts (by the scan or by ``remember``)."""
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [p for p in pairs if _name(p["b"])]
    by_scan, alarms, checked, examples = [], 0, 0, []
    for pair in pairs:
        name, who = _name(pair["b"]), pair["b"].get("who", "")
        with MemoryStore() as s:
            a = s.remember(pair["a"]["text"], who=pair["a"].get("who", ""), now=T0, dedupe=False)
            crowd_ids = {s.remember(t.format(name), who=who, now=T0 + 3600 * (i + 1), dedupe=False).memory.id: t
                         for i, t in enumerate(crowd[pair["lang"]])}
            b = s.remember(pair["b"]["text"], who=who, now=T0 + 86400, dedupe=False)
            found = scan(s)
            by_scan.append(any({c.newer, c.older} == {a.memory.id, b.memory.id} for c in found))
            wrong = {c.older for c in found if c.newer == b.memory.id and c.older in crowd_ids}
            wrong |= {c.older for c in b.conflicts if c.older in crowd_ids}
            alarms += len(wrong)
            checked += len(crowd_ids)
            examples += [(pair["b"]["text"], crowd_ids[w].format(name)) for w in sorted(wrong)]
    return {"pairs": len(pairs), "scan": _score(pairs, by_scan), "crowd_alarms": alarms, "crowd_checked": checked,
            "crowd_alarm_rate": alarms / checked if checked else 0.0, "examples": examples}


def main() -> None:
    sets = {Path(a).name: Path(a) for a in sys.argv[1:]} or SETS
    for name, path in sets.items():
        r = evaluate(path)
        print(f"{name} ({path.name}), {r['pairs']} pairs: " + ", ".join(f"{n} {k}" for k, n in r["labels"].items()))
        for kind in ("scan", "remember"):
            s = r[kind]
            print(f"  {kind:<14} precision {s['precision']:.3f}  recall {s['recall']:.3f}  "
                  f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']})   targets 0.8 / 0.8")
        for part, s in r["parts"].items():
            print(f"    {part:<12} {s['pairs']:>4} pairs  precision {s['precision']:.3f}  recall {s['recall']:.3f}")
        for label, a, b in r["wrong"]:
            print(f"    {'missed' if label == 'conflict' else 'false alarm (' + label + ')'}: {a!r} / {b!r}")
        for crowd_name, crowd in CROWD.items():
            c = evaluate_crowded(path, crowd)
            s = c["scan"]
            print(f"  crowded ({crowd_name} facts) precision {s['precision']:.3f}  recall {s['recall']:.3f}; "
                  f"the newer memory flagged against {c['crowd_alarms']} of {c['crowd_checked']} unrelated facts "
                  f"of its subject ({c['crowd_alarm_rate']:.1%})")
            for newer, fact in c["examples"][:8]:
                print(f"    false alarm (unrelated fact): {fact!r} / {newer!r}")


if __name__ == "__main__":
    main()
