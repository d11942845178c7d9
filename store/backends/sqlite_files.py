"""Opening an SQLite database file: check it first without writing (not a database,
another program's, corrupt, newer), then connect read-write or read-only."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..files.plain import open_plain
from ..model.errors import DatabaseRefused, NotPlainFile
from ..schema.migrations import APPLICATION_ID, KNOWN_MIGRATIONS, MIGRATION_SET, SCHEMA_VERSION

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000
# SQLite's page cache, per connection. Reading, SQLite's own default (2 MiB): reads scan (the
# window reads every memory, recall every vector) and the file is in the system's cache
# anyway; a cache as big as a write's kept up to 64 MiB of pages for the life of the
# connection, the window's included (tests/perf/window_memory.py). While a write transaction
# is open, 64 MiB: a 100,000-memory tick stays in memory instead of spilling to the -wal.
READ_CACHE_KIB = 2048
WRITE_CACHE_KIB = 65536


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
    # A row an INSERT OR REPLACE replaces fires its delete triggers, so the vectors' counts
    # (store/schema/migrations.py's migration 14) see it go before the new one comes.
    conn.execute("PRAGMA recursive_triggers = ON")
    return conn


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
        # Every page is checked before a migration writes to the file. With none due nothing
        # is written on opening, and a damaged page met later is said as such (store/model/errors.py
        # database_error): the whole file is not read at every start (0.35 s warm, 1.75 s
        # cold at 100,000 memories: most of a fresh process's first recall, of `stats`, of an
        # agent's server starting).
        if applied != KNOWN_MIGRATIONS or version != SCHEMA_VERSION:
            quick = conn.execute("PRAGMA quick_check(1)").fetchone()
            if quick and quick[0] != "ok":
                raise DatabaseRefused(path, "corrupt", f"{path} is corrupt ({quick[0]}); restore it from a backup")
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(path, "corrupt",
                              f"{path} is corrupt or not a database ({exc}); restore it from a backup") from None
    finally:
        conn.close()
