"""Recall that ranks: the k best memories the caller may see, best first, every time.

A memory's score is the sum of weighted signals (store/recall/signals.py, one table):

    score = keyword + meaning + entity + neighbour + importance + recency   (each weight × raw)

Candidates are the memories full-text search ranks best for the query's words
(``limits.candidate_limit``), the nearest by meaning (``limits.vector_candidates``), the
memories of the entities the query names (by name or alias: an observation stored under
"Zoë Müller" is found by "Zoë Müller" and by "where does Zoë work", its meaning part then
saying how well it answers), and the memories written next to a candidate in its episode
(the same non-empty source and scope, within ``limits.neighbour_window`` on each side).
Words and meaning count by rank, fused as reciprocal ranks; a query naming an entity
counts that entity's memories' words and meaning again; a turn next to a matching one gets
part of its neighbour's score (in a conversation, the turn that answers often follows the
one that matches). Every weight and constant was chosen on LoCoMo's open conversations
(tests/perf/locomo_eval.py prints what each adds) without lowering the shipped paraphrase
sets (tests/perf/hybrid_eval.py).

Nothing is thrown away by a floor: each hit carries a *relevance* in [0, 1], the chance,
measured on LoCoMo's open conversations, that a hit like it is evidence for the question
(store/recall/relevance.py), and a caller that wants abstention asks for ``min_relevance``.

Scope and trust are hard rules applied before anything is scored: a recall for ``group:1``
sees ``group:1`` and ``global`` only, and nothing above the caller's trust is a candidate,
by words or by meaning, not even one level above: were a redacted memory returned when it
matched, whether it came back would tell its text to anyone who guesses ("4921"). A memory
one level above is still known by id (``get`` answers it redacted); recall does not show it.

When the query cannot be embedded (the embedder fails, or cannot load here), recall goes on
by words and says so (``Hits.note``); so it does when the vectors are another model's.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..forgetting import decay
from ..model.edges import MENTIONED_IN, MENTIONS
from ..model.errors import StoreError, ValidationError
from ..model.memory import SENSITIVITIES, SENSITIVITY_RANK, check_text, validate_scope
from . import by_meaning as recall_meaning
from . import relevance, shelves, signals
from .text import Words, all_of, any_of, query_terms, terms

if TYPE_CHECKING:
    from ..store import MemoryStore

MAX_K = 1000  # hits one recall may ask for
BIGRAM_MEANING = 0.25  # the meaning signal's share when the vectors are character bigrams (hash)
# What scoring reads of a candidate memory.
CANDIDATE_COLUMNS = ("m.rowid AS rowid, m.id, m.text, m.kind, m.importance, m.scope, m.sensitivity, m.recall_count, "
                     "m.half_life_days, m.pinned, m.base, m.ref_time, m.terms, m.who, m.topic, m.created_at, "
                     "m.source")


@dataclass
class Hit:
    """One recalled memory. ``score`` is the sum of ``parts`` (signal name → weight × raw,
    store/recall/signals.py); ``relevance`` the calibrated chance that it answers (store/recall/relevance.py);
    ``why`` the explanation, when asked for."""

    id: str
    score: float
    kind: str
    layer: str
    scope: str
    sensitivity: str
    text: str | None
    redacted: bool
    strength: float
    importance: float
    why: dict[str, Any] = field(default_factory=dict)
    entities: list[str] = field(default_factory=list)
    # A newer memory among the hits says otherwise (a conflict): this one may be outdated.
    outdated_by: str | None = None
    relevance: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The hit as every door gives it in JSON, the reasons for its score only when
        they were asked for."""
        if self.redacted:
            return {"id": self.id, "kind": self.kind, "layer": self.layer, "redacted": True}
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "why" or self.why}


class Hits(list):
    """The hits, best first, and ``note``: what recall could not use ("" when it used it
    all), e.g. that it recalled by words only because the query could not be embedded.
    ``meaning_by`` names the vectors it searched ("" when none)."""

    note: str = ""
    meaning_by: str = ""


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


def check_query(query: Any, most: int) -> str:
    """The query as recall reads it, or a :class:`ValidationError` saying what is wrong
    with it: not text, a lone surrogate or NUL, longer than ``most`` characters (a
    memory's longest text, ``limits.max_text_chars``: a memory may be asked for by its
    own words), or
    nothing left once control characters and white space are removed."""
    if not isinstance(query, str):
        raise ValidationError("query", f"must be a string, got {type(query).__name__}")
    check_text("query", query)
    if len(query) > most:
        raise ValidationError("query", f"is {len(query):,} characters long; at most {most:,} "
                                       "(ask about one thing, in plain words)")
    cleaned = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch
                      for ch in unicodedata.normalize("NFKC", query)).strip()
    if not cleaned or not any(ch.isalnum() for ch in cleaned):
        raise ValidationError("query", f"has nothing to search for once control characters, punctuation and "
                                       f"white space are removed: {query[:40]!r}")
    return cleaned


def check_min_relevance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 \
            or not math.isfinite(value):
        raise ValidationError("min_relevance", f"must be a number from 0 to 1, got {value!r}")
    return float(value)


def _candidate_query(store: MemoryStore, q_terms: Sequence[str], scopes: Sequence[str],
                     known: Sequence[str]) -> Words:
    """The full-text query that finds the keyword candidates: any of the terms; on
    PostgreSQL, any of those not too common among what the caller may search
    (``limits.common_term_rows``), or all of them when every one is (store/backends/pg_terms.py)."""
    common = store.tables.backend.common_terms(store, q_terms, store.config.limits.common_term_rows, scopes, known)
    wanted = [t for t in q_terms if t not in common]
    return any_of(wanted) if wanted else all_of(q_terms)


def recall(store: MemoryStore, query: str, k: int = 5, *, scope: str | Sequence[str] = "global",
           trust: str | None = "medium", now: Any = None, explain: bool = False, reinforce: bool = False,
           with_global: bool = True, min_relevance: float | None = None) -> Hits:
    """The ``k`` memories the caller may see that best match ``query``, best first: every
    time there are any, unless ``min_relevance`` (default: ``limits.min_relevance``, 0)
    leaves some out. ``scope`` may be a list: a trust context that names several scopes
    sees each of them, and ``global`` (unless ``with_global`` is false: the LangGraph
    adapter searches the namespaces it is asked for, and nothing else).

    Changes nothing unless ``reinforce`` is true, in which case every returned memory
    counts one recall (not in a store opened read-only).
    """
    query = check_query(query, store.config.limits.max_text_chars)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= MAX_K:
        raise ValidationError("k", f"must be a whole number from 1 to {MAX_K}, got {k!r}")
    cfg = store.config
    floor = check_min_relevance(cfg.limits.min_relevance if min_relevance is None else min_relevance)
    max_rank = _trust_rank(trust)
    scopes = _visible_scopes(scope, with_global)
    now = store.tables.now(now)
    lim = cfg.limits
    q_terms = query_terms(query)
    hits = Hits()
    readable = SENSITIVITIES[:max_rank + 1]
    meaning = recall_meaning.of(store, query, scopes, max_rank)
    hits.note, hits.meaning_by = meaning.note, meaning.by
    ph = ",".join("?" * len(scopes))
    rph = ",".join("?" * len(readable))
    with store.tables.reading():
        rows: dict[str, dict[str, Any]] = {}
        pairs = shelves.held(store, scopes, readable) if q_terms else []
        if pairs:  # the full-text index is read on the shelves the caller may see only
            fts = _candidate_query(store, q_terms, scopes, readable)
            found = store.tables.rows(*store.tables.sql.text_search(
                CANDIDATE_COLUMNS, fts, "s.layer != 'archived'", (), limit=max(lim.keyword_pool, 2 * k),
                pairs=pairs, state=True, ranked=True))
            ranked = _by_words(found, q_terms, _visible_count(store, pairs) if found else 0)
            for rank, row in enumerate(ranked[:max(lim.candidate_limit, 2 * k)], 1):
                rows[row["id"]] = dict(row, keyword_rank=rank)
        cosines: dict[str, tuple[float, float]] = {}  # id -> (cosine, standing)
        meaning_rank: dict[str, int] = {}
        if meaning:
            near = meaning.nearest(scopes, max_rank, max(lim.vector_candidates, 2 * k))
            cosines = {mid: (c, st) for mid, c, st in near}
            _fetch(store, rows, [mid for mid in cosines if mid not in rows])
            # equal cosines (memories alike) rank the one written last first: their float
            # noise depends on the matrix's shape, hidden memories included
            near.sort(key=lambda n: (-round(n[2 if len(meaning.searches) > 1 else 1], 6),
                                     -rows.get(n[0], {}).get("rowid", 0), n[0]))
            meaning_rank = {mid: r for r, (mid, _, _) in enumerate(near, 1)}
            for mid, r in meaning_rank.items():
                if mid in rows:
                    rows[mid]["meaning_rank"] = r
        named = _named_entities(store, q_terms, scopes, readable)
        entity_extra: list[str] = []
        if named:
            eph = ",".join("?" * len(named))
            extra = [r["id"] for r in store.tables.rows(
                "SELECT m.id FROM edges x JOIN memories m ON m.id = x.dst JOIN memory_state s ON s.rowid = m.rowid "
                f"WHERE x.edge = '{MENTIONED_IN}' AND x.src IN ({eph}) AND m.scope IN ({ph}) "
                f"AND s.layer != 'archived' AND m.sensitivity IN ({rph}) ORDER BY m.created_at DESC, m.id LIMIT ?",
                (*named, *scopes, *readable, lim.entity_memories))]
            entity_extra = [mid for mid in extra if mid not in rows]
            _fetch(store, rows, entity_extra)
        if lim.neighbour_window:
            _add_neighbours(store, rows, scopes, readable, lim.neighbour_window, lim.episode_gap_seconds)
        if meaning:
            cosines.update(meaning.cosines_of([mid for mid in rows if mid not in cosines]))
            # An entity's memories beyond the nearest rank after them, by cosine (a neighbour
            # brought in only for being next to a candidate gets no meaning part of its own).
            beyond = sorted((mid for mid in entity_extra if mid in cosines and mid not in meaning_rank),
                            key=lambda m: (-cosines[m][1], m))
            for r, mid in enumerate(beyond, len(meaning_rank) + 1):
                rows[mid]["meaning_rank"] = r
        entity_map = _entities_of(store, list(rows))
        for mid, row in rows.items():
            row["named"] = bool(entity_map.get(mid, set()) & set(named))
            strength, layer = decay.state_at(row, now, cfg.decay)
            row["strength"], row["layer"] = strength, layer
        rows = {mid: r for mid, r in rows.items() if r["layer"] != "archived"
                and SENSITIVITY_RANK.get(r["sensitivity"], 99) <= max_rank}
        q_set = set(q_terms)
        names = _name_terms(store, named)
        for mid, row in rows.items():
            # the names of the entities it is linked to count as its words
            own = set(row["terms"].split())
            held = own.union(*(names.get(e, ()) for e in entity_map.get(mid, ())))
            row["keyword_share"] = len(q_set & held) / len(q_set) if q_set else 0.0
            row["by_name"] = bool(q_set & (held - own))
        fts_shares = sorted((r["keyword_share"] for r in rows.values() if r.get("keyword_rank")), reverse=True)
        for row in rows.values():
            if row["by_name"] and not row.get("keyword_rank"):
                # found by its entity's name alone (not in its text): ranked among the
                # full-text hits by the share of the query's terms it holds
                row["keyword_rank"] = 1 + sum(s > row["keyword_share"] for s in fts_shares)
        scored = _score(rows, cfg, meaning.meaningful)
        for mid, row in rows.items():
            share = row["keyword_share"]
            cos, stand = cosines.get(mid, (None, None))
            row["cosine"], row["standing"] = cos, stand
            row["relevance"] = relevance.of(scored[mid][0], share, stand)
        # equal scores: the one written last first (ids may be random: they would make the
        # order of equals a coin toss)
        order = sorted(rows, key=lambda m: (-_tie(scored[m][0]), -rows[m]["rowid"], m))
        for mid in order:
            r = rows[mid]
            if r["relevance"] < floor:
                continue
            score, parts, raw = scored[mid]
            why = {**{n: round(v, 3) for n, v in raw.items()}, "parts": parts, "score": round(score, 4),
                   "relevance": round(r["relevance"], 3), "keyword_share": round(r["keyword_share"], 3),
                   "keyword_rank": r.get("keyword_rank"), "meaning_rank": r.get("meaning_rank"),
                   "cosine": None if r["cosine"] is None else round(r["cosine"], 3),
                   "standing": None if r["standing"] is None else round(r["standing"], 2),
                   "meaning_by": hits.meaning_by or "none", "next_to": [a for a, _ in r.get("adjacent", ())],
                   } if explain else {}
            hits.append(Hit(mid, round(score, 4), r["kind"], r["layer"], r["scope"], r["sensitivity"], r["text"],
                            False, r["strength"], r["importance"], why, relevance=round(r["relevance"], 4),
                            parts=parts))
            if len(hits) == k:
                break
        _name_entities(store, hits, entity_map)  # of the hits kept only
        hits[:] = _newer_first(store, list(hits), rows)
    if reinforce and not store.read_only:  # a read-only store answers, and counts nothing
        _reinforce(store, hits, now)
    return hits


BM25_K1, BM25_B = 1.2, 0.75  # the usual constants (FTS5's own)


def _by_words(found: Sequence[dict[str, Any]], q_terms: Sequence[str], visible: int) -> list[dict[str, Any]]:
    """The full-text matches ranked by bm25 worked out here, over what the caller may see:
    FTS5's own bm25 weighs a term by how many memories of the whole index hold it, hidden
    ones included, so a hidden memory holding "Mara" would move a visible "Mara" memory
    below a visible "Theo" one. Here a term's rarity is how many of the visible matches
    hold it among the ``visible`` memories, a memory's length its number of distinct terms
    against the matches' mean; of equals the one written last comes first. Exact while the visible matches are fewer
    than ``limits.keyword_pool``; above, which matches are in the pool is FTS5's choice
    (as it was before this ranking)."""
    if not found:
        return []
    held = [set(r["terms"].split()) for r in found]
    n = max(visible, len(found))
    idf = {}
    for t in dict.fromkeys(q_terms):
        df = sum(t in h for h in held)
        idf[t] = math.log((n - df + 0.5) / (df + 0.5) + 1.0)
    mean = sum(len(h) for h in held) / len(held) or 1.0
    scored = []
    for row, h in zip(found, held, strict=True):
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(h) / mean)
        score = sum(idf[t] * (BM25_K1 + 1) / (1 + norm) for t in idf if t in h)
        scored.append((-round(score, 9), -row["rowid"], row["id"], row))
    scored.sort(key=lambda s: s[:3])
    return [row for *_, row in scored]


def _visible_count(store: MemoryStore, pairs: Sequence[tuple[str, str]]) -> int:
    """How many memories the caller may search (what a term's rarity is measured against),
    counted in the index of its (scope, sensitivity) pairs (store/recall/shelves.py)."""
    row = store.tables.rows(f"SELECT count(*) AS n FROM memories m WHERE {shelves.shown('m', len(pairs))}",
                            shelves.as_params(pairs))
    return int(row[0]["n"]) if row else 0


def _score(rows: dict[str, dict[str, Any]], cfg: Any, meaningful: bool
           ) -> dict[str, tuple[float, dict[str, float], dict[str, float]]]:
    """Each candidate's (score, parts, raw values), the signals worked out in their order."""
    weights = {s.name: float(getattr(cfg.weights, s.weight)) for s in signals.SIGNALS}
    ctx = signals.Context(cfg.limits, weights, {mid: {} for mid in rows},
                          1.0 if meaningful else BIGRAM_MEANING,
                          max((r["keyword_share"] for r in rows.values()), default=1.0))
    raws: dict[str, dict[str, float]] = {mid: {} for mid in rows}
    for sig in signals.SIGNALS:
        for mid, row in rows.items():
            value = min(max(float(sig.raw(row, ctx)), 0.0), 1.0)
            raws[mid][sig.name] = value
            ctx.parts[mid][sig.name] = weights[sig.name] * value
    out = {}
    for mid in rows:
        parts = {n: round(v, 4) for n, v in ctx.parts[mid].items()}
        out[mid] = (sum(ctx.parts[mid].values()), parts, raws[mid])
    return out


def _fetch(store: MemoryStore, rows: dict[str, dict[str, Any]], ids: Sequence[str]) -> None:
    """Read the candidates ``ids`` (already filtered by scope and trust) into ``rows``."""
    for first in range(0, len(ids), 500):
        chunk = ids[first:first + 500]
        for row in store.tables.rows(
                f"SELECT {CANDIDATE_COLUMNS} FROM memories m JOIN memory_state s ON s.rowid = m.rowid "
                f"WHERE m.id IN ({','.join('?' * len(chunk))}) AND s.layer != 'archived'", chunk):
            rows.setdefault(row["id"], dict(row))


NEIGHBOUR_SPAN = 4  # rows read on each side of a candidate, per place of the window


def _add_neighbours(store: MemoryStore, rows: dict[str, dict[str, Any]], scopes: Sequence[str],
                    readable: Sequence[str], window: int, gap: float) -> None:
    """The ``window`` memories written just before and just after each candidate in its
    episode (the same non-empty source and scope, made within ``gap`` seconds of it: a file
    of notes from one source is not a conversation), among those visible here, joined to
    the candidates; each memory learns which are next to it (``adjacent``: id and distance).

    Distance is counted among the visible memories of the episode, so a hidden turn between
    two visible ones changes nothing a caller gets: they are next to each other either way.
    Rows are read ``NEIGHBOUR_SPAN`` × ``window`` on each side of a candidate (by rowid, the
    order of writing); more hidden memories than that in one stretch of an episode would
    hide a neighbour behind them."""
    span = NEIGHBOUR_SPAN * window
    wanted = sorted({r["rowid"] + d for r in rows.values() if r["source"] for d in range(-span, span + 1)})
    if not wanted or window < 1:
        return
    ph, rph = ",".join("?" * len(scopes)), ",".join("?" * len(readable))
    near: dict[int, dict[str, Any]] = {}
    for first in range(0, len(wanted), 500):
        chunk = wanted[first:first + 500]
        for row in store.tables.rows(
                f"SELECT {CANDIDATE_COLUMNS} FROM memories m JOIN memory_state s ON s.rowid = m.rowid "
                f"WHERE m.rowid IN ({','.join('?' * len(chunk))}) AND m.source != '' AND m.scope IN ({ph}) "
                f"AND m.sensitivity IN ({rph}) AND s.layer != 'archived'", (*chunk, *scopes, *readable)):
            near[row["rowid"]] = row
    episodes: dict[tuple[str, str], list[int]] = {}
    for rowid, row in near.items():
        episodes.setdefault((row["source"], row["scope"]), []).append(rowid)
    for rowids in episodes.values():
        rowids.sort()

    def adjacent(row: dict[str, Any]) -> list[tuple[str, int]]:
        mine = episodes.get((row["source"], row["scope"]))
        if not row["source"] or not mine or row["rowid"] not in near:
            return []
        at = mine.index(row["rowid"])
        return [(near[mine[j]]["id"], abs(j - at)) for j in range(max(at - window, 0), min(at + window + 1, len(mine)))
                if j != at and abs(near[mine[j]]["created_at"] - row["created_at"]) <= gap]

    found = {mid: adjacent(row) for mid, row in rows.items()}
    by_id = {row["id"]: row for row in near.values()}
    for pairs in list(found.values()):
        for other, _ in pairs:
            if other not in rows:
                rows[other] = dict(by_id[other])
                found[other] = adjacent(rows[other])
    for mid, pairs in found.items():
        if pairs:
            rows[mid]["adjacent"] = pairs


def _name_terms(store: MemoryStore, entity_ids: Sequence[str]) -> dict[str, set[str]]:
    """The terms of each entity's name and aliases."""
    out: dict[str, set[str]] = {}
    if not entity_ids:
        return out
    for ent in store.tables.rows(f"SELECT id, name, aliases FROM entities WHERE id IN "
                                 f"({','.join('?' * len(entity_ids))})", list(entity_ids)):
        try:
            aliases = [a for a in json.loads(ent["aliases"] or "[]") if isinstance(a, str)]
        except ValueError:
            aliases = []
        out[ent["id"]] = set(terms(" ".join([ent["name"], *aliases])))
    return out


NAMED_ENTITIES = 20  # at most this many entities a query names bring their memories


@lru_cache(maxsize=65536)
def _terms_of_name(name: str) -> tuple[str, ...]:
    """An entity name's terms, kept: every recall compares every name of the caller's scopes."""
    return tuple(terms(name))


def _named_entities(store: MemoryStore, q_terms: Sequence[str], scopes: Sequence[str],
                    readable: Sequence[str]) -> list[str]:
    """The ids of the entities of these scopes the query names: every word of a name or
    alias is among the query's terms, or a person's first name is ("Zoë" for "Zoë Müller").
    Only entities some memory the caller may read is linked to count."""
    if not q_terms:
        return []
    q_set = set(q_terms)
    ph, rph = ",".join("?" * len(scopes)), ",".join("?" * len(readable))
    whole, first = [], []
    for eid, _, kind, names in store.tables.entity_names(scopes):
        for one in names:
            words = _terms_of_name(one)
            if not words or words[0] not in q_set:  # (both tests need the first)
                continue
            if q_set.issuperset(words):
                whole.append(eid)
                break
            if kind == "person" and len(words[0]) >= 3:
                first.append(eid)
                break
    # A first name shared by many people names none of them (and asking the database for the
    # memories of 20,000 "Person N" took minutes); so do many whole names.
    found = (whole + first)[:NAMED_ENTITIES] if len(first) <= NAMED_ENTITIES else whole[:NAMED_ENTITIES]
    if not found:
        return []
    eph = ",".join("?" * len(found))
    seen = store.tables.rows(
        f"SELECT DISTINCT x.src FROM edges x JOIN memories m ON m.id = x.dst WHERE x.edge = '{MENTIONED_IN}' "
        f"AND x.src IN ({eph}) AND m.scope IN ({ph}) AND m.sensitivity IN ({rph})", (*found, *scopes, *readable))
    return sorted(r["src"] for r in seen)


def _tie(score: float) -> float:
    """A score as ranking compares it: to the 4 decimals a caller is shown, so that equal
    memories rank by id. Cosines over a matrix of another shape (one more memory, even one
    the caller may not see) differ in the last bits; unrounded, that noise would reorder
    ties and tell two databases apart."""
    return round(score, 4)


def _reinforce(store: MemoryStore, hits: Sequence[Hit], now: float) -> None:
    targets = [h.id for h in hits if not h.redacted]
    if targets:
        store.reinforce_each(targets, now)


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
    from ..curation.conflicts import outdated

    for older_id, newer_id in outdated(store, [rows[h.id] for h in hits if not h.redacted]).items():
        older = next(h for h in hits if h.id == older_id)
        newer = next(h for h in hits if h.id == newer_id)
        older.outdated_by = newer.id
        if hits.index(older) < hits.index(newer):
            hits.remove(newer)
            hits.insert(hits.index(older), newer)
    return hits


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
