"""What agents did: the activity log, and the memories they forgot.

Every call through the MCP server or the HTTP API, and every write from the command
line, is one row of the activity log: when, which client, which tool, in which scope, a
short summary of the arguments, the memory ids it returned or wrote, and how long it
took. The log is bounded (the newest ``keep_entries`` rows, none older than ``keep_days``
by the store's clock); :meth:`MemoryStore.tick` prunes it, and so does every
``PRUNE_EVERY``-th recorded call, so a store that is never ticked stays bounded too.

The log is read at a trust, like the memories: each row carries the sensitivity of what
it holds (the most sensitive memory it wrote or returned, or the sensitivity a write
asked for, never more than its caller's trust), and a reader below it sees the row with
its texts left out (:func:`recent`). A refused call keeps no texts, and forgetting a
memory removes the texts of every row about it.

A memory an agent forgets is deleted, and what :meth:`MemoryStore.restore` needs to put
it back is kept in the ``forgotten`` table until a person restores it from the
inspector, or ``forgotten_keep_days`` pass.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..backends import SchemaBehind
from ..forgetting import decay
from ..model.errors import NotFound, StoreError
from ..model.memory import SENSITIVITIES, SENSITIVITY_RANK
from ..model.results import DeletedMemory

if TYPE_CHECKING:
    from ..model.memory import Memory
    from ..store import MemoryStore

DOORS = ("mcp", "http", "cli", "python")  # python: a framework adapter (mnemoscope.adapters)
PRUNE_EVERY = 256
SUMMARY_CHARS = 200
ARG_CHARS = 2000
BACKSLASH = "\\"  # what escapes a LIKE pattern's wildcards
SCOPE_CHARS = 140  # a refused scope is logged as given, cut
# Arguments that are settings, not texts: what a row still shows when its texts are left out.
SETTINGS = frozenset(("kind", "importance", "scope", "sensitivity", "k", "explain", "limit", "model", "max_tokens",
                      "placement", "memory_id", "conversation_id", "turn", "pinned", "source_kind", "proposed_type",
                      "proposed_kind", "policy", "days", "trust", "first", "second"))
_INPUT_VALUE = re.compile(r"input_value=.*?(?=, input_type=|\]|$)")
COLUMNS = ("id, at, client, door, tool, scope, trust, summary, args, memory_ids, duration_ms, ok, error, sensitivity, "
           "called_at")


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
    sensitivity: str = "low"  # of what the row holds
    redacted: bool = False    # its texts are left out for this reader
    # When the call happened by the wall clock (``at`` is the store's clock, which Advance
    # moves); None for a row logged before it was kept.
    called_at: float | None = None

    @property
    def when(self) -> float:
        """The moment to show a person: the wall clock's, else the store's."""
        return self.at if self.called_at is None else self.called_at

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "client": self.client, "door": self.door, "tool": self.tool,
                "scope": self.scope, "trust": self.trust, "summary": self.summary, "args": self.args,
                "memory_ids": list(self.memory_ids), "duration_ms": self.duration_ms, "ok": self.ok,
                "error": self.error, "sensitivity": self.sensitivity, "redacted": self.redacted,
                "called_at": self.called_at}


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


def settings_only(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with every text left out: a replay of the row finds nothing to replay."""
    return {k: v for k, v in args.items() if k in SETTINGS and v is not None and not isinstance(v, (dict, list))}


def _text(value: str) -> str:
    """``value`` as text both engines can store: a lone surrogate (from JSON's ``\\ud800``)
    becomes ``?``, a NUL (which PostgreSQL's text refuses: the line was lost) ``\\x00``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value.replace("\x00", "\\x00")


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_storable(v) for v in value[:50]]
    if isinstance(value, dict):
        return {_text(str(k)): _storable(v) for k, v in list(value.items())[:50]}
    return value


def _sensitivity_of(store: MemoryStore, args: dict[str, Any], memory_ids: list[str] | tuple[str, ...],
                    trust: str) -> str:
    """What a row holds: the sensitivity a write asked for and that of each memory it names,
    never more than its caller's trust (a caller cannot have read or written above it)."""
    ranks = [SENSITIVITY_RANK["low"]]
    if args.get("sensitivity") in SENSITIVITY_RANK:
        ranks.append(SENSITIVITY_RANK[args["sensitivity"]])
    ids = [m for m in dict.fromkeys(memory_ids) if isinstance(m, str)][:500]
    if ids:
        ranks += [SENSITIVITY_RANK.get(r[0], len(SENSITIVITIES) - 1) for r in store.conn.execute(
            f"SELECT sensitivity FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids)]
    rank = max(ranks)
    if trust in SENSITIVITY_RANK:
        rank = min(rank, SENSITIVITY_RANK[trust])
    return SENSITIVITIES[rank]


def record(store: MemoryStore, *, client: str, door: str, tool: str, scope: str = "", trust: str = "",
           args: dict[str, Any] | None = None, summary: str | None = None,
           memory_ids: list[str] | tuple[str, ...] = (), duration_ms: float = 0.0, ok: bool = True,
           error: str = "", at: float | None = None, sensitivity: str | None = None) -> int:
    """Append one call to the log (its own small transaction); returns its id. ``args``
    are kept (texts cut) for replaying the call, except for a refused call, which keeps
    only its settings; ``summary`` defaults to a short line made from them. The row's
    ``sensitivity`` is worked out from what it names when not given (see the module)."""
    if door not in DOORS:
        raise StoreError(f"activity door must be one of {', '.join(DOORS)}, got {door!r}")
    args = _storable(args or {})
    if not ok:
        args = settings_only(args)
    summary = summarize(args) if summary is None else _text(summary)
    error = _INPUT_VALUE.sub("input_value=…", _text(error))
    # the wall clock's moment: now, or for a given store time the moment it stands for today
    called_at = store.tables.backend.wall_time() if at is None else at - store.tables.clock_offset()
    at = store.now() if at is None else at
    with store.tables.write():
        if sensitivity not in SENSITIVITY_RANK:
            sensitivity = _sensitivity_of(store, args, memory_ids, trust)
        row_id = store.tables.backend.insert_one("activity", {
            "at": at, "client": _text(client)[:120], "door": door, "tool": tool, "scope": _text(scope)[:SCOPE_CHARS],
            "trust": trust, "summary": summary[:SUMMARY_CHARS], "args": kept_arguments(args),
            "memory_ids": json.dumps(list(memory_ids)), "duration_ms": round(float(duration_ms), 3), "ok": int(ok),
            "error": error[:500], "sensitivity": sensitivity, "called_at": called_at}, "id")
        if row_id % PRUNE_EVERY == 0:
            prune(store, at)
    return row_id


def error_text(error: BaseException | str | None) -> str:
    """How a failed call's error reads in the log: a door's own message as it is, an
    exception as its type and message."""
    if error is None or isinstance(error, str):
        return error or ""
    return f"{type(error).__name__}: {error}"


def record_call(store: MemoryStore, *, started: float, client: str, door: str, tool: str, scope: str = "",
                trust: str = "", args: dict[str, Any] | None = None, memory_ids: list[str] | tuple[str, ...] = (),
                error: BaseException | str | None = None) -> None:
    """Record one call a door ran, timed from ``started`` (``time.perf_counter()``), with
    ``error`` when it failed or was refused. A read-only or busy database loses the line,
    never the call's own outcome."""
    with suppress(StoreError):
        record(store, client=client, door=door, tool=tool, scope=scope, trust=trust, args=args,
               memory_ids=memory_ids, duration_ms=(time.perf_counter() - started) * 1000, ok=error is None,
               error=error_text(error))


@contextmanager
def logged(store: MemoryStore, *, client: str, door: str, tool: str, scope: str = "", trust: str = "",
           args: dict[str, Any] | None = None) -> Iterator[list[str]]:
    """Time the calls in the block and record them as one call, with the memory ids the
    block appends to the yielded list, whether it succeeds or fails (the error goes on up)."""
    ids: list[str] = []
    started = time.perf_counter()
    call = {"client": client, "door": door, "tool": tool, "scope": scope, "trust": trust, "args": args}
    try:
        yield ids
    except Exception as exc:
        record_call(store, started=started, memory_ids=ids, error=exc, **call)
        raise
    record_call(store, started=started, memory_ids=ids, **call)


def _entry(row: tuple, max_rank: int) -> ActivityEntry:
    sensitivity = row[13] if row[13] in SENSITIVITY_RANK else SENSITIVITIES[-1]
    args = json.loads(row[8] or "{}")
    summary = row[7]
    redacted = SENSITIVITY_RANK[sensitivity] > max_rank
    if redacted:
        args = settings_only(args)
        summary = f"(texts above your trust: {sensitivity}) " + summarize(args)
    return ActivityEntry(row[0], row[1], row[2], row[3], row[4], row[5], row[6] or "", summary, args,
                         tuple(json.loads(row[9] or "[]")), row[10], bool(row[11]), row[12] or "", sensitivity,
                         redacted, row[14])


def recent(store: MemoryStore, limit: int = 500, *, client: str | None = None, tool: str | None = None,
           after_id: int = 0, trust: str = "medium") -> list[ActivityEntry]:
    """The newest calls first, optionally of one client or tool, or only those after ``after_id``,
    as a reader at ``trust`` may see them: a row holding more has its texts left out."""
    if trust not in SENSITIVITY_RANK:
        raise StoreError(f"trust must be one of {', '.join(SENSITIVITIES)}, got {trust!r}")
    where, params = ["id > ?"], [after_id]
    if client:
        where.append("client = ?")
        params.append(client)
    if tool:
        where.append("tool = ?")
        params.append(tool)
    sql = f"SELECT {{}} FROM activity WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?"
    with store.tables.reading():
        rows = []
        # a database opened read-only before the log existed has none; one from before the
        # wall clock was kept (schema 11) has no ``called_at``
        for columns in (COLUMNS, COLUMNS.replace("called_at", "NULL")):
            try:
                rows = store.conn.execute(sql.format(columns), [*params, int(limit)]).fetchall()
                break
            except SchemaBehind:
                continue
    return [_entry(r, SENSITIVITY_RANK[trust]) for r in rows]


def find(store: MemoryStore, where: str, params: list | tuple, *, trust: str = "medium", limit: int = 100,
         oldest_first: bool = False) -> list[ActivityEntry]:
    """The log's rows matching an SQL condition (written by the store's own modules, with
    ``params`` for every value), read at ``trust`` as :func:`recent` reads them."""
    if trust not in SENSITIVITY_RANK:
        raise StoreError(f"trust must be one of {', '.join(SENSITIVITIES)}, got {trust!r}")
    order = "ASC" if oldest_first else "DESC"
    with store.tables.reading():
        for columns in (COLUMNS, COLUMNS.replace("called_at", "NULL")):
            try:
                rows = store.conn.execute(f"SELECT {columns} FROM activity WHERE {where} ORDER BY id {order} LIMIT ?",
                                          [*params, int(limit)]).fetchall()
                break
            except SchemaBehind:
                rows = []
    return [_entry(r, SENSITIVITY_RANK[trust]) for r in rows]


def clients_and_tools(store: MemoryStore) -> tuple[list[str], list[str]]:
    with store.tables.reading():
        try:
            clients = [r[0] for r in store.conn.execute("SELECT DISTINCT client FROM activity ORDER BY client")]
            tools = [r[0] for r in store.conn.execute("SELECT DISTINCT tool FROM activity ORDER BY tool")]
        except SchemaBehind:
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
def scrub(store: MemoryStore, memory_id: str, text: str) -> int:
    """Leave out the texts of every log row about a memory: those naming its id, and those
    holding its text. Part of the caller's transaction; returns how many rows changed."""
    needle = json.dumps(text, ensure_ascii=False)[1:-1][:ARG_CHARS - 1] or memory_id
    pattern = '%"' + memory_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + '"%'
    with store.tables.write():
        rows = store.conn.execute(
            f"SELECT id, args FROM activity WHERE {store.tables.sql.like('memory_ids', escape=BACKSLASH)} "
            f"OR {store.tables.sql.holds('args')}",
            (pattern, needle)).fetchall()
        for row_id, args in rows:
            kept = settings_only(json.loads(args or "{}"))
            store.conn.execute("UPDATE activity SET args = ?, summary = ? WHERE id = ?",
                               (kept_arguments(kept), f"(texts removed: {memory_id} was forgotten) "
                                + summarize(kept), row_id))
    return len(rows)


def forget(store: MemoryStore, memory_id: str, *, client: str = "") -> DeletedMemory:
    """Delete a memory and keep what restoring it needs (only there: the log's rows about
    it lose their texts), in one transaction."""
    with store.tables.write():
        deleted = store.delete(memory_id)
        scrub(store, memory_id, deleted.row["text"])
        payload = {"row": deleted.row, "edges": [list(e) for e in deleted.edges],
                   "recall_events": deleted.recall_events}
        store.conn.execute(store.tables.sql.upsert("forgotten", ("memory_id", "at", "client", "text", "payload"),
                                                   ("memory_id",)),
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
        except SchemaBehind:
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
