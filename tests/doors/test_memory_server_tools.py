"""The MCP memory server's own tools on ``mnemoscope mcp --tools memory-server`` (#35.6): the
same names, arguments and answers as @modelcontextprotocol/server-memory, so an agent written
for it works unchanged. One script of calls drives the real server (npm; skipped with the
command that installs it when absent) and ours, both through the MCP SDK's client over stdio,
and every answer (text, structure, error or not) must be the same. Scope and trust stay the
server's: a low-trust caller's graph is the same whatever memories it may not see."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import Implementation
from mnemoscope.store import MemoryStore
from mnemoscope.store.agents.knowledge_graph import Graph
from support.mcp_memory_server import INSTALL, server_script
from test_serve import demo_db, http_server, run_client  # noqa: F401 (the HTTP server's fixtures)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = ["add_observations", "create_entities", "create_relations", "delete_entities", "delete_observations",
         "delete_relations", "open_nodes", "read_graph", "search_nodes"]

SCRIPT = [
    ("read_graph", {}),
    ("create_entities", {"entities": [
        {"name": "Mara Lindqvist", "entityType": "person",
         "observations": ["Climbs on Sundays", "Drinks oat-milk flat whites"]},
        {"name": "Parser Team", "entityType": "organization", "observations": ["Ships on Fridays"]},
        {"name": "Zig", "entityType": "programming_language", "observations": []},
        {"name": "TCP/IP", "entityType": "concept", "observations": []}]}),
    ("create_entities", {"entities": [{"name": "Mara Lindqvist", "entityType": "person", "observations": []},
                                      {"name": "Göteborg office", "entityType": "place", "observations": ["Has a sauna"]}]}),
    ("create_relations", {"relations": [{"from": "Mara Lindqvist", "to": "Parser Team", "relationType": "leads"},
                                        {"from": "Parser Team", "to": "Zig", "relationType": "uses"},
                                        {"from": "Mara Lindqvist", "to": "Göteborg office", "relationType": "works_at"}]}),
    ("create_relations", {"relations": [{"from": "Mara Lindqvist", "to": "Parser Team", "relationType": "leads"}]}),
    ("add_observations", {"observations": [{"entityName": "Zig", "contents": ["A systems language"]},
                                           {"entityName": "Mara Lindqvist",
                                            "contents": ["Climbs on Sundays", "Speaks Portuguese"]}]}),
    ("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["Is not there"]}]}),
    ("search_nodes", {"query": "parser"}),
    ("search_nodes", {"query": "SYSTEMS"}),
    ("search_nodes", {"query": "place"}),
    ("open_nodes", {"names": ["Zig", "Nobody"]}),
    ("delete_observations", {"deletions": [{"entityName": "Mara Lindqvist", "observations": ["Drinks oat-milk flat whites"]},
                                           {"entityName": "Nobody", "observations": ["x"]}]}),
    ("delete_relations", {"relations": [{"from": "Parser Team", "to": "Zig", "relationType": "uses"}]}),
    ("delete_entities", {"entityNames": ["TCP/IP", "Göteborg office", "Nobody"]}),
    ("read_graph", {}),
]


async def _drive(params: StdioServerParameters) -> tuple[list[str], list[tuple]]:
    async with Client(params, client_info=Implementation(name="pytest-agent", version="1")) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        answers = []
        for name, args in SCRIPT:
            got = await client.call_tool(name, args)
            texts = [c.text for c in got.content]
            answers.append((name, got.is_error, None if got.is_error else texts,
                            None if got.is_error else got.structured_content))
        return tools, answers


def ours(db: str) -> tuple[list[str], list[tuple]]:
    MemoryStore(db).close()
    params = StdioServerParameters(command=sys.executable, cwd=ROOT, args=[
        "-m", "mnemoscope", "--embedder", "hash", "--db", db, "mcp", "--tools", "memory-server"])
    return anyio.run(_drive, params)


def theirs(tmp_path) -> tuple[list[str], list[tuple]]:
    params = StdioServerParameters(command="node", args=[server_script()],
                                   env={**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    return anyio.run(_drive, params)


def test_the_memory_servers_calls_get_the_same_answers_from_both(db_path, tmp_path):
    if server_script() is None:
        pytest.skip(f"the MCP memory server is not installed; {INSTALL}")
    a, b = ours(db_path), theirs(tmp_path)
    assert a[0] == b[0] == TOOLS
    for (name, *mine), (_, *real) in zip(a[1], b[1], strict=True):
        assert mine == real, name
    assert a[1][-1][3]["entities"]  # (the script leaves a graph: the test can fail)
    # What the tools wrote are memories like any other: recalled, in the server's scope.
    with MemoryStore(db_path) as store:
        assert store.recall("Portuguese", scope="global")[0].text == "Speaks Portuguese"
        assert {m.scope for m in store.list()} == {"global"}


def test_the_tools_are_opt_in_and_described(db_path):
    MemoryStore(db_path).close()

    async def listed(*extra):
        params = StdioServerParameters(command=sys.executable, cwd=ROOT, args=[
            "-m", "mnemoscope", "--embedder", "hash", "--db", db_path, "mcp", *extra])
        async with Client(params, client_info=Implementation(name="pytest-agent", version="1")) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    plain = anyio.run(listed)
    assert "read_graph" not in plain and "recall" in plain
    both = anyio.run(listed, "--tools", "mnemoscope", "--tools", "memory-server")
    assert set(TOOLS) <= set(both) and "recall" in both
    graph = both["read_graph"]
    assert graph.output_schema["required"] == ["entities", "relations"] and graph.annotations.read_only_hint
    assert both["create_entities"].input_schema["required"] == ["entities"]


# -- scope and trust: the server's ------------------------------------------------------------------
def fill(db: str, hidden: bool) -> None:
    with MemoryStore(db) as store:
        g = Graph(store, ("global",), "hyper")
        g.create_entities([{"name": "Mara", "entityType": "person", "observations": ["Climbs on Sundays"]}])
        if hidden:
            store.remember("Mara's salary is 4817 a month", sensitivity="high", entities=["Mara"])
            store.remember("Mara climbs with Kestrelwick", scope="group:finance", entities=["Mara"])
            Graph(store, ("group:finance",), "hyper").create_entities(
                [{"name": "Kestrelwick", "entityType": "person", "observations": ["Secret partner"]}])


def test_a_low_trust_caller_sees_the_same_graph_whatever_it_may_not_see(new_db):
    plain, more = new_db(), new_db()
    fill(plain, hidden=False)
    fill(more, hidden=True)
    answers = []
    for db in (plain, more):
        with MemoryStore(db) as store:
            g = Graph(store, ("global",), "low")
            got = [g.read(), g.search("4817"), g.search("mara"), g.open(["Mara", "Kestrelwick"])]
            got.append(g.add_observations([{"entityName": "Mara", "contents": ["Speaks Portuguese"]}])["results"])
            got.append(g.create_entities([{"name": "Kestrelwick", "entityType": "person", "observations": []}]))
            got.append(g.delete_observations([{"entityName": "Mara", "observations": ["Climbs on Sundays"]}]))
            got.append(g.read())
            answers.append(json.dumps([{k: v for k, v in a.items() if k != "memory_ids"} if isinstance(a, dict) else a
                                       for a in got]))
            if db == more:  # the hidden memories are as they were
                texts = {m.text for m in store.list()}
                assert {"Mara's salary is 4817 a month", "Mara climbs with Kestrelwick"} <= texts
    assert answers[0] == answers[1]
    assert "Speaks Portuguese" in answers[0] and "4817" not in answers[1] and "Secret" not in answers[1]


def test_writes_go_to_the_servers_first_scope_and_global_is_read_only(db_path):
    with MemoryStore(db_path) as store:
        Graph(store, ("global",), "medium").create_entities(
            [{"name": "Zig", "entityType": "programming_language", "observations": ["A systems language"]}])
        mine = Graph(store, ("private:ana", "group:team"), "medium")
        mine.add_observations([{"entityName": "Zig", "contents": ["Ana likes it"]}])
        assert {m.text: m.scope for m in store.list()} == {"A systems language": "global", "Ana likes it": "private:ana"}
        with pytest.raises(Exception, match="scope 'global', which this server may read but not change"):
            mine.delete_entities(["Zig"])
        mine.delete_observations([{"entityName": "Zig", "observations": ["Ana likes it"]}])
        assert [m.text for m in store.list()] == ["A systems language"]
        from mnemoscope.store.agents import activity

        assert [f.text for f in activity.forgotten(store)] == ["Ana likes it"]  # forgotten, restorable


def test_the_tools_over_serves_streamable_http(http_server):  # noqa: F811 (the fixture)
    base = http_server("--tools", "memory-server", "--tools", "mnemoscope")

    async def body(client):
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        made = await client.call_tool("create_entities", {"entities": [
            {"name": "Quillon Brask", "entityType": "person", "observations": ["Restores harpsichords"]}]})
        found = await client.call_tool("search_nodes", {"query": "harpsichord"})
        return tools, made, found

    tools, made, found = run_client(base + "/mcp", body)
    assert set(TOOLS) <= set(tools) and "recall" in tools
    assert not made.is_error and made.structured_content["entities"][0]["name"] == "Quillon Brask"
    assert [e["name"] for e in found.structured_content["entities"]] == ["Quillon Brask"]
