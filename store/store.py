"""MemoryStore: an agent's long-term memory in one SQLite file.

Every operation that writes is whole: it runs in one ``BEGIN IMMEDIATE`` transaction
and returns what changed, so a caller (the inspector's undo stack) can show and reverse
it. Queries never write. Time is always a parameter (``now``); when omitted it is the
store's clock, real time plus an offset kept in the database.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from sqlite_utils import Database

from . import decay, ticking
from .capture import CaptureResult, capture, check_request_keys
from .config import KINDS, StoreConfig
from .errors import DatabaseRefused, NotFound, StoreError, ValidationError
from .files import open_connection
from .jsonl import ImportReport, export_jsonl, import_jsonl
from .model import (
    LAYERS,
    SENSITIVITIES,
    Entity,
    Memory,
    readable_at,
    validate_fields,
    validate_half_life,
    validate_id,
    validate_scope,
)
from .recall import Hit, brief, recall
from .results import DeletedMemory, RememberResult, TickReport, UpdateResult
from .schema import SCHEMA_VERSION, migrations
from .tables import MEMORY_COLUMNS, Tables, context_json
from .text import cosine, term_string, vector

CONFIG_ENV = "MNEMOSCOPE_CONFIG"  # a TOML file with the store's numbers


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
        days = ticking.check_days(days)
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

    def stats(self, scopes: list[str] | tuple[str, ...] | None = None, trust: str | None = None) -> dict[str, Any]:
        """Counts per layer, kind and scope (of the memories in ``scopes`` when given, and of
        those a caller at ``trust`` may read when given: nothing above it is counted)."""
        where, layers_of, params = "", "memory_state", []
        clauses: list[str] = []
        if scopes is not None:
            scopes = [validate_scope(s) for s in scopes]
            clauses.append(f"scope IN ({','.join('?' * len(scopes))})")
            params += scopes
        if trust is not None:
            readable = readable_at(trust)
            clauses.append(f"sensitivity IN ({','.join('?' * len(readable))})")
            params += readable
        if clauses:
            where = " WHERE " + " AND ".join(clauses)
            layers_of = "memory_rows" + where
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

    def known_entities_in(self, text: str, scope: str, readable: tuple[str, ...] | None = None) -> list[str]:
        """Names of known entities whose name or alias appears in ``text``: with ``readable``
        (an agent's), only those a writer in ``scope`` may know of (not one named only by
        memories above its trust or in other scopes); all of them for the owner (None)."""
        low = text.lower()
        found = []
        hidden = self.tables.entities_unseen(readable, validate_scope(scope)) if readable is not None else set()
        for ent in self.entities(scope):
            if ent.id in hidden:
                continue
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
    def _find_duplicate(self, text: str, scope: str, readable: tuple[str, ...] = SENSITIVITIES
                        ) -> tuple[str, float] | None:
        """The most similar memory in ``scope`` above the duplicate threshold, among those
        of a ``readable`` sensitivity (what the writer may see: it is never told of, nor
        writes to, another). Candidates must share the longer half of the terms: a
        near-duplicate shares nearly all."""
        words = sorted(set(term_string(text).split()), key=lambda t: (-len(t), t))
        if not words:
            return None
        needed = words[: max(1, (len(words) + 1) // 2)]
        query = " AND ".join('"' + t.replace('"', '""') + '"' for t in needed)
        vec = vector(text)
        best = None
        for mid, mtext in self.conn.execute(
            "SELECT m.id, m.text FROM memories_fts f CROSS JOIN memories m ON m.rowid = f.rowid "
            f"WHERE memories_fts MATCH ? AND m.scope = ? AND m.sensitivity IN ({','.join('?' * len(readable))}) "
            "LIMIT 50", (query, scope, *readable)):
            sim = cosine(vec, vector(mtext))
            if sim >= self.config.limits.duplicate_similarity and (best is None or sim > best[1]):
                best = (mid, sim)
        return best

    def remember(self, text: str, *, kind: str = "fact", importance: float = 0.5, who: str = "",
                 topic: str = "", scope: str = "global", sensitivity: str = "low",
                 tags: list[str] | None = None, source: str = "", source_kind: str = "",
                 pinned: bool = False, entities: list[Any] | None = None, now: Any = None,
                 memory_id: str | None = None, half_life_days: float | None = None,
                 dedupe: bool = True, context: Any = None, reason_to_remember: str = "",
                 trust: str | None = None) -> RememberResult:
        """Write a memory, with choice: near-duplicate text in the same scope reinforces the
        existing memory instead of adding a copy. A writer at ``trust`` (an agent) is
        compared only with what it may read; the owner (None) with everything."""
        readable = readable_at(trust)
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
                dup = self._find_duplicate(values["text"], values["scope"], readable)
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
            known = self.known_entities_in(values["text"], values["scope"], None if trust is None else readable)
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

    # -- forgetting (the tick engine is store/ticking.py) ---------------------------------
    def project(self, now: Any = None) -> dict[str, tuple[float, str]]:
        """Strength and layer of every memory at ``now``, without writing anything."""
        return ticking.project(self, now)

    def tick(self, now: Any = None, *, advance_days: float | None = None) -> TickReport:
        """Bring every memory's layer and archive state up to ``now`` (after moving the
        clock ``advance_days`` forward, in the same transaction); see
        :func:`mnemoscope.store.ticking.tick`."""
        return ticking.tick(self, now, advance_days=advance_days)

    def undo_tick(self, tick_id: int) -> TickReport:
        """Put back every memory a tick changed, and the clock as it was before it."""
        return ticking.undo_tick(self, tick_id)

    def redo_tick(self, tick_id: int) -> TickReport:
        """Apply an undone tick again (at the same clock time)."""
        return ticking.redo_tick(self, tick_id)

    # -- higher-level operations live in their own modules ------------------------------
    def recall(self, query: str, k: int = 5, *, scope: str = "global", trust: str | None = "medium",
               now: Any = None, explain: bool = False, reinforce: bool = False) -> list[Hit]:
        return recall(self, query, k=k, scope=scope, trust=trust, now=now, explain=explain, reinforce=reinforce)

    def brief(self, limit: int = 5, scope: str = "global", trust: str = "medium", now: Any = None) -> str:
        return brief(self, limit=limit, scope=scope, trust=trust, now=now)

    def capture(self, content: Any, *, trust: str | None = None, **kwargs: Any) -> CaptureResult:
        """Capture any JSON content as a memory (see :func:`store.capture.capture`); an
        option that does not exist is a :class:`ValidationError` naming it. A writer at
        ``trust`` links and references only what it may read."""
        check_request_keys(kwargs)
        return capture(self, content, trust=trust, **kwargs)

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
