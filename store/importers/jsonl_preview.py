"""A dry run of Mnemoscope's own JSONL import: every line checked as the import checks it,
the ids counted against the store; nothing written."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from ..errors import ImportRefused, ValidationError
from ..jsonl import _lines, _parse_line, _read
from .plan import ImportResult, _stored_ids

if TYPE_CHECKING:
    from ..store import MemoryStore


def preview_jsonl(store: MemoryStore, path: str | os.PathLike) -> ImportResult:
    text, name = _read(str(path))
    errors: list[tuple[int, str]] = []
    ids: list[str] = []
    for number, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        try:
            ids.append(_parse_line(store, json.loads(line))["id"])
        except json.JSONDecodeError as exc:
            errors.append((number, f"not valid JSON: {exc.msg} at column {exc.colno}"))
        except ValidationError as exc:
            errors.append((number, str(exc)))
    if errors:
        raise ImportRefused(name, errors)
    with store.tables.reading():
        existing = _stored_ids(store, ids)
    result = ImportResult("jsonl", name, "", True, memories_new=len(set(ids) - existing),
                          memories_existing=len(existing & set(ids)))
    result.placed["line -> memory"] = len(ids)
    return result
