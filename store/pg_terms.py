"""Which of a query's terms are too common to search by on PostgreSQL.

SQLite's FTS5 ranks by bm25, which weighs a term by how rare it is and ranks hundreds of
thousands of matches in C in a few tens of milliseconds. PostgreSQL's ``ts_rank`` has no
notion of rarity and must rank every row that holds a term before it can return the best
few: a term in a quarter of a million memories costs a quarter of a second and brings
candidates no better than any others. So recall asks, term by term, whether more than
``limits.common_term_rows`` of the memories it may search hold it, counting no further
than that: among the memories the caller may see only, so that what it gets never depends
on memories hidden from it (the server's own statistics of the column would be cheaper, but
they count every memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .backend import lexeme

if TYPE_CHECKING:
    from .store import MemoryStore


def too_common(store: MemoryStore, terms: Sequence[str], rows: int, scopes: Sequence[str],
               sensitivities: Sequence[str]) -> set[str]:
    """Those of ``terms`` that more than ``rows`` memories hold among those of ``scopes``
    with one of ``sensitivities`` (one round trip; each count stops at ``rows + 1``)."""
    terms = list(dict.fromkeys(terms))
    found = store.tables.rows(
        "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM memories m "
        "WHERE m.tsv @@ CAST(t.query AS tsquery) "
        f"AND m.scope IN ({','.join('?' * len(scopes))}) AND m.sensitivity IN ({','.join('?' * len(sensitivities))}) "
        "LIMIT ?) AS held) AS n "
        "FROM unnest(CAST(? AS text[]), CAST(? AS text[])) AS t(term, query)",
        (*scopes, *sensitivities, rows + 1, terms, [lexeme(t) for t in terms]),
    )
    return {r["term"] for r in found if r["n"] > rows}
