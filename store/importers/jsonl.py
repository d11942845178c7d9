"""JSONL import and export: one memory per line, every field, with its entities; then
the graph the memories hang on, so that nothing stored is left behind:

- one line ``{"entity": {"name", "kind", "scope", "aliases", "created_at"}}`` per entity
  (an entity no memory names included), and
- one line ``{"relation": {"from", "from_scope", "type", "to", "to_scope", "created_at"}}``
  per relation between two entities (the ``relation:<type>`` edges an MCP memory server
  file or a basic-memory note brings).

An import makes the entities first (so each memory links to the entity of the scope it
linked to), then the memories, then the relations.

Export is canonical (sorted keys, fixed time format, memories ordered by creation time
then id), so export → import into an empty store → export gives the same bytes.
Import checks every line first and writes nothing if one is bad (naming each bad line
with its number and reason), unless asked for a partial import; it writes in one
transaction and resolves id conflicts by policy.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..meaning import backfill, vectors
from ..model import json_input
from ..model.columns import EDITABLE_COLUMNS, EXPORTED, MEMORY_COLUMNS
from ..model.edges import EDGE_COLUMNS, KEPT, MENTIONS, RELATION, SUPERSEDED_BY, SUPERSEDES
from ..model.errors import ImportRefused, StoreError, ValidationError
from ..model.memory import (
    ENTITY_KINDS,
    check_name,
    check_text,
    iso,
    parse_time,
    validate_fields,
    validate_half_life,
    validate_id,
    validate_scope,
)

if TYPE_CHECKING:
    from ..store import MemoryStore


POLICIES = ("skip", "overwrite", "merge")
# A line's fields: the exported columns (store/model/columns.py), then what links the memory.
FIELDS = (*EXPORTED, "entities", "references", "recall_events", "supersedes", "kept_with")
# A person's decisions about pairs of memories (store.conflicts), kept across an export:
# the field, the edge from this memory, and the edge back.
DECISIONS = (("supersedes", SUPERSEDES, SUPERSEDED_BY), ("kept_with", KEPT, KEPT))
# What links a memory to other memories: written after every memory of a file is in.
LINK_FIELDS = ("references", *(f for f, _, _ in DECISIONS))


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0
    overwritten: int = 0
    merged: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    entities: int = 0  # entity lines whose entity was made (not there before)
    relations: int = 0  # relation lines whose edge was written (not there before)
    recall_waiting: int = 0  # imported memories whose recall vectors the background backfill makes

    def summary(self) -> str:
        parts = [f"{self.imported} imported"]
        for name in ("skipped", "overwritten", "merged"):
            if getattr(self, name):
                parts.append(f"{getattr(self, name)} {name}")
        for name, one in (("entities", "entity"), ("relations", "relation")):
            if count := getattr(self, name):
                parts.append(f"{count} {one if count == 1 else name} made")
        if self.errors:
            parts.append(f"{len(self.errors)} bad line(s)")
        if self.recall_waiting:
            parts.append(f"{self.recall_waiting} waiting for their recall vectors (the background backfill of a "
                         "server or the window, or mnemoscope reembed --only-missing)")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The report as every door gives it in JSON (not the ids: an import may hold many)."""
        return {"summary": self.summary(), "imported": self.imported, "skipped": self.skipped,
                "overwritten": self.overwritten, "merged": self.merged,
                "entities": self.entities, "relations": self.relations, "recall_waiting": self.recall_waiting,
                "errors": [{"line": n, "reason": r} for n, r in self.errors]}


def _entity_records(store: MemoryStore, memory_id: str) -> list[dict[str, Any]]:
    rows = store.tables.rows(
        "SELECT e.name, e.kind, e.aliases FROM edges x JOIN entities e ON e.id = x.dst "
        f"WHERE x.src = ? AND x.edge = '{MENTIONS}' ORDER BY lower(e.name), e.name", (memory_id,))
    out = []
    for r in rows:
        rec: dict[str, Any] = {"name": r["name"], "kind": r["kind"]}
        aliases = json.loads(r["aliases"] or "[]")
        if aliases:
            rec["aliases"] = aliases
        out.append(rec)
    return out


def _time(ts: float | None) -> str | float | None:
    """A stored time for export: ISO 8601, or the raw seconds for one outside the years an
    ISO time can hold (written by an older version), so the backup still works and
    importing it names the field."""
    try:
        return iso(ts)
    except (ValueError, OverflowError, OSError):
        return ts


def _id_of(obj: dict[str, Any]) -> str:
    canonical = json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str)
    return "m-" + hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:12]


def _parse_line(store: MemoryStore, obj: Any, now: float) -> dict[str, Any]:
    """A line's memory, checked; ``now`` is its creation time when the line gives none."""
    if not isinstance(obj, dict):
        raise ValidationError("line", "must be a JSON object")
    unknown = set(obj) - set(FIELDS) - {"strength", "layer"}
    if unknown:
        raise ValidationError(sorted(unknown)[0], "is not a memory field")
    # A line without an id gets one made from what it says: importing it again skips it.
    mid = validate_id(obj["id"]) if obj.get("id") is not None else _id_of(obj)
    editable = {k: obj[k] for k in EDITABLE_COLUMNS if k in obj}
    values = validate_fields(editable, store.config, partial=False)
    created = parse_time(obj["created_at"], "created_at") if obj.get("created_at") is not None else now
    rec = dict(values, id=mid, created_at=created)
    rec["updated_at"] = parse_time(obj["updated_at"], "updated_at") if obj.get("updated_at") else created
    rec["ref_time"] = parse_time(obj["ref_time"], "ref_time") if obj.get("ref_time") else created
    base = obj.get("base", 1.0)
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not 0 <= base <= 1:
        raise ValidationError("base", f"must be a number from 0 to 1, got {base!r}")
    rec["base"] = float(base)
    rc = obj.get("recall_count", 0)
    if isinstance(rc, bool) or not isinstance(rc, int) or rc < 0:
        raise ValidationError("recall_count", f"must be a whole number >= 0, got {rc!r}")
    rec["recall_count"] = rc
    rec["last_recalled_at"] = (parse_time(obj["last_recalled_at"], "last_recalled_at")
                               if obj.get("last_recalled_at") else None)
    rec["half_life_days"] = validate_half_life(obj.get("half_life_days"))
    ents = obj.get("entities") or []
    if not isinstance(ents, list):
        raise ValidationError("entities", "must be a list")
    clean_ents = []
    for e in ents:
        if isinstance(e, str):
            e = {"name": e}
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not e["name"].strip():
            raise ValidationError("entities", f"each entity needs a name, got {e!r}")
        kind = e.get("kind", "other")
        if kind not in ENTITY_KINDS:
            raise ValidationError("entities.kind", f"must be one of {', '.join(ENTITY_KINDS)}, got {kind!r}")
        aliases = e.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise ValidationError("entities.aliases", "must be a list of strings")
        for alias in aliases:
            check_text("entities.aliases", alias)
        clean_ents.append({"name": check_text("entities", e["name"]).strip(), "kind": kind, "aliases": aliases})
    rec["entities"] = clean_ents
    for name in LINK_FIELDS:
        refs = obj.get(name) or []
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise ValidationError(name, "must be a list of memory ids")
        for ref in refs:
            check_text(name, ref)
        rec[name] = refs
    events = obj.get("recall_events") or []
    if not isinstance(events, list):
        raise ValidationError("recall_events", "must be a list of times")
    rec["recall_events"] = [parse_time(t, "recall_events") for t in events]
    return rec


def _read(source: Any) -> tuple[str, str]:
    """(text, name for messages) of a path, a string of JSONL, a text or binary stream,
    or an iterable of lines."""
    looks_like_data = isinstance(source, str) and ("\n" in source or source.lstrip("\ufeff \t").startswith("{"))
    if isinstance(source, (str, os.PathLike)) and not looks_like_data:
        from .source import MAX_FILE_BYTES, read_plain  # (not at the top: importers import its kin)

        try:  # a pipe or a device is refused, never waited on; a file too big, before it is read
            data = read_plain(source, None, refuse_over=MAX_FILE_BYTES)
        except OSError as exc:
            raise StoreError(f"cannot read {source}: {exc.strerror or exc}") from None
        # Bytes that are not UTF-8 become U+DC80-U+DCFF (which strict UTF-8 never yields):
        # their line is refused by number (_undecodable), and a partial import takes the rest.
        return data.decode("utf-8-sig", "surrogateescape"), str(source)
    if isinstance(source, str):
        return source, "the import"
    if isinstance(source, io.IOBase) or hasattr(source, "read"):
        data = source.read()
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise StoreError(f"the import is not UTF-8 text (byte {exc.start + 1}): {exc.reason}") from None
        return data, getattr(source, "name", "the import")
    return "\n".join(str(x).rstrip("\n") for x in source), "the import"


_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _undecodable(line: str) -> str | None:
    """Why a line read from a file is not text: a byte that is not UTF-8 (see _read)."""
    found = _NOT_UTF8.search(line)
    if found is None:
        return None
    column = len(line[:found.start()].encode("utf-8", "surrogateescape")) + 1
    return f"is not UTF-8 text (byte {column} of the line: 0x{ord(found.group()) - 0xDC00:02x})"


def _lines(text: str) -> list[str]:
    """The lines of a JSONL text, split on ``\n`` alone (JSON itself never contains a raw
    newline, but a memory's text may hold U+2028 or U+0085, which str.splitlines takes
    for line breaks). A UTF-8 byte order mark and CRLF endings are accepted."""
    text = text.removeprefix("\ufeff")
    return [line.removesuffix("\r") for line in text.split("\n")]


def import_jsonl(store: MemoryStore, source: Any, policy: str = "skip", now: Any = None,
                 partial: bool = False, progress: Any = None) -> ImportReport:
    """Import memories from JSONL (a path, a string of lines, or a stream).

    Every line is checked before anything is written. If any line is bad, nothing is
    imported and :class:`ImportRefused` lists every bad line; with ``partial=True`` the
    good lines are imported and the bad ones are listed in the report's ``errors``.

    The new memories' vectors are worked out first, in batches (``progress(done, total)``
    after each), and written with them in the one transaction; an export carries no
    vectors (it stays model-free), so an import embeds again."""
    if policy not in POLICIES:
        raise ValidationError("policy", f"must be one of {', '.join(POLICIES)}, got {policy!r}")
    text, name = _read(source)
    report = ImportReport()
    parsed: list[tuple[int, dict[str, Any]]] = []
    graph = Graph()
    seen: dict[str, int] = {}
    created = store.now()  # of the lines that do not say when they were written
    for number, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        not_text = _undecodable(line)
        if not_text:
            report.errors.append((number, not_text))
            continue
        try:
            obj = json_input.loads(line, surrogates=False)  # the fields name their own
        except json_input.BadJson as exc:
            report.errors.append((number, str(exc).replace(" at line 1 column", " at column")))
            continue
        try:
            if graph.read(number, obj, created):
                continue
            rec = _parse_line(store, obj, created)
        except ValidationError as exc:
            report.errors.append((number, str(exc)))
            continue
        if rec["id"] in seen:
            report.errors.append((number, f"id {rec['id']!r} already appears on line {seen[rec['id']]}"))
            continue
        seen[rec["id"]] = number
        parsed.append((number, rec))
    if report.errors and not partial:
        good = sum(1 for line in _lines(text) if line.strip()) - len(report.errors)
        raise ImportRefused(name, report.errors, good=good)
    tick_now = store.tables.now(now)
    blobs = vectors.for_records(store, [rec for _, rec in parsed], progress)
    with store.tables.write():
        report.entities = graph.make_entities(store, policy)
        fresh: list[dict[str, Any]] = []
        stored = store.tables.stored_ids([rec["id"] for _, rec in parsed])
        for _, rec in parsed:
            exists = rec["id"] in stored
            if exists and policy == "skip":
                report.skipped += 1
                continue
            if exists and policy == "merge":
                _merge(store, rec)
                report.merged += 1
                report.ids.append(rec["id"])
                continue
            if exists:
                store.tables.delete_memory(rec["id"])
                report.overwritten += 1
            else:
                report.imported += 1
            fresh.append(rec)
            report.ids.append(rec["id"])
        _insert(store, fresh, tick_now, blobs)
        for _, rec in parsed:  # every one of them is stored now (skipped ones were already)
            for ref in rec["references"]:
                if store.exists(ref):
                    store.tables.reference(rec["id"], ref, rec["created_at"], [])
            for name, edge, inverse in DECISIONS:
                for other in rec[name]:
                    if store.exists(other):
                        store.tables.edge_pair(rec["id"], edge, other, inverse, rec["updated_at"], [])
                        if edge == SUPERSEDES:  # the replaced memory stays archived
                            store.tables.refresh_state(other)
        report.relations = graph.make_relations(store, tick_now)
    report.recall_waiting = backfill.recall_soon(store, report.ids)
    return report


class Graph:
    """The entity and relation lines of an import (see the module's docstring): read with
    the memory lines, written around them."""

    def __init__(self) -> None:
        self.entities: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}  # (lower name, scope) -> line, entity
        self.relations: list[dict[str, Any]] = []

    def read(self, number: int, obj: Any, now: float) -> bool:
        """Take ``obj`` if it is an entity or relation line (True); raises ValidationError."""
        if not isinstance(obj, dict) or not ({"entity", "relation"} & set(obj)) or "text" in obj:
            return False
        if len(obj) != 1:
            raise ValidationError(sorted(set(obj) - {"entity", "relation"})[0],
                                  "is not a field of an entity or relation line")
        key, value = next(iter(obj.items()))
        if not isinstance(value, dict):
            raise ValidationError(key, "must be an object")
        created = parse_time(value["created_at"], f"{key}.created_at") if value.get("created_at") is not None else now
        if key == "entity":
            unknown = set(value) - {"name", "kind", "scope", "aliases", "created_at"}
            if unknown:
                raise ValidationError(f"entity.{sorted(unknown)[0]}", "is not a field of an entity")
            name = check_name(value.get("name"), "entity.name")
            kind = value.get("kind", "other")
            if kind not in ENTITY_KINDS:
                raise ValidationError("entity.kind", f"must be one of {', '.join(ENTITY_KINDS)}, got {kind!r}")
            scope = validate_scope(value.get("scope"), "entity.scope")
            aliases = value.get("aliases") or []
            if not isinstance(aliases, list):
                raise ValidationError("entity.aliases", "must be a list of names")
            aliases = [check_name(a, "entity.aliases") for a in aliases]
            ident = (name.lower(), scope)
            if ident in self.entities:
                raise ValidationError("entity", f"{name!r} of scope {scope!r} already appears on line "
                                                f"{self.entities[ident][0]}")
            self.entities[ident] = (number, {"name": name, "kind": kind, "scope": scope, "aliases": aliases,
                                             "created_at": created})
            return True
        unknown = set(value) - {"from", "from_scope", "type", "to", "to_scope", "created_at"}
        if unknown:
            raise ValidationError(f"relation.{sorted(unknown)[0]}", "is not a field of a relation")
        rtype = value.get("type")
        if not isinstance(rtype, str) or not rtype.strip() or len(rtype) > 100:
            raise ValidationError("relation.type", f"must be a name of 1 to 100 characters, got {rtype!r}"[:200])
        self.relations.append({"from": check_name(value.get("from"), "relation.from"),
                               "from_scope": validate_scope(value.get("from_scope"), "relation.from_scope"),
                               "type": check_name(rtype, "relation.type"),
                               "to": check_name(value.get("to"), "relation.to"),
                               "to_scope": validate_scope(value.get("to_scope"), "relation.to_scope"),
                               "created_at": created})
        return True

    @staticmethod
    def _find(store: MemoryStore, name: str, scope: str) -> str | None:
        row = store.conn.execute("SELECT id FROM entities WHERE lower(name) = ? AND scope = ? LIMIT 1",
                                 (name.lower(), scope)).fetchone()
        return row[0] if row else None

    def make_entities(self, store: MemoryStore, policy: str) -> int:
        """Make each entity line's entity that is not there (same name, same scope); one
        that is keeps its kind, and takes the line's aliases too unless ``policy`` is skip.
        Returns how many were made. (Inside the import's write.)"""
        made = 0
        for _, ent in self.entities.values():
            eid = self._find(store, ent["name"], ent["scope"])
            if eid is None:
                store.conn.execute(
                    "INSERT INTO entities (id, name, kind, scope, aliases, created_at) VALUES (?,?,?,?,?,?)",
                    ("e-" + uuid.uuid4().hex[:12], ent["name"], ent["kind"], ent["scope"],
                     json.dumps(ent["aliases"], ensure_ascii=False), ent["created_at"]))
                made += 1
            elif policy != "skip" and ent["aliases"]:
                (have,) = store.conn.execute("SELECT aliases FROM entities WHERE id = ?", (eid,)).fetchone()
                both = list(dict.fromkeys([*json.loads(have or "[]"), *ent["aliases"]]))
                store.conn.execute("UPDATE entities SET aliases = ? WHERE id = ?",
                                   (json.dumps(both, ensure_ascii=False), eid))
        return made

    def make_relations(self, store: MemoryStore, now: float) -> int:
        """Write each relation line's edge (an end no entity has yet is made, of kind
        other, in its scope); returns how many edges were new."""
        made = 0
        for rel in self.relations:
            ends = []
            for end in ("from", "to"):
                eid = self._find(store, rel[end], rel[f"{end}_scope"])
                if eid is None:
                    eid = store.tables.resolve_entity(rel[end], "other", rel[f"{end}_scope"], now, [])
                ends.append(eid)
            cur = store.conn.execute(store.tables.sql.insert_if_absent("edges", EDGE_COLUMNS),
                                     (ends[0], RELATION + rel["type"], ends[1], rel["created_at"]))
            made += bool(cur.rowcount)
        return made


def _insert(store: MemoryStore, fresh: list[dict[str, Any]], now: float, blobs: dict[str, bytes]) -> None:
    """Insert the new memories (their decay state at ``now``), then their entities, recall
    events and vectors: the memories and the vectors each in one statement (one COPY on
    PostgreSQL, where a statement per memory wrote the counts its triggers keep once per
    memory: 20,000 lines took minutes)."""
    rows = store.tables.prepared(fresh, now)
    rowids = store.tables.insert_memories([rows[rec["id"]][0] for rec in fresh], [rows[rec["id"]][1] for rec in fresh])
    for rec in fresh:
        store.tables.set_entities(rec["id"], rec["entities"], rec["scope"], rec["created_at"], [], [])
        store.tables.add_recall_events(rec["id"], rec["recall_events"])
    written = [(rowid, blobs[rec["id"]]) for rowid, rec in zip(rowids, fresh) if rec["id"] in blobs]
    if written and vectors.writable_for(store):
        vectors.claim(store)
        store.tables.backend.insert_many("vectors", ("rowid", "vec"), written)


def _merge(store: MemoryStore, rec: dict[str, Any]) -> None:
    """Merge: the newer version's fields win; tags, entities and recalls are united."""
    current = store.get(rec["id"])
    newer = rec["updated_at"] > current.updated_at
    changes: dict[str, Any] = {}
    if newer:
        changes.update({c.name: rec[c.name] for c in MEMORY_COLUMNS if c.merge == "newer"})
    changes.update({c.name: list(dict.fromkeys(getattr(current, c.name) + rec[c.name]))
                    for c in MEMORY_COLUMNS if c.merge == "union"})
    changes["entities"] = list(dict.fromkeys(current.entities + [e["name"] for e in rec["entities"]]))
    store.update(rec["id"], now=max(rec["updated_at"], current.updated_at), touch=False, **changes)
    if rec["recall_count"] > current.recall_count or rec["ref_time"] > current.ref_time:
        # The larger of each, taken here: two-argument max() is SQLite's alone (PostgreSQL's is
        # GREATEST), and ``current`` was read inside this write transaction.
        store.tables.conn.execute(
            "UPDATE memories SET recall_count = ?, ref_time = ?, "
            "base = CASE WHEN ? > ref_time THEN ? ELSE base END WHERE id = ?",
            (max(rec["recall_count"], current.recall_count), max(rec["ref_time"], current.ref_time),
             rec["ref_time"], rec["base"], rec["id"]))
        store.tables.refresh_state(rec["id"])
