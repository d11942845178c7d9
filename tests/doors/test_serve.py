"""The agents' doors, driven by real counterparts: the official MCP SDK's client against
``mnemoscope mcp`` over stdio and against ``mnemoscope serve``'s /mcp, and the JSON
endpoints over a real socket. Every database is a real one: a file on disk, and (the same
tests again) a database on the PostgreSQL server the run starts (tests/conftest.py)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import Implementation
from mnemoscope.store import MemoryStore
from mnemoscope.store.agents import activity as activity_log
from mnemoscope.store.files.demo import load_demo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = {"remember", "recall", "brief", "tick", "stats", "update", "forget", "capture", "compile_prompt",
         "resolve_citations"}
ENV = dict(os.environ)


@pytest.fixture
def demo_db(db_path):
    """The demo memories (ages relative to now) in the test's database, on either engine."""
    with MemoryStore(db_path) as s:
        load_demo(s)
    return db_path


def memory_tables(path):
    """Everything a refused call must leave alone."""
    with MemoryStore(path, read_only=True) as s:
        return {t: [tuple(r) for r in s.conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()]
                for t in ("memories", "entities", "edges", "recall_events", "ticks", "forgotten", "conversations")}


def stdio_params(db, *args):
    return StdioServerParameters(command=sys.executable, args=["-m", "mnemoscope", "--db", db, "mcp", *args], cwd=ROOT,
                                 env=ENV)


def run_client(server, body, name="pytest-agent"):
    async def main():
        async with Client(server, client_info=Implementation(name=name, version="1.0")) as client:
            return await body(client)

    return anyio.run(main)


def payload(result):
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result):
    assert result.is_error, result.content[0].text
    return result.content[0].text


# -- MCP over stdio -------------------------------------------------------------------------
def test_stdio_server_lists_every_tool_with_schema_and_description(demo_db):
    async def body(client):
        return client.server_info, (await client.list_tools()).tools

    info, tools = run_client(stdio_params(demo_db), body)
    assert info.name == "mnemoscope"
    by_name = {t.name: t for t in tools}
    assert set(by_name) == TOOLS
    for tool in tools:
        assert len(tool.description) > 40, tool.name  # tells a model when to use it
        assert "\n " not in tool.description, tool.description  # no docstring indentation for a model to read
    remember = by_name["remember"].input_schema["properties"]
    assert remember["kind"]["enum"] == ["fact", "lesson", "skill", "reflection", "event"]
    assert remember["sensitivity"]["enum"] == ["public", "low", "medium", "high", "hyper"]
    assert remember["importance"]["minimum"] == 0 and remember["importance"]["maximum"] == 1
    assert remember["text"]["maxLength"] == 4000
    assert by_name["remember"].input_schema["required"] == ["text"]
    assert by_name["recall"].input_schema["properties"]["k"]["maximum"] == 50
    assert by_name["brief"].annotations.read_only_hint is True
    assert by_name["forget"].annotations.destructive_hint is True


def test_stdio_server_calls_every_tool(demo_db):
    async def body(client):
        out = {}
        out["brief"] = payload(await client.call_tool("brief", {"limit": 3}))
        out["remember"] = payload(await client.call_tool(
            "remember", {"text": "Mara switched her team to Zig for the new parser.", "kind": "event",
                         "importance": 0.7, "entities": ["Mara", "Zig"], "tags": ["work"]}))
        out["again"] = payload(await client.call_tool(
            "remember", {"text": "Mara switched her team to Zig for the new parser."}))
        out["recall"] = payload(await client.call_tool("recall", {"query": "peanut allergy", "k": 3,
                                                                   "explain": True}))
        new_id = out["remember"]["id"]
        out["update"] = payload(await client.call_tool("update", {"memory_id": new_id, "importance": 0.9,
                                                                   "topic": "work"}))
        out["capture"] = payload(await client.call_tool(
            "capture", {"content": {"subject": "Mara", "predicate": "prefers_editor", "object": "Helix"},
                        "source_kind": "observation", "reason_to_remember": "editor setup",
                        "context": {"task": "setting up her laptop"}, "proposed_type": "semantic"}))
        out["compile"] = payload(await client.call_tool(
            "compile_prompt", {"user_message": "What should I avoid cooking for Mara?", "max_tokens": 2048,
                               "conversation_id": "chat-42"}))
        citations = " ".join(f"[Mem:{n}]" for n in out["compile"]["ref_map"]) + " [Mem:99]"
        out["resolve"] = payload(await client.call_tool(
            "resolve_citations", {"answer": f"No peanuts {citations}", "conversation_id": "chat-42"}))
        out["forget"] = payload(await client.call_tool("forget", {"memory_id": new_id}))
        out["tick"] = payload(await client.call_tool("tick", {}))
        out["stats"] = payload(await client.call_tool("stats", {}))
        return out

    out = run_client(stdio_params(demo_db), body)
    assert out["brief"]["brief"].startswith("What I know for sure:")
    assert out["remember"]["created"] is True and out["remember"]["memory"]["kind"] == "event"
    assert out["again"]["created"] is False and out["again"]["id"] == out["remember"]["id"]
    hits = out["recall"]["hits"]
    assert hits[0]["id"] == "mem-006" and set(hits[0]["why"]) >= {"keyword", "meaning", "recency", "relevance"}
    assert all(0 <= h["relevance"] <= 1 for h in hits)
    assert out["update"]["memory"]["importance"] == 0.9 and out["update"]["changed"] == ["importance", "topic"]
    captured = out["capture"]["memory"]
    assert "Mara prefers editor Helix" in captured["text"] and captured["kind"] == "fact"
    assert captured["context"] == {"task": "setting up her laptop"}
    compiled = out["compile"]
    assert compiled["messages"][-1]["role"] == "user" and compiled["turn"] == 1
    assert "mem-006" in compiled["ref_map"].values()
    assert compiled["summary"]["token_count"] <= compiled["summary"]["tokens_budget"] <= 2048
    statuses = {c["citation"]: c["status"] for c in out["resolve"]["citations"]}
    assert statuses["[Mem:99]"] == "unknown" and list(statuses.values()).count("ok") == len(compiled["ref_map"])
    assert out["forget"]["restorable"] is True
    assert out["stats"]["memories"] >= 50 and list(out["stats"]["scopes"]) == ["global"]  # no other scopes

    with MemoryStore(demo_db) as store:
        assert not store.exists(out["remember"]["id"])  # forgotten …
        assert [f.memory_id for f in activity_log.forgotten(store)] == [out["remember"]["id"]]
        restored = activity_log.restore_forgotten(store, out["remember"]["id"])  # … and restorable
        assert restored.importance == 0.9 and "Zig" in restored.entities
        assert store.get("mem-006").recall_count >= 1  # an agent's recall is real use
        log = activity_log.recent(store)
    tools_logged = [e.tool for e in reversed(log) if e.door == "mcp"]
    assert tools_logged == ["brief", "remember", "remember", "recall", "update", "capture", "compile_prompt",
                            "resolve_citations", "forget", "tick", "stats"]
    assert {e.client for e in log if e.door == "mcp"} == {"pytest-agent 1.0"}
    recall_entry = next(e for e in log if e.tool == "recall")
    assert recall_entry.memory_ids[0] == "mem-006" and recall_entry.ok and "peanut allergy" in recall_entry.summary


BAD_CALLS = [
    ("recall", {"query": "tea", "k": "many"}, "k"),
    ("recall", {"query": "tea", "k": 500}, "less than or equal to 50"),
    ("remember", {"text": "x" * 4001}, "at most 4000 characters"),
    ("remember", {"text": "Mara likes tea.", "kind": "factoid"}, "'fact', 'lesson'"),
    ("remember", {"text": "Mara likes tea.", "importance": 3}, "less than or equal to 1"),
    ("remember", {"text": "Bob's PIN is 4711.", "scope": "private:bob"}, "scope 'private:bob' is not open"),
    ("remember", {"text": "Mara's diagnosis.", "sensitivity": "hyper"}, "above this server's trust"),
    ("remember", {"text": "   "}, "text: must not be empty"),
    ("update", {"memory_id": "no-such-memory", "text": "x"}, "no memory with id 'no-such-memory'"),
    ("update", {"memory_id": "mem-006"}, "give at least one field"),
    ("forget", {"memory_id": "no-such-memory"}, "no memory with id"),
    ("capture", {"content": {}}, "content: is empty"),
    ("compile_prompt", {"user_message": "hi", "max_tokens": 10}, "greater than or equal to 64"),
    ("resolve_citations", {"answer": "[Mem:1]", "conversation_id": "never-compiled"}, "no conversation"),
    ("remember", {"text": "Mara likes tea.", "colour": "green"}, "colour"),
    ("tick", {"now": 5}, "unknown argument(s) now; tick takes no arguments"),
    ("recall", {"query": "tea", "k" * 5000: 1}, "unknown argument(s) " + "k" * 60 + "…; recall takes explain, k,"),
]


def test_stdio_server_refuses_bad_calls_clearly_and_writes_nothing(demo_db):
    before = memory_tables(demo_db)

    async def body(client):
        errors = [error_text(await client.call_tool(tool, args)) for tool, args, _ in BAD_CALLS]
        unknown = await client.call_tool("drop_database", {})
        alive = payload(await client.call_tool("brief", {}))
        return errors, unknown, alive

    errors, unknown, alive = run_client(stdio_params(demo_db), body)
    for (tool, _args, expected), message in zip(BAD_CALLS, errors, strict=True):
        assert expected in message, (tool, message)
        assert "Traceback" not in message and "errors.pydantic.dev" not in message
    assert unknown.is_error and "drop_database" in unknown.content[0].text
    assert alive["brief"]  # the server survived every one of them
    assert memory_tables(demo_db) == before
    with MemoryStore(demo_db) as store:
        refused = [e for e in activity_log.recent(store) if not e.ok]
    assert len(refused) >= len(BAD_CALLS)  # refused calls are in the log, for the owner to see
    assert any("private:bob" in e.error for e in refused)


def test_scope_and_trust_are_fixed_by_whoever_mounts_the_server(demo_db):
    with MemoryStore(demo_db) as store:
        secret = store.remember("Bob's locker code is 1234.", scope="private:bob", sensitivity="high").memory.id
        mine = store.remember("Bob prefers tea in the morning.", scope="private:bob").memory.id

    async def body(client):
        recall = payload(await client.call_tool("recall", {"query": "Bob locker code tea", "k": 10}))
        write = payload(await client.call_tool("remember", {"text": "Bob plays the oboe.", "kind": "fact"}))
        update_secret = await client.call_tool("update", {"memory_id": secret, "text": "changed"})
        forget_global = await client.call_tool("forget", {"memory_id": "mem-006"})
        return recall, write, update_secret, forget_global

    recall, write, update_secret, forget_global = run_client(
        stdio_params(demo_db, "--scope", "private:bob", "--trust", "medium"), body)
    ids = [h["id"] for h in recall["hits"]]
    # one level above trust is not recalled at all: whether a redacted hit came back would
    # tell its text to whoever guesses it (issue 32); get by id still answers it redacted
    assert mine in ids and secret not in ids
    assert write["memory"]["scope"] == "private:bob"  # the server's scope is the default
    assert "no memory with id" in error_text(update_secret)  # above trust: as if it did not exist
    assert "no memory with id" in error_text(forget_global)  # global is readable, not writable here


# -- the HTTP API and MCP's streamable HTTP, over a real socket -------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(demo_db):
    servers = []

    def start(*args, env=None):
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "mnemoscope", "--db", demo_db, "serve", "--port", str(port), *args],
                                cwd=ROOT, env=dict(ENV, **(env or {})), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        servers.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return f"http://127.0.0.1:{port}"
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(proc.stderr.read()) from None
                time.sleep(0.1)
        raise AssertionError("the server did not start")

    yield start
    for proc in servers:
        proc.terminate()
        proc.wait(10)


def http(method, url, body=None, headers=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "User-Agent": "pytest-http/1", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_http_endpoints_answer_json(http_server, demo_db):
    base = http_server()
    status, health = http("GET", base + "/health")
    assert status == 200 and health["ok"] is True and sum(health["counts"].values()) > 0
    status, brief = http("GET", base + "/brief?limit=2")
    assert status == 200 and brief["brief"].count("\n- ") == 2
    status, recall = http("POST", base + "/recall", {"query": "peanut allergy", "k": 2, "explain": True})
    assert status == 200 and recall["hits"][0]["id"] == "mem-006" and recall["hits"][0]["why"]
    status, made = http("POST", base + "/remember", {"text": "Mara runs on Tuesdays.", "kind": "fact",
                                                     "importance": 0.6})
    assert status == 200 and made["created"] is True
    status, _ = http("POST", base + "/update", {"memory_id": made["id"], "text": "Mara runs on Thursdays."})
    assert status == 200
    status, captured = http("POST", base + "/capture", {"content": "Deployed v2.3 to staging.",
                                                        "source_kind": "event"})
    assert status == 200 and captured["memory"]["kind"] == "event"
    status, compiled = http("POST", base + "/compile", {"user_message": "Does Mara run?", "conversation_id": "c1"})
    assert status == 200 and compiled["conversation_id"] == "c1"
    status, cites = http("POST", base + "/resolve_citations", {"answer": "Yes [Mem:1]", "conversation_id": "c1"})
    assert status == 200 and cites["citations"][0]["status"] == "ok"
    status, _ = http("POST", base + "/forget", {"memory_id": made["id"]})
    assert status == 200
    status, tick = http("POST", base + "/tick", {})
    assert status == 200 and tick["tick_id"] >= 1
    status, stats = http("GET", base + "/stats")
    assert status == 200 and list(stats["scopes"]) == ["global"]
    with MemoryStore(demo_db) as store:
        http_calls = [e for e in activity_log.recent(store) if e.door == "http"]
    assert {e.client for e in http_calls} == {"pytest-http/1"}
    assert [e.tool for e in reversed(http_calls)] == ["brief", "recall", "remember", "update", "capture",
                                                       "compile_prompt", "resolve_citations", "forget", "tick",
                                                       "stats"]
    # abstention is the caller's choice, and a relevance outside [0, 1] is refused naming it
    status, picky = http("POST", base + "/recall", {"query": "peanut allergy", "k": 5, "min_relevance": 0.999})
    assert status == 200 and all(h["relevance"] >= 0.999 for h in picky["hits"])
    status, bad = http("POST", base + "/recall", {"query": "peanut allergy", "min_relevance": 1.5})
    assert status == 422 and "min_relevance" in json.dumps(bad)


def oversized_post(url):
    """A request announcing a 3 MiB body: refused from its headers, before any of it is read
    (sending the body too would race the early answer and break the pipe)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest("POST", parts.path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(3 * 1024 * 1024))
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_http_errors_have_fitting_statuses_and_write_nothing(http_server, demo_db):
    base = http_server()
    before = memory_tables(demo_db)
    cases = [
        (http("POST", base + "/recall", raw=b"{not json"), 400, "not valid JSON"),
        (http("POST", base + "/recall", raw=b'["a"]'), 400, "JSON object"),
        (http("POST", base + "/recall", {"query": "x"}, headers={"Content-Type": "text/plain"}), 400,
         "Content-Type: application/json"),
        (http("POST", base + "/remember", {"text": "x", "importance": "very"}), 422, "importance"),
        (http("POST", base + "/remember", {"text": "x" * 4001}), 422, "at most 4000 characters"),
        (http("POST", base + "/remember", {"text": "tea", "sensitivty": "hyper"}), 422, "sensitivty"),
        (http("POST", base + "/remember", {"text": "tea", "scope": "private:eve"}), 403, "not open"),
        (http("POST", base + "/forget", {"memory_id": "nope"}), 404, "no memory with id 'nope'"),
        (oversized_post(base + "/remember"), 413, "MiB"),
        (http("GET", base + "/health", headers={"Host": "attacker.example"}), 403, "addressed to"),
        (http("POST", base + "/remember", {"text": "pwned"}, headers={"Origin": "http://evil.example"}), 403,
         "web pages"),
    ]
    for (status, body), expected_status, expected in cases:
        assert status == expected_status, body
        assert body["ok"] is False and expected in body["error"] and "Traceback" not in body["error"]
    assert memory_tables(demo_db) == before


def test_http_token_is_required_when_set(http_server):
    base = http_server("--token", "s3cret-token-0123456789")
    status, body = http("POST", base + "/recall", {"query": "tea"})
    assert status == 401 and "Bearer" in body["error"]
    status, _ = http("POST", base + "/recall", {"query": "tea"}, headers={"Authorization": "Bearer wrong"})
    assert status == 401
    status, body = http("POST", base + "/recall", {"query": "tea"},
                        headers={"Authorization": "Bearer s3cret-token-0123456789"})
    assert status == 200 and body["ok"] is True


def test_binding_beyond_loopback_needs_a_token(demo_db):
    out = subprocess.run([sys.executable, "-m", "mnemoscope", "--db", demo_db, "serve", "--host", "0.0.0.0"],
                         capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=60)
    assert out.returncode == 2 and "--token" in out.stderr and "Traceback" not in out.stderr


def test_streamable_http_mcp_endpoint(http_server, demo_db):
    base = http_server()

    async def body(client):
        tools = (await client.list_tools()).tools
        hit = payload(await client.call_tool("recall", {"query": "peanut allergy", "k": 1}))
        refused = await client.call_tool("remember", {"text": "x", "scope": "private:eve"})
        return tools, hit, refused

    tools, hit, refused = run_client(base + "/mcp", body, name="remote-agent")
    assert {t.name for t in tools} == TOOLS
    assert hit["hits"][0]["id"] == "mem-006"
    assert "not open" in error_text(refused)
    with MemoryStore(demo_db) as store:
        entries = activity_log.recent(store, 5)
    assert [(e.tool, e.door, e.client, e.ok) for e in entries[:2]] == [
        ("remember", "mcp", "remote-agent 1.0", False), ("recall", "mcp", "remote-agent 1.0", True)]


def test_streamable_http_mcp_refuses_what_stdio_refuses_with_the_same_reason_and_the_id(http_server, demo_db):
    """A lone surrogate came back as 'Parse error: unexpected end of hex escape at line 1
    column 80' with id null; a capture whose context was nested 150 deep was stored (the
    SDK parses to about 200 levels), and its export then failed to import. The TypeScript
    SDK (the MCP Inspector) writes the id last."""
    base = http_server()
    before = memory_tables(demo_db)
    accept = {"Accept": "application/json, text/event-stream"}
    surrogate = (b'{"method": "tools/call", "params": {"name": "remember", "arguments": {"text": "x", '
                 b'"tags": ["a\\ud800"]}}, "jsonrpc": "2.0", "id": 7}')
    deep = (b'{"method": "tools/call", "params": {"name": "capture", "arguments": {"content": "x", "context": '
            + b"[" * 150 + b"]" * 150 + b'}}, "jsonrpc": "2.0", "id": "d-8"}')
    answers = [http("POST", base + "/mcp", raw=body, headers=accept) for body in (surrogate, deep)]
    assert [(status, got["id"]) for status, got in answers] == [(400, 7), (400, "d-8")]
    assert "lone surrogate \\ud800 in params.arguments.tags[0]" in answers[0][1]["error"]["message"]
    assert "nested deeper than 100" in answers[1][1]["error"]["message"]

    async def body(client):
        return payload(await client.call_tool("brief", {}))

    assert run_client(base + "/mcp", body)["brief"]  # the server goes on
    assert memory_tables(demo_db) == before
    with MemoryStore(demo_db) as store:
        refused = [(e.tool, e.door) for e in activity_log.recent(store, 5) if not e.ok]
    assert refused[:2] == [("capture", "mcp"), ("remember", "mcp")]


def test_streamable_http_mcp_answers_json_that_is_no_request_and_goes_on(http_server, demo_db):
    """``[]``, a batch, ``5``, ``"str"``, ``null``, ``true`` were a 500 with a traceback
    (AttributeError in called_tool); arguments "str" came back with code 0 and a Python
    message, an id that is an object got no answer."""
    base = http_server()
    accept = {"Accept": "application/json, text/event-stream"}
    for raw in (b"[]", b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', b"5", b'"str"', b"null", b"true",
                b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}'):
        status, got = http("POST", base + "/mcp", raw=raw, headers=accept)
        assert (status, got["id"], got["error"]["code"]) == (400, None, -32600), (raw, got)
    status, got = http("POST", base + "/mcp", headers=accept, body={
        "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "recall", "arguments": "str"}})
    assert (status, got["id"], got["error"]["code"]) == (400, 4, -32602), got
    assert "arguments must be an object" in got["error"]["message"]

    async def body(client):
        return payload(await client.call_tool("brief", {}))

    assert run_client(base + "/mcp", body)["brief"]  # the server goes on


def test_readme_mcp_snippet_is_valid_and_its_arguments_parse(capsys):
    from mnemoscope.cli import main

    with open(os.path.join(ROOT, "docs", "agents.md"), encoding="utf-8") as fh:
        readme = fh.read()
    block = readme.split("## Connect an agent", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    server = json.loads(block)["mcpServers"]["mnemoscope"]
    assert server["args"][0] == "mcp"
    assert main([*server["args"], "--help"]) == 0
    assert "Usage: mnemoscope mcp" in capsys.readouterr().out
