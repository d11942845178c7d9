"""Start-up: how long a person or an agent waits for a first answer.

Run: python tests/perf/startup_bench.py [DB]   (under the shared lock)

- ``mnemoscope stats`` on a small database, start to exit (target <= 0.3 s);
- ``mnemoscope mcp``: start to the answer to ``initialize`` (target <= 1 s), and to the
  answer to the ``tools/list`` after it (the SDK loaded);
- the baseline: ``python -c pass`` with the same interpreter.

Medians of 5 runs; the children's CPU seconds are printed beside the wall seconds (the
machine is shared: wall far above CPU means others were running).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

EXE = [sys.executable, "-m", "mnemoscope"]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str]) -> tuple[float, float]:
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start, _children_cpu() - cpu


def mcp(db: str) -> tuple[float, float, float]:
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.Popen([*EXE, "--db", db, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    first = time.perf_counter() - start
    for line in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}):
        proc.stdin.write((json.dumps(line) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 2
    tools = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(60)
    return first, tools, _children_cpu() - cpu


def main(db: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if db is None:
            db = os.path.join(tmp, "m.db")
            subprocess.run([*EXE, "--db", db, "init"], check=True, capture_output=True)
            subprocess.run([*EXE, "--db", db, "--embedder", "hash", "remember", "Mara lives in Lisbon."], check=True,
                           capture_output=True)
        base = [run([sys.executable, "-c", "pass"]) for _ in range(5)]
        stats = [run([*EXE, "--db", db, "stats"]) for _ in range(5)]
        door = [mcp(db) for _ in range(5)]

    def med(rows, i):
        return statistics.median(r[i] for r in rows)

    print(f"python -c pass: {med(base, 0):.2f} s (CPU {med(base, 1):.2f} s)")
    print(f"mnemoscope stats: {med(stats, 0):.2f} s (CPU {med(stats, 1):.2f} s); target <= 0.3 s")
    print(f"mnemoscope mcp: initialize answered at {med(door, 0):.2f} s (target <= 1 s), tools/list at "
          f"{med(door, 1):.2f} s (CPU of the whole run {med(door, 2):.2f} s)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
