"""What both engines' statement builders share (store/backends/sqlite.py and postgres.py
``Statements``)."""

from __future__ import annotations

from collections.abc import Sequence


def values(columns: Sequence[str]) -> str:
    """``VALUES (?, …)``: a parameter for each of ``columns``."""
    return f"VALUES ({', '.join('?' * len(columns))})"


def json_key(key: str) -> str:
    """``key`` checked to be a plain word: it is written into the statement."""
    if not key.replace("_", "").isalnum():
        raise ValueError(f"a JSON key the store's SQL names must be a plain word, got {key!r}")
    return key
