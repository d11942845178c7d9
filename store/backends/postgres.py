"""The PostgreSQL backend: a server's database, through store/backends/pg_connection.py
(psycopg 3, an sqlite3-like face), migrated by store/backends/pg_schema.py's steps of the same
migrations; pgvector's search in the server where it is installed (store/backends/pg_vectors.py)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from ..model.errors import DatabaseRefused
from ..recall.shelves import as_params, shelve, shown
from ..recall.text import Prefix, Words
from . import pg_schema, pg_vectors
from .pg_connection import connect_postgres
from .statements import json_key, values


class PostgresStatements:
    """PostgreSQL's SQL where the engines differ (store/backends/__init__.py ``Statements``)."""

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str], *, source: str | None = None) -> str:
        rest = [c for c in columns if c not in key]
        sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in rest)
        return (f"INSERT INTO {table} ({', '.join(columns)}) {source or values(columns)} "
                f"ON CONFLICT ({', '.join(key)}) " + (f"DO UPDATE SET {sets}" if sets else "DO NOTHING"))

    def insert_if_absent(self, table: str, columns: Sequence[str]) -> str:
        return f"INSERT INTO {table} ({', '.join(columns)}) {values(columns)} ON CONFLICT DO NOTHING"

    def insert(self, table: str, columns: Sequence[str], number: str) -> str:
        return f"INSERT INTO {table} ({', '.join(columns)}) {values(columns)} RETURNING {number}"

    def text_search(self, columns: str, query: Words, where: str, params: Sequence[Any], *, limit: int,
                    pairs: Sequence[tuple[str, str]], state: bool = False,
                    ranked: bool = False) -> tuple[str, list[Any]]:
        """The memories' shelved terms (``mnemoscope_shelved``, the index's expression:
        store/backends/pg_schema.py) against a tsquery of the shelves of ``pairs``
        (store/recall/shelves.py), ranked by ``ts_rank`` of their plain terms (the generated ``tsv``
        column) against the query's: the shelved vector is worked out for no row. The terms
        are the very ones the store makes (store/recall/text.py ``term_string``: folded words, CJK
        and Korean bigrams) unstemmed, so a query finds what it finds on SQLite. They have no
        positions, so ``ts_rank`` only counts the query's terms a memory holds: many memories
        tie, and a parallel scan hands ties over in a different order each time; the newest
        first among them keeps one recall taking the same candidates twice in a row."""
        shelved = pg_tsquery(shelve(query, [self.shelf(*pair) for pair in pairs]))
        return (f"SELECT {columns} FROM memories m "
                + ("JOIN memory_state s ON s.rowid = m.rowid " if state else "")
                + "WHERE mnemoscope_shelved(m.terms, m.scope, m.sensitivity) @@ CAST(? AS tsquery) "
                + f"AND {shown('m', len(pairs))}" + (f" AND {where}" if where else "")
                + (" ORDER BY ts_rank(m.tsv, CAST(? AS tsquery)) DESC, m.rowid DESC" if ranked else "") + " LIMIT ?",
                [shelved, *as_params(pairs), *params, *((pg_tsquery(query),) if ranked else ()), limit])

    @staticmethod
    def shelf(scope: str, sensitivity: str) -> str:
        """What ``mnemoscope_shelved`` (store/backends/pg_schema.py) puts before each term of
        a memory of ``scope`` and ``sensitivity``: a digest of both, so that a lexeme stays
        under PostgreSQL's 2,047 bytes whatever the scope's name (a term is at most 1,024)."""
        return hashlib.md5(f"{scope} {sensitivity}".encode()).hexdigest() + ":"

    def like(self, expr: str, pattern: str = "?", *, escape: str | None = None) -> str:
        """ILIKE: as SQLite's LIKE, whatever the case."""
        return f"{expr} ILIKE {pattern}" + (f" ESCAPE '{escape}'" if escape else "")

    def holds(self, expr: str) -> str:
        return f"strpos({expr}, ?) > 0"

    def json_text(self, expr: str, key: str) -> str:
        return f"(CAST({expr} AS jsonb) ->> '{json_key(key)}')"


def pg_tsquery(query: Words | Prefix | str) -> str:
    """``query`` as tsquery text: each term one quoted lexeme, a prefix ``:*``."""
    if isinstance(query, str):
        return "'" + query.replace("\\", "\\\\").replace("'", "''") + "'"
    if isinstance(query, Prefix):
        return pg_tsquery(query.text) + ":*"
    return (" & " if query.every else " | ").join(
        f"({pg_tsquery(p)})" if isinstance(p, Words) else pg_tsquery(p) for p in query.parts)


class PostgresBackend:
    name = "postgresql"
    sql = PostgresStatements()
    hears_other_writers = True  # every write transaction notifies before it commits (LISTEN)
    reads_beside_writes = True  # a read of another thread takes a pooled connection

    def __init__(self, url: str, *, read_only: bool) -> None:
        self.conn = connect_postgres(url, read_only=read_only)
        self.path = self.conn.url  # without its password
        self.read_only = read_only
        self._pgvector: set[str] = set()  # tables of vectors with pgvector's column: searched in the server

    # -- opening ------------------------------------------------------------------------
    def migrate(self, write: Callable[[], Any]) -> None:
        try:
            due = pg_schema.check(self.conn)
            if due and self.read_only:
                raise DatabaseRefused(self.path, "unreadable", f"{self.path} has no Mnemoscope schema yet "
                                      "(or an older one), but it is open read-only; open it once to write")
            if due:
                with write():
                    pg_schema.migrate(self.conn)
        except BaseException:
            self.conn.close()
            raise

    def prepare_vectors(self, write: Callable[[], Any], sets: Callable[[], list[tuple[str, int]]]) -> None:
        try:
            for table, dim in sets():
                found = pg_vectors.state(self.conn, table)
                if not self.read_only and pg_vectors.due(found):
                    with write():
                        pg_vectors.set_up(self.conn, table)
                    found = pg_vectors.state(self.conn, table)
                if not self.read_only and found["column"]:
                    pg_vectors.build_index(self.conn, dim, table)
                if found["column"]:
                    self._pgvector.add(table)
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------
    def aside(self) -> Any:
        """A connection of the pool (store/backends/pg_connection.py ``pooled``): readers of one process
        run side by side, and see what is committed, as a reader in another process does."""
        return self.conn.pooled()

    def writing(self) -> Any:
        return self.conn.own()

    def begin_write(self) -> None:
        self.conn.begin_write()  # BEGIN and the store's advisory write lock

    @contextmanager
    def as_of_one_instant(self) -> Iterator[None]:
        """REPEATABLE READ: every statement sees the snapshot the first one took."""
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def data_version(self) -> int:
        """The server's WAL position: it moves whenever anyone commits."""
        return self.conn.execute("SELECT (pg_current_wal_lsn() - '0/0')::bigint").fetchone()[0]

    # -- bulk writes --------------------------------------------------------------------
    def new_rowids(self, n: int) -> list[int]:
        """From the server's own sequence, as a single insert takes one (numbers of our own
        left it behind, and the next remember took one of them: "duplicate key")."""
        return [r[0] for r in self.conn.execute(
            "SELECT nextval(pg_get_serial_sequence('memories', 'rowid')) FROM generate_series(1, ?)",
            (n,)).fetchall()]

    def insert_one(self, table: str, row: dict[str, Any], number: str) -> int:
        return self.conn.execute(self.sql.insert(table, tuple(row), number), tuple(row.values())).fetchone()[0]

    def insert_many(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """One COPY: the triggers that keep counts (schema 13) write each count once."""
        if rows:
            self.conn.insert_many(table, columns, rows)

    def update_many(self, table: str, key: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """One bulk update (a statement per row is a round of the protocol each)."""
        if rows:
            self.conn.update_many(table, key, columns, rows)

    def bulk_memories(self) -> Any:
        """Nothing to set aside: the full-text vector is a generated column."""
        return nullcontext(lambda first, last: None)

    def after_copy(self) -> None:
        self.conn.renumber()

    # -- reads of many rows ---------------------------------------------------------------
    def decay_columns(self, kinds: tuple[str, ...], layers: tuple[str, ...], now: float, full: bool,
                      only: list[str] | None) -> tuple[tuple, Callable[[Any], list[str]]]:
        """As SQLiteBackend's, read as one binary COPY straight into numpy arrays; only the
        ids of the memories that change are read (at 1,000,000 memories, reading them as rows
        of Python objects took longer than the rest of the tick; tests/perf/pg_scale_bench.py)."""
        conn = self.conn

        def texts(values: tuple[str, ...]) -> str:
            return "ARRAY[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]::text[]"

        # Every value a non-NULL 8-byte number: a kind and a layer by their place (1-based; 0 not found).
        rowid, kind, rc, own, pinned, base, ref, strength, layer, ticked, due_at = conn.columns(
            f"SELECT s.rowid, coalesce(array_position({texts(kinds)}, m.kind), 0)::int8, m.recall_count, "
            "coalesce(m.half_life_days, 'NaN'), m.pinned, m.base, m.ref_time, s.strength, "
            f"coalesce(array_position({texts(layers)}, s.layer), 0)::int8, coalesce(s.ticked_at, 'NaN'), "
            "coalesce(s.next_change_at, 'NaN') FROM memory_state s JOIN memories m ON m.rowid = s.rowid"
            + (" WHERE m.id = ANY(?)" if only is not None else "" if full
               else f" WHERE s.next_change_at <= {float(now)!r}"), "iiififffiff", () if only is None else (only,))

        def ids(which: Any) -> list[str]:
            wanted = rowid[which].tolist()
            if not wanted:
                return []
            found = dict(conn.execute("SELECT rowid, id FROM memories WHERE rowid = ANY(?)", (wanted,)).fetchall())
            return [found[r] for r in wanted]

        return (rowid, kind, rc, own, pinned, base, ref, strength, layer - 1, ticked, due_at), ids

    # -- cancelling and watching ----------------------------------------------------------
    @contextmanager
    def cancellable(self, cancelled: Callable[[], bool]) -> Iterator[Callable[[], None]]:
        """The server stops the running statement when asked (its transaction rolls back)."""
        yield self.conn.interrupt

    def watch(self) -> Any:
        from .pg_notify import Listener

        return Listener(self.conn.params, own=self.conn)

    # -- what recall asks -----------------------------------------------------------------
    def common_terms(self, store: Any, terms: list[str], limit: int, scopes: Any, readable: Any) -> set[str]:
        """The terms held by more than ``limit`` memories the caller may search (store/backends/pg_terms.py):
        ts_rank does not weigh a term by its rarity, and a common word's candidates crowd out the rest."""
        from . import pg_terms

        return pg_terms.too_common(store, terms, limit, scopes, readable)

    def vector_search(self, store: Any, key: tuple, vs: Any) -> Any:
        if vs.table not in self._pgvector:
            return None
        return pg_vectors.Search(store, vs.embedder(store).dim, key, vs.table)

    def wall_time(self) -> float:
        """The server's clock, through the skew the connection measured when it opened: servers'
        clients on machines whose clocks disagree stamp, decay and tick by one time."""
        return time.time() + self.conn.clock_skew

    def describe(self) -> dict[str, Any]:
        return self.conn.server()
