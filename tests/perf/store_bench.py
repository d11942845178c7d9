"""Store speed on 100,000 generated memories.

Run: python tests/perf/store_bench.py [N]
Prints medians for tick, recall top-10, remember and open + stats, and two ratios
against baselines run in the same process on the same file:

- tick / reading every memory's decay inputs with plain sqlite3 (target <= 1.5)
- recall top-10 / FTS5's own bm25() top-50 for the same query (target <= 2.0), for
  queries of common words that match about half the store.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.recall.text import terms  # noqa: E402
from timing import median_ms  # noqa: E402

WORDS = ("mara theo priya lisbon porto rust python garden basil tea coffee climbing gym release deploy "
         "lighthouse parser lifetime async channel meeting calendar dentist bank flight cat miso sourdough "
         "mandarin teacher review sprint dashboard grafana slack branch rebase test flaky cache latency").split()
KINDS = ("fact", "lesson", "skill", "reflection", "event")
DAY = 86400.0
NOW = 1_795_000_000.0


def generate(n: int, rng: random.Random) -> str:
    lines = []
    for i in range(n):
        age = rng.uniform(0, 500)
        lines.append(json.dumps({
            "id": f"g{i:06d}", "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) + f" #{i}",
            "kind": rng.choice(KINDS), "importance": round(rng.random(), 2),
            "scope": rng.choice(["global", "global", "group:a", "private:b"]),
            "created_at": NOW - age * DAY, "ref_time": NOW - age * DAY * rng.random(),
            "recall_count": rng.choice([0, 0, 1, 2, 6]),
        }))
    return "\n".join(lines)


TICK_COPIES = 3


def median_tick_ms(path: str, copies: int) -> float:
    """The median of the ticks at day 1, 30 and 90, run in that order on ``copies`` fresh
    copies of the database (read once first, as the baseline's pages are): a tick changes
    what the next one finds, so each sample needs the store as it was, and one sample per
    day was at the mercy of when SQLite checkpoints its log."""
    samples: dict[int, list[float]] = {1: [], 30: [], 90: []}
    for i in range(copies):
        copy = f"{path}.tick{i}"
        src, dst = sqlite3.connect(path), sqlite3.connect(copy)
        src.backup(dst)
        src.close()
        dst.close()
        with MemoryStore(copy) as store:
            store.project(NOW)  # the copy's pages in SQLite's cache, as the baseline's are
            for day, times in samples.items():
                t0 = time.perf_counter()
                store.tick(now=NOW + day * DAY)
                times.append((time.perf_counter() - t0) * 1000)
        os.remove(copy)
    return statistics.median(statistics.median(times) for times in samples.values())


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(3)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "bench.db")
    t0 = time.perf_counter()
    with MemoryStore(path) as s:
        s.import_jsonl(generate(n, rng), now=NOW)
    print(f"generated and imported {n} memories in {time.perf_counter() - t0:.1f} s")

    def open_stats():
        with MemoryStore(path) as s:
            s.stats()

    open_ms = median_ms(open_stats, 5)
    store = MemoryStore(path)
    queries = ["what does mara think about rust lifetimes", "garden basil tea", "deploy lighthouse grafana",
               "theo flight porto", "bank dentist calendar"]
    recall_ms = statistics.median(median_ms(lambda q=q: store.recall(q, k=10, now=NOW), 3) for q in queries)
    common = ["mara tea garden", "rust python coffee", "deploy cache latency"]
    share = statistics.median(
        store.conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                           (" OR ".join(terms(q)),)).fetchone()[0] / n for q in common)
    common_ms = statistics.median(median_ms(lambda q=q: store.recall(q, k=10, now=NOW), 3) for q in common)
    plain = sqlite3.connect(path)

    def bm25(q):
        match = " OR ".join('"' + t + '"' for t in terms(q))
        return plain.execute("SELECT m.id, m.text, bm25(memories_fts) AS r FROM memories_fts f "
                             "JOIN memories m ON m.rowid = f.rowid WHERE memories_fts MATCH ? "
                             "ORDER BY r LIMIT 50", (match,)).fetchall()

    bm25_ms = statistics.median(median_ms(lambda q=q: bm25(q), 3) for q in common)

    def read_inputs():
        plain.execute("SELECT kind, recall_count, half_life_days, pinned, base, ref_time FROM memories").fetchall()

    read_ms = median_ms(read_inputs, 3)
    tick_ms = median_tick_ms(path, TICK_COPIES)
    counter = iter(range(10**9))
    remember_ms = median_ms(lambda: store.remember(
        f"new memory {next(counter)} about " + " ".join(rng.choice(WORDS) for _ in range(8)), now=NOW), 200)
    store.close()
    plain.close()
    print(f"{'operation':<30}{'median':>12}")
    print(f"{'open + stats':<30}{open_ms:>10.1f}ms")
    print(f"{'recall top-10 (mixed)':<30}{recall_ms:>10.1f}ms")
    print(f"{'recall top-10 (common words)':<30}{common_ms:>10.1f}ms   ({share:.0%} of the store match)")
    print(f"{'bm25 top-50 (baseline)':<30}{bm25_ms:>10.1f}ms")
    print(f"{'tick':<30}{tick_ms:>10.1f}ms")
    print(f"{'read decay inputs (baseline)':<30}{read_ms:>10.1f}ms")
    print(f"{'remember':<30}{remember_ms:>10.2f}ms")
    print(f"tick / read decay inputs: {tick_ms / read_ms:.2f} (target <= 1.5)")
    print(f"recall / bm25 top-50:     {common_ms / bm25_ms:.2f} (target <= 2.0)")


if __name__ == "__main__":
    main()
