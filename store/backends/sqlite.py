"""The SQLite backend: one file (or ``:memory:``), opened by store/backends/sqlite_files.py, migrated by
sqlite-utils' migrations (store/schema/migrations.py); the connection is sqlite3's own, untouched, so
a file stays byte-for-byte what it was until something is written."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np
from sqlite_utils import Database

from ..model.errors import DatabaseRefused, StoreError
from ..recall.shelves import as_params, shelve, shown
from ..recall.text import Prefix, Words
from ..schema.migrations import migrations, shelved_terms
from .sqlite_files import READ_CACHE_KIB, WRITE_CACHE_KIB, open_connection
from .statements import json_key, values


class SQLiteStatements:
    """SQLite's SQL where the engines differ (store/backends/__init__.py ``Statements``)."""

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str], *, source: str | None = None) -> str:
        """``INSERT OR REPLACE``: SQLite finds the key itself."""
        return f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) {source or values(columns)}"

    def insert_if_absent(self, table: str, columns: Sequence[str]) -> str:
        return f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) {values(columns)}"

    def insert(self, table: str, columns: Sequence[str], number: str) -> str:
        """The number is the cursor's ``lastrowid`` (RETURNING needs SQLite 3.35)."""
        return f"INSERT INTO {table} ({', '.join(columns)}) {values(columns)}"

    def text_search(self, columns: str, query: Words, where: str, params: Sequence[Any], *, limit: int,
                    pairs: Sequence[tuple[str, str]], state: bool = False,
                    ranked: bool = False) -> tuple[str, list[Any]]:
        """FTS5, ranked by its bm25, on the shelves of ``pairs`` (store/recall/shelves.py). CROSS
        JOIN keeps the full-text index as the outer loop: SQLite would otherwise walk every
        memory the rest allows and test each against it."""
        match = fts5_query(shelve(query, [self.shelf(*pair) for pair in pairs]))
        return (f"SELECT {columns} FROM memories_fts f CROSS JOIN memories m ON m.rowid = f.rowid "
                + ("CROSS JOIN memory_state s ON s.rowid = m.rowid " if state else "")
                + f"WHERE memories_fts MATCH ? AND {shown('m', len(pairs))}" + (f" AND {where}" if where else "")
                + (" ORDER BY f.rank" if ranked else "") + " LIMIT ?",
                [match, *as_params(pairs), *params, limit])

    @staticmethod
    def shelf(scope: str, sensitivity: str) -> str:
        """What the index puts before each term of a memory of ``scope`` and ``sensitivity``
        (store/schema/migrations.py ``shelved_terms``): both in hex, so that FTS5's tokenizer keeps the
        prefix and the term one token, and no pair's prefix is the start of another's."""
        return f"x{scope.encode().hex()}y{sensitivity.encode().hex()}z"

    def like(self, expr: str, pattern: str = "?", *, escape: str | None = None) -> str:
        """SQLite's LIKE ignores the case of ASCII letters."""
        return f"{expr} LIKE {pattern}" + (f" ESCAPE '{escape}'" if escape else "")

    def holds(self, expr: str) -> str:
        return f"instr({expr}, ?) > 0"

    def json_text(self, expr: str, key: str) -> str:
        return f"json_extract({expr}, '$.{json_key(key)}')"


def fts5_query(query: Words | Prefix | str) -> str:
    """``query`` in FTS5's syntax: each term a quoted phrase (its double quotes doubled)."""
    if isinstance(query, str):
        return '"' + query.replace('"', '""') + '"'
    if isinstance(query, Prefix):
        return fts5_query(query.text) + "*"
    return f" {'AND' if query.every else 'OR'} ".join(
        f"({fts5_query(p)})" if isinstance(p, Words) else fts5_query(p) for p in query.parts)


class SQLiteBackend:
    name = "sqlite"
    sql = SQLiteStatements()
    hears_other_writers = False  # the window polls data_version
    reads_beside_writes = False  # one connection: a read takes its turn

    def __init__(self, path: str, *, create: bool, read_only: bool) -> None:
        self.path = path
        self.conn, self.read_only = open_connection(path, create=create, read_only=read_only)
        # Writing is the moment to move a rollback-journal file to WAL: looking never writes.
        self._wal_checked = self.read_only or path == ":memory:"

    # -- opening ------------------------------------------------------------------------
    def migrate(self, write: Callable[[], Any]) -> None:
        db = Database(self.conn)
        if not migrations.pending(db):
            return
        if self.read_only:
            self.conn.close()
            raise DatabaseRefused(self.path, "unreadable",
                                  f"{self.path} was written by an older Mnemoscope and must be upgraded, "
                                  "but it is read-only here; open it once where it may be written")
        with write():
            migrations.apply(db)

    def prepare_vectors(self, write: Callable[[], Any], sets: Callable[[], list[tuple[str, int]]]) -> None:
        """Nothing: recall searches the stored vectors with numpy (store/meaning/vectors.py)."""

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------
    def aside(self) -> Any:
        return nullcontext(False)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The page cache of a write while it lasts (see store/backends/sqlite_files.py), unless someone set
        the cache to another size (a test that makes a write spill its pages)."""
        raised = self._write_cache(True)
        try:
            yield
        finally:
            if raised:
                self._write_cache(False)

    def _write_cache(self, writing: bool) -> bool:
        try:
            if writing and self.conn.execute("PRAGMA cache_size").fetchone()[0] != -READ_CACHE_KIB:
                return False
            self.conn.execute(f"PRAGMA cache_size = -{WRITE_CACHE_KIB if writing else READ_CACHE_KIB}")
        except sqlite3.Error:
            return False  # the write itself says what is wrong with the connection
        return True

    def begin_write(self) -> None:
        """``BEGIN IMMEDIATE``: a writer in another process makes us wait (busy timeout)
        instead of failing later."""
        if not self._wal_checked:
            if self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self.conn.execute("PRAGMA journal_mode = WAL")
            self._wal_checked = True
        self.conn.execute("BEGIN IMMEDIATE")

    @contextmanager
    def as_of_one_instant(self) -> Iterator[None]:
        """A read transaction: in WAL mode it sees the database as of its first read."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def data_version(self) -> int:
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    # -- bulk writes --------------------------------------------------------------------
    def new_rowids(self, n: int) -> list[int]:
        first = (self.conn.execute("SELECT max(rowid) FROM memories").fetchone()[0] or 0) + 1
        return list(range(first, first + n))

    def insert_one(self, table: str, row: dict[str, Any], number: str) -> int:
        return self.conn.execute(self.sql.insert(table, tuple(row), number), tuple(row.values())).lastrowid

    def insert_many(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        if rows:
            self.conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) "
                                  f"VALUES ({', '.join('?' * len(columns))})", rows)

    def update_many(self, table: str, key: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        if rows:
            self.conn.executemany(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in columns)} WHERE {key} = ?",
                                  rows)

    @contextmanager
    def bulk_memories(self) -> Iterator[Callable[[int, int], None]]:
        """The full-text index takes the batch in one INSERT … SELECT, its insert trigger set
        aside meanwhile (in this transaction: a rollback brings it back too). Row by row
        through the trigger was five times slower than the bulk insert at 100,000."""
        trigger = None
        if self.conn.in_transaction:
            found = self.conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' "
                                      "AND name = 'memories_ai'").fetchone()
            if found is not None:
                trigger = found[0]
                self.conn.execute('DROP TRIGGER "memories_ai"')

        def indexed(first: int, last: int) -> None:
            if trigger is not None:
                self.conn.execute(f"INSERT INTO memories_fts (rowid, terms) SELECT rowid, {shelved_terms('memories')} "
                                  "FROM memories WHERE rowid BETWEEN ? AND ?", (first, last))

        try:
            yield indexed
        finally:
            if trigger is not None:
                self.conn.execute(trigger)

    def after_copy(self) -> None:
        """Nothing: SQLite numbers on from the highest rowid by itself."""

    # -- reads of many rows ---------------------------------------------------------------
    def decay_columns(self, kinds: tuple[str, ...], layers: tuple[str, ...], now: float, full: bool,
                      only: list[str] | None) -> tuple[tuple, Callable[[Any], list[str]]]:
        """Rows in rowid order (one sorted walk through the table), made into numpy columns:
        rowid, kind's place in ``kinds`` (1-based, 0 not found), recall count, own half-life,
        pinned, base, ref time, strength, layer's place in ``layers`` (-1 not found), ticked at,
        next change (NaN for NULL where the column allows it)."""
        rows = self.conn.execute(
            "SELECT s.rowid, m.id, m.kind, m.recall_count, m.half_life_days, m.pinned, m.base, m.ref_time, "
            "s.strength, s.layer, s.ticked_at, s.next_change_at FROM memory_state s "
            "JOIN memories m ON m.rowid = s.rowid"
            + (" WHERE m.id IN (SELECT value FROM json_each(?))" if only is not None else "" if full
               else " WHERE s.rowid IN (SELECT rowid FROM memory_state WHERE next_change_at <= ?)"),
            (json.dumps(only),) if only is not None else () if full else (now,)).fetchall()
        rowid, names, kind_names, rc, own, pinned, base, ref, strength, layer_names, ticked, due_at = \
            zip(*rows) if rows else ((),) * 12
        places = {k: i + 1 for i, k in enumerate(kinds)}
        kind = np.array([places.get(k, 0) for k in kind_names], dtype=np.int64)
        codes = {name: i for i, name in enumerate(layers)}
        layer = np.array([codes.get(name, -1) for name in layer_names], dtype=np.int64)

        def ids(which: Any) -> list[str]:
            return [names[i] for i in which.tolist()]

        return (rowid, kind, rc, own, pinned, base, ref, strength, layer, ticked, due_at), ids

    # -- cancelling and watching ----------------------------------------------------------
    @contextmanager
    def cancellable(self, cancelled: Callable[[], bool]) -> Iterator[Callable[[], None]]:
        """SQLite asks ``cancelled`` every CHECK_EVERY virtual-machine steps of a statement."""
        self.conn.set_progress_handler(lambda: 1 if cancelled() else 0, CHECK_EVERY)
        try:
            yield self.conn.interrupt
        finally:
            self.conn.set_progress_handler(None, 0)

    def watch(self) -> Any:
        raise StoreError(f"{self.path}: SQLite sends no notice of other writers' commits; poll data_version")

    # -- what recall asks -----------------------------------------------------------------
    def common_terms(self, store: Any, terms: list[str], limit: int, scopes: Any, readable: Any) -> set[str]:
        """None: FTS5's bm25 weighs each term by its rarity itself."""
        return set()

    def vector_search(self, store: Any, key: tuple, vs: Any) -> Any:
        return None  # numpy over the stored vectors (store/meaning/vectors.py)

    def wall_time(self) -> float:
        return time.time()  # a file is shared by the processes of one machine: its clock

    def describe(self) -> dict[str, Any]:
        return {"backend": "sqlite", "server_version": sqlite3.sqlite_version, "extensions": {},
                "vectors": "numpy over stored vectors"}


CHECK_EVERY = 20_000  # virtual-machine steps between two looks at a cancel
