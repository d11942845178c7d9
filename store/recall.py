"""Recall with explainable scoring.

score = semantic·w + keyword·0.46 + importance·0.14 + recency·0.11 + graph·0.11
(weights from the config). Candidates are the full-text hits of the query's terms and,
when the memories have vectors by the store's embedder, the nearest vectors to the
query's (store/vectors.py). The semantic part is then the real cosine of the two
vectors, weighted ``weights.meaning``; without vectors (none yet, or another model's)
it is the cosine of hashed character bigrams, weighted ``weights.semantic``, and the
explanation says which. With vectors, a candidate needs a cosine over the query's meaning
floor (``_meaning_floor``) or at least ``limits.keyword_without_meaning`` of the query's
terms (``_relevant``): that gate, not the weights, is what decides which paraphrases are
found (store/config.py and tests/perf/hybrid_eval.py say with which figures). Each
candidate is scored in Python and explained. Scope isolation and trust are hard
rules applied before scoring: a recall for ``group:1`` sees ``group:1`` and ``global``
only, and a caller's maximum sensitivity hides what is above it (one level above comes
back redacted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import decay, vectors
from .edges import MENTIONED_IN, MENTIONS
from .embedding import EmbeddingError, embed_queries, prepare
from .errors import StoreError, ValidationError
from .model import SENSITIVITIES, SENSITIVITY_RANK, validate_scope
from .text import cosine, fts_phrase, query_terms, vector

if TYPE_CHECKING:
    from .store import MemoryStore

GRAPH_SEEDS = 3
NEIGHBOUR_SCORE = 0.5  # graph score of a memory reached only through a seed's entity
MIN_SCORE = 0.12
MAX_K = 1000  # hits one recall may ask for
# What scoring reads of a candidate memory (the FTS hits and the graph neighbours alike).
CANDIDATE_COLUMNS = ("m.id, m.text, m.kind, m.importance, m.scope, m.sensitivity, m.recall_count, "
                     "m.half_life_days, m.pinned, m.base, m.ref_time, m.terms, m.who, m.topic, m.created_at")


@dataclass
class Hit:
    id: str
    score: float
    kind: str
    layer: str
    scope: str
    sensitivity: str
    text: str | None  # None when redacted
    redacted: bool
    strength: float
    importance: float
    why: dict[str, Any] = field(default_factory=dict)
    entities: list[str] = field(default_factory=list)
    # A newer memory among the hits says otherwise (a conflict): this one may be outdated.
    outdated_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The hit as every door gives it in JSON: a redacted one as no more than that it
        exists, the reasons for its score only when they were asked for."""
        if self.redacted:
            return {"id": self.id, "kind": self.kind, "layer": self.layer, "redacted": True}
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "why" or self.why}


def _trust_rank(trust: str | None) -> int:
    if trust is None:
        return SENSITIVITY_RANK["medium"]
    if trust not in SENSITIVITY_RANK:
        raise ValidationError("trust", f"must be one of {', '.join(SENSITIVITIES)}, got {trust!r}")
    return SENSITIVITY_RANK[trust]


def _visible_scopes(scope: str | Sequence[str], with_global: bool = True) -> tuple[str, ...]:
    """``global`` and the scope, or each of the scopes a trust context names (without
    ``global`` when not ``with_global``: a caller that asks for these scopes only)."""
    names = [scope] if isinstance(scope, str) or scope is None else list(scope)
    if not names:
        raise ValidationError("scope", "a trust context must name at least one scope (or 'global')")
    return tuple(dict.fromkeys([*(validate_scope(s) for s in names), *(["global"] if with_global else [])]))


def _candidate_query(store: MemoryStore, q_terms: Sequence[str], scopes: Sequence[str],
                     known: Sequence[str]) -> str:
    """The full-text query that finds the keyword candidates: any of the terms; on
    PostgreSQL, any of those not too common among what the caller may search
    (``limits.common_term_rows``), or all of them when every one is (store/pg_terms.py)."""
    common = store.tables.backend.common_terms(store, q_terms, store.config.limits.common_term_rows, scopes, known)
    wanted, join = [t for t in q_terms if t not in common], " OR "
    if not wanted:
        wanted, join = list(q_terms), " AND "
    return join.join(fts_phrase(t) for t in wanted)


def recall(store: MemoryStore, query: str, k: int = 5, *, scope: str | Sequence[str] = "global", trust: str | None = "medium",
           now: Any = None, explain: bool = False, reinforce: bool = False, with_global: bool = True) -> list[Hit]:
    """The ``k`` memories most relevant to ``query`` visible from ``scope`` at ``trust``.
    ``scope`` may be a list: a trust context that names several scopes sees each of
    them, and ``global`` (unless ``with_global`` is false: the LangGraph adapter searches
    the namespaces it is asked for, and nothing else).

    Changes nothing unless ``reinforce`` is true, in which case every returned
    (unredacted) memory counts one recall (not in a store opened read-only).
    """
    if not isinstance(query, str):
        raise ValidationError("query", f"must be a string, got {type(query).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= MAX_K:
        raise ValidationError("k", f"must be a whole number from 1 to {MAX_K}, got {k!r}")
    max_rank = _trust_rank(trust)
    scopes = _visible_scopes(scope, with_global)
    now = store.tables.now(now)
    cfg = store.config
    w = cfg.weights
    q_terms = query_terms(query)
    idx = vectors.index(store) if store.embedder.meaningful else None
    meaning = _query_vector(store, query) if idx is not None else None
    if not q_terms and meaning is None:
        return []
    q_vec = vector(query)
    placeholders = ",".join("?" * len(scopes))
    known = SENSITIVITIES[:max_rank + 2]  # what it may read, and one level above (redacted)
    with store.tables.reading():
        rows = []
        if q_terms:
            fts = _candidate_query(store, q_terms, scopes, known)
            rows = store.tables.rows(
                f"SELECT {CANDIDATE_COLUMNS} FROM memories_fts f "
                # CROSS JOIN keeps the full-text index as the outer loop: SQLite would
                # otherwise walk every memory of the scope and test each against the index.
                "CROSS JOIN memories m ON m.rowid = f.rowid CROSS JOIN memory_state s ON s.rowid = m.rowid "
                f"WHERE memories_fts MATCH ? AND m.scope IN ({placeholders}) AND s.layer != 'archived' "
                # nothing the caller may not even know of takes a place among the candidates
                f"AND m.sensitivity IN ({','.join('?' * len(known))}) ORDER BY f.rank LIMIT ?",
                (fts, *scopes, *known, max(cfg.limits.candidate_limit, 2 * k)),
            )
        cosines: dict[str, float] = {}
        meaning_floor = None
        if meaning is not None:
            # The nearest vectors among what the caller may read (a memory above its trust
            # is never a candidate by meaning; the full-text path redacts one level above).
            near = vectors.nearest(idx, meaning, scopes, max_rank,
                                   max(cfg.limits.vector_candidates, 2 * k, cfg.limits.meaning_reference), -1.0)
            meaning_floor = _meaning_floor(cfg.limits, [c for _, c, _ in near])
            cosines = {mid: c for mid, c, _ in near}
            have = {r["id"] for r in rows}
            extra = [mid for mid, c, _ in near if mid not in have and c >= meaning_floor]
            for first in range(0, len(extra), 500):
                chunk = extra[first:first + 500]
                rows += store.tables.rows(
                    f"SELECT {CANDIDATE_COLUMNS} FROM memories m JOIN memory_state s ON s.rowid = m.rowid "
                    f"WHERE m.id IN ({','.join('?' * len(chunk))}) AND s.layer != 'archived'", chunk)
            cosines.update(vectors.cosines_of(idx, meaning, [r["id"] for r in rows if r["id"] not in cosines]))
        scored: dict[str, dict[str, Any]] = {}
        q_set = set(q_terms)
        for row in rows:
            rank = SENSITIVITY_RANK.get(row["sensitivity"])
            if rank is None or rank > max_rank + 1:
                continue  # unknown sensitivity is denied; two levels above is hidden
            strength, layer = decay.state_at(row, now, cfg.decay)
            if layer == "archived":
                continue
            m_terms = set(row["terms"].split())
            keyword = len(q_set & m_terms) / len(q_set) if q_set else 0.0
            by_meaning = row["id"] in cosines
            semantic = max(cosines[row["id"]] if by_meaning else cosine(q_vec, vector(row["text"])), 0.0)
            if not _relevant(cfg.limits, keyword, semantic, meaning_floor if by_meaning else None):
                continue
            scored[row["id"]] = dict(row, strength=strength, layer=layer, keyword=keyword, semantic=semantic,
                                     by_meaning=by_meaning, graph=0.0, neighbour=False, redacted=rank > max_rank)
        # Only what the caller may read takes part in the graph: a memory above its trust
        # must not pull its neighbours in, nor lend its entities to anyone's score.
        visible = [r for r in scored.values() if not r["redacted"]]
        entity_map = _entities_of(store, [r["id"] for r in visible])
        prelim = sorted(visible, key=lambda r: (-_tie(w.keyword * r["keyword"] + _w_sem(w, r) * r["semantic"]),
                                                r["id"]))
        seed_entities: set[str] = set()
        for r in prelim[:GRAPH_SEEDS]:
            seed_entities |= entity_map.get(r["id"], set())
        if seed_entities:
            for r in visible:
                shared = len(entity_map.get(r["id"], set()) & seed_entities)
                r["graph"] = min(shared / 3.0, 1.0)
            # Neighbour fallback: memories that share a seed's entity but no query term.
            ph = ",".join("?" * len(seed_entities))
            readable = SENSITIVITIES[:max_rank + 1]
            neighbours = store.tables.rows(
                f"SELECT DISTINCT {CANDIDATE_COLUMNS} FROM edges x "
                "JOIN memories m ON m.id = x.dst JOIN memory_state s ON s.rowid = m.rowid "
                f"WHERE x.edge = '{MENTIONED_IN}' AND x.src IN ({ph}) "
                f"AND m.scope IN ({placeholders}) AND s.layer != 'archived' "
                f"AND m.sensitivity IN ({','.join('?' * len(readable))}) LIMIT 200",
                (*seed_entities, *scopes, *readable),
            )
            n_entities = _entities_of(store, [n["id"] for n in neighbours if n["id"] not in scored])
            n_cosines = vectors.cosines_of(idx, meaning, [n["id"] for n in neighbours if n["id"] not in scored]) \
                if meaning is not None else {}
            for row in neighbours:
                if row["id"] in scored:
                    continue
                strength, layer = decay.state_at(row, now, cfg.decay)
                if layer == "archived":
                    continue
                shared = len(n_entities.get(row["id"], set()) & seed_entities)
                by_meaning = row["id"] in n_cosines
                semantic = n_cosines[row["id"]] if by_meaning else cosine(q_vec, vector(row["text"]))
                scored[row["id"]] = dict(row, strength=strength, layer=layer, keyword=0.0,
                                         semantic=max(semantic, 0.0), by_meaning=by_meaning,
                                         graph=min(shared / 3.0, 1.0) * NEIGHBOUR_SCORE, neighbour=True,
                                         redacted=False)
                entity_map[row["id"]] = n_entities.get(row["id"], set())
        ranked: list[tuple[float, Hit]] = []
        for r in scored.values():
            score = (_w_sem(w, r) * r["semantic"] + w.keyword * r["keyword"] + w.importance * r["importance"]
                     + w.recency * r["strength"] + w.graph * r["graph"])
            if r["neighbour"] and score < MIN_SCORE * 2:
                continue
            if score < MIN_SCORE:
                continue
            if r["redacted"]:
                ranked.append((score, _redacted_hit(r, explain)))
                continue
            why = {"semantic": round(r["semantic"], 3), "keyword": round(r["keyword"], 3),
                   "importance": round(r["importance"], 3), "recency": round(r["strength"], 3),
                   "graph": round(r["graph"], 3), "neighbor": r["neighbour"],
                   "semantic_by": store.embedder_id() if r["by_meaning"] else "hash (character bigrams)",
                   **({"meaning_floor": round(meaning_floor, 3)} if r["by_meaning"] else {}),
                   } if explain else {}
            ranked.append((score, Hit(r["id"], round(score, 4), r["kind"], r["layer"], r["scope"],
                                      r["sensitivity"], r["text"], False, r["strength"], r["importance"], why)))
        # A redacted hit keeps its place (an agent may say that something relevant exists)
        # but shows no score: the place is all a caller learns of how well it matched.
        ranked.sort(key=lambda sh: (-_tie(sh[0]), sh[1].id))
        hits = [h for _, h in ranked[:k]]
        _name_entities(store, [h for h in hits if not h.redacted], entity_map)  # of the hits kept only
        hits = _newer_first(store, hits, scored)
    if reinforce and not store.read_only:  # a read-only store answers, and counts nothing
        _reinforce(store, hits, now)
    return hits


def _tie(score: float) -> float:
    """A score as ranking compares it: to the 4 decimals a caller is shown, so that equal
    memories rank by id. Cosines over a matrix of another shape (one more memory, even one
    the caller may not see) differ in the last bits; unrounded, that noise would reorder
    ties and tell two databases apart."""
    return round(score, 4)


def _reinforce(store: MemoryStore, hits: Sequence[Hit], now: float) -> None:
    targets = [h.id for h in hits if not h.redacted]
    if targets:
        with store.tables.write():
            for mid in targets:
                store.tables.reinforce(mid, now)  # skips a memory deleted since it was read


def reinforce_hits(store: MemoryStore, hits: Sequence[Hit], now: Any = None) -> str:
    """Count one recall of every unredacted hit, in one transaction. Returns "" when they
    were counted (or there was none), else why not (a read-only store, a full disk, a busy
    database): a caller that answers anyway says so instead of failing."""
    if not any(not h.redacted for h in hits):
        return ""
    if store.read_only:
        return f"{store.path} is open read-only"
    try:
        _reinforce(store, hits, store.tables.now(now))
    except StoreError as exc:
        return str(exc)
    return ""


def _newer_first(store: MemoryStore, hits: list[Hit], rows: dict[str, dict[str, Any]]) -> list[Hit]:
    """When two hits conflict, the newer one ranks above the older, which is marked as
    possibly outdated (the person has not yet said which holds)."""
    from .conflicts import outdated

    for older_id, newer_id in outdated(store, [rows[h.id] for h in hits if not h.redacted]).items():
        older = next(h for h in hits if h.id == older_id)
        newer = next(h for h in hits if h.id == newer_id)
        older.outdated_by = newer.id
        if hits.index(older) < hits.index(newer):
            hits.remove(newer)
            hits.insert(hits.index(older), newer)
    return hits


def _relevant(limits: Any, keyword: float, semantic: float, meaning_floor: float | None) -> bool:
    """Whether a candidate is about the query at all. Without a vector to judge by, any
    shared term makes it one (the bigram cosine is too weak to overrule words). With one,
    meaning decides, and words overrule it only when the memory shares at least
    ``limits.keyword_without_meaning`` of the query's terms: one shared word of three, in a
    memory no nearer to the query than its background, is that word used about something
    else ("Who runs the seed swap?" and "run `just release`, then watch…"; "Translate 'good
    morning' into Swahili" and "reads replies on her phone in the morning"). store/config.py
    says how the share was chosen."""
    if meaning_floor is None:
        return keyword > 0 or semantic >= limits.min_semantic_relevance
    return semantic >= meaning_floor or (keyword > 0 and keyword >= limits.keyword_without_meaning)


def _meaning_floor(limits: Any, nearest: Sequence[float]) -> float:
    """The cosine a memory found by meaning alone needs for this query: ``meaning_standout``
    above the cosine of the query's ``meaning_reference``-th nearest memory (of the
    farthest, when fewer are visible), within [``lowest_meaning_relevance``,
    ``min_meaning_relevance``] (store/config.py says why)."""
    if not nearest:
        return limits.min_meaning_relevance
    reference = nearest[min(limits.meaning_reference, len(nearest)) - 1]
    return max(limits.lowest_meaning_relevance, min(limits.min_meaning_relevance, reference + limits.meaning_standout))


def _w_sem(w: Any, r: dict[str, Any]) -> float:
    """The semantic part's weight: a real cosine counts more than the bigram stand-in."""
    return w.meaning if r["by_meaning"] else w.semantic


def _query_vector(store: MemoryStore, query: str) -> np.ndarray | None:
    """The query's vector, or None when it has nothing to embed (recall goes on by keywords)."""
    try:
        prepare(query)
    except EmbeddingError:
        return None
    return embed_queries(store.embedder, [query])[0]


def _redacted_hit(r: dict[str, Any], explain: bool) -> Hit:
    """What a caller may know of a memory one level above its trust: that it exists,
    and its id, kind, layer, scope and sensitivity (implied by the caller's trust);
    not its text, entities, strength, importance or score."""
    return Hit(r["id"], 0.0, r["kind"], r["layer"], r["scope"], r["sensitivity"], None, True, 0.0, 0.0,
               {"redacted": True} if explain else {}, [])


def _name_entities(store: MemoryStore, hits: list[Hit], entity_map: dict[str, set[str]]) -> None:
    """Each hit's entities, by name (sorted), in one query for all of them."""
    ids = sorted({e for h in hits for e in entity_map.get(h.id, ())})
    if not ids:
        return
    names: dict[str, str] = {}
    for first in range(0, len(ids), 500):
        chunk = ids[first:first + 500]
        names.update((r["id"], r["name"]) for r in store.tables.rows(
            f"SELECT id, name FROM entities WHERE id IN ({','.join('?' * len(chunk))})", chunk))
    for h in hits:
        h.entities = sorted(names[e] for e in entity_map.get(h.id, ()) if e in names)


def _entities_of(store: MemoryStore, memory_ids: list[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for start in range(0, len(memory_ids), 500):
        chunk = memory_ids[start:start + 500]
        ph = ",".join("?" * len(chunk))
        for r in store.tables.rows(
                f"SELECT src, dst FROM edges WHERE edge = '{MENTIONS}' AND src IN ({ph})", chunk):
            out.setdefault(r["src"], set()).add(r["dst"])
    return out


def brief(store: MemoryStore, limit: int = 5, scope: str | Sequence[str] = "global", trust: str = "medium",
          now: Any = None) -> str:
    """Wake-up text: the few strongest, most important facts and lessons visible here."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValidationError("limit", f"must be a positive whole number, got {limit!r}")
    max_rank = _trust_rank(trust)
    scopes = _visible_scopes(scope)
    now = store.tables.now(now)
    ph = ",".join("?" * len(scopes))
    rows = store.tables.rows(
        "SELECT id, text, kind, importance, sensitivity, recall_count, half_life_days, pinned, base, ref_time "
        f"FROM memory_rows WHERE kind IN ('fact', 'lesson') AND scope IN ({ph}) AND layer != 'archived'", scopes)
    ranked = []
    for r in rows:
        if SENSITIVITY_RANK.get(r["sensitivity"], 99) > max_rank:
            continue
        strength, layer = decay.state_at(r, now, store.config.decay)
        if layer == "archived":
            continue
        ranked.append((r["importance"] * 0.6 + strength * 0.4, r))
    ranked.sort(key=lambda x: (-x[0], x[1]["id"]))
    if not ranked:
        return ""
    lines = ["What I know for sure:"] + [f"- {r['text']}" for _, r in ranked[:limit]]
    return "\n".join(lines)


def hits_json(hits: list[Hit]) -> str:
    return json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2)
