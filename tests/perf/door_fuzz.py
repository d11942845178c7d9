"""Every door, any input: no answer is a 500, no request goes unanswered, no server stops.

Run (a few minutes):
    python tests/perf/door_fuzz.py [--calls 3000] [--engines sqlite,postgresql] [--seed 32]

Against ``mnemoscope serve`` (HTTP on a real socket: the ten tools' endpoints, and MCP's
streamable HTTP at /mcp in a session) and ``mnemoscope mcp`` over stdio, on each engine
(PostgreSQL: a throwaway server), sends ``--calls`` requests whose arguments are drawn from
hostile values (wrong types, nulls, huge and deeply nested values, NaN, lone surrogates,
control and direction characters, names that are paths, numbers at and past every limit, keys
given twice, unknown keys), mixed with good ones. Counts the answers by status (HTTP), kind
(MCP: result, tool error, JSON-RPC error, none) or both (/mcp) and prints them; a 500, a
missing answer or a server that stopped is a failure, listed with the request that caused it
(exit 1). Both engines get the same requests (one seed): their lines should show the same
counts, as a count that differs tells the engines apart (compared by eye; the script does not).
It does not check what a refusal wrote (tests/attacks/test_attack_http.py does, per endpoint).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = [sys.executable, "-m", "mnemoscope", "--embedder", "hash"]
TOOLS = {  # each tool's arguments (mnemoscope.serve.operations.Operations)
    "remember": ["text", "kind", "importance", "who", "topic", "scope", "sensitivity", "tags", "entities",
                 "allow_duplicate"],
    "recall": ["query", "k", "scope", "explain", "min_relevance"],
    "brief": ["limit", "scope"],
    "tick": [],
    "stats": [],
    "update": ["memory_id", "text", "kind", "importance", "who", "topic", "scope", "sensitivity", "tags", "pinned"],
    "forget": ["memory_id"],
    "capture": ["content", "source_kind", "source", "context", "reason_to_remember", "summary", "proposed_type",
                "proposed_kind", "tags", "scope", "sensitivity", "allow_duplicate"],
    "compile_prompt": ["user_message", "model", "max_tokens", "k", "scope", "rules", "history", "placement",
                       "conversation_id"],
    "resolve_citations": ["answer", "conversation_id", "turn"],
}
PATHS = {"remember": "/remember", "recall": "/recall", "update": "/update", "forget": "/forget",
         "capture": "/capture", "compile_prompt": "/compile", "resolve_citations": "/resolve_citations",
         "tick": "/tick", "brief": "/brief", "stats": "/stats"}


def hostile(rng: random.Random, depth: int = 0) -> object:
    pick = rng.randrange(30)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 2**64, 10**30, 5, 1000, 1001])
    if pick == 3:
        return rng.choice([0.5, -0.0, 1e308, -1e308, 1.5, 1e-320])
    if pick == 4:
        return float(rng.choice(["nan", "inf", "-inf"]))
    if pick == 5:
        return "x" * rng.choice([0, 1, 2000, 4000, 4001, 9000, 200_000])
    if pick == 6:
        return rng.choice(["\ud800", "a\x00b", "a\u202eb", "line\nbreak", "\u2028", "\ufeff", "é" * 3000])
    if pick == 7:
        return rng.choice(["../../etc/passwd", "/dev/zero", "C:\\con", "group:", "private:", "global ",
                           "group:a b", "private:ana", "group:x" * 40, "langgraph:memories.ana"])
    if pick == 8:
        return rng.choice(["public", "low", "medium", "high", "hyper", "HYPER", "secret", ""])
    if pick == 9:
        return rng.choice(["fact", "lesson", "skill", "reflection", "event", "FACT", "note"])
    if pick == 10 and depth < 3:
        return [hostile(rng, depth + 1) for _ in range(rng.randrange(4))]
    if pick == 11 and depth < 3:
        return {rng.choice(["a", "text", "__proto__", "", "\ud800"]): hostile(rng, depth + 1) for _ in range(3)}
    if pick == 12:
        nested: object = "deep"
        for _ in range(rng.choice([50, 99, 101, 500])):
            nested = [nested]
        return nested
    if pick == 13:
        return rng.choice(["m-000000000000", "m-" + "f" * 12, "lg-" + "0" * 20, "' OR 1=1 --", "%", "_"])
    return rng.choice(["Mara likes green tea", "tea", "What does Mara drink?", "Theo", "[Mem:1] yes",
                       "the falcon nests by the river", "0.5", "3"])


def arguments(rng: random.Random, tool: str) -> dict:
    names = TOOLS[tool]
    args = {name: hostile(rng) for name in rng.sample(names, rng.randrange(len(names) + 1))}
    if rng.random() < 0.1:
        args[rng.choice(["sensitivty", "text ", "id", "__class__"])] = hostile(rng)
    return args


def body(rng: random.Random, args: dict) -> bytes:
    text = json.dumps(args, allow_nan=True)
    if rng.random() < 0.05 and text.startswith("{") and len(text) > 2:  # a key given twice
        text = text[:-1] + (", " if text != "{}" else "") + '"text": "twice"}'
    if rng.random() < 0.03:
        return rng.choice([b"", b"[]", b"null", b"{", b"\xff\xfe", b'{"text": "\\ud800"}', b"5", b'"x"'])
    return text.encode("utf-8", "surrogatepass")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(db: str, calls: int, rng: random.Random) -> tuple[Counter, list]:
    port = _port()
    proc = subprocess.Popen([*CLI, "--db", db, "serve", "--port", str(port), "--trust", "medium"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            break
        except OSError:
            time.sleep(0.05)
    seen: Counter = Counter()
    bad = []
    for _ in range(calls):
        tool = rng.choice(list(TOOLS))
        args = arguments(rng, tool)
        path = PATHS[tool]
        if tool in ("brief", "stats"):
            query = "&".join(f"{k}={str(v)[:200]}" for k, v in args.items() if isinstance(v, (str, int, float)))
            req = urllib.request.Request(url + path + ("?" + urllib.request.quote(query, safe="=&", errors="surrogatepass") if query else ""))
        else:
            req = urllib.request.Request(url + path, data=body(rng, args), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status = resp.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except OSError as exc:
            status = f"no answer ({exc})"
        seen[status] += 1
        if status == 500 or not isinstance(status, int):
            bad.append((path, args))
        if proc.poll() is not None:
            bad.append(("the server stopped", args))
            break
    proc.terminate()
    proc.wait(10)
    return seen, bad


def http_mcp(db: str, calls: int, rng: random.Random) -> tuple[Counter, list]:
    """MCP's streamable HTTP at ``/mcp``: a session, then each tool called with hostile arguments."""
    port = _port()
    proc = subprocess.Popen([*CLI, "--db", db, "serve", "--port", str(port), "--trust", "medium"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            break
        except OSError:
            time.sleep(0.05)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(data: bytes) -> tuple[object, bytes]:
        req = urllib.request.Request(url + "/mcp", data=data, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp, resp.read()
        except urllib.error.HTTPError as exc:
            return exc, exc.read()
        except OSError as exc:
            return f"no answer ({exc})", b""

    resp, _ = post(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}).encode())
    headers["mcp-session-id"] = resp.headers.get("mcp-session-id", "")
    headers["mcp-protocol-version"] = "2025-06-18"
    post(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    seen: Counter = Counter()
    bad = []
    for i in range(1, calls + 1):
        tool = rng.choice(list(TOOLS))
        args = arguments(rng, tool)
        inner = body(rng, args).decode("utf-8", "surrogateescape")
        line = (f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": '
                f'{{"name": {json.dumps(tool)}, "arguments": {inner if inner.strip() else "{}"}}}}}')
        resp, data = post(line.encode("utf-8", "surrogateescape"))
        status = resp if isinstance(resp, str) else resp.status if hasattr(resp, "status") else resp.code
        text = data.decode("utf-8", "replace")
        kind = ("error" if '"error"' in text[:200] else "tool error" if '"isError":true' in text.replace(" ", "")
                else "result") if text else "none"
        seen[f"{status} {kind}"] += 1
        if status == 500 or not isinstance(status, int) or not text:
            bad.append((tool, args))
        if proc.poll() is not None:
            bad.append(("the server stopped", args))
            break
    proc.terminate()
    proc.wait(10)
    return seen, bad


def mcp(db: str, calls: int, rng: random.Random) -> tuple[Counter, list]:
    proc = subprocess.Popen([*CLI, "--db", db, "mcp", "--trust", "medium"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    buffer = b""

    def answer(timeout: float = 60.0):
        nonlocal buffer
        ends = time.monotonic() + timeout
        while b"\n" not in buffer:
            left = ends - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                return None
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        return json.loads(line)

    def send(data: bytes) -> None:
        proc.stdin.write(data + b"\n")
        proc.stdin.flush()

    send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}).encode())
    answer()
    send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    seen: Counter = Counter()
    bad = []
    for i in range(1, calls + 1):
        tool = rng.choice(list(TOOLS))
        args = arguments(rng, tool)
        inner = body(rng, args).decode("utf-8", "surrogateescape")
        arguments_text = inner if inner.strip() else "{}"
        line = (f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": '
                f'{{"name": {json.dumps(tool)}, "arguments": {arguments_text}}}}}')
        send(line.encode("utf-8", "surrogateescape"))
        got = answer()
        kind = ("none" if got is None else "error" if "error" in got else
                "tool error" if got.get("result", {}).get("isError") else "result")
        seen[kind] += 1
        if got is None:
            bad.append((tool, args))
            if proc.poll() is not None:
                bad.append(("the server stopped", args))
                break
    proc.stdin.close()
    proc.wait(10)
    return seen, bad


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--seed", type=int, default=32)
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="fuzz-")
    failed = False
    for engine in args.engines.split(","):
        server = None
        if engine == "sqlite":
            target = lambda name: os.path.join(folder, f"{name}.db")  # noqa: E731
        else:
            from support import pg_server

            server = pg_server.start()
            target = server.new_database
        try:
            for door, run in (("http", http), ("http /mcp", http_mcp), ("mcp", mcp)):
                db = target(f"{engine}_{door.replace(' /', '_')}")
                subprocess.run([*CLI, "--db", db, "demo"], cwd=ROOT, capture_output=True, check=True)
                seen, bad = run(db, args.calls, random.Random(args.seed))
                failed |= bool(bad)
                print(f"{engine} {door}: {args.calls} calls; " + ", ".join(f"{k}: {v}" for k, v in sorted(
                    seen.items(), key=str)) + (f"; FAILED {len(bad)}: {bad[:3]!r:.600}" if bad else "; no 500, none unanswered"),
                    flush=True)
        finally:
            if server is not None:
                server.stop()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
