"""The firewall: a hard token budget enforced by trimming the middle by tier.

Trimming order is fixed before any budget is known: episodic first, then semantic,
then procedural; inside a tier the lowest score first, and among equal scores the
later input first. At most three procedural segments are ever kept. Because the order
does not depend on the budget, selecting for a budget is a binary search over
cumulative token counts for the longest tail of the order that fits, then one pass
back over the rest for anything that still fits in the room left: a segment too big
for the budget is trimmed alone and smaller ones after it in the order still get in.
This is what lets the inspector's budget slider re-select thousands of memories in
a few milliseconds.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .layout import as_line, keep_apart, refs_in
from .tokenizers import TokenizerRegistry
from .types import TIER_NAMES, TIER_PROCEDURAL

PROCEDURAL_CAP = 3


@dataclass(frozen=True, slots=True)
class Fit:
    """Which middle segments one budget keeps: every segment from ``first_kept`` on in the
    trim order, and the ``rescued`` ones before it that still fitted."""

    first_kept: int
    rescued: frozenset[int]
    tokens: int  # of the kept segments

    def keeps(self, rank: int, i: int) -> bool:
        return rank >= self.first_kept or i in self.rescued


class TrimOrder:
    """The budget-independent part of trimming a list of middle segments."""

    __slots__ = ("tokens", "capped", "order", "rank", "cumulative", "total", "prefix_min")

    def __init__(self, tiers: Sequence[int], tokens: Sequence[int], scores: Sequence[float | None],
                 excluded: frozenset[int] = frozenset()) -> None:
        self.tokens = list(tokens)
        score = [-math.inf if s is None else s for s in scores] if None in scores else scores
        # First to go: highest tier number (episodic), lowest score, latest input. Two
        # stable sorts: by score over the input reversed, then by tier, descending.
        order = sorted(range(len(tiers) - 1, -1, -1), key=score.__getitem__)
        order.sort(key=tiers.__getitem__, reverse=True)
        if excluded:  # never sent (near-duplicates), so they take no procedural place either
            order = [i for i in order if i not in excluded]
        n = len(order)
        # Procedural segments come last, the best of them at the very end: all but the
        # best PROCEDURAL_CAP are capped.
        procedural = n - bisect.bisect_left(order, -TIER_PROCEDURAL, key=lambda i: -tiers[i])
        first_capped = n - procedural
        capped = order[first_capped:first_capped + max(procedural - PROCEDURAL_CAP, 0)]
        self.capped = frozenset(capped)
        self.order = order[:first_capped] + order[first_capped + len(capped):] if capped else order
        # rank[i]: position of segment i in the order; -1 for a capped one.
        rank = [-1] * len(tiers)
        for pos, i in enumerate(self.order):
            rank[i] = pos
        self.rank = rank
        order_tokens = list(map(self.tokens.__getitem__, self.order))
        self.cumulative = [0, *itertools.accumulate(order_tokens)]
        self.total = self.cumulative[-1]
        # prefix_min[k]: the smallest segment among the first k of the order.
        self.prefix_min = [math.inf, *itertools.accumulate(order_tokens, min)]

    def fit(self, available: int) -> Fit:
        """The segments kept within ``available`` tokens."""
        order, tokens = self.order, self.tokens
        if available < 0:
            return Fit(len(order), frozenset(), 0)
        need = self.total - available
        first = 0 if need <= 0 else bisect.bisect_left(self.cumulative, need)
        room = available - (self.total - self.cumulative[first])
        rescued = []
        smallest = self.prefix_min
        for pos in range(first - 1, -1, -1):
            if room < smallest[pos + 1]:
                break
            t = tokens[order[pos]]
            if t <= room:
                rescued.append(order[pos])
                room -= t
        return Fit(first, frozenset(rescued), available - room)


class PreFlightContextFirewall:
    """Fits core + middle + end into ``max_tokens`` by trimming the middle by tier.

    ``run`` returns ``(text, kept_refs, total, stats)`` where ``total`` is the token
    count of ``text``; the core and end are never cut.
    """

    def __init__(self, max_tokens: int, model_id: str | None = None, tokenizer_registry=None) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.model_id = model_id
        registry = tokenizer_registry or TokenizerRegistry.get()
        self.adapter = registry.adapter(model_id)

    def run(
        self,
        core_text: str,
        end_text: str,
        middle_segments: Sequence[tuple[str, int]],
        ref_map: dict[int, str] | None = None,
        scores: Sequence[float | None] | None = None,
    ) -> tuple[str, dict[int, str], int, dict]:
        ref_map = dict(ref_map or {})
        core_block = core_text + "\n\n" if core_text else ""
        end_block = keep_apart(end_text.lstrip())
        # The caller's lines carry their own [Mem:N] tags, so only their form is tidied.
        lines = [as_line(text) for text, _ in middle_segments]
        tiers = [tier for _, tier in middle_segments]
        count = self.adapter.count
        tokens = self.adapter.count_many(lines)
        order = TrimOrder(tiers, tokens, scores or [None] * len(lines))
        fixed = (count(core_block) if core_block else 0) + (count(end_block) if end_block else 0)
        fit = order.fit(self.max_tokens - fixed)
        kept = [i for i in range(len(lines)) if fit.keeps(order.rank[i], i)]
        text = core_block + "".join(lines[i] for i in kept) + end_block
        kept_refs_set = {n for i in kept for n in refs_in(lines[i])[:1]}
        kept_refs = {n: rid for n, rid in ref_map.items() if n in kept_refs_set}
        stats = {
            "segments_offered": len(lines),
            "segments_kept": len(kept),
            "tokens_trimmed": sum(tokens) - fit.tokens,
            "tokens_budget": self.max_tokens,
            "budget_exceeded": fixed > self.max_tokens,
            "kept_by_tier": {name: sum(1 for i in kept if tiers[i] == t) for t, name in TIER_NAMES.items()},
        }
        return text, kept_refs, fixed + fit.tokens, stats
