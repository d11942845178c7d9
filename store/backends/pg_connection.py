"""The PostgreSQL connection: an sqlite3-like face over psycopg 3.

A store talks to its connection in the SQL both engines speak; what differs is built per
engine by store/backends/ (upserts, numbered inserts, full-text search …). On SQLite the
connection is ``sqlite3``'s own, untouched, so files stay byte-for-byte what they were. On
PostgreSQL it is a :class:`PostgresConnection`: the same ``execute`` / ``executemany`` /
``in_transaction`` / ``close`` over psycopg 3, which passes each statement as written,
its ``?`` parameters in psycopg's ``%s`` style (:func:`pyformat`). ``begin_write`` is
``BEGIN`` plus a transaction-scoped advisory lock, so writers in any number of processes
queue as they do on one file.

Every write transaction (``begin_write`` … ``COMMIT``) sends ``NOTIFY mnemoscope``
just before it commits; PostgreSQL delivers it to listeners only if the commit happens, so
a window (store/backends/pg_notify.py) hears of every other writer's change at once, without polling.

Server errors are raised as :class:`PostgresError`, a ``sqlite3.DatabaseError``, so the
store's handlers (which turn them into a sentence for the user) stay one code path. A
server that went away (stopped, restarting, the connection broke) is :class:`~.errors.Unavailable`
instead: the call was not done (the server rolls back what it had not committed), and the
next call opens a new connection by itself; a read, or the start of a write, that finds the
connection dead after a restart is tried once more on a new one. TCP keepalives and a short
connect timeout make a call during an outage fail in seconds instead of hanging.
The store's clock on PostgreSQL is the server's: each connection measures how far this
machine's clock is from the server's (``clock_skew``, read by store/backends/postgres.py
``wall_time``), so servers on machines whose clocks disagree stamp, decay and tick memories
by one time, and a memory's strength is the same
whichever of them computed it.
Vectors are the same int8 blobs in a ``bytea`` column on both. Where the server has
pgvector, they are also a ``halfvec`` column with an HNSW index, and recall searches them in
the server (store/backends/pg_vectors.py); without it, with numpy in the process (store/meaning/vectors.py),
the documented fallback.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from functools import lru_cache
from typing import Any

from ..model.errors import DatabaseRefused, StoreError, Unavailable
from .targets import SECRET_PARAMS, parse_url, redact

# Writers take this transaction-scoped advisory lock (BEGIN IMMEDIATE's equivalent): "MNEM".
WRITE_LOCK = int.from_bytes(b"MNEM", "big")
RECONNECT_PAUSE_S = 1.0
_READS = ("SELECT", "WITH", "PRAGMA", "SHOW")
# The channel every write transaction notifies before it commits (store/backends/pg_notify.py listens).
CHANNEL = "mnemoscope"
# Reads of a process's other threads while one holds the store's connection (an HTTP API's
# calls at once) take a connection of a pool of at most this many (psycopg_pool), opened at the
# first such read; a read waits at most POOL_WAIT_S for one, then for the store's connection.
POOL_SIZE = 4
POOL_WAIT_S = 0.2


class PostgresError(sqlite3.DatabaseError):
    """An error of the PostgreSQL server or its connection (its first line)."""


# A parameter, a percent sign, or a quoted literal (whose ``?`` is text): what :func:`pyformat` reads.
_PARAM = re.compile(r"\?|%|'(?:[^']|'')*'")


def _pyformat_token(m: re.Match) -> str:
    token = m.group(0)
    return "%s" if token == "?" else token.replace("%", "%%")


@lru_cache(maxsize=1024)
def pyformat(sql: str) -> str:
    """``sql`` in psycopg's parameter style: ``?`` (outside a quoted literal) is ``%s``, and
    ``%`` is ``%%``. A DB-API parameter style; the statement is the store's, unchanged."""
    return _PARAM.sub(_pyformat_token, sql)


class _Cursor:
    """What the store reads of an sqlite3 cursor, over a psycopg one."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    @property
    def description(self):
        return self._cur.description

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    def fetchone(self):
        return self._cur.fetchone() if self._cur.description else None

    def fetchall(self):
        return self._cur.fetchall() if self._cur.description else []

    def __iter__(self):
        return iter(self.fetchall())


class PostgresConnection:
    """An sqlite3-like connection to a PostgreSQL database (see the module's docstring)."""

    def __init__(self, conn: Any, url: str, reopen: Any = None, params: dict[str, Any] | None = None,
                 configure: Any = None) -> None:
        self._conn = conn
        self.url = url  # without its password
        self._lock = threading.RLock()
        self.total_changes = 0  # rows inserted, changed or deleted by statements (as sqlite3 counts)
        self._writing = False  # inside BEGIN IMMEDIATE: its COMMIT notifies CHANNEL first
        self.params = dict(params or {})  # how it was connected (a listener opens another connection so)
        self._reopen = reopen  # () -> a new psycopg connection set up as the first (connect_postgres)
        self._lost_tx = False  # the connection died inside a transaction its owner has not ended yet
        self._retry_at = 0.0  # a failed reconnect: no new attempt before this (time.monotonic)
        self._why = ""  # what the failed reconnect said
        self._closed = False
        self.clock_skew = _clock_skew(conn)  # the server's clock minus this machine's, in seconds
        self._pool: Any = None  # psycopg_pool.ConnectionPool, opened by the first read that needs it
        self._configure = configure  # (psycopg connection) -> None: sets up a new one as the first
        self._pool_lock = threading.Lock()
        self._local = threading.local()  # .route: this thread's statements go to the last of it (None: ours)
        self._down_until = 0.0  # the server was found gone: reads take no pooled connection until then
        self._temporary = 0  # temporary tables made (update_many): each its own name

    def _count(self, sql: str, rowcount: int) -> None:
        if rowcount > 0 and sql.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
            self.total_changes += rowcount

    @property
    def in_transaction(self) -> bool:
        import psycopg.pq

        if self._lost_tx or self._conn.closed or self._conn.broken:
            return self._lost_tx  # so its owner ends it (ROLLBACK, a no-op here)
        return self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    # -- a server that went away ------------------------------------------------------------
    def _guarded(self, head: str, action: Any) -> Any:
        """``action(psycopg connection)`` under the lock; a dead connection is replaced first,
        and a server that went away is :class:`Unavailable` (see the module's docstring)."""
        import psycopg
        import psycopg.pq

        head = head.lstrip()[:20].upper()
        pooled = self._routed()
        if pooled is not None:
            try:
                return action(pooled)
            except psycopg.Error as exc:
                if not _went_away(pooled, exc):
                    raise _error(exc) from None
                self._down_until = time.monotonic() + RECONNECT_PAUSE_S
                raise Unavailable(self.url, _error(exc).args[0]) from None
        with self._lock:
            if self._ready(head):
                return None
            for attempt in (0, 1):
                in_tx = self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
                try:
                    return action(self._conn)
                except psycopg.Error as exc:
                    if not self._gone(exc):
                        raise _error(exc) from None
                    if attempt == 0 and (head.startswith("BEGIN") or not in_tx and head.startswith(_READS)):
                        self._replace()  # nothing was done yet: once more on a new connection
                        continue
                    self._lost_tx = in_tx and not head.startswith(("BEGIN", "COMMIT", "ROLLBACK"))
                    raise Unavailable(self.url, _error(exc).args[0],
                                      outcome_unknown=in_tx and head.startswith("COMMIT")) from None
        return None

    # -- a pool for the reads of other threads ------------------------------------------------
    def _routed(self) -> Any:
        route = getattr(self._local, "route", None)
        return route[-1] if route else None

    @contextlib.contextmanager
    def pooled(self) -> Any:
        """For the block, this thread's statements go to a connection of the pool: yields True,
        or False when none was free within :data:`POOL_WAIT_S` (or the server was just found
        gone), and then nothing changes. For reads only (store/schema/tables.py ``reading``): each
        statement commits by itself, as on the store's own connection."""
        import psycopg.pq

        route = self._local.__dict__.setdefault("route", [])
        if route and route[-1] is not None:  # already on one
            yield True
            return
        pool = self._the_pool() if time.monotonic() >= self._down_until else None
        conn = None
        if pool is not None:
            with contextlib.suppress(Exception):  # no connection at once: the caller takes turns on ours
                conn = pool.getconn(timeout=POOL_WAIT_S)
        if conn is None:
            yield False
            return
        route.append(conn)
        try:
            yield True
        finally:
            route.pop()
            if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                with contextlib.suppress(Exception):  # a broken one is dropped by the pool
                    conn.rollback()
            pool.putconn(conn)

    @contextlib.contextmanager
    def own(self) -> Any:
        """For the block, this thread's statements go to the store's own connection (a write)."""
        route = self._local.__dict__.setdefault("route", [])
        route.append(None)
        try:
            yield
        finally:
            route.pop()

    def _the_pool(self) -> Any:
        with self._pool_lock:
            if self._pool is None and not self._closed and self._configure is not None:
                try:
                    from psycopg_pool import ConnectionPool
                except ImportError:  # an install without the pool: every read takes turns
                    self._configure = None
                    return None
                self._pool = ConnectionPool(kwargs={**self.params, "autocommit": True}, min_size=1,
                                            max_size=POOL_SIZE, open=False, configure=self._configure,
                                            check=ConnectionPool.check_connection, name="mnemoscope-reads")
                self._pool.open(wait=False)
            return self._pool

    def _ready(self, head: str) -> bool:
        """Before a statement: True to skip it (the ROLLBACK of a transaction the server lost)."""
        if self._closed:
            raise PostgresError("the connection is closed")
        if self._lost_tx and not head.startswith("BEGIN"):
            self._lost_tx = False
            if head.startswith("ROLLBACK"):
                return True
            raise Unavailable(self.url, "the connection broke during this write, which was not committed")
        self._lost_tx = False
        if self._conn.closed or self._conn.broken:
            self._replace()
        return False

    def _gone(self, exc: BaseException) -> bool:
        """Whether the error is the server or the connection going away (then the connection is dropped)."""
        gone = _went_away(self._conn, exc)
        if gone:
            self._down_until = time.monotonic() + RECONNECT_PAUSE_S
        if gone and not self._conn.closed:
            with contextlib.suppress(Exception):  # it is being dropped either way
                self._conn.close()
        return gone

    def _replace(self) -> None:
        """A new connection in place of the dead one, or :class:`Unavailable`."""
        if self._reopen is None:
            raise Unavailable(self.url, "the connection is lost")
        if time.monotonic() < self._retry_at:
            raise Unavailable(self.url, self._why)
        started = time.monotonic()
        try:
            self._conn = self._reopen()
            self.clock_skew = _clock_skew(self._conn)
        except Exception as exc:  # noqa: BLE001 - psycopg's, already without the password
            self._why = _error(exc).args[0]
            now = time.monotonic()
            self._retry_at = now + min(RECONNECT_PAUSE_S, now - started)
            self._down_until = now + RECONNECT_PAUSE_S
            raise Unavailable(self.url, self._why) from None

    def begin_write(self) -> None:
        """``BEGIN`` and the store's advisory write lock: writers in any number of processes
        queue as they do on one SQLite file. Its ``COMMIT`` notifies :data:`CHANNEL` first."""
        def begin(conn: Any) -> None:
            conn.execute("BEGIN")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))

        self._guarded("BEGIN", begin)
        self._writing = True

    def execute(self, sql: str, params: Any = ()) -> _Cursor:
        end = sql.strip().upper() if self._writing else ""
        if end in ("COMMIT", "ROLLBACK"):
            # The live-refresh hook: a write transaction notifies listeners as part of itself,
            # so the notice is delivered exactly when (and only if) the commit succeeds.
            self._writing = False
            if end == "COMMIT":
                self._guarded("NOTIFY", lambda conn: conn.execute(f"NOTIFY {CHANNEL}"))
        text = pyformat(sql)

        def run(conn: Any) -> _Cursor:
            cur = conn.execute(text, params)
            self._count(text, cur.rowcount)
            return _Cursor(cur)

        return self._guarded(sql, run) or _Cursor(None)

    def executemany(self, sql: str, seq: Any) -> None:
        rows = [list(p) for p in seq]
        if not rows:
            return
        text = pyformat(sql)

        def run(conn: Any) -> None:
            with conn.cursor() as cur:
                cur.executemany(text, rows)
                self._count(text, cur.rowcount)

        self._guarded(sql, run)

    def columns(self, sql: str, types: str, params: Any = ()) -> list[Any]:
        """The columns of a query's rows as numpy arrays, read as one binary COPY (no Python
        object per value): ``types`` has a letter per column, ``i`` for int8 and ``f`` for
        float8, and every value must be one (not NULL: the query says what a NULL becomes).
        ``params`` fill the query's ``?`` (bound here: COPY takes no server-side parameters)."""
        import numpy as np

        layout = np.dtype([("n", ">i2"), *((f"{name}{i}", t) for i, kind in enumerate(types)
                                             for name, t in (("len", ">i4"), ("v", ">i8" if kind == "i" else ">f8")))])

        def run(conn: Any) -> bytes:
            data = bytearray()
            with conn.cursor().copy(f"COPY ({pyformat(sql) if params else sql}) TO STDOUT (FORMAT BINARY)",
                                    list(params) or None) as copy:
                for chunk in copy:
                    data += chunk
            return bytes(data)

        data = self._guarded("COPY", run) or b""
        header = 19  # signature, flags and an empty header extension; the last two bytes end the data
        if not data.startswith(b"PGCOPY\n\xff\r\n\x00") or data[15:19] != bytes(4) or data[-2:] != b"\xff\xff":
            raise PostgresError(f"the server's binary COPY of {sql[:80]}… is not in the format this reads")
        rows = np.frombuffer(data, layout, count=(len(data) - header - 2) // layout.itemsize, offset=header)
        if rows.nbytes != len(data) - header - 2 or np.any(rows["n"] != len(types)) or \
                any(np.any(rows[f"len{i}"] != 8) for i in range(len(types))):
            raise PostgresError(f"a column of {sql[:80]}… is NULL or not an 8-byte number")
        return [rows[f"v{i}"].astype(np.int64 if kind == "i" else np.float64) for i, kind in enumerate(types)]

    def insert_many(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """:func:`insert_many` on the server: one COPY."""
        def run(conn: Any) -> None:
            with conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            self.total_changes += len(rows)

        self._guarded("INSERT", run)

    def update_many(self, table: str, key: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """:func:`update_many` on the server: the rows as one COPY into a temporary table,
        then one ``UPDATE … FROM`` it."""
        names = ", ".join(columns)
        self._temporary += 1
        temporary = f"mnemoscope_rows_{self._temporary}"  # gone with the transaction, whichever way it ends

        def run(conn: Any) -> None:
            conn.execute(f"CREATE TEMPORARY TABLE {temporary} ON COMMIT DROP AS SELECT {names}, {key} FROM {table} "
                         "WITH NO DATA")
            with conn.cursor().copy(f"COPY {temporary} ({names}, {key}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cur = conn.execute(f"UPDATE {table} t SET {', '.join(f'{c} = r.{c}' for c in columns)} "
                               f"FROM {temporary} r WHERE t.{key} = r.{key}")
            self._count("UPDATE", cur.rowcount)

        self._guarded("UPDATE", run)

    def execute_script(self, sql: str) -> None:
        """Run statements as written, in PostgreSQL's own dialect (the schema's steps)."""
        self._guarded(sql, lambda conn: conn.execute(sql))

    def renumber(self) -> None:
        """After rows were inserted with their ids (a copy): the server numbers on from the highest."""
        for table, column in (("ticks", "id"), ("activity", "id")):
            self.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                         f"coalesce(max({column}), 0) + 1, false) FROM {table}")

    @property
    def backend_pid(self) -> int:
        """The server process serving this connection (what a listener's notices name)."""
        return self._conn.info.backend_pid

    def interrupt(self) -> None:
        """Ask the server to stop the statement running now (from any thread; sqlite3's
        ``interrupt``): it fails with an error, and its transaction rolls back."""
        import psycopg

        with contextlib.suppress(psycopg.Error):  # nothing running, or the connection is gone
            self._conn.cancel_safe(timeout=5)

    def close(self) -> None:
        self._closed = True
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
        self._conn.close()

    def server(self) -> dict[str, Any]:
        """Which server: its version and the extensions installed in this database."""
        version = self.execute("SHOW server_version").fetchone()[0]
        extensions = {name: v for name, v in self.execute("SELECT extname, extversion FROM pg_extension "
                                                          "ORDER BY extname").fetchall()}
        from .pg_vectors import describe, state

        return {"backend": "postgresql", "server_version": version, "extensions": extensions,
                "vectors": describe(state(self))}


def _clock_skew(conn: Any) -> float:
    """The server's clock minus this machine's: of three readings, the one with the shortest
    round trip, taken as read halfway through it (within a millisecond on a local network)."""
    readings = []
    for _ in range(3):
        before = time.time()
        server = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()[0]
        after = time.time()
        readings.append((after - before, server - (before + after) / 2))
    return min(readings)[1]


def _went_away(conn: Any, exc: BaseException) -> bool:
    """Whether ``exc`` is the server or the connection going away."""
    import psycopg

    state = getattr(exc, "sqlstate", None) or ""
    return conn.closed or conn.broken or (
        isinstance(exc, psycopg.OperationalError) and (not state or state.startswith(("08", "57P"))))


def _error(exc: BaseException) -> PostgresError:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return PostgresError(text)


def connect_postgres(url: str, *, read_only: bool) -> PostgresConnection:
    """A connection to the database the URL names; a refused login or an unreachable
    server is refused in one line naming it (the password is never in it)."""
    import psycopg
    from psycopg.types.numeric import FloatLoader

    shown = redact(url)
    params = parse_url(url)

    def configure(conn: Any) -> None:
        conn.adapters.register_loader("numeric", FloatLoader)  # sum() and the like: floats, as SQLite gives
        if read_only:
            conn.execute("SET default_transaction_read_only = on")

    def open_() -> Any:
        try:
            conn = psycopg.connect(autocommit=True, **params)
            configure(conn)
        except psycopg.Error as exc:
            why = (str(exc).strip().splitlines() or ["failed"])[0]
            for secret in SECRET_PARAMS:
                if params.get(secret):
                    why = why.replace(params[secret], "***")
            raise StoreError(why) from None
        return conn

    try:
        conn = open_()
    except StoreError as exc:
        raise DatabaseRefused(shown, "unreadable", f"cannot connect to {shown}: {exc}") from None
    return PostgresConnection(conn, shown, reopen=open_, params=params, configure=configure)
