"""What an import will do, before it does it: the memories, entities and relations a
file becomes, where each part of the file went, and what was left out and why.

Every format reader builds one :class:`ImportPlan`; :func:`apply` writes it in one
transaction (or, for a dry run, only counts what it would write). A reader that finds a
bad record adds an error naming its line or field and goes on, so one run lists them
all; a plan with errors is refused whole and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agents.capture import ENTITY_TYPES
from ..curation import privacy, privacy_scan
from ..meaning import backfill, embedding_workers, vectors
from ..model import memory as model
from ..model.edges import EDGE_COLUMNS, RELATION, TYPE_PREFIX, TYPED
from ..model.errors import MAX_LISTED, ImportRefused, ValidationError
from ..model.memory import ENTITY_KINDS, check_text, validate_fields, validate_scope
from . import sync

if TYPE_CHECKING:
    from ..store import MemoryStore

# Entity-to-entity relations are stored as one edge ``relation:<type>`` from the first
# entity to the second (memories link to entities with mentions_entity as before).
RELATION_PREFIX = RELATION
MAX_RELATION_CHARS = 100
Progress = Callable[[int, int], None]


class FileRefused(ImportRefused):
    """A file (or folder) to import has bad records: each is listed by line or field, and
    nothing was written. (Unlike JSONL, other tools' files are imported whole or not at all.)"""

    def __init__(self, source: str, errors: list[tuple[Any, str]]) -> None:
        super().__init__(source, errors)
        shown = "\n".join(f"  {_where(n)}: {why}" for n, why in errors[:MAX_LISTED])
        more = f"\n  … and {len(errors) - MAX_LISTED} more" if len(errors) > MAX_LISTED else ""
        self.args = (f"{source}: {len(errors)} bad record(s), so nothing was imported; fix them in the file "
                     f"and import it again:\n{shown}{more}",)

    def __str__(self) -> str:
        return self.args[0]


def _where(n: Any) -> str:
    return f"line {n}" if isinstance(n, int) else str(n)


@dataclass
class LeftOut:
    """A part of the file that was not imported, and why."""

    where: str
    what: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what} ({self.why})"


@dataclass
class ImportPlan:
    format: str
    source: str
    scope: str
    sensitivity: str = "low"  # of every memory the plan makes (an import's --sensitivity)
    id_prefix: str = ""  # its format's (formats.Format.id_prefix): the ids of its memories start with it
    memories: list[dict[str, Any]] = field(default_factory=list)
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)  # lower(name) -> name, kind, aliases
    relations: list[tuple[str, str, str]] = field(default_factory=list)  # (from name, type, to name)
    placed: dict[str, int] = field(default_factory=dict)  # "observation -> memory": count
    left_out: list[LeftOut] = field(default_factory=list)
    errors: list[tuple[Any, str]] = field(default_factory=list)  # (line number or "file:line", reason)
    now: float = 0.0  # the import's time (of what the file gives no time)
    # Memories that came with their own sensitivity (a Mnemoscope export read back): an
    # import's --sensitivity, when given, still sets it; the default does not.
    keeps_sensitivity: set[str] = field(default_factory=set)
    # An import's --partial: bad records are left out (each listed with its reason) and the
    # rest is imported, instead of nothing.
    partial: bool = False
    # What a memory's origin names (store/importers/sync.py): the source, by its absolute
    # path, and the scope it was imported into (the import's --scope; a reader may file
    # some memories elsewhere, as mem0's users).
    origin: str = ""
    base_scope: str = "global"
    scope_given: bool = False  # the import named its scope (--scope): a reader files nothing elsewhere
    memory_ids: set[str] = field(default_factory=set)  # the ids of the memories planned
    _relations: set[tuple[str, str, str]] = field(default_factory=set)
    _aliases: dict[str, str] = field(default_factory=dict)  # lower(alias) -> lower(name)

    def relate(self, src: str, rel: str, dst: str) -> bool:
        """Add a relation between two entities of the plan; False when it is there already."""
        if (src, rel, dst) in self._relations:
            return False
        self._relations.add((src, rel, dst))
        self.relations.append((src, rel, dst))
        return True

    def place(self, what: str, n: int = 1) -> None:
        self.placed[what] = self.placed.get(what, 0) + n

    def leave_out(self, where: str, what: str, why: str) -> None:
        self.left_out.append(LeftOut(where, what, why))

    def error(self, where: Any, reason: str) -> None:
        self.errors.append((where, reason))

    def alias(self, name: str, alias: str) -> None:
        """Give the plan's entity ``name`` another name it is known by (kept in its aliases)."""
        key = name.lower()
        if alias.lower() == key or alias.lower() in self.entities or alias.lower() in self._aliases:
            return
        self._aliases[alias.lower()] = key
        self.entities[key]["aliases"].append(alias)

    def find(self, name: str) -> str | None:
        """The plan's entity called ``name`` or known by it as an alias (None: neither)."""
        key = name.lower()
        key = key if key in self.entities else self._aliases.get(key)
        return None if key is None else self.entities[key]["name"]

    def entity(self, name: str, kind: str = "other", scope: str | None = None, source_type: str = "") -> str:
        """Add (or find) an entity by name; the first kind given wins. ``scope``: where it
        is made (default: the import's scope); a file Mnemoscope exported says.
        ``source_type``: the free-form type the source gave it (kept beside its kind)."""
        key = name.lower()
        if key not in self.entities:
            self.entities[key] = {"name": name, "kind": kind if kind in ENTITY_KINDS else "other", "aliases": [],
                                  "scope": scope, "type": source_type}
        else:
            if scope is not None and self.entities[key]["scope"] is None:
                self.entities[key]["scope"] = scope
            if source_type and not self.entities[key].get("type"):
                self.entities[key]["type"] = source_type
        return self.entities[key]["name"]

    def memory(self, store: MemoryStore, key: str, *, text: str, created: float, updated: float | None = None,
               entities: tuple[str, ...] = (), slot: str | None = None, scope: str | None = None,
               **fields: Any) -> dict[str, Any]:
        """A memory record (checked as the store checks any memory) with an id made from
        the format and ``key``, so importing the same file twice finds the same ids. Its
        context holds its origin (see :mod:`.sync`): ``key`` names what it came from in the
        source, ``slot`` where it stood (so that a record edited in place is matched with
        the memory it gave). ``scope``: where it goes (default: the plan's). Raises
        :class:`ValidationError` naming the field."""
        scope = scope or self.scope
        values = validate_fields(dict(fields, text=text, scope=scope, sensitivity=self.sensitivity), store.config)
        digest = hashlib.sha1(f"{self.format}\x1f{scope}\x1f{key}".encode()).hexdigest()[:16]
        mid = f"{self.id_prefix}-{digest}"
        if mid in self.memory_ids:
            return {}
        self.memory_ids.add(mid)
        # To the millisecond, as every export writes a time: what comes back is what is stored.
        created = round(created, 3)
        updated = created if updated is None or updated < created else round(updated, 3)
        specs = [{"name": n, "kind": self.entities.get(n.lower(), {}).get("kind", "other"), "aliases": []}
                 for n in entities]
        rec = dict(values, id=mid, created_at=created, updated_at=updated, ref_time=updated, base=1.0,
                   recall_count=0, last_recalled_at=None, half_life_days=None, entities=specs, references=[],
                   supersedes=[], kept_with=[], recall_events=[])
        sync.stamp(self, rec, key, slot)
        self.memories.append(rec)
        if len(self.memories) == embedding_workers.WORKERS_FROM:
            warm = WARM.get()
            if warm is not None:
                warm()
        return rec


# Set while a file is read for an import that follows at once (importers.plan_import with
# ``warm``): the embedder's ``warm``, called when the plan reaches as many memories as make
# the embedding go to worker processes, so that they load the model while the rest is read.
WARM: ContextVar[Callable[[], None] | None] = ContextVar("warm", default=None)



def entity_kind(source_type: Any) -> str:
    """A source's free-form entity type as one of our kinds ('other' when none fits)."""
    if not isinstance(source_type, str):
        return "other"
    low = source_type.strip().lower()
    if low in ENTITY_KINDS:
        return low
    return ENTITY_TYPES.get(low, "other")


def check_name(value: Any, field_name: str) -> str:
    """An entity name, by the one rule for names (model.check_name): ``/`` and ``\\`` are
    kept (``TCP/IP``, ``CI/CD``, basic-memory's ``projects/orion`` permalinks); every writer
    that makes a file of a name (the mirror, the basic-memory export) makes it safe itself."""
    return model.check_name(value, field_name)


def check_relation(value: Any, field_name: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(field_name, f"must be a string, got {type(value).__name__}")
    rel = check_text(field_name, value).strip()
    if not rel or len(rel) > MAX_RELATION_CHARS or any(ord(ch) < 32 for ch in rel):
        raise ValidationError(field_name, f"must be 1 to {MAX_RELATION_CHARS} printable characters, "
                                          f"got {_short(rel)!r}")
    return rel


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class ImportResult:
    """What an import wrote (or, with ``dry_run``, would write)."""

    format: str
    source: str
    scope: str
    dry_run: bool
    memories_new: int = 0
    memories_existing: int = 0  # already in the store (same id, or the source's and unchanged): left as they are
    memories_updated: int = 0  # the source's, changed there since it was imported (see sync)
    memories_retired: int = 0  # the source's, no longer there: forgotten (restorable)
    memories_unchanged: int = 0  # (of memories_existing) the source's, unchanged
    entities_new: int = 0
    entities_existing: int = 0
    relations_new: int = 0
    relations_existing: int = 0
    placed: dict[str, int] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # the memories written
    entity_ids: list[str] = field(default_factory=list)  # the entities created
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # the relation edges written
    sensitivity: str = "low"
    # The privacy check of what came in: each thing an imported memory holds (text or
    # context) that needs more than its sensitivity. privacy.raise_findings raises them.
    findings: list[privacy_scan.Finding] = field(default_factory=list)
    bad: int = 0  # bad records --partial left out (each is in left_out)
    changes: list[sync.Change] = field(default_factory=list)  # what a sync updates and retires
    updated: list[Any] = field(default_factory=list)  # the memories it updated, as they were before
    retired: list[str] = field(default_factory=list)  # the memories it retired (forgot)
    # Imported memories whose recall vectors the background backfill makes (store/meaning/catch_up.py).
    recall_waiting: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        parts = [f"{verb} {self.memories_new} memories, {self.entities_new} entities, "
                 f"{self.relations_new} relations from {self.format}"]
        if self.memories_updated or self.memories_retired:
            parts.append(f"{'would update' if self.dry_run else 'updated'} {self.memories_updated} and "
                         f"{'would retire' if self.dry_run else 'retired'} {self.memories_retired} memories the "
                         "source changed or no longer has")
        existing = self.memories_existing + self.entities_existing + self.relations_existing
        if existing:
            parts.append(f"{self.memories_existing} memories, {self.entities_existing} entities and "
                         f"{self.relations_existing} relations already there")
        if self.bad:
            parts.append(f"{self.bad} bad record(s) left out")
        if len(self.left_out) > self.bad:
            parts.append(f"{len(self.left_out) - self.bad} part(s) left out")
        if self.findings:
            flagged = len({f.memory_id for f in self.findings})
            parts.append(f"{flagged} {'memory' if flagged == 1 else 'memories'} should be more sensitive")
        if self.recall_waiting:
            parts.append(f"{self.recall_waiting} wait for their recall vectors (found by their similarity vectors "
                         "meanwhile; made in the background by a server or the window, or by mnemoscope reembed "
                         "--only-missing)")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "source": self.source, "scope": self.scope, "dry_run": self.dry_run,
                "memories_new": self.memories_new, "memories_existing": self.memories_existing,
                "entities_new": self.entities_new, "entities_existing": self.entities_existing,
                "relations_new": self.relations_new, "relations_existing": self.relations_existing,
                "placed": dict(self.placed), "summary": self.summary(), "sensitivity": self.sensitivity,
                "bad_records": self.bad, "memories_updated": self.memories_updated,
                "memories_retired": self.memories_retired, "memories_unchanged": self.memories_unchanged,
                "changes": [{"action": c.action, "memory_id": c.memory_id, "text": c.text}
                            | ({"new_text": c.new_text} if c.action == "update" else {}) for c in self.changes],
                "recall_waiting": self.recall_waiting,
                "privacy": [{"memory_id": f.memory_id, "what": f.what, "where": f.where, "preview": f.preview,
                             "sensitivity": f.sensitivity, "needed": f.needed} for f in self.findings],
                "left_out": [{"where": x.where, "what": x.what, "why": x.why} for x in self.left_out]}


def _aliases(store: MemoryStore, scope: str) -> dict[str, str]:
    """lower(alias) -> entity id, for the entities of ``scope`` and global (this scope's first)."""
    out: dict[str, str] = {}
    for eid, aliases in store.conn.execute(
            "SELECT id, aliases FROM entities WHERE aliases != '[]' AND scope IN (?, 'global') ORDER BY scope = ?",
            (scope, scope)):
        for alias in json.loads(aliases):
            out[alias.lower()] = eid
    return out


def _existing_entity(store: MemoryStore, name: str, scope: str) -> str | None:
    row = store.conn.execute("SELECT id FROM entities WHERE lower(name) = ? AND scope IN (?, 'global') "
                             "ORDER BY scope = ? DESC LIMIT 1", (name.lower(), scope, scope)).fetchone()
    return row[0] if row else None


BATCH = 2000


def apply(store: MemoryStore, plan: ImportPlan, *, now: Any = None, dry_run: bool = False,
          progress: Progress | None = None, before_changes: Callable[[ImportResult], None] | None = None
          ) -> ImportResult:
    """Write the plan in one transaction (nothing when it has errors: :class:`ImportRefused`
    lists them all; with the plan's ``partial``, the bad records are left out, each listed
    with its reason, and the rest is written). A memory whose id is already stored is left
    as it is. Importing a source again brings the memories it gave in step with it (see
    :mod:`.sync`): ``before_changes`` is called, before anything is written, when that
    updates or retires any. With ``dry_run`` nothing is written and the result counts
    what would be, and lists what would change."""
    if plan.errors and (not plan.partial or not (plan.memories or plan.entities or plan.relations)):
        raise FileRefused(plan.source, plan.errors)
    started_all = time.perf_counter()
    result = ImportResult(plan.format, plan.source, plan.scope, dry_run, placed=dict(plan.placed),
                          left_out=list(plan.left_out), sensitivity=plan.sensitivity)
    result.bad = len(plan.errors)
    result.left_out += [LeftOut(_where(where), "a bad record", why)
                        for where, why in plan.errors]
    at = store.tables.now(now)
    with store.tables.reading():
        found = sync.match(store, plan)
        stored = store.tables.stored_ids([rec["id"] for rec in found.new])
    # What the source gave before: unchanged, updated or retired (store/importers/sync.py).
    result.memories_updated, result.memories_retired = len(found.updates), len(found.retire)
    result.memories_unchanged, result.changes = found.unchanged, found.changes()
    to_embed = [rec for rec in found.new if rec["id"] not in stored]
    if dry_run:
        with store.tables.reading():
            aliases = _aliases(store, plan.scope)
            known = {k for k, e in plan.entities.items() if k in aliases or _existing_entity(store, e["name"], plan.scope)}
        result.entities_existing = len(known)
        result.entities_new = len(plan.entities) - len(known)
        result.memories_new = len(to_embed)
        result.memories_existing = len(found.new) - len(to_embed) + found.unchanged
        result.relations_new = len(set(plan.relations))
        result.findings = privacy.check_records([*to_embed, *(dict(rec, id=mid) for mid, rec in found.updates)])
        result.seconds = time.perf_counter() - started_all
        return result
    if before_changes is not None and (found.updates or found.retire):
        before_changes(result)
    writes = len(found.new) + len(plan.entities) + len(plan.relations) + len(found.updates) + len(found.retire)
    done = 0
    # The new memories' vectors first, outside the transaction (it is most of an import's
    # time with a real model); progress counts them and then every write. In a big import
    # worker processes make them (store/meaning/embedding_workers.py) while this thread works out
    # the rows to write, which needs no SQL, and then writes all but the vectors.
    total = len(to_embed) + writes
    step = max(1, total // 100)

    def tick(n: int = 1) -> None:
        nonlocal done
        before, done = done, done + n
        if progress is not None and (done // step != before // step or done == total):
            progress(done, total)

    embedded = 0

    def embedding(n: int, _of: int) -> None:
        nonlocal embedded
        tick(n - embedded)
        embedded = n

    pending = vectors.start_for_records(store, to_embed)
    tick(len(to_embed) - len(pending.records))  # the ones with nothing to embed
    try:
        started = time.perf_counter()
        rows = store.tables.prepared(to_embed, at)
        prepared = time.perf_counter() - started
        # The privacy check of what comes in (an agent may be served it at once), of the
        # records as they will be stored, text and context: while the workers embed.
        findings = privacy.check_records(to_embed)
        # The writes begin while the workers make the last vectors, once what is left of
        # them should take about as long as working out the rows did (the writes take about
        # that long): the write lock is held little longer than the writes need it.
        pending.wait(embedding, leave=prepared)
        with store.tables.write():
            _write(store, plan, found.new, result, rows, pending, at, tick, embedding)
            result.updated, result.retired = sync.write(store, found, at)
            tick(len(found.updates) + len(found.retire))
        findings += privacy.check_records([dict(rec, id=mid) for mid, rec in found.updates])
    finally:
        pending.cancel()
    written = set(result.ids) | {m.id for m in result.updated}
    result.findings = [f for f in findings if f.memory_id in written]
    result.recall_waiting = backfill.recall_soon(store, [*result.ids, *(m.id for m in result.updated)])
    result.seconds = time.perf_counter() - started_all
    return result


def _write(store: MemoryStore, plan: ImportPlan, records: list[dict[str, Any]], result: ImportResult,
           rows: dict[str, tuple[tuple, tuple]], pending: vectors.PendingVectors, at: float, tick: Callable[..., None],
           embedding: Progress) -> None:
    """Write the plan's entities, ``records`` (its new memories) and relations, inside the
    caller's transaction."""
    entity_ids: dict[str, str] = {}
    aliases = _aliases(store, plan.scope)
    fresh_entities = []
    for key, ent in plan.entities.items():
        escope = ent.get("scope") or plan.scope
        eid = _existing_entity(store, ent["name"], escope) or aliases.get(key)
        if eid is None:
            # As Tables.resolve_entity creates one, without its per-name scan for aliases
            # (done once above): at 50,000 entities that scan was most of an import.
            eid = "e-" + uuid.uuid4().hex[:12]
            fresh_entities.append((eid, ent["name"], ent["kind"], escope,
                                   json.dumps(ent["aliases"], ensure_ascii=False), at))
            result.entity_ids.append(eid)
        else:
            result.entities_existing += 1
        entity_ids[key] = eid
    tick(len(plan.entities))
    store.conn.executemany("INSERT INTO entities (id, name, kind, scope, aliases, created_at) VALUES (?,?,?,?,?,?)",
                           fresh_entities)
    # The type each it made was given, where that is not its kind (the MCP memory server's
    # entityType; an entity there before keeps what it had).
    made = set(result.entity_ids)
    store.conn.executemany("INSERT INTO edges (src, edge, dst, created_at) VALUES (?,?,?,?)",
                           [(entity_ids[key], TYPED, TYPE_PREFIX + ent["type"], at) for key, ent in plan.entities.items()
                            if ent.get("type") and ent["type"] != ent["kind"] and entity_ids[key] in made])
    result.entities_new = len(fresh_entities)
    known = store.tables.stored_ids([rec["id"] for rec in records])
    fresh = [rec for rec in records if rec["id"] not in known]
    result.memories_existing = len(records) - len(fresh) + result.memories_unchanged
    tick(len(records) - len(fresh))
    missing = [rec for rec in fresh if rec["id"] not in rows]  # deleted by another writer since the look above
    rows.update(store.tables.prepared(missing, at))
    written: list[tuple[int, str]] = []  # (rowid, memory id)
    for start in range(0, len(fresh), BATCH):
        chunk = fresh[start:start + BATCH]
        rowids = store.tables.insert_memories([rows[rec["id"]][0] for rec in chunk],
                                              [rows[rec["id"]][1] for rec in chunk])
        written += zip(rowids, (rec["id"] for rec in chunk))
        mentions = []
        for rec in chunk:
            for spec in rec["entities"]:
                eid = entity_ids[spec["name"].lower()]
                mentions += [(rec["id"], "mentions_entity", eid, at), (eid, "mentioned_in", rec["id"], at)]
            result.ids.append(rec["id"])
        store.conn.executemany(store.tables.sql.insert_if_absent("edges", EDGE_COLUMNS), mentions)
        tick(len(chunk))
    result.memories_new = len(fresh)
    # What a Mnemoscope export read back carries besides (mem0.export's items): recalls,
    # and the memories each cites, once every memory of the file is in.
    for rec in fresh:
        if rec["recall_events"]:
            store.tables.add_recall_events(rec["id"], rec["recall_events"])
        for ref in rec["references"]:
            if store.tables.exists(ref):
                store.tables.reference(rec["id"], ref, rec["created_at"], [])
    # Relations already stored are counted, not written again (one look, then one statement).
    stored_edges = set(store.conn.execute(f"SELECT src, edge, dst FROM edges WHERE {store.tables.sql.like('edge')}",
                                          (RELATION_PREFIX + "%",)))
    for src, rel, dst in plan.relations:
        edge = (entity_ids[src.lower()], RELATION_PREFIX + rel, entity_ids[dst.lower()])
        if edge in stored_edges:
            result.relations_existing += 1
        else:
            stored_edges.add(edge)
            result.edges.append(edge)
    result.relations_new = len(result.edges)
    store.conn.executemany("INSERT INTO edges (src, edge, dst, created_at) VALUES (?,?,?,?)",
                           [(*edge, at) for edge in result.edges])
    tick(len(plan.relations))
    blobs = pending.wait(embedding)  # the last of the vectors
    if blobs and vectors.writable_for(store):
        vectors.claim(store)
        # One statement on PostgreSQL (COPY): the count of vectors written moves once (schema 13).
        store.tables.backend.insert_many("vectors", ("rowid", "vec"),
                    [(rowid, blobs[mid]) for rowid, mid in written if mid in blobs])


def undo(store: MemoryStore, result: ImportResult) -> None:
    """Take back what :func:`apply` wrote (in one transaction): its memories, its relation
    edges, and the entities it created that nothing else links to now; the memories it
    updated as they were, and those it retired back."""
    from ..agents.activity import restore_forgotten

    with store.tables.write():
        for mid in result.retired:
            restore_forgotten(store, mid)
        for before in result.updated:
            if store.tables.exists(before.id):
                store.restore_state(before, sync.SYNCED)
        for mid in result.ids:
            if store.tables.exists(mid):
                store.tables.delete_memory(mid)
        store.conn.executemany("DELETE FROM edges WHERE src = ? AND edge = ? AND dst = ?", result.edges)
        for eid in result.entity_ids:
            if store.conn.execute(f"SELECT 1 FROM edges WHERE (src = ? AND edge != '{TYPED}') OR dst = ? LIMIT 1",
                                  (eid, eid)).fetchone() is None:
                store.conn.execute(f"DELETE FROM edges WHERE src = ? AND edge = '{TYPED}'", (eid,))
                store.conn.execute("DELETE FROM entities WHERE id = ?", (eid,))


def new_plan(fmt: str, source: str, scope: str | None, id_prefix: str) -> ImportPlan:
    """An empty plan for reading ``source`` as the format ``fmt`` (its ids start ``id_prefix``)."""
    scope = validate_scope(scope or "global")
    return ImportPlan(fmt, source, scope, id_prefix=id_prefix, origin=sync.source_of(source), base_scope=scope)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
