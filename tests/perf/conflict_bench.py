"""Conflict detection speed on 100,000 generated memories.

Run: python tests/perf/conflict_bench.py [N]
A third of the memories make claims about 300 people (where they live and work, what
they like or no longer do, in English and Chinese), the rest are word salad like
store_bench's. Prints the median time of a full scan, and the median time of
``remember`` with its conflict check against the same ``remember`` with the check
switched off, interleaved in the same run (the slowdown is their difference).
Targets: scan <= 5 s; remember slowed by <= 2 ms.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mnemoscope.store.curation.conflicts as conflicts  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from timing import median_ms  # noqa: E402

WORDS = ("mara theo priya lisbon porto rust python garden basil tea coffee climbing gym release deploy "
         "lighthouse parser lifetime async channel meeting calendar dentist bank flight cat miso sourdough").split()
CITIES = ("Lisbon", "Porto", "Berlin", "Madrid", "Paris", "London", "Tokyo", "Boston")
THINGS = ("tea", "coffee", "running", "chess", "jazz", "sushi", "Rust", "Python")
DAY = 86400.0
NOW = 1_795_000_000.0


def claim(person: str, rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return f"{person} lives in {rng.choice(CITIES)}."
    if kind == 1:
        return f"{person} works at {rng.choice(('Acme', 'Globex', 'Initech', 'Umbrella'))}."
    if kind == 2:
        return f"{person} likes {rng.choice(THINGS)}."
    if kind == 3:
        return f"{person} no longer drinks {rng.choice(('tea', 'coffee'))}."
    if kind == 4:
        return f"{person}住在{rng.choice(('上海', '北京', '深圳'))}。"
    return f"{person}喜欢喝{rng.choice(('乌龙茶', '咖啡', '绿茶'))}。"


def generate(n: int, rng: random.Random) -> str:
    people = [f"Person{i}" for i in range(300)]
    lines = []
    for i in range(n):
        age = rng.uniform(0, 300)
        person = rng.choice(people)
        is_claim = i % 3 == 0
        text = claim(person, rng) if is_claim else " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
        lines.append(json.dumps({
            "id": f"g{i:06d}", "text": f"{text} #{i}", "kind": "fact", "importance": 0.5,
            "who": person if is_claim else "", "scope": "global",
            "created_at": NOW - age * DAY, "ref_time": NOW - age * DAY,
        }, ensure_ascii=False))
    return "\n".join(lines)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(5)
    path = os.path.join(tempfile.mkdtemp(), "bench.db")
    t0 = time.perf_counter()
    with MemoryStore(path) as s:
        s.import_jsonl(generate(n, rng), now=NOW)
    print(f"generated and imported {n} memories in {time.perf_counter() - t0:.1f} s")
    store = MemoryStore(path)
    found = []
    scan_ms = median_ms(lambda: found.append(len(conflicts.scan(store))), 3)
    checked = conflicts.likely_conflicts
    with_check, without = [], []
    counter = iter(range(10**9))
    people = [f"Person{i}" for i in range(300)]
    for i in range(400):
        person = rng.choice(people)
        text = claim(person, rng) if i % 2 else " ".join(rng.choice(WORDS) for _ in range(8))
        text += f" (new {next(counter)})"
        who = person if i % 2 else ""
        off = i % 4 >= 2
        conflicts.likely_conflicts = (lambda s, m: []) if off else checked
        t = time.perf_counter()
        store.remember(text, who=who, now=NOW, dedupe=False)
        (without if off else with_check).append((time.perf_counter() - t) * 1000)
    conflicts.likely_conflicts = checked
    store.close()
    on, off = statistics.median(with_check), statistics.median(without)
    print(f"conflicts found by the scan: {found[0]}")
    print(f"{'operation':<34}{'median':>12}{'target':>10}")
    print(f"{'scan ' + str(n) + ' memories':<34}{scan_ms:>10.0f}ms{'5000 ms':>10}")
    print(f"{'remember, conflict check off':<34}{off:>10.2f}ms")
    print(f"{'remember, conflict check on':<34}{on:>10.2f}ms")
    print(f"{'slowdown':<34}{on - off:>10.2f}ms{'2 ms':>10}   (ratio {on / off:.2f})")


if __name__ == "__main__":
    main()
