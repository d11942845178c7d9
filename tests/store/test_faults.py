"""Faults: a write killed mid-way leaves every memory as it was before; a second
process writing at the same time never surfaces 'database is locked'."""

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from mnemoscope.store import MemoryStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_db(path, n):
    with MemoryStore(path) as s:
        rows = "\n".join(
            f'{{"id": "m{i:05d}", "text": "memory {i} about topic {i % 97}", "kind": "event", '
            f'"created_at": "2026-01-01T00:00:00Z"}}' for i in range(n))
        s.import_jsonl(rows)
        s.tick(now="2026-01-02T00:00:00Z")
        return dict(s.conn.execute("SELECT id, layer FROM memory_rows").fetchall())


# Run in the child before its write: once the transaction holds WRITTEN_ROWS changed rows and
# some of its pages are in the -wal (a small page cache spills them before the commit), it
# says so on stdout and stops there, inside the transaction, until it is killed.
UNTIL_WRITING = """
import json, os, sys, time
WRITTEN_ROWS = 2000

def stop_mid_write(store):
    conn = store.conn
    conn.execute("PRAGMA cache_size = 20")
    wal = store.path + "-wal"

    def wal_bytes():
        return os.path.getsize(wal) if os.path.exists(wal) else 0

    start, start_wal = conn.total_changes, wal_bytes()

    def progress():
        rows, spilled = conn.total_changes - start, wal_bytes() - start_wal
        if conn.in_transaction and rows >= WRITTEN_ROWS and spilled > 0:
            print(json.dumps({"rows": rows, "spilled_bytes": spilled}), flush=True)
            time.sleep(600)
        return 0

    conn.set_progress_handler(progress, 1000)
"""


def kill_mid_write(code, timeout=120):
    """Start ``code`` (which calls ``stop_mid_write(store)`` before writing), wait until it
    says it is writing, kill it there; what it said, and the -wal's size at the kill."""
    proc = subprocess.Popen([sys.executable, "-c", UNTIL_WRITING + textwrap.dedent(code)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else ""
        assert line, f"the child never said it was writing: {proc.poll()=} {proc.stderr.read() if ready else ''}"
        assert proc.poll() is None, "the child finished before it could be killed mid-write"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    said = json.loads(line)
    assert said["rows"] >= 2000 and said["spilled_bytes"] > 0  # killed in a transaction, its pages on disk
    return said


@pytest.mark.sqlite_only("stops inside SQLite's -wal; on PostgreSQL: tests/store/test_pg_faults.py")
def test_tick_killed_mid_write_leaves_every_memory_as_before(db_path):
    before = make_db(db_path, 20000)
    kill_mid_write(f"""
        from mnemoscope.store import MemoryStore
        s = MemoryStore({db_path!r})
        stop_mid_write(s)
        s.tick(now="2027-06-01T00:00:00Z")
    """)
    assert os.path.getsize(db_path + "-wal") > 0  # the uncommitted frames are there to be ignored
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    layers = dict(conn.execute("SELECT id, layer FROM memory_rows").fetchall())
    assert layers == before  # the tick never committed: every memory as before, never a mix
    assert conn.execute("SELECT count(*) FROM ticks").fetchone()[0] == 1
    conn.close()


@pytest.mark.sqlite_only("stops inside SQLite's -wal; on PostgreSQL: tests/store/test_pg_faults.py")
def test_import_killed_mid_write_leaves_the_store_as_before(db_path, tmp_path):
    make_db(db_path, 10)
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(f'{{"id": "n{i:06d}", "text": "imported memory {i}"}}' for i in range(60000)))
    kill_mid_write(f"""
        from mnemoscope.store import MemoryStore
        s = MemoryStore({db_path!r})
        stop_mid_write(s)
        s.import_jsonl({str(big)!r})
    """)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 10
    conn.close()


def test_concurrent_writer_never_surfaces_locked(db_path):
    make_db(db_path, 2000)
    code = textwrap.dedent(f"""
        from mnemoscope.store import MemoryStore
        s = MemoryStore({db_path!r})
        for i in range(150):
            s.remember("agent note %d about the weather" % i, kind="event", dedupe=False)
    """)
    writer = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    with MemoryStore(db_path) as s:
        for _ in range(15):
            s.list(limit=50)
            s.recall("weather topic")
            s.tick()
    _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    assert "locked" not in err
    with MemoryStore(db_path) as s:
        assert s.count() == 2150
