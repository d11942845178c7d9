"""Drive a (frozen) Mnemoscope's agent doors the way a client does, with nothing but the
standard library, so that the smoke test needs no virtual environment.

    python3 agent_smoke.py mcp   -- EXE mcp --db PATH     # initialize, tools/list, tools/call recall
    python3 agent_smoke.py serve -- EXE serve --db PATH   # the same with --port N added: GET /health

MCP over stdio is newline-delimited JSON-RPC; the script writes it by hand on purpose: it
checks the server, it is not one. Exits 1 with the reason on any failure, including any
line the server writes to standard error.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

TOOLS = {"remember", "recall", "brief", "tick", "stats", "update", "forget", "capture", "compile_prompt",
         "resolve_citations"}
PROTOCOL = "2025-11-25"  # an initialize-handshake revision, as desktop clients speak it
TIMEOUT_S = 60.0


class SmokeFailure(Exception):
    pass


@contextmanager
def _server(command: list[str]) -> Iterator[tuple[subprocess.Popen, object]]:
    """The server's process and its standard error (a file); killed if still running at
    the end, its standard error shown if anything failed."""
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as err:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                encoding="utf-8", bufsize=1)
        try:
            yield proc, err
        except BaseException:
            if _stderr_of(err).strip():
                print(f"server stderr:\n{_stderr_of(err)}", file=sys.stderr)
            raise
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdin.close()
            proc.stdout.close()


def _stderr_of(err) -> str:
    err.seek(0)
    return err.read()


def _rpc(proc: subprocess.Popen, message: dict) -> dict | None:
    """Send one JSON-RPC message; for a request, read lines until its answer comes."""
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SmokeFailure(f"the server closed its output before answering {message['method']} "
                               f"(exit code {proc.poll()})")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            raise SmokeFailure(f"a line on the server's stdout is not JSON-RPC: {line[:200]!r}") from None
        if answer.get("id") != message["id"]:
            continue  # a notification or a log message from the server
        if "error" in answer:
            raise SmokeFailure(f"{message['method']} failed: {answer['error']}")
        return answer["result"]


def check_mcp(command: list[str]) -> None:
    started = time.perf_counter()
    with _server(command) as (proc, err):
        init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "mnemoscope-smoke-test", "version": "1"}}})
        initialized = time.perf_counter() - started
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        server = init.get("serverInfo", {})
        if server.get("name") != "mnemoscope":
            raise SmokeFailure(f"initialize answered for {server!r}, not mnemoscope")
        listed = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        names = {tool["name"] for tool in listed.get("tools", [])}
        if names != TOOLS:
            raise SmokeFailure(f"tools/list: missing {sorted(TOOLS - names)}, unexpected {sorted(names - TOOLS)}")
        called = _rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "recall", "arguments": {"query": "How does Mara like explanations?", "k": 3}}})
        text = " ".join(c.get("text", "") for c in called.get("content", []))
        if called.get("isError") or not text:
            raise SmokeFailure(f"tools/call recall answered an error or nothing: {text[:300]!r}")
        proc.stdin.close()  # the client goes away: the server must leave on its own
        code = proc.wait(timeout=TIMEOUT_S)
        if _stderr_of(err).strip():
            raise SmokeFailure("unexpected stderr from the MCP server")
        if code != 0:
            raise SmokeFailure(f"the MCP server exited {code} when its client closed stdin")
    print(f"mcp: initialize answered in {initialized:.2f} s after start "
          f"({server.get('name')} {server.get('version')}, protocol {init.get('protocolVersion')}); "
          f"{len(names)} tools listed; recall answered {len(text)} characters")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def check_serve(command: list[str]) -> None:
    port = _free_port()
    started = time.perf_counter()
    with _server([*command, "--port", str(port)]) as (proc, err):
        health = None
        while health is None:
            if proc.poll() is not None:
                raise SmokeFailure(f"serve exited {proc.returncode} before answering")
            if time.perf_counter() - started > TIMEOUT_S:
                raise SmokeFailure(f"serve did not answer GET /health within {TIMEOUT_S:.0f} s")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    health = json.loads(response.read())
            except OSError:
                time.sleep(0.1)
        answered = time.perf_counter() - started
        if not health.get("ok"):
            raise SmokeFailure(f"GET /health: {health}")
        proc.terminate()
        code = proc.wait(timeout=TIMEOUT_S)
        if _stderr_of(err).strip():
            raise SmokeFailure("unexpected stderr from serve")
        if code not in (0, -15):
            raise SmokeFailure(f"serve exited {code} when asked to stop")
    print(f"serve: GET /health answered in {answered:.2f} s after start (version {health.get('version')}, "
          f"{sum(health.get('counts', {}).values())} memories in reach)")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("mcp", "serve") or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    door, command = argv[0], argv[2:]
    try:
        (check_mcp if door == "mcp" else check_serve)(command)
    except (SmokeFailure, subprocess.TimeoutExpired, OSError) as exc:
        print(f"smoke test ({door}): {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
