"""The store's tables: one connection, its transactions, and the rows, inserts and links
that every operation shares.

:class:`Tables` is internal to the store (opening and checking the file is
:mod:`.files`). :class:`~mnemoscope.store.store.MemoryStore` is the
public face; ``recall``, ``jsonl`` and ``capture`` reach the tables through
``store.tables`` and never through a ``MemoryStore`` underscore method. Every SQLite or
OS error that escapes an operation becomes a :class:`StoreError` saying what to do.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..backends import DatabaseError
from ..forgetting import decay
from ..model.columns import BODY, COLUMN, MEMORY_FIELDS, STATE_COLUMNS, stored
from ..model.config import StoreConfig
from ..model.edges import EDGE_COLUMNS, MENTIONED_IN, MENTIONS, REFERENCED_BY, REFERENCES, SUPERSEDED_BY
from ..model.errors import StoreError, ValidationError, database_error
from ..model.memory import ENTITY_KINDS, LATEST, Entity, Memory, parse_time
from ..recall.text import term_string

if TYPE_CHECKING:
    from ..backends import Backend

# What a reinforcement (one recall) writes, and what a person's edit writes beside the
# fields it changes (``update`` with ``touch``): what their undo puts back, and no more.
REINFORCED = ("recall_count", "base", "ref_time", "last_recalled_at", "importance", "strength", "layer",
              "ticked_at")
TOUCHED = ("updated_at", "base", "ref_time", "strength", "layer", "ticked_at")
DECAY_STATE = ("strength", "layer", "ticked_at")
# A memory with its decay state (the memory_state table), every column as one row.
SELECT_MEMORY = "SELECT " + ", ".join(MEMORY_FIELDS) + " FROM memory_rows"
MEMORY_BATCH = 5000  # rows made into memories at a time (Tables.memories)


_WORK_OUT = object()  # Tables.state works out next_change itself (None is a value: never)


class Tables:
    """The connection and the row-level operations every store operation is made of.

    Methods that write expect to run inside :meth:`write`; none of them opens its own
    transaction, so an operation made of several is still one transaction.
    """

    def __init__(self, backend: Backend, config: StoreConfig) -> None:
        self.backend = backend  # every difference between the engines (store/backends/)
        self.sql = backend.sql  # the SQL that differs between them, built for this one
        self.conn = backend.conn
        self.path = backend.path
        self.config = config
        self.read_only = backend.read_only
        self._lock = threading.RLock()
        self._decay_noted = False
        self._fingerprint = json.dumps(config.decay.model_dump(), sort_keys=True)  # the config is frozen

    # -- transactions ----------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[Any]:
        """Hold the connection for a read; an SQLite error becomes a :class:`StoreError`.

        A read while another thread holds the connection (a write, or another read) runs
        on a connection of its own where the backend has one (PostgreSQL's pool) instead of
        waiting."""
        with ExitStack() as held:
            if self._lock.acquire(blocking=False):
                held.callback(self._lock.release)
            elif not held.enter_context(self.backend.aside()):
                self._lock.acquire()
                held.callback(self._lock.release)
            try:
                yield self.conn
            except (DatabaseError, OSError) as exc:
                raise database_error(self.path, exc) from exc

    @contextmanager
    def write(self) -> Iterator[Any]:
        """One write transaction, which takes the write lock up front (a writer in another
        process makes us wait instead of failing). Nested calls are part of the outer
        transaction."""
        with self._lock:
            if self.read_only:
                raise StoreError(f"{self.path} is open read-only; nothing was written. Copy it somewhere you "
                                 "may write to change it")
            if self.conn.in_transaction:
                yield self.conn
                return
            with self.backend.writing():
                yield from self._transaction()

    def _transaction(self) -> Iterator[Any]:
        try:
            self.backend.begin_write()
        except DatabaseError as exc:
            raise database_error(self.path, exc) from None
        try:
            yield self.conn
        except BaseException as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if isinstance(exc, (DatabaseError, OSError)):
                raise database_error(self.path, exc) from exc
            raise
        else:
            try:
                self.conn.execute("COMMIT")
            except DatabaseError as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise database_error(self.path, exc) from exc

    def rows(self, sql: str, params: tuple | list = ()) -> list[dict[str, Any]]:
        with self.reading():
            cur = self.conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def meta(self, key: str, default: str | None = None) -> str | None:
        with self.reading():
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(self.sql.upsert("meta", ("key", "value"), ("key",)), (key, value))

    # -- the clock -------------------------------------------------------------------------
    def clock_offset(self) -> float:
        return float(self.meta("clock_offset", "0") or 0)

    def wall_time(self) -> float:
        """Real time: this machine's clock, or on PostgreSQL the server's."""
        return self.backend.wall_time()

    def now(self, now: Any = None) -> float:
        """``now`` checked, or the store's clock: real time (on PostgreSQL the server's) plus the
        offset the user advanced it by."""
        if now is not None:
            return parse_time(now, "now")
        return round(self.wall_time() + self.clock_offset(), 3)

    def advance(self, days: float) -> float:
        """Move the clock ``days`` (checked) forward; returns the new offset in seconds."""
        offset = self.clock_offset() + days * decay.DAY
        if self.wall_time() + offset > LATEST:
            raise ValidationError("days", f"moving the clock {days:g} days forward would pass the end of year "
                                          "9999, the last time the store can keep")
        self.set_meta("clock_offset", repr(offset))
        return offset

    # -- memories --------------------------------------------------------------------------
    def exists(self, memory_id: str) -> bool:
        with self.reading():
            return self.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is not None

    def stored_ids(self, ids: list[str]) -> set[str]:
        """Those of ``ids`` the memory holds (a query per 500 ids, not one per id)."""
        found: set[str] = set()
        with self.reading():
            for first in range(0, len(ids), 500):
                chunk = ids[first:first + 500]
                found.update(r[0] for r in self.conn.execute(
                    f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return found

    def entity_exists(self, entity_id: str) -> bool:
        with self.reading():
            return self.conn.execute("SELECT 1 FROM entities WHERE id = ?", (entity_id,)).fetchone() is not None

    def memory_row(self, memory_id: str) -> dict[str, Any] | None:
        """Every stored column of a memory, or None when there is none with that id."""
        rows = self.rows("SELECT * FROM memory_rows WHERE id = ?", (memory_id,))
        return rows[0] if rows else None

    def memories(self, where: str = "", params: tuple | list = (), *, with_links: bool = True,
                 suffix: str = "") -> list[Memory]:
        """The memories the query selects, made ``MEMORY_BATCH`` rows at a time: a row as a
        dict of its columns costs four times its memory, and all of them at once (100,000
        when the window reads every memory) were the peak of the read. The short values
        many memories repeat (kind, scope, layer, who, topic, tags…) are one string each,
        not one per memory (SQLite hands out a new one for every row)."""
        out: list[Memory] = []
        same: dict[str, str] = {}
        with self.reading():
            last = self.last_tick()
            cursor = self.conn.execute(SELECT_MEMORY + (" WHERE " + where if where else "") + suffix, params)
            names = [d[0] for d in cursor.description]
            rows = iter(cursor)
            while batch := [dict(zip(names, row, strict=True)) for row in islice(rows, MEMORY_BATCH)]:
                self.derive_strengths(batch, last)
                links = self.links_for([r["id"] for r in batch]) if with_links else {}
                out += [memory_from_row(r, links.get(r["id"], ([], [])), same) for r in batch]
        return out

    def derive_strengths(self, rows: list[dict[str, Any]], last: float | None = None) -> None:
        """Set each row's strength as of its layer's time: the last tick (``last``, read
        when not given), or the row's own write if that came later. A tick writes only the
        memories whose layer changes, so the strength column of the others is older than
        their layer."""
        last = self.last_tick() if last is None else last
        stale = [r for r in rows if (r["ticked_at"] or 0.0) < last]
        if not stale:
            return
        strengths, _ = decay.states_at([decay.inputs(r) for r in stale], last, self.config.decay)
        for r, s in zip(stale, strengths):
            r["strength"] = s

    def links_for(self, ids: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        """Entity names (sorted) and referenced record ids of each memory in ``ids``."""
        out: dict[str, tuple[list[str], list[str]]] = {}
        with self.reading():
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                ph = ",".join("?" * len(chunk))
                for src, name in self.conn.execute(
                    "SELECT x.src, e.name FROM edges x JOIN entities e ON e.id = x.dst "
                    f"WHERE x.edge = '{MENTIONS}' AND x.src IN ({ph}) ORDER BY e.name", chunk):
                    out.setdefault(src, ([], []))[0].append(name)
                for src, dst in self.conn.execute(
                    f"SELECT src, dst FROM edges WHERE edge = '{REFERENCES}' AND src IN ({ph}) "
                    "ORDER BY dst", chunk):
                    out.setdefault(src, ([], []))[1].append(dst)
        return out

    def state(self, row: dict[str, Any], at: float, next_change: float | None | object = _WORK_OUT) -> dict[str, Any]:
        """The columns a memory's decay inputs determine at ``at``: strength, layer, the
        time they were worked out, and when the layer will next change (``next_change``
        when the caller worked it out, for many rows in one pass: decay.next_changes)."""
        self._note_decay_config()
        s, layer = decay.state_at(row, at, self.config.decay)
        if row.get("id") is not None and self.is_superseded(row["id"]):
            return {"strength": s, "layer": "archived", "ticked_at": at, "next_change_at": None}
        return {"strength": s, "layer": layer, "ticked_at": at,
                "next_change_at": decay.next_change(row, at, self.config.decay) if next_change is _WORK_OUT
                else next_change}

    def is_superseded(self, memory_id: str) -> bool:
        """Another memory replaced this one (store.conflicts.supersede): it stays archived,
        whatever its strength, and no tick is due for it."""
        return self.conn.execute(f"SELECT 1 FROM edges WHERE src = ? AND edge = '{SUPERSEDED_BY}' LIMIT 1",
                                 (memory_id,)).fetchone() is not None

    def superseded_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute(f"SELECT src FROM edges WHERE edge = '{SUPERSEDED_BY}'")}

    def superseded_rowids(self) -> list[int]:
        """The rowids of :meth:`superseded_ids`."""
        return [r[0] for r in self.conn.execute(
            f"SELECT m.rowid FROM edges e JOIN memories m ON m.id = e.src WHERE e.edge = '{SUPERSEDED_BY}'")]

    def decay_fingerprint(self) -> str:
        """The decay numbers layers are worked out with, as stored beside them."""
        return self._fingerprint

    def _note_decay_config(self) -> None:
        """Once per store, before the first layer is worked out: if the stored layers were
        worked out with other decay numbers, mark them so that the next tick looks at
        every memory (an empty store simply takes these numbers)."""
        if self._decay_noted:
            return
        self._decay_noted = True
        current = self.decay_fingerprint()
        if self.meta("decay_config") != current:
            empty = self.conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is None
            self.set_meta("decay_config", current if empty else "")

    def refresh_state(self, memory_id: str) -> None:
        """Work a memory's layer out again after its decay inputs were changed in SQL."""
        row = self.memory_row(memory_id)
        if row is not None:
            state = self.state(row, max(row["ticked_at"] or 0.0, self.last_tick(), row["ref_time"]))
            self.write_memory(memory_id, state)

    def last_tick(self) -> float:
        """When the last tick (not undone) ran: every layer is as of then, or later."""
        return float(self.meta("ticked_at", "0") or 0)

    def insert_memory(self, row: dict[str, Any], now: float, state: dict[str, Any] | None = None) -> None:
        """Insert a memory (its fields as a caller gives them: tags a list, pinned a flag);
        strength, layer and search terms are derived here (the decay state may be given)."""
        stored_row = dict(stored(row), terms=search_terms(row))
        stored_row.update(state or self.state(stored_row, now))
        self.insert_row({c: stored_row.get(c, COLUMN[c].default) for c in (*BODY, *STATE_COLUMNS)})

    @staticmethod
    def memory_values(row: dict[str, Any]) -> tuple:
        """A memory's stored columns (``columns.BODY``) for :meth:`insert_memories`, its
        rowid aside, from its fields as a caller gives them (pure Python, no SQL: an import
        works them out while its vectors are being made)."""
        terms = search_terms(row)
        return tuple(terms if c == "terms" else COLUMN[c].stored(row.get(c, COLUMN[c].default)) for c in BODY)

    def prepared(self, records: list[dict[str, Any]], at: float) -> dict[str, tuple[tuple, tuple]]:
        """Memory id -> what :meth:`insert_memories` writes for each record about to be
        imported (a memory's fields, tags as a list): its stored columns and its decay state
        at ``at``, the decay state of all of them in one numpy pass (per row it was most of
        an insert's time). No SQL."""
        if not records:
            return {}
        strengths, layers, nexts = decay.tick_states([decay.inputs(r) for r in records], at, self.config.decay)
        return {rec["id"]: (self.memory_values(rec), (strength, layer, at, next_change))
                for rec, strength, layer, next_change in zip(records, strengths, layers, nexts)}

    def insert_memories(self, values: list[tuple], states: list[tuple]) -> list[int]:
        """Insert many memories, each as :meth:`memory_values` gives it with its decay state
        (``STATE_COLUMNS``) worked out by the caller (store.importers, for a batch in one
        numpy pass), in two statements; returns the rowids they got, in order."""
        if not values:
            return []
        self._note_decay_config()
        rowids = self.new_rowids(len(values))
        # One statement each (on PostgreSQL one COPY: the triggers that keep counts, schema
        # 13, write each count once, not once per memory); the full-text index takes the
        # batch at once (store/backends/: bulk_memories).
        with self.backend.bulk_memories() as indexed:
            self.backend.insert_many("memories", ("rowid", *BODY), [(rowid, *row) for rowid, row in zip(rowids, values)])
            indexed(rowids[0], rowids[-1])
        self.backend.insert_many("memory_state", ("rowid", *STATE_COLUMNS),
                                 [(rowid, *st) for rowid, st in zip(rowids, states)])
        return rowids

    def new_rowids(self, n: int) -> list[int]:
        """Numbers for ``n`` memories about to be inserted with them, in one statement."""
        return self.backend.new_rowids(n)

    def insert_row(self, row: dict[str, Any]) -> None:
        """Insert a memory's stored columns as given: its decay state into memory_state,
        under the rowid the rest got in memories."""
        body = [c for c in row if c not in STATE_COLUMNS]
        rowid = self.backend.insert_one("memories", {c: row[c] for c in body}, "rowid")
        self.conn.execute(f"INSERT INTO memory_state (rowid, {', '.join(STATE_COLUMNS)}) "
                          f"VALUES (?, {', '.join('?' * len(STATE_COLUMNS))})",
                          (rowid, *(row.get(c) for c in STATE_COLUMNS)))

    def write_memory(self, memory_id: str, values: dict[str, Any]) -> None:
        """Set stored columns of a memory: its decay state in memory_state, the rest in memories."""
        body = [c for c in values if c not in STATE_COLUMNS]
        state = [c for c in values if c in STATE_COLUMNS]
        if body:
            self.conn.execute(f"UPDATE memories SET {', '.join(c + ' = ?' for c in body)} WHERE id = ?",
                              [values[c] for c in body] + [memory_id])
        if state:
            self.conn.execute(f"UPDATE memory_state SET {', '.join(c + ' = ?' for c in state)} "
                              "WHERE rowid = (SELECT rowid FROM memories WHERE id = ?)",
                              [values[c] for c in state] + [memory_id])

    def delete_memory(self, memory_id: str) -> None:
        """Delete a memory with its edges (both directions) and recall events."""
        self.conn.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (memory_id, memory_id))
        self.conn.execute("DELETE FROM recall_events WHERE memory_id = ?", (memory_id,))
        self.conn.execute("DELETE FROM memory_state WHERE rowid = (SELECT rowid FROM memories WHERE id = ?)",
                          (memory_id,))
        self.conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))

    def add_recall_events(self, memory_id: str, times: list[float]) -> None:
        self.conn.executemany("INSERT INTO recall_events (memory_id, at) VALUES (?, ?)",
                              [(memory_id, t) for t in times])

    def reinforce(self, memory_id: str, now: float, importance: float | None = None) -> bool:
        """Count one recall at ``now``; False (and nothing written) when the memory is gone,
        as when another process deleted it after a recall read it."""
        row = self.memory_row(memory_id)
        if row is None:
            return False
        row["recall_count"] += 1
        row["base"] = 1.0
        row["ref_time"] = now
        if importance is not None:
            row["importance"] = max(row["importance"], importance)
        state = self.state(row, now)
        self.write_memory(memory_id, {"recall_count": row["recall_count"], "base": 1.0, "ref_time": now,
                                      "last_recalled_at": now, "importance": row["importance"],
                                      **state, "ticked_at": now})
        self.add_recall_events(memory_id, [now])
        return True

    # -- entities and links ----------------------------------------------------------------
    def entities(self, scope: str | None = None) -> list[Entity]:
        sql = "SELECT id, name, kind, scope, aliases FROM entities"
        params: list[Any] = []
        if scope is not None:
            sql += " WHERE scope IN (?, 'global')"
            params.append(scope)
        with self.reading():
            return [Entity(r[0], r[1], r[2], r[3], json.loads(r[4] or "[]"))
                    for r in self.conn.execute(sql + " ORDER BY name", params)]

    def entity_names(self, scopes: Sequence[str]) -> Iterator[tuple[str, str, str, tuple[str, ...]]]:
        """(id, name, kind, every name it goes by: the name, then its aliases) of each entity of
        ``scopes``. A text and a query are compared with all of them at every remember and
        recall: no Entity is made, and an entity without aliases has none parsed."""
        with self.reading():
            rows = self.conn.execute(f"SELECT id, name, kind, aliases FROM entities WHERE scope IN "
                                     f"({','.join('?' * len(scopes))})", tuple(scopes)).fetchall()
        for eid, name, kind, kept in rows:
            if not kept or kept == "[]":
                yield eid, name, kind, (name,)
                continue
            try:
                aliases = json.loads(kept)
            except ValueError:
                aliases = []
            yield eid, name, kind, (name, *[a for a in aliases if isinstance(a, str)])

    def resolve_entity(self, name: str, kind: str | None, scope: str, now: float, created: list[Entity],
                       aliases: list[str] | None = None, readable: tuple[str, ...] | None = None) -> str:
        """The id of the entity called ``name`` (or with that alias), same scope first,
        then global; created in ``scope`` (and added to ``created``) when none exists.
        With ``readable`` (an agent's), an alias of an entity only memories it may not
        read name is not followed: the answer would give that entity's name away."""
        low = name.strip().lower()
        rows = self.conn.execute(
            "SELECT id, scope FROM entities WHERE lower(name) = ? AND scope IN (?, 'global') "
            "ORDER BY scope = ? DESC LIMIT 1", (low, scope, scope)).fetchall()
        if not rows:
            for eid, escope, al in self.conn.execute(
                "SELECT id, scope, aliases FROM entities WHERE aliases != '[]' AND scope IN (?, 'global') "
                "ORDER BY scope = ? DESC", (scope, scope)).fetchall():
                if readable is not None and self.entity_unseen(eid, readable, scope):
                    continue
                if low in (a.lower() for a in json.loads(al)):
                    rows = [(eid, escope)]
                    break
        if rows:
            return rows[0][0]
        if kind is not None and kind not in ENTITY_KINDS:
            raise ValidationError("entities.kind", f"must be one of {', '.join(ENTITY_KINDS)}, got {kind!r}")
        eid = "e-" + uuid.uuid4().hex[:12]
        ent = Entity(eid, name.strip(), kind or "other", scope, list(aliases or []))
        self.conn.execute("INSERT INTO entities (id, name, kind, scope, aliases, created_at) VALUES (?,?,?,?,?,?)",
                          (eid, ent.name, ent.kind, scope, json.dumps(ent.aliases, ensure_ascii=False), now))
        created.append(ent)
        return eid

    def entity_unseen(self, eid: str, readable: tuple[str, ...], scope: str) -> bool:
        """Whether memories name the entity ``eid`` and none of them is one a writer in
        ``scope`` who may read ``readable`` sees (in its scope or global, of a readable
        sensitivity): it must not learn of it, nor of its aliases."""
        ph = ",".join("?" * len(readable))
        named, seen = self.conn.execute(
            f"SELECT count(*), sum(CASE WHEN m.sensitivity IN ({ph}) AND m.scope IN (?, 'global') THEN 1 ELSE 0 END) "
            "FROM edges x JOIN memories m ON m.id = x.src WHERE x.edge = 'mentions_entity' AND x.dst = ?",
            (*readable, scope, eid)).fetchone()
        return bool(named) and not seen

    def set_entities(self, memory_id: str, specs: list[Any], scope: str, now: float,
                     created: list[Entity], edges: list[tuple[str, str, str]],
                     readable: tuple[str, ...] | None = None) -> None:
        """Link a memory to exactly these entities (names, or dicts with name, kind and
        aliases); ``readable``: see :meth:`resolve_entity`."""
        self.conn.execute(f"DELETE FROM edges WHERE (src = ? AND edge = '{MENTIONS}') "
                          f"OR (dst = ? AND edge = '{MENTIONED_IN}')", (memory_id, memory_id))
        for spec in specs:
            name, kind = (spec.get("name"), spec.get("kind")) if isinstance(spec, dict) else (spec, None)
            aliases = spec.get("aliases") if isinstance(spec, dict) else None
            eid = self.resolve_entity(name, kind, scope, now, created, aliases, readable)
            self.edge_pair(memory_id, MENTIONS, eid, MENTIONED_IN, now, edges)

    def reference(self, src: str, dst: str, now: float, edges: list[tuple[str, str, str]]) -> None:
        """``src`` references ``dst`` (and ``dst`` is referenced by ``src``)."""
        self.edge_pair(src, REFERENCES, dst, REFERENCED_BY, now, edges)

    def edge_pair(self, src: str, edge: str, dst: str, inverse: str, now: float,
                  edges: list[tuple[str, str, str]]) -> None:
        """Write an edge and its inverse; record in ``edges`` the ones that were new."""
        for a, kind, b in ((src, edge, dst), (dst, inverse, src)):
            cur = self.conn.execute(self.sql.insert_if_absent("edges", EDGE_COLUMNS), (a, kind, b, now))
            if cur.rowcount:
                edges.append((a, kind, b))


def memory_from_row(row: dict[str, Any], links: tuple[list[str], list[str]] = ([], []),
                    same: dict[str, str] | None = None) -> Memory:
    """A row of ``memory_rows`` as a Memory (every field of ``columns.MEMORY_FIELDS``);
    ``same`` (shared by the rows of one read) makes equal short values one string."""
    one = (same if same is not None else {}).setdefault  # one(value, value): the read's string equal to value
    fields = {name: row[name] for name in _AS_STORED}
    for name in _SHARED:
        value = row[name]
        fields[name] = one(value, value) if value is not None else None
    for name in _SHARED_TEXT:
        value = row[name] or ""
        fields[name] = one(value, value)
    for name in _TEXT:
        fields[name] = row[name] or ""
    for name in _FLAGS:
        fields[name] = bool(row[name])
    for name in _JSON:
        fields[name] = None if row[name] is None else json.loads(row[name])
    for name in _LISTS:
        value = row[name]  # most memories have none: "[]" is not parsed (a tenth of a 100,000-memory read)
        fields[name] = [one(t, t) if isinstance(t, str) else t for t in json.loads(value)] \
            if value and value != "[]" else []
    ents, refs = links
    return Memory(**fields, entities=[one(e, e) for e in ents], references=list(refs))


# How a read makes each field of a Memory (memory_from_row), by its column's declaration.
_READ = [COLUMN[n] for n in MEMORY_FIELDS]
_SHARED = tuple(c.name for c in _READ if c.shared and c.export in ("value", None))
_SHARED_TEXT = tuple(c.name for c in _READ if c.shared and c.export == "text")
_TEXT = tuple(c.name for c in _READ if not c.shared and c.export == "text")
_FLAGS = tuple(c.name for c in _READ if c.export == "flag")
_JSON = tuple(c.name for c in _READ if c.export == "json")
_LISTS = tuple(c.name for c in _READ if c.export == "list")
_AS_STORED = tuple(c.name for c in _READ if c.name not in (*_SHARED, *_SHARED_TEXT, *_TEXT, *_FLAGS, *_JSON, *_LISTS))


def search_terms(row: dict[str, Any]) -> str:
    """A memory's search terms (the ``terms`` column), from its text, who and topic."""
    return term_string(row["text"], row.get("who") or "", row.get("topic") or "")

