"""A PostgreSQL memory when the server goes away (issue 19, Faults): a call during the outage
fails within seconds with a one-line Unavailable naming the server (never its password),
nothing half-written is left, and the next call after the server is back reconnects by
itself; through ``serve`` that is a 503 with the message, then 200. These tests stop and
start a server of their own (tests/support/pg_server.py), never the run's shared one."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import psycopg
import pytest
from mnemoscope.store import MemoryStore, Unavailable
from support.pg_server import PASSWORD, PASSWORD_USER, binaries, start

pytestmark = pytest.mark.skipif(binaries() is None, reason="no PostgreSQL server binaries on this machine")

T0 = 1_790_000_000.0


@pytest.fixture(scope="module")
def server():
    srv = start()
    yield srv
    srv.stop()


@pytest.fixture
def url(server, request):
    """A new database, reached as the password-checked user (the message must never show it)."""
    name = "f_" + request.node.name[:40].replace("[", "_").replace("]", "_").lower()
    server.psql(f'CREATE DATABASE "{name}"')
    return f"postgresql://{PASSWORD_USER}:{PASSWORD}@127.0.0.1:{server.port}/{name}"


@pytest.fixture
def outage(server):
    """Halt the server for the block; always started again, even when the test fails."""
    halted = []

    def halt():
        server.halt()
        halted.append(True)

    def resume():
        server.resume()
        halted.clear()

    yield halt, resume
    if halted:
        server.resume()


def _rows(server, dbname, sql):
    with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", dbname=dbname) as conn:
        return conn.execute(sql).fetchall()


def _assert_one_line_naming(exc, server):
    text = str(exc)
    assert "\n" not in text and PASSWORD not in text
    assert f"{PASSWORD_USER}@127.0.0.1:{server.port}" in text
    assert "unreachable" in text and "retry" in text


def test_a_call_during_an_outage_is_unavailable_in_seconds_and_the_next_after_it_reconnects(server, url, outage):
    halt, resume = outage
    with MemoryStore(url) as s:
        s.remember("Mara has a peanut allergy.", now=T0, memory_id="m-before")
        halt()
        for call in (lambda: s.remember("Said during the outage.", now=T0 + 1, memory_id="m-during"),
                     lambda: s.recall("peanut", now=T0 + 2), lambda: s.list()):
            started = time.monotonic()
            with pytest.raises(Unavailable) as err:
                call()
            assert time.monotonic() - started < 5
            _assert_one_line_naming(err.value, server)
        resume()
        # the same store object, no reopen: the next call gets a new connection by itself
        assert [h.id for h in s.recall("peanut allergy", now=T0 + 3)] == ["m-before"]
        s.remember("Mara runs on Tuesdays.", now=T0 + 4, memory_id="m-after")
        assert sorted(m.id for m in s.list()) == ["m-after", "m-before"]


def test_a_restart_between_calls_is_not_seen_by_the_next_call(server, url, outage):
    halt, resume = outage
    with MemoryStore(url) as s:
        s.remember("Mara has a peanut allergy.", now=T0, memory_id="m-1")
        halt()
        resume()  # the store's connection is dead, and nobody has told it yet
        assert [m.id for m in s.list()] == ["m-1"]
        s.remember("Mara runs on Tuesdays.", now=T0 + 1, memory_id="m-2")
        assert sorted(m.id for m in s.list()) == ["m-1", "m-2"]


def test_a_connection_cut_in_the_middle_of_a_write_leaves_nothing_of_it(server, url):
    with MemoryStore(url) as s:
        s.remember("Mara has a peanut allergy.", now=T0, memory_id="m-kept")
        pid = s.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        dbname = url.rsplit("/", 1)[1]
        with pytest.raises(Unavailable) as err, s.tables.write() as conn:
            conn.execute("UPDATE memories SET text = ? WHERE id = ?", ("half-written", "m-kept"))
            _rows(server, dbname, f"SELECT pg_terminate_backend({pid})")
            conn.execute("UPDATE memories SET importance = 0.9 WHERE id = ?", ("m-kept",))
        _assert_one_line_naming(err.value, server)
        assert not err.value.outcome_unknown and "this call was not done" in str(err.value)
        assert [m.text for m in s.list()] == ["Mara has a peanut allergy."]
        s.update("m-kept", text="Mara has a severe peanut allergy.")
        assert [m.text for m in s.list()] == ["Mara has a severe peanut allergy."]


def test_a_commit_whose_answer_is_lost_is_not_called_not_done(server, url):
    """The server committed, then the connection broke before its answer came: the caller is
    told the write may have been saved, never that it was not done (it was)."""

    class AnswerLost:  # the store's psycopg connection, losing COMMIT's answer
        def __init__(self, conn):
            self._conn = conn

        def __getattr__(self, name):
            return getattr(self._conn, name)

        def execute(self, sql, *args, **kwargs):
            result = self._conn.execute(sql, *args, **kwargs)
            if sql.strip().upper() == "COMMIT":
                self._conn.close()
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            return result

    with MemoryStore(url) as s:
        s.remember("Mara has a peanut allergy.", now=T0, memory_id="m-1")
        s.conn._conn = AnswerLost(s.conn._conn)
        with pytest.raises(Unavailable) as err:
            s.remember("Mara runs on Tuesdays.", now=T0 + 1, memory_id="m-2")
        assert err.value.outcome_unknown and "may or may not have been saved" in str(err.value)
        assert "not done" not in str(err.value)
        assert sorted(m.id for m in s.list()) == ["m-1", "m-2"]  # it was: the next call reconnected


# -- through serve ---------------------------------------------------------------------------
def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Serve:
    """A real ``mnemoscope --db URL serve`` subprocess and plain HTTP calls to it."""

    def __init__(self, url, tmp_path):
        self.port = _free_port()
        env = dict(os.environ, MNEMOSCOPE_HOME=str(tmp_path / "home"))
        self.proc = subprocess.Popen([sys.executable, "-m", "mnemoscope", "--db", url, "--embedder", "hash",
                                      "serve", "--port", str(self.port)], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("GET", "/health")
                return
            except OSError:
                assert self.proc.poll() is None and time.monotonic() < deadline, self.proc.stderr.read()
                time.sleep(0.2)

    def call(self, method, path, body=None, timeout=30):
        """(status, headers, JSON body), errors included."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "User-Agent": "pytest/1"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.headers, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, json.loads(exc.read())

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def serve(url, tmp_path):
    made = []

    def make():
        made.append(Serve(url, tmp_path))
        return made[-1]

    yield make
    for one in made:
        one.close()


def test_serve_answers_503_with_the_message_during_an_outage_and_200_after_losing_nothing(server, url, outage,
                                                                                            serve):
    halt, resume = outage
    api = serve()
    acknowledged = []
    for i in range(5):
        status, _, body = api.call("POST", "/remember", {"text": f"Acknowledged fact number {i}.", "kind": "fact"})
        assert status == 200
        acknowledged.append(body["id"])
    halt()
    for method, path, body in (("POST", "/remember", {"text": "Said during the outage."}),
                               ("POST", "/recall", {"query": "fact"}), ("GET", "/health", None)):
        started = time.monotonic()
        status, headers, answer = api.call(method, path, body)
        assert time.monotonic() - started < 8, path
        assert status == 503, (path, answer)
        assert answer["ok"] is False and "unreachable" in answer["error"] and "retry" in answer["error"]
        assert PASSWORD not in answer["error"] and "\n" not in answer["error"]
        assert int(headers["Retry-After"]) >= 1
    assert api.proc.poll() is None
    resume()
    status, _, body = api.call("POST", "/remember", {"text": "Said after the outage.", "kind": "fact"})
    assert status == 200
    acknowledged.append(body["id"])
    status, _, health = api.call("GET", "/health")
    assert status == 200
    with MemoryStore(url) as s:
        texts = {m.id: m.text for m in s.list()}
    assert set(texts) == set(acknowledged) and "Said during the outage." not in texts.values()


def test_kill_9_of_serve_mid_write_leaves_no_half_written_memory(server, url, serve):
    api = serve()
    acknowledged, stop = [], threading.Event()

    def writer(n):
        i = 0
        while not stop.is_set():
            try:
                status, _, body = api.call("POST", "/remember", {"text": f"Writer {n} says thing {i}."}, timeout=5)
            except OSError:
                return
            if status == 200:
                acknowledged.append(body["id"])
            i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while len(acknowledged) < 10 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(api.proc.pid, signal.SIGKILL)
    api.proc.wait(10)
    stop.set()
    for t in threads:
        t.join(10)
    assert len(acknowledged) >= 10
    dbname = url.rsplit("/", 1)[1]
    ids = {r[0] for r in _rows(server, dbname, "SELECT id FROM memories")}
    assert set(acknowledged) <= ids  # every acknowledged write is there
    # and every memory is whole: it has its state row
    assert _rows(server, dbname, "SELECT count(*) FROM memories m LEFT JOIN memory_state s ON s.rowid = m.rowid "
                                 "WHERE s.rowid IS NULL") == [(0,)]
    with MemoryStore(url) as s:  # and the store opens it and writes on
        s.remember("After the crash.", now=T0)
        assert len(s.list(limit=10_000)) == len(ids) + 1


# -- through MCP -----------------------------------------------------------------------------
def test_mcp_tools_answer_a_tool_error_with_the_message_during_an_outage_and_work_after(server, url, outage,
                                                                                     tmp_path):
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    halt, resume = outage
    params = StdioServerParameters(command=sys.executable, env={"MNEMOSCOPE_HOME": str(tmp_path / "home")},
                                   args=["-m", "mnemoscope", "--db", url, "--embedder", "hash", "mcp"])

    def text(result):
        return " ".join(getattr(c, "text", "") for c in result.content)

    async def session():
        with open(tmp_path / "mcp.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as mcp:
                await mcp.initialize()
                first = await mcp.call_tool("remember", {"text": "Mara has a peanut allergy.", "kind": "fact"})
                assert not first.is_error, text(first)
                halt()
                started = time.monotonic()
                with anyio.fail_after(15):
                    failed = await mcp.call_tool("recall", {"query": "peanut allergy"})
                assert time.monotonic() - started < 8
                assert failed.is_error
                message = text(failed)
                assert "unreachable" in message and "retry" in message and PASSWORD not in message
                assert f"127.0.0.1:{server.port}" in message
                resume()
                again = await mcp.call_tool("recall", {"query": "peanut allergy"})
                assert not again.is_error and "peanut" in text(again)

    anyio.run(session)


def test_the_new_connection_is_set_up_as_the_first_read_only_and_numbers_as_floats(server, url, outage):
    halt, resume = outage
    MemoryStore(url).close()
    with MemoryStore(url, read_only=True) as s:
        halt()
        with pytest.raises(Unavailable):
            s.list()
        resume()
        assert s.conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        assert s.conn.execute("SELECT CAST(1.5 AS numeric)").fetchone()[0] == 1.5
        assert isinstance(s.conn.execute("SELECT CAST(1.5 AS numeric)").fetchone()[0], float)
