"""Hearing other writers of a PostgreSQL memory at once: LISTEN on the channel every write
transaction notifies before it commits (store/backends/pg_connection.py, ``CHANNEL``).

A :class:`Listener` holds a connection of its own (the store's is busy with the store's
work, and a notice must not wait for it). It never blocks: whoever owns it watches
:meth:`fileno` for readability (a Qt ``QSocketNotifier``, a ``select``) and then calls
:meth:`pending`, which says how many other connections committed since. When the
connection drops, :meth:`pending` raises :class:`ListenerLost`; the owner opens a new
listener, and then reads everything again once (what was committed while no one listened
has no notice).
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..model.errors import ListenerLost
from .pg_connection import CHANNEL


class Listener:
    def __init__(self, params: dict[str, Any], *, own: Any = None) -> None:
        """``params``: how to connect (the store connection's ``params``); notices from ``own``
        (our store's connection: the server process serving it now, or any that served it
        before it reconnected) are not counted."""
        self._params = dict(params)
        self._own = own
        self._own_pids: set[int] = set()
        self._note_own_pid()
        self._conn: Any = None
        self.connect()

    def _note_own_pid(self) -> None:
        if self._own is not None:
            with contextlib.suppress(Exception):  # its connection is down: its last process is noted
                self._own_pids.add(self._own.backend_pid)

    def connect(self) -> None:
        import psycopg

        # Reconnecting runs on the window's thread: an unreachable server must not hold it long.
        params = {**self._params, "connect_timeout": min(int(self._params.get("connect_timeout", 2)), 2)}
        try:
            conn = psycopg.connect(autocommit=True, **params)
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            raise ListenerLost((str(exc).strip().splitlines() or ["cannot connect"])[0]) from None
        self._conn = conn

    def fileno(self) -> int:
        return self._conn.pgconn.socket

    def pending(self) -> int:
        """How many notices from other connections arrived (0 when none); never waits."""
        import psycopg

        if self._conn is None or self._conn.closed:
            raise ListenerLost("not connected")
        pgconn = self._conn.pgconn
        try:
            pgconn.consume_input()
        except psycopg.OperationalError as exc:
            raise ListenerLost(str(exc).strip().splitlines()[0] if str(exc).strip() else "connection lost") from None
        if pgconn.status != psycopg.pq.ConnStatus.OK:
            raise ListenerLost("connection lost")
        self._note_own_pid()  # before the notices: a reconnected store's commits come from a new process
        count = 0
        while (notice := pgconn.notifies()) is not None:
            if notice.be_pid not in self._own_pids:
                count += 1
        return count

    def server_pid(self) -> int:
        return self._conn.info.backend_pid

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already gone
                self._conn.close()
            self._conn = None
