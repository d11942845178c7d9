"""Importing a big MCP memory server file.

Run: python tests/perf/import_bench.py [ENTITIES]   (default: 50000)
Generates a memory.jsonl of ENTITIES entities (two observations each, one relation
each) in the server's own line format, then imports it into a new database file through
the CLI's path (store.importers.import_file) with a progress callback, and, as the
baseline in the same process, imports the same memories as Mnemoscope JSONL
(store.import_jsonl). Prints both times, the ratio, and how many progress reports came.
Target: 50,000 entities in at most 30 s.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time

from mnemoscope.store import MemoryStore
from mnemoscope.store.importers import import_file

WORDS = ("tea coffee parser zig rust release deploy lisbon oslo mara ana bo team review cache latency flaky test "
         "garden basil miso sourdough flight dentist calendar budget invoice").split()
NOW = "2026-06-01T12:00:00Z"


def generate(path: str, n: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        obs = [f"entity {i} note {j}: " + " ".join(rng.choice(WORDS) for _ in range(8)) for j in range(2)]
        lines.append(json.dumps({"type": "entity", "name": f"Entity {i}", "entityType": rng.choice(
            ["person", "project", "concept", "organization"]), "observations": obs}))
    for i in range(n):
        lines.append(json.dumps({"type": "relation", "from": f"Entity {i}", "to": f"Entity {rng.randrange(n)}",
                                 "relationType": rng.choice(["knows", "uses", "part_of"])}))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    return len(lines)


def main(n: int) -> None:
    folder = tempfile.mkdtemp(prefix="mnemoscope-import-bench-")
    src = os.path.join(folder, "memory.jsonl")
    lines = generate(src, n)
    reports: list[tuple[int, int]] = []
    with MemoryStore(os.path.join(folder, "mcp.db")) as store:
        t0 = time.perf_counter()
        result = import_file(store, src, "mcp-memory", now=NOW, progress=lambda d, t: reports.append((d, t)))
        mcp_s = time.perf_counter() - t0
        rows = [json.loads(line) for line in store.export_jsonl().splitlines()]
    jsonl = os.path.join(folder, "same.jsonl")
    with open(jsonl, "w", encoding="utf-8") as fh:
        for row in rows:
            row["entities"], row["context"] = [], None
            fh.write(json.dumps(row) + "\n")
    with MemoryStore(os.path.join(folder, "jsonl.db")) as store:
        t0 = time.perf_counter()
        store.import_jsonl(jsonl, now=NOW)
        base_s = time.perf_counter() - t0
    print(f"{n:,} entities ({lines:,} lines): {result.memories_new:,} memories, {result.entities_new:,} entities, "
          f"{result.relations_new:,} relations")
    print(f"mcp-memory import: {mcp_s:.1f} s   (target <= 30 s)   progress reports: {len(reports)}, "
          f"last {reports[-1] if reports else None}")
    print(f"baseline, the same memories as Mnemoscope JSONL without entities: {base_s:.1f} s   "
          f"ratio {mcp_s / base_s:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50000)
