"""Opening a database file: check it first without writing (not a database, another
program's, corrupt, newer), connect read-write or read-only, and say in a sentence a
user can act on what an SQLite or OS error means."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import DatabaseRefused, NotPlainFile, StoreError
from .schema import APPLICATION_ID, KNOWN_MIGRATIONS, MIGRATION_SET, SCHEMA_VERSION

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000
# SQLite's page cache, per connection. Reading, SQLite's own default (2 MiB): reads scan (the
# window reads every memory, recall every vector) and the file is in the system's cache
# anyway; a cache as big as a write's kept up to 64 MiB of pages for the life of the
# connection, the window's included (tests/perf/window_memory.py). While a write transaction
# is open, 64 MiB: a 100,000-memory tick stays in memory instead of spilling to the -wal.
READ_CACHE_KIB = 2048
WRITE_CACHE_KIB = 65536


def sqlite_error(path: str, exc: BaseException) -> StoreError:
    """A sentence a user can act on for an SQLite or OS error met while using ``path``."""
    if isinstance(exc, OSError):
        return StoreError(f"cannot use {path}: {exc.strerror or exc}")
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        return StoreError(f"{path} is read-only here; nothing was written. Copy it somewhere you may write "
                          "to change it")
    if "full" in low:
        return StoreError(f"the disk holding {path} is full (or the database reached its size limit); "
                          "nothing was written. Free some space and try again")
    if "locked" in low or "busy" in low:
        return StoreError(f"the database {path} is busy (another program is writing); try again: {text}")
    if "disk i/o" in low:
        return StoreError(f"reading or writing {path} failed at the disk (disk I/O error); check the drive "
                          "and try again. Nothing was half-written")
    if "malformed" in low or "not a database" in low:
        return StoreError(f"{path} is damaged ({text}); restore it from a backup")
    return StoreError(f"the database {path} failed ({text}); nothing was half-written")


def open_connection(path: str, *, create: bool, read_only: bool) -> tuple[sqlite3.Connection, bool]:
    """A connection to the database at ``path`` (checked first, without writing) and
    whether it is read-only: asked for, or a file or folder we may not write."""
    if path == ":memory:":
        return _configure(sqlite3.connect(path, isolation_level=None, check_same_thread=False)), False
    exists = os.path.exists(path)
    if not exists:
        if read_only or not create:
            raise DatabaseRefused(path, "missing", f"{path} does not exist")
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise DatabaseRefused(path, "unreadable", f"cannot create {path}: its folder does not exist")
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        return _configure(conn), False
    folder = os.path.dirname(os.path.abspath(path))
    read_only = read_only or not os.access(path, os.W_OK) or not os.access(folder, os.W_OK)
    check_file(path)
    try:
        if read_only:
            conn = _connect_read_only(path)
        else:
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        return _configure(conn), read_only
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(path, "unreadable", f"cannot open {path}: {exc}") from None


def _connect_read_only(path: str) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri()
    conn = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        # A WAL database in a folder we may not write: SQLite cannot make the shared-memory
        # file it needs, but nobody can be writing it either, so read it as it lies.
        conn.close()
        return sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None, check_same_thread=False)


def _configure(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA cache_size = -{READ_CACHE_KIB}")  # raised while writing: Tables.write
    return conn


def open_plain(path: str | os.PathLike, *, follow: bool = True) -> BinaryIO:
    """``path`` open for reading bytes, when it is a plain file; else :class:`NotPlainFile`
    (OSError when it cannot be opened). Nothing waits: the open is non-blocking (a FIFO
    waits for a writer, a device never ends) and what is not a plain file is refused before
    a byte is read. With ``follow=False`` a symbolic link is refused, by the kernel too
    (O_NOFOLLOW), so a link swapped in after the check is not read either."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise NotPlainFile(f"{path} is a link", "a link")
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:
            raise NotPlainFile(f"{path} is a link", "a link") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = ("a folder" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device")
        raise NotPlainFile(f"{path} is {what}, not a plain file", what)
    return os.fdopen(fd, "rb")


def _kind_of_file(header: bytes) -> str:
    text = all(32 <= b < 127 or b in b"\t\r\n" for b in header)
    return "it looks like a text file" if text else "its first bytes are not the SQLite header"


def check_file(path: str) -> None:
    """Refuse, without writing, a file that is not a database, is another program's, is
    corrupt, or is newer. Refusing leaves no ``-wal`` or ``-shm`` file behind."""
    try:
        with open_plain(path) as fh:
            header = fh.read(100)
    except NotPlainFile as exc:
        raise DatabaseRefused(path, "not_a_database", f"{path} is not a plain file ({exc.what}); open a "
                              "Mnemoscope database or create a new one with File › New") from None
    except OSError as exc:
        raise DatabaseRefused(path, "unreadable", f"cannot read {path}: {exc.strerror or exc}") from None
    if not header:
        return  # an empty file is an empty database
    if header[:16] != SQLITE_HEADER:
        raise DatabaseRefused(path, "not_a_database",
                              f"{path} is not a SQLite database ({_kind_of_file(header[:16])}); "
                              "open a Mnemoscope database or create a new one with File › New")
    # immutable=1: read the file as it lies, without the WAL machinery that would create
    # -wal and -shm files beside it (and leave them there when the file is refused). When
    # a -wal with writes in it is already there (another program has the file open, or
    # crashed), those writes count: read through it.
    wal = path + "-wal"
    pending = os.path.exists(wal) and os.path.getsize(wal) > 0
    uri = Path(path).resolve().as_uri() + ("?mode=ro" if pending else "?mode=ro&immutable=1")
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(path, "unreadable", f"cannot open {path}: {exc}") from None
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        user_version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id not in (0, APPLICATION_ID) or (not tables and user_version):
            raise DatabaseRefused(path, "not_a_database",
                                  f"{path} belongs to another program (SQLite application id {app_id}, user "
                                  f"version {user_version}); it was left untouched")
        if not tables:
            return
        if "_sqlite_migrations" not in tables or "meta" not in tables:
            raise DatabaseRefused(path, "not_a_database",
                                  f"{path} is a SQLite database but not a Mnemoscope one (tables: "
                                  f"{', '.join(sorted(tables)[:6])}); it was left untouched")
        applied = {r[0] for r in conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = ?", (MIGRATION_SET,))}
        version_row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(version_row[0]) if version_row and str(version_row[0]).isdigit() else 0
        unknown = applied - KNOWN_MIGRATIONS
        if unknown or version > SCHEMA_VERSION:
            raise DatabaseRefused(path, "newer_version",
                                  f"{path} was written by a newer Mnemoscope (schema version {version}, "
                                  f"this one reads up to {SCHEMA_VERSION}); upgrade Mnemoscope to open it")
        conn.execute("SELECT count(*) FROM memories").fetchone()
        quick = conn.execute("PRAGMA quick_check(1)").fetchone()
        if quick and quick[0] != "ok":
            raise DatabaseRefused(path, "corrupt", f"{path} is corrupt ({quick[0]}); restore it from a backup")
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(path, "corrupt",
                              f"{path} is corrupt or not a database ({exc}); restore it from a backup") from None
    finally:
        conn.close()


def write_whole(path: str | os.PathLike, data: bytes) -> None:
    """Put ``data`` at ``path`` whole or not at all, never through a link: written to a new
    file beside it (created exclusively, without following a link, so a link planted under
    any name there is never written through), flushed to the disk, then renamed over
    ``path``. A ``path`` that is a link, a folder or anything but a plain file is refused.
    A full disk or a kill midway leaves ``path`` as it was (the new file is removed; after
    a kill, a hidden ``.NAME.*.tmp`` may stay beside it). An existing file keeps its
    permissions. Raises :class:`StoreError` saying what was wrong."""
    import secrets

    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    if not os.path.isdir(folder):  # a link above the file is the person's own: followed
        raise StoreError(f"cannot write {path}: the folder {folder} does not exist")
    at = hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY) if at else None
    nofollow = getattr(os, "O_NOFOLLOW", 0)

    def where(n: str) -> str:
        return n if dir_fd is not None else os.path.join(folder, n)

    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    made = False
    try:
        try:
            st = os.stat(where(name), dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise StoreError(f"cannot write {path}: it is a link; Mnemoscope never writes through a link "
                             "(remove it, or name the file it points to)")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise StoreError(f"cannot write {path}: it is {'a folder' if stat.S_ISDIR(st.st_mode) else 'not a plain file'}")
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o644
        fd = os.open(where(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow | getattr(os, "O_BINARY", 0),
                     mode, dir_fd=dir_fd)
        made = True
        with os.fdopen(fd, "wb") as fh:
            if st is not None and hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)  # the umask does not take an existing file's bits away
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(where(tmp), where(name), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        made = False
        if dir_fd is not None:
            os.fsync(dir_fd)  # the rename itself survives a power cut
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if made:
            with contextlib.suppress(OSError):
                os.unlink(where(tmp), dir_fd=dir_fd)
        if dir_fd is not None:
            os.close(dir_fd)
