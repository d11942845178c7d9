"""Snapshots of a memory database, and putting one back.

A snapshot is taken through SQLite's online backup API from a connection of its own, in
one step: SQLite copies the pages as they are at one instant (a read transaction), so an
agent that keeps writing in WAL mode neither blocks the backup nor tears it. The copy is
written beside its final name, checked with ``PRAGMA integrity_check`` and only then
renamed, so a snapshot that exists is whole. Snapshots are named by the time they were
taken (``<database>-<UTC time>.db``) and rotation keeps the newest N.

Restoring never writes until the caller confirms: :func:`compare` opens both files
read-only and says what differs; :func:`restore` first snapshots the current file (so
the replaced state is a snapshot too), then copies the chosen snapshot into the live
database through the same backup API, so other open connections see the change.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .config import KINDS
from .errors import StoreError, ValidationError
from .model import LAYERS

if TYPE_CHECKING:
    from .store import MemoryStore

DEFAULT_KEEP = 10
_STAMP = "%Y%m%dT%H%M%S"


@dataclass
class BackupResult:
    path: Path
    removed: list[Path] = field(default_factory=list)  # older snapshots rotation deleted


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
    """Where snapshots of ``db_path`` go unless told otherwise: a folder beside it."""
    p = Path(db_path).resolve()
    return p.parent / f"{p.stem}-backups"


def _snapshot_re(stem: str) -> re.Pattern[str]:
    return re.compile(re.escape(stem) + r"-\d{8}T\d{6}\.\d{6}Z(?:-\d+)?\.db")


def snapshots(db_path: str | os.PathLike, to_dir: str | os.PathLike | None = None) -> list[Path]:
    """Snapshots of ``db_path`` in ``to_dir`` (default: beside it), oldest first."""
    folder = Path(to_dir) if to_dir is not None else default_backup_dir(db_path)
    if not folder.is_dir():
        return []
    pattern = _snapshot_re(Path(db_path).stem)
    return sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name))


def _check_keep(keep: object) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValidationError("keep", f"must be a whole number of snapshots, at least 1; got {keep!r}")
    return keep


def _connect_ro(path: str | os.PathLike) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=10)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def backup(source: MemoryStore | str | os.PathLike, to_dir: str | os.PathLike | None = None,
           keep: int = DEFAULT_KEEP, *, _protect: Path | None = None) -> BackupResult:
    """Snapshot the database ``source`` (a store or a path) into ``to_dir`` and keep the
    newest ``keep`` snapshots there. Consistent while other programs write."""
    keep = _check_keep(keep)
    path = _db_path(source)
    folder = Path(to_dir) if to_dir is not None else default_backup_dir(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the backup folder {folder}: {exc.strerror or exc}") from None
    now = time.time()
    stem = Path(path).stem
    name = f"{stem}-{datetime.fromtimestamp(now, UTC).strftime(_STAMP)}.{int(now % 1 * 1e6):06d}Z"
    target = folder / f"{name}.db"
    n = 1
    while target.exists():
        target = folder / f"{name}-{n}.db"
        n += 1
    partial = target.with_name(target.name + ".partial")
    try:
        src = sqlite3.connect(path, timeout=10)
        try:
            dst = sqlite3.connect(partial)
            try:
                src.backup(dst)  # one step: the pages of a single read transaction
                dst.execute("PRAGMA journal_mode = DELETE")  # a snapshot is one self-contained file
                problems = [r[0] for r in dst.execute("PRAGMA integrity_check")]
            finally:
                dst.close()
        finally:
            src.close()
        if problems != ["ok"]:
            raise StoreError(f"the snapshot of {path} failed its integrity check ({problems[0]}); "
                             "the database itself may be damaged")
        os.replace(partial, target)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot back up {path} to {folder}: {exc}") from None
    except OSError as exc:
        raise StoreError(f"cannot write the snapshot {target}: {exc.strerror or exc}") from None
    finally:
        if partial.exists():
            partial.unlink()
    removed = [p for p in snapshots(path, folder)[:-keep] if p != target and p != _protect]
    for p in removed:
        p.unlink()
    return BackupResult(target, removed)


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
    from .files import check_file

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


def restore(current: str | os.PathLike, snapshot: str | os.PathLike, *, confirm: bool,
            to_dir: str | os.PathLike | None = None, keep: int = DEFAULT_KEEP) -> RestoreResult:
    """Replace the database ``current`` with ``snapshot``, only when ``confirm`` is true
    (otherwise raise, having written nothing). The current state is snapshotted first,
    into ``to_dir`` (default: beside the database), so the restore can be undone."""
    comparison = compare(current, snapshot)
    if not confirm:
        raise StoreError("restoring replaces the current database; confirm it to go ahead "
                         f"({comparison.summary()})")
    keep = _check_keep(keep)
    safety = backup(current, to_dir, keep, _protect=Path(snapshot).resolve()).path
    src = _connect_ro(snapshot)
    try:
        dst = sqlite3.connect(os.fspath(current), timeout=10)
        try:
            dst.execute("PRAGMA busy_timeout = 10000")
            src.backup(dst)
            dst.execute("PRAGMA journal_mode = WAL")
        finally:
            dst.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot restore {snapshot} into {current}: {exc}; "
                         f"the previous state is kept in {safety}") from None
    finally:
        src.close()
    # A snapshot from an earlier Mnemoscope lacks later migrations: opening applies them.
    from .store import MemoryStore

    MemoryStore(current).close()
    return RestoreResult(comparison, safety)


BULK_ADVANCE_DAYS = 30  # advancing the clock further than this snapshots first


def snapshot_before_bulk_change(store: MemoryStore) -> Path | None:
    """The automatic snapshot taken before a bulk change a person starts (an import that
    overwrites, a clock advance of more than :data:`BULK_ADVANCE_DAYS`), into the default
    folder under the default rotation. None for an in-memory or not yet written store."""
    if store.path == ":memory:" or not os.path.isfile(store.path):
        return None
    return backup(store).path
