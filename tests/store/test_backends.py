"""The SQL that differs between the engines, built by each backend from structure
(store/backends/ ``Statements``), does the same on both: run on SQLite and PostgreSQL."""

import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning.embedding import HashEmbedder
from mnemoscope.store.recall.text import Prefix, all_of, any_of

T0 = 1_790_000_000.0


@pytest.fixture
def opened(db_path):
    with MemoryStore(db_path, embedder=HashEmbedder()) as s:
        for i, text in enumerate(("green tea at noon", "black coffee at dawn", "Tea with Mara", "teapot repairs")):
            s.remember(text, memory_id=f"m-{i}", now=T0 + i)
        yield s


def _search(s, query, ranked=False):
    sql, params = s.tables.sql.text_search("m.id", query, "m.kind = ?", ("fact",), limit=10, ranked=ranked,
                                           pairs=[("global", "low")])
    with s.tables.reading():
        return [r[0] for r in s.conn.execute(sql, params)]


def test_a_full_text_query_finds_the_same_memories_on_both_engines(opened):
    assert sorted(_search(opened, any_of(["tea", "dawn"]))) == ["m-0", "m-1", "m-2"]
    assert _search(opened, all_of(["tea", "mara"])) == ["m-2"]
    assert _search(opened, all_of(["tea", any_of(["noon", "mara"])]), ranked=True) in (["m-0", "m-2"], ["m-2", "m-0"])
    assert sorted(_search(opened, all_of([Prefix("tea")]))) == ["m-0", "m-2", "m-3"], "a prefix finds teapot too"
    assert _search(opened, any_of(['it"s', "o'clock"])) == [], "quotes in a term are text"


def test_a_full_text_query_reads_the_shelves_it_names_only(opened):
    """store/recall/shelves.py: a memory is found on the shelf of its scope and sensitivity, and
    again on its new one when they change; never on another, whatever it holds."""
    opened.remember("green tea in the group", memory_id="g-0", scope="group:a", now=T0)
    opened.remember("green tea kept secret", memory_id="h-0", sensitivity="high", now=T0)
    assert sorted(_search(opened, any_of(["green"]))) == ["m-0"]
    sql, params = opened.tables.sql.text_search("m.id", any_of(["green"]), "", (), limit=10,
                                                pairs=[("group:a", "low"), ("global", "high")])
    with opened.tables.reading():
        assert sorted(r[0] for r in opened.conn.execute(sql, params)) == ["g-0", "h-0"]
    opened.update("h-0", sensitivity="low", now=T0)
    opened.update("m-0", scope="group:a", now=T0)
    assert sorted(_search(opened, any_of(["green"]))) == ["h-0"]
    opened.delete("h-0")
    assert _search(opened, any_of(["green"])) == []


def test_upserts_and_inserts_do_the_same_on_both_engines(opened):
    sql, tables = opened.tables.sql, opened.tables
    with tables.write():
        opened.conn.execute(sql.upsert("meta", ("key", "value"), ("key",)), ("k", "one"))
        opened.conn.execute(sql.upsert("meta", ("key", "value"), ("key",)), ("k", "two"))
        kept = opened.conn.execute(sql.insert_if_absent("meta", ("key", "value")), ("k", "three")).rowcount
        first = tables.backend.insert_one("ticks", {"at": T0, "created": T0, "summary": "{}"}, "id")
        second = tables.backend.insert_one("ticks", {"at": T0, "created": T0, "summary": "{}"}, "id")
    assert tables.meta("k") == "two" and kept == 0
    assert second == first + 1
    rows = tables.rows(f"SELECT id FROM memories WHERE {sql.like('text')} AND {sql.holds('text')} ORDER BY id",
                       ("%TEA%", "Te"))
    assert [r["id"] for r in rows] == ["m-2"], "LIKE ignores case; holds does not"


def test_reads_as_of_one_instant_miss_a_commit_made_meanwhile(opened, db_path):
    """What a snapshot's logical copy reads through (backup of a server's memory)."""
    with opened.tables.reading(), opened.tables.backend.as_of_one_instant():
        before = opened.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        with MemoryStore(db_path, embedder=HashEmbedder()) as other:
            other.remember("written by another program meanwhile")
        assert opened.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == before
    assert opened.count() == before + 1
