"""The official MCP memory server's knowledge graph (``memory.jsonl``), both ways.

The file has one JSON object a line: ``{"type": "entity", "name", "entityType",
"observations": [text, …]}`` or ``{"type": "relation", "from", "to", "relationType"}``.

Import:
- an entity becomes an entity of the import's scope (names that differ only in case are one
  entity here, as everywhere in Mnemoscope: the report lists each one folded in); its ``entityType`` becomes our kind
  where one fits (person, organization → group, project, tool, place, …; else ``other``);
- each observation becomes one memory (a fact) that mentions the entity, with the
  original type kept in the memory's context (``{"mcp_memory": {"entity", "entityType"}}``)
  so an export gives it back;
- each relation becomes an edge ``relation:<relationType>`` between the two entities (an
  endpoint the file never defines becomes an entity of kind ``other``, and the report
  says so);
- the file has no times: every memory is created at the import's ``now``;
- an entity with no observation is an entity only; if its type fits none of our kinds
  the report lists it, because that type cannot come back on export.

Export writes the same shape: every entity (of ``scope``, when given) with the texts of
the memories that mention it as observations, oldest first, and its original type where
an import kept one (else its kind); then every ``relation:`` edge between them. Lines
are written the way the server writes them.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from .plan import RELATION_PREFIX, ImportPlan, check_name, check_relation, entity_kind
from .source import jsonl_lines, read_text

if TYPE_CHECKING:
    from ..store import MemoryStore

FORMAT = "mcp-memory"
CONTEXT_KEY = "mcp_memory"


def looks_like(head: str) -> bool:
    first = next((ln for ln in head.split("\n") if ln.strip()), "")
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):  # a hostile first line is refused by the reader
        return first.lstrip().startswith('{"type":') and ('"entity"' in first or '"relation"' in first)
    return isinstance(obj, dict) and obj.get("type") in ("entity", "relation")


def read(store: MemoryStore, path: str | os.PathLike, plan: ImportPlan, *, now: float | None = None) -> ImportPlan:
    text = read_text(path)
    at = store.tables.now(now)
    relations: list[tuple[int, dict[str, Any]]] = []
    defined: set[str] = set()
    for number, obj in jsonl_lines(text, plan.errors):
        try:
            if not isinstance(obj, dict):
                raise ValidationError("line", "must be a JSON object")
            kind = obj.get("type")
            if kind == "entity":
                _entity(store, plan, number, obj, at, defined)
            elif kind == "relation":
                relations.append((number, obj))
            else:
                raise ValidationError("type", f"must be 'entity' or 'relation', got {kind!r}"
                                      + _hint(obj))
        except ValidationError as exc:
            plan.error(number, str(exc))
    for number, obj in relations:
        try:
            src = check_name(obj.get("from"), "from")
            dst = check_name(obj.get("to"), "to")
            rel = check_relation(obj.get("relationType"), "relationType")
        except ValidationError as exc:
            plan.error(number, str(exc))
            continue
        for end in (src, dst):
            if end.lower() not in defined:
                plan.entity(end, "other")
                defined.add(end.lower())
                plan.place("relation endpoint not defined as an entity -> entity (kind other)")
        if plan.relate(src, rel, dst):
            plan.place("relation -> edge relation:<type> between entities")
    return plan


def _hint(obj: dict[str, Any]) -> str:
    if "text" in obj and "kind" in obj:
        return "; this looks like a Mnemoscope JSONL export: use --format jsonl"
    if "memory" in obj:
        return "; this looks like a mem0 export: use --format mem0"
    return ""


def _entity(store: MemoryStore, plan: ImportPlan, number: int, obj: dict[str, Any], at: float,
            defined: set[str]) -> None:
    unknown = set(obj) - {"type", "name", "entityType", "observations"}
    if unknown:
        raise ValidationError(sorted(unknown)[0], "is not a field of an MCP memory entity")
    name = check_name(obj.get("name"), "name")
    etype = obj.get("entityType", "")
    if not isinstance(etype, str) or len(etype) > 100:
        raise ValidationError("entityType", f"must be a string of at most 100 characters, got {etype!r}"[:200])
    observations = obj.get("observations") or []
    if not isinstance(observations, list):
        raise ValidationError("observations", f"must be a list of strings, got {type(observations).__name__}")
    for i, text in enumerate(observations):
        if not isinstance(text, str):
            raise ValidationError(f"observations[{i}]", f"must be a string, got {type(text).__name__}")
    if name.lower() in defined:
        first = plan.entities[name.lower()]["name"]
        plan.leave_out(f"line {number}", f"entity {name!r} as an entity of its own",
                       f"entity names ignore case here: its observations go to {first!r}")
        name = first
    else:
        defined.add(name.lower())
        plan.place("entity -> entity")
    kind = entity_kind(etype)
    plan.entity(name, kind)
    if not observations:
        plan.place("entity without observations -> entity only")
        if etype and etype.lower() != kind:
            plan.leave_out(f"line {number}", f"entityType {etype!r} of {name!r}",
                           f"no observation to keep it on; the entity is of kind {kind!r}")
    for i, text in enumerate(observations):
        try:
            rec = plan.memory(store, f"{name}\x1f{text}", text=text, created=at + i * 0.001,
                              entities=(name,), kind="fact", source=f"mcp-memory:{os.path.basename(plan.source)}",
                              context={CONTEXT_KEY: {"entity": name, "entityType": etype}})
        except ValidationError as exc:
            raise ValidationError(f"observations[{i}]", str(exc).split(": ", 1)[-1]) from None
        if rec:
            plan.place("observation -> memory (fact) mentioning the entity")
        else:
            plan.leave_out(f"line {number}", f"observation {i + 1} of {name!r}", "the same text twice")


def export(store: MemoryStore, out: str | os.PathLike | None = None, *, scope: str | None = None) -> str:
    """The store's entities, observations and relations as an MCP memory file (to ``out``
    when given); returns the text."""
    from ..jsonl import _write_file

    with store.tables.reading():
        where, params = ("WHERE scope = ?", (scope,)) if scope else ("", ())
        entities: dict[str, dict[str, Any]] = {
            eid: {"name": name, "entityType": kind, "observations": []}
            for eid, name, kind in store.conn.execute(
                f"SELECT id, name, kind FROM entities {where} ORDER BY created_at, rowid", params)}
        rows = store.conn.execute(
            "SELECT x.dst, m.text, m.context FROM memories m "
            "JOIN edges x ON x.src = m.id AND x.edge = 'mentions_entity' "
            f"{where.replace('scope', 'm.scope')} ORDER BY m.created_at, m.id", params).fetchall()
        for eid, text, context in rows:
            ent = entities.get(eid)
            if ent is None:  # an entity of another scope (a global one a scoped memory mentions)
                continue
            ctx = json.loads(context) if context else None
            origin = ctx.get(CONTEXT_KEY) if isinstance(ctx, dict) else None
            if isinstance(origin, dict) and origin.get("entity") == ent["name"] \
                    and isinstance(origin.get("entityType"), str):
                ent["entityType"] = origin["entityType"]
            if text not in ent["observations"]:
                ent["observations"].append(text)
        relations = [{"from": entities[a]["name"], "to": entities[b]["name"], "relationType": edge[len(RELATION_PREFIX):]}
                     for a, edge, b in store.conn.execute(
                         "SELECT src, edge, dst FROM edges WHERE edge LIKE ? ORDER BY rowid", (RELATION_PREFIX + "%",))
                     if a in entities and b in entities]
    lines = [json.dumps({"type": "entity", **e}, ensure_ascii=False, separators=(",", ":"))
             for e in entities.values()]
    lines += [json.dumps({"type": "relation", **r}, ensure_ascii=False, separators=(",", ":")) for r in relations]
    data = "\n".join(lines)
    if out is not None:
        _write_file(str(out), data)
    return data
