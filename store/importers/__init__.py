"""Importing the memory other tools keep, and writing it back for the MCP memory server.

Formats: ``mcp-memory`` (the official MCP memory server's ``memory.jsonl``),
``basic-memory`` (a folder of markdown notes), ``letta`` (an agent file, ``.af``),
``mem0`` (its exported memories) and ``jsonl`` (Mnemoscope's own export). Each module's
docstring is its mapping to memories, entities and edges. Every import is read whole
first; a file with any bad record writes nothing and the error names each bad line or
field; the report says where every part of the file went and what was left out.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ..errors import ImportRefused, StoreError, ValidationError
from . import basic_memory, letta, mcp_memory, mem0
from .plan import WARM, FileRefused, ImportPlan, ImportResult, LeftOut, Progress, apply, undo
from .source import MAX_FILE_BYTES, read_plain

if TYPE_CHECKING:
    from ..store import MemoryStore

FORMATS = ("mcp-memory", "basic-memory", "letta", "mem0", "jsonl")
NAMES = {"mcp-memory": "an MCP memory server file (memory.jsonl)", "basic-memory": "a basic-memory folder",
         "letta": "a Letta agent file (.af)", "mem0": "a mem0 export", "jsonl": "a Mnemoscope JSONL export"}
_READERS = {"mcp-memory": mcp_memory.read, "basic-memory": basic_memory.read, "letta": letta.read,
            "mem0": mem0.read}
HEAD_BYTES = 1 << 16


def detect(path: str | os.PathLike) -> str | None:
    """Which format a file or folder looks like (None: none of ours)."""
    path = str(path)
    if os.path.isdir(path):
        return "basic-memory" if basic_memory.looks_like(path) else None
    try:
        head = read_plain(path, HEAD_BYTES).decode("utf-8", errors="replace").removeprefix("\ufeff")
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    if mcp_memory.looks_like(head):
        return "mcp-memory"
    first = next((ln for ln in head.split("\n") if ln.strip()), "")
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        line = None
    if isinstance(line, dict) and "text" in line and ("id" in line or "kind" in line):
        return "jsonl"
    doc = _whole_json(path, head)
    if doc is not None:
        if letta.looks_like(doc):
            return "letta"
        if mem0.looks_like(doc):
            return "mem0"
        return None
    return _by_its_keys(head, line)


def _by_its_keys(head: str, first_line: Any) -> str | None:
    """The format of a JSON document that does not parse (truncated, nested too deep, not
    UTF-8), by the keys its beginning names: its own reader then refuses it with the line
    and reason, instead of the JSONL reader calling it bad JSONL."""
    start = head.lstrip()[:1]
    if start not in ("{", "[") or isinstance(first_line, dict):
        return None
    if '"core_memory"' in head or ('"agents"' in head and '"blocks"' in head):
        return "letta"
    if '"memory"' in head and (start == "[" or '"results"' in head or '"memories"' in head):
        return "mem0"
    return None


def _whole_json(path: str, head: str) -> Any:
    if not head.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(read_plain(path, MAX_FILE_BYTES).decode("utf-8-sig"))
    except (OSError, StoreError, ValueError, RecursionError):
        return None


def plan_import(store: MemoryStore, path: str | os.PathLike, fmt: str | None = None, *, scope: str | None = None,
                now: Any = None, warm: bool = False) -> ImportPlan:
    """Read ``path`` as ``fmt`` (detected when None) into a plan; nothing is written.
    A file that is not of ``fmt`` is refused with the format it looks like. ``warm``: the
    import follows at once, so once the file turns out big enough, the embedding's worker
    processes start (and load the model) while the rest of it is read."""
    if fmt is not None and fmt not in FORMATS:
        raise ValidationError("format", f"must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if not os.path.exists(path):
        raise StoreError(f"{path} does not exist")
    seen = detect(path)
    if fmt is None:
        if seen is None:
            raise StoreError(f"{path} is none of the formats Mnemoscope imports ({', '.join(FORMATS)}); "
                             "name one with --format")
        fmt = seen
    elif seen is not None and seen != fmt:
        raise StoreError(f"{path} is not {NAMES[fmt]}: it looks like {NAMES[seen]}; import it with --format {seen}")
    if fmt == "jsonl":
        raise StoreError("a Mnemoscope JSONL export is imported by store.import_jsonl")
    if fmt == "basic-memory" and not os.path.isdir(path):
        raise StoreError(f"{path} is a file; a basic-memory project is a folder of markdown notes")
    if fmt != "basic-memory" and os.path.isdir(path):
        raise StoreError(f"{path} is a folder; {NAMES[fmt]} is one file")
    token = WARM.set(getattr(store.embedder, "warm", None) if warm else None)
    try:
        return _READERS[fmt](store, path, scope=scope, now=store.tables.now(now))
    finally:
        WARM.reset(token)


def import_file(store: MemoryStore, path: str | os.PathLike, fmt: str | None = None, *, scope: str | None = None,
                now: Any = None, dry_run: bool = False, progress: Progress | None = None) -> ImportResult:
    """Import ``path`` all or nothing (see :func:`plan_import` and :func:`apply`)."""
    plan = plan_import(store, path, fmt, scope=scope, now=now, warm=not dry_run)
    return apply(store, plan, now=now, dry_run=dry_run, progress=progress)


def export_mcp_memory(store: MemoryStore, out: str | os.PathLike | None = None, *, scope: str | None = None) -> str:
    return mcp_memory.export(store, out, scope=scope)


__all__ = ["FORMATS", "FileRefused", "ImportPlan", "ImportRefused", "ImportResult", "LeftOut", "apply", "detect",
           "export_mcp_memory", "import_file", "plan_import", "undo"]
