"""A memory on PostgreSQL (store/backends/, store/backends/pg_schema.py): the URL ``--db`` takes,
its refusals, the same behaviour as on SQLite, and what is not supported yet. The server
is the one the run starts (tests/support/pg_server.py); the store's core test modules also run on
it (every test that opens its store through ``db_path``: tests/conftest.py)."""

import hashlib
import io
import json
import logging
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from mnemoscope.cli import main
from mnemoscope.store import DatabaseRefused, MemoryStore, StoreError
from mnemoscope.store.backends.pg_connection import pyformat
from mnemoscope.store.backends.pg_schema import ORDER, STEPS
from mnemoscope.store.backends.postgres import PostgresBackend
from mnemoscope.store.backends.sqlite import SQLiteBackend
from mnemoscope.store.backends.targets import CONNECT_TIMEOUT_S, KEEPALIVE, parse_url, redact
from mnemoscope.store.files.copying import copy_memory
from mnemoscope.store.forgetting.decay import DAY
from mnemoscope.store.meaning.embedding import HashEmbedder
from mnemoscope.store.model.config import ConfigError, StoreConfig
from mnemoscope.store.recall.text import Prefix, all_of, any_of
from mnemoscope.store.schema.migrations import KNOWN_MIGRATIONS, SCHEMA_VERSION
from support.pg_server import PASSWORD, PASSWORD_USER

T0 = 1_790_000_000.0


def _catalogue(server, dbname):
    """Every table of a database with its row count: what "nothing was written" compares."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", dbname=dbname) as conn:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables "
                                             "WHERE table_schema = 'public' ORDER BY table_name")]
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def _dbname(url):
    return url.rsplit("/", 1)[1]


# -- the seam --------------------------------------------------------------------------------
def test_every_migration_has_its_postgres_step():
    assert set(STEPS) == KNOWN_MIGRATIONS == set(ORDER)


def test_the_sql_that_differs_is_built_for_each_engine_from_structure():
    sqlite, postgres = SQLiteBackend.sql, PostgresBackend.sql
    assert sqlite.upsert("meta", ("key", "value"), ("key",)) == "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
    assert postgres.upsert("meta", ("key", "value"), ("key",)) == (
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")
    assert postgres.insert_if_absent("edges", ("src", "dst")).endswith("VALUES (?, ?) ON CONFLICT DO NOTHING")
    assert postgres.insert("ticks", ("at",), "id") == "INSERT INTO ticks (at) VALUES (?) RETURNING id"
    query = all_of(["tea", any_of(['cof"fee', "it's"]), Prefix("ab")])
    sql, params = sqlite.text_search("m.id", query, "m.kind = ?", ("fact",), limit=5, ranked=True,
                                     pairs=[("global", "low")])
    assert "CROSS JOIN memories m" in sql and sql.endswith(
        "WHERE memories_fts MATCH ? AND (m.scope || ' ' || m.sensitivity) IN (?) AND m.kind = ? ORDER BY f.rank LIMIT ?")
    p = "x" + b"global".hex() + "y" + b"low".hex() + "z"  # the shelf: scope and sensitivity in hex
    assert params == [f'"{p}tea" AND ("{p}cof""fee" OR "{p}it\'s") AND "{p}ab"*', "global low", "fact", 5]
    sql, params = postgres.text_search("m.id", query, "m.kind = ?", ("fact",), limit=5, ranked=True,
                                       pairs=[("global", "low"), ("global", "public")])
    assert ("WHERE mnemoscope_shelved(m.terms, m.scope, m.sensitivity) @@ CAST(? AS tsquery) "
            "AND (m.scope || ' ' || m.sensitivity) IN (?,?) AND m.kind = ?") in sql
    assert sql.endswith("ORDER BY ts_rank(m.tsv, CAST(? AS tsquery)) DESC, m.rowid DESC LIMIT ?") and "CROSS" not in sql
    low, public = (hashlib.md5(pair.encode()).hexdigest() + ":" for pair in ("global low", "global public"))
    shelved = (f"('{low}tea' | '{public}tea') & (('{low}cof\"fee' | '{public}cof\"fee') | ('{low}it''s' | "
               f"'{public}it''s')) & ('{low}ab':* | '{public}ab':*)")
    plain = "'tea' & ('cof\"fee' | 'it''s') & 'ab':*"  # what the ranking reads: the plain terms
    assert params == [shelved, "global low", "global public", "fact", plain, 5]
    # a ? inside a literal is no parameter; a % is doubled for psycopg
    assert pyformat("SELECT 'why?', ? WHERE a LIKE 'x%'") == "SELECT 'why?', %s WHERE a LIKE 'x%%'"


def test_a_url_names_host_port_database_and_user_and_its_password_is_never_shown():
    url = f"postgresql://{PASSWORD_USER}:{PASSWORD}@db.example:6543/team"
    assert parse_url(url) == {"host": "db.example", "port": 6543, "dbname": "team", "user": PASSWORD_USER,
                              "password": PASSWORD, "connect_timeout": CONNECT_TIMEOUT_S, **KEEPALIVE}
    assert redact(url) == f"postgresql://{PASSWORD_USER}@db.example:6543/team"


@pytest.mark.parametrize("url, says", [
    ("postgresql://u@db.example:port/team", "not a PostgreSQL URL"),
    ("postgresql://u@db.example:5432/", "needs a host and a database name"),
    ("postgresql:///team", "needs a host and a database name"),
])
def test_a_url_that_does_not_parse_is_one_line_naming_it(url, says, capsys):
    with pytest.raises(DatabaseRefused, match=says) as err:
        MemoryStore(url)
    assert "\n" not in str(err.value)
    assert main(["--db", url, "stats"]) != 0
    out = capsys.readouterr()
    assert says in out.err and len(out.err.strip().splitlines()) == 1


# -- refusals: each one line, nothing written ------------------------------------------------
def test_a_refused_login_is_one_line_and_never_shows_the_password(pg_server, pg_url, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    name = _dbname(pg_url)
    wrong = f"postgresql://{PASSWORD_USER}:not-{PASSWORD}@127.0.0.1:{pg_server.port}/{name}"
    before = _catalogue(pg_server, name)
    assert main(["--db", wrong, "stats"]) != 0
    out = capsys.readouterr()
    assert "password authentication failed" in out.err and len(out.err.strip().splitlines()) == 1
    assert PASSWORD not in out.out + out.err + caplog.text
    assert _catalogue(pg_server, name) == before == {}


def test_the_password_comes_from_the_url_pgpassword_or_pgpass_and_is_never_printed(
        pg_server, pg_url, capsys, caplog, monkeypatch, tmp_path):
    caplog.set_level(logging.DEBUG)
    name = _dbname(pg_url)
    bare = f"postgresql://{PASSWORD_USER}@127.0.0.1:{pg_server.port}/{name}"
    with_password = f"postgresql://{PASSWORD_USER}:{PASSWORD}@127.0.0.1:{pg_server.port}/{name}"
    assert main(["--db", with_password, "init"]) == 0
    assert main(["--db", with_password, "remember", "The deploy runs on Fridays."]) == 0
    assert main(["--db", with_password, "stats"]) == 0
    out = capsys.readouterr().out
    assert bare in out and "backend: postgresql 15" in out
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "nothing"))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    assert main(["--db", bare, "stats"]) != 0  # no password anywhere: refused
    assert "password" in capsys.readouterr().err
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    assert main(["--db", bare, "recall", "deploy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["text"] == "The deploy runs on Fridays."
    monkeypatch.delenv("PGPASSWORD")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{pg_server.port}:{name}:{PASSWORD_USER}:{PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    assert main(["--db", bare, "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["memories"] == 1 and stats["path"] == bare
    assert stats["backend"]["backend"] == "postgresql" and stats["backend"]["server_version"].startswith("15")
    assert "plpgsql" in stats["backend"]["extensions"]
    assert PASSWORD not in capsys.readouterr().out + caplog.text


def test_another_programs_database_is_never_migrated_into_ours(pg_server, pg_url, capsys):
    name = _dbname(pg_url)
    pg_server.psql("CREATE TABLE customers (id int); INSERT INTO customers VALUES (1)", name)
    before = _catalogue(pg_server, name)
    with pytest.raises(DatabaseRefused, match="not a Mnemoscope database .*customers") as err:
        MemoryStore(pg_url)
    assert err.value.reason == "not_a_database" and "\n" not in str(err.value)
    assert main(["--db", pg_url, "remember", "x"]) != 0
    assert "customers" in capsys.readouterr().err
    assert _catalogue(pg_server, name) == before == {"customers": 1}


def test_a_newer_schema_is_refused_and_nothing_is_written(pg_server, pg_url):
    name = _dbname(pg_url)
    MemoryStore(pg_url).close()
    pg_server.psql(f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version'", name)
    before = _catalogue(pg_server, name)
    with pytest.raises(DatabaseRefused, match="newer Mnemoscope") as err:
        MemoryStore(pg_url)
    assert err.value.reason == "newer_version"
    assert _catalogue(pg_server, name) == before
    # the comparison catches a write: opening an older-schema database (a migration pending) writes
    pg_server.psql(f"UPDATE meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema_version'; "
                   "DELETE FROM _sqlite_migrations WHERE name = 'm011_vectors'", name)
    before = _catalogue(pg_server, name)
    MemoryStore(pg_url).close()
    assert _catalogue(pg_server, name) != before


def test_the_same_migrations_create_the_schema_once(pg_server, pg_url):
    with MemoryStore(pg_url) as s:
        s.remember("Kept across opening again.", now=T0)
    with MemoryStore(pg_url) as s:
        assert s.count() == 1
    assert _catalogue(pg_server, _dbname(pg_url))["_sqlite_migrations"] == len(KNOWN_MIGRATIONS)


@contextmanager
def _as_schema_12(monkeypatch):
    """Stores opened meanwhile are migrated as schema 12 left them (no step of 13). This
    version's searches read the shelved terms (m014): their function is there too."""
    from mnemoscope.store.backends import pg_schema

    with monkeypatch.context() as patched:
        patched.setattr(pg_schema, "ORDER", ORDER[:ORDER.index("m013_postgres_statement_triggers")])
        migrate = pg_schema.migrate

        def with_the_search_function(conn):
            migrate(conn)
            conn.execute_script(pg_schema.SHELVED_FUNCTION)

        patched.setattr(pg_schema, "migrate", with_the_search_function)
        yield


def _vector_triggers(store):
    """The triggers on vectors: name -> how often each fires (ROW or STATEMENT)."""
    return dict(store.conn.execute("SELECT trigger_name, action_orientation FROM information_schema.triggers "
                                   "WHERE event_object_table = 'vectors'").fetchall())


def test_a_schema_12_memory_moves_the_vectors_count_once_per_statement_after_opening(pg_url, monkeypatch):
    """Schema 12 moved meta.vectors_generation once per vector (a row trigger): a bulk write of
    N vectors made N versions of that row in its transaction. Opened by this version, the
    count moves once per statement, by as many vectors as it wrote or dropped (what recall's
    held index compares), and the memory's vectors keep working."""
    from mnemoscope.store.meaning import vector_index

    with _as_schema_12(monkeypatch), MemoryStore(pg_url, embedder=HashEmbedder()) as s:
        for i in range(5):
            s.remember(f"Note {i} about the garden gate.", now=T0, dedupe=False)
        assert s.tables.meta("schema_version") == "12"
        assert set(_vector_triggers(s).items()) == {("vectors_changed", "ROW")}
    with MemoryStore(pg_url, embedder=HashEmbedder()) as s:
        assert s.tables.meta("schema_version") == str(SCHEMA_VERSION)
        assert _vector_triggers(s) == {"vectors_inserted": "STATEMENT", "vectors_updated": "STATEMENT",
                                       "vectors_deleted": "STATEMENT"}
        generation = int(s.tables.meta("vectors_generation"))
        assert generation == 5
        held = vector_index.index(s)
        rows = s.conn.execute("SELECT rowid, vec FROM vectors ORDER BY rowid").fetchall()
        meta_updates = "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'meta'"
        with s.tables.write():
            before = s.conn.execute(meta_updates).fetchone()[0]
            s.conn.execute("DELETE FROM vectors")
            s.tables.backend.insert_many("vectors", ("rowid", "vec"), [(r, bytes(v)) for r, v in rows])
            meta_writes = s.conn.execute(meta_updates).fetchone()[0] - before
        # each statement moves two rows once: the generation and (schema 14) the vectors' count
        assert meta_writes == 4, f"meta was updated {meta_writes} times by two statements writing 5 vectors each"
        assert int(s.tables.meta("vectors_generation")) == generation + 10
        assert int(s.tables.meta("vectors_count")) == 5
        assert vector_index.index(s) is not held  # the held index noticed
        s.conn.execute("UPDATE vectors SET vec = vec WHERE rowid <= 2")
        assert int(s.tables.meta("vectors_generation")) == generation + 12
        s.conn.execute("DELETE FROM vectors WHERE rowid = -1")  # nothing dropped: the count stays
        assert int(s.tables.meta("vectors_generation")) == generation + 12
        added = s.remember("The dentist moved to Friday.", now=T0).memory.id
        assert int(s.tables.meta("vectors_generation")) == generation + 13
        assert s.recall("dentist friday", k=1, now=T0)[0].id == added


def test_opened_read_only_a_postgres_memory_reads_and_refuses_writes(pg_url):
    with MemoryStore(pg_url) as s:
        s.remember("Read me.", now=T0)
    with MemoryStore(pg_url, read_only=True) as s:
        assert s.read_only and s.get(s.list()[0].id).text == "Read me."
        with pytest.raises(StoreError, match="read-only"):
            s.remember("Not me.")


def _garden(target, config, hidden=0):
    """60 memories that all say "garden", one that says "basil" (and ``hidden`` more above a
    medium-trust caller's reach that say it too), recalled by both words and by two of the
    common ones at medium trust."""
    with MemoryStore(target, config=config, embedder=HashEmbedder()) as s:
        for i in range(60):
            s.remember(f"Garden note {i}: the garden gate was painted green.", now=T0, dedupe=False)
        basil = s.remember("Basil grows by the kitchen window.", now=T0).memory.id
        for i in range(hidden):
            s.remember(f"Secret basil recipe {i}.", sensitivity="hyper", now=T0, dedupe=False)
        return basil, s.recall("garden basil", k=3, now=T0), s.recall("garden gate", k=3, now=T0)


def test_on_postgres_a_term_most_memories_hold_does_not_pick_the_candidates(tmp_path, pg_server, pg_url):
    """ts_rank would rank every memory holding a term in a quarter of a million of them
    (limits.common_term_rows): such a term is left out of the search for candidates while
    the query has a rarer one, and with only common terms the candidates hold them all.
    Only what the caller may see is counted: 30 hidden memories saying "basil" change
    nothing it gets."""
    with pytest.raises(ConfigError, match="common_term_rows must be at least 1, got 0"):
        StoreConfig.from_dict({"limits": {"common_term_rows": 0}})
    low = StoreConfig.from_dict({"limits": {"common_term_rows": 20}})
    basil, both, common = _garden(pg_url, low)
    # the garden notes are no candidates by words ("garden" is common): basil leads, and
    # what else ranks (recall always gives k) comes by meaning alone
    assert both[0].id == basil and all(h.parts["keyword"] == 0.0 for h in both[1:])
    assert len(common) == 3 and all("garden gate" in h.text for h in common)
    _, both_hidden, common_hidden = _garden(pg_server.new_database("garden_hidden"), low, hidden=30)
    assert [(h.text, h.score) for h in both_hidden] == [(h.text, h.score) for h in both]
    # (ties among the identical garden notes fall by their random ids)
    assert [h.score for h in common_hidden] == [h.score for h in common]
    # SQLite ranks by bm25 in C and keeps every term; so does PostgreSQL under the limit:
    # a memory holding half the words is as near as the one holding the other half
    for target, config in ((str(tmp_path / "m.db"), low), (pg_server.new_database("garden_default"), StoreConfig())):
        _, both, common = _garden(target, config)
        assert len(both) == 3 and any("garden" in h.text.lower() for h in both) and len(common) == 3


def _term_counts(conn):
    """memory_terms as recall reads it (rows of 0 are terms no memory holds any more), and
    the same counted from the memories themselves."""
    kept = conn.execute("SELECT term, scope, sensitivity, memories FROM memory_terms WHERE memories != 0 "
                        "ORDER BY 1, 2, 3").fetchall()
    counted = conn.execute("SELECT t.term, m.scope, m.sensitivity, count(*) FROM memories m, "
                           "unnest(tsvector_to_array(m.tsv)) AS t(term) GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").fetchall()
    return [tuple(r) for r in kept], [tuple(r) for r in counted]


def test_the_term_counts_follow_every_write(tmp_path, pg_server, pg_url):
    """What recall asks of memory_terms (which words are common) stays what the memories
    hold through remember, an edit of text, scope or sensitivity, a recall's reinforcement,
    delete and restore, a bulk import, and a copy into PostgreSQL."""
    with MemoryStore(pg_url, embedder=HashEmbedder()) as s:
        ids = [s.remember(f"Note {i}: the harbour ferry leaves at {i} o'clock.", now=T0, dedupe=False).memory.id
               for i in range(8)]
        assert s.conn.execute("SELECT memories FROM memory_terms WHERE term = 'ferry' AND scope = 'global'"
                              ).fetchone()[0] == 8
        s.update(ids[0], text="The tram replaced the ferry on Sundays.", now=T0)
        s.update(ids[1], scope="group:port", now=T0)
        s.update(ids[2], sensitivity="high", now=T0)
        s.recall("harbour ferry", k=3, now=T0, reinforce=True)
        gone = s.delete(ids[3])
        s.delete(ids[4])
        s.restore(gone)
        lines = "".join(json.dumps({"text": f"Imported {i}: the ferry to the island.", "scope": "group:port"}) + "\n"
                        for i in range(30))
        s.import_jsonl(io.StringIO(lines), now=T0)
        kept, counted = _term_counts(s.conn)
        assert kept == counted and ("tram", "global", "low", 1) in kept and ("ferry", "global", "low", 5) in kept
        assert ("ferry", "group:port", "low", 31) in kept and ("ferry", "global", "high", 1) in kept
    with MemoryStore(str(tmp_path / "from.db"), embedder=HashEmbedder()) as src, \
            MemoryStore(pg_server.new_database("copied_terms"), embedder=HashEmbedder()) as dst:
        src.remember("Copied: the lighthouse keeper's log.", now=T0)
        copy_memory(src, dst)
        kept, counted = _term_counts(dst.conn)
        assert kept == counted and ("keeper", "global", "low", 1) in kept


def test_an_older_postgres_memory_gets_its_term_counts_when_opened(pg_url, monkeypatch):
    with _as_schema_12(monkeypatch), MemoryStore(pg_url, embedder=HashEmbedder()) as s:
        for i in range(5):
            s.remember(f"Note {i}: the harbour ferry leaves early.", now=T0, dedupe=False)
        assert s.tables.meta("schema_version") == "12"
    with MemoryStore(pg_url, embedder=HashEmbedder()) as s:
        assert s.stats()["schema_version"] == SCHEMA_VERSION
        kept, counted = _term_counts(s.conn)
        assert kept == counted and ("ferry", "global", "low", 5) in kept
        s.remember("One more ferry.", now=T0)
        assert s.conn.execute("SELECT memories FROM memory_terms WHERE term = 'ferry' AND scope = 'global'"
                              ).fetchone()[0] == 6


def test_on_postgres_memories_tied_by_keyword_are_taken_newest_first(pg_url):
    """ts_rank ties every memory holding the same query words (the tsvector keeps no
    positions); a parallel scan at a million memories handed the ties over in another order
    each time, so the same recall took other candidates. The newest are taken, every time."""
    config = StoreConfig.from_dict({"limits": {"candidate_limit": 2}})
    with MemoryStore(pg_url, config=config, embedder=HashEmbedder()) as s:
        ids = [s.remember(f"Ferry timetable, page {i}.", now=T0 + i, dedupe=False).memory.id for i in range(12)]
        for _ in range(3):
            assert {h.id for h in s.recall("ferry timetable", k=1, now=T0 + 20, explain=True)} <= set(ids[-2:])


# -- the same behaviour on both backends ----------------------------------------------------
def test_chinese_and_korean_are_found_by_keyword(store):
    zh = store.remember("我们团队每周五部署新版本", now=T0, dedupe=False).memory.id
    ko = store.remember("회의는 매주 월요일 오전에 있습니다", now=T0, dedupe=False).memory.id
    store.remember("The garden needs water.", now=T0)
    hits = store.recall("部署", now=T0, explain=True)
    assert hits[0].id == zh and hits[0].why["keyword"] == 1.0
    hits = store.recall("월요일 회의", now=T0, explain=True)
    assert hits[0].id == ko and hits[0].why["keyword"] == 1.0


def test_scope_and_trust_are_hard_rules(store):
    store.remember("Team A ships on Tuesday.", scope="group:a", now=T0)
    store.remember("The vault code is 4412 for shipping.", sensitivity="hyper", now=T0)
    assert [h.text for h in store.recall("ships", scope="group:b", now=T0)] == []
    assert [h.text for h in store.recall("ships", scope="group:a", now=T0)] == ["Team A ships on Tuesday."]
    assert store.recall("vault code", trust="medium", now=T0) == []


def test_tick_and_undo_put_every_memory_back(store):
    ids = [store.remember(f"note {i} about the {w}", kind="event", now=T0, dedupe=False).memory.id
           for i, w in enumerate(["garden", "kitchen", "roof"])]
    before = {i: store.get(i).layer for i in ids}
    report = store.tick(now=T0 + 200 * DAY)
    assert report.transitions and {store.get(i).layer for i in ids} != set(before.values())
    store.undo_tick(report.tick_id)
    assert {i: store.get(i).layer for i in ids} == before


def _same_story(store):
    """The same operations, at the same times, with the same ids."""
    a = store.remember("Ada prefers tea in the morning.", who="Ada", now=T0, memory_id="m-a").memory.id
    store.remember("Ada works at Acme.", who="Ada", now=T0 + 1, memory_id="m-b", tags=["work"])
    store.remember("回顾会议在周四", now=T0 + 2, memory_id="m-c", scope="group:x")
    store.update(a, now=T0 + DAY, text="Ada prefers green tea in the morning.")
    gone = store.delete("m-b")
    store.restore(gone)
    store.recall("tea", now=T0 + 2 * DAY, reinforce=True)
    store.tick(now=T0 + 90 * DAY)
    return store.export_jsonl()


def test_exporting_the_same_story_gives_the_same_jsonl_on_both(tmp_path, pg_url):
    with MemoryStore(str(tmp_path / "a.db")) as lite, MemoryStore(pg_url) as pg:
        assert _same_story(lite) == _same_story(pg)


def _decay_story(target):
    """Memories of every kind of decay input (kinds, their own half-life, recalls, pinned, a
    superseded one), ticked on, then ticked under other decay numbers (every memory looked
    at): each tick's transitions in order, and every memory's stored decay state."""
    from mnemoscope.store.curation.resolving import supersede
    from mnemoscope.store.model.config import Decay, StoreConfig

    with MemoryStore(target) as store:
        for i in range(60):
            store.remember(f"note {i} on the {['shed', 'roof', 'pond'][i % 3]}", kind=KIND_CYCLE[i % 5],
                           now=T0 + i * 3600, memory_id=f"m{i:02d}", dedupe=False, pinned=i % 17 == 0,
                           half_life_days=[None, 2.5, 400.0][i % 3] if i % 4 == 0 else None, importance=(i % 10) / 10)
        for i in range(0, 60, 7):
            for day in range(6):
                store.recall(f"note {i} on", k=1, now=T0 + day * DAY, reinforce=True)
        supersede(store, "m03", "m01")
        story = [store.tick(now=T0 + days * DAY).transitions for days in (10, 45, 200, 700)]
    with MemoryStore(target, config=StoreConfig(decay=Decay(edge_below=0.25, archive_after_days=900.0))) as store:
        story.append(store.tick(now=T0 + 701 * DAY).transitions)
        states = store.conn.execute("SELECT m.id, s.strength, s.layer, s.ticked_at, s.next_change_at FROM memories m "
                                    "JOIN memory_state s ON s.rowid = m.rowid ORDER BY m.id").fetchall()
    return story, [tuple(r) for r in states]


KIND_CYCLE = ("fact", "event", "lesson", "skill", "reflection")


def test_a_memorys_strength_and_layer_are_the_same_whichever_server_ticked_it(tmp_path, pg_url):
    lite_story, lite_states = _decay_story(str(tmp_path / "a.db"))
    pg_story, pg_states = _decay_story(pg_url)
    assert all(lite_story), f"a tick of the story moved no memory: {lite_story}"
    for i, (a, b) in enumerate(zip(lite_story, pg_story)):
        assert a == b, f"tick {i} moved other memories on PostgreSQL: {b} against SQLite's {a}"
    differ = [(a, b) for a, b in zip(lite_states, pg_states) if a != b]
    assert not differ and len(pg_states) == 60, f"stored decay state differs (SQLite, PostgreSQL): {differ[:3]}"


def test_two_ticks_at_once_run_once(store_target, backend):
    with MemoryStore(store_target) as s:
        for i in range(40):
            s.remember(f"event {i} in the shed", kind="event", now=T0, dedupe=False)
    reports, errors = [], []

    def tick():
        try:
            with MemoryStore(store_target) as s:
                reports.append(s.tick(now=T0 + 200 * DAY))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=tick) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(len(r.transitions) for r in reports) == [0, 40]


def test_columns_come_as_numbers_and_a_null_among_them_is_refused(pg_url):
    from mnemoscope.store.backends.pg_connection import PostgresError

    with MemoryStore(pg_url) as store:
        rowid, value = store.conn.columns("SELECT g::int8, g / 4.0::float8 FROM generate_series(1, 3) g", "if")
        assert rowid.tolist() == [1, 2, 3] and value.tolist() == [0.25, 0.5, 0.75]
        assert [c.tolist() for c in store.conn.columns("SELECT 1::int8 WHERE false", "i")] == [[]]
        with pytest.raises(PostgresError, match="NULL or not an 8-byte number"):
            store.conn.columns("SELECT g::int8, CASE WHEN g = 2 THEN NULL ELSE 1.0::float8 END "
                               "FROM generate_series(1, 3) g", "if")


def test_a_read_does_not_wait_for_another_threads_transaction_and_sees_only_what_is_committed(pg_url):
    """One serve process, many HTTP threads: a recall goes on while another thread writes."""
    with MemoryStore(pg_url) as store:
        kept = store.remember("Ada keeps the spare keys in the blue jar.", now=T0).memory.id
        writing, release = threading.Event(), threading.Event()

        def slow_write():
            with store.tables.write():
                store.tables.write_memory(kept, {"text": "Ada moved the keys to the drawer."})
                writing.set()
                release.wait(10)

        writer = threading.Thread(target=slow_write)
        writer.start()
        try:
            assert writing.wait(10), "the write transaction did not start"
            started = time.monotonic()
            hits = store.recall("spare keys jar", k=3, now=T0)
            seen = store.get(kept).text
            took = time.monotonic() - started
        finally:
            release.set()
            writer.join()
        assert took < 2, f"the read waited {took:.1f} s for another thread's open write transaction"
        assert [h.id for h in hits] == [kept] and seen == "Ada keeps the spare keys in the blue jar.", \
            f"the read saw another thread's uncommitted write: {seen!r}"
        assert store.get(kept).text == "Ada moved the keys to the drawer."


# -- backups: a logical copy into an SQLite snapshot ----------------------------------------
def test_a_backup_is_a_consistent_snapshot_file_that_copies_back_whole(tmp_path, pg_url, capsys):
    from mnemoscope.store.files.backup import backup, server_snapshots

    folder = tmp_path / "snaps"
    with MemoryStore(pg_url) as pg:
        pg.remember("Mara is allergic to peanuts.", now=T0)
        pg.remember("Ana drinks green tea.", now=T0)
        pg.tick(advance_days=3)
        original = _everything(pg)
    assert main(["--db", pg_url, "backup", "--to", str(folder), "--json"]) == 0
    snapshot = json.loads(capsys.readouterr().out)["snapshot"]
    assert os.path.basename(snapshot).startswith(_dbname(pg_url) + "-") and snapshot.endswith(".db")
    assert sorted(os.listdir(folder)) == sorted([os.path.basename(snapshot), f".{_dbname(pg_url)}.lock"])
    with MemoryStore(snapshot, read_only=True) as snap:  # an SQLite file like any other
        assert {k: v for k, v in _everything(snap).items() if k != "activity"} == \
            {k: v for k, v in original.items() if k != "activity"}
    with MemoryStore(pg_url) as pg:  # a write after the snapshot is not in it
        pg.remember("Written after the snapshot.", now=T0)
        assert server_snapshots(pg, folder) == [Path(snapshot)]
        second = backup(pg, folder, keep=1)  # rotation keeps the newest only, of this memory only
        assert server_snapshots(pg, folder) == [second.path] and second.removed == [Path(snapshot)]
    with MemoryStore(str(second.path), read_only=True) as snap:
        assert "Written after the snapshot." in [m.text for m in snap.list()]


def test_a_backup_taken_while_an_agent_writes_is_one_instant_of_the_memory(tmp_path, pg_url):
    """Tables are read one after another; without one snapshot of the server the edges
    (read after the memories) would name memories written meanwhile, missing from the file."""
    from mnemoscope.store.files.backup import backup

    stop = threading.Event()

    def agent():
        with MemoryStore(pg_url) as writer:
            n = 0
            while not stop.is_set():
                writer.remember(f"Person {n} likes walking.", who=f"Person {n}", now=T0)
                n += 1

    with MemoryStore(pg_url) as pg:
        for n in range(300):
            pg.remember(f"Earlier {n} likes tea.", who=f"Earlier {n}", now=T0)
        thread = threading.Thread(target=agent)
        thread.start()
        try:
            snapshots = [backup(pg, tmp_path / "snaps", keep=10).path for _ in range(3)]
        finally:
            stop.set()
            thread.join()
    for path in snapshots:
        with MemoryStore(str(path), read_only=True) as snap:
            ids = {m.id for m in snap.list()}
            named = {r[0] for r in snap.conn.execute("SELECT src FROM edges WHERE edge = 'mentions_entity'")}
            entities = {r[0] for r in snap.conn.execute("SELECT id FROM entities")}
            pointed = {r[0] for r in snap.conn.execute("SELECT dst FROM edges WHERE edge = 'mentions_entity'")}
            assert named <= ids and pointed <= entities and len(ids) >= 300


def test_a_backup_of_postgres_needs_a_folder_and_restoring_in_place_is_refused(pg_url, capsys):
    assert main(["--db", pg_url, "backup"]) != 0
    err = capsys.readouterr().err
    assert "name the folder with --to DIR" in err and len(err.strip().splitlines()) == 1
    assert main(["--db", pg_url, "restore-backup", "snapshot.db"]) != 0
    err = capsys.readouterr().err
    assert "not yet supported on PostgreSQL: restoring a snapshot in place" in err and "mnemoscope copy" in err
    assert len(err.strip().splitlines()) == 1


def test_connect_refuses_to_write_a_password_into_a_clients_configuration(tmp_path, capsys):
    config = tmp_path / "client.json"
    url = f"postgresql://{PASSWORD_USER}:{PASSWORD}@127.0.0.1:5432/team"
    assert main(["--db", url, "connect", "claude-desktop", "--config", str(config)]) != 0
    out = capsys.readouterr()
    assert "PGPASSWORD" in out.err and PASSWORD not in out.out + out.err and not config.exists()


# -- moving between backends ----------------------------------------------------------------
def _everything(store):
    """What a copy must carry, read the same way on either backend."""
    ids, matrix = store.vectors()
    return {
        "export": store.export_jsonl(),
        "vectors": dict(zip(ids, (row.tobytes() for row in matrix))),
        "ticks": store.conn.execute("SELECT id, at, undone, summary, undo FROM ticks ORDER BY id").fetchall(),
        "tick_log": store.conn.execute("SELECT tick_id, memory_id, to_layer FROM tick_log ORDER BY rowid").fetchall(),
        "activity": store.conn.execute("SELECT id, tool, summary FROM activity ORDER BY id").fetchall(),
        "forgotten": store.conn.execute("SELECT memory_id, payload FROM forgotten ORDER BY memory_id").fetchall(),
        "events": store.conn.execute("SELECT memory_id, at FROM recall_events ORDER BY memory_id, at").fetchall(),
        "clock": store.clock_offset,
    }


def test_copy_moves_a_whole_memory_to_postgres_and_back(tmp_path, pg_url, capsys):
    from mnemoscope.store.agents import activity
    from mnemoscope.store.files.demo import load_demo

    lite = str(tmp_path / "lite.db")
    with MemoryStore(lite) as s:
        load_demo(s, now=T0)
        s.recall("coffee", now=T0 + DAY, reinforce=True)
        s.tick(advance_days=40)
        activity.forget(s, s.list()[0].id, client="test")
        activity.record(s, client="test", door="cli", tool="tick")
        original = _everything(s)
    assert original["ticks"] and original["vectors"] and original["activity"] and original["events"]
    assert main(["copy", lite, pg_url]) == 0
    assert "copied" in capsys.readouterr().out
    with MemoryStore(pg_url) as pg:
        assert _everything(pg) == original
        tick_id = original["ticks"][-1][0]
        pg.undo_tick(tick_id)  # the copied tick undoes on the copy
        assert pg.tick(advance_days=1).tick_id == tick_id + 1  # and the numbering goes on after it
        added = pg.remember("Written on the copy.", now=T0 + 50 * DAY).memory.id  # so does the memories'
        assert pg.get(added).text == "Written on the copy."
        pg.delete(added)
    back = str(tmp_path / "back.db")
    with MemoryStore(pg_url) as pg:
        pg.redo_tick(tick_id)
    assert main(["copy", pg_url, back]) == 0
    with MemoryStore(back) as s, MemoryStore(pg_url) as pg:
        assert _everything(s) == _everything(pg)


def test_copy_only_into_an_empty_memory(tmp_path, pg_server, pg_url, capsys):
    lite = str(tmp_path / "lite.db")
    with MemoryStore(lite) as s:
        s.remember("One thing.", now=T0)
    with MemoryStore(pg_url) as pg:
        pg.remember("Already here.", now=T0)
    before = _catalogue(pg_server, _dbname(pg_url))
    assert main(["copy", lite, pg_url]) != 0
    err = capsys.readouterr().err
    assert "is not empty (it has memories)" in err and len(err.strip().splitlines()) == 1
    assert _catalogue(pg_server, _dbname(pg_url)) == before


# -- the doors on PostgreSQL ------------------------------------------------------------------
def test_forget_and_restore_from_the_command_line(pg_url, capsys):
    assert main(["--db", pg_url, "demo"]) == 0
    assert main(["--db", pg_url, "forget", "mem-001"]) == 0
    with MemoryStore(pg_url) as s:
        assert not s.exists("mem-001")
    assert main(["--db", pg_url, "restore", "mem-001"]) == 0
    with MemoryStore(pg_url) as s:
        assert s.exists("mem-001")
    capsys.readouterr()


def test_the_http_api_serves_a_postgres_memory(pg_url, tmp_path):
    import os
    import socket
    import subprocess
    import sys
    import urllib.request

    with MemoryStore(pg_url) as s:
        s.remember("Mara has a peanut allergy.", now=T0, memory_id="m-peanut")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, MNEMOSCOPE_HOME=str(tmp_path / "home"))
    proc = subprocess.Popen([sys.executable, "-m", "mnemoscope", "--db", pg_url, "--embedder", "hash", "serve",
                             "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def call(method, path, body=None):
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "User-Agent": "pytest/1"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = call("GET", "/health")
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
                time.sleep(0.2)
        assert health["ok"] is True and sum(health["counts"].values()) == 1
        hits = call("POST", "/recall", {"query": "peanut allergy", "k": 2, "explain": True})["hits"]
        assert hits[0]["id"] == "m-peanut" and hits[0]["why"]
        made = call("POST", "/remember", {"text": "Mara runs on Tuesdays.", "kind": "fact"})
        call("POST", "/update", {"memory_id": made["id"], "text": "Mara runs on Thursdays."})
        call("POST", "/forget", {"memory_id": "m-peanut"})
    finally:
        proc.terminate()
        proc.wait(10)
    with MemoryStore(pg_url) as s:
        assert [m.text for m in s.list()] == ["Mara runs on Thursdays."]


def test_a_committed_write_is_heard_by_a_listener_and_a_rolled_back_one_is_not(pg_url):
    import select


    with MemoryStore(pg_url) as s, MemoryStore(pg_url) as window:
        listener = window.listen()  # another process's window
        try:
            assert listener.pending() == 0
            with pytest.raises(RuntimeError), s.tables.write():
                s.remember("never committed")
                raise RuntimeError("rolled back")
            assert not select.select([listener.fileno()], [], [], 0.3)[0] or listener.pending() == 0
            s.remember("Mara likes green tea.")
            assert select.select([listener.fileno()], [], [], 2)[0]
            assert listener.pending() == 1
            own = s.listen()  # the store's own commits are not news to its own window
            s.remember("Mara likes black tea too.")
            assert select.select([own.fileno()], [], [], 2)[0] and own.pending() == 0
            # ... nor after its connection broke and it reconnected (a new server process)
            window.conn.execute("SELECT pg_terminate_backend(?)", (s.conn.backend_pid,))
            old_pid = s.conn.backend_pid
            s.remember("Mara likes oolong.")  # the write's BEGIN finds the connection dead: a new one
            assert s.conn.backend_pid != old_pid
            assert select.select([own.fileno()], [], [], 2)[0] and own.pending() == 0
            heard, deadline = 0, time.monotonic() + 3
            while heard < 2 and time.monotonic() < deadline:  # black tea, oolong: other news for the window
                if select.select([listener.fileno()], [], [], 0.2)[0]:
                    heard += listener.pending()
            assert heard == 2
            own.close()
        finally:
            listener.close()


@pytest.mark.parametrize("form", ["password", "pass%77ord", "sslmode=disable&password"])
def test_a_password_in_the_query_is_never_printed_nor_written_into_a_client(
        pg_server, pg_url, capsys, caplog, tmp_path, form):
    """``?password=…`` was printed by init, stats and a refused login, and connect wrote it
    into the client's configuration (the userinfo form was redacted everywhere)."""
    caplog.set_level(logging.DEBUG)
    name = _dbname(pg_url)
    base = f"postgresql://{PASSWORD_USER}@127.0.0.1:{pg_server.port}/{name}"
    url = f"{base}?{form}={PASSWORD}"
    assert redact(url) == (base + "?sslmode=disable" if form.startswith("sslmode") else base)
    assert main(["--db", url, "init"]) == 0
    assert main(["--db", url, "stats"]) == 0
    assert main(["--db", url, "stats", "--json"]) == 0
    assert main(["--db", f"{base}?{form}=not-{PASSWORD}", "stats"]) != 0
    config = tmp_path / "mcp.json"
    assert main(["--db", url, "connect", "cursor", "--config", str(config)]) != 0
    out = capsys.readouterr()
    assert PASSWORD not in out.out + out.err + caplog.text and "PGPASSWORD" in out.err
    assert "password authentication failed" in out.err and not config.exists()
