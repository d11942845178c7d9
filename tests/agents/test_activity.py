"""The activity log: what it records, how it stays bounded, forgetting with a way back,
citation maps, and the upgrade of databases written before the log existed."""

import sqlite3

import pytest
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore, NotFound, StoreConfig
from mnemoscope.store.agents import activity as activity_log
from mnemoscope.store.agents import conversations
from mnemoscope.store.model.config import Activity
from mnemoscope.store.schema.migrations import SCHEMA_VERSION
from support.helpers import unwritten


def test_record_and_filter_newest_first(db_path):
    with MemoryStore(db_path) as store:
        for i, (client, tool) in enumerate([("claude", "recall"), ("cursor", "remember"), ("claude", "remember")]):
            activity_log.record(store, client=client, door="mcp", tool=tool, scope="global",
                                summary=f"call {i}", memory_ids=[f"m-{i}"], duration_ms=1.5)
        assert [e.summary for e in activity_log.recent(store)] == ["call 2", "call 1", "call 0"]
        assert [e.summary for e in activity_log.recent(store, client="claude")] == ["call 2", "call 0"]
        assert [e.summary for e in activity_log.recent(store, tool="remember", client="cursor")] == ["call 1"]
        newest = activity_log.recent(store, 1)[0]
        assert [e.summary for e in activity_log.recent(store, after_id=newest.id - 1)] == ["call 2"]
        assert activity_log.clients_and_tools(store) == (["claude", "cursor"], ["recall", "remember"])
        assert newest.memory_ids == ("m-2",) and newest.ok and newest.door == "mcp"
        with pytest.raises(Exception, match="door"):
            activity_log.record(store, client="x", door="carrier-pigeon", tool="recall")


def test_summary_is_short_and_one_line():
    text = activity_log.summarize({"text": "a very long memory\nwith lines " * 20, "k": 5, "scope": None,
                                   "tags": [], "who": ""})
    assert "\n" not in text and len(text) <= activity_log.SUMMARY_CHARS
    assert text.startswith("text=a very long memory with lines") and text.endswith("k=5")


def test_log_is_bounded_by_entries_and_days_and_pruned_by_tick(db_path):
    config = StoreConfig(activity=Activity(keep_entries=50, keep_days=10, forgotten_keep_days=20))
    with MemoryStore(db_path, config=config) as store:
        start = store.now()
        for i in range(120):
            activity_log.record(store, client="agent", door="http", tool="recall", at=start + i)
        assert len(activity_log.recent(store, 1000)) == 120  # 120 < PRUNE_EVERY: only tick prunes
        store.tick()
        kept = activity_log.recent(store, 1000)
        assert len(kept) == 50 and kept[-1].at == start + 70  # the newest 50
        memory = store.remember("Mara is learning Portuguese.").memory
        activity_log.forget(store, memory.id, client="agent")
        conversations.save_turn(store, "chat-1", {"1": memory.id})
        store.tick(advance_days=11)
        assert activity_log.recent(store, 1000) == []  # all older than 10 days
        assert conversations.conversation_ids(store) == []  # citation maps go with the log
        assert [f.memory_id for f in activity_log.forgotten(store)] == [memory.id]  # kept 20 days
        store.tick(advance_days=10)
        assert activity_log.forgotten(store) == []


def test_log_stays_bounded_without_ticks(db_path):
    config = StoreConfig(activity=Activity(keep_entries=100))
    with MemoryStore(db_path, config=config) as store:
        for _ in range(activity_log.PRUNE_EVERY * 2):
            activity_log.record(store, client="agent", door="mcp", tool="brief")
        assert len(activity_log.recent(store, 10_000)) <= 100 + activity_log.PRUNE_EVERY


def test_forget_and_restore_bring_back_links_and_history(db_path):
    with MemoryStore(db_path) as store:
        memory = store.remember("Mara's cat is called Pixel.", entities=["Mara", "Pixel"]).memory
        store.reinforce(memory.id)
        activity_log.forget(store, memory.id, client="claude")
        assert not store.exists(memory.id)
        gone = activity_log.forgotten(store)
        assert [(f.memory_id, f.client, f.text) for f in gone] == [(memory.id, "claude", memory.text)]
        back = activity_log.restore_forgotten(store, memory.id)
        assert back.entities == ["Mara", "Pixel"] and back.recall_count == 1
        assert len(store.recall_events(memory.id)) == 1
        assert activity_log.forgotten(store) == []
        with pytest.raises(NotFound):
            activity_log.restore_forgotten(store, memory.id)
        with pytest.raises(NotFound):
            activity_log.forget(store, "no-such-memory")


def test_citation_maps_per_conversation(db_path):
    with MemoryStore(db_path) as store:
        keep = store.remember("Mara is allergic to peanuts.").memory.id
        lose = store.remember("Mara's flight lands at 9.").memory.id
        first = conversations.save_turn(store, "chat-1", {"1": keep, "2": lose}, model="openai/gpt-4o")
        second = conversations.save_turn(store, "chat-1", {"1": lose})
        assert (first.turn, second.turn) == (1, 2)
        store.delete(lose)
        resolved = conversations.resolve(store, "No peanuts [Mem:1], flight [Mem:2] [Mem:1] [Mem:7]", "chat-1",
                                         turn=1)
        assert [(r["citation"], r["memory_id"], r["status"]) for r in resolved] == [
            ("[Mem:1]", keep, "ok"), ("[Mem:2]", lose, "missing"), ("[Mem:7]", None, "unknown")]
        assert conversations.resolve(store, "[Mem:1]", "chat-1")[0]["memory_id"] == lose  # newest turn
        assert conversations.conversation_ids(store) == ["chat-1"]
        with pytest.raises(NotFound):
            conversations.get_turn(store, "chat-2")
        with pytest.raises(Exception, match="conversation_id"):
            conversations.save_turn(store, "has spaces", {})


def make_version_1(path):
    """A database as Mnemoscope wrote it before the activity log existed."""
    with MemoryStore(path) as store:
        store.remember("Mara is allergic to peanuts.", memory_id="old-1")
    conn = sqlite3.connect(path)
    with conn:
        for table in ("activity", "forgotten", "conversations"):
            conn.execute(f"DROP TABLE {table}")
        # the tables as m002 made them, before m010 and m012 added to them
        conn.execute("DELETE FROM _sqlite_migrations WHERE name IN ('m002_activity', "
                     "'m010_trust_of_logs_and_conversations', 'm012_wall_clock_and_reasons')")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()


def test_a_version_1_database_upgrades_in_place(tmp_path):
    path = str(tmp_path / "old.db")
    make_version_1(path)
    with MemoryStore(path) as store:
        assert store.get("old-1").text == "Mara is allergic to peanuts."
        assert store.stats()["schema_version"] == SCHEMA_VERSION
        activity_log.record(store, client="agent", door="mcp", tool="recall")
        assert len(activity_log.recent(store)) == 1


def test_cli_write_commands_are_logged_and_looking_writes_nothing(db_path, capsys):
    db = db_path
    assert main(["--db", db, "init"]) == 0
    assert main(["--db", db, "remember", "Mara likes green tea.", "--client-name", "my-script"]) == 0
    assert main(["--db", db, "remember", "   "]) == 1  # refused, and logged as refused
    with unwritten(db):
        for argv in (["recall", "tea"], ["stats"], ["brief"], ["activity"], ["restore"], ["export"]):
            assert main(["--db", db, *argv]) == 0
    capsys.readouterr()
    assert main(["--db", db, "activity", "--json"]) == 0
    import json

    entries = json.loads(capsys.readouterr().out)
    assert [(e["tool"], e["door"], e["client"], e["ok"]) for e in entries] == [
        ("remember", "cli", "mnemoscope-cli", False), ("remember", "cli", "my-script", True)]
    memory_id = entries[1]["memory_ids"][0]
    assert main(["--db", db, "forget", memory_id]) == 0
    assert main(["--db", db, "restore", memory_id]) == 0
    assert "restored" in capsys.readouterr().out
    assert main(["--db", db, "update", memory_id, "--importance", "0.9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memory"]["importance"] == 0.9
    assert main(["--db", db, "update", memory_id]) == 2  # nothing to change is a usage error


def test_cli_capture_refuses_unknown_keys(db_path, tmp_path, capsys):
    db = db_path
    request = tmp_path / "req.json"
    request.write_text('{"content": "Mara\'s bank PIN", "sensitivty": "hyper"}')
    assert main(["--db", db, "capture", str(request)]) == 1
    assert "sensitivty" in capsys.readouterr().err
    with MemoryStore(db) as store:
        assert store.count() == 0
