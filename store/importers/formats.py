"""The import formats, declared once: one :class:`Format` record per importer, listed in
:data:`FORMATS`. The command line's ``--format`` choices, format detection, the plan's
memory ids, the window's File › Import from menu and its file dialogs are all built from
this list, so adding a format is one record here (and its reader)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plan import ImportPlan

    Reader = Callable[..., ImportPlan]  # (store, path, plan, *, now) -> the plan, filled


@dataclass(frozen=True)
class Format:
    """How one other tool's memory is recognised and read.

    ``name``: what ``--format`` takes; ``noun``: how a sentence names a file of it ("an MCP
    memory server file (memory.jsonl)"); ``id_prefix``: the start of the ids of the memories
    it makes (``mcp-…``); ``label``: the window's menu entry; ``file_filter``: the window's
    file dialog filter (None: a folder is picked); ``folder``: the source is a folder, not a
    file; ``recognise``: whether a file (or folder) looks like this format; ``read``: the
    reader, which fills the empty plan it is given (None: imported by the store itself, as
    Mnemoscope's JSONL is)."""

    name: str
    noun: str
    id_prefix: str
    label: str
    file_filter: str | None
    recognise: Callable[[Sniff], bool]
    read: Reader | None
    folder: bool = False


class Sniff:
    """What detection looks at, read once for every format's ``recognise``: the path, its
    first 64 KiB as text, its first non-blank line parsed (None: not JSON), and, asked for,
    the whole file parsed as one JSON document (None: not one, or too big to read)."""

    HEAD_BYTES = 1 << 16

    def __init__(self, path: str) -> None:
        self.path = path
        self.is_dir = os.path.isdir(path)
        self.head = ""
        self.first_line: Any = None
        self.first = ""
        if self.is_dir:
            return
        from .source import read_plain

        self.head = read_plain(path, self.HEAD_BYTES).decode("utf-8", errors="replace").removeprefix("\ufeff")
        self.first = next((ln for ln in self.head.split("\n") if ln.strip()), "")
        try:
            self.first_line = json.loads(self.first)
        except (ValueError, RecursionError):
            self.first_line = None

    @cached_property
    def doc(self) -> Any:
        """The whole file as one JSON document; one that is a JSON string holding a
        document (an export's JSON encoded twice) is the document inside."""
        from .source import MAX_FILE_BYTES, file_size, read_plain

        if not self.head.lstrip().startswith(("{", "[", '"')) or (file_size(self.path) or 0) > MAX_FILE_BYTES:
            return None
        try:
            doc = json.loads(read_plain(self.path, MAX_FILE_BYTES).decode("utf-8-sig"))
            if isinstance(doc, str) and doc.lstrip().startswith(("{", "[")):
                doc = json.loads(doc)
            return doc if isinstance(doc, (dict, list)) else None
        except (OSError, ValueError, RecursionError):
            return None
        except Exception:  # noqa: BLE001 - a file we cannot read is simply not recognised here
            return None

    @property
    def broken_document(self) -> bool:
        """A JSON document that does not parse (truncated, nested too deep, not UTF-8): its
        beginning's keys still say which format it was meant to be, so that format's reader
        refuses it with the line and reason instead of another calling it bad JSONL."""
        start = self.head.lstrip()[:1]
        return start in ("{", "[") and not isinstance(self.first_line, dict) and self.doc is None


def _jsonl(s: Sniff) -> bool:
    line = s.first_line
    return isinstance(line, dict) and "text" in line and ("id" in line or "kind" in line)


def _formats() -> list[Format]:
    from . import basic_memory, letta, mcp_memory, mem0

    return [
        Format("mcp-memory", "an MCP memory server file (memory.jsonl)", "mcp", "MCP memory server (memory.jsonl)…",
               "JSON Lines (*.jsonl *.json);;All (*)", lambda s: not s.is_dir and mcp_memory.looks_like(s.head),
               mcp_memory.read),
        Format("basic-memory", "a basic-memory folder", "bm", "basic-memory folder…", None,
               lambda s: s.is_dir and basic_memory.looks_like(s.path), basic_memory.read, folder=True),
        Format("letta", "a Letta agent file (.af)", "letta", "Letta agent file (.af)…",
               "Letta agent files (*.af *.json);;All (*)", letta.recognise, letta.read),
        Format("mem0", "a mem0 or OpenMemory export", "mem0", "mem0 or OpenMemory export…",
               "mem0 and OpenMemory exports (*.json *.zip);;All (*)", mem0.recognise, mem0.read),
        Format("jsonl", "a Mnemoscope JSONL export", "", "Mnemoscope JSONL…", "JSON Lines (*.jsonl);;All (*)",
               _jsonl, None),
    ]


# The one list. Detection asks each in this order (mcp-memory and jsonl by their first
# line, before the whole-document formats).
FORMATS: list[Format] = _formats()


def names() -> list[str]:
    return [f.name for f in FORMATS]


def by_name(name: str) -> Format:
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise KeyError(name)


def recognise(path: str) -> Format | None:
    """The format ``path`` looks like (None: none of ours)."""
    sniff = Sniff(path)
    for fmt in FORMATS:
        if fmt.recognise(sniff):
            return fmt
    return None


