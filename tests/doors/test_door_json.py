"""The same call gives the same JSON through every door: the command line's ``--json``,
the MCP tools (the operations layer as the MCP server returns it) and the HTTP API over
a real socket. Each door works on its own copy of one database and makes the same calls
in the same order; the answers must match but for what cannot (new ids, clock readings)
and what the servers add or withhold for an agent (the ids they log, a memory's decay
internals, a tick's counts per layer)."""

import json
import math
import re
import shutil

import anyio
import pytest
from mnemoscope.cli import main
from mnemoscope.serve.mcp_server import build_server
from mnemoscope.serve.operations import AGENT_HIDDEN, TICK_WITHHELD, Operations
from mnemoscope.store import MemoryStore
from test_serve import http, http_server  # noqa: F401 (a fixture)

NEW_ID = re.compile(r"\b[me]-[0-9a-f]{12}\b")
CLOCK = {"created_at", "updated_at", "ref_time", "ticked_at", "last_recalled_at"}
CAPTURED = '"Deployed v2.3 of the parser to staging."'
NEW = "<the memory remembered first>"
# The demo's scopes: servers opened on all of them see the store as its owner does.
SCOPES = ("global", "group:garden-club", "private:mara")


def calls(capture_file):
    """(tool, arguments, the same call on the command line); NEW stands for the id the
    first call made."""
    return [
        ("remember", {"text": "Mara moved to Porto in May.", "kind": "event", "importance": 0.7, "who": "Mara",
                      "topic": "home", "tags": ["move"], "entities": ["Porto"]},
         ["remember", "Mara moved to Porto in May.", "--kind", "event", "--importance", "0.7", "--who", "Mara",
          "--topic", "home", "--tag", "move", "--entity", "Porto"]),
        ("remember", {"text": "Mara moved to Porto in May."}, ["remember", "Mara moved to Porto in May."]),
        ("recall", {"query": "where does Mara live", "k": 3, "explain": True},
         ["recall", "where does Mara live", "-k", "3", "--explain", "--reinforce"]),
        ("update", {"memory_id": NEW, "importance": 0.9, "topic": "moving"},
         ["update", NEW, "--importance", "0.9", "--topic", "moving"]),
        ("capture", {"content": json.loads(CAPTURED), "source_kind": "event"},
         ["capture", capture_file, "--source-kind", "event"]),
        ("brief", {"limit": 3}, ["brief", "--limit", "3"]),
        ("tick", {}, ["tick"]),
        ("forget", {"memory_id": NEW}, ["forget", NEW]),
    ]


def _with_id(value, new_id):
    if isinstance(value, list):
        return [_with_id(v, new_id) for v in value]
    if isinstance(value, dict):
        return {k: _with_id(v, new_id) for k, v in value.items()}
    return new_id if value == NEW else value


def drive(door, tmp_path):
    """The answers one door gives to the calls, each as JSON data."""
    answers, new_id = [], None
    for tool, args, argv in calls(str(tmp_path / "captured.json")):
        answer = door(tool, _with_id(args, new_id), _with_id(argv, new_id))
        new_id = new_id or answer["id"]
        answers.append(answer)
    return answers


def normal(value, ids, key=None):
    """``value`` with new ids numbered in order of appearance, clock readings reduced to
    whether there is one, and numbers to three places."""
    if isinstance(value, dict):
        return {k: normal(v, ids, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normal(v, ids) for v in value]
    if key in CLOCK and isinstance(value, (int, float)):
        return "<time>"
    if isinstance(value, str):
        return NEW_ID.sub(lambda m: ids.setdefault(m.group(), f"<new id {len(ids) + 1}>"), value)
    if isinstance(value, float) and math.isfinite(value):
        return round(value, 3)
    return value


def agent_view(tool, answer):
    """What the servers give an agent of an answer the command line prints: a memory
    without its decay internals, a tick without its counts per layer."""
    withheld = TICK_WITHHELD if tool == "tick" else ()
    return {k: ({f: x for f, x in v.items() if f not in AGENT_HIDDEN} if k == "memory" else v)
            for k, v in answer.items() if k not in withheld}


@pytest.fixture()
def databases(tmp_path, demo_db):
    """The demo database for the HTTP server (its fixture serves that one), and a copy of
    it for each of the other doors."""
    (tmp_path / "captured.json").write_text(CAPTURED, encoding="utf-8")
    copies = {"http": demo_db}
    for door in ("cli", "mcp"):
        copies[door] = tmp_path / f"{door}.db"
        shutil.copy(demo_db, copies[door])
    return copies


def test_the_same_calls_give_the_same_json_through_every_door(databases, tmp_path, capsys, http_server):  # noqa: F811
    def cli(tool, args, argv):
        assert main(["--db", str(databases["cli"]), *argv, "--json"]) == 0, capsys.readouterr().err
        out = json.loads(capsys.readouterr().out)
        return {"hits": out} if tool == "recall" else out  # the command line prints the hits alone

    store = MemoryStore(databases["mcp"])
    server = build_server(Operations(store, scopes=SCOPES))

    def mcp(tool, args, argv):
        result = anyio.run(server.call_tool, tool, args)
        assert not result.is_error, result.content[0].text
        return json.loads(result.content[0].text)

    base = http_server(*(f"--scope={s}" for s in SCOPES))
    paths = {"brief": "GET", "stats": "GET"}

    def over_http(tool, args, argv):
        method = paths.get(tool, "POST")
        query = "?" + "&".join(f"{k}={v}" for k, v in args.items()) if method == "GET" else ""
        status, body = http(method, f"{base}/{tool}{query}", args if method == "POST" else None)
        assert status == 200 and body.pop("ok") is True, body
        return body

    try:
        through = {"cli": drive(cli, tmp_path), "mcp": drive(mcp, tmp_path), "http": drive(over_http, tmp_path)}
    finally:
        store.close()
    for door in ("mcp", "http"):
        for answer in through[door]:
            answer.pop("memory_ids", None)  # what the servers log the call with
            # an agent's recall reinforces (a person's does not): the servers say whether it could
            assert answer.pop("reinforced", True) is True, answer
    tools = [tool for tool, _, _ in calls("")]
    shown = {door: normal([agent_view(t, a) for t, a in zip(tools, answers)], {})
             for door, answers in through.items()}
    for n, tool in enumerate(tools):
        assert shown["mcp"][n] == shown["cli"][n], tool
        assert shown["http"][n] == shown["cli"][n], tool
    tick = through["cli"][6]
    assert isinstance(tick["transitions"], dict) and set(tick["layers"]) == {"habit", "fading", "edge", "archived"}
    assert "Porto" in through["cli"][0]["memory"]["entities"]
    assert through["cli"][0]["conflicts"] == [{"id": "mem-004", "about": "Mara", "slot": "location"}]
    assert through["cli"][3]["changed"] == ["importance", "topic"]
    again = through["cli"][1]
    assert again["created"] is False and again["id"] == through["cli"][0]["id"]
