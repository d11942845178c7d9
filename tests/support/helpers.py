"""What several test files share. Test files import it by name (pytest puts tests/ on sys.path)."""

import hashlib
import os
from contextlib import contextmanager

# The -shm file (the WAL index) starts with two copies of a 48-byte header, then 40 bytes of
# checkpoint information: nBackfill, the five read marks, the lock bytes, nBackfillAttempted.
WAL_INDEX_HEADER = 96
CHECKPOINT_INFO_END = 136


class Written(AssertionError):
    """A database file or one beside it changed where nothing was to be written."""


def fingerprint(path):
    """Each file beside ``path`` whose name starts with its name (the database, its -wal,
    -shm and -journal, anything else SQLite or we would put there), by a hash of what a
    write changes.

    In WAL mode a commit leaves the main file as it was (until a checkpoint) and appends
    frames to -wal, so hashing the .db alone misses it. The -shm file is not hashed whole:
    a pure read changes it too. A reader that finds no read mark equal to the WAL's last
    frame writes that frame number into one of the five read-mark slots of the checkpoint
    information (bytes 96-136; SQLite 3.40, found by diffing -shm around a SELECT from a
    second connection: byte 104, aReadMark[1], changed). A commit rewrites the two header
    copies (bytes 0-96: change counter, last frame, page count, checksums, salts) and the
    hash tables after byte 136; a checkpoint moves pages into the main file or, to restart
    or truncate the WAL, rewrites the header's salts. So -shm counts by everything but
    bytes 96-136, and no write escapes: it changes the main file, the -wal, or the -shm
    header.

    A PostgreSQL database (a ``postgresql://`` URL) counts by the content of each table and
    the position of each sequence: a write that leaves no row changed still moves one."""
    if str(path).startswith("postgresql://"):
        return _pg_fingerprint(str(path))
    folder, name = os.path.split(os.path.abspath(path))
    found = {}
    for sibling in sorted(os.listdir(folder)):
        if not sibling.startswith(name):
            continue
        with open(os.path.join(folder, sibling), "rb") as fh:
            data = fh.read()
        if sibling == name + "-shm":
            data = data[:WAL_INDEX_HEADER] + data[CHECKPOINT_INFO_END:]
        found[sibling] = hashlib.sha256(data).hexdigest()
    return found


def _pg_fingerprint(url):
    import psycopg
    from mnemoscope.store.backends.targets import parse_url

    found = {}
    with psycopg.connect(autocommit=True, **parse_url(url)) as conn:
        for (table,) in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                     "current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name").fetchall():
            rows = conn.execute(f'SELECT t::text FROM "{table}" t ORDER BY 1').fetchall()
            found[table] = hashlib.sha256("\n".join(r[0] for r in rows).encode()).hexdigest()
        for (seq,) in conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema()"):
            found[seq] = str(conn.execute(f'SELECT last_value FROM "{seq}"').fetchone()[0])
    return found


def changes(before, after):
    """What differs between two fingerprints, in words."""
    said = [f"{n} appeared" for n in after if n not in before]
    said += [f"{n} disappeared" for n in before if n not in after]
    said += [f"{n} changed" for n in before if n in after and before[n] != after[n]]
    return said


@contextmanager
def unwritten(path):
    """Fail with :class:`Written` when the block changes the database at ``path`` or a file
    beside it, or leaves a new one there (see :func:`fingerprint`)."""
    before = fingerprint(path)
    yield
    said = changes(before, fingerprint(path))
    if said:
        raise Written(f"{os.path.basename(path)} was written: {', '.join(said)}")


@contextmanager
def unwritten_unless(planted, path):
    """:func:`unwritten`, or, for a test's planted-write twin, the proof that it catches one:
    with ``planted`` the block must end in :class:`Written` (an ordinary failed assert in
    the block still fails the test)."""
    if not planted:
        with unwritten(path):
            yield
        return
    try:
        with unwritten(path):
            yield
    except Written:
        return
    raise AssertionError(f"a write to {os.path.basename(path)} was planted and unwritten() did not see it")


# The parameter a looking-never-writes test takes to get its twin with a planted write.
PLANTED = {"argnames": "planted", "argvalues": [False, True], "ids": ["looking", "planted-write"]}


def plant_write(store):
    """A real write through the store, as an agent's ``remember`` does."""
    store.remember("A planted memory: the looking-never-writes check must see it.", dedupe=False)


def settle(qtbot, window, timeout=2000):
    """Let what the last action set going finish, as a person waits for the window to be
    still: queued events, the preview's debounced recompile, the map's animation."""
    from PySide6.QtWidgets import QApplication

    for _ in range(2):  # what handling the posted events posts in turn (a layout, a repaint)
        QApplication.sendPostedEvents()
        QApplication.processEvents()
    timers = (window.preview._recompile_timer, window.preview._messages_timer, window.map._anim_timer)
    qtbot.waitUntil(lambda: not any(t.isActive() for t in timers), timeout=timeout)


def resize(qtbot, window, width, height):
    """Resize the window, as a person drags its corner, and wait until it has that size
    and its layout has settled."""
    window.resize(width, height)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (width, height))
    settle(qtbot, window)


@contextmanager
def closing_window(window):
    """Close the main window when the block ends, as a person quits: the session's
    connections closed, nothing left for Qt to paint. Closed here rather than by qtbot
    (which closes before a fixture's teardown runs): with an edit left unsaved, closing
    would wait on the "save your edit?" question, so the edit is let go first."""
    try:
        yield window
    finally:
        window.editor.dirty = False
        window.close()
        window.session.close()
        window.deleteLater()
