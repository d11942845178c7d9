"""How hybrid recall's numbers were chosen: a sweep of the meaning weight
(``weights.meaning``) and the cosine a memory found by meaning alone needs
(``limits.min_meaning_relevance``), scored on both shipped sets with the default
embedder: the paraphrase set (recall@3 and MRR; no query shares a word with its
answer) and the keyword set (recall@1/@3 and the share of "expects nothing" cases
answered with nothing), against the keyword set's figures with ``hash`` (no vectors:
recall as it was), which must not get worse.

Run: python tests/perf/hybrid_eval.py   (under the shared lock; about a minute)
"""

from __future__ import annotations

from dataclasses import replace

from mnemoscope.store.config import StoreConfig
from mnemoscope.store.embedding import UseEmbedder
from mnemoscope.store.evaluation import run_eval, run_paraphrase_eval

GRID = [(meaning, floor) for meaning in (0.4, 0.6, 0.8) for floor in (0.1, 0.15, 0.2, 0.22, 0.24, 0.25, 0.3)]


def main() -> None:
    base = run_eval(embedder="hash")
    print(f"keyword set with hash (the baseline): recall@1 {base['recall@1']:.3f}  recall@3 {base['recall@3']:.3f}  "
          f"negatives clean {base['negatives_clean']:.3f}")
    embedder = UseEmbedder()
    rows = []
    for meaning, floor in GRID:
        if True:
            cfg = StoreConfig()
            cfg = replace(cfg, weights=replace(cfg.weights, meaning=meaning),
                          limits=replace(cfg.limits, min_meaning_relevance=floor))
            para = run_paraphrase_eval(embedder, config=cfg)
            kw = run_eval(config=cfg, embedder=embedder)
            ok = (kw["recall@1"] >= base["recall@1"] and kw["recall@3"] >= base["recall@3"]
                  and kw["negatives_clean"] >= base["negatives_clean"])
            rows.append((ok, para["recall@3"], para["mrr"], meaning, floor))
            print(f"meaning {meaning:.2f} floor {floor:.2f}: paraphrase recall@1 {para['recall@1']:.3f} "
                  f"recall@3 {para['recall@3']:.3f} MRR {para['mrr']:.3f} | keyword recall@1 {kw['recall@1']:.3f} "
                  f"recall@3 {kw['recall@3']:.3f} negatives clean {kw['negatives_clean']:.3f}"
                  + ("" if ok else "  (keyword set worse)"))
    best = max((r for r in rows if r[0]), key=lambda r: (r[1], r[2]), default=None)
    if best:
        print(f"best that keeps the keyword set: meaning {best[3]}, floor {best[4]} "
              f"(paraphrase recall@3 {best[1]:.3f}, MRR {best[2]:.3f})")


if __name__ == "__main__":
    main()
