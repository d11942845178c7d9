"""JSON from outside (an HTTP body, an MCP message, an import line), read so that no input
crashes the reader: nesting too deep for Python's parser, integers longer than Python
converts, lone UTF-16 surrogates (valid JSON escapes, but not text SQLite can store) and a
key given twice in one object (JSON leaves it open; Python keeps the last, so
``"sensitivity": "hyper", "sensitivity": "public"`` stored public) are refused with a
sentence that says which and where."""

from __future__ import annotations

import json
import sys
from typing import Any

from .errors import StoreError

MAX_DEPTH = 100  # arrays and objects within each other; a memory's context never needs more


class BadJson(StoreError, ValueError):
    """The text is not JSON this program accepts; the message says why."""


class _KeyTwice(Exception):
    pass


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once (20,000 import lines: +44 ms to parse)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise _KeyTwice(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return obj


def loads(text: str | bytes, *, surrogates: bool = True) -> Any:
    """Parse ``text`` as JSON, refusing what could crash a later step (see the module);
    ``surrogates=False`` leaves lone surrogates to a reader that names the field itself."""
    try:
        value = json.loads(text, object_pairs_hook=_once)
    except _KeyTwice as exc:
        key = str(exc.args[0])
        shown = key if len(key) <= 64 else key[:60] + "…"
        raise BadJson(f"has the key {shown!r} twice in one object; give each key once") from None
    except json.JSONDecodeError as exc:
        raise BadJson(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise BadJson(f"nested deeper than {MAX_DEPTH} levels of arrays and objects") from None
    except UnicodeDecodeError as exc:
        raise BadJson(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except ValueError as exc:  # int("9" * 5000): Python's limit on converting long integers
        if "digits" in str(exc):
            raise BadJson(f"holds a number with more than {sys.get_int_max_str_digits()} digits") from None
        raise BadJson(f"not valid JSON: {exc}") from None
    check(value, surrogates=surrogates)
    return value


def check(value: Any, *, surrogates: bool = True) -> None:
    """Refuse a parsed value nested deeper than :data:`MAX_DEPTH` or (with ``surrogates``)
    holding a string with a lone surrogate (JSON's ``"\\ud800"``), walking it without recursion."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, str):
            if surrogates:
                _text(item, where)
        elif isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise BadJson(f"nested deeper than {MAX_DEPTH} levels of arrays and objects")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, inner in pairs:
                path = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                if isinstance(key, str) and surrogates:
                    _text(key, path)
                stack.append((inner, depth + 1, path))


def _text(s: str, where: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(s[exc.start])
        # where it is, shown so that it can be sent: the surrogate may be in a key on the way
        place = f" in {where.lstrip('.').encode('utf-8', 'backslashreplace').decode('utf-8')}" if where else ""
        raise BadJson(f"holds a lone surrogate \\u{code:04x}{place}: not text; send UTF-8 (a character "
                      "outside the Basic Multilingual Plane as one pair of surrogates, or as itself)") from None
