"""A team on one PostgreSQL memory: N ``serve`` processes, M agent threads each, for T seconds.

Run: python tests/perf/team_bench.py [--servers N] [--agents M] [--seconds T] [--outage S]
     [--outage-at A] [--tick-every P] [--no-sqlite]     (defaults 4 × 8 × 60 s, no outage, tick every 10 s)

Starts a throwaway PostgreSQL (tests/support/pg_server.py) and N ``mnemoscope --db URL serve``
processes on it; each agent (a thread with its own keep-alive HTTP connection to one
server, agents spread evenly) loops: recall 40 %, remember 30 %, update 20 % (a memory it
made itself), compile 10 % (a prompt from a recall, as an agent's turn). Meanwhile another
process runs ``mnemoscope tick`` every P seconds (default 10; 0 for none): its durations
and failures are printed. With ``--outage S`` the server is stopped (fast shutdown) A seconds in
(default a third of T) for S seconds, mid-load. Prints calls/s, p50/p99 per call kind,
errors (anything not 200 or 503), the 503 count, the slowest answer during the outage
(calls must fail fast, not hang), the recovery time (PostgreSQL back → the first write
acknowledged), and lost writes: afterwards every acknowledged remember must be there and
every memory must hold the text of its last acknowledged update (or of an update whose
answer was lost in the outage, which may have committed). Then the same load through one
SQLite ``serve`` with N × M agents, as a baseline (``--no-sqlite`` skips it).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mnemoscope.store import MemoryStore  # noqa: E402
from support.pg_server import start  # noqa: E402

WORDS = [a + b for a in ("ka", "lo", "mi", "nu", "se", "tor", "vel", "zan", "rho", "qui") for b in
         ("ri", "po", "du", "fe", "ga", "hu", "ne", "sto")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    def __init__(self, db: str, home: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "mnemoscope", "--db", db, "--embedder", "hash", "serve",
                                      "--port", str(self.port)], env=dict(os.environ, MNEMOSCOPE_HOME=home),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 90
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"serve on port {self.port} did not start")
            time.sleep(0.2)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Load:
    """What the agents did: every call's kind, start, latency and status; every acknowledged write."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, float, float, int]] = []  # kind, started (monotonic), seconds, status
        self.made: set[str] = set()
        self.texts: dict[str, set[str]] = {}  # memory id -> texts it may hold (last acknowledged + unanswered)

    def agent(self, n: int, port: int, until: float, seed: int) -> None:
        rng = random.Random(seed)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine: list[str] = []
        i = 0
        while time.monotonic() < until:
            i += 1
            r = rng.random()
            kind = "compile" if r < 0.1 else "recall" if r < 0.5 or (r >= 0.8 and not mine) \
                else "remember" if r < 0.8 else "update"
            text = f"Agent {n} note {i}: " + " ".join(rng.choice(WORDS) for _ in range(8)) + "."
            if kind == "recall":
                path, body = "/recall", {"query": " ".join(rng.choice(WORDS) for _ in range(3)), "k": 5}
            elif kind == "compile":
                path, body = "/compile", {"user_message": "What about " + " ".join(rng.choice(WORDS) for _ in
                                                                               range(3)) + "?", "k": 10}
            elif kind == "remember":
                path, body = "/remember", {"text": text, "kind": "fact"}
            else:
                target = rng.choice(mine)
                path, body = "/update", {"memory_id": target, "text": text}
            started = time.monotonic()
            try:
                conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json",
                                                              "User-Agent": f"team-bench/{n}"})
                resp = conn.getresponse()
                status, answer = resp.status, json.loads(resp.read() or b"{}")
            except (OSError, http.client.HTTPException, ValueError):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                status, answer = 0, {}
            took = time.monotonic() - started
            with self.lock:
                self.calls.append((kind, started, took, status))
                if kind == "remember" and status == 200 and answer.get("created", True):
                    self.made.add(answer["id"])
                    self.texts[answer["id"]] = {text}
                    mine.append(answer["id"])
                elif kind == "update":
                    if status == 200:
                        self.texts[target] = {text}
                    else:  # no answer: it may or may not have committed
                        self.texts[target].add(text)
            if status == 503:
                time.sleep(0.2)  # a polite client, as Retry-After asks (shortened)

    def lost(self, db: str) -> tuple[int, int]:
        """(acknowledged memories missing, memories not holding an acknowledged text)."""
        with MemoryStore(db, read_only=True) as s:
            stored = {m.id: m.text for m in s.list()}
        missing = sum(1 for ident in self.made if ident not in stored)
        wrong = sum(1 for ident, texts in self.texts.items() if ident in stored and stored[ident] not in texts)
        return missing, wrong


def ticking(db: str, home: str, every: float, until: float, ticks: list[tuple[float, int, str]]) -> None:
    """Another process's tick every ``every`` seconds until ``until``: (seconds, exit code, last line)."""
    env = dict(os.environ, MNEMOSCOPE_HOME=home)
    while time.monotonic() + every < until:
        time.sleep(every)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "mnemoscope", "--db", db, "tick"], env=env,
                              capture_output=True, text=True, timeout=120)
        last = (done.stdout.strip() or done.stderr.strip()).splitlines()[-1:] or [""]
        ticks.append((time.monotonic() - started, done.returncode, last[0]))


def run(db: str, servers: int, agents: int, seconds: float, home: str, outage: tuple[float, float] | None = None,
        pg=None, tick_every: float = 0) -> dict:
    procs = [Serve(db, home) for _ in range(servers)]
    ticks: list[tuple[float, int, str]] = []
    try:
        for p in procs:
            p.wait_ready()
        load = Load()
        t0 = time.monotonic()
        until = t0 + seconds
        threads = [threading.Thread(target=load.agent, args=(n, procs[n % servers].port, until, n), daemon=True)
                   for n in range(servers * agents)]
        if tick_every:
            threads.append(threading.Thread(target=ticking, args=(db, home, tick_every, until, ticks), daemon=True))
        for t in threads:
            t.start()
        window = None
        if outage:
            time.sleep(max(0.0, t0 + outage[0] - time.monotonic()))
            down = time.monotonic()
            pg.halt()
            time.sleep(outage[1])
            pg.resume()
            window = (down, time.monotonic())
        for t in threads:
            t.join(seconds + 60)
        elapsed = time.monotonic() - t0
        alive = sum(1 for p in procs if p.proc.poll() is None)
    finally:
        for p in procs:
            p.close()
    missing, wrong = load.lost(db)
    out = {"calls": len(load.calls), "calls_per_s": len(load.calls) / elapsed, "alive": f"{alive}/{servers}",
           "errors": sum(1 for c in load.calls if c[3] not in (200, 503)),
           "503": sum(1 for c in load.calls if c[3] == 503), "acknowledged_writes": len(load.made),
           "lost_memories": missing, "lost_updates": wrong, "kinds": {}, "ticks": ticks}
    by_kind = defaultdict(list)
    for kind, _, took, status in load.calls:
        if status == 200:
            by_kind[kind].append(took * 1000)
    for kind, times in sorted(by_kind.items()):
        times.sort()
        out["kinds"][kind] = (len(times), statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))])
    if window:
        down, back = window
        during = [took for _, started, took, status in load.calls if down <= started < back and status != 200]
        out["slowest_failed_call_during_outage_s"] = max(during, default=0.0)
        writes_after = [started + took for kind, started, took, status in load.calls
                        if kind != "recall" and status == 200 and started + took > back]
        out["recovery_s"] = (min(writes_after) - back) if writes_after else None
    return out


def show(title: str, r: dict) -> None:
    print(f"\n{title}")
    ok = sum(n for n, _, _ in r["kinds"].values())
    print(f"  {r['calls']} calls, {r['calls_per_s']:.1f} calls/s ({ok} answered 200); servers alive at the end "
          f"{r['alive']}")
    for kind, (n, p50, p99) in r["kinds"].items():
        print(f"  {kind:9s} {n:6d} ok   p50 {p50:7.1f} ms   p99 {p99:7.1f} ms")
    print(f"  errors (not 200/503): {r['errors']}   503: {r['503']}")
    if r["ticks"]:
        took = sorted(t for t, _, _ in r["ticks"])
        failed = [line for _, code, line in r["ticks"] if code != 0]
        print(f"  ticks from another process: {len(took)}, median {statistics.median(took):.2f} s, slowest "
              f"{took[-1]:.2f} s, failed {len(failed)}" + (f" ({failed[0]})" if failed else ""))
    if "recovery_s" in r:
        rec = "never" if r["recovery_s"] is None else f"{r['recovery_s']:.2f} s"
        print(f"  slowest failed call during the outage: {r['slowest_failed_call_during_outage_s']:.2f} s;"
              f" recovery (PostgreSQL back → first write acknowledged): {rec}")
    print(f"  acknowledged writes checked: {r['acknowledged_writes']} memories; lost memories "
          f"{r['lost_memories']}, lost updates {r['lost_updates']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--agents", type=int, default=8, help="agent threads per server")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--outage", type=float, default=0, help="stop PostgreSQL this long mid-load")
    ap.add_argument("--outage-at", type=float, default=None, help="seconds in (default a third of --seconds)")
    ap.add_argument("--tick-every", type=float, default=10, help="another process ticks this often (0: never)")
    ap.add_argument("--no-sqlite", action="store_true")
    a = ap.parse_args()
    home = tempfile.mkdtemp(prefix="team-bench-")
    pg = start()
    try:
        url = pg.new_database("team")
        MemoryStore(url).close()  # the schema, before the servers race to make it
        outage = (a.outage_at if a.outage_at is not None else a.seconds / 3, a.outage) if a.outage else None
        show(f"PostgreSQL: {a.servers} serve × {a.agents} agents, {a.seconds:g} s"
             + (f", PostgreSQL stopped {outage[1]:g} s at {outage[0]:g} s" if outage else ""),
             run(url, a.servers, a.agents, a.seconds, home, outage, pg, a.tick_every))
    finally:
        pg.stop()
    if not a.no_sqlite:
        db = os.path.join(home, "team.db")
        MemoryStore(db).close()
        show(f"SQLite baseline: 1 serve × {a.servers * a.agents} agents, {a.seconds:g} s",
             run(db, 1, a.servers * a.agents, a.seconds, home, tick_every=a.tick_every))


if __name__ == "__main__":
    main()
