"""Attacks on backups and restores: shared names, kills mid-way, writers during a restore,
planted links, a folder that is a file, a full disk."""

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest
from click.testing import CliRunner
from mnemoscope.cli import cli
from mnemoscope.store import MemoryStore, StoreError
from mnemoscope.store.files.backup import backup, database_id, older_snapshots, restore, snapshots
from test_attack_mirror import needs_tmpfs, run_on_small_disk  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def _db(path, *texts):
    with MemoryStore(path) as s:
        for t in texts:
            s.remember(t)
    return path


def ids(path):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM memories")}
    finally:
        conn.close()


def child(script, *args):
    """A Python child that prints one line when it reaches the point to be killed at."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_line(proc, expect):
    line = proc.stdout.readline()
    assert line.strip() == expect, (line, proc.stderr.read() if proc.poll() is not None else "")


def test_two_databases_of_the_same_stem_keep_their_own_snapshots(tmp_path):
    work_db = _db(tmp_path / "work.db", "Ana plays the cello.")
    work_sqlite = _db(tmp_path / "work.sqlite", "Rui sails on Sundays.")
    mine = [backup(work_db, keep=5).path for _ in range(3)]
    backup(work_sqlite, keep=1)
    backup(work_sqlite, keep=1)
    assert snapshots(work_db) == mine and all(p.exists() for p in mine)
    assert len(snapshots(work_sqlite)) == 1
    assert mine[0].parent.name == "work.db-backups"
    # even in one folder given to both, each rotates and lists only its own
    shared = tmp_path / "shared"
    a = [backup(work_db, shared, keep=5).path for _ in range(2)]
    backup(work_sqlite, shared, keep=1)
    backup(work_sqlite, shared, keep=1)
    assert snapshots(work_db, shared) == a and all(p.exists() for p in a)
    assert [database_id(p) for p in snapshots(work_sqlite, shared)] == [database_id(work_sqlite)]


def test_a_database_of_the_same_name_elsewhere_is_told_apart_by_its_identity(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = _db(tmp_path / "a" / "work.db", "Ana plays the cello.")
    other = _db(tmp_path / "b" / "work.db", "Rui sails on Sundays.")
    shared = tmp_path / "snaps"
    theirs = backup(other, shared, keep=5).path
    backup(one, shared, keep=1)
    backup(one, shared, keep=1)
    assert theirs.exists() and snapshots(other, shared) == [theirs]
    before = ids(one)
    with pytest.raises(StoreError, match="another database"):
        restore(one, theirs, confirm=True, to_dir=shared)
    assert ids(one) == before


def test_snapshots_of_the_older_shared_folder_are_listed_never_rotated_and_restorable(tmp_path):
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    old = tmp_path / "work-backups"
    old.mkdir()
    legacy = old / "work-20200101T000000.000000Z.db"
    shutil.copy(backup(db).path, legacy)
    with sqlite3.connect(legacy) as conn:  # as an earlier version wrote it: no identity
        conn.execute("DELETE FROM meta WHERE key = 'database_id'")
    conn.close()
    result = backup(db, keep=1)
    assert result.older_layout == [legacy] and legacy.exists()
    assert older_snapshots(db) == [legacy]
    out = CliRunner().invoke(cli, ["backup", "--db", str(db), "--list"])
    assert out.exit_code == 0 and "older folder, shared by every database named work.*" in out.output
    with MemoryStore(db) as s:
        s.remember("Rui sails on Sundays.")
    restore(db, legacy, confirm=True)
    assert len(ids(db)) == 1 and database_id(db) is not None
    assert snapshots(db)  # the restored database keeps its identity, so its snapshots stay its own


KILLED_BACKUP = """
    import sys, time
    from mnemoscope.store.files.backup import backup
    def copied(status, remaining, total):
        print("copied", flush=True)
        time.sleep(60)
    backup(sys.argv[1], progress=copied)
"""


def test_a_backup_killed_mid_way_leaves_a_partial_the_next_backup_removes_and_reports(tmp_path):
    db = _db(tmp_path / "work.db", *(f"Memory number {i} about the garden." for i in range(50)))
    proc = child(KILLED_BACKUP, db)
    try:
        wait_line(proc, "copied")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    folder = tmp_path / "work.db-backups"
    [partial] = list(folder.glob("*.partial"))
    assert partial.stat().st_size > 0 and snapshots(db) == []
    out = CliRunner().invoke(cli, ["backup", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert f"removed 1 unfinished snapshot an interrupted backup left: {partial.name}" in out.output
    assert not partial.exists() and len(snapshots(db)) == 1


def test_a_backup_running_now_keeps_its_partial(tmp_path):
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    proc = child(KILLED_BACKUP, db)
    try:
        wait_line(proc, "copied")
        with pytest.raises(StoreError, match="another backup of work.db has been running"):
            _backup_with_short_wait(db)
        assert list((tmp_path / "work.db-backups").glob("*.partial"))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)


def _backup_with_short_wait(db):
    from mnemoscope.store.files import backup as module

    saved = module._BUSY_S
    module._BUSY_S = 0.5
    try:
        return backup(db)
    finally:
        module._BUSY_S = saved


WRITER = """
    import sys
    from mnemoscope.store import MemoryStore, StoreError
    s = MemoryStore(sys.argv[1])
    i = 0
    for line in sys.stdin:  # one remember per line the parent sends; stop at end of input
        i += 1
        try:
            r = s.remember(f"agent note {i} about the weather on day {i}")
            print("ok", r.memory.id, flush=True)
        except StoreError as e:
            print("refused", e, flush=True)
"""


def test_no_acknowledged_write_is_lost_to_a_restore(tmp_path):
    db = tmp_path / "work.db"
    with MemoryStore(db) as s:
        s.remember("Ana plays the cello.")
    snap = backup(db).path
    with MemoryStore(db) as s, s.tables.write():  # a large database: its snapshot takes a while
        s.conn.execute("CREATE TABLE padding (x BLOB)")
        s.conn.executemany("INSERT INTO padding VALUES (randomblob(4000))", [()] * 6000)
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acked, stop = [], threading.Event()

    def drive():
        while not stop.is_set():
            writer.stdin.write("go\n")
            writer.stdin.flush()
            line = writer.stdout.readline()
            if not line:
                return
            if line.startswith("ok "):
                acked.append(line.split()[1])

    t = threading.Thread(target=drive)
    t.start()
    try:
        while len(acked) < 20:
            t.join(0.05)
        results = [restore(db, snap, confirm=True) for _ in range(3)]
        n = len(acked)
        while len(acked) < n + 20:
            t.join(0.05)
    finally:
        stop.set()
        t.join(30)
        writer.stdin.close()
        writer.wait(30)
    kept = ids(db).union(*(ids(r.safety_snapshot) for r in results))
    lost = [i for i in acked if i not in kept]
    assert len(acked) >= 40 and lost == [], f"{len(lost)} of {len(acked)} acknowledged writes lost"


KILLED_RESTORE = """
    import sys, time
    from mnemoscope.store.files.backup import restore
    def step(status, remaining, total):
        print("writing", flush=True)
        time.sleep(60)
    restore(sys.argv[1], sys.argv[2], confirm=True, progress=step)
"""


def test_a_restore_killed_mid_copy_leaves_the_old_database_whole(tmp_path):
    db = tmp_path / "work.db"
    with MemoryStore(db) as s:
        for i in range(300):
            s.remember(f"Snapshot memory {i} about boats and the sea, with a long tail " * 4)
    snap = backup(db).path
    with MemoryStore(db) as s:
        s.remember("Written after the snapshot.")
    before = ids(db)
    proc = child(KILLED_RESTORE, db, snap)
    try:
        wait_line(proc, "writing")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    with MemoryStore(db) as s:
        assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert ids(db) == before
    [safety] = [p for p in snapshots(db) if p != snap]
    assert ids(safety) == before  # the replaced state was kept before the copy began


def test_a_planted_link_for_the_backup_folder_is_refused_and_links_inside_never_count(tmp_path):
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "work.db-backups").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(StoreError, match="is a link"):
        backup(db)
    assert list(elsewhere.iterdir()) == []
    # a folder given on purpose may be a link; a link inside it is never a snapshot to rotate
    real = backup(db, elsewhere).path
    bait = tmp_path / "precious.db"
    shutil.copy(real, bait)
    (elsewhere / "work.db-20000101T000000.000000Z.db").symlink_to(bait)
    for _ in range(3):
        backup(db, tmp_path / "work.db-backups", keep=1)
    assert bait.exists() and (elsewhere / "work.db-20000101T000000.000000Z.db").is_symlink()


def test_a_backup_folder_that_is_a_file_is_a_clear_refusal(tmp_path):
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    (tmp_path / "work.db-backups").write_text("not a folder")
    out = CliRunner().invoke(cli, ["backup", "--db", str(db)])
    assert out.exit_code == 1 and "it is a file, not a folder" in out.output and "Traceback" not in out.output
    assert (tmp_path / "work.db-backups").read_text() == "not a folder"


@needs_tmpfs
def test_a_full_disk_refuses_backup_and_restore_cleanly(tmp_path):
    proc = run_on_small_disk(tmp_path, """
        import os, sqlite3
        from mnemoscope.store import MemoryStore, StoreError
        from mnemoscope.store.files.backup import backup, restore
        disk = os.environ["DISK"]
        db = os.path.join(disk, "work.db")
        with MemoryStore(db) as s:
            for i in range(200):
                s.remember(f"memory {i} " + "about the sea " * 20)
        snap = backup(db).path
        with MemoryStore(db) as s:
            s.remember("after the snapshot")
        def rows():
            c = sqlite3.connect(db)
            try:
                return c.execute("SELECT count(*) FROM memories").fetchone()[0]
            finally:
                c.close()
        before = rows()
        fd = os.open(os.path.join(disk, "filler"), os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"0" * 4096)
        except OSError:
            os.close(fd)
        for name, call in (("backup", lambda: backup(db)), ("restore", lambda: restore(db, snap, confirm=True))):
            try:
                call()
                print(name, "NO ERROR")
            except StoreError as e:
                print(name, "ERROR", e)
        partials = [f for f in os.listdir(os.path.join(disk, "work.db-backups")) if f.endswith(".partial")]
        os.remove(os.path.join(disk, "filler"))  # the person frees space: the database is as it was
        print("ROWS", before, rows(), "PARTIALS", len(partials))
    """, size="6m")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "backup ERROR" in out and "restore ERROR" in out, out
    assert "No space left" in out or "full" in out, out
    rows = out.split("ROWS ")[1].split()
    assert rows[0] == rows[1] and rows[3] == "0", out


def test_cli_backup_list_as_json_names_both_kinds(tmp_path):
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    backup(db)
    out = CliRunner().invoke(cli, ["backup", "--db", str(db), "--list", "--json"])
    data = json.loads(out.output)
    assert len(data["snapshots"]) == 1 and data["older_layout"] == []


def test_a_database_without_a_suffix_still_lists_its_snapshots_from_before_identities(tmp_path):
    db = _db(tmp_path / "work", "Ana plays the cello.")
    legacy = tmp_path / "work-backups" / "work-20200101T000000.000000Z.db"
    first = backup(db).path
    assert first.parent == legacy.parent  # the same folder as before for a name without a suffix
    shutil.copy(first, legacy)
    with sqlite3.connect(legacy) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'database_id'")
    conn.close()
    backup(db, keep=1)
    assert legacy.exists() and older_snapshots(db) == [legacy] and legacy not in snapshots(db)


HOLDS_THE_WRITE_LOCK = """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO meta (key, value) VALUES ('busy', 'yes')")
    print("holding", flush=True)
    time.sleep(60)
"""


def test_a_restore_that_cannot_get_the_write_lock_replaces_nothing_and_says_so(tmp_path, monkeypatch):
    from mnemoscope.store.files import backup as module

    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    snap = backup(db).path
    with MemoryStore(db) as s:
        s.remember("Written after the snapshot.")
    before = ids(db)
    monkeypatch.setattr(module, "_BUSY_S", 0.5)
    proc = child(HOLDS_THE_WRITE_LOCK, db)
    try:
        wait_line(proc, "holding")
        with pytest.raises(StoreError, match="nothing was replaced"):
            restore(db, snap, confirm=True)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert ids(db) == before and snapshots(db) == [snap]


def test_a_lock_file_planted_as_a_link_neither_truncates_its_target_nor_is_followed(tmp_path):
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    folder = tmp_path / "work.db-backups"
    folder.mkdir()
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    (folder / ".work.db.lock").symlink_to(victim)
    with pytest.raises(StoreError, match="is a link"):
        backup(db)
    assert victim.read_text() == "keep me"


def _tree(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_listing_snapshots_writes_nothing_not_even_a_wal_beside_the_database(tmp_path):
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    backup(db)
    before = _tree(tmp_path)
    (tmp_path / "work.db-wal").write_bytes(b"")  # the check sees a planted file…
    assert _tree(tmp_path) != before
    (tmp_path / "work.db-wal").unlink()
    assert _tree(tmp_path) == before  # …and its removal
    snapshots(db)
    older_snapshots(db)
    database_id(db)
    assert _tree(tmp_path) == before
    out = CliRunner().invoke(cli, ["backup", "--db", str(db), "--list"])
    assert out.exit_code == 0
    assert _tree(tmp_path) == before


def test_the_journal_a_killed_safety_snapshot_leaves_is_removed_by_the_next_backup(tmp_path):
    """A restore's safety snapshot is written through a store, whose rollback journal sits
    beside it: a kill then left ``….db.partial-journal``, which no backup listed or removed."""
    db = _db(tmp_path / "work.db", "Ana plays the cello.")
    folder = tmp_path / "work.db-backups"
    folder.mkdir()
    left = [folder / "work.db-20260101T000000.000000Z.db.partial", folder / "work.db-20260101T000000.000000Z.db.partial-journal"]
    for p in left:
        p.write_bytes(b"x" * 512)
    out = CliRunner().invoke(cli, ["backup", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert left[1].name in out.output and not [p for p in left if p.exists()]
    assert len(snapshots(db)) == 1
