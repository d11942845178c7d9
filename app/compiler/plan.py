"""The budget-independent half of a compile, and the selection that fits it to a budget.

A :class:`PromptPlan` holds every piece of text a compile may send and the token count
of each, counted once. :meth:`PromptPlan.select` picks what fits a budget without
tokenizing again: it drops the oldest history in chunks if the reserved content does not
fit, trims the middle by tier (:class:`~.firewall.TrimOrder`), and assembles the
messages, the ref map and the metadata.

Two limits bound a selection: ``max_tokens`` bounds the prompt's content tokens
(``token_count``), and the model's window, less the output reserve, bounds what the
provider bills (content plus the chat format). The counts add up exactly because the
layout keeps every piece of a message from sharing a token with the next
(see :mod:`.layout`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .billing import TOKENS_REPLY_PRIMING
from .cache import PROVIDER_MIN_CACHE_TOKENS
from .capabilities import ModelCapabilities
from .firewall import Fit, TrimOrder
from .layout import history_text
from .tokenizers import TokenizerChoice
from .types import (
    REASON_DUPLICATE,
    REASON_HISTORY_DROPPED,
    REASON_OVER_BUDGET,
    REASON_PROCEDURAL_CAP,
    REASON_TEXT_TRUNCATED,
    TIER_NAMES,
    CompileMetrics,
    CompileResult,
    Segment,
)

HISTORY_DROP_CHUNK = 8  # messages dropped at a time, so the cached prefix breaks rarely


def check_budget(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive number of tokens, got {value}")
    return value


@dataclass(slots=True)
class Middle:
    """The middle segments of a compile, column by column (memories, then extras)."""

    ids: list[str | None] = field(default_factory=list)
    refs: list[int | None] = field(default_factory=list)
    tiers: list[int] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, rid, ref, tier, score, line, truncated, region) -> None:
        self.ids.append(rid)
        self.refs.append(ref)
        self.tiers.append(tier)
        self.scores.append(score)
        self.lines.append(line)
        self.truncated.append(truncated)
        self.regions.append(region)


@dataclass(frozen=True, slots=True)
class Selection:
    """What one budget keeps: the history from ``history_dropped`` on, and the middle
    segments ``fit`` keeps."""

    history_dropped: int
    fit: Fit
    budget_exceeded: bool
    tokens_budget: int


@dataclass(slots=True, eq=False)
class PromptPlan:
    """Everything about a compile that does not depend on the budget: texts and counts."""

    placement: str
    model_id: str | None
    caps: ModelCapabilities
    tokenizer: TokenizerChoice
    reserve_output_tokens: int | None
    trim_history: bool
    use_caching_split: bool
    metrics_callback: Callable[[CompileMetrics], None] | None
    debug: bool
    core_text: str
    core_tokens: int
    end_text: str
    end_tokens: int
    directives_text: str
    directives_tokens: int
    history: list[dict[str, Any]]
    history_tokens: list[int]
    history_overhead: list[int]  # chat-format tokens of each history message
    frame_overhead: int  # chat-format tokens of the compiled messages and the reply priming
    middle: Middle
    trim: TrimOrder
    emission: list[int]  # prompt order of the middle: by tier, then input order
    memory_count: int
    truncated_count: int
    offered_by_tier: dict[str, int]
    compressed: bool = False
    compressed_refs: list[tuple[int, str, str]] = field(default_factory=list)
    compressed_originals: list[Segment] = field(default_factory=list)
    duplicates: dict[int, Any] = field(default_factory=dict)  # middle index -> dedup.Duplicate
    dedup_threshold: float | None = None  # set when de-duplication ran
    attention_shift: Any = None  # an attention.AttentionShift, or None
    embedded: bool = False  # an embedder was given: the metadata reports the topic shift
    _history_suffix: list[tuple[int, int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # (content tokens, chat-format tokens) of history[k:], for every k
        suffix = [(0, 0)]
        for tokens, overhead in zip(reversed(self.history_tokens), reversed(self.history_overhead)):
            t, o = suffix[-1]
            suffix.append((t + tokens, o + overhead))
        self._history_suffix = suffix[::-1]

    @property
    def window(self) -> int | None:
        """Tokens the provider may bill for this prompt: the window less the output reserve."""
        cap = self.caps.context_cap
        return None if cap is None else cap - (self.reserve_output_tokens or 0)

    # -- selecting for a budget ------------------------------------------------------
    def select(self, max_tokens: int) -> CompileResult:
        """The prompt for ``max_tokens``, from the counts this plan holds."""
        t0 = time.perf_counter()
        check_budget("max_tokens", max_tokens)
        selection = self.fit(max_tokens)
        result = self.assemble(selection, max_tokens)
        if self.metrics_callback is not None:
            md = result.metadata
            self.metrics_callback(CompileMetrics(
                md["token_count"], md["tokens_budget"], md["tokens_trimmed"], md["segments_offered"],
                md["segments_kept"], md["history_messages_dropped"], md["budget_exceeded"],
                (time.perf_counter() - t0) * 1000.0))
        return result

    def fit(self, max_tokens: int) -> Selection:
        """Which history and middle segments fit ``max_tokens`` and the window."""
        fixed = self.core_tokens + self.end_tokens + self.directives_tokens
        window = self.window
        drop, exceeded = self._history_fit(max_tokens - fixed,
                                           None if window is None else window - fixed - self.frame_overhead)
        kept_tokens, kept_overhead = self._history_suffix[drop] if self.placement == "end" else (0, 0)
        overhead = self.frame_overhead + kept_overhead
        budget = max_tokens if window is None else min(max_tokens, window - overhead)
        room = budget - fixed - kept_tokens
        exceeded = exceeded or room < 0
        fit = self.trim.fit(-1 if exceeded else room)
        return Selection(drop, fit, exceeded, budget)

    def _history_fit(self, room: int, billed_room: int | None) -> tuple[int, bool]:
        """How many of the oldest history messages to drop so the rest fits ``room``
        content tokens and ``billed_room`` billed tokens: whole chunks, then past any
        tool results left without their call. Returns (dropped, budget exceeded)."""
        if self.placement != "end":
            return len(self.history), False
        suffix = self._history_suffix

        def over(k: int) -> bool:
            tokens, overhead = suffix[k]
            return tokens > room or (billed_room is not None and tokens + overhead > billed_room)

        if not over(0):
            return 0, False
        if not self.trim_history:
            return 0, True
        n = len(self.history)
        drop = 0
        while drop < n and over(drop):
            drop = min(drop + HISTORY_DROP_CHUNK, n)
        while drop < n and self.history[drop].get("role") in ("tool", "function"):
            drop += 1
        return drop, False

    # -- assembling the result ---------------------------------------------------------
    def kept_middle(self, fit: Fit) -> list[int]:
        rank, first, rescued = self.trim.rank, fit.first_kept, fit.rescued  # Fit.keeps, inlined
        return [i for i in self.emission if rank[i] >= first or i in rescued]

    def assemble(self, sel: Selection, max_tokens: int) -> CompileResult:
        end_place = self.placement == "end"
        drop = sel.history_dropped
        kept_idx = self.kept_middle(sel.fit)
        mid = self.middle
        lines = mid.lines
        tail = "".join([lines[i] for i in kept_idx]) + self.end_text + self.directives_text
        tail_tokens = sel.fit.tokens + self.end_tokens + self.directives_tokens
        if end_place:
            messages = [{"role": "system", "content": self.core_text}, *self.history[drop:],
                        {"role": "user", "content": tail}]
            stable_prefix_messages = 1 + len(self.history) - drop
            prefix_tokens = self.core_tokens + self._history_suffix[drop][0]
            overhead = self.frame_overhead + self._history_suffix[drop][1]
        else:
            messages = [{"role": "system", "content": self.core_text + tail}]
            stable_prefix_messages = 0
            prefix_tokens = self.core_tokens
            overhead = self.frame_overhead
        ref_map, ref_map_type, kept_by_tier = self._references(kept_idx)
        if self.compressed:  # the ref map follows the citations the summary kept
            summary_kept = bool(kept_idx)
            ref_map = {ref: rid for ref, rid, _ in self.compressed_refs} if summary_kept else {}
            ref_map_type = {ref: t for ref, _, t in self.compressed_refs} if summary_kept else {}
        metadata = self._metadata(sel, max_tokens, kept_idx, ref_map, kept_by_tier, stable_prefix_messages,
                                  prefix_tokens, tail_tokens, overhead)
        trace = self.debug_trace(sel) if self.debug else None
        return CompileResult(messages, ref_map, ref_map_type, metadata, debug_trace=trace, plan=self,
                             selection=sel)

    def _references(self, kept_idx: list[int]) -> tuple[dict[int, str], dict[int, str], dict[str, int]]:
        mid = self.middle
        refs = mid.refs
        ref_map: dict[int, str] = {}
        ref_map_type: dict[int, str] = {}
        kept_by_tier = dict.fromkeys(TIER_NAMES.values(), 0)
        for i in kept_idx:
            name = TIER_NAMES[mid.tiers[i]]
            kept_by_tier[name] += 1
            if refs[i] is not None:
                ref_map[refs[i]] = mid.ids[i]
                ref_map_type[refs[i]] = name
        ref_map = dict(sorted(ref_map.items()))
        return ref_map, {n: ref_map_type[n] for n in ref_map}, kept_by_tier

    def _metadata(self, sel: Selection, max_tokens: int, kept_idx: list[int], ref_map: dict[int, str],
                  kept_by_tier: dict[str, int], stable_prefix_messages: int, prefix_tokens: int,
                  tail_tokens: int, overhead: int) -> dict[str, Any]:
        end_place = self.placement == "end"
        drop = sel.history_dropped
        order = self.trim
        token_count = prefix_tokens + tail_tokens
        tokens_trimmed = order.total + sum(order.tokens[i] for i in order.capped) - sel.fit.tokens
        if self.duplicates:
            tokens_trimmed += sum(order.tokens[i] for i in self.duplicates)
        if end_place:
            tokens_trimmed += sum(self.history_tokens[:drop])
        strategies = [name for name, used in (
            ("history_chunk_drop", drop and end_place),
            ("semantic_dedup", self.duplicates),
            ("tier_trim", len(kept_idx) < len(order.order)),
            ("procedural_cap", order.capped),
            ("text_truncation", self.truncated_count),
            ("preflight_compression", self.compressed),
        ) if used]
        caching = self.caps.prompt_caching
        extra = {}
        if self.dedup_threshold is not None:
            mid = self.middle
            extra["semantic_dedup"] = {"threshold": self.dedup_threshold, "dropped": [
                {"record_id": mid.ids[i], "ref": mid.refs[i], "duplicate_of": mid.ids[d.of],
                 "duplicate_of_ref": mid.refs[d.of], "cosine": d.cosine} for i, d in sorted(self.duplicates.items())]}
        if self.embedded:
            shift = self.attention_shift
            extra["attention_shift"] = None if shift is None else shift.to_dict()
        return {
            "token_count": token_count,
            "tokens_budget": sel.tokens_budget,
            "max_tokens": max_tokens,
            "context_cap": self.caps.context_cap,
            "reserve_output_tokens": self.reserve_output_tokens,
            "model_id": self.model_id,
            "model_known": self.caps.known,
            "tokenizer": self.tokenizer.adapter.name,
            "token_count_exact": self.tokenizer.exact,
            "tokens_trimmed": tokens_trimmed,
            "segments_offered": len(self.middle),
            "segments_kept": len(kept_idx),
            "memories_offered": self.memory_count,
            "memories_kept": len(ref_map),
            "memories_truncated": self.truncated_count,
            "procedural_capped": len(order.capped),
            "retrieval_summary": {"offered": dict(self.offered_by_tier), "kept": kept_by_tier},
            "memory_placement": self.placement,
            "stable_prefix_messages": stable_prefix_messages,
            "history_messages_offered": len(self.history),
            "history_messages_dropped": drop if end_place else max(len(self.history) - 1, 0),
            "prompt_caching_supported": caching,
            "prompt_cache_used": bool(self.use_caching_split and caching
                                      and prefix_tokens >= PROVIDER_MIN_CACHE_TOKENS),
            "cacheable_prefix_tokens": prefix_tokens,
            "dynamic_tail_tokens": tail_tokens,
            "budget_exceeded": sel.budget_exceeded,
            "message_overhead_tokens": overhead,
            "billed_input_tokens": token_count + overhead,
            "trimming_strategies": strategies,
            "preflight_compressed": self.compressed,
            "memories_deduplicated": len(self.duplicates),
            **extra,
        }

    def segments(self, sel: Selection) -> list[Segment]:
        """The plan of one selection, in prompt order (built when first asked for)."""
        out = [Segment("core", self.core_text, self.core_tokens, True, message_index=0)]
        for k, m in enumerate(self.history):
            kept = self.placement == "end" and k >= sel.history_dropped
            out.append(Segment("history", history_text(m), self.history_tokens[k], kept,
                               None if kept else REASON_HISTORY_DROPPED))
        mid = self.middle
        order = self.trim
        for i in self.emission:
            truncated = mid.truncated[i]
            dup = self.duplicates.get(i) if self.duplicates else None
            if dup is not None:
                out.append(Segment(mid.regions[i], mid.lines[i], order.tokens[i], False, REASON_DUPLICATE,
                                   mid.tiers[i], mid.ids[i], mid.refs[i], None, truncated,
                                   duplicate_of=mid.ids[dup.of], similarity=dup.cosine))
                continue
            if sel.fit.keeps(order.rank[i], i):
                kept, reason = True, (REASON_TEXT_TRUNCATED if truncated else None)
            else:
                kept = False
                reason = REASON_PROCEDURAL_CAP if i in order.capped else REASON_OVER_BUDGET
            out.append(Segment(mid.regions[i], mid.lines[i], order.tokens[i], kept, reason, mid.tiers[i],
                               mid.ids[i], mid.refs[i], None, truncated))
        out.append(Segment("end", self.end_text, self.end_tokens, True))
        if self.directives_text:
            out.append(Segment("directives", self.directives_text, self.directives_tokens, True))
        out.extend(self.compressed_originals)
        return out

    def debug_trace(self, sel: Selection) -> dict[str, Any]:
        """Ranking diagnostics: the trim order with each middle segment's fate, and the
        limits the selection worked to."""
        mid = self.middle
        order = self.trim
        ranked = []
        for pos, i in enumerate(order.order):
            ranked.append({"trim_rank": pos, "ref": mid.refs[i], "record_id": mid.ids[i],
                           "tier": TIER_NAMES[mid.tiers[i]], "score": mid.scores[i], "tokens": order.tokens[i],
                           "kept": sel.fit.keeps(pos, i)})
        return {
            "trim_order": ranked,
            "procedural_capped": [mid.refs[i] if mid.refs[i] is not None else mid.ids[i] for i in sorted(order.capped)],
            "first_kept_rank": sel.fit.first_kept,
            "rescued_after_a_larger_segment": sorted(order.rank[i] for i in sel.fit.rescued),
            "tokens_budget": sel.tokens_budget,
            "window_for_input": self.window,
            "history_dropped": sel.history_dropped,
        }


def plan_frame_overhead(placement: str, overhead_of: Callable[[dict[str, Any]], int]) -> int:
    """The chat-format tokens of the messages a compile adds around the history."""
    frame = overhead_of({"role": "system"})
    if placement == "end":
        frame += overhead_of({"role": "user"})
    return frame + TOKENS_REPLY_PRIMING
