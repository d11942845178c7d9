"""Importing the memory other tools keep, and writing it back for the MCP memory server.

Formats: ``mcp-memory`` (the official MCP memory server's ``memory.jsonl``),
``basic-memory`` (a folder of markdown notes), ``letta`` (an agent file, ``.af``),
``mem0`` (its exported memories) and ``jsonl`` (Mnemoscope's own export). Each module's
docstring is its mapping to memories, entities and edges. Every import is read whole
first; a file with any bad record writes nothing and the error names each bad line or
field; the report says where every part of the file went and what was left out. A
source imported again is brought in step with what it holds now (:mod:`.sync`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..model.errors import ImportRefused, StoreError, ValidationError
from ..model.memory import validate_sensitivity
from . import mcp_memory
from .formats import FORMATS as FORMAT_RECORDS
from .formats import Format, by_name, names, recognise
from .plan import WARM, FileRefused, ImportPlan, ImportResult, LeftOut, Progress, apply, new_plan, undo
from .source import MAX_FILE_BYTES, TooLarge, file_size

if TYPE_CHECKING:
    from ..store import MemoryStore

FORMATS = names()  # the --format choices (the formats' records: store/importers/formats.py)
NAMES = {f.name: f.noun for f in FORMAT_RECORDS}


def detect(path: str | os.PathLike) -> str | None:
    """Which format a file or folder looks like (None: none of ours)."""
    try:
        found = recognise(str(path))
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    return None if found is None else found.name


def plan_import(store: MemoryStore, path: str | os.PathLike, fmt: str | None = None, *, scope: str | None = None,
                now: Any = None, warm: bool = False, sensitivity: str | None = None,
                partial: bool = False) -> ImportPlan:
    """Read ``path`` as ``fmt`` (detected when None) into a plan; nothing is written.
    A file that is not of ``fmt`` is refused with the format it looks like. ``warm``: the
    import follows at once, so once the file turns out big enough, the embedding's worker
    processes start (and load the model) while the rest of it is read. ``sensitivity``:
    of every memory imported (default ``low``). ``partial``: the plan's bad records will be
    left out and the rest imported (see :func:`apply`), instead of nothing."""
    level = validate_sensitivity(sensitivity or "low")
    if fmt is not None and fmt not in names():
        raise ValidationError("format", f"must be one of {', '.join(names())}, got {fmt!r}")
    if not os.path.exists(path):
        raise StoreError(f"{path} does not exist")
    size = file_size(path)
    if size is not None and size > MAX_FILE_BYTES:  # known from its metadata: nothing is read
        raise TooLarge(str(path), size, MAX_FILE_BYTES)
    seen = detect(path)
    if fmt is None:
        if seen is None:
            raise StoreError(f"{path} is none of the formats Mnemoscope imports ({', '.join(names())}); "
                             "name one with --format")
        fmt = seen
    elif seen is not None and seen != fmt:
        raise StoreError(f"{path} is not {by_name(fmt).noun}: it looks like {by_name(seen).noun}; "
                         f"import it with --format {seen}")
    record = by_name(fmt)
    if record.read is None:
        raise StoreError(f"{record.noun} is imported by store.import_jsonl")
    if record.folder and not os.path.isdir(path):
        raise StoreError(f"{path} is a file; {record.noun} is a folder")
    if not record.folder and os.path.isdir(path):
        raise StoreError(f"{path} is a folder; {record.noun} is one file")
    token = WARM.set(getattr(store.embedder, "warm", None) if warm else None)
    at = store.tables.now(now)
    try:
        empty = new_plan(record.name, str(path), scope, record.id_prefix)
        empty.scope_given = scope is not None
        empty.now = at
        plan = record.read(store, path, empty, now=at)
    finally:
        WARM.reset(token)
    plan.sensitivity = level
    plan.partial = partial
    for rec in plan.memories:
        if sensitivity is not None or rec["id"] not in plan.keeps_sensitivity:
            rec["sensitivity"] = level
    return plan


def set_sensitivity(plan: ImportPlan, sensitivity: str | None = None,
                    findings: list[Any] | None = None) -> ImportPlan:
    """The sensitivity of what the plan brings in, chosen after reading it (the window asks
    once it has shown what the file holds): ``sensitivity`` for every memory (as the import's
    ``--sensitivity``), and each memory ``findings`` flag (its privacy check) raised to
    what that finding needs."""
    from ..model.memory import SENSITIVITY_RANK

    if sensitivity is not None:
        plan.sensitivity = validate_sensitivity(sensitivity)
        for rec in plan.memories:
            rec["sensitivity"] = plan.sensitivity
    needed: dict[str, str] = {}
    for f in findings or []:
        needed[f.memory_id] = max(needed.get(f.memory_id, f.needed), f.needed, key=SENSITIVITY_RANK.__getitem__)
    for rec in plan.memories:
        if rec["id"] in needed and SENSITIVITY_RANK[needed[rec["id"]]] > SENSITIVITY_RANK[rec["sensitivity"]]:
            rec["sensitivity"] = needed[rec["id"]]
    return plan


def import_file(store: MemoryStore, path: str | os.PathLike, fmt: str | None = None, *, scope: str | None = None,
                now: Any = None, dry_run: bool = False, progress: Progress | None = None,
                sensitivity: str | None = None, partial: bool = False,
                before_changes: Any = None) -> ImportResult:
    """Import ``path`` all or nothing (with ``partial``: all but its bad records, each
    listed; see :func:`plan_import` and :func:`apply`); a source imported before is
    brought in step (``before_changes``: see :func:`apply`). The result's ``findings`` are
    the privacy check of what came in."""
    plan = plan_import(store, path, fmt, scope=scope, now=now, warm=not dry_run, sensitivity=sensitivity,
                       partial=partial)
    return apply(store, plan, now=now, dry_run=dry_run, progress=progress, before_changes=before_changes)


def export_mcp_memory(store: MemoryStore, out: str | os.PathLike | None = None, *, scope: str | None = None) -> str:
    """The MCP memory server file's text (see :func:`mcp_memory.export` for its report)."""
    return mcp_memory.export(store, out, scope=scope).data


__all__ = ["FORMATS", "FORMAT_RECORDS", "FileRefused", "Format", "ImportPlan", "ImportRefused", "ImportResult", "LeftOut", "apply", "detect",
           "export_mcp_memory", "import_file", "new_plan", "plan_import", "set_sensitivity", "undo"]
