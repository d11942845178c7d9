"""How big the tick history grows: a simulated year of hourly ticks.

Run: python tests/perf/tick_history.py [N] [DAYS]
Imports N generated memories (default 20,000), ticks every hour for DAYS days (default
365) and prints the database size and the tick history's share of it at the start, after
a day, and at the end. The history keeps the last ``limits.undoable_ticks`` ticks
undoable (100 by default); older ticks keep only their summary and transitions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mnemoscope.store import MemoryStore  # noqa: E402
from store_bench import NOW, generate  # noqa: E402

HOUR = 3600.0


def sizes(store: MemoryStore, path: str) -> str:
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    undo, ticks, log = store.conn.execute(
        "SELECT (SELECT coalesce(sum(length(undo)), 0) FROM ticks), (SELECT count(*) FROM ticks), "
        "(SELECT count(*) FROM tick_log)").fetchone()
    undoable = store.conn.execute("SELECT count(*) FROM ticks WHERE undo IS NOT NULL").fetchone()[0]
    return (f"file {os.path.getsize(path) / 1e6:8.1f} MB   undo records {undo / 1e6:7.2f} MB   "
            f"ticks {ticks:5d} ({undoable} undoable)   transitions logged {log}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    days = int(sys.argv[2]) if len(sys.argv) > 2 else 365
    path = os.path.join(tempfile.mkdtemp(), "history.db")
    with MemoryStore(path) as store:
        store.import_jsonl(generate(n, random.Random(5)), now=NOW)
        print(f"{n} memories, hourly ticks for {days} days")
        print(f"start      {sizes(store, path)}")
        t0 = time.perf_counter()
        for hour in range(1, days * 24 + 1):
            store.tick(now=NOW + hour * HOUR)
            if hour == 24:
                print(f"day 1      {sizes(store, path)}")
        elapsed = time.perf_counter() - t0
        print(f"day {days:<6} {sizes(store, path)}")
        print(f"{days * 24} ticks in {elapsed:.1f} s ({elapsed / (days * 24) * 1000:.1f} ms per tick)")


if __name__ == "__main__":
    main()
