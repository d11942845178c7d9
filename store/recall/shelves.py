"""Full-text search among the memories a caller may see, and no other.

The full-text index holds each term of a memory behind its *shelf*: a prefix made of the
memory's scope and sensitivity (each backend's ``Statements.shelf``; SQLite's triggers and
PostgreSQL's ``mnemoscope_shelved`` make the same prefix in SQL). A search asks for the
query's terms on the shelves the caller may read, so the index hands back their memories
alone: how long a search takes no longer says how many hidden memories hold a word (issue
#32, item 5: 20,000 hidden memories holding "falcon" made a low caller's recall of it seven
to ten times slower). The search keeps its condition on scope and sensitivity as well; a
shelf only decides what the index reads.

What a caller may see is a list of (scope, sensitivity) pairs; the memories of a pair are
found in an index of :data:`SHOWN` on both engines (``memories_scope_sensitivity``), which
holds no other memory's (the scope's own index holds the too sensitive ones too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .text import Prefix, Words

if TYPE_CHECKING:
    from ..store import MemoryStore

# A memory's scope and sensitivity as one value (a scope holds no space).
SHOWN = "(scope || ' ' || sensitivity)"


def shown(alias: str, n: int) -> str:
    """SQL true when the memory ``alias`` is of one of ``n`` pairs, given as parameters
    ``"scope sensitivity"`` (:func:`as_params`)."""
    return f"({alias}.scope || ' ' || {alias}.sensitivity) IN ({','.join('?' * n)})"


def as_params(pairs: Sequence[tuple[str, str]]) -> list[str]:
    return [f"{scope} {sensitivity}" for scope, sensitivity in pairs]


def shelve(query: Words | Prefix | str, prefixes: Sequence[str]) -> Words | Prefix | str:
    """``query`` asked of the shelves ``prefixes``: each term (or prefix) any of its shelved forms."""
    if isinstance(query, Words):
        return Words(tuple(shelve(part, prefixes) for part in query.parts), query.every)
    forms = [Prefix(p + query.text) if isinstance(query, Prefix) else p + query for p in prefixes]
    return forms[0] if len(forms) == 1 else Words(tuple(forms))


def held(store: MemoryStore, scopes: Sequence[str], sensitivities: Sequence[str]) -> list[tuple[str, str]]:
    """The (scope, sensitivity) pairs of ``scopes`` and ``sensitivities`` that hold a memory,
    each found by one look-up in the index of the pair: a search asks no other shelf."""
    pairs = [(s, v) for s in dict.fromkeys(scopes) for v in dict.fromkeys(sensitivities)]
    if not pairs:
        return []
    found = store.tables.rows(" UNION ALL ".join(
        [f"SELECT scope, sensitivity FROM (SELECT scope, sensitivity FROM memories WHERE {SHOWN} = ? LIMIT 1) AS shelf"]
        * len(pairs)), as_params(pairs))
    return [(r["scope"], r["sensitivity"]) for r in found]
