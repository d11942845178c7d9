"""The frontmatter of a basic-memory note, read without PyYAML (which the desktop
bundle leaves out).

basic-memory writes a flat block of ``key: value`` lines: ``title``, ``type``,
``permalink``, ``tags`` (a block list of ``- item`` lines or a flow list ``[a, b]``),
and dates. This reads that subset: scalars (plain, or in single or double quotes),
flow and block lists of scalars, ``#`` comments and blank lines. Values stay strings (a
title ``2026`` is a title, not a number). A key that holds an indented block of
anything else (a nested mapping a person added) keeps that block as its text; the
importer only reads the keys above. A line that is none of these is refused with its
number within the frontmatter.
"""

from __future__ import annotations

import re
from typing import Any

from ..model.errors import ValidationError

# A name's inner spaces and the spaces before ':' cannot be split two ways (see basic_memory).
_KEY = re.compile(r"^([A-Za-z_][\w.-]*(?:[ \t]+[\w.-]+)*+)[ \t]*:(?:\s+(.*))?$")
_ITEM = re.compile(r"^\s*-(?:\s+(.*))?$")


def parse(text: str) -> dict[str, Any]:
    """The mapping the frontmatter ``text`` (between the two ``---`` lines) holds."""
    out: dict[str, Any] = {}
    key: str | None = None  # the key whose value is the indented block that follows
    # A nested block's lines, joined once at the end: adding each line to a growing string
    # made a block of N lines quadratic (1.2 M lines: 131 s).
    nested: dict[str, list[str]] = {}
    for number, raw in enumerate(text.split("\n"), 2):  # line 1 of the note is the opening ---
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[:1] in (" ", "\t") or line.startswith("-"):
            if key is None:
                raise ValidationError("frontmatter", f"line {number}: {line.strip()[:60]!r} belongs to no key")
            item = _ITEM.match(line)
            current = out[key]
            if item and isinstance(current, list) and key not in nested:
                current.append(_scalar(item.group(1) or "", number))
            elif key in nested or current == []:  # a nested block: kept as its text
                nested.setdefault(key, []).append(line.strip())
            else:
                raise ValidationError("frontmatter", f"line {number}: {line.strip()[:60]!r} mixes a list "
                                                     "with other lines")
            continue
        match = _KEY.match(line)
        if match is None:
            raise ValidationError("frontmatter", f"line {number}: {line[:60]!r} is not 'key: value'")
        name, value = match.group(1), _strip_comment(match.group(2) or "")
        nested.pop(name, None)  # a key given again: its last value stands, as before
        if not value:
            out[name], key = [], name  # a block (a list, or a nested mapping) follows, or nothing
        else:
            out[name], key = _value(value, number), None
    for name, lines in nested.items():
        out[name] = "\n".join(lines)
    return {k: (None if v == [] and k not in ("tags", "aliases") else v) for k, v in out.items()}


def _strip_comment(value: str) -> str:
    if value[:1] in ("'", '"'):
        return value.strip()
    return re.split(r"(?<!\s)\s+#", value, maxsplit=1)[0].strip()


def _value(value: str, number: int) -> Any:
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1].strip()
        return [_scalar(part, number) for part in _split_flow(inner, number)] if inner else []
    if value.startswith("{"):
        return value  # a flow mapping: kept as its text
    return _scalar(value, number)


def _split_flow(inner: str, number: int) -> list[str]:
    parts, current, quote = [], "", ""
    for ch in inner:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
            current += ch
        elif ch == ",":
            parts.append(current)
            current = ""
        elif ch in "[]{}":
            raise ValidationError("frontmatter", f"line {number}: a list inside a list is not frontmatter "
                                                 "basic-memory writes")
        else:
            current += ch
    if quote:
        raise ValidationError("frontmatter", f"line {number}: a quote is never closed")
    return [p for p in (x.strip() for x in [*parts, current]) if p]


def _scalar(value: str, number: int) -> str:
    value = value.strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        if len(value) < 2 or not value.endswith(quote):
            raise ValidationError("frontmatter", f"line {number}: a quote is never closed")
        body = value[1:-1]
        if quote == "'":
            return body.replace("''", "'")
        return re.sub(r'\\(["\\/nt])', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)
    return value
