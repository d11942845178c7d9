"""Reading a file to import, refusing what no honest export looks like: bytes that are
not UTF-8 (named by line and byte), a line longer than any memory could need, JSON
nested deeper than the records a format has."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from typing import Any

from ..files.plain import open_plain
from ..model.errors import NotPlainFile, StoreError
from .plan import FileRefused

MAX_FILE_BYTES = 1 << 30
MAX_LINE_BYTES = 1 << 20  # a line of JSONL; a memory's text is at most a few thousand characters
MAX_DEPTH = 32  # nesting of a JSON value; every format here needs fewer than ten levels


def read_plain(path: str | os.PathLike, limit: int | None, *, name: str | None = None,
               follow: bool = True, refuse_over: int | None = None) -> bytes:
    """At most ``limit`` bytes (None: all) of the plain file ``path``, opened by
    :func:`~mnemoscope.store.files.plain.open_plain` (a pipe, a device, a socket or a folder is
    refused before anything waits on it; with ``follow=False`` so is a link), with a
    :class:`NotPlainFile` that speaks of the import and names the file as ``name``.
    ``refuse_over``: a file whose size (from its metadata, before a byte is read) is over
    it is refused with :class:`TooLarge`: a sparse 2 GiB file costs nothing to refuse."""
    name = name or str(path)
    try:
        fh = open_plain(path, follow=follow)
    except NotPlainFile as exc:
        if exc.what == "a link":
            raise NotPlainFile(f"{name} is a link; an import never reads through a link", exc.what) from None
        raise NotPlainFile(f"{name} is not a plain file ({exc.what}); import a file, or a basic-memory folder",
                           exc.what) from None
    with fh:
        if refuse_over is not None:
            size = os.fstat(fh.fileno()).st_size
            if size > refuse_over:
                raise TooLarge(name, size, refuse_over)
        if limit is None:
            return fh.read()
        # In pieces: read(limit) would ask for all of limit at once, however small the file.
        data = bytearray()
        while len(data) < limit:
            piece = fh.read(min(1 << 24, limit - len(data)))
            if not piece:
                break
            data += piece
        return bytes(data)


class TooLarge(StoreError):
    """A file over the size an import takes, known before it is read."""

    def __init__(self, name: str, size: int, limit: int) -> None:
        super().__init__(f"{name} is {size:,} bytes, over {limit:,} bytes; an import takes files of at most "
                         f"{limit:,}")
        self.size = size
        self.limit = limit


def file_size(path: str | os.PathLike) -> int | None:
    """The size of ``path`` from its metadata (None: not a plain file, or unreadable)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def read_text(path: str | os.PathLike, name: str | None = None) -> str:
    """The file's text, strictly UTF-8 (a byte order mark is allowed)."""
    name = name or str(path)
    try:
        data = read_plain(path, MAX_FILE_BYTES + 1, name=name, refuse_over=MAX_FILE_BYTES)
    except OSError as exc:
        raise StoreError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise StoreError(f"{name} is over {MAX_FILE_BYTES:,} bytes; an import takes files of at most "
                         f"{MAX_FILE_BYTES:,}")
    return decode(data, name)


def decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileRefused(name, [(line, f"is not UTF-8 text (byte {column} of the line: "
                                          f"0x{data[exc.start]:02x}, {exc.reason})")]) from None


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests (stops counting past ``limit``)."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item if isinstance(v, (dict, list)))
    return deepest


def parse_json(text: str) -> Any:
    """One JSON value; raises ValueError with the reason (deep nesting included)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    # Each level of nesting opens a bracket, so a text with fewer brackets than the limit
    # cannot nest deeper (brackets inside strings only overcount): most lines skip the walk.
    if text.count("{") + text.count("[") >= MAX_DEPTH and depth(value) > MAX_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value


def jsonl_lines(text: str, errors: list[tuple[Any, str]]) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; a bad line is added to ``errors``."""
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        size = len(line.encode("utf-8")) if len(line) * 4 > MAX_LINE_BYTES else len(line)
        if size > MAX_LINE_BYTES:
            errors.append((number, f"is {size:,} bytes long; a line may be at most {MAX_LINE_BYTES:,}"))
            continue
        try:
            yield number, parse_json(line)
        except ValueError as exc:
            errors.append((number, str(exc)))
