"""Copy a whole memory from one store to another, across backends (SQLite and PostgreSQL
either way): memories with their decay state and vectors, entities, edges, recall
history, ticks with their log and undo, the activity log, forgotten memories and the
agents' citation maps, and the clock. Into an empty store only, in one transaction of
the target: stopped at any point, the target is empty or the copy is whole.

Row numbers (the ``rowid`` that ties a memory to its state and vector) are the target's
own; ticks and activity keep their ids (the inspector names ticks by id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model.columns import BODY, COPIED, STATE_COLUMNS
from ..model.errors import StoreError

if TYPE_CHECKING:
    from ..store import MemoryStore

# A memory's columns (store/model/columns.py): those of the memories table, and its decay state.
MEMORY_BODY = tuple(c for c in BODY if c in COPIED)
STATE = tuple(c for c in STATE_COLUMNS if c in COPIED)
# Every other table, with its columns, in an order that keeps references valid.
TABLES = {
    "entities": ("id", "name", "kind", "scope", "aliases", "created_at"),
    "edges": ("src", "edge", "dst", "created_at"),
    "recall_events": ("memory_id", "at"),
    "ticks": ("id", "at", "offset_before", "offset_after", "created", "undone", "summary", "undo"),
    "tick_log": ("tick_id", "memory_id", "from_layer", "to_layer", "strength_before", "strength_after"),
    "activity": ("id", "at", "client", "door", "tool", "scope", "trust", "summary", "args", "memory_ids",
                 "duration_ms", "ok", "error", "sensitivity"),
    "forgotten": ("memory_id", "at", "client", "text", "payload"),
    "conversations": ("context", "conversation_id", "turn", "at", "model", "query", "ref_map"),
}
# Kept by the target itself: its schema, the count its triggers keep, and its identity (a
# copy is another database: its backups are its own).
OWN_META = ("schema_version", "vectors_generation", "recall_vectors_generation", "vectors_count",
            "recall_vectors_count", "database_id")
# kept in the order they were written (exports read entities and edges in that order)
ORDERED = {"entities": "rowid", "edges": "rowid", "recall_events": "rowid", "tick_log": "rowid"}
CHUNK = 2000


@dataclass
class CopyReport:
    source: str
    target: str
    counts: dict[str, int]

    def summary(self) -> str:
        return f"copied {self.source} to {self.target}: " + ", ".join(f"{n} {t}" for t, n in self.counts.items())


def copy_memory(src: MemoryStore, dst: MemoryStore) -> CopyReport:
    """Copy everything of ``src`` into ``dst``, which must hold nothing yet."""
    if dst.read_only:
        raise StoreError(f"{dst.path} is open read-only; nothing was written")
    counts: dict[str, int] = {}
    with dst.tables.write():
        held = [t for t in ("memories", "entities", "ticks", "activity", "forgotten")
                if dst.conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()]
        if held:
            raise StoreError(f"{dst.path} is not empty (it has {', '.join(held)}); copy only into a new, empty "
                             "memory; nothing was written")
        with src.tables.reading():
            meta = [r for r in src.conn.execute("SELECT key, value FROM meta ORDER BY key") if r[0] not in OWN_META]
            for key, value in meta:
                dst.tables.set_meta(key, value)
            counts["memories"] = _copy_memories(src, dst)
            for table, columns in TABLES.items():
                counts[table] = _copy_table(src, dst, table, columns)
        dst.tables.backend.after_copy()  # the numbering goes on after the copied ids
    return CopyReport(src.path, dst.path, counts)


def _copy_memories(src: MemoryStore, dst: MemoryStore) -> int:
    """The memories, their decay state and vectors, each in one statement (one COPY on
    PostgreSQL: the counts its triggers keep, schema 13, move once, not once per memory)."""
    cols = ", ".join(f"m.{c}" for c in MEMORY_BODY) + ", " + ", ".join(f"s.{c}" for c in STATE)
    rows = src.conn.execute(f"SELECT {cols}, v.vec, r.vec FROM memories m JOIN memory_state s ON s.rowid = m.rowid "
                            "LEFT JOIN vectors v ON v.rowid = m.rowid LEFT JOIN recall_vectors r ON r.rowid = m.rowid "
                            "ORDER BY m.rowid").fetchall()
    rowids = dst.tables.new_rowids(len(rows))
    state = slice(len(MEMORY_BODY), len(MEMORY_BODY) + len(STATE))
    dst.tables.backend.insert_many("memories", ("rowid", *MEMORY_BODY),
                [(rowid, *row[:len(MEMORY_BODY)]) for rowid, row in zip(rowids, rows)])
    dst.tables.backend.insert_many("memory_state", ("rowid", *STATE), [(rowid, *row[state]) for rowid, row in zip(rowids, rows)])
    for table, at in (("vectors", -2), ("recall_vectors", -1)):
        dst.tables.backend.insert_many(table, ("rowid", "vec"),
                                       [(rowid, bytes(row[at])) for rowid, row in zip(rowids, rows) if row[at] is not None])
    return len(rows)


def _copy_table(src: MemoryStore, dst: MemoryStore, table: str, columns: tuple[str, ...]) -> int:
    names = ", ".join(columns)
    order = ORDERED.get(table, columns[0])
    rows = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
            for r in src.conn.execute(f"SELECT {names} FROM {table} ORDER BY {order}").fetchall()]
    insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
    for start in range(0, len(rows), CHUNK):
        dst.conn.executemany(insert, rows[start:start + CHUNK])
    return len(rows)
