"""``mnemoscope mcp`` and ``serve`` on a PostgreSQL memory, driven as agents drive them (the
MCP SDK's client over stdio, HTTP requests), and the low-trust twin: two databases that
differ only in memories a low-trust caller may not see must answer that caller alike."""

import itertools
import json
import re
import subprocess
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import Implementation
from mnemoscope.store import MemoryStore
from test_attack_http import free_port, post, request, wait_for
from test_attack_mcp import ROOT

T0 = 1_790_000_000.0
SEEN = [("m-tea", "Mara drinks green tea every morning.", "fact"),
        ("m-flight", "Mara booked a flight to Tokyo for the conference.", "event"),
        ("m-cat", "Jun's cat is called Miso.", "fact")]
# What a low-trust caller with no scopes must never learn of, not even through counts or ranks.
HIDDEN = [dict(memory_id="h-private", text="Mara's tea supplier in Tokyo is Kestrelwick.",
               scope="group:finance"),
          dict(memory_id="h-secret", text="Mara drinks green tea because of Xantheloma.", sensitivity="hyper"),
          dict(memory_id="h-high", text="Jun's cat Miso has a vet bill of 4817 euros.", sensitivity="high")]
CALLS = [("recall", {"query": "what does Mara drink"}), ("recall", {"query": "Tokyo"}),
         ("recall", {"query": "Miso cat vet"}), ("brief", {}), ("stats", {}),
         ("compile_prompt", {"user_message": "What should I know about Mara and Tokyo?"})]


def _fill(url, hidden):
    with MemoryStore(url) as s:
        for memory_id, text, kind in SEEN:
            s.remember(text, kind=kind, memory_id=memory_id, now=T0)
        for h in hidden:
            s.remember(now=T0, **h)


_twins = itertools.count()


@pytest.fixture
def twins(pg_server):
    n = next(_twins)
    plain = pg_server.new_database(f"twin_plain{n}")
    more = pg_server.new_database(f"twin_hidden{n}")
    _fill(plain, [])
    _fill(more, HIDDEN)
    return plain, more


def _mcp(url, calls):
    async def body():
        server = StdioServerParameters(command=sys.executable, cwd=ROOT,
                                       args=["-m", "mnemoscope", "--db", url, "mcp", "--trust", "low"])
        async with Client(server, client_info=Implementation(name="pytest-agent", version="1")) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            answers = []
            for name, args in calls:
                got = await client.call_tool(name, args)
                answers.append((got.is_error, [c.text for c in got.content]))
            return tools, answers

    return anyio.run(body)


def _comparable(text):
    """An answer without what differs between any two calls: the database's name, and the
    strengths' last digits (the real clock moves on between the two servers' calls)."""
    text = re.sub(r"twin_(hidden|plain)\d+", "DB", text)
    return re.sub(r"(\d+\.\d{3})\d+", r"\1", text)


def test_mcp_on_postgres_remembers_and_recalls(pg_url):
    MemoryStore(pg_url).close()
    tools, answers = _mcp(pg_url, [("remember", {"text": "Mara prefers window seats."}),
                                   ("recall", {"query": "window seat"})])
    assert {"remember", "recall", "compile_prompt"} <= set(tools)
    (wrote_error, _), (recall_error, recalled) = answers
    assert not wrote_error and not recall_error and "window seats" in recalled[0]
    with MemoryStore(pg_url) as s:
        assert [m.text for m in s.list()] == ["Mara prefers window seats."]


def test_a_low_trust_caller_cannot_tell_the_twins_apart_over_mcp(twins):
    plain, more = twins
    ours = _mcp(plain, CALLS)
    theirs = _mcp(more, CALLS)
    assert ours[0] == theirs[0]
    for (call, _), a, b in zip(CALLS, ours[1], theirs[1], strict=True):
        assert not a[0], (call, a)
        assert [_comparable(t) for t in a[1]] == [_comparable(t) for t in b[1]], call
    everything = json.dumps(theirs)
    assert not any(word in everything for word in ("Kestrelwick", "Xantheloma", "4817", "h-private"))
    assert "Miso" in json.dumps(ours[1][2])  # the visible memory is found: the test can fail


def test_a_low_trust_caller_cannot_tell_the_twins_apart_over_http(twins):
    answers = []
    for url in twins:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "mnemoscope", "--db", url, "serve", "--trust", "low",
                                 "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_for(port, proc)
            got = [request(port, "GET", "/brief"), request(port, "GET", "/stats")]
            for name, args in CALLS:
                if name == "recall":
                    got.append(post(port, "/recall", args))
            got.append(post(port, "/compile", CALLS[-1][1]))
            answers.append(got)
        finally:
            proc.terminate()
            proc.wait(10)
    plain, more = (_comparable(json.dumps(a, sort_keys=True)) for a in answers)
    assert all(status == 200 for status, _ in answers[0]), answers[0]
    assert plain == more
    assert not any(word in more for word in ("Kestrelwick", "Xantheloma", "4817", "h-private"))
    assert "Miso" in more
