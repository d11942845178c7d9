"""Mnemoscope's own JSONL, written: one memory a line with every field and its entities, then
the graph the memories hang on (store/importers/jsonl.py reads it back).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ..model.columns import COLUMN, EXPORTED
from ..model.edges import MENTIONS, REFERENCES, RELATION
from .jsonl import DECISIONS, _entity_records, _time

if TYPE_CHECKING:
    from ..store import MemoryStore


def memory_record(store: MemoryStore, row: dict[str, Any]) -> dict[str, Any]:
    mid = row["id"]
    return {
        **{name: _EXPORT[COLUMN[name].export](row[name]) for name in EXPORTED},
        "entities": _entity_records(store, mid),
        "references": _linked(store, mid, REFERENCES),
        **{name: _linked(store, mid, edge) for name, edge, _ in DECISIONS},
        "recall_events": [_time(r["at"]) for r in store.tables.rows(
            "SELECT at FROM recall_events WHERE memory_id = ? ORDER BY at", (mid,))],
    }


# How a line writes a stored value, by its column's ``export`` (store/model/columns.py).
_EXPORT = {
    "value": lambda v: v,
    "text": lambda v: v or "",
    "time": _time,
    "flag": bool,
    "json": lambda v: None if v is None else json.loads(v),
    "list": lambda v: json.loads(v or "[]"),
}


def _linked(store: MemoryStore, memory_id: str, edge: str) -> list[str]:
    return [r["dst"] for r in store.tables.rows(
        "SELECT dst FROM edges WHERE src = ? AND edge = ? ORDER BY dst", (memory_id, edge))]


# Characters that some readers take for a line break (Python's str.splitlines, JavaScript
# line terminators). json.dumps leaves them raw with ensure_ascii=False; escaped, every
# line of an export is exactly one memory to any reader.
_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_LINE_BREAK_TABLE = str.maketrans(_LINE_BREAKS)


def _line(record: dict[str, Any]) -> str:
    text = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.translate(_LINE_BREAK_TABLE)


def export_jsonl(store: MemoryStore, out: Any = None, *, kind: str | None = None, layer: str | None = None,
                 scope: str | None = None, text: str | None = None, min_strength: float | None = None) -> str:
    """Write memories (all, or those matching the filters) as JSONL to ``out`` (a path or
    a text stream); returns the text. Unless filtered by more than ``scope``, the entity
    and relation lines follow the memories (see the module's docstring)."""
    ids = [m.id for m in store.list(kind=kind, layer=layer, scope=scope, text=text, min_strength=min_strength,
                                    with_links=False)]
    wanted = set(ids)
    whole = kind is None and layer is None and text is None and min_strength is None
    with store.tables.reading():
        rows = store.tables.rows("SELECT * FROM memory_rows ORDER BY created_at, id")
        lines = [_line(memory_record(store, r)) for r in rows if r["id"] in wanted]
        if whole:  # a filtered export is memories only; a whole one (or a scope's) has its graph
            lines += graph_lines(store, wanted, scope=scope)
    data = "".join(line + "\n" for line in lines)
    if out is None:
        return data
    if isinstance(out, (str, os.PathLike)):
        _write_file(str(out), data)
    else:
        out.write(data)
    return data


GRAPH_LINE_STARTS = ('{"entity":', '{"relation":')  # how an export writes them (sorted keys: one key)


def count_lines(data: str) -> tuple[int, int, int]:
    """(memories, entities, relations) an export's text holds."""
    memories = entities = relations = 0
    for line in data.splitlines():
        if line.startswith(GRAPH_LINE_STARTS[0]):
            entities += 1
        elif line.startswith(GRAPH_LINE_STARTS[1]):
            relations += 1
        elif line.strip():
            memories += 1
    return memories, entities, relations


def graph_lines(store: MemoryStore, memory_ids: set[str], *, scope: str | None = None) -> list[str]:
    """The entity and relation lines of an export: every entity (of ``scope``, when given)
    and every entity the exported memories name; then each relation between two of them.
    (Inside a read.)"""
    named = {dst for src, dst in store.conn.execute(
        f"SELECT src, dst FROM edges WHERE edge = '{MENTIONS}'") if src in memory_ids}
    entities = {}
    for eid, name, kind, escope, aliases, created in store.conn.execute(
            "SELECT id, name, kind, scope, aliases, created_at FROM entities ORDER BY created_at, lower(name), name, scope"):
        if eid in named or scope is None or escope == scope:
            entities[eid] = {"name": name, "kind": kind, "scope": escope, "aliases": json.loads(aliases or "[]"),
                             **({"created_at": _time(created)} if created is not None else {})}
    lines = [_line({"entity": e}) for e in entities.values()]
    relations = []
    for src, edge, dst, created in store.conn.execute(
            f"SELECT src, edge, dst, created_at FROM edges WHERE {store.tables.sql.like('edge')}", (RELATION + "%",)):
        if src in entities and dst in entities:
            a, b = entities[src], entities[dst]
            relations.append({"from": a["name"], "from_scope": a["scope"], "type": edge[len(RELATION):],
                              "to": b["name"], "to_scope": b["scope"],
                              **({"created_at": _time(created)} if created is not None else {})})
    relations.sort(key=lambda r: (str(r.get("created_at")), r["from"].lower(), r["from_scope"], r["type"],
                                  r["to"].lower(), r["to_scope"]))
    return lines + [_line({"relation": r}) for r in relations]


def _write_file(path: str, data: str) -> None:
    """Write ``data`` to ``path`` whole or not at all (files.write_whole: a new file beside
    it, never through a link, then a rename)."""
    from ..files.plain import write_whole

    write_whole(path, data.encode("utf-8"))
