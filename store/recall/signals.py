"""The signals recall adds up into a memory's score, declared once.

Each :class:`Signal` has a ``name`` (the key of a hit's ``parts`` and of its explanation,
and what the window shows), a ``weight`` key (``[weights]`` in the store's config, read
from this table by store/model/config.py), a default weight, one line saying what it measures,
and ``raw(candidate, context)``: a value in [0, 1]. A hit's score is the sum over the
signals of weight × raw, and its ``parts`` are those products: they add up to the score.
Signals are worked out in this order for every candidate, so a signal may read the parts
of the ones before it (``context.parts``: the entity signal repeats the words-and-meaning
parts, the neighbour signal reads the candidates next to this one).

Adding a signal is one entry here plus what its ``raw`` reads (set by store/recall/ranking.py on
the candidate); the config, the explanation and the window follow from this table.

The defaults were chosen on LoCoMo's open conversations (tests/perf/locomo_eval.py, which
prints what each signal adds); the rank constants (``limits.keyword_rank_k``,
``limits.meaning_rank_k``) likewise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Context:
    """What a signal may read besides its candidate: the config's limits, the parts already
    worked out (memory id → {signal name: weighted part}), and the weights."""

    limits: Any
    weights: dict[str, float]
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    meaning_scale: float = 1.0  # below 1 when the vectors carry no meaning (character bigrams)
    best_share: float = 1.0  # the largest share of the query's terms any candidate holds


@dataclass(frozen=True)
class Signal:
    name: str
    weight: str
    default: float
    about: str
    raw: Callable[[dict[str, Any], Context], float]


def rank_part(rank: int | None, k: int) -> float:
    """A rank's share, 1 for the first: (k + 1) / (k + rank), reciprocal rank fusion
    scaled so that a signal's weight is what its best candidate gets."""
    return 0.0 if rank is None else (k + 1) / (k + rank)


def _keyword(c: dict[str, Any], ctx: Context) -> float:
    """Its full-text rank's share, times the share of the query's terms it holds (against the
    candidate holding the most) raised to ``limits.keyword_share_power``: one incidental
    word of four is not a match when another memory holds three."""
    best = ctx.best_share or 1.0
    share = (c.get("keyword_share", 1.0) / best) ** ctx.limits.keyword_share_power
    return rank_part(c.get("keyword_rank"), ctx.limits.keyword_rank_k) * share


def _meaning(c: dict[str, Any], ctx: Context) -> float:
    return rank_part(c.get("meaning_rank"), ctx.limits.meaning_rank_k) * ctx.meaning_scale


MATCHED = ("keyword", "meaning")  # the parts that say how well a memory itself matches


def _neighbour(c: dict[str, Any], ctx: Context) -> float:
    """How well the memories next to it in its episode matched (their words and meaning, as
    a share of the most those can be), a memory d places away counting 1/d: 1 when every
    memory of the window on both sides matched as well as any can."""
    top = sum(ctx.weights.get(n, 0.0) for n in MATCHED) or 1.0
    most = 2 * sum(1 / d for d in range(1, ctx.limits.neighbour_window + 1)) or 1.0
    total = 0.0
    for other, distance in c.get("adjacent", ()):
        have = ctx.parts.get(other)
        if have:
            total += sum(have.get(n, 0.0) for n in MATCHED) / top / distance
    return total / most


def _entity(c: dict[str, Any], ctx: Context) -> float:
    """For a memory linked to an entity the query names: its words, meaning and neighbour
    parts again, as a share of the most they can be."""
    if not c.get("named"):
        return 0.0
    names = (*MATCHED, "neighbour")
    top = sum(ctx.weights.get(n, 0.0) for n in names) or 1.0
    return sum(ctx.parts[c["id"]].get(n, 0.0) for n in names) / top


def _importance(c: dict[str, Any], ctx: Context) -> float:
    return float(c["importance"])


def _recency(c: dict[str, Any], ctx: Context) -> float:
    return float(c["strength"])


SIGNALS: tuple[Signal, ...] = (
    Signal("keyword", "keyword", 1.0, "how high full-text search (bm25) ranks it for the query's words", _keyword),
    Signal("meaning", "meaning", 0.55, "how high its vector ranks by cosine with the query's", _meaning),
    Signal("neighbour", "neighbour", 3.4, "the memories next to it in its episode (same source and scope, "
           "written just before or after) match the query", _neighbour),
    Signal("entity", "entity", 5.0, "it is linked to a person or thing the query names (by name or alias): "
           "its words, meaning and neighbour parts count again", _entity),
    Signal("importance", "importance", 0.05, "how important it was said to be", _importance),
    Signal("recency", "recency", 0.05, "its strength now (recent and often recalled memories are strong)",
           _recency),
)


def by_name() -> dict[str, Signal]:
    return {s.name: s for s in SIGNALS}
