"""MemoryStore: an agent's long-term memory in one SQLite file.

Every operation that writes is whole: it runs in one ``BEGIN IMMEDIATE`` transaction
and returns what changed, so a caller (the inspector's undo stack) can show and reverse
it. Queries never write. Time is always a parameter (``now``); when omitted it is the
store's clock, real time plus an offset kept in the database.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from . import activity, decay
from .config import KINDS, StoreConfig
from .errors import DatabaseRefused, NotFound, StoreError, ValidationError
from .model import (
    ENTITY_KINDS,
    LAYERS,
    SENSITIVITIES,
    Memory,
    parse_time,
    validate_fields,
    validate_scope,
)
from .schema import KNOWN_MIGRATIONS, MIGRATION_SET, SCHEMA_VERSION, migrations
from .text import cosine, term_string, vector

SQLITE_HEADER = b"SQLite format 3\x00"
CONFIG_ENV = "MNEMOSCOPE_CONFIG"  # a TOML file with the store's numbers
BUSY_TIMEOUT_MS = 10_000
_MEMORY_COLUMNS = (
    "id", "text", "kind", "importance", "who", "topic", "scope", "sensitivity", "tags", "source", "source_kind",
    "created_at", "updated_at", "ref_time", "base", "recall_count", "last_recalled_at", "pinned",
    "half_life_days", "strength", "layer", "ticked_at",
)
_SELECT = "SELECT " + ", ".join(_MEMORY_COLUMNS) + " FROM memories"


@dataclass
class Entity:
    id: str
    name: str
    kind: str
    scope: str
    aliases: list[str]


@dataclass
class RememberResult:
    memory: Memory
    created: bool
    message: str
    similarity: float | None = None
    before: Memory | None = None  # the reinforced memory before, when not created
    entities_created: list[Entity] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    conflicts: list = field(default_factory=list)  # likely conflicts with older memories (store.conflicts)


@dataclass
class UpdateResult:
    before: Memory
    after: Memory


@dataclass
class DeletedMemory:
    """Everything :meth:`MemoryStore.restore` needs to put a deleted memory back."""

    row: dict[str, Any]
    edges: list[tuple[str, str, str, float | None]]
    recall_events: list[float]
    entities_removed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.row["id"]


@dataclass
class TickReport:
    tick_id: int | None
    now: float
    transitions: list[tuple[str, str, str]]
    counts: dict[str, int]
    layer_counts: dict[str, int]
    changed: int
    offset_before: float = 0.0
    offset_after: float = 0.0

    def summary(self) -> str:
        if not self.counts:
            return "no memory changed layer"
        return ", ".join(f"{n} {label}" for label, n in sorted(self.counts.items(), key=lambda kv: -kv[1]))


def _transition_label(before: str, after: str) -> str:
    return f"→ {after}" if after == "archived" else f"{before} → {after}"


class MemoryStore:
    """The decay store over one SQLite file (``":memory:"`` for an in-memory one)."""

    def __init__(self, path: str | os.PathLike = ":memory:", config: StoreConfig | None = None,
                 *, create: bool = True) -> None:
        self.path = str(path)
        if config is None and os.environ.get(CONFIG_ENV):
            config = StoreConfig.load(os.environ[CONFIG_ENV])
        self.config = config or StoreConfig()
        self._lock = threading.RLock()
        in_memory = self.path == ":memory:"
        if not in_memory:
            exists = os.path.exists(self.path)
            if not exists and not create:
                raise DatabaseRefused(self.path, "missing", f"{self.path} does not exist")
            if exists:
                _check_file(self.path)
            elif not os.path.isdir(os.path.dirname(os.path.abspath(self.path))):
                raise DatabaseRefused(self.path, "unreadable",
                                      f"cannot create {self.path}: its folder does not exist")
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not in_memory and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: a 100,000-memory tick stays in memory
        except sqlite3.DatabaseError as exc:
            raise DatabaseRefused(self.path, "unreadable", f"cannot open {self.path}: {exc}") from None
        self.conn = conn
        self.db = Database(conn)
        if migrations.pending(self.db):
            with self._write():
                migrations.apply(self.db)

    # -- plumbing ------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. ``BEGIN IMMEDIATE`` takes the write lock up front, so a
        writer in another process makes us wait (busy timeout) instead of failing."""
        with self._lock:
            if self.conn.in_transaction:  # nested: part of the caller's transaction
                yield self.conn
                return
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"the database {self.path} is busy (another program is writing); "
                                 f"try again: {exc}") from None
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")

    def _rows(self, sql: str, params: tuple | list = ()) -> list[dict[str, Any]]:
        with self._lock:
            cur = self.conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def _meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def data_version(self) -> int:
        """Changes whenever another connection commits a write (for live refresh)."""
        with self._lock:
            return self.conn.execute("PRAGMA data_version").fetchone()[0]

    # -- the clock -----------------------------------------------------------------------
    @property
    def clock_offset(self) -> float:
        with self._lock:
            return float(self._meta("clock_offset", "0") or 0)

    def now(self) -> float:
        """The store's clock: real time plus the offset the user advanced it by."""
        return round(time.time() + self.clock_offset, 3)

    def _now(self, now: Any) -> float:
        return self.now() if now is None else parse_time(now, "now")

    def advance(self, days: float) -> float:
        """Move the clock ``days`` forward; returns the new offset in seconds."""
        days = _check_days(days)
        with self._write():
            offset = self.clock_offset + days * decay.DAY
            self._set_meta("clock_offset", repr(offset))
        return offset

    # -- reading -------------------------------------------------------------------------
    def _memory(self, row: dict[str, Any], links: tuple[list[str], list[str]] = ([], [])) -> Memory:
        ents, refs = links
        return Memory(
            id=row["id"], text=row["text"], kind=row["kind"], importance=row["importance"], who=row["who"] or "",
            topic=row["topic"] or "", scope=row["scope"], sensitivity=row["sensitivity"],
            tags=json.loads(row["tags"] or "[]"), source=row["source"] or "", source_kind=row["source_kind"] or "",
            created_at=row["created_at"], updated_at=row["updated_at"], ref_time=row["ref_time"],
            base=row["base"], recall_count=row["recall_count"], last_recalled_at=row["last_recalled_at"],
            pinned=bool(row["pinned"]), half_life_days=row["half_life_days"], strength=row["strength"],
            layer=row["layer"], ticked_at=row["ticked_at"], entities=list(ents), references=list(refs),
        )

    def get(self, memory_id: str) -> Memory:
        with self._lock:
            rows = self._rows(_SELECT + " WHERE id = ?", (memory_id,))
            if not rows:
                raise NotFound("memory", memory_id)
            return self._memory(rows[0], self._links_for([memory_id]).get(memory_id, ([], [])))

    def exists(self, memory_id: str) -> bool:
        with self._lock:
            return self.conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is not None

    def list(self, *, kind: str | None = None, layer: str | None = None, scope: str | None = None,
             text: str | None = None, min_strength: float | None = None, include_archived: bool = True,
             limit: int | None = None, with_links: bool = True) -> list[Memory]:
        """Memories matching every filter given, newest first."""
        where, params = [], []
        if kind is not None:
            if kind not in KINDS:
                raise ValidationError("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
            where.append("kind = ?")
            params.append(kind)
        if layer is not None:
            if layer not in LAYERS:
                raise ValidationError("layer", f"must be one of {', '.join(LAYERS)}, got {layer!r}")
            where.append("layer = ?")
            params.append(layer)
        elif not include_archived:
            where.append("layer != 'archived'")
        if scope is not None:
            where.append("scope = ?")
            params.append(validate_scope(scope))
        if text:
            where.append("text LIKE ? ESCAPE '\\'")
            params.append("%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
        if min_strength is not None:
            where.append("strength >= ?")
            params.append(float(min_strength))
        sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY created_at DESC, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._rows(sql, params)
            links = self._links_for([r["id"] for r in rows]) if with_links else {}
            return [self._memory(r, links.get(r["id"], ([], []))) for r in rows]

    def _links_for(self, ids: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        """Entity names (sorted) and referenced record ids of each memory in ``ids``."""
        out: dict[str, tuple[list[str], list[str]]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            ph = ",".join("?" * len(chunk))
            for src, name in self.conn.execute(
                "SELECT x.src, e.name FROM edges x JOIN entities e ON e.id = x.dst "
                f"WHERE x.edge = 'mentions_entity' AND x.src IN ({ph}) ORDER BY e.name", chunk):
                out.setdefault(src, ([], []))[0].append(name)
            for src, dst in self.conn.execute(
                f"SELECT src, dst FROM edges WHERE edge = 'references_record' AND src IN ({ph}) ORDER BY dst",
                chunk):
                out.setdefault(src, ([], []))[1].append(dst)
        return out

    def count(self) -> int:
        with self._lock:
            return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def stats(self, scopes: list[str] | tuple[str, ...] | None = None) -> dict[str, Any]:
        """Counts per layer, kind and scope (of the memories in ``scopes`` when given)."""
        where, params = "", []
        if scopes is not None:
            scopes = [validate_scope(s) for s in scopes]
            where, params = f" WHERE scope IN ({','.join('?' * len(scopes))})", scopes
        with self._lock:
            layers = dict.fromkeys(LAYERS, 0)
            layers.update(dict(self.conn.execute(f"SELECT layer, count(*) FROM memories{where} GROUP BY layer",
                                                 params).fetchall()))
            kinds = dict.fromkeys(KINDS, 0)
            kinds.update(dict(self.conn.execute(f"SELECT kind, count(*) FROM memories{where} GROUP BY kind",
                                                params).fetchall()))
            scope_counts = dict(self.conn.execute(
                f"SELECT scope, count(*) FROM memories{where} GROUP BY scope ORDER BY scope", params))
            entities = self.conn.execute("SELECT count(*) FROM entities").fetchone()[0]
            offset = self.clock_offset
        return {
            "path": self.path, "memories": sum(layers.values()), "layers": layers, "kinds": kinds,
            "scopes": scope_counts, "entities": entities, "clock_offset_days": round(offset / decay.DAY, 4),
            "now": self.now(), "schema_version": SCHEMA_VERSION,
        }

    def scopes(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self.conn.execute("SELECT DISTINCT scope FROM memories ORDER BY scope")]

    def recall_events(self, memory_id: str) -> list[float]:
        with self._lock:
            return [r[0] for r in self.conn.execute(
                "SELECT at FROM recall_events WHERE memory_id = ? ORDER BY at", (memory_id,))]

    # -- entities ------------------------------------------------------------------------
    def entities(self, scope: str | None = None) -> list[Entity]:
        sql = "SELECT id, name, kind, scope, aliases FROM entities"
        params: list[Any] = []
        if scope is not None:
            sql += " WHERE scope IN (?, 'global')"
            params.append(scope)
        with self._lock:
            return [Entity(r[0], r[1], r[2], r[3], json.loads(r[4] or "[]"))
                    for r in self.conn.execute(sql + " ORDER BY name", params)]

    def _resolve_entity(self, name: str, kind: str | None, scope: str, now: float,
                        created: list[Entity], aliases: list[str] | None = None) -> str:
        """The id of the entity called ``name`` (or with that alias), same scope first,
        then global; created in ``scope`` when none exists."""
        low = name.strip().lower()
        rows = self.conn.execute(
            "SELECT id, scope FROM entities WHERE lower(name) = ? AND scope IN (?, 'global') "
            "ORDER BY scope = ? DESC LIMIT 1", (low, scope, scope)).fetchall()
        if not rows:
            for eid, escope, al in self.conn.execute(
                "SELECT id, scope, aliases FROM entities WHERE aliases != '[]' AND scope IN (?, 'global') "
                "ORDER BY scope = ? DESC", (scope, scope)):
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

    def add_entity(self, name: str, kind: str = "other", scope: str = "global",
                   aliases: list[str] | None = None) -> Entity:
        """Create an entity (or return the existing one with that name in that scope)."""
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", "an entity needs a name")
        scope = validate_scope(scope)
        created: list[Entity] = []
        with self._write():
            eid = self._resolve_entity(name, kind, scope, self.now(), created, aliases)
        return created[0] if created else next(e for e in self.entities() if e.id == eid)

    def known_entities_in(self, text: str, scope: str) -> list[str]:
        """Names of known entities whose name or alias appears in ``text``."""
        low = text.lower()
        found = []
        for ent in self.entities(scope):
            for name in [ent.name, *ent.aliases]:
                n = name.lower()
                if len(n) >= 2 and n in low and _bounded(low, n):
                    found.append(ent.name)
                    break
        return found

    def _edge_pair(self, src: str, edge: str, dst: str, inverse: str, now: float,
                   edges: list[tuple[str, str, str]]) -> None:
        """Write an edge and its inverse; record in ``edges`` the ones that were new."""
        for a, kind, b in ((src, edge, dst), (dst, inverse, src)):
            cur = self.conn.execute("INSERT OR IGNORE INTO edges (src, edge, dst, created_at) VALUES (?,?,?,?)",
                                    (a, kind, b, now))
            if cur.rowcount:
                edges.append((a, kind, b))

    def _link(self, memory_id: str, entity_id: str, now: float, edges: list[tuple[str, str, str]]) -> None:
        self._edge_pair(memory_id, "mentions_entity", entity_id, "mentioned_in", now, edges)

    def link_records(self, src_id: str, dst_id: str) -> list[tuple[str, str, str]]:
        """``src`` references ``dst`` (and ``dst`` is referenced by ``src``)."""
        edges: list[tuple[str, str, str]] = []
        with self._write():
            for mid in (src_id, dst_id):
                if not self.exists(mid):
                    raise NotFound("memory", mid)
            self._reference(src_id, dst_id, self.now(), edges)
        return edges

    def _reference(self, src: str, dst: str, now: float, edges: list[tuple[str, str, str]]) -> None:
        self._edge_pair(src, "references_record", dst, "referenced_by", now, edges)

    def _set_entities(self, memory_id: str, names: list[str], scope: str, now: float,
                      created: list[Entity], edges: list[tuple[str, str, str]]) -> None:
        self.conn.execute("DELETE FROM edges WHERE (src = ? AND edge = 'mentions_entity') "
                          "OR (dst = ? AND edge = 'mentioned_in')", (memory_id, memory_id))
        for spec in names:
            name, kind = (spec.get("name"), spec.get("kind")) if isinstance(spec, dict) else (spec, None)
            aliases = spec.get("aliases") if isinstance(spec, dict) else None
            eid = self._resolve_entity(name, kind, scope, now, created, aliases)
            self._link(memory_id, eid, now, edges)

    # -- writing -------------------------------------------------------------------------
    def _find_duplicate(self, text: str, scope: str) -> tuple[str, float] | None:
        """The most similar memory in ``scope`` above the duplicate threshold. Candidates
        must share the longer half of the terms: a near-duplicate shares nearly all."""
        words = sorted(set(term_string(text).split()), key=lambda t: (-len(t), t))
        if not words:
            return None
        needed = words[: max(1, (len(words) + 1) // 2)]
        query = " AND ".join('"' + t.replace('"', '""') + '"' for t in needed)
        vec = vector(text)
        best = None
        for mid, mtext in self.conn.execute(
            "SELECT m.id, m.text FROM memories_fts f CROSS JOIN memories m ON m.rowid = f.rowid "
            "WHERE memories_fts MATCH ? AND m.scope = ? LIMIT 50", (query, scope)):
            sim = cosine(vec, vector(mtext))
            if sim >= self.config.limits.duplicate_similarity and (best is None or sim > best[1]):
                best = (mid, sim)
        return best

    def remember(self, text: str, *, kind: str = "fact", importance: float = 0.5, who: str = "",
                 topic: str = "", scope: str = "global", sensitivity: str = "low",
                 tags: list[str] | None = None, source: str = "", source_kind: str = "",
                 pinned: bool = False, entities: list[Any] | None = None, now: Any = None,
                 memory_id: str | None = None, half_life_days: float | None = None,
                 dedupe: bool = True) -> RememberResult:
        """Write a memory, with choice: near-duplicate text in the same scope reinforces the
        existing memory instead of adding a copy."""
        values = validate_fields(
            {"text": text, "kind": kind, "importance": importance, "who": who, "topic": topic, "scope": scope,
             "sensitivity": sensitivity, "tags": tags or [], "source": source, "source_kind": source_kind,
             "pinned": pinned}, self.config)
        if entities:
            validate_fields({"entities": entities}, self.config, partial=True)
        if memory_id is not None and (not isinstance(memory_id, str) or not memory_id.strip()
                                      or len(memory_id) > 128 or "\x00" in memory_id):
            raise ValidationError("id", f"must be a non-empty string of at most 128 characters, got {memory_id!r}")
        if half_life_days is not None and (isinstance(half_life_days, bool) or
                                           not isinstance(half_life_days, (int, float)) or half_life_days <= 0):
            raise ValidationError("half_life_days", f"must be a positive number of days, got {half_life_days!r}")
        now = self._now(now)
        with self._write():
            if dedupe:
                dup = self._find_duplicate(values["text"], values["scope"])
                if dup is not None:
                    before = self.get(dup[0])
                    self._reinforce(dup[0], now, importance=values["importance"])
                    after = self.get(dup[0])
                    return RememberResult(after, False, f"reinforced existing memory {dup[0]} "
                                          f"(similarity {dup[1]:.2f}) instead of adding a copy", dup[1], before)
            mid = memory_id or "m-" + uuid.uuid4().hex[:12]
            if self.exists(mid):
                raise ValidationError("id", f"a memory with id {mid!r} already exists")
            row = dict(values, id=mid, tags=json.dumps(values["tags"], ensure_ascii=False),
                       pinned=int(values["pinned"]), created_at=now, updated_at=now, ref_time=now, base=1.0,
                       recall_count=0, last_recalled_at=None, half_life_days=half_life_days, ticked_at=now)
            self._insert_row(row, now)
            names = list(entities or [])
            if values["who"]:
                names.insert(0, {"name": values["who"], "kind": "person"})
            known = self.known_entities_in(values["text"], values["scope"])
            lowered = {(n.get("name") if isinstance(n, dict) else n).lower() for n in names}
            names += [k for k in known if k.lower() not in lowered]
            created: list[Entity] = []
            edges: list[tuple[str, str, str]] = []
            self._set_entities(mid, names, values["scope"], now, created, edges)
            from .conflicts import likely_conflicts

            conflicts = likely_conflicts(self, mid)
            message = f"remembered {mid}" + "".join(f"; it may conflict with {c.older} ({c.summary()})"
                                                    for c in conflicts)
            return RememberResult(self.get(mid), True, message, entities_created=created, edges=edges,
                                  conflicts=conflicts)

    def _insert_row(self, row: dict[str, Any], now: float) -> None:
        s, layer = decay.state_at(row, now, self.config.decay)
        row = dict(row, strength=s, layer=layer,
                   terms=term_string(row["text"], row.get("who") or "", row.get("topic") or ""))
        cols = [*_MEMORY_COLUMNS, "terms"]
        self.conn.execute(f"INSERT INTO memories ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                          [row.get(c) for c in cols])

    def _reinforce(self, memory_id: str, now: float, importance: float | None = None) -> None:
        row = self._rows("SELECT * FROM memories WHERE id = ?", (memory_id,))[0]
        row["recall_count"] += 1
        row["base"] = 1.0
        row["ref_time"] = now
        row["last_recalled_at"] = now
        if importance is not None:
            row["importance"] = max(row["importance"], importance)
        s, layer = decay.state_at(row, now, self.config.decay)
        self.conn.execute(
            "UPDATE memories SET recall_count = ?, base = 1.0, ref_time = ?, last_recalled_at = ?, "
            "importance = ?, strength = ?, layer = ?, ticked_at = ? WHERE id = ?",
            (row["recall_count"], now, now, row["importance"], s, layer, now, memory_id))
        self.conn.execute("INSERT INTO recall_events (memory_id, at) VALUES (?, ?)", (memory_id, now))

    def reinforce(self, memory_id: str, now: Any = None) -> UpdateResult:
        """Count one recall of a memory: it is refreshed and its half-life grows."""
        now = self._now(now)
        with self._write():
            before = self.get(memory_id)
            self._reinforce(memory_id, now)
            return UpdateResult(before, self.get(memory_id))

    def update(self, memory_id: str, now: Any = None, **changes: Any) -> UpdateResult:
        """Change fields of a memory (any of text, kind, importance, who, topic, scope,
        sensitivity, tags, source, source_kind, pinned, entities)."""
        values = validate_fields(changes, self.config, partial=True)
        now = self._now(now)
        with self._write():
            before = self.get(memory_id)
            entity_names = values.pop("entities", None)
            if values:
                row = self._rows("SELECT * FROM memories WHERE id = ?", (memory_id,))[0]
                if "tags" in values:
                    values["tags"] = json.dumps(values["tags"], ensure_ascii=False)
                if "pinned" in values:
                    values["pinned"] = int(values["pinned"])
                row.update(values)
                row["updated_at"] = now
                s, layer = decay.state_at(row, row["ticked_at"] or now, self.config.decay)
                row["strength"], row["layer"] = s, layer
                row["terms"] = term_string(row["text"], row["who"] or "", row["topic"] or "")
                sets = [*values, "updated_at", "strength", "layer", "terms"]
                self.conn.execute(f"UPDATE memories SET {', '.join(c + ' = ?' for c in sets)} WHERE id = ?",
                                  [row[c] for c in sets] + [memory_id])
            if entity_names is not None:
                scope = values.get("scope", before.scope)
                self._set_entities(memory_id, entity_names, scope, now, [], [])
                self.conn.execute("UPDATE memories SET updated_at = ? WHERE id = ?", (now, memory_id))
            return UpdateResult(before, self.get(memory_id))

    def pin(self, memory_id: str, now: Any = None) -> UpdateResult:
        return self.update(memory_id, now=now, pinned=True)

    def unpin(self, memory_id: str, now: Any = None) -> UpdateResult:
        return self.update(memory_id, now=now, pinned=False)

    def restore_state(self, memory: Memory) -> Memory:
        """Put a memory back exactly as ``memory`` was (undo of an update or reinforcement)."""
        with self._write():
            if not self.exists(memory.id):
                raise NotFound("memory", memory.id)
            row = {c: getattr(memory, c) for c in _MEMORY_COLUMNS}
            row["tags"] = json.dumps(memory.tags, ensure_ascii=False)
            row["pinned"] = int(memory.pinned)
            row["terms"] = term_string(memory.text, memory.who, memory.topic)
            cols = [c for c in row if c != "id"]
            self.conn.execute(f"UPDATE memories SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                              [row[c] for c in cols] + [memory.id])
            now = self.now()
            self._set_entities(memory.id, memory.entities, memory.scope, now, [], [])
            self.conn.execute(
                "DELETE FROM recall_events WHERE memory_id = ? AND rowid NOT IN (SELECT rowid FROM recall_events "
                "WHERE memory_id = ? ORDER BY at LIMIT ?)", (memory.id, memory.id, memory.recall_count))
            return self.get(memory.id)

    def delete(self, memory_id: str) -> DeletedMemory:
        """Delete a memory and its edges; returns what :meth:`restore` needs."""
        with self._write():
            rows = self._rows("SELECT * FROM memories WHERE id = ?", (memory_id,))
            if not rows:
                raise NotFound("memory", memory_id)
            edges = [tuple(r) for r in self.conn.execute(
                "SELECT src, edge, dst, created_at FROM edges WHERE src = ? OR dst = ?", (memory_id, memory_id))]
            events = [r[0] for r in self.conn.execute(
                "SELECT at FROM recall_events WHERE memory_id = ? ORDER BY at", (memory_id,))]
            self.conn.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (memory_id, memory_id))
            self.conn.execute("DELETE FROM recall_events WHERE memory_id = ?", (memory_id,))
            self.conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            return DeletedMemory(rows[0], edges, events)

    def restore(self, deleted: DeletedMemory) -> Memory:
        """Undo :meth:`delete`: the memory comes back with its edges and recall history."""
        with self._write():
            if self.exists(deleted.id):
                raise ValidationError("id", f"a memory with id {deleted.id!r} already exists")
            row = dict(deleted.row)
            cols = list(row)
            self.conn.execute(f"INSERT INTO memories ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                              [row[c] for c in cols])
            for src, edge, dst, created in deleted.edges:
                other = dst if src == deleted.id else src
                if other.startswith("e-") or self.exists(other) or self._entity_exists(other):
                    self.conn.execute("INSERT OR IGNORE INTO edges (src, edge, dst, created_at) VALUES (?,?,?,?)",
                                      (src, edge, dst, created))
            self.conn.executemany("INSERT INTO recall_events (memory_id, at) VALUES (?, ?)",
                                  [(deleted.id, at) for at in deleted.recall_events])
            return self.get(deleted.id)

    def _entity_exists(self, eid: str) -> bool:
        return self.conn.execute("SELECT 1 FROM entities WHERE id = ?", (eid,)).fetchone() is not None

    # -- forgetting ----------------------------------------------------------------------
    def _states(self, now: float) -> tuple[list[tuple], list[float], list[str]]:
        rows = self.conn.execute("SELECT rowid, id, kind, recall_count, half_life_days, pinned, base, ref_time, "
                                 "strength, layer, ticked_at FROM memories").fetchall()
        strengths, layers = decay.states_at([r[2:8] for r in rows], now, self.config.decay)
        superseded = {r[0] for r in self.conn.execute("SELECT src FROM edges WHERE edge = 'superseded_by'")}
        if superseded:  # a memory another one replaced stays archived (store.conflicts.supersede)
            layers = ["archived" if r[1] in superseded else layer for r, layer in zip(rows, layers)]
        return rows, strengths, layers

    def project(self, now: Any = None) -> dict[str, tuple[float, str]]:
        """Strength and layer of every memory at ``now``, without writing anything."""
        now = self._now(now)
        with self._lock:
            rows, strengths, layers = self._states(now)
        return {r[1]: (s, layer) for r, s, layer in zip(rows, strengths, layers)}

    def tick(self, now: Any = None, *, advance_days: float | None = None) -> TickReport:
        """Write every memory's strength, layer and archive state as of ``now`` (after
        moving the clock ``advance_days`` forward, in the same transaction). Logs each
        layer transition; the whole tick can be undone with :meth:`undo_tick`."""
        if advance_days is not None:
            advance_days = _check_days(advance_days)
        with self._write():
            offset_before = self.clock_offset
            offset_after = offset_before
            if advance_days:
                offset_after = offset_before + advance_days * decay.DAY
                self._set_meta("clock_offset", repr(offset_after))
            now = self._now(now)
            rows, strengths, layers = self._states(now)
            updates = []  # (strength, ticked_at, rowid): the layer stays
            moves = []    # (strength, layer, ticked_at, rowid): the layer changes
            undo = []
            transitions = []
            counts: dict[str, int] = {}
            layer_counts = dict.fromkeys(LAYERS, 0)
            for row, s, layer in zip(rows, strengths, layers):
                rowid, mid, old_s, old_layer, old_t = row[0], row[1], row[8], row[9], row[10]
                layer_counts[layer] += 1
                if layer != old_layer:
                    moves.append((s, layer, now, rowid))
                    undo.append((mid, old_s, old_layer, old_t))
                    transitions.append((mid, old_layer, layer, old_s, s))
                    label = _transition_label(old_layer, layer)
                    counts[label] = counts.get(label, 0) + 1
                elif s != old_s or old_t != now:
                    updates.append((s, now, rowid))
                    undo.append((mid, old_s, old_layer, old_t))
            # Setting the layer only where it changes spares two index updates per row.
            self.conn.executemany("UPDATE memories SET strength = ?, ticked_at = ? WHERE rowid = ?", updates)
            self.conn.executemany("UPDATE memories SET strength = ?, layer = ?, ticked_at = ? WHERE rowid = ?",
                                  moves)
            changed = len(updates) + len(moves)
            summary = json.dumps({"counts": counts, "changed": changed}, ensure_ascii=False)
            blob = _pack_undo(undo)
            tick_id = self.conn.execute(
                "INSERT INTO ticks (at, offset_before, offset_after, created, summary, undo) VALUES (?,?,?,?,?,?)",
                (now, offset_before, offset_after, time.time(), summary, blob)).lastrowid
            self.conn.executemany(
                "INSERT INTO tick_log (tick_id, memory_id, from_layer, to_layer, strength_before, strength_after) "
                "VALUES (?,?,?,?,?,?)", [(tick_id, *t) for t in transitions])
            activity.prune(self, now)
        return TickReport(tick_id, now, [(t[0], t[1], t[2]) for t in transitions], counts, layer_counts,
                          changed, offset_before, offset_after)

    def undo_tick(self, tick_id: int) -> TickReport:
        """Put back every memory a tick changed, and the clock as it was before it."""
        with self._write():
            row = self.conn.execute("SELECT undo, offset_before, offset_after, undone, at FROM ticks WHERE id = ?",
                                    (tick_id,)).fetchone()
            if row is None:
                raise NotFound("tick", str(tick_id))
            blob, before, after, undone, at = row
            if undone:
                raise StoreError(f"tick {tick_id} was already undone")
            undo = _unpack_undo(blob)
            self.conn.executemany("UPDATE memories SET strength = ?, layer = ?, ticked_at = ? WHERE id = ?",
                                  [(s, layer, t, mid) for mid, s, layer, t in undo])
            self._set_meta("clock_offset", repr(before))
            self.conn.execute("UPDATE ticks SET undone = 1 WHERE id = ?", (tick_id,))
            log = self.conn.execute("SELECT memory_id, to_layer, from_layer FROM tick_log WHERE tick_id = ?",
                                    (tick_id,)).fetchall()
        counts: dict[str, int] = {}
        for _, a, b in log:
            label = _transition_label(a, b)
            counts[label] = counts.get(label, 0) + 1
        return TickReport(tick_id, at, [tuple(r) for r in log], counts, self.stats()["layers"], len(undo),
                          after, before)

    def redo_tick(self, tick_id: int) -> TickReport:
        """Apply an undone tick again (at the same clock time)."""
        with self._write():
            row = self.conn.execute("SELECT at, offset_before, offset_after, undone FROM ticks WHERE id = ?",
                                    (tick_id,)).fetchone()
            if row is None or not row[3]:
                raise StoreError(f"tick {tick_id} is not undone")
            self._set_meta("clock_offset", repr(row[1]))
            self.conn.execute("UPDATE ticks SET undone = 2 WHERE id = ?", (tick_id,))
            days = (row[2] - row[1]) / decay.DAY
            return self.tick(now=row[0], advance_days=days or None)

    # -- higher-level operations live in their own modules ------------------------------
    def recall(self, query: str, k: int = 5, *, scope: str = "global", trust: str | None = "medium",
               now: Any = None, explain: bool = False, reinforce: bool = False):
        from .recall import recall

        return recall(self, query, k=k, scope=scope, trust=trust, now=now, explain=explain, reinforce=reinforce)

    def brief(self, limit: int = 5, scope: str = "global", trust: str = "medium", now: Any = None) -> str:
        from .recall import brief

        return brief(self, limit=limit, scope=scope, trust=trust, now=now)

    def capture(self, content: Any, **kwargs: Any):
        from .capture import capture

        return capture(self, content, **kwargs)

    def import_jsonl(self, source: Any, policy: str = "skip", now: Any = None):
        from .jsonl import import_jsonl

        return import_jsonl(self, source, policy=policy, now=now)

    def export_jsonl(self, out: Any = None, **filters: Any) -> str:
        from .jsonl import export_jsonl

        return export_jsonl(self, out, **filters)

    def graph(self):
        from .graph import build_graph

        return build_graph(self)


_LAYER_CODES = {name: i for i, name in enumerate(LAYERS)}


def _pack_undo(undo: list[tuple[str, float, str, float | None]]) -> bytes:
    """What a tick overwrote, compactly: ids, then old strengths, layers and tick times."""
    from array import array

    ids = "\x1f".join(u[0] for u in undo).encode("utf-8")
    strengths = array("d", (u[1] for u in undo)).tobytes()
    layers = bytes(_LAYER_CODES[u[2]] for u in undo)
    times = array("d", (-1.0 if u[3] is None else u[3] for u in undo)).tobytes()
    header = array("q", [len(undo), len(ids)]).tobytes()
    return b"MU1" + zlib.compress(header + ids + strengths + layers + times, 1)


def _unpack_undo(blob: bytes) -> list[tuple[str, float, str, float | None]]:
    from array import array

    if not blob.startswith(b"MU1"):
        raise StoreError("this tick's undo record is damaged; it cannot be undone")
    data = zlib.decompress(blob[3:])
    n, id_len = array("q", data[:16])
    pos = 16
    ids = data[pos:pos + id_len].decode("utf-8").split("\x1f") if n else []
    pos += id_len
    strengths = array("d", data[pos:pos + 8 * n])
    pos += 8 * n
    layers = [LAYERS[b] for b in data[pos:pos + n]]
    pos += n
    times = array("d", data[pos:pos + 8 * n])
    return [(ids[i], strengths[i], layers[i], None if times[i] < 0 else times[i]) for i in range(n)]


def _check_days(days: Any) -> float:
    if isinstance(days, bool) or not isinstance(days, (int, float)) or days != days or abs(days) > 36500:
        raise ValidationError("days", f"must be a number of days (at most 100 years), got {days!r}")
    if days < 0:
        raise ValidationError("days", f"the clock only moves forward; got {days}")
    return float(days)


def _bounded(text: str, needle: str) -> bool:
    """``needle`` occurs in ``text`` not inside a longer latin word."""
    start = 0
    while True:
        i = text.find(needle, start)
        if i < 0:
            return False
        before = text[i - 1] if i else " "
        after = text[i + len(needle)] if i + len(needle) < len(text) else " "
        if not (before.isascii() and before.isalnum()) and not (after.isascii() and after.isalnum()):
            return True
        start = i + 1


def _check_file(path: str) -> None:
    """Refuse, without writing, a file that is not a database, is corrupt, or is newer."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(16)
    except OSError as exc:
        raise DatabaseRefused(path, "unreadable", f"cannot read {path}: {exc.strerror or exc}") from None
    if not header:
        return  # an empty file is an empty database
    if header != SQLITE_HEADER:
        raise DatabaseRefused(path, "not_a_database",
                              f"{path} is not a SQLite database (it starts with {header[:8]!r}); "
                              "open a Mnemoscope database or create a new one with File › New")
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(path, "unreadable", f"cannot open {path}: {exc}") from None
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return
        if "_sqlite_migrations" not in tables or "meta" not in tables:
            raise DatabaseRefused(path, "not_a_database",
                                  f"{path} is a SQLite database but not a Mnemoscope one (tables: "
                                  f"{', '.join(sorted(tables)[:6])}); it was left untouched")
        applied = {r[0] for r in conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = ?", (MIGRATION_SET,))}
        version_row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(version_row[0]) if version_row and str(version_row[0]).isdigit() else 0
        unknown = applied - KNOWN_MIGRATIONS
        if unknown or version > SCHEMA_VERSION:
            raise DatabaseRefused(path, "newer_version",
                                  f"{path} was written by a newer Mnemoscope (schema version {version}, "
                                  f"this one reads up to {SCHEMA_VERSION}); upgrade Mnemoscope to open it")
        conn.execute("SELECT count(*) FROM memories").fetchone()
        quick = conn.execute("PRAGMA quick_check(1)").fetchone()
        if quick and quick[0] != "ok":
            raise DatabaseRefused(path, "corrupt", f"{path} is corrupt ({quick[0]}); restore it from a backup")
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(path, "corrupt",
                              f"{path} is corrupt or not a database ({exc}); restore it from a backup") from None
    finally:
        conn.close()


__all__ = ["MemoryStore", "RememberResult", "UpdateResult", "DeletedMemory", "TickReport", "Entity",
           "SENSITIVITIES"]
