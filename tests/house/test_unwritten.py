"""The helper every looking-never-writes test uses: it sees a write that leaves the main file
as it was, and does not take a pure read for one."""

import sqlite3
from pathlib import Path

import pytest
from mnemoscope.store import MemoryStore
from support.helpers import Written, plant_write, unwritten, unwritten_unless


@pytest.mark.sqlite_only("watches a SQLite file's bytes")
def test_a_remember_in_wal_mode_is_caught_though_the_main_file_keeps_its_bytes(demo_store, db_path):
    demo_store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    main_file = Path(db_path).read_bytes()
    caught = pytest.raises(Written, match=r"written: memories\.db-shm changed, memories\.db-wal changed$")
    with caught, unwritten(db_path):
        plant_write(demo_store)
    assert Path(db_path).read_bytes() == main_file  # what the old checks hashed, and why they could not fail


@pytest.mark.sqlite_only("watches a SQLite file's bytes")
def test_a_pure_read_is_not_a_write_though_it_moves_a_read_mark_in_the_shm(demo_store, db_path):
    with MemoryStore(db_path) as agent:
        plant_write(agent)  # the WAL has a frame no reader has marked yet
        shm_before = Path(db_path + "-shm").read_bytes()
        with unwritten(db_path):
            demo_store.recall("what does Mara drink")
            demo_store.list()
            agent.stats()
        assert Path(db_path + "-shm").read_bytes() != shm_before  # the reader wrote its read mark


@pytest.mark.sqlite_only("watches a SQLite file's folder")
def test_a_new_file_beside_the_database_is_caught(demo_store, db_path):
    with pytest.raises(Written, match=r"memories\.db\.bak appeared"), unwritten(db_path):
        open(db_path + ".bak", "wb").close()


@pytest.mark.sqlite_only("watches a SQLite file's bytes")
def test_a_write_to_a_rollback_journal_database_is_caught(db_path):
    with MemoryStore(db_path) as s:
        s.remember("a memory")
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA journal_mode = DELETE")
    with pytest.raises(Written, match=r"memories\.db changed"), unwritten(db_path):
        conn.execute("UPDATE memories SET importance = 0.9")
        conn.commit()
    conn.close()


def test_a_planted_twin_fails_when_its_write_is_not_seen_and_not_on_a_failed_assert(store, db_path):
    with pytest.raises(AssertionError, match="did not see it"), unwritten_unless(True, db_path):
        store.list()
    with pytest.raises(AssertionError, match="^the test's own$"), unwritten_unless(True, db_path):
        plant_write(store)
        raise AssertionError("the test's own")
