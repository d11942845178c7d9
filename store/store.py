"""MemoryStore: an agent's long-term memory in one SQLite file.

Every operation that writes is whole: it runs in one ``BEGIN IMMEDIATE`` transaction
and returns what changed, so a caller (the inspector's undo stack) can show and reverse
it. Queries never write. Time is always a parameter (``now``); when omitted it is the
store's clock, real time plus an offset kept in the database.
"""

from __future__ import annotations

import json
import os
import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from . import activity, decay
from .capture import CaptureResult, capture, check_request_keys
from .config import KINDS, StoreConfig
from .errors import DatabaseRefused, NotFound, StoreError, ValidationError
from .jsonl import ImportReport, export_jsonl, import_jsonl
from .model import (
    LAYERS,
    SENSITIVITIES,
    Memory,
    iso,
    validate_fields,
    validate_half_life,
    validate_id,
    validate_scope,
)
from .recall import Hit, brief, recall
from .schema import SCHEMA_VERSION, migrations
from .tables import MEMORY_COLUMNS, Entity, Tables, context_json, open_connection
from .text import cosine, term_string, vector

CONFIG_ENV = "MNEMOSCOPE_CONFIG"  # a TOML file with the store's numbers


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
                 *, create: bool = True, read_only: bool = False) -> None:
        self.path = str(path)
        if config is None and os.environ.get(CONFIG_ENV):
            config = StoreConfig.load(os.environ[CONFIG_ENV])
        self.config = config or StoreConfig()
        conn, read_only = open_connection(self.path, create=create, read_only=read_only)
        self.conn = conn
        self.tables = Tables(conn, self.path, self.config, read_only=read_only)
        self.db = Database(conn)
        if migrations.pending(self.db):
            if read_only:
                conn.close()
                raise DatabaseRefused(self.path, "unreadable",
                                      f"{self.path} was written by an older Mnemoscope and must be upgraded, "
                                      "but it is read-only here; open it once where it may be written")
            with self.tables.write():
                migrations.apply(self.db)

    @property
    def read_only(self) -> bool:
        """True when the database is open read-only (asked for, or a file or folder we
        may not write): reads work, every write raises :class:`StoreError`."""
        return self.tables.read_only

    # -- plumbing ------------------------------------------------------------------------
    def close(self) -> None:
        with self.tables.reading():
            self.conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def data_version(self) -> int:
        """Changes whenever another connection commits a write (for live refresh)."""
        with self.tables.reading():
            return self.conn.execute("PRAGMA data_version").fetchone()[0]

    # -- the clock -----------------------------------------------------------------------
    @property
    def clock_offset(self) -> float:
        return self.tables.clock_offset()

    def now(self) -> float:
        """The store's clock: real time plus the offset the user advanced it by."""
        return self.tables.now()

    def advance(self, days: float) -> float:
        """Move the clock ``days`` forward; returns the new offset in seconds."""
        days = _check_days(days)
        with self.tables.write():
            return self.tables.advance(days)

    # -- reading -------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        found = self.tables.memories("id = ?", (memory_id,))
        if not found:
            raise NotFound("memory", memory_id)
        return found[0]

    def exists(self, memory_id: str) -> bool:
        return self.tables.exists(memory_id)

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
        suffix = " ORDER BY created_at DESC, id"
        if min_strength is None:
            if limit is not None:
                suffix += f" LIMIT {int(limit)}"
            return self.tables.memories(" AND ".join(where), params, with_links=with_links, suffix=suffix)
        # Strength is derived when read (as of the last tick), so it is filtered here.
        found = [m for m in self.tables.memories(" AND ".join(where), params, with_links=with_links, suffix=suffix)
                 if m.strength >= float(min_strength)]
        return found if limit is None else found[:int(limit)]

    def count(self) -> int:
        with self.tables.reading():
            return self.conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def stats(self, scopes: list[str] | tuple[str, ...] | None = None) -> dict[str, Any]:
        """Counts per layer, kind and scope (of the memories in ``scopes`` when given)."""
        where, layers_of, params = "", "memory_state", []
        if scopes is not None:
            scopes = [validate_scope(s) for s in scopes]
            where = f" WHERE scope IN ({','.join('?' * len(scopes))})"
            layers_of = "memory_rows" + where
            params = scopes
        with self.tables.reading():
            layers = dict.fromkeys(LAYERS, 0)
            layers.update(dict(self.conn.execute(f"SELECT layer, count(*) FROM {layers_of} GROUP BY layer",
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
            "now": self.now(), "schema_version": SCHEMA_VERSION, "read_only": self.read_only,
        }

    def scopes(self) -> list[str]:
        with self.tables.reading():
            return [r[0] for r in self.conn.execute("SELECT DISTINCT scope FROM memories ORDER BY scope")]

    def recall_events(self, memory_id: str) -> list[float]:
        with self.tables.reading():
            return [r[0] for r in self.conn.execute(
                "SELECT at FROM recall_events WHERE memory_id = ? ORDER BY at", (memory_id,))]

    # -- entities ------------------------------------------------------------------------
    def entities(self, scope: str | None = None) -> list[Entity]:
        return self.tables.entities(scope)

    def add_entity(self, name: str, kind: str = "other", scope: str = "global",
                   aliases: list[str] | None = None) -> Entity:
        """Create an entity (or return the existing one with that name in that scope)."""
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", "an entity needs a name")
        scope = validate_scope(scope)
        created: list[Entity] = []
        with self.tables.write():
            eid = self.tables.resolve_entity(name, kind, scope, self.now(), created, aliases)
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

    def link_records(self, src_id: str, dst_id: str) -> list[tuple[str, str, str]]:
        """``src`` references ``dst`` (and ``dst`` is referenced by ``src``)."""
        edges: list[tuple[str, str, str]] = []
        with self.tables.write():
            for mid in (src_id, dst_id):
                if not self.exists(mid):
                    raise NotFound("memory", mid)
            self.tables.reference(src_id, dst_id, self.now(), edges)
        return edges

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
                 dedupe: bool = True, context: Any = None, reason_to_remember: str = "") -> RememberResult:
        """Write a memory, with choice: near-duplicate text in the same scope reinforces the
        existing memory instead of adding a copy."""
        values = validate_fields(
            {"text": text, "kind": kind, "importance": importance, "who": who, "topic": topic, "scope": scope,
             "sensitivity": sensitivity, "tags": tags or [], "source": source, "source_kind": source_kind,
             "pinned": pinned, "context": context, "reason_to_remember": reason_to_remember}, self.config)
        if entities:
            validate_fields({"entities": entities}, self.config, partial=True)
        if memory_id is not None:
            validate_id(memory_id)
        half_life_days = validate_half_life(half_life_days)
        now = self.tables.now(now)
        with self.tables.write():
            if dedupe:
                dup = self._find_duplicate(values["text"], values["scope"])
                if dup is not None:
                    before = self.get(dup[0])
                    self.tables.reinforce(dup[0], now, importance=values["importance"])
                    after = self.get(dup[0])
                    return RememberResult(after, False, f"reinforced existing memory {dup[0]} "
                                          f"(similarity {dup[1]:.2f}) instead of adding a copy", dup[1], before)
            mid = memory_id or "m-" + uuid.uuid4().hex[:12]
            if self.exists(mid):
                raise ValidationError("id", f"a memory with id {mid!r} already exists")
            row = dict(values, id=mid, tags=json.dumps(values["tags"], ensure_ascii=False),
                       pinned=int(values["pinned"]), created_at=now, updated_at=now, ref_time=now, base=1.0,
                       recall_count=0, last_recalled_at=None, half_life_days=half_life_days, ticked_at=now)
            self.tables.insert_memory(row, now)
            names = list(entities or [])
            if values["who"]:
                names.insert(0, {"name": values["who"], "kind": "person"})
            known = self.known_entities_in(values["text"], values["scope"])
            lowered = {(n.get("name") if isinstance(n, dict) else n).lower() for n in names}
            names += [k for k in known if k.lower() not in lowered]
            created: list[Entity] = []
            edges: list[tuple[str, str, str]] = []
            self.tables.set_entities(mid, names, values["scope"], now, created, edges)
            from .conflicts import likely_conflicts

            conflicts = likely_conflicts(self, mid)
            message = f"remembered {mid}" + "".join(f"; it may conflict with {c.older} ({c.summary()})"
                                                    for c in conflicts)
            return RememberResult(self.get(mid), True, message, entities_created=created, edges=edges,
                                  conflicts=conflicts)

    def reinforce(self, memory_id: str, now: Any = None) -> UpdateResult:
        """Count one recall of a memory: it is refreshed and its half-life grows."""
        now = self.tables.now(now)
        with self.tables.write():
            before = self.get(memory_id)
            self.tables.reinforce(memory_id, now)
            return UpdateResult(before, self.get(memory_id))

    def update(self, memory_id: str, now: Any = None, *, touch: bool = True, **changes: Any) -> UpdateResult:
        """Change fields of a memory (any of text, kind, importance, who, topic, scope,
        sensitivity, tags, source, source_kind, pinned, entities).

        A person's edit touches the memory (``touch``): its strength goes on from where it
        is at ``now`` but its archive clock starts again, as if it had just been written.
        It is not a recall: the recall count and half-life stay. An import's merge passes
        ``touch=False`` and keeps the times it brings."""
        values = validate_fields(changes, self.config, partial=True)
        now = self.tables.now(now)
        with self.tables.write():
            before = self.get(memory_id)
            entity_names = values.pop("entities", None)
            if values or entity_names is not None:
                row = self.tables.memory_row(memory_id)
                if "tags" in values:
                    values["tags"] = json.dumps(values["tags"], ensure_ascii=False)
                if "pinned" in values:
                    values["pinned"] = int(values["pinned"])
                if "context" in values:
                    values["context"] = context_json(values["context"])
                row.update(values)
                row["updated_at"] = now
                sets = [*values, "updated_at", "strength", "layer", "ticked_at", "next_change_at", "terms"]
                if touch and now > row["ref_time"]:
                    row["base"] = decay.state_at(row, now, self.config.decay)[0]
                    row["ref_time"] = now
                    sets += ["base", "ref_time"]
                row.update(self.tables.state(row, max(row["ticked_at"] or now, self.tables.last_tick(),
                                                      row["ref_time"])))
                row["terms"] = term_string(row["text"], row["who"] or "", row["topic"] or "")
                self.tables.write_memory(memory_id, {c: row[c] for c in sets})
            if entity_names is not None:
                scope = values.get("scope", before.scope)
                self.tables.set_entities(memory_id, entity_names, scope, now, [], [])
            return UpdateResult(before, self.get(memory_id))

    def pin(self, memory_id: str, now: Any = None) -> UpdateResult:
        return self.update(memory_id, now=now, pinned=True)

    def unpin(self, memory_id: str, now: Any = None) -> UpdateResult:
        return self.update(memory_id, now=now, pinned=False)

    def restore_state(self, memory: Memory) -> Memory:
        """Put a memory back exactly as ``memory`` was (undo of an update or reinforcement)."""
        with self.tables.write():
            if not self.exists(memory.id):
                raise NotFound("memory", memory.id)
            row = {c: getattr(memory, c) for c in MEMORY_COLUMNS}
            row["tags"] = json.dumps(memory.tags, ensure_ascii=False)
            row["context"] = context_json(memory.context)
            row["pinned"] = int(memory.pinned)
            row["terms"] = term_string(memory.text, memory.who, memory.topic)
            row["next_change_at"] = self._next_change_of_restored(row)
            self.tables.write_memory(memory.id, {c: v for c, v in row.items() if c != "id"})
            now = self.now()
            self.tables.set_entities(memory.id, memory.entities, memory.scope, now, [], [])
            self.conn.execute(
                "DELETE FROM recall_events WHERE memory_id = ? AND rowid NOT IN (SELECT rowid FROM recall_events "
                "WHERE memory_id = ? ORDER BY at LIMIT ?)", (memory.id, memory.id, memory.recall_count))
            return self.get(memory.id)

    def _next_change_of_restored(self, row: dict[str, Any]) -> float | None:
        """When a tick must next look at a memory put back as it was: never while another
        memory supersedes it; at once if the clock has moved past its layer since."""
        if self.tables.is_superseded(row["id"]):
            return None
        at = max(row["ticked_at"] or 0.0, self.tables.last_tick())
        _, layer_now = decay.state_at(row, at, self.config.decay)
        return at if layer_now != row["layer"] else decay.next_change(row, at, self.config.decay)

    def delete(self, memory_id: str) -> DeletedMemory:
        """Delete a memory and its edges; returns what :meth:`restore` needs."""
        with self.tables.write():
            row = self.tables.memory_row(memory_id)
            if row is None:
                raise NotFound("memory", memory_id)
            edges = [tuple(r) for r in self.conn.execute(
                "SELECT src, edge, dst, created_at FROM edges WHERE src = ? OR dst = ?", (memory_id, memory_id))]
            events = [r[0] for r in self.conn.execute(
                "SELECT at FROM recall_events WHERE memory_id = ? ORDER BY at", (memory_id,))]
            self.tables.delete_memory(memory_id)
            return DeletedMemory(row, edges, events)

    def restore(self, deleted: DeletedMemory) -> Memory:
        """Undo :meth:`delete`: the memory comes back with its edges and recall history."""
        with self.tables.write():
            if self.exists(deleted.id):
                raise ValidationError("id", f"a memory with id {deleted.id!r} already exists")
            self.tables.insert_row(dict(deleted.row))
            for src, edge, dst, created in deleted.edges:
                other = dst if src == deleted.id else src
                if other.startswith("e-") or self.exists(other) or self.tables.entity_exists(other):
                    self.conn.execute("INSERT OR IGNORE INTO edges (src, edge, dst, created_at) VALUES (?,?,?,?)",
                                      (src, edge, dst, created))
            self.tables.add_recall_events(deleted.id, deleted.recall_events)
            # Its layer and next change as of now: time went on while it was gone (and a
            # memory forgotten by an older version has no next change stored).
            self.tables.refresh_state(deleted.id)
            return self.get(deleted.id)

    # -- forgetting ----------------------------------------------------------------------
    def _states(self, now: float) -> tuple[list[tuple], list[float], list[str]]:
        rows = self.conn.execute("SELECT id, kind, recall_count, half_life_days, pinned, base, ref_time "
                                 "FROM memories").fetchall()
        strengths, layers = decay.states_at([r[1:7] for r in rows], now, self.config.decay)
        superseded = self.tables.superseded_ids()
        if superseded:  # a memory another one replaced stays archived (store.conflicts.supersede)
            layers = ["archived" if r[0] in superseded else layer for r, layer in zip(rows, layers)]
        return rows, strengths, layers

    def project(self, now: Any = None) -> dict[str, tuple[float, str]]:
        """Strength and layer of every memory at ``now``, without writing anything."""
        now = self.tables.now(now)
        with self.tables.reading():
            rows, strengths, layers = self._states(now)
        return {r[0]: (s, layer) for r, s, layer in zip(rows, strengths, layers)}

    def tick(self, now: Any = None, *, advance_days: float | None = None) -> TickReport:
        """Bring every memory's layer and archive state up to ``now`` (after moving the
        clock ``advance_days`` forward, in the same transaction). Logs each layer
        transition; the whole tick can be undone with :meth:`undo_tick`.

        Strength is a pure function of time, so a tick writes only what changed: the
        memories whose layer changes (each knows when that will happen). Every memory's
        strength reads as of the tick from then on."""
        if advance_days is not None:
            advance_days = _check_days(advance_days)
        tables = self.tables
        with tables.write():
            offset_before = self.clock_offset
            offset_after = tables.advance(advance_days) if advance_days else offset_before
            now = tables.now(now)
            ticked_before = tables.meta("ticked_at")  # the last tick not undone
            if ticked_before is not None and now < float(ticked_before):
                raise ValidationError("now", f"{iso(now)} is before the last tick ({iso(float(ticked_before))}); "
                                             "time only runs forward, so undo the later ticks first to go back")
            config_before = tables.meta("decay_config")
            # With other decay numbers than the layers were worked out with, look at every memory.
            full = config_before != tables.decay_fingerprint()
            # The due rows in rowid order: one sorted walk through the table, and the UPDATEs
            # below touch its pages (and each index's runs) in that order too.
            rows = self.conn.execute(
                "SELECT s.rowid, m.id, m.kind, m.recall_count, m.half_life_days, m.pinned, m.base, m.ref_time, "
                "s.strength, s.layer, s.ticked_at, s.next_change_at FROM memory_state s "
                "JOIN memories m ON m.rowid = s.rowid"
                + ("" if full else " WHERE s.rowid IN (SELECT rowid FROM memory_state WHERE next_change_at <= ?)"),
                () if full else (now,)).fetchall()
            strengths, layers, next_changes = decay.tick_states([r[2:8] for r in rows], now, self.config.decay)
            superseded = tables.superseded_ids() if full else set()  # none of them is ever due
            if superseded:
                layers = ["archived" if r[1] in superseded else layer for r, layer in zip(rows, layers)]
                next_changes = [None if r[1] in superseded else n for r, n in zip(rows, next_changes)]
            moves, nexts, changed = [], [], []
            for row, s, layer, next_at in zip(rows, strengths, layers, next_changes):
                rowid, memory_id, *_, strength_was, layer_was, ticked_was, due_at = row
                if layer != layer_was:
                    moves.append((s, layer, now, next_at, rowid))
                    changed.append((due_at, rowid, (memory_id, layer_was, layer, strength_was, s), ticked_was))
                elif next_at != due_at:
                    nexts.append((next_at, rowid))
            if not full:  # transitions in the order they came due (a full tick: by rowid)
                changed.sort(key=lambda c: (c[0], c[1]))
            transitions = [t for _, _, t, _ in changed]
            undo = [(mid, strength_was, layer_was, ticked_was)
                    for _, _, (mid, layer_was, _, strength_was, _), ticked_was in changed]
            counts: dict[str, int] = {}
            for _, before, after, _, _ in transitions:
                label = _transition_label(before, after)
                counts[label] = counts.get(label, 0) + 1
            self.conn.executemany("UPDATE memory_state SET strength = ?, layer = ?, ticked_at = ?, next_change_at = ? "
                                  "WHERE rowid = ?", moves)
            self.conn.executemany("UPDATE memory_state SET next_change_at = ? WHERE rowid = ?", nexts)
            tables.set_meta("ticked_at", repr(now))
            tables.set_meta("decay_config", tables.decay_fingerprint())
            info = {"counts": counts, "changed": len(moves), "ticked_before": ticked_before}
            if full:  # what an undo puts back; kept only when it differs (it is a few hundred bytes)
                info["config_before"] = config_before
            tick_id = self.conn.execute(
                "INSERT INTO ticks (at, offset_before, offset_after, created, summary, undo) VALUES (?,?,?,?,?,?)",
                (now, offset_before, offset_after, time.time(), json.dumps(info, ensure_ascii=False),
                 _pack_undo(undo))).lastrowid
            self.conn.executemany(
                "INSERT INTO tick_log (tick_id, memory_id, from_layer, to_layer, strength_before, strength_after) "
                "VALUES (?,?,?,?,?,?)", [(tick_id, *t) for t in transitions])
            # Only the last ``undoable_ticks`` keep their undo record: the history stays bounded.
            self.conn.execute(
                "UPDATE ticks SET undo = NULL WHERE undo IS NOT NULL AND id <= "
                "(SELECT id FROM ticks ORDER BY id DESC LIMIT 1 OFFSET ?)", (self.config.limits.undoable_ticks,))
            activity.prune(self, now)
            layer_counts = dict.fromkeys(LAYERS, 0)
            layer_counts.update(self.conn.execute("SELECT layer, count(*) FROM memory_state GROUP BY layer").fetchall())
        return TickReport(tick_id, now, [(t[0], t[1], t[2]) for t in transitions], counts, layer_counts,
                          len(moves), offset_before, offset_after)

    def undo_tick(self, tick_id: int) -> TickReport:
        """Put back every memory a tick changed, and the clock as it was before it."""
        tables = self.tables
        with tables.write():
            row = self.conn.execute("SELECT undo, offset_before, offset_after, undone, at, summary FROM ticks "
                                    "WHERE id = ?", (tick_id,)).fetchone()
            if row is None:
                raise NotFound("tick", str(tick_id))
            blob, before, after, undone, at, summary = row
            if undone:
                raise StoreError(f"tick {tick_id} was already undone")
            if blob is None:
                n = self.config.limits.undoable_ticks
                raise StoreError(f"tick {tick_id} can no longer be undone: only the last {n} ticks are kept "
                                 "undoable (limits.undoable_ticks in the store's TOML settings)")
            later = self.conn.execute("SELECT id FROM ticks WHERE id > ? AND undone != 1 LIMIT 1",
                                      (tick_id,)).fetchone()
            if later is not None:
                raise StoreError(f"tick {tick_id} cannot be undone before the later tick {later[0]}; "
                                 "undo the latest tick first")
            undo = _unpack_undo(blob)
            for mid, s, layer, t in undo:
                tables.write_memory(mid, {"strength": s, "layer": layer, "ticked_at": t})
            info = json.loads(summary or "{}")
            marks = {"ticked_at": info.get("ticked_before")}
            if "config_before" in info:
                marks["decay_config"] = info["config_before"]
            for key, value in marks.items():
                if value is None:
                    self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
                else:
                    tables.set_meta(key, value)
            for mid, *_ in undo:
                tables.refresh_next_change(mid)
            tables.set_meta("clock_offset", repr(before))
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
        with self.tables.write():
            row = self.conn.execute("SELECT at, offset_before, offset_after, undone FROM ticks WHERE id = ?",
                                    (tick_id,)).fetchone()
            if row is None or not row[3]:
                raise StoreError(f"tick {tick_id} is not undone")
            self.tables.set_meta("clock_offset", repr(row[1]))
            self.conn.execute("UPDATE ticks SET undone = 2 WHERE id = ?", (tick_id,))
            days = (row[2] - row[1]) / decay.DAY
            return self.tick(now=row[0], advance_days=days or None)

    # -- higher-level operations live in their own modules ------------------------------
    def recall(self, query: str, k: int = 5, *, scope: str = "global", trust: str | None = "medium",
               now: Any = None, explain: bool = False, reinforce: bool = False) -> list[Hit]:
        return recall(self, query, k=k, scope=scope, trust=trust, now=now, explain=explain, reinforce=reinforce)

    def brief(self, limit: int = 5, scope: str = "global", trust: str = "medium", now: Any = None) -> str:
        return brief(self, limit=limit, scope=scope, trust=trust, now=now)

    def capture(self, content: Any, **kwargs: Any) -> CaptureResult:
        """Capture any JSON content as a memory (see :func:`store.capture.capture`); an
        option that does not exist is a :class:`ValidationError` naming it."""
        check_request_keys(kwargs)
        return capture(self, content, **kwargs)

    def import_jsonl(self, source: Any, policy: str = "skip", now: Any = None, *,
                     partial: bool = False) -> ImportReport:
        return import_jsonl(self, source, policy=policy, now=now, partial=partial)

    def export_jsonl(self, out: Any = None, **filters: Any) -> str:
        return export_jsonl(self, out, **filters)

    def graph(self):
        """The store as a networkx MultiDiGraph (see :func:`mnemoscope.store.graph.build_graph`).
        networkx is the ``graph`` extra: ``pip install "mnemoscope[graph]"``."""
        # networkx is imported only here: it adds a fifth of a second to every start of the
        # command line and the agents' servers, and the desktop bundle leaves it out.
        try:
            from .graph import build_graph
        except ModuleNotFoundError as exc:
            if exc.name != "networkx":
                raise
            raise StoreError('MemoryStore.graph() needs networkx: pip install "mnemoscope[graph]"') from None

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


__all__ = ["MemoryStore", "RememberResult", "UpdateResult", "DeletedMemory", "TickReport", "Entity",
           "SENSITIVITIES"]
