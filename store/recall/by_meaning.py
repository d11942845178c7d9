"""Recall by meaning: which vectors a recall searches, and the memories nearest its query.

A store keeps up to two sets of vectors (store/meaning/vectors.py): the similarity set, written with
every memory at once, and the recall set, by the model recall ranks with, which a bulk write
leaves to the background backfill. A recall searches the recall set, and the similarity set
for the memories that have no recall vector yet (only while there are such); a store without
a recall set of its own searches the similarity set alone, as recall always did.

Cosines of two models are not on one scale, so the two searches' answers meet by *standing*:
how far each memory's cosine stands above the mean of its own search's nearest, in standard
deviations (store/recall/relevance.py reads the same). Nothing here raises for a model that fails:
recall goes on with what it has, by words at worst, and :attr:`Meaning.note` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..meaning import vector_index, vectors
from ..meaning.embedding import EmbeddingError, embed_queries, prepare

if TYPE_CHECKING:
    from ..store import MemoryStore


@dataclass
class Search:
    """One set's search: its index, the query's vector by its model, and ``without``: the
    other set's index, whose memories this search leaves out (the fallback's)."""

    vs: vectors.VectorSet
    index: Any
    query: np.ndarray
    without: Any = None
    mean: float = 0.0
    spread: float = 1.0


@dataclass
class Meaning:
    """What a recall searches by meaning (:func:`of`), and why not more (``note``)."""

    searches: list[Search] = field(default_factory=list)
    note: str = ""
    by: str = ""  # the models whose vectors were searched, as their ids, joined by " + "
    meaningful: bool = True

    def __bool__(self) -> bool:
        return bool(self.searches)

    def nearest(self, scopes: Any, max_rank: int, n: int) -> list[tuple[str, float, float]]:
        """The ``n`` nearest memories the caller may see, as (id, cosine, standing), by
        standing when two searches meet, else by cosine."""
        found: list[tuple[str, float, float]] = []
        for s in self.searches:
            near = vector_index.nearest(s.index, s.query, scopes, max_rank, n, -1.0)
            s.mean, s.spread = _standing(near)
            if s.without is not None:
                # the memories waiting for a recall vector, standing as among all of them
                near = [(mid, c, (c - s.mean) / s.spread)
                        for mid, c, _ in vector_index.nearest(s.index, s.query, scopes, max_rank, n, -1.0, s.without)]
            found += near
        if len(self.searches) > 1:
            found.sort(key=lambda f: (-round(f[2], 5), f[0]))
            return found[:n]
        return found

    def cosines_of(self, ids: list[str]) -> dict[str, tuple[float, float]]:
        """(cosine, standing) of those of ``ids`` that have a vector in a searched set, each by
        the set that ranks it (the recall set where it has a vector there)."""
        out: dict[str, tuple[float, float]] = {}
        for s in self.searches:
            wanted = [i for i in ids if i not in out]
            if not wanted:
                break
            for mid, c in vector_index.cosines_of(s.index, s.query, wanted).items():
                out[mid] = (c, (c - s.mean) / s.spread)
        return out


def _standing(near: list[tuple[str, float, float]]) -> tuple[float, float]:
    """The mean and spread of the cosines ``nearest`` measured its standings against."""
    for (_, c1, s1), (_, c2, s2) in zip(near, near[1:], strict=False):
        if abs(s1 - s2) > 1e-9:
            spread = (c1 - c2) / (s1 - s2)
            return c1 - s1 * spread, spread
    if near:
        return near[0][1] - near[0][2], 1.0
    return 0.0, 1.0


def of(store: MemoryStore, query: str, scopes: Any, max_rank: int) -> Meaning:
    """The searches by meaning a recall of ``query`` makes in ``store`` for a caller who may
    see ``scopes`` up to ``max_rank`` (none: by words only, and ``note`` says why).

    The recall set ranks once at least half the memories the caller may see have their recall
    vector; the rest are compared by their similarity vectors meanwhile. Below half (an
    import whose recall vectors are still being made), the similarity set ranks them all.
    Whether any memory waits at all is read from the two sets' counts (store/schema/migrations.py's
    migration 14): while none does, the similarity vectors are not even loaded. What is
    searched, and what the note counts, depends only on the memories the caller may see
    (while some memory the caller may not see waits, the count of those it may see takes a
    little time: the backfill's time, not an answer's)."""
    out = Meaning()
    primary = None
    kept = vectors.RECALL.kept(store)
    if kept:
        try:
            primary = vector_index.index(store, vectors.RECALL)
        except EmbeddingError as exc:  # a model that cannot load here: the similarity set serves
            out.note = f"recall's own model could not be used ({exc}); compared by {store.embedder_id()}"
    similar = None
    if primary is None or vectors.waiting_anywhere(store) > 0:
        try:
            similar = vector_index.index(store, vectors.SIMILARITY)
        except EmbeddingError as exc:
            if primary is None:
                out.note = f"recalled by words only: {exc}"
    if similar is None and primary is None and not out.note:
        stored = store.tables.meta(vectors.META_KEY)
        if stored not in (None, "", store.embedder_id()):
            out.note = (f"recalled by words only: the vectors here are by {stored}, not by this store's "
                        f"embedder {store.embedder_id()} (mnemoscope reembed replaces them)")
    waiting = 0
    if similar is not None and kept and not out.note:
        waiting = vector_index.lacking_count(similar, primary, scopes, max_rank)
    if primary is not None and waiting:
        have = vector_index.lacking_count(primary, None, scopes, max_rank)
        if waiting > have:  # most have no recall vector yet: one scale for all of them
            primary = None
    if primary is not None:
        try:
            out.searches.append(Search(vectors.RECALL, primary, _query(store.recall_embedder, query)))
        except EmbeddingError as exc:
            out.note = f"recall's own model could not be used ({exc}); compared by {store.embedder_id()}"
            primary, waiting = None, 0
            if similar is None:
                similar = _similar_or_none(store)
    if similar is not None and (primary is None or waiting):
        try:
            out.searches.append(Search(vectors.SIMILARITY, similar, _query(store.embedder, query), primary))
        except EmbeddingError as exc:  # an endpoint down
            if primary is None:
                out.note = f"recalled by words only: the query could not be embedded ({exc})"
        else:
            if waiting:
                out.note = (f"{waiting:,} memories have no {vectors.RECALL.embedder_id(store)} vector yet (the "
                            f"background backfill makes them): {'they were' if primary is not None else 'all were'} "
                            f"compared by {store.embedder_id()}")
    out.by = " + ".join(s.vs.embedder_id(store) for s in out.searches)
    out.meaningful = bool(out.searches) and getattr(out.searches[0].vs.embedder(store), "meaningful", True)
    return out


def _similar_or_none(store: MemoryStore) -> Any:
    try:
        return vector_index.index(store, vectors.SIMILARITY)
    except EmbeddingError:
        return None


def _query(embedder: Any, query: str) -> np.ndarray:
    prepare(query)
    return embed_queries(embedder, [query])[0]
