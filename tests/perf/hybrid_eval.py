"""How hybrid recall's numbers were chosen: a sweep of the meaning weight
(``weights.meaning``) and the cosine a memory found by meaning alone needs
(``limits.min_meaning_relevance``), scored with the default embedder on both shipped
sets: the paraphrase set (recall@3 and MRR; no query shares a word with its answer),
split into a half to tune on (even lines) and a half that only reports (odd lines),
and the keyword set (recall@1/@3 and the share of "expects nothing" cases answered
with nothing), against the keyword set's figures with ``hash`` (no vectors: recall
as it was), which must not get worse. It also prints the embedder alone (every memory
of the language ranked by cosine, no floor), the ceiling the fusion can reach.

Run: python tests/perf/hybrid_eval.py   (under the shared lock; a few minutes)
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from importlib import resources
from pathlib import Path

from mnemoscope.store.config import StoreConfig
from mnemoscope.store.embedding import UseEmbedder
from mnemoscope.store.evaluation import PARAPHRASE_RESOURCE, run_eval, run_paraphrase_eval

MEANINGS = (0.8, 1.2, 1.6)
FLOORS = (0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.22, 0.25)


def _halves(folder: Path) -> tuple[str, str]:
    """The paraphrase set as two files, every memory in each, the queries split by turns."""
    package, name = PARAPHRASE_RESOURCE
    rows = [json.loads(line) for line in resources.files(package).joinpath(name).read_text(encoding="utf-8")
            .splitlines() if line.strip()]
    memories = [r for r in rows if "memory" in r]
    queries = [r for r in rows if "query" in r]
    paths = []
    for part, half in (("tune", queries[0::2]), ("held_out", queries[1::2])):
        path = folder / f"paraphrase_{part}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in memories + half), encoding="utf-8")
        paths.append(str(path))
    return paths[0], paths[1]


def main() -> None:
    base = run_eval(embedder="hash")
    print(f"keyword set with hash (the baseline): recall@1 {base['recall@1']:.3f}  recall@3 {base['recall@3']:.3f}  "
          f"negatives clean {base['negatives_clean']:.3f}")
    embedder = UseEmbedder()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tune, held = _halves(Path(folder))
        for meaning in MEANINGS:
            for floor in FLOORS:
                cfg = StoreConfig()
                cfg = replace(cfg, weights=replace(cfg.weights, meaning=meaning),
                              limits=replace(cfg.limits, min_meaning_relevance=floor))
                t = run_paraphrase_eval(embedder, path=tune, config=cfg)
                h = run_paraphrase_eval(embedder, path=held, config=cfg)
                kw = run_eval(config=cfg, embedder=embedder)
                ok = (kw["recall@1"] >= base["recall@1"] and kw["recall@3"] >= base["recall@3"]
                      and kw["negatives_clean"] >= base["negatives_clean"])
                rows.append((ok, t["recall@3"], t["mrr"], meaning, floor, h))
                print(f"meaning {meaning:.2f} floor {floor:.2f}: paraphrase tune recall@3 {t['recall@3']:.3f} "
                      f"MRR {t['mrr']:.3f}, held out recall@3 {h['recall@3']:.3f} MRR {h['mrr']:.3f} | keyword "
                      f"recall@1 {kw['recall@1']:.3f} recall@3 {kw['recall@3']:.3f} negatives clean "
                      f"{kw['negatives_clean']:.3f}" + ("" if ok else "  (keyword set worse)"), flush=True)
    best = max((r for r in rows if r[0]), key=lambda r: (r[1], r[2]), default=None)
    if best:
        print(f"best on the tuning half that keeps the keyword set: meaning {best[3]}, floor {best[4]} "
              f"(tune recall@3 {best[1]:.3f}, MRR {best[2]:.3f}; held out recall@3 {best[5]['recall@3']:.3f}, "
              f"MRR {best[5]['mrr']:.3f})")
    full = run_paraphrase_eval(embedder)
    print(f"whole paraphrase set at the shipped defaults: recall@1 {full['recall@1']:.3f} recall@3 "
          f"{full['recall@3']:.3f} MRR {full['mrr']:.3f}")
    for miss in full["misses"]:
        print("  miss:", miss)


if __name__ == "__main__":
    main()
