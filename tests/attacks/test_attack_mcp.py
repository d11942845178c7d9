"""Attacks on ``mnemoscope mcp``: raw JSON-RPC lines over stdio that the SDK leaves
unanswered (a client would hang), tool calls that used to fail with a bare message, and
JSONL imports that used to crash. Every request gets an answer, in time."""

import json
import os
import select
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import Implementation
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore
from mnemoscope.store.importers.jsonl import ImportRefused

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw-attacker", "version": "1"}}}


class RawStdio:
    """``mnemoscope mcp`` driven line by line, as a hand-written client would."""

    def __init__(self, db):
        self.proc = subprocess.Popen([sys.executable, "-m", "mnemoscope", "--db", db, "mcp"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buffer = b""

    def send(self, line):
        self.proc.stdin.write((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout=20.0):
        """The next message the server writes, or None when none comes in ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def raw(db_path):
    with MemoryStore(db_path) as s:
        s.remember("Mara likes green tea.")
    client = RawStdio(db_path)
    client.send(INIT)
    assert client.answer()["id"] == 1
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield client
    client.close()


BAD_REQUESTS = [
    (2, b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", '
        b'"arguments": {"text": "Mara \\ud800 likes tea."}}}', "surrogate"),
    (3, b'{"jsonrpc": "2.0", "id": 3, "method": 5}', "method"),
    (4, b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": ["recall", {"query": "tea"}]}', "params"),
    (5, b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": 7}', "params"),
    (6, b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "recall", '
        b'"arguments": {"query": "tea", "k": ' + b"9" * 5000 + b'}}}', "digits"),
    (7, b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "recall", '
        b'"arguments": {"query": ' + b"[" * 50_000 + b"]" * 50_000 + b"}}}", "nested"),
    (None, b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call"', "JSON"),
    ("x\ud800", b'{"jsonrpc": "2.0", "id": "x\\ud800", "method": "tools/list"}', "surrogate"),
    # The TypeScript SDK (the MCP Inspector, most desktop clients) writes the id last, after the params.
    (9, b'{"method": "tools/call", "params": {"name": "remember", "arguments": {"text": "x", '
        b'"tags": ["a\\ud800"]}}, "jsonrpc": "2.0", "id": 9}', "surrogate"),
    ("ts-10", b'{"method": "tools/call", "params": {"name": "compile_prompt", "arguments": {"user_message": "hi", '
        b'"history": [{"role": "user", "content": "a \\"id\\": 1 [", "x": ' + b"[" * 150 + b"]" * 150
        + b'}]}}, "jsonrpc": "2.0", "id": "ts-10"}', "nested"),
    (11, b'{"method": "tools/call", "params": {"name": "recall", "arguments": {"query": "tea", "id": 5, "k": '
        + b"9" * 5000 + b'}}, "jsonrpc": "2.0", "id": 11}', "digits"),
]


@pytest.mark.parametrize("expected_id,line,expected", BAD_REQUESTS, ids=[str(i) for i, _, _ in BAD_REQUESTS])
def test_every_raw_request_gets_an_answer(raw, expected_id, line, expected):
    raw.send(line)
    got = raw.answer()
    assert got is not None, "no answer: a client waiting for it would hang"
    assert "error" in got and expected in got["error"]["message"], got
    if isinstance(expected_id, int) or (isinstance(expected_id, str) and expected_id.isascii()):
        assert got["id"] == expected_id
    else:
        assert got["id"] is None  # an id we cannot echo back is answered as JSON-RPC says: null
    raw.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "recall",
                                                                            "arguments": {"query": "tea"}}})
    alive = raw.answer()
    assert alive["id"] == 99 and not alive["result"].get("isError"), alive


# JSON that is not a request object: JSON-RPC 2.0 answers each with -32600 and a null id,
# and a batch (an array) is not part of MCP from 2025-06-18 on, which the fixture speaks.
NOT_OBJECTS = [b"[]", b"5", b'"str"', b"null", b"true", b"[1, 2]",
               b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]']


@pytest.mark.parametrize("line", NOT_OBJECTS, ids=[n.decode() for n in NOT_OBJECTS])
def test_a_message_that_is_not_an_object_is_answered_and_the_server_goes_on(raw, line):
    raw.send(line)
    got = raw.answer()
    assert got is not None and got["id"] is None and got["error"]["code"] == -32600, got
    raw.send({"jsonrpc": "2.0", "id": 98, "method": "ping"})
    assert raw.answer() == {"jsonrpc": "2.0", "id": 98, "result": {}}


def test_arguments_that_are_not_an_object_are_invalid_params(raw):
    raw.send({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {"name": "recall", "arguments": "str"}})
    got = raw.answer()
    assert got["id"] == 21 and got["error"]["code"] == -32602 and "arguments" in got["error"]["message"], got
    raw.send({"jsonrpc": "2.0", "id": 22, "method": "tools/call", "params": {"name": 5, "arguments": {}}})
    got = raw.answer()
    assert got["id"] == 22 and got["error"]["code"] == -32602 and "name" in got["error"]["message"], got


@pytest.mark.parametrize("ident", [{"a": 1}, [1], 1.5, True, None])
def test_a_request_whose_id_is_no_id_is_answered(raw, ident):
    raw.send({"jsonrpc": "2.0", "id": ident, "method": "ping"})
    got = raw.answer()
    assert got is not None and got["id"] is None and got["error"]["code"] == -32600, got
    assert "id must be" in got["error"]["message"]


def test_a_batch_is_answered_as_one_array_in_protocol_2025_03_26(db_path):
    MemoryStore(db_path).close()
    client = RawStdio(db_path)
    try:
        client.send({**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}})
        assert client.answer()["result"]["protocolVersion"] == "2025-03-26"
        client.send([{"jsonrpc": "2.0", "method": "notifications/initialized"},
                     {"jsonrpc": "2.0", "id": "a", "method": "ping"},
                     {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "recall", "arguments": {"query": "tea"}}},
                     5, {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": []}])
        got = client.answer()
        assert isinstance(got, list) and len(got) == 4, got
        by_id = {json.dumps(item["id"]): item for item in got}
        assert by_id['"a"']["result"] == {} and "content" in by_id["2"]["result"]
        assert by_id["3"]["error"]["code"] == -32600 and by_id["null"]["error"]["code"] == -32600
        client.send(b"[]")  # an empty batch is one error, not an empty array
        assert client.answer()["error"]["code"] == -32600
        client.send([{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}}])
        client.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})  # a batch of notifications gets no answer
        assert client.answer()["id"] == 4
        # Up to 1,000 messages, ids repeated too, come back in one array; a bigger batch is refused whole.
        client.send([{"jsonrpc": "2.0", "id": i % 10, "method": "ping"} for i in range(1000)])
        got = client.answer(timeout=60)
        assert len(got) == 1000 and sorted(item["id"] for item in got) == sorted(i % 10 for i in range(1000))
        client.send([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(100_001)])
        got = client.answer()
        assert got["error"]["code"] == -32600 and "at most 1000" in got["error"]["message"]
        client.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert client.answer()["id"] == 5
    finally:
        client.close()


def test_a_bad_notification_is_not_answered_and_does_not_stop_the_server(raw):
    raw.send(b'{"jsonrpc": "2.0", "method": 5}')
    raw.send({"jsonrpc": "2.0", "id": 12, "method": "tools/list"})
    assert raw.answer()["id"] == 12


# -- tool errors say what was wrong --------------------------------------------------------------
def test_compile_with_a_bogus_history_role_says_which_role(db_path):
    MemoryStore(db_path).close()

    async def body():
        server = StdioServerParameters(command=sys.executable, args=["-m", "mnemoscope", "--db", db_path, "mcp"],
                                       cwd=ROOT)
        async with Client(server, client_info=Implementation(name="pytest-agent", version="1")) as client:
            return await client.call_tool("compile_prompt", {"user_message": "hi",
                                                             "history": [{"role": "bogus", "content": "x"}]})

    bogus = anyio.run(body)
    assert bogus.is_error and "history[0].role" in bogus.content[0].text and "bogus" in bogus.content[0].text


# -- JSONL import -----------------------------------------------------------------------------------
def test_an_import_of_deep_or_huge_lines_lists_them_by_number(store):
    lines = ['{"id": "a", "text": "fine"}', '{"id": "b", "text": "deep", "context": ' + "[" * 100_000
             + "]" * 100_000 + "}", '{"id": "c", "text": "big", "importance": ' + "1" * 5000 + "}",
             '{"id": "d", "text": "lone \\ud800"}']
    with pytest.raises(ImportRefused) as refused:
        store.import_jsonl("\n".join(lines))
    numbers = [n for n, _ in refused.value.errors]
    assert numbers == [2, 3, 4], refused.value.errors
    messages = dict(refused.value.errors)
    assert "nested" in messages[2] and "digits" in messages[3] and "surrogate" in messages[4]
    assert store.count() == 0


def test_the_import_command_answers_deep_lines_without_a_traceback(db_path, tmp_path, capsys):
    source = tmp_path / "deep.jsonl"
    source.write_text('{"text": "deep", "context": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    MemoryStore(db_path).close()
    assert main(["--db", db_path, "import", str(source)]) == 1
    err = capsys.readouterr().err
    assert "line 1" in err and "Traceback" not in err


def test_every_tool_declares_an_output_schema_and_answers_structured_content(raw):
    """Answers were JSON text only (no structuredContent, no outputSchema), and capture's
    content and context had an empty schema, which the MCP Inspector's --strict warns about."""
    raw.send({"jsonrpc": "2.0", "id": 30, "method": "tools/list"})
    tools = {t["name"]: t for t in raw.answer()["result"]["tools"]}
    assert all(t["outputSchema"]["type"] == "object" for t in tools.values()), tools
    capture = tools["capture"]["inputSchema"]["properties"]
    assert "object" in capture["content"]["type"] and "null" not in capture["content"]["type"]
    assert "null" in capture["context"]["type"]
    raw.send({"jsonrpc": "2.0", "id": 31, "method": "tools/call", "params": {"name": "recall",
                                                                            "arguments": {"query": "tea"}}})
    got = raw.answer()["result"]
    assert got["structuredContent"]["hits"][0]["text"] == "Mara likes green tea."
    assert json.loads(got["content"][0]["text"]) == got["structuredContent"]
    raw.send({"jsonrpc": "2.0", "id": 32, "method": "tools/call", "params": {"name": "capture", "arguments": {
        "content": {"subject": "Mara", "predicate": "drinks", "object": "oolong"}, "context": ["a", 1]}}})
    got = raw.answer()["result"]
    assert not got["isError"] and got["structuredContent"]["created"] is True, got
