"""How hybrid recall's gate was chosen, and what it gives, with the default embedder.

A memory is a candidate when its cosine with the query stands over the query's relative
meaning floor (``limits.meaning_reference``, ``meaning_standout``, clamped to
``lowest_meaning_relevance``..``min_meaning_relevance``), or when it holds at least
``limits.keyword_without_meaning`` of the query's terms (store/recall.py ``_relevant``).
The sets:

- tuning: the shipped paraphrase set (resources/demo/paraphrase_eval.jsonl, recall@3 and
  MRR; no query shares a content word with its answer) and the shipped keyword set
  (recall@1/@3 and the share of "expects nothing" questions answered with nothing), which
  must not get worse than it is with ``hash`` (no vectors: recall as it was);
- held out, written before any tuning: tests/data/paraphrase_holdout.jsonl and
  tests/data/recall_holdout.jsonl (its two incidental-word misses chose
  ``keyword_without_meaning``, so for that number it is no longer held out);
- written after that tuning: tests/data/paraphrase_holdout_gate.jsonl and
  tests/data/recall_holdout_gate.jsonl;
- written after the floor sweep, to check the floor it found: tests/data/
  paraphrase_holdout_floor.jsonl (English, Chinese, Portuguese);
- written before trying floors relative to the spread of the query's cosines (z-score,
  mean, percentiles, the k-th nearest), without looking at any model score:
  tests/data/paraphrase_holdout_standout.jsonl (English, Chinese, Japanese, Russian,
  Dutch), with 10 questions no memory answers ("expects nothing").

It prints the figures at the shipped settings, each paraphrase miss explained (the answer's
cosine against the floor, its rank by meaning alone, what outranks it and by which parts),
the embedder alone (every memory of the language ranked by cosine: the ceiling), how far each
miss the model ranks first stands out beside the shipped questions that must find nothing
(why no floor of the query's own reaches 0.9), and a sweep of the floor and of the keyword
share.

Run: flock /tmp/bench.lock python tests/perf/hybrid_eval.py   (about two minutes)
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from mnemoscope.store.config import StoreConfig
from mnemoscope.store.embedding import UseEmbedder
from mnemoscope.store.evaluation import DEMO_NOW, PARAPHRASE_RESOURCE, run_eval, run_paraphrase_eval
from mnemoscope.store.store import MemoryStore

DATA = Path(__file__).resolve().parent.parent / "data"
PARAPHRASE = {"tuning": None, "held out": DATA / "paraphrase_holdout.jsonl",
              "after tuning": DATA / "paraphrase_holdout_gate.jsonl",
              "after the sweep": DATA / "paraphrase_holdout_floor.jsonl",
              "before the standout": DATA / "paraphrase_holdout_standout.jsonl"}
# The strictest floor with the best tuning recall@3 that keeps the keyword set's figures
# (the sweep below): it reaches 0.9 on the tuning set, and is not shipped (see main's end).
BEST_ON_TUNING = {"meaning_reference": 15, "meaning_standout": 0.17, "lowest_meaning_relevance": 0.10}
KEYWORD = {"tuning": None, "held out": DATA / "recall_holdout.jsonl", "after tuning": DATA / "recall_holdout_gate.jsonl"}
REFERENCES = (8, 10, 12, 15, 20)
STANDOUTS = (0.12, 0.13, 0.14, 0.15, 0.16, 0.17, 0.18)
LOWESTS = (0.08, 0.10, 0.12, 0.14)
SHARES = (0.0, 0.34, 0.5, 0.67, 1.0)


def _paraphrase_rows(path: Path | None) -> list[dict[str, Any]]:
    if path is None:
        package, name = PARAPHRASE_RESOURCE
        text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    else:
        text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _figures(embedder: Any, cfg: StoreConfig | None) -> dict[str, dict[str, Any]]:
    out = {}
    for name, path in PARAPHRASE.items():
        out[f"paraphrase {name}"] = run_paraphrase_eval(embedder, path=str(path) if path else None, config=cfg)
    for name, path in KEYWORD.items():
        out[f"keyword {name}"] = run_eval(path=str(path) if path else None, config=cfg, embedder=embedder)
    return out


def _line(name: str, r: dict[str, Any]) -> str:
    parts = [f"recall@1 {r['recall@1']:.3f}", f"recall@3 {r['recall@3']:.3f}", f"MRR {r['mrr']:.3f}"]
    if r.get("negative_cases"):
        parts.append(f"negatives clean {r['negatives_clean']:.3f} of {r['negative_cases']}")
    return f"  {name:26s} " + "  ".join(parts) + f"  ({r.get('positive_cases', r.get('queries'))} questions)"


def _nothing(f: dict[str, dict[str, Any]]) -> str:
    """The "expects nothing" questions answered with nothing, per set that has them."""
    return " / ".join(f"{round(r['negatives_clean'] * r['negative_cases'])}/{r['negative_cases']}"
                      for r in f.values() if r.get("negative_cases"))


def _visible_cosines(store: MemoryStore, embedder: Any, query: str, scope: str,
                     trust: str) -> tuple[np.ndarray, dict[str, float]]:
    """The cosines with ``query`` of every memory a recall for it sees, from the nearest, as
    its meaning floor sees them (archived ones too), and by id those it may return."""
    from mnemoscope.store import recall as recall_module
    from mnemoscope.store import vectors

    archived = {r["id"] for r in store.tables.rows(
        "SELECT m.id FROM memories m JOIN memory_state s ON s.rowid = m.rowid WHERE s.layer = 'archived'", ())}
    near = vectors.nearest(vectors.index(store), embedder.embed([query])[0], recall_module._visible_scopes(scope),
                           recall_module._trust_rank(trust), 10 ** 6, -1.0)
    return np.array([c for _, c, _ in near]), {mid: c for mid, c, _ in near if mid not in archived}


def _standouts(cos: np.ndarray, x: float, after: float) -> dict[str, float]:
    """How far a memory at cosine ``x`` stands out among the query's cosines ``cos`` (every
    visible memory, sorted from the nearest), ``after`` the cosine of the next one."""
    out = {"cosine": x}
    for k in (5, 12, 20):
        out[f"over the {k}th nearest (or farthest)"] = x - cos[min(k, len(cos)) - 1]
    out["over the mean"] = x - float(cos.mean())
    out["z-score"] = (x - float(cos.mean())) / (float(cos.std()) or 1.0)
    out["over the next"] = x - after
    return out


def _standing_of_misses(embedder: Any) -> None:
    """For each statistic a floor relative to the query could use (the margin over its k-th
    nearest memory, over the mean of its cosines, the z-score, the margin over the next
    memory): which of the tuning set's misses that the model ranks first stand out further,
    and at a higher cosine, than every shipped "expects nothing" question does. A floor that
    takes a miss by cosine and that statistic takes every question that stands out at least
    as far at a cosine at least as high, so the misses it cannot take without answering one
    of those are the ones some question dominates."""
    from mnemoscope.store.demo import load_demo
    from mnemoscope.store.evaluation import load_cases

    store = MemoryStore(":memory:", embedder=embedder)
    load_demo(store, now=DEMO_NOW)
    nothing = []
    for case in (c for c in load_cases() if not c["expect"]):
        cos, by_id = _visible_cosines(store, embedder, case["query"], case.get("scope", "global"),
                                      case.get("trust", "medium"))
        top = max(by_id.values())
        nothing.append((case["query"], _standouts(cos, top, float(max(c for c in cos if c < top)))))
    store.close()
    rows = _paraphrase_rows(None)
    store = MemoryStore(":memory:", embedder=embedder)
    for r in rows:
        if "memory" in r:
            store.remember(r["text"], memory_id=r["memory"], scope=f"group:{r['lang']}", dedupe=False, now=DEMO_NOW)
    misses = []
    for q in (r for r in rows if "query" in r and r["expect"]):
        got = [h.id for h in store.recall(q["query"], k=3, scope=f"group:{q['lang']}", now=DEMO_NOW)]
        cos, by_id = _visible_cosines(store, embedder, q["query"], f"group:{q['lang']}", "medium")
        ranked = sorted(by_id, key=lambda m: -by_id[m])
        if ranked[0] in q["expect"] and ranked[0] not in got:
            misses.append((q["query"], _standouts(cos, float(cos[0]), float(cos[1]))))
    store.close()
    for stat in nothing[0][1]:
        print(f"  {stat}: misses " + ", ".join(f"{m[stat]:.3f}" for _, m in misses)
              + " | must find nothing " + ", ".join(f"{n[stat]:.3f}" for _, n in nothing))
        for query, m in misses:
            above = sorted(((n[stat], q) for q, n in nothing if n["cosine"] >= m["cosine"]), reverse=True)
            over = sorted((n["cosine"], q) for q, n in nothing if n["cosine"] >= m["cosine"] and n[stat] >= m[stat])
            if over:
                print(f"    {query!r}: not without {over[0][1]!r} (cosine {over[0][0]:.3f}, "
                      f"{dict(nothing)[over[0][1]][stat]:.3f})")
            else:
                print(f"    {query!r}: stands out further" + (
                    f", by {m[stat] - above[0][0]:.3f} over {above[0][1]!r}" if above else ""))


def _explain_misses(embedder: Any, name: str, path: Path | None) -> tuple[int, int, int]:
    """Each query whose answer is not in recall's top 3: why. Returns how many answers
    meaning alone ranks in its top 1 and top 3, and the number of queries."""
    rows = _paraphrase_rows(path)
    store = MemoryStore(":memory:", embedder=embedder)
    texts = {}
    for r in rows:
        if "memory" in r:
            store.remember(r["text"], memory_id=r["memory"], scope=f"group:{r['lang']}", dedupe=False, now=DEMO_NOW)
            texts[r["memory"]] = (r["lang"], r["text"])
    for q in (r for r in rows if "query" in r and not r["expect"]):
        hits = store.recall(q["query"], k=3, scope=f"group:{q['lang']}", now=DEMO_NOW, explain=True)
        if hits:
            print(f"  {name}: {q['query']!r} expects nothing, finds " + ", ".join(
                f"{h.text!r} (cosine {h.why['semantic']}, floor {h.why.get('meaning_floor')})" for h in hits))
    queries = [r for r in rows if "query" in r and r["expect"]]
    top1 = top3 = 0
    for q in queries:
        qv = embedder.embed([q["query"]])[0]
        same = [m for m, (lang, _) in texts.items() if lang == q["lang"]]
        cos = dict(zip(same, (float(c) for c in embedder.embed([texts[m][1] for m in same]) @ qv)))
        by_meaning = sorted(same, key=lambda m: -cos[m])
        answer = min(q["expect"], key=by_meaning.index)
        alone = by_meaning.index(answer) + 1
        top1 += alone == 1
        top3 += alone <= 3
        hits = store.recall(q["query"], k=10, scope=f"group:{q['lang']}", now=DEMO_NOW, explain=True)
        ids = [h.id for h in hits]
        if answer in ids[:3]:
            continue
        floor = hits[0].why.get("meaning_floor") if hits else None
        print(f"  {name}: {q['query']!r} -> {texts[answer][1]!r}: cosine {cos[answer]:.3f}, "
              f"rank {alone} by meaning alone; " + (
                  f"recall's rank {ids.index(answer) + 1}" if answer in ids else
                  "not a candidate (under the meaning floor" + (f" {floor:.3f})" if floor else ")")))
        for h in hits[:3]:
            w = h.why
            print(f"      {h.score:.3f} {h.text!r}: semantic {w['semantic']} keyword {w['keyword']} "
                  f"importance {w['importance']} recency {w['recency']} graph {w['graph']}"
                  + (" (graph neighbour)" if w["neighbor"] else ""))
    store.close()
    return top1, top3, len(queries)


def main() -> None:
    embedder = UseEmbedder()
    print("At the shipped settings (default embedder):")
    shipped = _figures(embedder, None)
    for name, r in shipped.items():
        print(_line(name, r))
    print("The keyword sets with hash (no vectors; the baseline they must not fall under):")
    for name, path in KEYWORD.items():
        print(_line(f"keyword {name}", run_eval(path=str(path) if path else None, embedder="hash")))

    print("\nEach paraphrase miss, and the embedder alone (every memory of the language by cosine):")
    for name, path in PARAPHRASE.items():
        top1, top3, n = _explain_misses(embedder, name, path)
        print(f"  {name}: meaning alone ranks {top3} of {n} answers in its top 3 ({top3 / n:.3f}), "
              f"{top1} first ({top1 / n:.3f})")

    print("\nThe strictest floor with the best tuning recall@3 that keeps the keyword set, "
          f"{BEST_ON_TUNING}, beside the shipped one:")
    best = _figures(embedder, replace(StoreConfig(), limits=replace(StoreConfig().limits, **BEST_ON_TUNING)))
    for name, r in best.items():
        print(_line(name, r) + f"   (shipped: recall@3 {shipped[name]['recall@3']:.3f}"
              + (f", negatives clean {shipped[name]['negatives_clean']:.3f})" if r.get("negative_cases") else ")"))

    print("\nThe relative meaning floor: paraphrase recall@3 (tuning / held out / after tuning / after the sweep / before "
          "the standout) and the 'expects nothing' questions answered with nothing (paraphrase before the standout / "
          "keyword tuning / held out / after tuning); * = the shipped one")
    base = StoreConfig()
    for reference in REFERENCES:
        for standout in STANDOUTS:
            cfg = replace(base, limits=replace(base.limits, meaning_reference=reference, meaning_standout=standout))
            f = _figures(embedder, cfg)
            para = " / ".join(f"{f[f'paraphrase {n}']['recall@3']:.3f}" for n in PARAPHRASE)
            neg = _nothing(f)
            kw = f["keyword tuning"]
            mark = "*" if (reference, standout) == (base.limits.meaning_reference, base.limits.meaning_standout) else " "
            print(f" {mark}reference {reference:2d} standout {standout:.2f}: paraphrase {para} | nothing for {neg} | "
                  f"keyword tuning recall@1 {kw['recall@1']:.3f} recall@3 {kw['recall@3']:.3f}", flush=True)

    print("\nThe lowest floor (limits.lowest_meaning_relevance) at the shipped reference and standout:")
    for lowest in LOWESTS:
        cfg = replace(base, limits=replace(base.limits, lowest_meaning_relevance=lowest))
        f = _figures(embedder, cfg)
        para = " / ".join(f"{f[f'paraphrase {n}']['recall@3']:.3f}" for n in PARAPHRASE)
        neg = _nothing(f)
        mark = "*" if lowest == base.limits.lowest_meaning_relevance else " "
        print(f" {mark}{lowest:.2f}: paraphrase recall@3 {para} | nothing for {neg}", flush=True)

    print("\nHow far each tuning miss the model ranks first stands out, beside the shipped questions that must "
          "find nothing:")
    _standing_of_misses(embedder)

    print("\nThe keyword share a memory under the floor needs (limits.keyword_without_meaning):")
    for share in SHARES:
        cfg = replace(base, limits=replace(base.limits, keyword_without_meaning=share))
        f = _figures(embedder, cfg)
        para = " / ".join(f"{f[f'paraphrase {n}']['recall@1']:.3f}, {f[f'paraphrase {n}']['recall@3']:.3f}"
                          for n in PARAPHRASE)
        kw = " / ".join(f"{f[f'keyword {n}']['recall@3']:.3f}, {f[f'keyword {n}']['negatives_clean']:.3f}"
                        for n in KEYWORD)
        print(f"  {share:.2f}: paraphrase recall@1, @3 {para} | keyword recall@3, negatives clean {kw}", flush=True)


if __name__ == "__main__":
    main()
