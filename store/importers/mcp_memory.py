"""The official MCP memory server's knowledge graph (``memory.jsonl``), both ways.

The file has one JSON object a line: ``{"type": "entity", "name", "entityType",
"observations": [text, …]}`` or ``{"type": "relation", "from", "to", "relationType"}``.

Import:
- an entity becomes an entity of the import's scope (names that differ only in case are one
  entity here, as everywhere in Mnemoscope: the report lists each one folded in); its ``entityType`` becomes our kind
  where one fits (person, organization → group, project, tool, place, …; else ``other``),
  and is kept as it was written beside the kind (an ``entity_type`` edge), for the export;
- each observation becomes one memory (a fact) that mentions the entity, with the
  original type kept in the memory's context (``{"mcp_memory": {"entity", "entityType"}}``)
  so an export gives it back;
- each relation becomes an edge ``relation:<relationType>`` between the two entities (an
  endpoint the file never defines becomes an entity of kind ``other``, and the report
  says so);
- the file has no times: every memory is created at the import's ``now``;
- an entity with no observation is an entity only (with its type).

Export carries every memory (of ``scope``, when given), each once, as an observation: of
the entity it names (the one an import took it from, else the first by name), or, when
it names none, of an entity standing for its scope (type ``mnemoscope_scope``; importing
the file puts those back in that scope, naming no entity). Then every entity with its
original type where one was kept (else its kind), and every ``relation:`` edge between
them. Lines are written the way the server writes them; the export's report
counts what the format has no place for (times, sensitivity, kinds, a second entity …).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ..model.errors import ValidationError
from ..model.memory import validate_scope
from .plan import ImportPlan, check_name, check_relation, entity_kind
from .report import ExportReport, snapshot
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
    if etype == SCOPE_TYPE:
        _scope_entity(store, plan, number, validate_scope(name, "name"), observations, at)
        return
    if name.lower() in defined:
        first = plan.entities[name.lower()]["name"]
        plan.leave_out(f"line {number}", f"entity {name!r} as an entity of its own",
                       f"entity names ignore case here: its observations go to {first!r}")
        name = first
    else:
        defined.add(name.lower())
        plan.place("entity -> entity")
    kind = entity_kind(etype)
    plan.entity(name, kind, source_type=etype)
    if not observations:
        plan.place("entity without observations -> entity only")
    for i, text in enumerate(observations):
        try:
            rec = plan.memory(store, f"{name}\x1f{text}", slot=f"{name.lower()}\x1f{i}", text=text,
                              created=at + i * 0.001,
                              entities=(name,), kind="fact", source=f"mcp-memory:{os.path.basename(plan.source)}",
                              context={CONTEXT_KEY: {"entity": name, "entityType": etype}})
        except ValidationError as exc:
            raise ValidationError(f"observations[{i}]", str(exc).split(": ", 1)[-1]) from None
        if rec:
            plan.place("observation -> memory (fact) mentioning the entity")
        else:
            plan.leave_out(f"line {number}", f"observation {i + 1} of {name!r}", "the same text twice")


# An entity of this type stands for a scope: its observations are the scope's memories that
# name no entity (an MCP memory file has nothing else to hold them), and an import of the
# file puts them back in that scope, naming no entity.
SCOPE_TYPE = "mnemoscope_scope"


def _scope_entity(store: MemoryStore, plan: ImportPlan, number: int, scope: str, observations: list[str],
                  at: float) -> None:
    """A scope's memories that name no entity (as :func:`export` writes them): in that
    scope, naming no entity."""
    own = plan.scope
    plan.scope = scope
    try:
        for i, text in enumerate(observations):
            try:
                rec = plan.memory(store, f"\x1f{text}", slot=f"\x1f{scope}\x1f{i}", text=text,
                                  created=at + i * 0.001, kind="fact",
                                  source=f"mcp-memory:{os.path.basename(plan.source)}")
            except ValidationError as exc:
                raise ValidationError(f"observations[{i}]", str(exc).split(": ", 1)[-1]) from None
            if rec:
                plan.place(f"observation of an entity of type {SCOPE_TYPE} -> memory of that scope, naming no entity")
            else:
                plan.leave_out(f"line {number}", f"observation {i + 1} of scope {scope!r}", "the same text twice")
    finally:
        plan.scope = own


def export(store: MemoryStore, out: str | os.PathLike | None = None, *, scope: str | None = None) -> ExportReport:
    """Every memory (of ``scope``, when given) as an observation, each once: under the
    entity it names (the one an import took it from, else the first by name), or, naming
    none, under an entity for its scope (type :data:`SCOPE_TYPE`); every entity (of
    ``scope``), with its original type where an import kept one (else its kind); then
    every ``relation:`` edge between them. Written (to ``out`` when given) the way the
    server writes its file; the report says what the format could not carry."""
    from ..files.plain import write_whole

    snap = snapshot(store, scope)
    report = ExportReport(FORMAT, None if out is None else str(out), memories=len(snap.memories))
    entities: dict[str, dict[str, Any]] = {
        eid: {"name": e["name"], "entityType": e["type"] or e["kind"], "observations": []}
        for eid, e in snap.entities.items() if scope is None or e["scope"] == scope}
    scopes: dict[str, dict[str, Any]] = {}
    extra_links = moved_scope = 0
    for row in snap.memories:
        ctx = json.loads(row["context"]) if row["context"] else None
        origin = ctx.get(CONTEXT_KEY) if isinstance(ctx, dict) else None
        named = snap.mentions.get(row["id"], [])
        if named:
            eid = next((e for e in named if isinstance(origin, dict)
                        and origin.get("entity") == snap.entities[e]["name"]), named[0])
            ent = entities.setdefault(eid, {"name": snap.entities[eid]["name"], "entityType": snap.entities[eid]["type"]
                                            or snap.entities[eid]["kind"], "observations": []})
            if isinstance(origin, dict) and origin.get("entity") == ent["name"] and not snap.entities[eid]["type"] \
                    and isinstance(origin.get("entityType"), str):
                ent["entityType"] = origin["entityType"]
            report.place("memory -> observation of the entity it names")
            extra_links += len(named) - 1
            moved_scope += row["scope"] != "global"
        else:
            ent = scopes.setdefault(row["scope"], {"name": row["scope"], "entityType": SCOPE_TYPE,
                                                   "observations": []})
            report.place(f"memory naming no entity -> observation of the entity for its scope ({SCOPE_TYPE})")
        ent["observations"].append(row["text"])
        report.written += 1
    relations = [{"from": entities[a]["name"], "to": entities[b]["name"], "relationType": rel}
                 for a, rel, b in snap.relations if a in entities and b in entities]
    report.entities, report.relations = len(entities), len(relations)
    if scopes:
        report.place(f"scope -> entity of type {SCOPE_TYPE}", len(scopes))
    rows = snap.memories
    report.lose("scope of memories that name an entity", moved_scope,
                "an entity has no scope here; an import puts them in its --scope")
    report.lose("links to a second entity", extra_links, "an observation belongs to one entity")
    report.lose("sensitivity above low", sum(r["sensitivity"] not in ("low", "public") for r in rows),
                "imported at the import's --sensitivity")
    report.lose("kind other than fact", sum(r["kind"] != "fact" for r in rows), "an observation is a fact")
    report.lose("times (created, updated, recalled)", len(rows), "observations have none")
    report.lose("tags, topic, who or importance", sum(bool(json.loads(r["tags"] or "[]") or r["topic"] or r["who"])
                                                      for r in rows), "observations are text only")
    report.lose("pinned", sum(bool(r["pinned"]) for r in rows), "observations are text only")
    report.lose("entity aliases", sum(bool(e["aliases"]) for eid, e in snap.entities.items() if eid in entities),
                "an entity has one name here")
    lines = [json.dumps({"type": "entity", **e}, ensure_ascii=False, separators=(",", ":"))
             for e in [*entities.values(), *(scopes[s] for s in sorted(scopes))]]
    lines += [json.dumps({"type": "relation", **r}, ensure_ascii=False, separators=(",", ":")) for r in relations]
    report.data = "\n".join(lines)
    if out is not None:
        write_whole(out, report.data.encode("utf-8"))
    return report
