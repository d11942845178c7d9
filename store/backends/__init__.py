"""The backend seam: every difference between SQLite and PostgreSQL, behind one protocol.

A store asks its :class:`Backend` (``store.tables.backend``) and never which engine it is
on: opening and migrating, the write transaction's set-up, reads beside another thread's,
new row numbers, bulk writes, the decay inputs a tick reads, real time, cancelling a running
statement, hearing other writers, the search terms too common to search by, which vector
search recall uses, and the SQL that differs (:meth:`Backend.json_text`). The one place
that tells the engines apart is :func:`open_backend`, from the target's spelling (a file
path or a ``postgresql://`` URL). ``tests/test_house.py`` fails when a branch on the engine
appears outside this package.

The store's SQL is otherwise written once, in SQLite's dialect limited to what both
engines do; the PostgreSQL connection (store/backend.py) turns the few constructs that
differ into its own while they are not yet built here from structure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..backend import is_url


class Backend(Protocol):
    """What a store needs of its engine (store/backends/sqlite.py, store/backends/postgres.py)."""

    name: str  # "sqlite" or "postgresql": what stats and the doors report
    conn: Any  # sqlite3's connection, or store/backend.py's PostgresConnection (the same calls)
    path: str  # as shown: a file's path, or the URL without its password
    read_only: bool
    hears_other_writers: bool  # True: watch() hears every commit at once; False: poll data_version()
    reads_beside_writes: bool  # True: another thread's read may run while one holds the connection

    def migrate(self, write: Callable[[], AbstractContextManager[Any]]) -> None:
        """Refuse what this version must not open, then apply due migrations in ``write()``."""

    def prepare_vectors(self, write: Callable[[], AbstractContextManager[Any]], dim: Callable[[], int]) -> None:
        """After migrating: set up the engine's own vector search, when it has one."""

    def aside(self) -> AbstractContextManager[bool]:
        """For a read while another thread holds the connection: True when it runs on a
        connection of its own (then it need not wait), False when it must take turns."""

    def writing(self) -> AbstractContextManager[None]:
        """Round one write transaction (the connection's set-up for it)."""

    def begin_write(self) -> None:
        """Start the write transaction, taking the write lock up front."""

    def data_version(self) -> int:
        """Changes whenever another connection commits."""

    def new_rowids(self, n: int) -> list[int]:
        """Numbers for ``n`` memories about to be inserted with them."""

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
        """A tick's memories (store/ticking.py ``_due``): numpy columns and how to read ids."""

    def cancellable(self, cancelled: Callable[[], bool]) -> AbstractContextManager[Callable[[], None]]:
        """Statements of the block stop soon after ``cancelled()`` turns true; yields a
        function that stops the running one at once, from any thread."""

    def watch(self) -> Any:
        """A listener for other writers' commits (store/notify.py), when ``hears_other_writers``."""

    def common_terms(self, store: Any, terms: list[str], limit: int, scopes: Any, readable: Any) -> set[str]:
        """Of ``terms``, those too common to search by (the engine's full text weighs none)."""

    def vector_search(self, store: Any, key: tuple) -> Any:
        """The engine's own vector search for recall, or None (numpy over the stored vectors)."""

    def json_text(self, expr: str, key: str) -> str:
        """SQL for the text at ``key`` of the JSON object ``expr`` holds (NULL when absent)."""

    def wall_time(self) -> float:
        """Real time as every process sharing this database counts it (the store's clock is
        this plus the offset the user advanced it by)."""

    def describe(self) -> dict[str, Any]:
        """Which engine: its name, version, extensions and vector search."""

    def close(self) -> None: ...


def open_backend(target: str | os.PathLike, *, create: bool, read_only: bool) -> Backend:
    """The backend of the database at ``target``: a file (``:memory:`` for none), or a
    ``postgresql://`` URL."""
    if is_url(target):
        from .postgres import PostgresBackend

        return PostgresBackend(str(target), read_only=read_only)
    from .sqlite import SQLiteBackend

    return SQLiteBackend(os.fspath(target), create=create, read_only=read_only)


__all__ = ["Backend", "open_backend"]
