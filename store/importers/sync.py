"""Importing the same source again brings its memories in step with it.

Each memory an import makes carries its origin in its context (``context["origin"]``): the
source (the file or folder, by its absolute path, and the import's ``--scope``), a key that
names what it came from in the source, a slot where it stood, and a digest of what the
source said of it. Importing that source again matches the source's records with the
memories that came from it:

- by key first (a basic-memory note and an observation's text; an MCP memory entity and
  one of its observations; a Letta block; a mem0 item), then, among those left, by slot
  (the note's line; the entity's n-th observation; the block's part), so that an
  observation edited where it stands is the same memory, changed;
- a matched memory whose digest is the source's is unchanged: nothing is written, and what
  a person changed in it since stays;
- a matched memory the source changed is updated (its text, kind, topic, who, tags,
  entities and context; its times, importance, sensitivity and pinned stay as they are);
- a record no memory matches is imported as a new memory;
- a memory whose record the source no longer has is retired: forgotten, so that
  ``mnemoscope restore ID`` (or the window's Activity view) brings it back.

A source is the same when its path and the import's scope are: another copy of a file, or
the same file imported into another scope, is another source. An import that left bad
records out (``--partial``) retires nothing: a record it could not read is not one the
source dropped. Relations are added, never retired (an edge keeps no origin).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model.memory import ORIGIN_KEY

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .plan import ImportPlan

ORIGIN = ORIGIN_KEY  # the key of a memory's context that holds where an import found it
# What a sync may change in a memory the source changed, and what its digest covers.
SYNCED = ("text", "kind", "topic", "who", "tags", "entities", "context")


def source_of(path: Any) -> str:
    """A source's identity: its absolute path, links resolved (the same folder by any name)."""
    return os.path.realpath(os.fspath(path))


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def digest(rec: dict[str, Any]) -> str:
    """What the source said of a record, as a short hash of the fields a sync keeps in step."""
    ctx = rec.get("context")
    if isinstance(ctx, dict) and ORIGIN in ctx:
        ctx = {k: v for k, v in ctx.items() if k != ORIGIN}
    return _hash("\x1f".join((rec["text"], rec["kind"], rec.get("topic") or "", rec.get("who") or "",
                              "\x1e".join(rec.get("tags") or ()), "\x1e".join(e["name"] for e in rec.get("entities") or ()),
                              json.dumps(ctx, ensure_ascii=False, sort_keys=True, default=str))))


def stamp(plan: ImportPlan, rec: dict[str, Any], key: str, slot: str | None) -> None:
    """Give a plan's record its origin (the plan's source, ``key`` and ``slot``)."""
    origin = {"source": plan.origin, "scope": plan.base_scope, "key": _hash(key)}
    if slot is not None:
        origin["slot"] = _hash(slot)
    ctx = rec.get("context")
    ctx = dict(ctx) if isinstance(ctx, dict) else ({} if ctx is None else {"value": ctx})
    ctx.pop(ORIGIN, None)
    rec["context"] = ctx
    origin["digest"] = digest(rec)
    ctx[ORIGIN] = origin


@dataclass
class Change:
    """One memory a sync changes: ``action`` is ``update`` or ``retire``."""

    action: str
    memory_id: str
    text: str  # the memory's text now
    new_text: str | None = None  # (update) the source's

    def __str__(self) -> str:
        if self.action == "retire":
            return f"retire {self.memory_id}: {_short(self.text)}"
        if self.new_text == self.text:
            return f"update {self.memory_id}: {_short(self.text)} (its topic, tags, entities or context)"
        return f"update {self.memory_id}: {_short(self.text)} -> {_short(self.new_text or '')}"


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 1] + "…")


@dataclass
class Match:
    """A plan's records against the memories its source gave before."""

    new: list[dict[str, Any]] = field(default_factory=list)  # records no memory of the source matches
    unchanged: int = 0
    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (memory id, the source's record)
    retire: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # memory id -> its text now (of those above)
    from_source: int = 0  # memories the source gave before

    def changes(self) -> list[Change]:
        out = [Change("update", mid, self.texts[mid], rec["text"]) for mid, rec in self.updates]
        return out + [Change("retire", mid, self.texts[mid]) for mid in self.retire]


def match(store: MemoryStore, plan: ImportPlan) -> Match:
    """Match the plan's records with the memories its source gave before (read only; the
    caller holds a read or the write transaction)."""
    found = Match()
    stored: list[tuple[str, dict[str, Any], str]] = []  # (id, origin, text)
    prefix = plan.id_prefix + "-"
    if plan.id_prefix:
        for mid, ctx, text in store.conn.execute(
                f"SELECT id, context, text FROM memories WHERE {store.tables.sql.like('id')} "
                f"AND {store.tables.sql.like('context')}",
                (prefix + "%", f'%"{ORIGIN}"%')):
            try:
                origin = json.loads(ctx).get(ORIGIN)
            except (ValueError, AttributeError):
                continue
            if isinstance(origin, dict) and origin.get("source") == plan.origin \
                    and origin.get("scope") == plan.base_scope:
                stored.append((mid, origin, text))
    found.from_source = len(stored)
    by_key: dict[str, str] = {}
    by_slot: dict[str, str] = {}
    origins: dict[str, dict[str, Any]] = {}
    for mid, origin, text in stored:
        by_key.setdefault(origin.get("key"), mid)
        if origin.get("slot"):
            by_slot.setdefault(origin["slot"], mid)
        origins[mid] = origin
        found.texts[mid] = text
    matched: dict[str, dict[str, Any]] = {}  # memory id -> record
    waiting = []
    for rec in plan.memories:
        origin = (rec.get("context") or {}).get(ORIGIN) if isinstance(rec.get("context"), dict) else None
        if origin is None:  # (a memory Mnemoscope exported, read back with its own id)
            found.new.append(rec)
            continue
        mid = by_key.get(origin["key"])
        if mid is not None and mid not in matched:
            matched[mid] = rec
        else:
            waiting.append(rec)
    for rec in waiting:
        mid = by_slot.get(rec["context"][ORIGIN].get("slot") or "")
        if mid is not None and mid not in matched:
            matched[mid] = rec
        else:
            found.new.append(rec)
    for mid, rec in matched.items():
        if origins[mid].get("digest") == rec["context"][ORIGIN]["digest"]:
            found.unchanged += 1
        else:
            found.updates.append((mid, rec))
    if not plan.errors:
        found.retire = [mid for mid, _o, _t in stored if mid not in matched]
    # A new record whose id a memory of this source took (its text was edited to another
    # and back again, elsewhere): another id, so that it is not taken for that memory.
    taken = set(origins)
    for rec in found.new:
        n = 1
        while rec["id"] in taken:
            n += 1
            rec["id"] = f"{rec['id'].rsplit('~', 1)[0]}~{n}"
        taken.add(rec["id"])
    return found


def write(store: MemoryStore, found: Match, at: float) -> tuple[list[Any], list[str]]:
    """Apply the updates and retirements of ``found`` (inside the caller's transaction):
    (each updated memory as it was before, the retired ids)."""
    from ..agents import activity

    before = []
    retired = []
    for mid, rec in found.updates:
        if not store.tables.exists(mid):  # forgotten by someone else since the match
            continue
        changes = {k: rec[k] for k in SYNCED if k != "entities"}
        changes["entities"] = [e["name"] for e in rec["entities"]]
        before.append(store.update(mid, now=at, touch=False, **changes).before)
    for mid in found.retire:
        if store.tables.exists(mid):
            activity.forget(store, mid, client="import")
            retired.append(mid)
    return before, retired
