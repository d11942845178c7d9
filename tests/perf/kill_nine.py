"""kill -9 at any moment of a write: what was acknowledged is there, nothing is half-written.

Run (a few minutes; under the bench lock, as it loads the machine):
    flock /tmp/bench.lock python tests/perf/kill_nine.py [--rounds 20] [--engines sqlite,postgresql]

For each engine (PostgreSQL: a throwaway server, tests/support/pg_server.py) and each door that
writes, a writer runs while this script kills it with SIGKILL at a random moment, again and
again (``--rounds``):

* ``serve``: ``mnemoscope serve``, a client POSTing /remember as fast as it answers; every
  memory answered 200 is acknowledged.
* ``mcp``: ``mnemoscope mcp``, a client calling remember; every tool result without isError.
* ``cli``: ``mnemoscope remember`` processes; every one that exited 0.
* ``import``: ``mnemoscope import`` of 10,000 lines, killed at a random moment: all of them or
  none (the line says how many imports finished before their kill).

Then the memory must hold every acknowledged memory with its text, SQLite's file must pass
``PRAGMA integrity_check`` and its full-text index FTS5's, and each import be whole or absent.
Files (both engines alike, so once): ``connect`` of a client's configuration, ``export``
to a file and to a basic-memory folder, killed at random moments, leave the old file or the
new one whole (the configuration parses, the export is all its lines or the old one), and no
folder that looks like an export.

Prints one line per door and engine: rounds, acknowledged, lost, and what else it checked.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = [sys.executable, "-m", "mnemoscope", "--embedder", "hash"]
IMPORT_LINES = 10_000  # SQLite takes ~3 s for them: some kills land before the end, some after


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


def _serve_round(db: str, acked: dict[str, str], tag: str, seconds: float) -> None:
    port = _port()
    proc = subprocess.Popen([*CLI, "--db", db, "serve", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            break
        except OSError:
            time.sleep(0.05)
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            text = f"{tag} serve note {i} about the harbour"
            i += 1
            req = urllib.request.Request(url + "/remember", data=json.dumps(
                {"text": text, "allow_duplicate": True}).encode(), headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    body = json.loads(resp.read())
                if resp.status == 200 and body.get("ok"):
                    acked[body["id"]] = text
            except (OSError, http.client.HTTPException, ValueError):  # the server killed mid-answer
                return

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(seconds)
    _kill(proc)
    stop.set()
    writer.join()


def _mcp_round(db: str, acked: dict[str, str], tag: str, seconds: float) -> None:
    proc = subprocess.Popen([*CLI, "--db", db, "mcp"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)

    def send(message: dict) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    def write() -> None:
        try:
            send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "kill9", "version": "1"}}})
            proc.stdout.readline()
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            i = 0
            while True:
                text = f"{tag} mcp note {i} about the lighthouse"
                i += 1
                send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                    "name": "remember", "arguments": {"text": text, "allow_duplicate": True}}})
                line = proc.stdout.readline()
                if not line:
                    return
                result = json.loads(line).get("result", {})
                if not result.get("isError") and result.get("structuredContent"):
                    acked[result["structuredContent"]["id"]] = text
        except (OSError, ValueError):
            return

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(seconds)
    _kill(proc)
    writer.join()


def _cli_round(db: str, acked: dict[str, str], tag: str, seconds: float) -> None:
    ends = time.monotonic() + seconds
    i = 0
    while time.monotonic() < ends:
        text = f"{tag} cli note {i} about the ferry"
        i += 1
        proc = subprocess.Popen([*CLI, "--db", db, "remember", text, "--allow-duplicate", "--json"], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        timer = threading.Timer(random.uniform(0.3, 2.0), lambda p=proc: _kill(p))
        timer.start()
        out, _ = proc.communicate()
        timer.cancel()
        if proc.returncode == 0:
            acked[json.loads(out)["id"]] = text


def _import_round(db: str, imports: dict[str, int], tag: str, seconds: float, folder: str) -> None:
    path = os.path.join(folder, f"{tag}.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(IMPORT_LINES):
            fh.write(json.dumps({"id": f"{tag}-{i:05d}", "text": f"{tag} imported note {i}"}) + "\n")
    proc = subprocess.Popen([*CLI, "--db", db, "import", path], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    done = proc.poll() == 0
    _kill(proc)
    imports[tag] = IMPORT_LINES if done else -1  # -1: killed, whole or absent


def check_memory(db: str, acked: dict[str, str], imports: dict[str, int]) -> tuple[int, list[str]]:
    from mnemoscope.store import MemoryStore
    from mnemoscope.store.meaning.embedding import HashEmbedder

    problems = []
    with MemoryStore(db, embedder=HashEmbedder()) as store:
        got = {m.id: m.text for m in store.get_many(list(acked))}
        lost = [mid for mid, text in acked.items() if got.get(mid) != text]
        for tag, wanted in imports.items():
            n = store.conn.execute("SELECT count(*) FROM memories WHERE id LIKE ?", (f"{tag}-%",)).fetchone()[0]
            if n not in (0, IMPORT_LINES) or (wanted == IMPORT_LINES and n != IMPORT_LINES):
                problems.append(f"import {tag}: {n} of {IMPORT_LINES}")
        if store.backend()["backend"] == "sqlite":
            if store.conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                problems.append("integrity_check")
            try:
                store.conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
            except Exception as exc:  # noqa: BLE001
                problems.append(f"fts: {exc}")
    return len(lost), problems


def files(rounds: int, folder: str) -> None:
    from mnemoscope.store import MemoryStore
    from mnemoscope.store.meaning.embedding import HashEmbedder

    db = os.path.join(folder, "files.db")
    with MemoryStore(db, embedder=HashEmbedder()) as store:
        store.import_jsonl("\n".join(json.dumps({"text": f"note {i} about Mara and the mill", "entities": [f"P{i % 50}"]})
                                     for i in range(3000)))
    config = os.path.join(folder, "claude.json")
    bad = 0
    for r in range(rounds):
        old = {"numStartups": r, "projects": {f"/p{i}": {"history": ["x" * 200] * 20} for i in range(300)}}
        with open(config, "w", encoding="utf-8") as fh:
            json.dump(old, fh)
        proc = subprocess.Popen([*CLI, "--db", db, "connect", "claude-code", "--config", config], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0.5, 2.5))
        _kill(proc)
        try:
            with open(config, encoding="utf-8") as fh:
                data = json.load(fh)
            bad += data.get("numStartups") != r or len(data.get("projects", {})) != 300
        except ValueError:
            bad += 1
    print(f"connect: {rounds} kills, configurations not whole: {bad}", flush=True)
    out = os.path.join(folder, "export.jsonl")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("the old export\n")
    partial = 0
    for _ in range(rounds):
        proc = subprocess.Popen([*CLI, "--db", db, "export", "--out", out], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0.5, 2.5))
        _kill(proc)
        with open(out, encoding="utf-8") as fh:
            text = fh.read()
        partial += not (text == "the old export\n" or (text.endswith("\n") and text.count("\n") >= 3000))
    print(f"export --out: {rounds} kills, half-written files: {partial}", flush=True)
    whole = os.path.join(folder, "notes-whole")
    subprocess.run([*CLI, "--db", db, "export", "--format", "basic-memory", "--out", whole], cwd=ROOT, check=True,
                   capture_output=True)
    expected = sum(len(f) for _, _, f in os.walk(whole))
    looks = 0
    for r in range(rounds):
        target = os.path.join(folder, f"notes{r}")
        proc = subprocess.Popen([*CLI, "--db", db, "export", "--format", "basic-memory", "--out", target], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0.5, 2.5))
        finished = proc.poll() == 0
        _kill(proc)
        if os.path.exists(target) and not finished:
            looks += sum(len(f) for _, _, f in os.walk(target)) != expected
    print(f"export --format basic-memory: {rounds} kills, partial folders left as the export: {looks}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--no-files", action="store_true")
    args = ap.parse_args()
    random.seed(9)
    folder = tempfile.mkdtemp(prefix="kill9-")
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    for engine in args.engines.split(","):
        server = None
        if engine == "sqlite":
            target = lambda name: os.path.join(folder, f"{name}.db")  # noqa: E731
        else:
            from support import pg_server

            server = pg_server.start()
            target = server.new_database
        try:
            for door, one in (("serve", _serve_round), ("mcp", _mcp_round), ("cli", _cli_round)):
                db = target(f"{engine}_{door}")
                subprocess.run([*CLI, "--db", db, "init"], cwd=ROOT, capture_output=True, check=True)
                acked: dict[str, str] = {}
                for r in range(args.rounds):
                    one(db, acked, f"r{r}", random.uniform(0.8, 3.0))
                lost, problems = check_memory(db, acked, {})
                print(f"{engine} {door}: {args.rounds} kills, {len(acked)} acknowledged, {lost} lost"
                      + (f"; {', '.join(problems)}" if problems else ""), flush=True)
            db = target(f"{engine}_import")
            subprocess.run([*CLI, "--db", db, "init"], cwd=ROOT, capture_output=True, check=True)
            imports: dict[str, int] = {}
            for r in range(args.rounds):
                _import_round(db, imports, f"imp{r}", random.uniform(0.5, 4.0), folder)
            lost, problems = check_memory(db, {}, imports)
            print(f"{engine} import: {args.rounds} kills, {sum(v == IMPORT_LINES for v in imports.values())} finished, "
                  f"imports not whole or absent: {len(problems)}" + (f"; {', '.join(problems)}" if problems else ""),
                  flush=True)
        finally:
            if server is not None:
                server.stop()
    if not args.no_files:
        files(args.rounds, folder)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
