"""Snapshots of a memory database, and putting one back.

A snapshot is taken through SQLite's online backup API from a connection of its own, in
one step: SQLite copies the pages as they are at one instant (a read transaction), so an
agent that keeps writing in WAL mode neither blocks the backup nor tears it. The copy is
written beside its final name, checked with ``PRAGMA integrity_check`` and only then
renamed, so a snapshot that exists is whole; a ``.partial`` a killed backup left is
removed by the next one (a lock file in the folder says no backup is still writing it).

Snapshots belong to one database: they go to ``<its file name>-backups`` and are named
``<its file name>-<UTC time>.db``, and each carries the database's id (``database_id``
in its meta table, recorded by the first backup), which listing, rotation and restoring
check, so two databases of one name or one stem never touch each other's snapshots.
Rotation keeps the newest N. The ``<stem>-backups`` folder of earlier versions is
listed, never rotated.

Restoring never writes until the caller confirms: :func:`compare` opens both files
read-only and says what differs; :func:`restore` copies the chosen snapshot into the
live database through the same backup API (so other open connections see the change),
and snapshots the replaced state once the copy holds the write lock, so no write that
was acknowledged is lost.
"""
from __future__ import annotations

import os
import re
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from ..backends.targets import on_server, parse_url, refuse_on_server
from ..model.config import KINDS
from ..model.errors import StoreError, ValidationError
from ..model.memory import LAYERS
from .safe_folder import LinkRefused, is_link, lstat_or_none

if TYPE_CHECKING:
    from ..store import MemoryStore

DEFAULT_KEEP = 10
# What a PostgreSQL memory's snapshots need, and how one is restored (said by the doors too).
NO_FOLDER_ON_SERVER = ("a PostgreSQL memory has no file to keep its snapshots beside: name the folder with --to DIR; "
                         "nothing was written")
RESTORE_ON_SERVER = "copy the snapshot into a new, empty database with mnemoscope copy SNAPSHOT URL"
_STAMP = "%Y%m%dT%H%M%S"
_ID_KEY = "database_id"
_BUSY_S = 10  # how long a backup or restore waits for a writer to finish, as the store does


@dataclass
class BackupResult:
    path: Path
    removed: list[Path] = field(default_factory=list)  # older snapshots rotation deleted
    cleaned: list[Path] = field(default_factory=list)  # unfinished snapshots an interrupted backup left
    older_layout: list[Path] = field(default_factory=list)  # snapshots in the folder of before 0.x, left alone
@dataclass
class Side:
    """What one database holds, for a comparison."""

    path: str
    memories: int
    layers: dict[str, int]
    kinds: dict[str, int]


@dataclass
class Comparison:
    current: Side
    snapshot: Side
    only_current: list[tuple[str, str]]   # (id, text) of memories the snapshot lacks
    only_snapshot: list[tuple[str, str]]  # (id, text) of memories the current file lacks
    changed: list[str]                    # ids in both whose text or fields differ

    @property
    def identical(self) -> bool:
        return not (self.only_current or self.only_snapshot or self.changed)

    def summary(self) -> str:
        if self.identical:
            return "the snapshot holds the same memories as the current database"
        n = len(self.only_current)
        return (f"{n} {'memory' if n == 1 else 'memories'} only in the current database, "
                f"{len(self.only_snapshot)} only in the snapshot, {len(self.changed)} changed")


@dataclass
class RestoreResult:
    comparison: Comparison
    safety_snapshot: Path  # the replaced file, kept as a snapshot


def _db_path(source: MemoryStore | str | os.PathLike) -> str:
    path = getattr(source, "path", source)
    path = os.fspath(path)
    if path == ":memory:":
        raise StoreError("an in-memory database has no file to back up")
    if not os.path.isfile(path):
        raise StoreError(f"cannot back up {path}: no such database file")
    return path


def default_backup_dir(db_path: str | os.PathLike) -> Path:
    """Where snapshots of ``db_path`` go unless told otherwise: ``<its whole file name>-backups``
    beside it, so ``work.db`` and ``work.sqlite`` never share a folder."""
    p = Path(db_path).resolve()
    return p.parent / f"{p.name}-backups"


def older_backup_dir(db_path: str | os.PathLike) -> Path:
    """The folder earlier versions used, ``<stem>-backups``: shared by every database of that stem."""
    p = Path(db_path).resolve()
    return p.parent / f"{p.stem}-backups"


def _snapshot_re(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name) + r"-\d{8}T\d{6}\.\d{6}Z(?:-\d+)?\.db")


def database_id(path: str | os.PathLike) -> str | None:
    """The identity a database records in its meta table (and every snapshot of it carries);
    None for a file that has none yet or cannot be read. Reads only."""
    if not os.path.isfile(path):
        return None
    # Read a file nobody has open as it lies (immutable), so looking leaves no -wal or -shm
    # beside it; one that is open (its -shm is there) through the WAL, for its latest writes.
    shm = os.path.exists(f"{os.fspath(path)}-shm")
    uri = Path(path).resolve().as_uri() + ("?mode=ro" if shm else "?mode=ro&immutable=1")
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_S)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None
    return row[0] if row else None


def _ensure_id(path: str) -> str | None:
    """The database's identity, recorded first if it has none (one small write). None when
    the file cannot be written (a read-only database is still backed up, matched by name)."""
    found = database_id(path)
    if found is not None:
        return found
    try:
        conn = sqlite3.connect(path, timeout=_BUSY_S, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_S * 1000}")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (_ID_KEY, uuid.uuid4().hex))
            conn.execute("COMMIT")
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None
    return database_id(path)


def _plain_files(folder: Path, pattern: re.Pattern[str]) -> list[Path]:
    """Files in ``folder`` whose name fits ``pattern``; links are never taken for snapshots."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name) and not is_link(os.lstat(p)))


def snapshots(db_path: str | os.PathLike, to_dir: str | os.PathLike | None = None) -> list[Path]:
    """Snapshots of ``db_path`` in ``to_dir`` (default: beside it), oldest first: the files
    named for its whole file name that carry its identity. Reads only."""
    folder = Path(to_dir) if to_dir is not None else default_backup_dir(db_path)
    mine = database_id(db_path)
    return [p for p in _plain_files(folder, _snapshot_re(Path(db_path).name)) if database_id(p) == mine]


def older_snapshots(db_path: str | os.PathLike) -> list[Path]:
    """Snapshots earlier versions left in :func:`older_backup_dir`: they carry no identity, so
    they may be of ``db_path`` or of another database of the same stem. Never rotated."""
    folder = older_backup_dir(db_path)
    found = _plain_files(folder, _snapshot_re(Path(db_path).stem))
    if folder == default_backup_dir(db_path):  # a file name without a suffix: one folder for both
        mine = database_id(db_path)
        return [p for p in found if database_id(p) is None and mine is not None]
    return found


def _check_keep(keep: object) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValidationError("keep", f"must be a whole number of snapshots, at least 1; got {keep!r}")
    return keep


def _connect_ro(path: str | os.PathLike) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=10)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def _folder(path: str, to_dir: str | os.PathLike | None) -> Path:
    """The backup folder, made if missing. The default one may not be a link (someone could
    plant one to have the snapshots written elsewhere); a folder given on purpose may."""
    folder = Path(to_dir) if to_dir is not None else default_backup_dir(path)
    st = lstat_or_none(folder)
    if st is not None and to_dir is None and is_link(st):
        raise StoreError(f"the backup folder {folder} is a link; Mnemoscope does not follow a link it did not "
                         "make. Give the folder it points to with --to if you mean it")
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"cannot back up into {folder}: it is a file, not a folder. Move it away or choose "
                         "another folder with --to")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the backup folder {folder}: {exc.strerror or exc}") from None
    return folder


def _snapshot_into(fill, what: str, target: Path, damaged: str = "") -> None:
    """Write a snapshot of ``what`` to ``target`` through ``<target>.partial``: ``fill(partial)``
    writes the file, which is then made one self-contained file, checked, and only then
    renamed; whatever a failure leaves of the partial file is removed. ``damaged`` is added
    to the message of a failed check."""
    partial = target.with_name(target.name + ".partial")
    try:
        fill(partial)
        dst = sqlite3.connect(partial)
        try:
            dst.execute("PRAGMA journal_mode = DELETE")  # a snapshot is one self-contained file
            problems = [r[0] for r in dst.execute("PRAGMA integrity_check")]
        finally:
            dst.close()
        if problems != ["ok"]:
            raise StoreError(f"the snapshot of {what} failed its integrity check ({problems[0]}){damaged}")
        os.replace(partial, target)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot back up {what} to {target.parent}: {exc}") from None
    except OSError as exc:
        raise StoreError(f"cannot write the snapshot {target}: {exc.strerror or exc}") from None
    finally:
        for leftover in (partial, *(Path(f"{partial}-{end}") for end in ("journal", "wal", "shm"))):
            if os.path.lexists(leftover):
                leftover.unlink()


def _copy_pages(src: sqlite3.Connection, progress=None):
    """A ``fill`` for :func:`_snapshot_into`: SQLite's backup API, in one step (the pages of
    a single read transaction)."""
    def fill(partial: Path) -> None:
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst, progress=progress)
        finally:
            dst.close()

    return fill


def _new_target(folder: Path, name: str) -> Path:
    now = time.time()
    stamp = f"{name}-{datetime.fromtimestamp(now, UTC).strftime(_STAMP)}.{int(now % 1 * 1e6):06d}Z"
    target = folder / f"{stamp}.db"
    n = 1
    while os.path.lexists(target):
        target = folder / f"{stamp}-{n}.db"
        n += 1
    return target


def _folder_lock(folder: Path, name: str) -> FileLock:
    """Held by every backup of the database ``name`` into ``folder``: while it is held, an
    unfinished snapshot there is one a killed backup left, and can go."""
    path = folder / f".{name}.lock"
    st = lstat_or_none(path)
    if st is not None and is_link(st):
        raise LinkRefused(path)
    return FileLock(path, timeout=_BUSY_S)


@contextmanager
def _holding(folder: Path, name: str) -> Iterator[list[Path]]:
    """Hold the folder's lock for a backup of ``name``; yields the unfinished snapshots a
    killed backup left there, which are removed first."""
    try:
        lock = _folder_lock(folder, name)
        lock.acquire()
    except Timeout:
        raise StoreError(f"cannot back up into {folder}: another backup of {name} has been running there for "
                         f"{_BUSY_S} s; try again when it is done") from None
    except OSError as exc:
        raise StoreError(f"cannot back up into {folder}: {exc.strerror or exc}") from None
    try:
        # A snapshot written through a store (a restore's safety snapshot) has a rollback
        # journal beside it while it is written: a kill then leaves ``….partial-journal`` too.
        cleaned = _plain_files(folder, re.compile(_snapshot_re(name).pattern + r"\.partial(?:-journal|-wal|-shm)?"))
        for p in cleaned:
            p.unlink()
        yield cleaned
    finally:
        lock.release()


def backup(source: MemoryStore | str | os.PathLike, to_dir: str | os.PathLike | None = None,
           keep: int = DEFAULT_KEEP, *, _protect: Path | None = None, progress=None) -> BackupResult:
    """Snapshot the database ``source`` (a store or a path) into ``to_dir`` and keep the
    newest ``keep`` snapshots of it there (only its own: named for its file and carrying its
    identity). Consistent while other programs write. An unfinished snapshot a killed backup
    left is removed and listed in ``cleaned``. ``progress(status, remaining, total)`` is called
    once the pages are copied, before the snapshot is checked and renamed."""
    keep = _check_keep(keep)
    if on_server(source):
        return _backup_server(source, to_dir, keep)
    path = _db_path(source)
    name = Path(path).name
    folder = _folder(path, to_dir)
    _ensure_id(path)
    with _holding(folder, name) as cleaned:
        target = _new_target(folder, name)
        try:
            src = sqlite3.connect(path, timeout=_BUSY_S)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot back up {path}: {exc}") from None
        try:
            _snapshot_into(_copy_pages(src, progress), path, target, "; the database itself may be damaged")
        finally:
            src.close()
        removed = [p for p in snapshots(path, folder)[:-keep] if p != target and p != _protect]
        for p in removed:
            p.unlink()
    older = older_snapshots(path) if to_dir is None else []
    return BackupResult(target, removed, cleaned, older)


def server_snapshot_name(url: str) -> str:
    """The name a PostgreSQL memory's snapshots are filed under: its database's name."""
    return parse_url(url)["dbname"]


def _server_id(store: MemoryStore) -> str | None:
    """The PostgreSQL memory's identity, recorded first if it has none (None when it is
    open read-only and has none yet: its snapshots are then matched by name)."""
    row = store.conn.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
    if row is None and not store.read_only:
        with store.tables.write():
            store.conn.execute(store.tables.sql.insert_if_absent("meta", ("key", "value")), (_ID_KEY, uuid.uuid4().hex))
        row = store.conn.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
    return row[0] if row else None


def server_snapshots(store: MemoryStore, to_dir: str | os.PathLike) -> list[Path]:
    """Snapshots of the PostgreSQL memory ``store`` in ``to_dir``, oldest first. Reads only."""
    row = store.conn.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
    mine = row[0] if row else None
    name = server_snapshot_name(store.path)
    return [p for p in _plain_files(Path(to_dir), _snapshot_re(name)) if database_id(p) == mine]


def _backup_server(source: MemoryStore | str, to_dir: str | os.PathLike | None, keep: int) -> BackupResult:
    """A PostgreSQL memory's snapshot: a logical copy (store/files/copying.py) into an SQLite file,
    read in one REPEATABLE READ transaction, so it is the memory as it stood at one instant
    while agents go on writing. The file is a Mnemoscope database like any other (open it,
    compare with it, ``mnemoscope copy`` it into a new PostgreSQL database to restore) and
    carries the memory's identity, so rotation keeps to its own snapshots."""
    from ..store import MemoryStore
    from .copying import copy_memory

    if to_dir is None:
        raise StoreError(NO_FOLDER_ON_SERVER)
    if isinstance(source, str):
        with MemoryStore(source) as opened:
            return _backup_server(opened, to_dir, keep)
    url = source.path
    name = server_snapshot_name(url)
    folder = _folder(url, to_dir)
    mine = _server_id(source)

    def fill(partial: Path) -> None:
        with MemoryStore(partial) as snapshot:
            with source.tables.reading(), source.tables.backend.as_of_one_instant():
                copy_memory(source, snapshot)
            if mine is not None:
                with snapshot.tables.write():
                    snapshot.tables.set_meta(_ID_KEY, mine)

    with _holding(folder, name) as cleaned:
        target = _new_target(folder, name)
        _snapshot_into(fill, url, target)
        removed = [p for p in server_snapshots(source, folder)[:-keep] if p != target]
        for p in removed:
            p.unlink()
    return BackupResult(target, removed, cleaned, [])


def _side(conn: sqlite3.Connection, path: str) -> Side:
    layers = dict.fromkeys(LAYERS, 0)
    # A snapshot taken before schema version 9 keeps the layer on the memories table.
    state = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_state'").fetchone()
    layers.update(dict(conn.execute(f"SELECT layer, count(*) FROM {'memory_state' if state else 'memories'} "
                                    "GROUP BY layer")))
    kinds = dict.fromkeys(KINDS, 0)
    kinds.update(dict(conn.execute("SELECT kind, count(*) FROM memories GROUP BY kind")))
    return Side(path, sum(layers.values()), layers, kinds)


def compare(current: str | os.PathLike, snapshot: str | os.PathLike) -> Comparison:
    """What differs between the database ``current`` and ``snapshot``; writes nothing."""
    from ..backends.sqlite_files import check_file

    refuse_on_server(current, "comparing with a snapshot in place", RESTORE_ON_SERVER)

    for p in (current, snapshot):
        if not os.path.isfile(p):
            raise StoreError(f"cannot compare: {p} does not exist")
    check_file(os.fspath(snapshot))
    a, b = _connect_ro(current), _connect_ro(snapshot)
    try:
        cols = "id, text, kind, importance, who, topic, scope, sensitivity, tags, pinned, updated_at"
        rows_a = {r[0]: r for r in a.execute(f"SELECT {cols} FROM memories")}
        rows_b = {r[0]: r for r in b.execute(f"SELECT {cols} FROM memories")}
        side_a, side_b = _side(a, os.fspath(current)), _side(b, os.fspath(snapshot))
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read {snapshot} as a Mnemoscope database: {exc}") from None
    finally:
        a.close()
        b.close()
    return Comparison(
        side_a, side_b,
        only_current=[(i, rows_a[i][1]) for i in sorted(rows_a.keys() - rows_b.keys())],
        only_snapshot=[(i, rows_b[i][1]) for i in sorted(rows_b.keys() - rows_a.keys())],
        changed=sorted(i for i in rows_a.keys() & rows_b.keys() if rows_a[i] != rows_b[i]),
    )


def refuse_in_place(current: str | os.PathLike) -> None:
    """Refuse, before anything is asked or written, to restore a snapshot in place into a
    database on a server (it is copied into a new one instead)."""
    refuse_on_server(current, "restoring a snapshot in place", RESTORE_ON_SERVER)


def restore(current: str | os.PathLike, snapshot: str | os.PathLike, *, confirm: bool,
            to_dir: str | os.PathLike | None = None, keep: int = DEFAULT_KEEP, progress=None) -> RestoreResult:
    """Replace the database ``current`` with ``snapshot``, only when ``confirm`` is true
    (otherwise raise, having written nothing). The current state is snapshotted first,
    into ``to_dir`` (default: beside the database), so the restore can be undone.

    Writers are held out from the snapshot of the replaced state to the end of the copy:
    the copy's first step takes the database's write lock, the replaced state is
    snapshotted (by a reader, which sees every committed write) while it is held, and the
    copy commits at its last step. So every write another program was told succeeded is
    in the snapshot of the replaced database or was made after, on the restored one; a
    writer that arrives meanwhile waits, and is told the database is busy if the restore
    outlasts its patience. Stopped at any point, the database is the old one or the new
    one whole. ``progress(status, remaining, total)`` is called after each step of the copy.
    A snapshot of another database (another identity) is refused."""
    refuse_in_place(current)
    comparison = compare(current, snapshot)
    if not confirm:
        raise StoreError("restoring replaces the current database; confirm it to go ahead "
                         f"({comparison.summary()})")
    keep = _check_keep(keep)
    mine, theirs = _ensure_id(os.fspath(current)), database_id(snapshot)
    if theirs is not None and mine is not None and theirs != mine:
        raise StoreError(f"{snapshot} is a snapshot of another database (its identity is {theirs}, {current}'s "
                         f"is {mine}); nothing was replaced. Restore it into the database it was taken of")
    src = _connect_ro(snapshot)
    safety: list[Path] = []
    deadline = time.monotonic() + _BUSY_S

    def step(status: int, remaining: int, total: int) -> None:
        if status in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):  # a writer holds the lock: SQLite retries forever
            if time.monotonic() > deadline:
                raise StoreError(f"cannot restore into {current}: another program has been writing it for "
                                 f"{_BUSY_S} s; nothing was replaced. Try again when it is done")
            return
        if not safety:  # this step took the write lock: nobody can commit until the copy does
            safety.append(backup(current, to_dir, keep, _protect=Path(snapshot).resolve()).path)
        if progress is not None:
            progress(status, remaining, total)

    try:
        pages = src.execute("PRAGMA page_count").fetchone()[0]
        if pages < 2:  # a copy done in one step would commit before the replaced state is kept
            raise StoreError(f"{snapshot} is not a Mnemoscope database (it has {pages} page); nothing was replaced")
        dst = sqlite3.connect(os.fspath(current), timeout=_BUSY_S, isolation_level=None)
        try:
            dst.execute(f"PRAGMA busy_timeout = {_BUSY_S * 1000}")
            src.backup(dst, pages=min(1024, pages - 1), progress=step, sleep=0.05)
            dst.execute("PRAGMA journal_mode = WAL")
            if mine is not None and theirs is None:  # a snapshot from before identities keeps this one's
                dst.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (_ID_KEY, mine))
        finally:
            dst.close()
    except sqlite3.DatabaseError as exc:
        kept = f"; the previous state is kept in {safety[0]}" if safety else "; nothing was replaced"
        raise StoreError(f"cannot restore {snapshot} into {current}: {exc}{kept}") from None
    finally:
        src.close()
    # A snapshot from an earlier Mnemoscope lacks later migrations: opening applies them.
    from ..store import MemoryStore

    MemoryStore(current).close()
    return RestoreResult(comparison, safety[0])


BULK_ADVANCE_DAYS = 30  # advancing the clock further than this snapshots first


def is_bulk_change(*, advance_days: float | None = None, import_policy: str | None = None) -> bool:
    """Whether a change a person starts (from the window or the command line) is a bulk
    one, snapshotted first: a clock advance of more than :data:`BULK_ADVANCE_DAYS`, or an
    import that overwrites memories."""
    return (advance_days or 0) > BULK_ADVANCE_DAYS or import_policy == "overwrite"


def snapshot_before_bulk_change(store: MemoryStore) -> Path | None:
    """The automatic snapshot taken before a bulk change (:func:`is_bulk_change`), into
    the default folder under the default rotation. None for an in-memory or not yet
    written store."""
    if store.path == ":memory:" or not os.path.isfile(store.path):
        return None
    return backup(store).path
