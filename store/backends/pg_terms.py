"""Which of a query's terms are too common to search by on PostgreSQL.

SQLite's FTS5 ranks by bm25, which weighs a term by how rare it is and ranks hundreds of
thousands of matches in C in a few tens of milliseconds. PostgreSQL's ``ts_rank`` has no
notion of rarity and must rank every row that holds a term before it can return the best
few: a term in a quarter of a million memories costs a quarter of a second and brings
candidates no better than any others. So recall asks, term by term, whether more than
``limits.common_term_rows`` of the memories it may search hold it.

It asks ``memory_terms`` (migration m013), where statement triggers on ``memories`` keep how
many memories of each scope and sensitivity hold each term, and adds up the scopes and
sensitivities the caller may search only: what it gets never depends on memories hidden
from it. (The server's own statistics of the column would be cheaper still, but they
count every memory; counting the rows themselves cost ~50 ms a term at 1,000,000.)"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import MemoryStore


def too_common(store: MemoryStore, terms: Sequence[str], rows: int, scopes: Sequence[str],
               sensitivities: Sequence[str]) -> set[str]:
    """Those of ``terms`` that more than ``rows`` memories hold among those of ``scopes``
    with one of ``sensitivities``."""
    terms = list(dict.fromkeys(terms))
    found = store.tables.rows(
        f"SELECT term FROM memory_terms WHERE term IN ({','.join('?' * len(terms))}) "
        f"AND scope IN ({','.join('?' * len(scopes))}) AND sensitivity IN ({','.join('?' * len(sensitivities))}) "
        "GROUP BY term HAVING sum(memories) > ?",
        (*terms, *scopes, *sensitivities, rows),
    )
    return {r["term"] for r in found}
