"""A memory of N memories on PostgreSQL with pgvector: recall and tick at scale.

Run (under the bench lock; 1,000,000 takes tens of CPU-minutes, most of it the HNSW index):
    flock /tmp/bench.lock python tests/perf/pg_scale_bench.py --source COPY_OF_vec100k.db [--n 1000000] [--tick-only]

Embedding a million texts here would take about 25 CPU-minutes, so the memory is built from
the real vectors (and texts, scopes, decay state) of the ``--source`` database (a Mnemoscope
SQLite file with vectors: the shared 100,000-memory one) plus near copies: each copy's
vector is its source's plus Gaussian noise (``--noise`` per component, then renormalised:
a cosine of about 0.97 to its source), its text the source's with a copy number, every
fifth copy ``high`` sensitive (never a candidate by meaning at the ``medium`` trust the
recalls use; a keyword match comes back redacted, as on SQLite). The
output says so. The rows are loaded with COPY (not through the store's API: at a million,
that would time the loading, not the memory), then the HNSW index is built once.

Prints: the build (load, index: wall and this process's CPU; the server's CPU is not in it),
recall through ``MemoryStore.recall`` (query embedded, candidates by pgvector in the server,
scored) and the server's vector search alone, medians over ``--queries`` queries; how many of
the index's nearest 50 are the exact nearest 50 (a scan without the index); and a tick that
reads every memory (the decay config changed: every memory is looked at) against reading
the same decay inputs with one plain query, and an ordinary tick a day later.

``--tick-only`` measures the tick alone: it builds no HNSW index (the tick does not use it,
which saves the ~5 minutes of the build at 1,000,000) and runs no recall.

The server is a throwaway one (tests/support/pg_server.py, fsync off) with shared_buffers at 2 GB.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mnemoscope.store import MemoryStore
from mnemoscope.store.backends import pg_vectors  # noqa: E402
from mnemoscope.store.meaning import vector_index, vectors
from support.pg_server import start_with_pgvector  # noqa: E402

BODY = ("id", "text", "kind", "importance", "scope", "sensitivity", "created_at", "updated_at", "ref_time", "base",
        "recall_count", "last_recalled_at", "pinned", "half_life_days", "terms")
WORDS = ("lisbon", "porto", "garden", "deploy", "latency", "python", "bank", "cat", "sourdough", "rebase", "slack",
         "coffee", "flight", "hotel", "invoice", "tea")
OTHER = ("breakfast", "holiday", "server", "weather", "music", "doctor", "train", "birthday", "keyboard", "river")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load(url: str, source: str, n: int, noise: float, seed: int) -> dict:
    """COPY ``n`` memories into the (empty, migrated) database: the source's, then near copies."""
    import psycopg

    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    cols = ", ".join(f"m.{c}" for c in BODY)
    rows = src.execute(f"SELECT {cols}, s.strength, s.layer, s.ticked_at, s.next_change_at, v.vec "
                       "FROM memories m JOIN memory_state s ON s.rowid = m.rowid JOIN vectors v ON v.rowid = m.rowid "
                       "ORDER BY m.rowid").fetchall()
    meta = dict(src.execute("SELECT key, value FROM meta WHERE key IN ('embedder_id', 'decay_config')").fetchall())
    src.close()
    base = vectors.decode([r[-1] for r in rows], 0)
    rng = np.random.default_rng(seed)
    copies = -(-n // len(rows))
    conn = psycopg.connect(url, autocommit=True)
    for key, value in meta.items():
        conn.execute("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = "
                     "EXCLUDED.value", (key, value))
    done, rowid = 0, 0
    # Each COPY into vectors moves meta.vectors_generation once, by its rows (schema 13; a row
    # trigger made a million versions of that row, and the load had to switch it off).
    with conn.transaction():
        for copy in range(copies):
            take = min(len(rows), n - done)
            if take <= 0:
                break
            vecs = base[:take]
            if copy:
                vecs = vecs + rng.standard_normal(vecs.shape, dtype=np.float32) * noise
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            with conn.cursor().copy(f"COPY memories (rowid, {', '.join(BODY)}) FROM STDIN") as cp:
                for i in range(take):
                    r = list(rows[i][:len(BODY)])
                    if copy:
                        r[0] = f"{r[0]}-c{copy}"
                        r[1] = f"{r[1]} ~{copy}"
                        r[5] = "high" if copy % 5 == 4 else r[5]
                    cp.write_row([rowid + i + 1, *r])
            with conn.cursor().copy("COPY memory_state (rowid, strength, layer, ticked_at, next_change_at) "
                                    "FROM STDIN") as cp:
                for i in range(take):
                    cp.write_row([rowid + i + 1, *rows[i][len(BODY):len(BODY) + 4]])
            with conn.cursor().copy("COPY vectors (rowid, vec) FROM STDIN") as cp:
                for i in range(take):
                    cp.write_row([rowid + i + 1, vectors.encode(vecs[i])])
            rowid += take
            done += take
            print(f"  loaded {done:,}", flush=True)
        conn.execute("SELECT setval(pg_get_serial_sequence('memories', 'rowid'), %s)", (rowid,))
    conn.close()
    return {"copies": copies, "sources": len(rows)}


def measure_recall(url: str, dim: int, args: argparse.Namespace) -> MemoryStore:
    """Build the HNSW index, then measure recall and the index's agreement with an exact search."""
    t1 = time.perf_counter()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '4GB'")
        conn.execute(pg_vectors._index_sql(dim))
        size = conn.execute(f"SELECT pg_size_pretty(pg_relation_size('{pg_vectors.index_name(dim)}')), "
                            "pg_size_pretty(pg_database_size(current_database()))").fetchone()
    t2 = time.perf_counter()
    print(f"HNSW index: {t2 - t1:.0f} s wall (index {size[0]}, database {size[1]})", flush=True)

    store = MemoryStore(url)
    print("stats says:", store.backend()["vectors"])
    rng = np.random.default_rng(args.seed + 1)
    # The source's texts are a few words in many combinations: a query of them matches a
    # quarter of the memories by keyword; a query of other words is found by meaning alone.
    queries = [" ".join(rng.choice(WORDS, size=3, replace=False)) for _ in range(args.queries)]
    meaning_only = [" ".join(rng.choice(OTHER, size=3, replace=False)) for _ in range(args.queries)]
    scopes = ["global", "group:a", ["group:a", "private:b"]]
    store.recall(queries[0], k=5, trust="medium")  # the model loads
    idx = vector_index.index(store)
    assert isinstance(idx, pg_vectors.Search), f"recall did not search in the server: {type(idx).__name__}"
    for label, qs in (("keywords and meaning", queries), ("meaning only", meaning_only)):
        times, embed, search, hits = [], [], [], 0
        for i, q in enumerate(qs):
            t = time.perf_counter()
            got = store.recall(q, k=5, scope=scopes[i % 3], trust="medium")
            times.append((time.perf_counter() - t) * 1000)
            hits += len(got)
            # one level above the trust comes back redacted (its text withheld), by design
            assert all(h.redacted for h in got if h.sensitivity == "high"), "a high memory's text at medium trust"
            t = time.perf_counter()
            qv = store.embedder.embed([q])[0]
            embed.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            idx.nearest(qv, scopes[i % 3] if isinstance(scopes[i % 3], list) else [scopes[i % 3]], 2,
                        store.config.limits.vector_candidates, -1.0)
            search.append((time.perf_counter() - t) * 1000)
        print(f"recall, {label} (k=5, medium trust, {len(qs)} queries): median {statistics.median(times):.1f} ms"
              f", slowest {max(times):.1f} ms, {hits} hits; of which embedding the query {statistics.median(embed):.1f}"
              f" ms and the vector search in the server {statistics.median(search):.1f} ms (medians)", flush=True)
    qvecs = store.embedder.embed(queries + meaning_only)[::2][:args.exact]
    store.conn.execute("SET enable_indexscan = off")
    exact = [{m for m, _, _ in idx.nearest(qv, ["global"], 2, 50, -1.0)} for qv in qvecs]
    store.conn.execute("SET enable_indexscan = on")
    default = pg_vectors.EF_SEARCH
    for ef in args.ef:
        pg_vectors.EF_SEARCH = ef
        found, took = [], []
        for qv, want in zip(qvecs, exact):
            t = time.perf_counter()
            near = {m for m, _, _ in idx.nearest(qv, ["global"], 2, 50, -1.0)}
            took.append((time.perf_counter() - t) * 1000)
            found.append(len(near & want) / 50)
        print(f"hnsw.ef_search {ef}{' (the default)' if ef == default else ''}: of the index's 50 nearest, "
              f"the exact 50 nearest ({len(qvecs)} queries, scope global, medium trust): mean "
              f"{statistics.mean(found):.3f}, lowest {min(found):.3f}; search median "
              f"{statistics.median(took):.1f} ms", flush=True)
    pg_vectors.EF_SEARCH = default

    return store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="a copy of a Mnemoscope SQLite file with vectors")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--noise", type=float, default=0.01)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--exact", type=int, default=10, help="queries also searched without the index")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ef", type=lambda v: [int(x) for x in v.split(",")], default=[100, 200, 400, 800],
                    help="hnsw.ef_search values whose agreement with the exact search is measured")
    ap.add_argument("--tick-only", action="store_true", help="no HNSW index and no recall: the tick alone")
    args = ap.parse_args()

    server = start_with_pgvector()
    try:
        server.psql("ALTER SYSTEM SET shared_buffers = '2GB'")
        server.psql("ALTER SYSTEM SET maintenance_work_mem = '4GB'")
        server.psql("ALTER SYSTEM SET max_parallel_maintenance_workers = 1")
        server.halt()
        server.resume()
        url = server.new_database("scale")
        first = MemoryStore(url)  # migrations and pgvector's column and index (dropped for the load)
        dim = first.embedder.dim
        first.close()
        server.psql(f"DROP INDEX {pg_vectors.index_name(dim)}", "scale")
        print(f"PostgreSQL {server.bindir.split('/site-packages/')[-1]} with pgvector; {args.n:,} memories built "
              f"from the real vectors of {args.source} plus near copies (noise {args.noise} per component, "
              f"renormalised; every fifth copy high-sensitive): NOT {args.n:,} embedded texts")
        t0, c0 = time.perf_counter(), cpu()
        info = load(url, args.source, args.n, args.noise, args.seed)
        server.psql("ANALYZE", "scale")
        t1, c1 = time.perf_counter(), cpu()
        print(f"load: {t1 - t0:.0f} s wall, {c1 - c0:.0f} s CPU here ({info['sources']:,} sources × "
              f"{info['copies']} copies)", flush=True)
        if args.tick_only:  # opening for writing would build the missing index (minutes): not here
            pg_vectors.build_index = lambda conn, dim: None
            store = MemoryStore(url)
        else:
            store = measure_recall(url, dim, args)
        decay_inputs = ("SELECT s.rowid, m.id, m.kind, m.recall_count, m.half_life_days, m.pinned, m.base, "
                        "m.ref_time, s.strength, s.layer, s.ticked_at, s.next_change_at FROM memory_state s "
                        "JOIN memories m ON m.rowid = s.rowid")
        plain = []
        for _ in range(3):
            t = time.perf_counter()
            n_read = len(store.conn.execute(decay_inputs).fetchall())
            plain.append(time.perf_counter() - t)
        store.conn.execute("DELETE FROM meta WHERE key = 'decay_config'")  # every memory is looked at
        t, c = time.perf_counter(), cpu()
        report = store.tick()
        full = time.perf_counter() - t
        full_cpu = cpu() - c
        t = time.perf_counter()
        later = store.tick(advance_days=1)
        one_day = time.perf_counter() - t
        best = min(plain)
        print(f"tick reading all {n_read:,} memories: {full:.2f} s wall ({full_cpu:.2f} s CPU here, "
              f"{report.changed:,} changed) against the plain query of the same decay inputs {best:.2f} s "
              f"(best of 3): {full / best:.2f}×; an ordinary tick a day later {one_day:.2f} s "
              f"({later.changed:,} changed)")
        print(f"load average at the end: {os.getloadavg()[0]:.2f} (2 shared cores)")
        store.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
