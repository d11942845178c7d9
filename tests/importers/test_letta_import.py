"""A Letta agent file as Letta's own examples have it (#35.5): two agents sharing blocks, each
with its own ``human`` and ``persona``, messages with text, reasoning and tool parts, and the
file's JSON inside a JSON string. The fixtures are written here in the shape of
letta-ai/agent-file's examples (evie.af: a companion and its sleep-time copy sharing 12 of
13 blocks; customer_service.af, memgpt_agent.af: encoded twice); none of theirs is copied."""

from __future__ import annotations

import json

import pytest
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore
from mnemoscope.store.importers import import_file

NOW = "2026-06-01T12:00:00Z"


def message(mid, role, *parts, at="2026-03-02T09:15:00Z"):
    content = [{"type": "text", "text": p} if isinstance(p, str) else p for p in parts]
    return {"type": "message", "id": mid, "role": role, "content": content, "created_at": at, "tool_calls": None}


def two_agents() -> dict:
    block = lambda bid, label, value: {"id": bid, "label": label, "value": value, "limit": 5000,  # noqa: E731
                                       "description": None, "metadata": {}, "read_only": False}
    return {
        "agents": [
            {"id": "agent-0", "name": "Evie", "block_ids": ["block-0", "block-1", "block-2", "block-3"],
             "system": "You are Evie.", "created_at": "2026-03-01T08:00:00Z",
             "messages": [
                 message("message-0", "system", "<base_instructions> You are Evie."),
                 message("message-1", "user", "Hi, I'm Mara. I climb on Sundays.", at="2026-03-02T09:15:00Z"),
                 message("message-2", "assistant", {"type": "reasoning", "reasoning": "She climbs."},
                         "Nice to meet you, Mara!", at="2026-03-02T09:15:02Z"),
                 message("message-3", "tool", '{"status": "OK"}', at="2026-03-02T09:15:03Z"),
             ]},
            {"id": "agent-1", "name": "companion sleeptime", "block_ids": ["block-0", "block-1", "block-4", "block-5"],
             "created_at": "2026-03-01T08:00:00Z", "messages": []},
        ],
        "blocks": [
            block("block-0", "server_rules", "Be kind in the Discord server.\nNo spam."),
            block("block-1", "guardrails", "Never share a member's address."),
            block("block-2", "persona", "I am Evie, a warm companion."),
            block("block-3", "human", "Mara climbs on Sundays."),
            block("block-4", "memory_persona", "I tidy Evie's memory while she sleeps."),
            block("block-5", "human", "The people Evie talks to."),
        ],
        "tools": [], "groups": [], "files": [], "sources": [], "mcp_servers": [], "metadata": {},
        "created_at": "2026-03-02T09:20:00Z",
    }


def by_text(store):
    return {m.text: m for m in store.list()}


def test_shared_blocks_are_one_memory_and_each_agent_keeps_its_own(store, tmp_path):
    path = tmp_path / "evie.af"
    path.write_text(json.dumps(two_agents()), encoding="utf-8")
    result = import_file(store, path, now=NOW)
    memories = by_text(store)
    # Shared by both agents: one memory each, in the scope both see, linked to both.
    rules = memories["Be kind in the Discord server.\nNo spam."]
    assert rules.scope == "global" and rules.pinned and sorted(rules.entities) == ["Evie", "companion sleeptime"]
    assert sum(m.topic == "guardrails" for m in memories.values()) == 1
    # Each agent's own blocks in its own scope; two "human" blocks never mix.
    assert memories["Mara climbs on Sundays."].scope == "agent:Evie"
    assert memories["The people Evie talks to."].scope == "agent:companion-sleeptime"
    # The persona is the agent's (a skill of the agent, about it), not a fact about the user.
    persona = memories["I am Evie, a warm companion."]
    assert (persona.kind, persona.who, persona.entities, persona.scope) == ("skill", "Evie", ["Evie"], "agent:Evie")
    assert memories["I tidy Evie's memory while she sleeps."].who == "companion sleeptime"
    human = memories["Mara climbs on Sundays."]
    assert (human.kind, human.entities) == ("fact", [])  # about the user: no agent leads it in a prompt
    # The conversation: what was said, as events of one episode, in order, at its times.
    said = sorted((m for m in memories.values() if "message" in m.tags), key=lambda m: m.created_at)
    assert [(m.context["letta"]["role"], m.text) for m in said] == [
        ("user", "Hi, I'm Mara. I climb on Sundays."), ("assistant", "Nice to meet you, Mara!")]
    assert {m.kind for m in said} == {"event"} and len({m.source for m in said}) == 1
    assert said[0].scope == "agent:Evie" and said[0].created_at == 1772442900.0  # 2026-03-02T09:15:00Z
    left = " | ".join(str(x) for x in result.left_out)
    assert "1 system message(s)" in left and "1 tool message(s)" in left and "1 reasoning" in left
    assert result.memories_new == 8
    # Each agent's recall sees its own and what it shares, never the other's.
    evie = {h.text for h in store.recall("who is human here", scope="agent:Evie", k=20)}
    assert "Mara climbs on Sundays." in evie and "The people Evie talks to." not in evie
    assert "Never share a member's address." in evie


def test_a_scope_given_takes_everything(store, tmp_path):
    path = tmp_path / "evie.af"
    path.write_text(json.dumps(two_agents()), encoding="utf-8")
    import_file(store, path, now=NOW, scope="group:discord")
    assert {m.scope for m in store.list()} == {"group:discord"}


@pytest.mark.parametrize("how", ["cli", "api"])
def test_a_file_of_json_inside_a_json_string_is_read(db_path, tmp_path, capsys, how):
    path = tmp_path / "customer_service.af"
    path.write_text(json.dumps(json.dumps(two_agents())), encoding="utf-8")
    if how == "cli":
        assert main(["--db", db_path, "import", str(path)]) == 0
        assert "file of JSON inside a JSON string -> read inside" in capsys.readouterr().out
    else:
        with MemoryStore(db_path) as store:
            import_file(store, path, "letta", now=NOW)
    with MemoryStore(db_path) as store:
        assert "I am Evie, a warm companion." in by_text(store)
