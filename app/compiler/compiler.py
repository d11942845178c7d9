"""ContextCompiler: rules, memories, history and the current turn → a prompt that fits.

A compile runs in two halves. The first (:meth:`ContextCompiler._plan`) validates the
inputs, lays out every piece of text and counts its tokens once. The second
(:meth:`_Plan.select`) picks what fits a budget: it drops history in chunks if the
reserved content does not fit, trims the middle by tier, and assembles the messages,
the ref map, the metadata and the segment plan. A :class:`CompileResult` keeps its
plan, so the same inputs can be re-selected at another budget without tokenizing again.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .capabilities import model_capabilities
from .firewall import TrimOrder
from .layout import (
    TIER_LABELS,
    build_core,
    build_directives,
    build_end,
    cap_text,
    history_text,
    one_line,
    refs_in,
    text_caps,
    tier_of,
)
from .tokenizers import TiktokenAdapter, TokenizerRegistry
from .types import (
    REASON_COMPRESSED,
    REASON_HISTORY_DROPPED,
    REASON_OVER_BUDGET,
    REASON_PROCEDURAL_CAP,
    REASON_TEXT_TRUNCATED,
    TIER_NAMES,
    TIER_SEMANTIC,
    CompileMetrics,
    CompileResult,
    MemoryItem,
    Quote,
    Segment,
)

PLACEMENTS = ("end", "system")
HISTORY_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
HISTORY_DROP_CHUNK = 8  # messages dropped at a time, so the cached prefix breaks rarely
PROVIDER_MIN_CACHE_TOKENS = 1024
TOKENS_PER_MESSAGE = 3  # OpenAI chat format: <|start|>{role}\n ... <|end|>
TOKENS_REPLY_PRIMING = 3  # <|start|>assistant<|message|>

Compressor = Callable[[str, int, str], str]
AsyncCompressor = Callable[[str, int, str], Awaitable[str]]


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def message_tokens(message: dict[str, Any], adapter: TiktokenAdapter) -> int:
    """Tokens of one message's content: its text (string or text parts) and, for an
    assistant message with tool calls, the JSON of those calls."""
    n = 0
    content = message.get("content")
    if isinstance(content, str):
        n += adapter.count(content)
    elif isinstance(content, list):
        n += sum(adapter.count(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if message.get("tool_calls"):
        n += adapter.count(json.dumps(message["tool_calls"], ensure_ascii=False, sort_keys=True))
    return n


def count_message_tokens(messages: Sequence[dict[str, Any]], adapter: TiktokenAdapter) -> int:
    """A fresh count of a message list (content only, as ``token_count`` reports it)."""
    return sum(message_tokens(m, adapter) for m in messages)


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive number of tokens, got {value}")
    return value


def _check_str(name: str, value: Any, *, allow_none: bool = False) -> str:
    if value is None and allow_none:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _validate_history(messages: Any) -> list[dict[str, Any]]:
    if messages is None:
        return []
    if not isinstance(messages, (list, tuple)):
        raise TypeError(f"conversation_messages must be a list of messages, got {type(messages).__name__}")
    for i, m in enumerate(messages):
        where = f"conversation_messages[{i}]"
        if not isinstance(m, dict):
            raise TypeError(f"{where} must be a dict with 'role' and 'content', got {type(m).__name__}")
        role = m.get("role")
        if role not in HISTORY_ROLES:
            raise ValueError(f"{where}.role must be one of {', '.join(HISTORY_ROLES)}, got {role!r}")
        if "content" not in m and not m.get("tool_calls"):
            raise ValueError(f"{where} has no 'content'")
        content = m.get("content")
        if content is None:
            if not m.get("tool_calls"):
                raise ValueError(f"{where}.content is None, which only an assistant message with tool_calls may be")
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, dict) or "type" not in part:
                    raise TypeError(f"{where}.content[{j}] must be a content part dict with a 'type'")
        elif not isinstance(content, str):
            raise TypeError(f"{where}.content must be a str or a list of content parts, got {type(content).__name__}")
    return list(messages)


class _Middle:
    """The middle segments of a compile, column by column (memories, then extras)."""

    __slots__ = ("ids", "refs", "tiers", "scores", "lines", "truncated", "regions")

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.refs: list[int | None] = []
        self.tiers: list[int] = []
        self.scores: list[float | None] = []
        self.lines: list[str] = []
        self.truncated: list[bool] = []
        self.regions: list[str] = []

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


def _bad_memory(i: int, mem: Any, overrides: dict[int, int], seen: dict[str, int]) -> Exception:
    """The error for memories[i], found the slow way once the fast check failed."""
    where = f"memories[{i}]"
    if not hasattr(mem, "id"):
        return TypeError(f"{where} must be a MemoryItem or have an 'id', got {type(mem).__name__}")
    rid = mem.id
    if not isinstance(rid, str):
        return TypeError(f"{where}.id must be a str, got {type(rid).__name__}")
    if not rid.strip():
        return ValueError(f"{where}.id is empty; every memory needs an id to cite")
    if rid in seen and seen[rid] != i:
        return ValueError(f"{where}.id {rid!r} is a duplicate of memories[{seen[rid]}].id")
    content = getattr(mem, "content", None)
    if content is None:
        content = getattr(mem, "text", None)
    if not isinstance(content, str):
        return TypeError(f"{where}.content must be a str, got {type(content).__name__}")
    score = getattr(mem, "score", None)
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        return TypeError(f"{where}.score must be a number or None, got {type(score).__name__}")
    try:
        tier_of(mem, overrides.get(id(mem)))
    except ValueError as exc:
        return ValueError(f"{where}: {exc}")
    return ValueError(f"{where} is not a valid memory")


def _validate_memories(memories: Any, tier_by_memory_id: dict[int, int] | None, middle: _Middle,
                       adapter: TiktokenAdapter) -> list:
    """Check every memory and lay out its line; returns waiters for the token counts,
    which are encoded on worker threads chunk by chunk while later chunks are checked."""
    if memories is None:
        return []
    if isinstance(memories, (str, bytes)) or not hasattr(memories, "__iter__"):
        raise TypeError(f"memories must be a list of MemoryItem, got {type(memories).__name__}")
    caps = text_caps()
    overrides = tier_by_memory_id or {}
    seen: dict[str, int] = {}
    labels: dict[Any, str] = {}
    rows: list[tuple] = []
    add = rows.append
    chunk = max(len(memories) // 4, 256) if hasattr(memories, "__len__") else 1024
    waiters = []
    start = 0
    item = MemoryItem
    tier_by_type = {"procedural": 1, "semantic": 2, "episodic": 3}
    for i, mem in enumerate(memories):
        if type(mem) is item and not overrides:
            # Fast path for plain MemoryItem rows: checked without building error text.
            rid, content, tier, score, kind = mem.id, mem.content, mem.priority, mem.score, mem.kind
            if tier is None:
                tier = tier_by_type.get(mem.memory_type, 2)
            if type(rid) is int:
                rid = str(rid)
            if (type(rid) is not str or type(content) is not str or not rid or rid.isspace() or rid in seen
                    or type(tier) is not int or tier not in TIER_NAMES
                    or (score is not None and type(score) is not float and type(score) is not int)):
                raise _bad_memory(i, mem, overrides, seen)
        else:
            try:
                rid = mem.id
                content = getattr(mem, "content", None)
                if content is None:
                    content = getattr(mem, "text", None)
                if type(rid) is int:
                    rid = str(rid)
                tier = tier_of(mem, overrides.get(id(mem)) if overrides else None)
                score = getattr(mem, "score", None)
                kind = getattr(mem, "kind", None)
                ok = (type(rid) is str and type(content) is str and rid.strip() != "" and rid not in seen
                      and (score is None or (type(score) is not bool and isinstance(score, (int, float)))))
            except (AttributeError, ValueError):
                ok = False
            if not ok:
                raise _bad_memory(i, mem, overrides, seen)
        seen[rid] = i
        text = " ".join(content.split())
        cap = caps[tier]
        truncated = False
        if cap is not None and len(text) > cap:
            text, truncated = cap_text(text, cap)
        label = labels.get(kind)
        if label is None:
            label = labels[kind] = one_line(str(kind)) if kind else ""
        ref = i + 1
        add((rid, ref, tier, score, f"[Mem:{ref}] [{label or TIER_LABELS[tier]}] {text}\n", truncated))
        if len(rows) - start >= chunk:
            waiters.append(adapter.count_lines_async([r[4] for r in rows[start:]]))
            start = len(rows)
    if len(rows) > start:
        waiters.append(adapter.count_lines_async([r[4] for r in rows[start:]]))
    if rows:
        ids, refs, tiers, scores, lines, truncs = (list(col) for col in zip(*rows))
        middle.ids, middle.refs, middle.tiers, middle.scores = ids, refs, tiers, scores
        middle.lines, middle.truncated, middle.regions = lines, truncs, ["memory"] * len(rows)
    return waiters


def _validate_extras(extras: Any, middle: _Middle) -> None:
    if not extras:
        return
    for j, item in enumerate(extras):
        where = f"middle_extras[{j}]"
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"{where} must be a (text, tier) pair")
        text, tier = item
        if not isinstance(text, str):
            raise TypeError(f"{where} text must be a str, got {type(text).__name__}")
        if isinstance(tier, bool) or tier not in TIER_NAMES:
            raise ValueError(f"{where} tier must be 1, 2 or 3, got {tier!r}")
        line = one_line(text)
        if line:
            middle.add(None, None, tier, None, line + "\n", False, "extra")


class _Plan:
    """Everything about a compile that does not depend on the budget: texts and counts."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    def select(self, max_tokens: int) -> CompileResult:
        t0 = time.perf_counter()
        _check_int("max_tokens", max_tokens)
        budget = min(max_tokens, self.context_cap) if self.context_cap else max_tokens
        end_place = self.placement == "end"
        fixed = self.core_tokens + self.end_tokens + self.directives_tokens
        history = self.history
        h_tokens = self.history_tokens
        drop = 0
        budget_exceeded = False
        if end_place:
            if fixed + sum(h_tokens) > budget:
                if self.trim_history:
                    drop = self._history_drop(budget - fixed)
                else:
                    budget_exceeded = True
            kept_history_tokens = sum(h_tokens[drop:])
        else:
            drop = len(history)
            kept_history_tokens = 0
        if fixed + kept_history_tokens > budget:
            budget_exceeded = True
        order: TrimOrder = self.trim
        dropped = order.dropped_count(budget - fixed - kept_history_tokens) if not budget_exceeded else len(
            order.order)

        mid = self.middle
        rank = order.rank
        kept_idx = [i for i in self.emission if rank[i] >= dropped]  # capped ones have rank -1
        lines = mid.lines
        tokens = order.tokens
        kept_tokens = sum(tokens[i] for i in kept_idx)
        refs = mid.refs
        ref_map = {}
        ref_map_type = {}
        kept_by_tier = dict.fromkeys(TIER_NAMES.values(), 0)
        for i in kept_idx:
            name = TIER_NAMES[mid.tiers[i]]
            kept_by_tier[name] += 1
            if refs[i] is not None:
                ref_map[refs[i]] = mid.ids[i]
                ref_map_type[refs[i]] = name
        tail = "".join([lines[i] for i in kept_idx]) + self.end_text + self.directives_text
        tail_tokens = kept_tokens + self.end_tokens + self.directives_tokens
        if end_place:
            messages = [{"role": "system", "content": self.core_text}]
            messages.extend(history[drop:])
            messages.append({"role": "user", "content": tail})
            stable_prefix_messages = 1 + len(history) - drop
            prefix_tokens = self.core_tokens + kept_history_tokens
        else:
            messages = [{"role": "system", "content": self.core_text + tail}]
            stable_prefix_messages = 0
            prefix_tokens = self.core_tokens
        ref_map = dict(sorted(ref_map.items()))
        ref_map_type = {n: ref_map_type[n] for n in ref_map}
        token_count = prefix_tokens + tail_tokens
        offered = len(mid)
        capped = order.capped
        tokens_trimmed = order.total + sum(tokens[i] for i in capped) - kept_tokens
        if end_place:
            tokens_trimmed += sum(h_tokens[:drop])
        cache_used = bool(
            self.use_caching_split and self.caps.prompt_caching and prefix_tokens >= PROVIDER_MIN_CACHE_TOKENS
        )
        strategies = []
        if drop and end_place:
            strategies.append("history_chunk_drop")
        if dropped:
            strategies.append("tier_trim")
        if capped:
            strategies.append("procedural_cap")
        if self.truncated_count:
            strategies.append("text_truncation")
        if self.compressed:
            strategies.append("preflight_compression")
        metadata: dict[str, Any] = {
            "token_count": token_count,
            "tokens_budget": budget,
            "max_tokens": max_tokens,
            "context_cap": self.context_cap,
            "model_id": self.model_id,
            "model_known": self.caps.known,
            "tokenizer": self.tokenizer.adapter.name,
            "token_count_exact": self.tokenizer.exact,
            "tokens_trimmed": tokens_trimmed,
            "segments_offered": offered,
            "segments_kept": len(kept_idx),
            "memories_offered": self.memory_count,
            "memories_kept": len(ref_map),
            "memories_truncated": self.truncated_count,
            "procedural_capped": len(capped),
            "retrieval_summary": {"offered": dict(self.offered_by_tier), "kept": kept_by_tier},
            "memory_placement": self.placement,
            "stable_prefix_messages": stable_prefix_messages,
            "history_messages_offered": len(history),
            "history_messages_dropped": drop if end_place else max(len(history) - 1, 0),
            "prompt_caching_supported": self.caps.prompt_caching,
            "prompt_cache_used": cache_used,
            "cacheable_prefix_tokens": prefix_tokens,
            "dynamic_tail_tokens": tail_tokens,
            "budget_exceeded": budget_exceeded,
            "message_overhead_tokens": TOKENS_PER_MESSAGE * len(messages) + TOKENS_REPLY_PRIMING,
            "trimming_strategies": strategies,
            "preflight_compressed": self.compressed,
        }
        metadata["billed_input_tokens"] = token_count + metadata["message_overhead_tokens"]
        result = CompileResult(messages, ref_map, ref_map_type, metadata, None, None, self, (drop, dropped))
        if self.metrics_callback is not None:
            self.metrics_callback(
                CompileMetrics(token_count, budget, tokens_trimmed, offered, len(kept_idx),
                               metadata["history_messages_dropped"], budget_exceeded,
                               (time.perf_counter() - t0) * 1000.0)
            )
        return result

    def segments(self, drop: int, dropped: int) -> list[Segment]:
        """The plan of one selection, in prompt order (built when first asked for)."""
        out = [Segment("core", self.core_text, self.core_tokens, True, message_index=0)]
        for k, m in enumerate(self.history):
            text = history_text(m)
            if self.placement == "end" and k >= drop:
                out.append(Segment("history", text, self.history_tokens[k], True))
            else:
                out.append(Segment("history", text, self.history_tokens[k], False, REASON_HISTORY_DROPPED))
        mid = self.middle
        order = self.trim
        for i in self.emission:
            truncated = mid.truncated[i]
            if order.rank[i] >= dropped:
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

    def _history_drop(self, room: int) -> int:
        """How many of the oldest history messages to drop so the rest fits ``room``:
        whole chunks, then past any tool results left without their call."""
        h = self.history_tokens
        n = len(h)
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            suffix[i] = suffix[i + 1] + h[i]
        drop = 0
        while drop < n and suffix[drop] > room:
            drop = min(drop + HISTORY_DROP_CHUNK, n)
        while drop < n and self.history[drop].get("role") in ("tool", "function"):
            drop += 1
        return drop


class ContextCompiler:
    """Compiles rules, memories, history and the current turn into provider messages.

    See ``README.md`` for the layout and the guarantees: the result never exceeds the
    budget while the rules and the current turn fit, the rules and the user message are
    always present verbatim, memories are trimmed episodic → semantic → procedural, and
    with end placement the system and history messages stay byte-identical across turns.
    """

    def __init__(
        self,
        max_tokens: int,
        model_id: str | None = None,
        core_content: str = "",
        *,
        include_interrupt_instruction: bool = True,
        memory_placement: str = "end",
        trim_history: bool = True,
        metrics_callback: Callable[[CompileMetrics], None] | None = None,
        preflight_analyst_model: str | None = None,
    ) -> None:
        self.max_tokens = _check_int("max_tokens", max_tokens)
        if model_id is not None and not isinstance(model_id, str):
            raise TypeError(f"model_id must be a str or None, got {type(model_id).__name__}")
        self.model_id = model_id
        self.core_content = _check_str("core_content", core_content, allow_none=True)
        if memory_placement not in PLACEMENTS:
            raise ValueError(f"memory_placement must be 'end' or 'system', got {memory_placement!r}")
        self.memory_placement = memory_placement
        self.include_interrupt_instruction = bool(include_interrupt_instruction)
        self.trim_history = bool(trim_history)
        self.metrics_callback = metrics_callback
        self.preflight_analyst_model = preflight_analyst_model or os.environ.get(
            "PREFLIGHT_ANALYST_MODEL", "openai/gpt-4o-mini"
        )

    # -- the budget-independent half -------------------------------------------------
    def _plan(
        self,
        memories: Any,
        user_message: str,
        conversation_messages: Any = None,
        *,
        last_assistant_turn: str | None = None,
        agent_persona_prompt: str | None = None,
        dynamic_directives: Sequence[str] | str | None = None,
        middle_extras: Sequence[tuple[str, int]] | None = None,
        tier_by_memory_id: dict[int, int] | None = None,
        use_prompt_caching_split: bool = True,
        tokenizer_registry: TokenizerRegistry | None = None,
        compressed_middle: str | None = None,
    ) -> _Plan:
        user_message = _check_str("user_message", user_message)
        last_assistant_turn = _check_str("last_assistant_turn", last_assistant_turn, allow_none=True)
        agent_persona_prompt = _check_str("agent_persona_prompt", agent_persona_prompt, allow_none=True)
        history = _validate_history(conversation_messages)
        registry = tokenizer_registry or TokenizerRegistry.get()
        choice = registry.resolve(self.model_id)
        adapter = choice.adapter
        caps = model_capabilities(self.model_id)
        placement = self.memory_placement

        core_text = build_core(self.core_content, agent_persona_prompt, self.include_interrupt_instruction)
        if placement == "system" and core_text:
            core_text += "\n\n"
        directives_text = build_directives(dynamic_directives)
        last_turn: tuple[str, str] | None = None
        if last_assistant_turn:
            last_turn = ("assistant", last_assistant_turn)
        elif placement == "system" and history:
            last_turn = (history[-1]["role"], history_text(history[-1]))
        end_text = build_end(user_message, last_turn, bool(directives_text))

        middle = _Middle()
        waiters = _validate_memories(memories, tier_by_memory_id, middle, adapter)
        memory_count = len(middle)
        truncated_count = sum(middle.truncated)
        offered_by_tier = dict.fromkeys(TIER_NAMES.values(), 0)
        for tier in middle.tiers:
            offered_by_tier[TIER_NAMES[tier]] += 1
        _validate_extras(middle_extras, middle)
        for tier in middle.tiers[memory_count:]:
            offered_by_tier[TIER_NAMES[tier]] += 1
        compressed_refs: list[tuple[int, str, str]] = []
        compressed_originals: list[Segment] = []
        if compressed_middle is not None:
            cited = set(refs_in(compressed_middle))
            for i in range(memory_count):
                ref = middle.refs[i]
                if ref in cited:
                    compressed_refs.append((ref, middle.ids[i], TIER_NAMES[middle.tiers[i]]))
                compressed_originals.append(Segment(
                    "memory", middle.lines[i], adapter.count(middle.lines[i]), False, REASON_COMPRESSED,
                    middle.tiers[i], middle.ids[i], ref, None, middle.truncated[i]))
            middle = _Middle()
            middle.add(None, None, TIER_SEMANTIC, None, one_line(compressed_middle) + "\n", False, "memory")
        if compressed_middle is None:
            tokens = [n for wait in waiters for n in wait()]
            tokens += adapter.count_many(middle.lines[memory_count:])
        else:
            for wait in waiters:
                wait()
            tokens = adapter.count_many(middle.lines)
        trim = TrimOrder(middle.tiers, tokens, middle.scores)
        # Prompt order: by tier; inside a tier, input order (memories before extras).
        emission = sorted(range(len(middle)), key=middle.tiers.__getitem__)

        history_tokens = [message_tokens(m, adapter) for m in history]
        return _Plan(
            placement=placement,
            model_id=self.model_id,
            caps=caps,
            context_cap=caps.context_cap,
            tokenizer=choice,
            trim_history=self.trim_history,
            use_caching_split=bool(use_prompt_caching_split),
            metrics_callback=self.metrics_callback,
            core_text=core_text,
            core_tokens=adapter.count(core_text) if core_text else 0,
            end_text=end_text,
            end_tokens=adapter.count(end_text),
            directives_text=directives_text,
            directives_tokens=adapter.count(directives_text) if directives_text else 0,
            history=history,
            history_tokens=history_tokens,
            middle=middle,
            trim=trim,
            emission=emission,
            memory_count=memory_count,
            truncated_count=truncated_count,
            offered_by_tier=offered_by_tier,
            compressed=compressed_middle is not None,
            compressed_refs=compressed_refs,
            compressed_originals=compressed_originals,
        )

    # -- public API ------------------------------------------------------------------
    def compile(
        self,
        memories: Any = None,
        user_message: str = "",
        conversation_messages: Any = None,
        *,
        last_assistant_turn: str | None = None,
        agent_persona_prompt: str | None = None,
        dynamic_directives: Sequence[str] | str | None = None,
        middle_extras: Sequence[tuple[str, int]] | None = None,
        tier_by_memory_id: dict[int, int] | None = None,
        use_prompt_caching_split: bool = True,
        compress_sync: Compressor | None = None,
        tokenizer_registry: TokenizerRegistry | None = None,
        max_tokens: int | None = None,
    ) -> CompileResult:
        """Compile one request. ``max_tokens`` overrides the compiler's budget for this call."""
        kwargs = dict(
            last_assistant_turn=last_assistant_turn,
            agent_persona_prompt=agent_persona_prompt,
            dynamic_directives=dynamic_directives,
            middle_extras=middle_extras,
            tier_by_memory_id=tier_by_memory_id,
            use_prompt_caching_split=use_prompt_caching_split,
            tokenizer_registry=tokenizer_registry,
        )
        plan = self._plan(memories, user_message, conversation_messages, **kwargs)
        if compress_sync is not None:
            raw = self._needs_compression(plan)
            if raw is not None:
                compressed = compress_sync(raw, _env_int("MEMORY_PREFLIGHT_TARGET_TOKENS", 500), user_message)
                plan = self._plan(memories, user_message, conversation_messages, compressed_middle=
                                  _check_str("compressor result", compressed), **kwargs)
        return self._finish(plan, max_tokens)

    async def compile_async(
        self,
        memories: Any = None,
        user_message: str = "",
        conversation_messages: Any = None,
        *,
        compress_async: AsyncCompressor | None = None,
        compress_fn: AsyncCompressor | None = None,
        **kwargs: Any,
    ) -> CompileResult:
        """As :meth:`compile`, with an async pre-flight compressor."""
        compressor = compress_async or compress_fn
        max_tokens = kwargs.pop("max_tokens", None)
        compress_sync = kwargs.pop("compress_sync", None)
        plan = self._plan(memories, user_message, conversation_messages, **kwargs)
        raw = self._needs_compression(plan) if (compressor or compress_sync) else None
        if raw is not None:
            target = _env_int("MEMORY_PREFLIGHT_TARGET_TOKENS", 500)
            if compressor is not None:
                compressed = await compressor(raw, target, user_message)
            else:
                compressed = await asyncio.to_thread(compress_sync, raw, target, user_message)
            plan = self._plan(memories, user_message, conversation_messages,
                              compressed_middle=_check_str("compressor result", compressed), **kwargs)
        return self._finish(plan, max_tokens)

    def estimate(self, memories: Any = None, user_message: str = "", conversation_messages: Any = None, *,
                 price_per_1k_input_tokens: float, **kwargs: Any) -> Quote:
        """Compile and quote the input side: tokens × price per 1,000 input tokens."""
        price = price_per_1k_input_tokens
        if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
            raise ValueError(f"price_per_1k_input_tokens must be a non-negative number, got {price!r}")
        result = self.compile(memories, user_message, conversation_messages, **kwargs)
        return quote_for(result, float(price))

    def _needs_compression(self, plan: _Plan) -> str | None:
        threshold = _env_int("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", 8000)
        if plan.trim.total + sum(plan.trim.tokens[i] for i in plan.trim.capped) <= threshold:
            return None
        return "".join(plan.middle.lines[i] for i in plan.emission)

    def _finish(self, plan: _Plan, max_tokens: int | None) -> CompileResult:
        result = plan.select(self.max_tokens if max_tokens is None else max_tokens)
        if plan.compressed:
            result = _with_compression(result, plan)
        return result


def _with_compression(result: CompileResult, plan: _Plan) -> CompileResult:
    """After pre-flight compression the ref map follows the citations the summary kept."""
    summary_kept = result.metadata["segments_kept"] > 0
    result.ref_map = {ref: rid for ref, rid, _ in plan.compressed_refs} if summary_kept else {}
    result.ref_map_type = {ref: t for ref, _, t in plan.compressed_refs} if summary_kept else {}
    result.metadata["memories_kept"] = len(result.ref_map)
    return result


def quote_for(result: CompileResult, price_per_1k_input_tokens: float) -> Quote:
    md = result.metadata
    billed = md["billed_input_tokens"]
    cost = round(billed / 1000.0 * price_per_1k_input_tokens, 8)
    return Quote(md["token_count"], billed, price_per_1k_input_tokens, cost, list(md["trimming_strategies"]),
                 result)
