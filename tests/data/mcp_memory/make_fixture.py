"""Make memory.jsonl here with the real MCP memory server, driven by the MCP Python SDK's
client over stdio: the same calls an agent in Claude Desktop makes.

    npm install -g @modelcontextprotocol/server-memory@2026.8.31
    .venv/bin/python tests/data/mcp_memory/make_fixture.py
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # tests/

from support.mcp_memory_server import result, session  # noqa: E402

ENTITIES = [
    {"name": "Mara Lindqvist", "entityType": "person",
     "observations": ["Is allergic to peanuts", "Prefers to be called Mara", "Leads the parser team"]},
    {"name": "Parser Team", "entityType": "team", "observations": ["Moved the new parser from C++ to Zig"]},
    {"name": "Zig", "entityType": "programming_language", "observations": ["Version 0.14 is pinned in CI"]},
    {"name": "Göteborg office", "entityType": "location", "observations": ["Opens at 8:00; the café is on floor 2"]},
    {"name": "Quarterly review", "entityType": "event", "observations": []},
]
RELATIONS = [
    {"from": "Mara Lindqvist", "to": "Parser Team", "relationType": "leads"},
    {"from": "Parser Team", "to": "Zig", "relationType": "uses"},
    {"from": "Mara Lindqvist", "to": "Göteborg office", "relationType": "works_at"},
    {"from": "Parser Team", "to": "Quarterly review", "relationType": "presents_at"},
]


def main(out: str) -> None:
    if os.path.exists(out):
        os.remove(out)

    async def body(client):
        result(await client.call_tool("create_entities", {"entities": ENTITIES}))
        result(await client.call_tool("create_relations", {"relations": RELATIONS}))
        result(await client.call_tool("add_observations", {"observations": [
            {"entityName": "Mara Lindqvist", "contents": ["Drinks oat-milk flat whites"]}]}))
        result(await client.call_tool("delete_observations", {"deletions": [
            {"entityName": "Mara Lindqvist", "observations": ["Prefers to be called Mara"]}]}))
        return result(await client.call_tool("read_graph", {}))

    graph = session(out, body)
    print(f"{out}: {len(graph['entities'])} entities, {len(graph['relations'])} relations")


if __name__ == "__main__":
    main(os.path.join(HERE, "memory.jsonl"))
