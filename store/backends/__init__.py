"""The backend seam: every difference between SQLite and PostgreSQL, behind one protocol.

A store asks its :class:`Backend` (``store.tables.backend``) and never which engine it is
on: opening and migrating, the write transaction's set-up, reads beside another thread's,
new row numbers, bulk writes, the decay inputs a tick reads, real time, cancelling a running
statement, hearing other writers, the search terms too common to search by, which vector
search recall uses, and the SQL that differs: upserts, inserts whose number the engine
gives, full-text search, a caseless LIKE, a substring test and a JSON field, each built
from structure by the backend's :class:`Statements` (``store.tables.sql``), never
rewritten from text. The one place that tells the engines apart is :func:`open_backend`,
from the target's spelling (a file path or a ``postgresql://`` URL).

The rest of the store's SQL is written once, in what both engines speak, with ``?`` for a
parameter (the PostgreSQL connection passes it to psycopg as ``%s``: a parameter style,
not a dialect). tests/store/test_pg_statements.py has PostgreSQL plan every statement written
in store/ and every one the PostgreSQL backend builds for it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .targets import on_server

if TYPE_CHECKING:
    from ..recall.text import Words


# What every engine's connection raises (PostgresError is an sqlite3.DatabaseError), by the
# names the rest of the store uses.
DatabaseError = sqlite3.Error
# A statement named a table or column the database does not have yet: a file from an older
# version opened read-only, before the migration that adds it (a server's schema is always
# current: an older one is refused read-only). Caught where such a read may say "none".
SchemaBehind = sqlite3.OperationalError


class Statements(Protocol):
    """The SQL that differs between the engines, built from structure by each backend
    (``store.tables.sql``). Everything else the store writes once, in the SQL both engines
    speak, with ``?`` for each parameter."""

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str], *, source: str | None = None) -> str:
        """Insert a row of ``columns`` (their values: a ``?`` each, or the query ``source``);
        where a row has its ``key`` already, that row takes the new values."""

    def insert_if_absent(self, table: str, columns: Sequence[str]) -> str:
        """Insert a row of ``columns`` (a ``?`` each), unless it would take a key or a unique
        value another row has: then nothing is written, and the rowcount is 0."""

    def insert(self, table: str, columns: Sequence[str], number: str) -> str:
        """Insert a row of ``columns`` (a ``?`` each) whose ``number`` the engine gives it
        (:meth:`Backend.insert_one` reads it back)."""

    def text_search(self, columns: str, query: Words, where: str, params: Sequence[Any], *, limit: int,
                    pairs: Sequence[tuple[str, str]], state: bool = False,
                    ranked: bool = False) -> tuple[str, list[Any]]:
        """A statement and its parameters: ``columns`` of the memories ``m`` (and of their
        decay state ``s`` when ``state``) of the (scope, sensitivity) ``pairs`` the full-text
        ``query`` finds that meet ``where`` (its ``?`` filled by ``params``; may be empty):
        the best ``limit`` of them when ``ranked``, else any ``limit``. The index is read on
        the shelves of ``pairs`` only (store/recall/shelves.py): at least one pair, and only pairs
        the caller may see."""

    def shelf(self, scope: str, sensitivity: str) -> str:
        """What the full-text index puts before each term of a memory of ``scope`` and
        ``sensitivity`` (store/recall/shelves.py)."""

    def like(self, expr: str, pattern: str = "?", *, escape: str | None = None) -> str:
        """SQL true when the text ``expr`` matches the LIKE ``pattern`` (the next parameter
        unless given), in any case of its ASCII letters."""

    def holds(self, expr: str) -> str:
        """SQL true when the text ``expr`` holds the next parameter's text anywhere."""

    def json_text(self, expr: str, key: str) -> str:
        """SQL for the text at ``key`` of the JSON object ``expr`` holds (NULL when absent)."""


class VectorSearch(Protocol):
    """An engine's own vector search (:meth:`Backend.vector_search`; store/meaning/vectors.py's
    ``nearest`` and ``cosines_of`` hand over to it)."""

    key: tuple
    table: str  # the vector set's table (store/meaning/vectors.py)

    def nearest(self, query: Any, scopes: Sequence[str], max_rank: int, k: int,
                minimum: float, without: Any = None) -> list[tuple[str, float, float]]: ...

    def cosines_of(self, query: Any, ids: Sequence[str]) -> dict[str, float]: ...

    def lacking_count(self, other: Any, scopes: Sequence[str] | None = None, max_rank: int = 99) -> int: ...

    def held_ids(self) -> list[str]: ...


class Backend(Protocol):
    """What a store needs of its engine (store/backends/sqlite.py, store/backends/postgres.py)."""

    name: str  # "sqlite" or "postgresql": what stats and the doors report
    conn: Any  # sqlite3's connection, or store/backends/pg_connection.py's PostgresConnection (the same calls)
    path: str  # as shown: a file's path, or the URL without its password
    read_only: bool
    hears_other_writers: bool  # True: watch() hears every commit at once; False: poll data_version()
    reads_beside_writes: bool  # True: another thread's read may run while one holds the connection
    sql: Statements  # the SQL that differs, built for this engine

    def migrate(self, write: Callable[[], AbstractContextManager[Any]]) -> None:
        """Refuse what this version must not open, then apply due migrations in ``write()``."""

    def prepare_vectors(self, write: Callable[[], AbstractContextManager[Any]],
                        sets: Callable[[], list[tuple[str, int]]]) -> None:
        """After migrating: set up the engine's own vector search, when it has one, for each
        (table, dimension) of the vector sets the store keeps (store/meaning/vectors.py)."""

    def aside(self) -> AbstractContextManager[bool]:
        """For a read while another thread holds the connection: True when it runs on a
        connection of its own (then it need not wait), False when it must take turns."""

    def writing(self) -> AbstractContextManager[None]:
        """Round one write transaction (the connection's set-up for it)."""

    def begin_write(self) -> None:
        """Start the write transaction, taking the write lock up front."""

    def as_of_one_instant(self) -> AbstractContextManager[None]:
        """Round several reads that must see the database as it stood at one instant, while
        others write (a snapshot's logical copy): one read-only transaction."""

    def data_version(self) -> int:
        """Changes whenever another connection commits."""

    def new_rowids(self, n: int) -> list[int]:
        """Numbers for ``n`` memories about to be inserted with them."""

    def insert_one(self, table: str, row: dict[str, Any], number: str) -> int:
        """Insert ``row`` (column: value) and return the ``number`` the engine gave it."""

    def insert_many(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """Insert the rows inside the caller's transaction."""

    def update_many(self, table: str, key: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """``UPDATE table SET columns WHERE key`` for each row (the values, then the key)."""

    def bulk_memories(self) -> AbstractContextManager[Callable[[int, int], None]]:
        """Round a bulk insert of memories: yields ``indexed(first, last)``, to call with the
        rowids inserted, which brings the full-text index up to them."""

    def after_copy(self) -> None:
        """After rows were inserted with their own ids (a copy): number on from the highest."""

    def decay_columns(self, kinds: tuple[str, ...], layers: tuple[str, ...], now: float, full: bool,
                      only: list[str] | None) -> tuple[tuple, Callable[[Any], list[str]]]:
        """A tick's memories (store/forgetting/ticking.py ``_due``): numpy columns and how to read ids."""

    def cancellable(self, cancelled: Callable[[], bool]) -> AbstractContextManager[Callable[[], None]]:
        """Statements of the block stop soon after ``cancelled()`` turns true; yields a
        function that stops the running one at once, from any thread."""

    def watch(self) -> Any:
        """A listener for other writers' commits (store/backends/pg_notify.py), when ``hears_other_writers``."""

    def common_terms(self, store: Any, terms: list[str], limit: int, scopes: Any, readable: Any) -> set[str]:
        """Of ``terms``, those too common to search by (the engine's full text weighs none)."""

    def vector_search(self, store: Any, key: tuple, vs: Any) -> VectorSearch | None:
        """The engine's own search of the vector set ``vs`` (store/meaning/vectors.py), or None (numpy
        over the stored vectors)."""

    def wall_time(self) -> float:
        """Real time as every process sharing this database counts it (the store's clock is
        this plus the offset the user advanced it by)."""

    def describe(self) -> dict[str, Any]:
        """Which engine: its name, version, extensions and vector search."""

    def close(self) -> None: ...


def open_backend(target: str | os.PathLike, *, create: bool, read_only: bool) -> Backend:
    """The backend of the database at ``target``: a file (``:memory:`` for none), or a
    ``postgresql://`` URL."""
    if on_server(target):
        from .postgres import PostgresBackend

        return PostgresBackend(str(target), read_only=read_only)
    from .sqlite import SQLiteBackend

    return SQLiteBackend(os.fspath(target), create=create, read_only=read_only)


__all__ = ["Backend", "DatabaseError", "SchemaBehind", "Statements", "VectorSearch", "open_backend"]
