"""Recall by meaning at scale: N generated memories (default 100,000).

Run: python tests/perf/vector_bench.py [N]   (under the shared lock)
Prints, each with its baseline measured in this process on the same file:

- import of N memories with their vectors (progress on stderr): seconds (target <= 90 s
  at 100,000), beside the same import with the hash embedder (no model);
- hybrid recall top-10, median over queries, against the floor: FTS5's own bm25 top-50
  for the query plus a numpy top-50 over the same vectors held in memory, the query
  embedded in both (target <= 2x the floor and <= 150 ms);
- one remember through the MCP tool function vs the Python API's remember with the
  embedder's time taken out (target: <= 10 ms more);
- resident memory after loading the model and the vectors.
"""

from __future__ import annotations

import os
import random
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store import vectors as vector_store  # noqa: E402
from mnemoscope.store.embedding import HashEmbedder, UseEmbedder  # noqa: E402
from mnemoscope.store.text import terms  # noqa: E402
from store_bench import NOW, generate  # noqa: E402

QUERIES = ["where does mara live now", "what does theo drink", "flaky test in the release branch",
           "dentist appointment", "which cat food does miso like", "latency of the cache"]


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(n: int) -> None:
    rng = random.Random(7)
    data = generate(n, rng)
    with tempfile.TemporaryDirectory() as tmp:
        embedder = UseEmbedder()
        embedder.embed(["load the model"])
        print(f"model loaded: max RSS {rss_mib():.0f} MiB")
        hashed = MemoryStore(os.path.join(tmp, "hash.db"), embedder=HashEmbedder())
        t0 = time.perf_counter()
        hashed.import_jsonl(data, now=NOW)
        hash_s = time.perf_counter() - t0
        hashed.close()
        store = MemoryStore(os.path.join(tmp, "m.db"), embedder=embedder)
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if time.perf_counter() - last[0] > 10 or done == total:
                last[0] = time.perf_counter()
                print(f"  embedded {done:,}/{total:,}", file=sys.stderr)

        t0 = time.perf_counter()
        store.import_jsonl(data, now=NOW, progress=progress)
        import_s = time.perf_counter() - t0
        vector_bytes = store.conn.execute("SELECT sum(length(vec)) + 9 * count(*) FROM vectors").fetchone()[0]
        print(f"import {n:,} with vectors: {import_s:.1f} s (target <= 90 s at 100,000); "
              f"with hash: {hash_s:.1f} s; vectors {vector_bytes / n:.0f} bytes per memory")
        store.recall("warm up the index", now=NOW)
        print(f"vectors loaded: max RSS {rss_mib():.0f} MiB")
        idx = vector_store.index(store)
        conn = sqlite3.connect(store.path)

        def floor(q: str) -> None:
            qv = embedder.embed([q])[0]
            fts = " OR ".join(f'"{t}"' for t in dict.fromkeys(terms(q)))
            conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) "
                         "LIMIT 50", (fts,)).fetchall()
            cos = idx.matrix @ qv
            top = np.argpartition(-cos, 50)[:50]
            top[np.argsort(-cos[top])]

        def timed(fn, q: str, repeat: int = 5) -> float:
            samples = []
            for _ in range(repeat):
                t = time.perf_counter()
                fn(q)
                samples.append((time.perf_counter() - t) * 1000)
            return statistics.median(samples)

        recall_ms = statistics.median(timed(lambda q: store.recall(q, k=10, now=NOW), q) for q in QUERIES)
        floor_ms = statistics.median(timed(floor, q) for q in QUERIES)
        print(f"recall top-10: {recall_ms:.1f} ms median; floor (bm25 top-50 + numpy top-50): {floor_ms:.1f} ms; "
              f"ratio {recall_ms / floor_ms:.2f} (target <= 2.0, <= 150 ms)")

        from mnemoscope.serve.operations import Operations

        ops = Operations(store)
        api, mcp, embed = [], [], []
        for i in range(20):
            text = f"Bench memory {i} says the garden tap leaks on day {i}."
            t = time.perf_counter()
            embedder.embed([text])
            embed.append(time.perf_counter() - t)
            t = time.perf_counter()
            store.remember(text, now=NOW)
            api.append(time.perf_counter() - t)
            t = time.perf_counter()
            ops.remember(text.replace("Bench", "Door"))
            mcp.append(time.perf_counter() - t)
        api_free = statistics.median(api) - statistics.median(embed)
        print(f"remember: Python API {statistics.median(api) * 1000:.1f} ms (embed {statistics.median(embed) * 1000:.1f}"
              f" ms, so {api_free * 1000:.1f} ms embed-free); MCP tool {statistics.median(mcp) * 1000:.1f} ms: "
              f"{(statistics.median(mcp) - api_free) * 1000:.1f} ms over the embed-free figure (target <= 10)")
        print(f"max RSS at the end: {rss_mib():.0f} MiB")
        conn.close()
        store.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
