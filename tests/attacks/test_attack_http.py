"""Attacks on ``mnemoscope serve`` over a real loopback socket: counts of hidden memories,
cross-site writes, and inputs that used to answer 500 instead of a clear 400 or 422."""

import http.client
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.agents import activity as activity_log

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, proc=None):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise AssertionError(proc.stderr.read()) from None
            time.sleep(0.1)
    raise AssertionError("the server did not start")


@pytest.fixture
def serve(db_path):
    procs = []

    def start(*args):
        MemoryStore(db_path).close()
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "mnemoscope", "--db", db_path, "serve", "--port", str(port),
                                 *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        wait_for(port, proc)
        return port

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)


def request(port, method, path, body=b"", headers=None):
    """One request as a browser or a script could send it; returns (status, JSON answer)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"User-Agent": "attack/1", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def post(port, path, args, **headers):
    body = args if isinstance(args, bytes) else json.dumps(args).encode()
    return request(port, "POST", path, body, {"Content-Type": "application/json", **headers})


def table_rows(path, *tables):
    with MemoryStore(path, read_only=True) as s:
        return {t: [tuple(r) for r in s.conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()] for t in tables}


# -- 10. /health counts ----------------------------------------------------------------------
def test_health_and_stats_count_only_what_the_server_may_see(serve, db_path):
    with MemoryStore(db_path) as s:
        s.remember("Seen.", scope="group:a")
        s.remember("Hidden.", scope="group:a", sensitivity="hyper")
    port = serve("--scope", "group:a", "--trust", "low")
    _, health = request(port, "GET", "/health")
    _, stats = request(port, "GET", "/stats")
    assert sum(health["counts"].values()) == 1 and stats["memories"] == 1
    with MemoryStore(db_path) as s:  # another server adds a hyper memory: nothing moves here
        s.remember("Hidden too.", scope="group:a", sensitivity="hyper")
    assert request(port, "GET", "/health")[1] == health and request(port, "GET", "/stats")[1] == stats


# -- 12. cross-site requests -----------------------------------------------------------------------
@pytest.mark.parametrize("origin", ["http://localhost.attacker.example", "http://127.0.0.1.attacker.example",
                                    "http://localhost@attacker.example", "http://127.0.0.1:1@evil.example",
                                    "null", "https://localhost", "http://[::1].evil.example"])
def test_a_look_alike_origin_is_refused(serve, db_path, origin):
    port = serve()
    before = table_rows(db_path, "memories", "ticks")
    status, body = post(port, "/remember", {"text": "pwned"}, Origin=origin)
    assert status == 403 and "web pages" in body["error"]
    status, _ = post(port, "/tick", {}, Origin=origin)
    assert status == 403
    assert table_rows(db_path, "memories", "ticks") == before


def test_the_servers_own_origin_and_no_origin_are_accepted(serve):
    port = serve()
    assert post(port, "/recall", {"query": "tea"}, Origin=f"http://127.0.0.1:{port}")[0] == 200
    assert post(port, "/recall", {"query": "tea"}, Origin=f"http://localhost:{port}")[0] == 200
    assert post(port, "/recall", {"query": "tea"})[0] == 200


@pytest.mark.parametrize("headers", [{"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"},
                                     {"Content-Type": "multipart/form-data; boundary=x"}, {}])
def test_a_simple_request_never_writes(serve, db_path, headers):
    """What a web page may send without a preflight: no body, or a form; never a write."""
    port = serve()
    before = table_rows(db_path, "memories", "ticks", "activity")
    for path in ("/tick", "/remember", "/forget"):
        status, body = request(port, "POST", path, b"", headers)
        assert status in (400, 415) and "application/json" in body["error"], (path, body)
    status, _ = request(port, "POST", "/tick", b"a=1", headers)
    assert status in (400, 415)
    after = table_rows(db_path, "memories", "ticks", "activity")
    assert after["memories"] == before["memories"] and after["ticks"] == before["ticks"]


# -- 13. clear refusals instead of 500 -----------------------------------------------------------
DEEP = b'{"query": "tea", "k": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
BIG = b'{"query": "tea", "k": ' + b"7" * 5000 + b"}"


@pytest.mark.parametrize("path,body,status,expected", [
    ("/recall", DEEP, 400, "nested"),
    ("/recall", BIG, 400, "digits"),
    ("/remember", b'{"text": "Mara \\ud800 likes tea."}', 400, "surrogate"),
    ("/remember", b'{"text": "ok", "tags": ["\\udfff"]}', 400, "surrogate"),
    ("/compile", b'{"user_message": "hi", "history": [{"role": "bogus", "content": "x"}]}', 422, "role"),
    ("/compile", b'{"user_message": "hi", "history": [{"content": "x"}]}', 422, "role"),
    ("/capture", b'{"content": ' + b'{"a": ' * 500 + b"1" + b"}" * 500 + b"}", 400, "nested"),
    # a lone surrogate in a key: its refusal, naming where, could not be sent (a 500 in plain text)
    ("/recall", b'{"query": "tea", "scope": {"\\ud800": 1}}', 400, "surrogate"),
    ("/capture", b'{"content": {"notes": {"\\udfff": "x"}}}', 400, "surrogate"),
    # a NUL in an id: PostgreSQL's "text fields cannot contain NUL" (409), SQLite's 404
    ("/forget", b'{"memory_id": "a\\u0000b"}', 422, "NUL"),
    ("/update", b'{"memory_id": "a\\u0000b", "importance": 0.2}', 422, "NUL"),
])
def test_malformed_bodies_get_a_clear_refusal_and_a_log_line(serve, db_path, path, body, status, expected):
    port = serve()
    got, answer = post(port, path, body)
    assert got == status and expected in answer["error"] and "internal error" not in answer["error"], answer
    assert request(port, "GET", "/health")[0] == 200  # still serving
    with MemoryStore(db_path) as s:
        entries = activity_log.recent(s, 5, trust="hyper")
    assert entries and not entries[0].ok and entries[0].door == "http"
    assert table_rows(db_path, "memories")["memories"] == []


# -- 14. recall on a full disk (the app in this process, on a real socket) ---------------------------
def test_recall_on_a_full_disk_answers_200_and_says_so(db_path, monkeypatch):
    import uvicorn
    from mnemoscope.serve.http_api import build_app
    from mnemoscope.serve.operations import Operations

    store = MemoryStore(db_path)
    store.remember("Mara likes green tea.", memory_id="m-tea")

    def full(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store.tables, "reinforce", full)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(Operations(store, door="http")), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(port)
        status, answer = post(port, "/recall", {"query": "green tea"})
    finally:
        server.should_exit = True
        thread.join(10)
        store.close()
    assert status == 200 and [h["id"] for h in answer["hits"]] == ["m-tea"]
    assert answer["reinforced"] is False and "full" in answer["reinforcement"]


def test_health_without_the_token_says_only_that_the_server_is_up(serve):
    """Bound beyond loopback, every request needs the token; /health stays a liveness probe
    without it, but the counts, scopes and trust of the memory are for token holders only."""
    token = "s3cret-token-0123456789"
    port = serve("--scope", "private:ana", "--trust", "high", "--token", token)
    status, body = request(port, "GET", "/health")
    assert status == 200 and body["ok"] is True and body["version"]
    assert not {"counts", "scopes", "trust"} & set(body), body
    status, body = request(port, "GET", "/health", headers={"Authorization": "Bearer wrong"})
    assert status == 200 and "private:ana" not in json.dumps(body)
    status, body = request(port, "GET", "/health", headers={"Authorization": f"Bearer {token}"})
    assert status == 200 and body["scopes"] == ["private:ana"] and body["trust"] == "high" and "counts" in body


@pytest.mark.parametrize("method, path, status", [("GET", "/nope", 404), ("POST", "/health", 405),
                                                   ("GET", "/recall", 405), ("DELETE", "/remember", 405)])
def test_an_unknown_path_or_method_is_answered_in_json(serve, method, path, status):
    """README: errors are JSON, {"ok": false, "status": …, "error": …}."""
    port = serve()
    got, body = request(port, method, path)
    assert got == status and body["ok"] is False and body["status"] == status and path in body["error"]


def test_a_web_page_cannot_flood_the_activity_log(serve, db_path):
    """A page in the user's browser may fire requests at the server without reading the
    answers: <img src=".../stats"> (no Origin: a browser sends none on such a GET, but marks
    it Sec-Fetch-Site: cross-site), or POSTs from its own origin, refused. Each wrote a log
    row (~1,200 a second, ~200 bytes each, and a tick then kept only the newest 20,000,
    pushing out what agents really did). Now such a GET is refused, and the log keeps one
    line a minute for each kind of refusal."""
    port = serve()
    with MemoryStore(db_path) as s:
        before = len(activity_log.recent(s, 100_000, trust="hyper"))
    for _ in range(30):
        status, body = request(port, "GET", "/stats", headers={"Sec-Fetch-Site": "cross-site",
                                                              "Sec-Fetch-Mode": "no-cors"})
        assert status == 403 and "web pages" in body["error"]
        status, _ = post(port, "/remember", {"text": "from a page"}, Origin="http://evil.example")
        assert status == 403
    with MemoryStore(db_path) as s:
        rows = activity_log.recent(s, 100_000, trust="hyper")  # newest first
    rows = rows[: len(rows) - before]
    assert 1 <= len(rows) <= 2, [r.error for r in rows]
    assert all(not r.ok and "refused (403)" in r.error for r in rows)
    # the server's own page and a request a person typed into the address bar still pass
    assert request(port, "GET", "/stats", headers={"Sec-Fetch-Site": "same-origin"})[0] == 200
    assert request(port, "GET", "/stats", headers={"Sec-Fetch-Site": "none"})[0] == 200
