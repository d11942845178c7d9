"""The numpy search by meaning (SQLite; PostgreSQL without pgvector) beside hidden rows.

Run: flock /tmp/bench.lock python tests/perf/vector_hidden_bench.py

An index of random 512-d int8 rows (as stored) of which the caller may see ``visible``; the
rest are too sensitive for it. Prints the median of 40 searches of the 50 nearest, alone
and beside hidden rows, and their ratio (alone as the baseline, same process).
"""

import os
import statistics
import time

import numpy as np
from mnemoscope.store.meaning import vector_index

rng = np.random.default_rng(1)


def make(n, dim=512):
    raw = rng.integers(-127, 128, size=(n, dim), dtype=np.int8)
    norms = (1.0 / np.linalg.norm(raw.astype(np.float32), axis=1)).astype(np.float32)
    return vector_index.Index((), [f"m{i}" for i in range(n)], {}, np.zeros(n, dtype=np.int32), ["global"],
                         np.zeros(n, dtype=np.int16), raw, norms, n)


q = rng.standard_normal(512).astype(np.float32)
q /= np.linalg.norm(q)
took = {}
for visible, hidden in ((60000, 0), (60000, 40000), (20000, 0), (20000, 20000)):
    idx = make(visible + hidden)
    idx.ranks[visible:] = 4  # hyper: hidden
    ts = []
    for _ in range(40):
        t = time.perf_counter()
        vector_index.nearest(idx, q, ["global"], 1, 50, -1.0)
        ts.append((time.perf_counter() - t) * 1000)
    took[(visible, hidden)] = statistics.median(ts)
    base = took[(visible, 0)]
    print(f"visible {visible:,}, hidden {hidden:,}: median {took[(visible, hidden)]:.2f} ms, "
          f"ratio to alone {took[(visible, hidden)] / base:.2f}")
print(f"load {os.getloadavg()[0]:.2f}")
