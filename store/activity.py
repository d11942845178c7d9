"""What agents did: the activity log, and the memories they forgot.

Every call through the MCP server or the HTTP API, and every write from the command
line, is one row of the activity log: when, which client, which tool, in which scope, a
short summary of the arguments, the memory ids it returned or wrote, and how long it
took. The log is bounded (the newest ``keep_entries`` rows, none older than ``keep_days``
by the store's clock); :meth:`MemoryStore.tick` prunes it, and so does every
``PRUNE_EVERY``-th recorded call, so a store that is never ticked stays bounded too.

A memory an agent forgets is deleted, and what :meth:`MemoryStore.restore` needs to put
it back is kept in the ``forgotten`` table until a person restores it from the
inspector, or ``forgotten_keep_days`` pass.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import decay
from .errors import NotFound, StoreError
from .results import DeletedMemory

if TYPE_CHECKING:
    from .model import Memory
    from .store import MemoryStore

DOORS = ("mcp", "http", "cli", "python")  # python: a framework adapter (mnemoscope.adapters)
PRUNE_EVERY = 256
SUMMARY_CHARS = 200
ARG_CHARS = 2000


@dataclass(frozen=True)
class ActivityEntry:
    id: int
    at: float
    client: str
    door: str
    tool: str
    scope: str
    trust: str
    summary: str
    args: dict[str, Any]
    memory_ids: tuple[str, ...]
    duration_ms: float
    ok: bool
    error: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "client": self.client, "door": self.door, "tool": self.tool,
                "scope": self.scope, "trust": self.trust, "summary": self.summary, "args": self.args,
                "memory_ids": list(self.memory_ids), "duration_ms": self.duration_ms, "ok": self.ok,
                "error": self.error}


def summarize(args: dict[str, Any], limit: int = SUMMARY_CHARS) -> str:
    """A short, one-line account of a call's arguments for the log (long texts cut)."""
    parts = []
    for key, value in args.items():
        if value is None or value == "" or value == [] or value == {}:
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        text = " ".join(text.split())
        if len(text) > 60:
            text = text[:57] + "…"
        parts.append(f"{key}={text}")
    out = ", ".join(parts)
    return out if len(out) <= limit else out[: limit - 1] + "…"


def kept_arguments(args: dict[str, Any], limit: int = ARG_CHARS) -> str:
    """A call's arguments as JSON for the log (what a replay needs), each text cut at
    ``limit`` characters."""
    def cut(value: Any) -> Any:
        if isinstance(value, str):
            return value if len(value) <= limit else value[: limit - 1] + "…"
        if isinstance(value, list):
            return [cut(v) for v in value[:50]]
        if isinstance(value, dict):
            return {str(k): cut(v) for k, v in list(value.items())[:50]}
        return value if value is None or isinstance(value, (bool, int, float)) else str(value)

    return json.dumps({k: cut(v) for k, v in args.items() if v is not None}, ensure_ascii=False)


def record(store: MemoryStore, *, client: str, door: str, tool: str, scope: str = "", trust: str = "",
           args: dict[str, Any] | None = None, summary: str | None = None,
           memory_ids: list[str] | tuple[str, ...] = (), duration_ms: float = 0.0, ok: bool = True,
           error: str = "", at: float | None = None) -> int:
    """Append one call to the log (its own small transaction); returns its id. ``args``
    are kept (texts cut) for replaying the call; ``summary`` defaults to a short line
    made from them."""
    if door not in DOORS:
        raise StoreError(f"activity door must be one of {', '.join(DOORS)}, got {door!r}")
    args = args or {}
    summary = summarize(args) if summary is None else summary
    at = store.now() if at is None else at
    with store.tables.write():
        row_id = store.conn.execute(
            "INSERT INTO activity (at, client, door, tool, scope, trust, summary, args, memory_ids, duration_ms, "
            "ok, error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (at, client[:120], door, tool, scope, trust, summary[:SUMMARY_CHARS], kept_arguments(args),
             json.dumps(list(memory_ids)), round(float(duration_ms), 3), int(ok), error[:500])).lastrowid
        if row_id % PRUNE_EVERY == 0:
            prune(store, at)
    return row_id


def _entry(row: tuple) -> ActivityEntry:
    return ActivityEntry(row[0], row[1], row[2], row[3], row[4], row[5], row[6] or "", row[7],
                         json.loads(row[8] or "{}"), tuple(json.loads(row[9] or "[]")), row[10], bool(row[11]),
                         row[12] or "")


def recent(store: MemoryStore, limit: int = 500, *, client: str | None = None, tool: str | None = None,
           after_id: int = 0) -> list[ActivityEntry]:
    """The newest calls first, optionally of one client or tool, or only those after ``after_id``."""
    where, params = ["id > ?"], [after_id]
    if client:
        where.append("client = ?")
        params.append(client)
    if tool:
        where.append("tool = ?")
        params.append(tool)
    sql = ("SELECT id, at, client, door, tool, scope, trust, summary, args, memory_ids, duration_ms, ok, error "
           "FROM activity "
           f"WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?")
    with store.tables.reading():
        try:
            rows = store.conn.execute(sql, [*params, int(limit)]).fetchall()
        except sqlite3.OperationalError:  # a database opened read-only before the log existed
            return []
    return [_entry(r) for r in rows]


def clients_and_tools(store: MemoryStore) -> tuple[list[str], list[str]]:
    with store.tables.reading():
        try:
            clients = [r[0] for r in store.conn.execute("SELECT DISTINCT client FROM activity ORDER BY client")]
            tools = [r[0] for r in store.conn.execute("SELECT DISTINCT tool FROM activity ORDER BY tool")]
        except sqlite3.OperationalError:
            return [], []
    return clients, tools


def prune(store: MemoryStore, now: float) -> int:
    """Drop log rows beyond the newest ``keep_entries`` or older than ``keep_days``,
    citation maps older than ``keep_days``, and forgotten memories older than
    ``forgotten_keep_days``. Part of the caller's transaction; returns how many log rows
    went."""
    cfg = store.config.activity
    with store.tables.write():
        cur = store.conn.execute(
            "DELETE FROM activity WHERE at < ? OR id <= (SELECT coalesce(max(id), 0) FROM activity) - ?",
            (now - cfg.keep_days * decay.DAY, cfg.keep_entries))
        store.conn.execute("DELETE FROM conversations WHERE at < ?", (now - cfg.keep_days * decay.DAY,))
        store.conn.execute("DELETE FROM forgotten WHERE at < ?", (now - cfg.forgotten_keep_days * decay.DAY,))
        return cur.rowcount


# -- forgetting, with a way back ----------------------------------------------------------
def forget(store: MemoryStore, memory_id: str, *, client: str = "") -> DeletedMemory:
    """Delete a memory and keep what restoring it needs, in one transaction."""
    with store.tables.write():
        deleted = store.delete(memory_id)
        payload = {"row": deleted.row, "edges": [list(e) for e in deleted.edges],
                   "recall_events": deleted.recall_events}
        store.conn.execute("INSERT OR REPLACE INTO forgotten (memory_id, at, client, text, payload) "
                           "VALUES (?,?,?,?,?)",
                           (memory_id, store.now(), client, deleted.row["text"], json.dumps(payload)))
    return deleted


@dataclass(frozen=True)
class Forgotten:
    memory_id: str
    at: float
    client: str
    text: str


def forgotten(store: MemoryStore) -> list[Forgotten]:
    """Memories agents forgot that can still be restored, newest first."""
    with store.tables.reading():
        try:
            rows = store.conn.execute("SELECT memory_id, at, client, text FROM forgotten ORDER BY at DESC").fetchall()
        except sqlite3.OperationalError:
            return []
    return [Forgotten(*r) for r in rows]


def restore_forgotten(store: MemoryStore, memory_id: str) -> Memory:
    """Put a forgotten memory back, with its links and recall history."""
    with store.tables.write():
        row = store.conn.execute("SELECT payload FROM forgotten WHERE memory_id = ?", (memory_id,)).fetchone()
        if row is None:
            raise NotFound("forgotten memory", memory_id)
        payload = json.loads(row[0])
        deleted = DeletedMemory(payload["row"], [tuple(e) for e in payload["edges"]], payload["recall_events"])
        memory = store.restore(deleted)
        store.conn.execute("DELETE FROM forgotten WHERE memory_id = ?", (memory_id,))
    return memory
