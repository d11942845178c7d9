import json
import os
import sqlite3

import pytest
from mnemoscope.store import DatabaseRefused, MemoryStore, NotFound, StoreConfig, ValidationError
from mnemoscope.store.model.config import ConfigError, Decay, Limits
from mnemoscope.store.schema.migrations import SCHEMA_VERSION
from support.helpers import unwritten

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.sqlite_only("reads SQLite's own pragmas and catalogue")
def test_new_database_has_wal_foreign_keys_and_schema(db_path):
    with MemoryStore(db_path) as s:
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert s.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
        tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"memories", "entities", "edges", "ticks", "tick_log", "meta", "_sqlite_migrations"} <= tables
        assert s.stats()["schema_version"] == SCHEMA_VERSION


def test_remember_get_list_and_stats(store):
    r = store.remember("Mara likes oolong tea.", kind="fact", importance=0.7, who="Mara", topic="food",
                       tags=["tea"], entities=[{"name": "oolong", "kind": "topic"}])
    assert r.created and r.memory.layer == "fading" and r.memory.strength == pytest.approx(1.0)
    m = store.get(r.memory.id)
    assert m.text == "Mara likes oolong tea." and m.tags == ["tea"] and set(m.entities) == {"Mara", "oolong"}
    store.remember("Lisbon meetup happened.", kind="event", scope="group:rust")
    assert [x.text for x in store.list(kind="event")] == ["Lisbon meetup happened."]
    assert [x.text for x in store.list(scope="group:rust")] == ["Lisbon meetup happened."]
    assert [x.text for x in store.list(text="oolong")] == ["Mara likes oolong tea."]
    assert store.list(text="100%") == []
    assert store.stats()["memories"] == 2 and store.stats()["kinds"]["event"] == 1


def test_remember_reinforces_a_near_duplicate_in_the_same_scope(store):
    first = store.remember("Mara hates being called buddy.")
    again = store.remember("Mara hates being called buddy!", importance=0.9)
    assert not again.created and again.memory.id == first.memory.id
    assert "reinforced" in again.message and again.memory.recall_count == 1 and again.memory.importance == 0.9
    other_scope = store.remember("Mara hates being called buddy.", scope="group:x")
    assert other_scope.created
    assert store.count() == 2


@pytest.mark.parametrize("kwargs, field", [
    ({"text": "x", "kind": "rumour"}, "kind"),
    ({"text": "x", "sensitivity": "secret"}, "sensitivity"),
    ({"text": "x", "importance": 1.5}, "importance"),
    ({"text": "x", "importance": -0.1}, "importance"),
    ({"text": "   "}, "text"),
    ({"text": "a" * 4001}, "text"),
    ({"text": "bad\x00byte"}, "text"),
    ({"text": "x", "scope": "team 1"}, "scope"),
    ({"text": "x", "scope": "group:"}, "scope"),
    ({"text": "x", "tags": "notalist"}, "tags"),
    ({"text": 42}, "text"),
])
def test_bad_input_names_the_field_and_writes_nothing(store, kwargs, field):
    kwargs = dict(kwargs)  # the parameters are shared by the SQLite and PostgreSQL runs
    text = kwargs.pop("text")
    with pytest.raises(ValidationError) as exc:
        store.remember(text, **kwargs)
    assert exc.value.field == field and field in str(exc.value)
    assert store.count() == 0


def test_update_pin_delete_restore_with_links(store):
    a = store.remember("Priya leads Lighthouse.", entities=["Priya", "Lighthouse"]).memory
    b = store.remember("Lighthouse deploys with just release.", kind="skill", entities=["Lighthouse"]).memory
    store.link_records(b.id, a.id)
    up = store.update(a.id, text="Priya is the tech lead of Lighthouse.", importance=0.9)
    assert up.before.text == "Priya leads Lighthouse." and up.after.importance == 0.9
    with pytest.raises(ValidationError):
        store.update(a.id, importance=2)
    assert store.get(a.id).importance == 0.9
    assert store.pin(a.id).after.pinned and not store.unpin(a.id).after.pinned
    deleted = store.delete(a.id)
    with pytest.raises(NotFound):
        store.get(a.id)
    assert store.get(b.id).references == []
    restored = store.restore(deleted)
    assert restored.text == "Priya is the tech lead of Lighthouse." and set(restored.entities) == {"Priya",
                                                                                                   "Lighthouse"}
    assert store.get(b.id).references == [a.id]
    back = store.restore_state(up.before)
    assert back.text == "Priya leads Lighthouse." and back.importance == up.before.importance


def test_entities_resolve_by_name_or_alias_case_insensitively(store):
    store.add_entity("Mara", kind="person", aliases=["Mara Ellison"])
    m = store.remember("mara ellison called the bank.", entities=["MARA"]).memory
    assert m.entities == ["Mara"]
    auto = store.remember("Mara Ellison went climbing.").memory  # found in the text
    assert auto.entities == ["Mara"]
    assert len(store.entities()) == 1


def assert_refused_untouched(path, reason, words):
    """Opening ``path`` is refused for ``reason``, saying ``words``, and the file keeps its bytes."""
    with unwritten(path), pytest.raises(DatabaseRefused) as exc:
        MemoryStore(str(path))
    assert exc.value.reason == reason and words in str(exc.value)


def test_a_text_file_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 10)
    assert_refused_untouched(path, "not_a_database", "not a SQLite database")


@pytest.mark.sqlite_only("damages the bytes of a database file")
def test_a_corrupt_database_is_refused_and_left_untouched(tmp_path, db_path):
    with MemoryStore(db_path) as s:
        for i in range(200):
            s.remember(f"memory number {i} about things", dedupe=False)
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(db_path, "rb") as fh:
        raw = bytearray(fh.read())
    raw[100:4096 * 3] = b"\xff" * (4096 * 3 - 100)
    with open(db_path, "wb") as fh:
        fh.write(bytes(raw))
    assert_refused_untouched(db_path, "corrupt", "corrupt")


def test_a_database_from_a_newer_version_is_refused(db_path):
    with MemoryStore(db_path) as s:
        s.conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                       "VALUES ('mnemoscope', 'm099_future', '2030-01-01')")
        s.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    assert_refused_untouched(db_path, "newer_version", "newer Mnemoscope")


def test_another_programs_sqlite_file_is_refused(tmp_path):
    path = str(tmp_path / "other.db")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseRefused, match="not a Mnemoscope"):
        MemoryStore(path)


def test_opening_and_reading_leave_the_file_unchanged(demo_store, db_path, backend):
    if backend == "sqlite":
        demo_store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    demo_store.close()
    with unwritten(db_path), MemoryStore(db_path) as s:
        s.list()
        s.stats()
        s.recall("what does Mara hate", explain=True)
        s.project(s.now() + 365 * 86400)
        s.brief()
        s.export_jsonl()
        s.graph()


def test_config_from_toml_and_bad_config(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text("[decay]\nedge_below = 0.25\n[decay.half_life_days]\nevent = 7\n[weights]\nkeyword = 0.5\n")
    cfg = StoreConfig.load(str(good))
    assert cfg.decay.edge_below == 0.25 and cfg.decay.half_life_days["event"] == 7
    assert cfg.decay.half_life_days["fact"] == 365 and cfg.weights.keyword == 0.5
    for text, match in [("[decay]\nedge_below = 2\n", "edge_below"), ("[decay]\nhalf_lif = 3\n", "half_lif"),
                        ("[decay.half_life_days]\nevent = -1\n", "event"), ("not toml [", "not valid TOML"),
                        ("[colours]\nx=1\n", "unknown section"), ("[weights]\nkeyword = 'high'\n", "keyword")]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(ConfigError, match=match):
            StoreConfig.load(str(bad))


def test_a_config_section_made_in_python_is_checked_as_a_file_is():
    """The rules live on the fields (pydantic), so a section built in code cannot hold what a
    file may not: before, only StoreConfig.from_dict checked."""
    for bad in (lambda: Decay(edge_below=2), lambda: Limits(undoable_ticks=0), lambda: Limits(keyword_pool=True)):
        with pytest.raises(ValueError):
            bad()
    assert Decay(half_life_days={"event": 7}).half_life_days["fact"] == 365


def test_graph_has_memories_entities_and_inverse_edges(store):
    a = store.remember("Theo visited Mara.", entities=["Theo", "Mara"]).memory
    g = store.graph()
    assert g.nodes[a.id]["type"] == "memory"
    ents = [n for n, d in g.nodes(data=True) if d["type"] == "entity"]
    assert len(ents) == 2
    for e in ents:
        assert g.has_edge(a.id, e, key="mentions_entity") and g.has_edge(e, a.id, key="mentioned_in")


def test_brief_is_wake_up_text(demo_store):
    text = demo_store.brief(limit=3, now="2026-11-19T12:00:00Z")
    lines = text.splitlines()
    assert lines[0] == "What I know for sure:" and len(lines) == 4
    assert "asthma" not in text  # hyper sensitivity never in a brief


def test_export_is_json_lines_with_entities(demo_store):
    lines = demo_store.export_jsonl().splitlines()
    first = json.loads(lines[0])
    assert first["entities"] and first["created_at"].endswith("Z")


def test_config_file_named_in_the_environment_is_used(tmp_path, monkeypatch, db_path):
    cfg = tmp_path / "mnemoscope.toml"
    cfg.write_text("[decay.half_life_days]\nevent = 7\n")
    monkeypatch.setenv("MNEMOSCOPE_CONFIG", str(cfg))
    with MemoryStore(db_path) as s:
        assert s.config.decay.half_life_days["event"] == 7
        mid = s.remember("an event", kind="event", now=1_790_000_000).memory.id
        assert s.project(1_790_000_000 + 7 * 86400)[mid][0] == pytest.approx(0.5)
    cfg.write_text("[decay]\nedge_below = 7\n")
    with pytest.raises(ConfigError, match="edge_below"):
        MemoryStore(db_path)


def test_eval_cases_ship_with_the_package_not_the_tests():
    import tomllib
    from importlib import resources

    from mnemoscope.store.recall.evaluation import CASES_RESOURCE, run_eval

    package, name = CASES_RESOURCE
    assert package.startswith("mnemoscope.resources.") and resources.files(package).joinpath(name).is_file()
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        package_data = tomllib.load(fh)["tool"]["setuptools"]["package-data"]
    assert "*.jsonl" in package_data[package]
    report = run_eval()
    assert report["cases"] >= 30 and report["recall@3"] >= 0.9


def test_a_paraphrase_question_that_expects_nothing_is_counted_apart(tmp_path):
    from mnemoscope.store.recall.evaluation import run_paraphrase_eval

    cases = tmp_path / "set.jsonl"
    rows = [{"memory": "bees", "lang": "en", "text": "Keeps bees in the garden."},
            {"memory": "fence", "lang": "en", "text": "Painted the fence green."},
            {"query": "Who keeps bees?", "lang": "en", "expect": ["bees"]},
            {"query": "How tall is the Eiffel Tower?", "lang": "en", "expect": []},
            {"query": "Which fence did I paint?", "lang": "en", "expect": []}]
    cases.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    report = run_paraphrase_eval("hash", path=str(cases))
    # the recall figures are over the one question with an answer; the two that no memory
    # answers are an abstention measure (recall ranks every time): the answered question's
    # top relevance beside theirs: above the Eiffel Tower's (no word shared), level with the
    # fence question's (by words alone, one shared word of the question is one shared word)
    assert (report["queries"], report["recall@1"], report["mrr"]) == (1, 1.0, 1.0)
    assert report["negative_cases"] == 2 and report["misses"] == []
    assert report["abstention_auc"] == 0.75


def test_sqlite_utils_is_pinned_to_the_version_with_migrations():
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        deps = tomllib.load(fh)["project"]["dependencies"]
    assert any(d.replace(" ", "").startswith("sqlite-utils>=4.") for d in deps)


@pytest.mark.sqlite_only("measures this process's heap while SQLite reads in it")
def test_reading_every_memory_holds_little_beyond_what_it_returns(db_path, monkeypatch):
    """The window reads every memory of its database again after each change (100,000 in a
    big one): each row as a dict of its columns held all at once was twice the memories'
    own size more at the peak, and every memory had its own copy of "fact", "global"…"""
    import tracemalloc

    from mnemoscope.store.meaning.embedding import HashEmbedder
    from mnemoscope.store.schema import tables

    rows = "\n".join(json.dumps({"id": f"m-{i}", "text": f"memory {i} about topic {i % 97}", "kind": "fact",
                                 "who": "mara", "topic": "garden", "tags": ["home", "plants"],
                                 "entities": [{"name": "Mara", "kind": "person"}]}) for i in range(3000))
    with MemoryStore(db_path, embedder=HashEmbedder()) as s:
        s.import_jsonl(rows)
    monkeypatch.setattr(tables, "MEMORY_BATCH", 500, raising=False)  # as 100,000 memories are read 5,000 at a time
    with MemoryStore(db_path, embedder=HashEmbedder()) as s:
        tracemalloc.start()
        try:
            memories = s.list()
            held, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(memories) == 3000
        assert peak - held <= 0.5 * held, (f"reading 3,000 memories peaked {(peak - held) / 2**20:.1f} MiB above the "
                                           f"{held / 2**20:.1f} MiB they hold")
        for name in ("kind", "who", "topic", "scope", "sensitivity", "layer"):
            copies = len({id(getattr(m, name)) for m in memories})
            assert copies == 1, f"{copies} copies of {name} {getattr(memories[0], name)!r} in one read"
        assert len({id(t) for m in memories for t in m.tags}) == 2
        assert len({id(e) for m in memories for e in m.entities}) == 1
        assert memories[0].tags == ["home", "plants"] and memories[0].entities == ["Mara"]


def test_reinforce_each_counts_one_recall_of_each_in_one_write_and_skips_the_deleted(store):
    ids = [store.remember(t).memory.id for t in ("Mara likes tea.", "Theo bikes to work.", "Lisbon in May.")]
    store.delete(ids[2])
    writes = []
    real = store.tables.write
    store.tables.write = lambda *a, **kw: writes.append(1) or real(*a, **kw)
    store.reinforce_each(ids)
    assert len(writes) == 1
    assert [store.get(i).recall_count for i in ids[:2]] == [1, 1]


@pytest.mark.sqlite_only("reads what SQLite is asked when a file is opened")
def test_every_page_is_checked_before_a_migration_and_not_at_every_start(db_path, monkeypatch):
    """PRAGMA quick_check reads the whole file: 0.35 s warm, 1.75 s cold at 100,000 memories,
    at every start of an agent's server or a command. It runs when a migration will write."""
    import sqlite3

    from mnemoscope.store.backends import sqlite_files

    asked: list[str] = []
    real = sqlite3.connect

    def connect(*args, **kwargs):
        conn = real(*args, **kwargs)
        conn.set_trace_callback(asked.append)
        return conn

    monkeypatch.setattr(sqlite_files.sqlite3, "connect", connect)
    with MemoryStore(db_path) as s:
        s.remember("Mara likes tea.")
    asked.clear()
    MemoryStore(db_path).close()
    assert not any("quick_check" in q for q in asked)
    conn = real(db_path)
    with conn:  # as an older version left it
        conn.execute("UPDATE meta SET value = '14' WHERE key = 'schema_version'")
    conn.close()
    asked.clear()
    MemoryStore(db_path).close()
    assert any("quick_check" in q for q in asked)
