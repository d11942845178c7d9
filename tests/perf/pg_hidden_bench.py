"""What hidden memories do to a low-trust caller's search by meaning on pgvector.

Run (under the bench lock; a few minutes, most of it the HNSW index of the big memory):
    flock /tmp/bench.lock python tests/perf/pg_hidden_bench.py [--visible 5000] [--hidden 45000]

Two databases on one throwaway server (tests/support/pg_server.py, pgvector), analysed (the planner
has its statistics) and indexed as an opening for writing indexes them: ``alone`` holds
``--visible`` memories a caller (scope ``global``, trust ``low``) may see, random 512-d
vectors; ``crowded`` holds the same plus ``--hidden`` memories nearer every query than any
visible one (half ``high`` sensitive in ``global``, half in ``private:other``). The rows are
loaded with COPY (not through the store's API, which would time the loading).

Prints, for the caller's 50 nearest (store/backends/pg_vectors.py ``Search.nearest``): whether both
databases give the same answer, and the medians of the search in each, with their ratio (the
alone database's as the baseline, measured in the same process, queries interleaved).
With ``--walk`` the search is made to go through the HNSW walk however few the visible
memories are (``EXACT_UP_TO`` set to 0), which shows what the walk alone would do.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mnemoscope.store import MemoryStore
from mnemoscope.store.backends import pg_vectors  # noqa: E402
from mnemoscope.store.meaning import vectors
from mnemoscope.store.model.memory import SENSITIVITY_RANK  # noqa: E402
from support.pg_server import start_with_pgvector  # noqa: E402

DIM = 512


class Fixed:
    """An embedder the bench never asks to embed (the queries are vectors already)."""

    id = "bench-random-512"
    dim = DIM
    meaningful = True

    def embed(self, texts):  # pragma: no cover - never called
        raise AssertionError("the bench embeds nothing")


def load(url: str, rows: list[tuple[str, str, str, np.ndarray]]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        with conn.cursor().copy("COPY memories (rowid, id, text, kind, importance, scope, sensitivity, created_at, "
                                "updated_at, ref_time, base) FROM STDIN") as cp:
            for i, (mid, scope, sens, _) in enumerate(rows):
                cp.write_row([i + 1, mid, f"note {mid}", "fact", 0.5, scope, sens, 1.7e9, 1.7e9, 1.7e9, 0.8])
        with conn.cursor().copy("COPY vectors (rowid, vec) FROM STDIN") as cp:
            for i, (_, _, _, v) in enumerate(rows):
                cp.write_row([i + 1, vectors.encode(v)])
        conn.execute("SELECT setval(pg_get_serial_sequence('memories', 'rowid'), %s)", (len(rows),))


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--visible", type=int, default=5000)
    ap.add_argument("--hidden", type=int, default=45000)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5, help="each query searched this many times a database")
    ap.add_argument("--walk", action="store_true", help="through the HNSW walk whatever the visible count")
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    queries = unit(rng, args.queries)
    seen = [(f"v{i:07d}", "global", "public" if i % 2 else "low", v) for i, v in enumerate(unit(rng, args.visible))]
    # Each hidden memory is near one of the queries (a cosine of about 0.7), nearer than any visible one.
    near = queries[np.arange(args.hidden) % args.queries] + 0.06 * rng.standard_normal((args.hidden, DIM))
    near = (near / np.linalg.norm(near, axis=1, keepdims=True)).astype(np.float32)
    hidden = [(f"h{i:07d}", "global" if i % 2 else "private:other", "high" if i % 2 else "low", v)
              for i, v in enumerate(near)]
    if args.walk:
        pg_vectors.EXACT_UP_TO = 0
    server = start_with_pgvector()
    try:
        stores = {}
        for name, rows in (("alone", seen), ("crowded", seen + hidden)):
            url = server.new_database(name)
            MemoryStore(url, embedder=Fixed()).close()  # migrations, pgvector's column
            load(url, rows)
            t = time.perf_counter()
            store = MemoryStore(url, embedder=Fixed())  # an opening for writing: the indexes are built
            store.conn.execute("ANALYZE")
            print(f"{name}: {len(rows):,} memories loaded, indexed and analysed ({time.perf_counter() - t:.0f} s); "
                  f"{store.backend()['vectors']}", flush=True)
            stores[name] = store
        low = SENSITIVITY_RANK["low"]
        search = {name: pg_vectors.Search(s, DIM, ()) for name, s in stores.items()}
        times = {name: [] for name in stores}
        differ = 0
        for _ in range(args.rounds):
            for q in queries:
                got = {}
                for name in stores:
                    t = time.perf_counter()
                    got[name] = search[name].nearest(q, ["global"], low, 50, -1.0)
                    times[name].append((time.perf_counter() - t) * 1000)
                differ += got["alone"] != got["crowded"]
        base = statistics.median(times["alone"])
        crowded = statistics.median(times["crowded"])
        exact = [search["alone"].nearest(q, ["global"], low, 50, -1.0) for q in queries]
        print(f"visible {args.visible:,}, hidden {args.hidden:,}{' (through the walk)' if args.walk else ''}: "
              f"answers differ for {differ} of {args.rounds * args.queries} searches; search median alone "
              f"{base:.1f} ms, crowded {crowded:.1f} ms, ratio {crowded / base:.2f}; "
              f"answers of 50: {statistics.mean(len(e) for e in exact):.1f}; load {os.getloadavg()[0]:.2f}",
              flush=True)
        for s in stores.values():
            s.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
