"""Undo of a tick against the tick itself, at scale, on SQLite and on PostgreSQL.

Run (under the bench lock):
    flock /tmp/bench.lock python tests/perf/undo_bench.py --source /work/bench/vec100k.db [--days 30] [--repeat 5]
        [--only postgresql --pg-n 1000000]

SQLite: a copy of ``--source`` (made here, in a temporary folder; the source is only copied).
PostgreSQL: a throwaway server (tests/support/pg_server.py), the same memories loaded with COPY as
tests/perf/pg_scale_bench.py loads them (``--pg-n``, default the source's count).

Each round ticks ``--days`` past the store's clock (the same moment every round) and
undoes that tick; a first round is not counted (the first tick after opening may look at
every memory). Prints the medians of tick and undo (wall, and this process's CPU: a
PostgreSQL server's CPU is not in it), how many memories each tick changed, and undo as
a fraction of the tick.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.forgetting.decay import DAY  # noqa: E402
from pg_scale_bench import cpu, load  # noqa: E402


def rounds(store: MemoryStore, days: float, repeat: int) -> dict:
    at = store.now() + days * DAY
    tick, tick_cpu, undo, undo_cpu, changed = [], [], [], [], set()
    for i in range(repeat + 1):
        t, c = time.perf_counter(), cpu()
        report = store.tick(now=at)
        t1, c1 = time.perf_counter(), cpu()
        store.undo_tick(report.tick_id)
        t2, c2 = time.perf_counter(), cpu()
        if i:
            tick.append(t1 - t)
            tick_cpu.append(c1 - c)
            undo.append(t2 - t1)
            undo_cpu.append(c2 - c1)
            changed.add(report.changed)
    return {"tick": statistics.median(tick), "tick_cpu": statistics.median(tick_cpu),
            "undo": statistics.median(undo), "undo_cpu": statistics.median(undo_cpu), "changed": sorted(changed)}


def show(label: str, n: int, r: dict, repeat: int) -> None:
    print(f"{label}, {n:,} memories, medians of {repeat}: tick {r['tick']:.3f} s wall ({r['tick_cpu']:.3f} s CPU here, "
          f"{', '.join(f'{c:,}' for c in r['changed'])} changed); undo {r['undo']:.3f} s wall "
          f"({r['undo_cpu']:.3f} s CPU here): {r['undo'] / r['tick']:.2f}x the tick", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="a Mnemoscope SQLite file with vectors (only copied)")
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pg-n", type=int, default=0, help="memories on PostgreSQL (default: the source's count)")
    ap.add_argument("--only", choices=("sqlite", "postgresql"))
    args = ap.parse_args()

    folder = tempfile.mkdtemp(prefix="undo-bench-")
    try:
        # Only copies are opened: even a read-only connection leaves -wal and -shm files beside a WAL database.
        source = os.path.join(folder, "source.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(args.source + suffix):
                shutil.copyfile(args.source + suffix, source + suffix)
        if args.only != "postgresql":
            path = os.path.join(folder, "copy.db")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(source + suffix):
                    shutil.copyfile(source + suffix, path + suffix)
            with MemoryStore(path) as store:
                show("SQLite", store.count(), rounds(store, args.days, args.repeat), args.repeat)
        if args.only != "sqlite":
            from support.pg_server import start

            server = start()
            try:
                url = server.new_database("undo")
                MemoryStore(url).close()  # the schema
                import sqlite3

                src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
                n = args.pg_n or src.execute("SELECT count(*) FROM memories").fetchone()[0]
                src.close()
                load(url, source, n, 0.01, 7)
                server.psql("ANALYZE", "undo")
                with MemoryStore(url) as store:
                    show("PostgreSQL", store.count(), rounds(store, args.days, args.repeat), args.repeat)
            finally:
                server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (2 shared cores)")


if __name__ == "__main__":
    main()
