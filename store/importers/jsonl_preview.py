"""A dry run of Mnemoscope's own JSONL import: every line checked as the import checks it,
the ids counted against the store; nothing written."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..model import json_input
from ..model.errors import ImportRefused, ValidationError
from .jsonl import Graph, _lines, _parse_line, _read, _undecodable
from .plan import ImportResult

if TYPE_CHECKING:
    from ..store import MemoryStore


def preview_jsonl(store: MemoryStore, path: str | os.PathLike) -> ImportResult:
    text, name = _read(str(path))
    errors: list[tuple[int, str]] = []
    ids: list[str] = []
    seen: dict[str, int] = {}
    created = store.now()
    graph = Graph()
    for number, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        if _undecodable(line):
            errors.append((number, _undecodable(line)))
            continue
        try:  # as import_jsonl reads a line: nesting too deep, a huge number are bad lines too
            obj = json_input.loads(line, surrogates=False)
            if graph.read(number, obj, created):
                continue
            rec = _parse_line(store, obj, created)
        except json_input.BadJson as exc:
            errors.append((number, str(exc).replace(" at line 1 column", " at column")))
            continue
        except ValidationError as exc:
            errors.append((number, str(exc)))
            continue
        if rec["id"] in seen:
            errors.append((number, f"id {rec['id']!r} already appears on line {seen[rec['id']]}"))
            continue
        seen[rec["id"]] = number
        ids.append(rec["id"])
    if errors:
        good = sum(1 for line in _lines(text) if line.strip()) - len(errors)
        raise ImportRefused(name, errors, good=good)
    with store.tables.reading():
        existing = store.tables.stored_ids(ids)
    result = ImportResult("jsonl", name, "", True, memories_new=len(set(ids) - existing),
                          memories_existing=len(existing & set(ids)))
    result.placed["line -> memory"] = len(ids)
    if graph.entities:
        result.placed["entity line -> entity"] = len(graph.entities)
    if graph.relations:
        result.placed["relation line -> edge relation:<type> between entities"] = len(graph.relations)
    return result
