"""The firewall: a hard token budget enforced by trimming the middle by tier.

Trimming order is fixed before any budget is known: episodic first, then semantic,
then procedural; inside a tier the lowest score first, and among equal scores the
later input first. At most three procedural segments are ever kept. Because the order
does not depend on the budget, selecting for a budget is one binary search over
cumulative token counts, which is what lets the inspector's budget slider re-select
thousands of memories in a few milliseconds.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from .layout import refs_in
from .tokenizers import TokenizerRegistry
from .types import TIER_NAMES, TIER_PROCEDURAL

PROCEDURAL_CAP = 3


class TrimOrder:
    """The budget-independent part of trimming a list of middle segments."""

    __slots__ = ("tokens", "capped", "order", "rank", "cumulative", "total")

    def __init__(self, tiers: Sequence[int], tokens: Sequence[int], scores: Sequence[float | None]) -> None:
        n = len(tiers)
        self.tokens = list(tokens)

        neg_inf = -math.inf
        score = [neg_inf if s is None else s for s in scores]
        procedural = [i for i in range(n) if tiers[i] == TIER_PROCEDURAL]
        procedural.sort(key=lambda i: (-score[i], i))  # best first, earlier input first
        self.capped = frozenset(procedural[PROCEDURAL_CAP:])
        # First to go: highest tier number (episodic), lowest score, latest input.
        keys = [(-tiers[i], score[i], -i) for i in range(n)]
        candidates = sorted(range(n), key=keys.__getitem__)
        if self.capped:
            candidates = [i for i in candidates if i not in self.capped]
        self.order = candidates
        self.rank = [-1] * n
        for pos, i in enumerate(candidates):
            self.rank[i] = pos
        cumulative = [0]
        for i in candidates:
            cumulative.append(cumulative[-1] + self.tokens[i])
        self.cumulative = cumulative
        self.total = cumulative[-1]

    def dropped_count(self, available: int) -> int:
        """How many segments, from the front of the trim order, must go to fit ``available``."""
        if available < 0:
            return len(self.order)
        need = self.total - available
        if need <= 0:
            return 0
        return bisect.bisect_left(self.cumulative, need)

    def is_kept(self, i: int, dropped: int) -> bool:
        return i not in self.capped and self.rank[i] >= dropped


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
        end_block = end_text.lstrip()
        lines = [" ".join(text.split()) + "\n" for text, _ in middle_segments]
        tiers = [tier for _, tier in middle_segments]
        count = self.adapter.count
        tokens = [count(line) for line in lines]
        order = TrimOrder(tiers, tokens, scores or [None] * len(lines))
        fixed = (count(core_block) if core_block else 0) + (count(end_block) if end_block else 0)
        dropped = order.dropped_count(self.max_tokens - fixed)
        while True:
            kept = [i for i in range(len(lines)) if order.is_kept(i, dropped)]
            text = core_block + "".join(lines[i] for i in kept) + end_block
            total = count(text)
            # The layout makes counts additive; the loop only guards odd input.
            if total <= self.max_tokens or dropped >= len(order.order):
                break
            dropped += 1
        kept_refs_set = {n for i in kept for n in refs_in(lines[i])[:1]}
        kept_refs = {n: rid for n, rid in ref_map.items() if n in kept_refs_set}
        offered = len(lines)
        stats = {
            "segments_offered": offered,
            "segments_kept": len(kept),
            "tokens_trimmed": sum(tokens) - sum(tokens[i] for i in kept),
            "tokens_budget": self.max_tokens,
            "budget_exceeded": fixed > self.max_tokens,
            "kept_by_tier": {name: sum(1 for i in kept if tiers[i] == t) for t, name in TIER_NAMES.items()},
        }
        return text, kept_refs, total, stats
