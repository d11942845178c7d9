import json
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from mnemoscope.store import MemoryStore, StoreError, ValidationError
from mnemoscope.store.files.backup import backup, compare, restore, snapshots

# Each transaction of the writer adds two memories and records their number in meta:
# a snapshot taken at one instant has as many a- as b- memories, and that number.
WRITER = textwrap.dedent("""
    import os, sys
    from mnemoscope.store import MemoryStore
    path, stop, ready = sys.argv[1:4]
    s = MemoryStore(path)
    n = 0
    while not os.path.exists(stop):
        n += 1
        with s.tables.write():
            s.remember(f"pair {n} first half about tea and boats", memory_id=f"a-{n}", dedupe=False)
            s.remember(f"pair {n} second half about coffee and trains", memory_id=f"b-{n}", dedupe=False)
            s.tables.set_meta("writer_n", str(n))
        if n == 5:
            open(ready, "w").close()
    s.close()
""")


def _seed(path, n):
    # an import, as a database that size is made: 3,000 remembers each wait for e5 (5 minutes)
    lines = (json.dumps({"id": f"seed-{i}", "text": f"seed memory number {i} about topic {i % 37} with some "
                         "padding text " * 3, "created_at": 1_700_000_000 + i}) for i in range(n))
    with MemoryStore(path) as s:
        s.import_jsonl("\n".join(lines))


def _pairs(snapshot):
    conn = sqlite3.connect(snapshot)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        a = conn.execute("SELECT count(*) FROM memories WHERE id LIKE 'a-%'").fetchone()[0]
        b = conn.execute("SELECT count(*) FROM memories WHERE id LIKE 'b-%'").fetchone()[0]
        row = conn.execute("SELECT value FROM meta WHERE key = 'writer_n'").fetchone()
        return a, b, int(row[0]) if row else 0
    finally:
        conn.close()


def test_backup_while_another_process_writes_is_whole_and_from_one_instant(tmp_path):
    db = tmp_path / "agent.db"
    _seed(db, 3000)
    stop, ready = tmp_path / "stop", tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(stop), str(ready)])
    try:
        deadline = time.time() + 60
        while not ready.exists():
            assert writer.poll() is None, "the writer died"
            assert time.time() < deadline
            time.sleep(0.05)
        taken = [backup(db, tmp_path / "snaps", keep=10).path for _ in range(4)]
        assert writer.poll() is None  # it was still writing after the last snapshot
    finally:
        stop.touch()
        writer.wait(60)
    assert writer.returncode == 0
    seen = []
    for snap in taken:
        a, b, n = _pairs(snap)
        assert a == b == n, f"{snap.name}: {a} a-, {b} b-, writer at {n}: a half-applied write"
        seen.append(n)
    assert seen == sorted(seen) and seen[-1] > seen[0] >= 5  # the writes went on during the backups
    with MemoryStore(taken[-1]) as s:
        assert s.count() == 3000 + 2 * seen[-1]


def test_rotation_keeps_exactly_n_newest(tmp_path):
    db = tmp_path / "m.db"
    _seed(db, 3)
    made = [backup(db, keep=3).path for _ in range(5)]
    left = snapshots(db)
    assert left == made[-3:] and len(left) == 3
    assert all(p.parent == tmp_path / "m.db-backups" for p in left)
    assert not list((tmp_path / "m.db-backups").glob("*.partial"))
    assert backup(db, keep=1).removed == made[-3:]
    assert len(snapshots(db)) == 1


@pytest.mark.parametrize("keep", [0, -1, 2.5, True, "3"])
def test_bad_keep_is_refused_before_anything_is_written(tmp_path, keep):
    db = tmp_path / "m.db"
    _seed(db, 1)
    with pytest.raises(ValidationError, match="keep"):
        backup(db, keep=keep)
    assert not (tmp_path / "m.db-backups").exists()


def test_backup_of_a_missing_file_says_so(tmp_path):
    with pytest.raises(StoreError, match="no such database file"):
        backup(tmp_path / "nope.db")


def test_restore_round_trip_and_the_replaced_file_becomes_a_snapshot(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db) as s:
        keep_id = s.remember("Mara lives in Lisbon.", who="Mara").memory.id
        snap = backup(s, keep=5).path
        s.remember("Mara adopted a cat named Pixel.", kind="event", memory_id="later")
        s.delete(keep_id)
        s.update("later", text="Mara adopted a cat named Pixel last spring.")

        diff = compare(db, snap)
        assert diff.current.memories == 1 and diff.snapshot.memories == 1
        assert diff.current.kinds["event"] == 1 and diff.snapshot.kinds["fact"] == 1
        assert diff.only_current == [("later", "Mara adopted a cat named Pixel last spring.")]
        assert diff.only_snapshot == [(keep_id, "Mara lives in Lisbon.")]

        before = db.read_bytes()
        with pytest.raises(StoreError, match="confirm"):
            restore(db, snap, confirm=False)
        assert db.read_bytes() == before and len(snapshots(db)) == 1

        result = restore(db, snap, confirm=True)
        # the open store sees the restored content
        assert [m.id for m in s.list()] == [keep_id]
        assert s.get(keep_id).entities == ["Mara"]
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert result.safety_snapshot in snapshots(db)
    assert compare(db, snap).identical
    # and back again: the replaced state was kept
    restore(db, result.safety_snapshot, confirm=True)
    with MemoryStore(db) as s:
        assert [m.text for m in s.list()] == ["Mara adopted a cat named Pixel last spring."]


def test_restore_refuses_a_file_that_is_not_a_memory_database(tmp_path):
    db = tmp_path / "m.db"
    _seed(db, 1)
    bogus = tmp_path / "notes.db"
    bogus.write_bytes(b"hello, not sqlite")
    before = db.read_bytes()
    with pytest.raises(StoreError, match="not a SQLite database"):
        restore(db, bogus, confirm=True)
    assert db.read_bytes() == before


def test_a_snapshot_from_an_earlier_version_is_brought_up_to_date_when_restored(tmp_path):
    from mnemoscope.store.agents import activity
    from mnemoscope.store.schema.migrations import SCHEMA_VERSION

    db = tmp_path / "m.db"
    with MemoryStore(db) as s:
        s.remember("Mara lives in Lisbon.", memory_id="lisbon")
        snap = backup(s).path
        old = sqlite3.connect(snap)  # as an earlier Mnemoscope wrote it: no activity log yet
        old.executescript("DROP TABLE activity; DROP TABLE forgotten; DROP TABLE conversations; "
                          "DELETE FROM _sqlite_migrations WHERE name IN ('m002_activity', "
                          "'m010_trust_of_logs_and_conversations', 'm012_wall_clock_and_reasons'); "
                          "UPDATE meta SET value = '1' WHERE key = 'schema_version';")
        old.close()
        restore(db, snap, confirm=True)
        activity.record(s, client="test", door="cli", tool="remember")  # the open store keeps working
        assert s.stats()["schema_version"] == SCHEMA_VERSION and s.exists("lisbon")
