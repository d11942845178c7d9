"""mem0's exported memories (JSON), and OpenMemory's export (a zip).

Read as ``Memory.get_all()`` returns them (``{"results": [...]}``), as a plain list of
those items, or as ``{"memories": [...]}``. Each item: ``id``, ``memory`` (the text),
``hash``, ``metadata``, ``created_at``, ``updated_at``, and the ids mem0 scopes by:
``user_id``, ``agent_id``, ``run_id`` (also ``actor_id``, ``role``).

- Each item becomes one memory (a fact) with its text and times.
- Scope: ``user:<user_id>``, else ``agent:<agent_id>``, else ``run:<run_id>``, else the
  import's scope. The ids not used for the scope become tags (``agent:…``, ``run:…``),
  and all of them stay in the memory's context with the item's id, hash and metadata.
- An item filed under a user *and* an agent is found by mem0 from either; a memory here
  has one scope, so it is in ``user:<user_id>`` and a copy of it in ``agent:<agent_id>``
  (the report counts them; importing the file again keeps both in step).
- ``metadata.categories`` (a list of strings), where present, become tags.
- mem0's graph relations (``relations`` in a graph store's output) have no text of
  their own; the report counts them as left out.

OpenMemory (mem0's app) exports a zip (``POST /api/v1/backup/export``) holding
``memories.json`` (the user, their apps, categories and memories: ``id``, ``content``,
``metadata``, ``state``, ``app_id``, ``category_ids``, times) and ``memories.jsonl.gz``
(the same memories, one a line, with the app's and categories' names). The zip, or its
``memories.json`` alone, is read: each active memory becomes a memory in scope
``user:<user_id>``, its categories as tags and its app as a tag ``app:<name>``; a paused,
archived or deleted one is counted as left out (OpenMemory serves none of them). Without
``memories.json`` the zip's ``memories.jsonl.gz`` is read instead.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..model.errors import ValidationError
from ..model.memory import parse_time, validate_scope
from . import openmemory
from .plan import ImportPlan
from .report import ExportReport, snapshot
from .source import parse_json, read_text

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .formats import Sniff

FORMAT = "mem0"
ZIP_MAGIC = "PK\x03\x04"
KNOWN = {"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id", "agent_id", "run_id",
         "actor_id", "role", "score", "categories", "immutable", "expiration_date", "owner", "organization"}


def is_openmemory(doc: Any) -> bool:
    """OpenMemory's ``memories.json``: its user, and memories with ``content``."""
    return isinstance(doc, dict) and isinstance(doc.get("memories"), list) and ("user" in doc or "export_meta" in doc)


def items_of(doc: Any) -> list[Any] | None:
    if isinstance(doc, dict):
        for key in ("results", "memories"):
            if isinstance(doc.get(key), list):
                return doc[key]
        return None
    return doc if isinstance(doc, list) else None


def looks_like(doc: Any) -> bool:
    if is_openmemory(doc):
        return True
    items = items_of(doc)
    return bool(items) and isinstance(items[0], dict) and "memory" in items[0]


def recognise(sniff: Sniff) -> bool:
    if sniff.is_dir:
        return False
    if sniff.head.startswith(ZIP_MAGIC):
        return openmemory.is_export(sniff.path)
    if sniff.doc is not None:
        return looks_like(sniff.doc)
    head = sniff.head
    start = head.lstrip()[:1]
    return sniff.broken_document and '"memory"' in head and (start == "[" or '"results"' in head
                                                             or '"memories"' in head)


def read(store: MemoryStore, path: str | os.PathLike, plan: ImportPlan, *, now: float | None = None) -> ImportPlan:
    if openmemory.is_zip(path):
        return openmemory.read_zip(store, path, plan, now=now)
    try:
        doc = parse_json(read_text(path))
        if isinstance(doc, str):  # JSON inside a JSON string
            doc = parse_json(doc)
    except ValueError as exc:
        plan.error(1, str(exc))
        return plan
    if is_openmemory(doc):
        return openmemory.read_doc(store, doc, plan, now=now, where=os.path.basename(str(path)))
    items = items_of(doc)
    if items is None or (items and not all(isinstance(i, dict) and "memory" in i for i in items[:1])):
        hint = "; this looks like a Letta agent file: use --format letta" if isinstance(doc, dict) and (
            "agents" in doc or "core_memory" in doc) else ""
        plan.error(1, "is not a mem0 export (a list of items with 'memory', or {\"results\": [...]})" + hint)
        return plan
    at = store.tables.now(now)
    if isinstance(doc, dict) and doc.get("relations"):
        plan.leave_out("relations", f"{len(doc['relations'])} graph relation(s)",
                       "mem0's graph relations carry no text and no times; only memories are imported")
    for i, item in enumerate(items):
        where = f"results[{i}]" if isinstance(doc, dict) else f"[{i}]"
        try:
            _item(store, plan, item, at, where)
        except ValidationError as exc:
            plan.error(where, str(exc))
    return plan


def _item(store: MemoryStore, plan: ImportPlan, item: Any, at: float, where: str) -> None:
    if not isinstance(item, dict):
        raise ValidationError("item", "must be an object")
    text = item.get("memory")
    if not isinstance(text, str):
        raise ValidationError("memory", f"must be a string, got {type(text).__name__}")
    ids = {}
    for key in ("user_id", "agent_id", "run_id", "actor_id"):
        value = item.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise ValidationError(key, f"must be a non-empty string, got {value!r}")
            ids[key] = value.strip()
    chosen = None
    for key, prefix in (("user_id", "user"), ("agent_id", "agent"), ("run_id", "run")):
        if key in ids:
            chosen = validate_scope(f"{prefix}:{ids[key]}", key)
            break
    created = parse_time(item["created_at"], "created_at") if item.get("created_at") else at
    updated = parse_time(item["updated_at"], "updated_at") if item.get("updated_at") else created
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValidationError("metadata", "must be an object")
    tags = [f"{prefix}:{ids[key]}" for key, prefix in (("agent_id", "agent"), ("run_id", "run"))
            if key in ids and not (chosen or "").startswith(prefix + ":")]
    categories = item.get("categories") or (metadata or {}).get("categories") or []
    if isinstance(categories, list):
        tags += [c for c in categories if isinstance(c, str) and c.strip()]
    extra = sorted(set(item) - KNOWN)
    mine = (metadata or {}).get(METADATA_KEY)
    if isinstance(mine, dict):  # a memory Mnemoscope exported: every field back as it was
        _own(store, plan, item, text, mine, where)
        return
    context = {"mem0": {k: item.get(k) for k in ("id", "hash", "role") if item.get(k) is not None} | ids
               | ({"metadata": metadata} if metadata else {})}
    key = f"{item.get('id') or text}"
    fields = dict(text=text, created=created, updated=updated, kind="fact",
                  tags=[t[:64] for t in dict.fromkeys(tags)][: store.config.limits.max_tags],
                  source=f"mem0:{os.path.basename(plan.source)}", context=context)
    rec = plan.memory(store, key, scope=chosen, **fields)
    if rec:
        plan.place(f"memory -> memory (fact) in scope {chosen or plan.scope}")
    else:
        same = f"the same id {item['id']!r}"[:100] if item.get("id") else "the same text"
        plan.leave_out(where, f"memory {text[:60]!r}", f"an earlier item of its scope has {same}; the first is kept")
    if rec and "user_id" in ids and "agent_id" in ids:
        # mem0 finds it from the user and from the agent; here, a copy in the agent's scope.
        agent = validate_scope(f"agent:{ids['agent_id']}", "agent_id")
        fields["tags"] = [f"user:{ids['user_id']}", *(t for t in fields["tags"] if t != f"agent:{ids['agent_id']}")]
        if plan.memory(store, f"{key}\x1f{agent}", scope=agent, **fields):
            plan.place("memory of a user and an agent -> also a copy in scope agent:ID, so the agent finds it")
    if extra:
        plan.leave_out(f"memory {item.get('id') or text[:30]!r}", f"field(s) {', '.join(extra)}",
                       "not part of mem0's memory item schema")


def _own(store: MemoryStore, plan: ImportPlan, item: dict[str, Any], text: str, fields: dict[str, Any],
         where: str) -> None:
    """An item of :func:`export`: its memory as the JSONL line it was, checked as one."""
    from .jsonl import _parse_line

    rec = _parse_line(store, {**fields, "id": item.get("id"), "text": text}, plan.now)
    if rec["id"] in plan.memory_ids:
        plan.leave_out(where, f"memory {text[:60]!r}", f"an earlier item has the same id {rec['id']!r}"[:100])
        return
    plan.memory_ids.add(rec["id"])
    plan.keeps_sensitivity.add(rec["id"])
    for spec in rec["entities"]:
        plan.entity(spec["name"], spec["kind"])
        for alias in spec["aliases"]:
            plan.alias(spec["name"], alias)
    plan.memories.append(rec)
    plan.place(f"item exported by Mnemoscope -> memory with every field back, in scope {rec['scope']}")


# What a mem0 item's metadata holds of a memory Mnemoscope exported: every field mem0 has
# no place for (an import of the file puts them back; mem0 keeps metadata as it is given).
METADATA_KEY = "mnemoscope"
SCOPE_IDS = (("user:", "user_id"), ("agent:", "agent_id"), ("run:", "run_id"))


def export(store: MemoryStore, out: str | os.PathLike | None = None, *, scope: str | None = None) -> ExportReport:
    """Every memory (of ``scope``, when given) as an item of mem0's ``get_all()`` answer
    (``{"results": [...]}``): ``id``, ``memory``, ``hash`` (MD5 of the text, as mem0 makes
    it), ``created_at``/``updated_at``, the session id its scope names (``user:ID`` ->
    ``user_id``, ``agent:ID`` -> ``agent_id``, ``run:ID`` -> ``run_id``), and in
    ``metadata.mnemoscope`` every other field (kind, importance, sensitivity, scope, tags,
    entities, …), which an import of the file puts back."""
    import hashlib
    import json

    from ..files.plain import write_whole
    from .jsonl_export import memory_record

    snap = snapshot(store, scope)
    report = ExportReport(FORMAT, None if out is None else str(out), memories=len(snap.memories))
    items = []
    with store.tables.reading():
        for row in snap.memories:
            rec = memory_record(store, row)
            text = rec.pop("text")
            mid = rec.pop("id")
            item = {"id": mid, "memory": text, "hash": hashlib.md5(text.encode("utf-8")).hexdigest(),
                    "metadata": {METADATA_KEY: rec}, "created_at": rec["created_at"], "updated_at": rec["updated_at"]}
            for prefix, key in SCOPE_IDS:
                if row["scope"].startswith(prefix):
                    item[key] = row["scope"][len(prefix):]
                    report.place(f"memory of scope {prefix}ID -> item with {key}")
                    break
            else:
                report.place("memory of another scope -> item with no session id (its scope in metadata)")
            items.append(item)
            report.written += 1
    named = {e for ids in snap.mentions.values() for e in ids}
    report.entities = len(named)
    report.lose("entities no memory names", sum(eid not in named for eid in snap.entities),
                "a mem0 item is a memory; entities travel on the memories that name them")
    report.lose("relations between entities", len(snap.relations), "mem0's graph memory is not part of get_all()")
    report.data = json.dumps({"results": items}, ensure_ascii=False, indent=2)
    if out is not None:
        write_whole(out, report.data.encode("utf-8"))
    return report
