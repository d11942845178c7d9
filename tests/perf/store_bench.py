"""Store speed on 100,000 generated memories.

Run: python tests/perf/store_bench.py [N]
Prints medians for tick, recall top-10, remember, open + stats, and recall's time as a
ratio to a plain Python scan of the same rows (keyword overlap over every row) in the
same run. Targets: tick <= 1 s, recall <= 150 ms, remember <= 2 ms, open + stats <= 200 ms.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import median_ms  # noqa: E402

from store import MemoryStore  # noqa: E402
from store.text import terms  # noqa: E402

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
    rows = store.conn.execute("SELECT id, text, scope FROM memories").fetchall()

    def scan(q):
        qs = set(terms(q))
        scored = [(len(qs & set(terms(text))) / len(qs), mid) for mid, text, scope in rows
                  if scope == "global"]
        scored.sort(reverse=True)
        return scored[:10]

    scan_ms = statistics.median(median_ms(lambda q=q: scan(q), 1) for q in queries[:2])
    ticks = [NOW + d * DAY for d in (1, 30, 90)]
    tick_ms = statistics.median(median_ms(lambda t=t: store.tick(now=t), 1) for t in ticks)
    counter = iter(range(10**9))
    remember_ms = median_ms(lambda: store.remember(
        f"new memory {next(counter)} about " + " ".join(rng.choice(WORDS) for _ in range(8)), now=NOW), 200)
    store.close()
    print(f"{'operation':<22}{'median':>12}{'target':>10}")
    print(f"{'open + stats':<22}{open_ms:>10.1f}ms{'200 ms':>10}")
    print(f"{'recall top-10':<22}{recall_ms:>10.1f}ms{'150 ms':>10}")
    print(f"{'tick':<22}{tick_ms:>10.1f}ms{'1000 ms':>10}")
    print(f"{'remember':<22}{remember_ms:>10.2f}ms{'2 ms':>10}")
    print(f"{'plain scan (baseline)':<22}{scan_ms:>10.1f}ms")
    print(f"recall / plain scan: {recall_ms / scan_ms:.3f}")


if __name__ == "__main__":
    main()
