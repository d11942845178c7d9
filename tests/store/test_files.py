"""Honest about files: typed errors, read-only databases, looking never writes."""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap

import pytest
from mnemoscope.store import DatabaseRefused, MemoryStore, StoreError, ValidationError
from support.helpers import unwritten

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_export_to_a_missing_folder_is_a_store_error(demo_store, tmp_path):
    with pytest.raises(StoreError, match="cannot write .*x.jsonl.*folder"):
        demo_store.export_jsonl(str(tmp_path / "nonexistent" / "x.jsonl"))


@pytest.mark.parametrize("k", [100000000000000000000, 10**6, 0, -3, 2.5])
def test_recall_k_out_of_range_is_a_field_error(demo_store, k):
    with pytest.raises(ValidationError, match="k: "):
        demo_store.recall("tea", k=k)


@pytest.mark.sqlite_only("SQLite's own message for a damaged file")
def test_sqlite_errors_during_an_operation_become_store_errors(store, monkeypatch):
    store.remember("a memory to read back")
    store.conn.execute("DROP TABLE recall_events")  # what a damaged file would look like mid-way
    with pytest.raises(StoreError, match=r"the database .* failed \(no such table"):
        store.reinforce(store.list()[0].id)


@pytest.mark.sqlite_only('fills the file with PRAGMA max_page_count')
def test_a_disk_full_error_says_so_and_writes_nothing(db_path):
    with MemoryStore(db_path) as s:
        s.remember("keep me")
        pages = s.conn.execute("PRAGMA page_count").fetchone()[0]
        s.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreError, match="full"):
            s.import_jsonl("\n".join(f'{{"id": "x{i}", "text": "{"word " * 500}"}}' for i in range(200)))
        assert [m.text for m in s.list()] == ["keep me"]


# -- read-only ------------------------------------------------------------------------------

def _as_another_user(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` where file permissions apply (as 'nobody' when the tests run as root)."""
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: permissions cannot be tested")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.fixture
def read_only_db():
    folder = tempfile.mkdtemp(prefix="mnemo-ro-")
    path = os.path.join(folder, "memories.db")
    with MemoryStore(path) as s:
        s.remember("Mara drinks green tea every morning.", memory_id="m1")
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    yield path
    os.chmod(folder, 0o755)
    shutil.rmtree(folder)


def test_a_database_in_a_read_only_folder_opens_read_only(read_only_db):
    with unwritten(read_only_db):
        result = _as_another_user(f"""
            import sys
            from mnemoscope.store import MemoryStore, StoreError
            s = MemoryStore({read_only_db!r})
            print("read_only", s.read_only)
            print("recall", [h.id for h in s.recall("green tea")])
            print("stats", s.stats()["memories"], s.stats()["read_only"])
            for write in (lambda: s.remember("new"), lambda: s.tick(), lambda: s.update("m1", text="x")):
                try:
                    write()
                except StoreError as exc:
                    print("refused", exc)
        """)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "read_only True" in out and "recall ['m1']" in out and "stats 1 True" in out
    refusals = [line for line in out.splitlines() if line.startswith("refused")]
    assert len(refusals) == 3 and all("read-only" in line for line in refusals)
    assert "corrupt" not in out and "backup" not in out


@pytest.mark.sqlite_only('a read-only file; on PostgreSQL: tests/store/test_postgres.py')
def test_a_database_can_be_opened_read_only_on_purpose(db_path):
    with MemoryStore(db_path) as s:
        s.remember("Theo studies in Porto.")
    # fingerprinted once open: like any reader of a WAL file in a folder it may write, SQLite
    # puts an empty -wal and its -shm index beside it (see the read-only folder test above)
    with MemoryStore(db_path, read_only=True) as s, unwritten(db_path):
        assert s.read_only and s.count() == 1
        with pytest.raises(StoreError, match="read-only"):
            s.remember("another")
        assert [h.text for h in s.recall("Theo Porto", reinforce=True)] == ["Theo studies in Porto."]
    assert os.path.getsize(db_path + "-wal") == 0


def test_a_read_only_store_cannot_be_created(tmp_path):
    with pytest.raises(DatabaseRefused, match="does not exist"):
        MemoryStore(str(tmp_path / "new.db"), read_only=True)


# -- looking never writes -------------------------------------------------------------------

@pytest.mark.sqlite_only("SQLite's -wal and -shm files")
def test_a_refused_wal_database_leaves_no_wal_or_shm_files(db_path):
    with MemoryStore(db_path) as s:
        s.remember("a memory")
        s.conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                       "VALUES ('mnemoscope', 'm099_future', '2030-01-01')")
    assert sorted(os.listdir(os.path.dirname(db_path))) == ["memories.db"]
    with unwritten(db_path), pytest.raises(DatabaseRefused, match="newer"):
        MemoryStore(db_path)


@pytest.mark.sqlite_only("SQLite's journal mode")
def test_stats_does_not_convert_a_rollback_journal_database_to_wal(db_path):
    with MemoryStore(db_path) as s:
        s.remember("a memory")
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    with unwritten(db_path), MemoryStore(db_path) as s:
        s.stats()
        s.recall("memory")
    with MemoryStore(db_path) as s:  # a write may switch it to WAL
        s.remember("another memory")
        assert s.count() == 2


@pytest.mark.parametrize("pragma", ["application_id = 1234", "user_version = 7"])
def test_an_empty_sqlite_file_of_another_program_is_refused(tmp_path, pragma):
    path = str(tmp_path / "other.db")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA {pragma}")
    conn.commit()
    conn.close()
    with unwritten(path), pytest.raises(DatabaseRefused, match="another program") as exc:
        MemoryStore(path)
    assert exc.value.reason == "not_a_database"


@pytest.mark.sqlite_only("SQLite's file header")
def test_a_new_database_carries_mnemoscopes_application_id(db_path):
    with MemoryStore(db_path) as s:
        app_id = s.conn.execute("PRAGMA application_id").fetchone()[0]
    assert app_id.to_bytes(4, "big") == b"MNEM"
    MemoryStore(db_path).close()  # and opens again


def test_a_memory_deleted_between_recalls_read_and_its_reinforcement_is_skipped(db_path):
    with MemoryStore(db_path) as s, MemoryStore(db_path) as other:
        s.remember("Ana loves green tea", memory_id="a")
        s.remember("Ana brews green tea at noon", memory_id="b")
        real_write = s.tables.write

        def write_after_other_process_deletes():
            other.delete("a")
            return real_write()

        s.tables.write = write_after_other_process_deletes
        hits = s.recall("green tea", k=5, reinforce=True)
        s.tables.write = real_write
        assert {h.id for h in hits} == {"a", "b"}
        assert s.get("b").recall_count == 1 and not s.exists("a")


@pytest.mark.sqlite_only("SQLite's -wal file")
def test_a_newer_versions_mark_still_in_the_wal_is_seen(db_path):
    with MemoryStore(db_path) as s:
        s.remember("a memory")
    writer = sqlite3.connect(db_path)  # another program, still open: its last write is only in the WAL
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                   "VALUES ('mnemoscope', 'm099_future', '2030-01-01')")
    writer.commit()
    try:
        assert os.path.getsize(db_path + "-wal") > 0
        with pytest.raises(DatabaseRefused, match="newer"):
            MemoryStore(db_path)
    finally:
        writer.close()


def _sqlite_memory_used():
    """Bytes the process's SQLite library holds now (pages cached by every connection), or
    None when the library this Python uses cannot be asked."""
    import ctypes
    import ctypes.util

    try:
        lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
    except OSError:
        return None
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return lib.sqlite3_memory_used


def test_a_store_that_read_every_memory_keeps_few_pages_in_memory(tmp_path):
    """The window reads every memory of its database, and recall every vector: SQLite kept
    those pages (up to 64 MiB) for the life of the connection. A write transaction still
    gets 64 MiB (a 100,000-memory tick stays in memory), and gives it back."""
    from mnemoscope.store.meaning.embedding import HashEmbedder

    read_cache, write_cache = 2 * 2**20, 64 * 2**20
    used = _sqlite_memory_used()
    path = str(tmp_path / "big.db")
    with MemoryStore(path, embedder=HashEmbedder()) as s:
        s.import_jsonl("\n".join(f'{{"id": "m-{i}", "text": "memory {i} about topic {i % 97}{" and more" * 60}"}}'
                                 for i in range(10000)))
    conn = sqlite3.connect(path)
    pages = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'memories'").fetchone()[0]
    conn.close()
    assert pages > 3 * read_cache  # reading them all would fill a small cache
    store = MemoryStore(path, embedder=HashEmbedder())
    if used is None or used() == 0:
        pytest.skip("this Python's SQLite library cannot be asked what it holds")
    try:
        before = used()
        store.list()
        store.recall("memory about topic 7")
        held = used() - before
        assert held <= 1.2 * read_cache, f"SQLite holds {held / 2**20:.1f} MiB after reading every memory"
        with store.tables.write():
            assert store.conn.execute("PRAGMA cache_size").fetchone()[0] == -write_cache // 1024
        store.tick()
        assert used() - before <= 1.2 * read_cache, f"{(used() - before) / 2**20:.1f} MiB after a tick"
    finally:
        store.close()


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_database_path_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    """`--db PIPE` (or File › Open on one) waited for ever for a writer to the pipe."""
    import contextlib
    import threading

    pipe = tmp_path / "memory.db"
    os.mkfifo(pipe)

    def unblock():  # so that the test fails instead of hanging when the open blocks
        with contextlib.suppress(OSError):
            os.close(os.open(pipe, os.O_WRONLY))

    timer = threading.Timer(5, unblock)
    timer.daemon = True
    timer.start()
    with pytest.raises(DatabaseRefused, match="not a plain file"):
        MemoryStore(str(pipe))


def test_a_database_path_that_is_a_folder_is_refused_as_a_folder(tmp_path):
    """It was refused as 'not a plain file (a pipe, a device or a socket)': none of those."""
    with pytest.raises(DatabaseRefused, match=r"is not a plain file \(a folder\)"):
        MemoryStore(str(tmp_path))
