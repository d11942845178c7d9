"""ContextCompiler: rules, memories, history and the current turn → a prompt that fits.

A compile runs in two halves. The first (:meth:`ContextCompiler._plan`) validates the
inputs, lays out every piece of text and counts its tokens once, into a
:class:`~.plan.PromptPlan`. The second (:meth:`PromptPlan.select`) picks what fits a
budget. A :class:`CompileResult` keeps its plan, so the same inputs can be re-selected at
another budget without tokenizing again.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import os
from collections.abc import Awaitable, Callable, Sequence
from operator import eq
from typing import Any

from .attention import Embed, embed_texts, measure_attention_shift, user_texts
from .billing import count_message_tokens, message_overhead, message_tokens
from .capabilities import model_capabilities
from .dedup import Differ, check_cosine, dedup_threshold, near_duplicates
from .firewall import TrimOrder
from .layout import (
    as_line,
    build_core,
    build_directives,
    build_end,
    history_text,
    memory_lines,
    middle_line,
    neutralise,
    refs_in,
    text_caps,
    tier_of,
)
from .plan import Middle, PromptPlan, check_budget, plan_frame_overhead
from .profiles import get_profile
from .tokenizers import TokenizerRegistry
from .types import (
    REASON_COMPRESSED,
    TIER_BY_NAME,
    TIER_NAMES,
    TIER_SEMANTIC,
    CompileMetrics,
    CompileResult,
    MemoryItem,
    Quote,
    Segment,
)

__all__ = ["ContextCompiler", "count_message_tokens", "quote_for"]

PLACEMENTS = ("end", "system")
HISTORY_ROLES = ("system", "developer", "user", "assistant", "tool", "function")

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


def _check_str(name: str, value: Any, *, allow_none: bool = False) -> str:
    if value is None and allow_none:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _check_bool(name: str, value: Any) -> bool:
    # numpy booleans are fine; "no" or 0 are not: a wrong type must not read as True.
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError(f"{name} must be true or false, got {type(value).__name__} {value!r}")


def _validate_history(messages: Any) -> list[dict[str, Any]]:
    """The history as it will be sent: checked, with markers in its text neutralised
    (a message without any is passed on as the same object)."""
    if messages is None:
        return []
    if not isinstance(messages, (list, tuple)):
        raise TypeError(f"conversation_messages must be a list of messages, got {type(messages).__name__}")
    out = []
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
                if "text" in part and not isinstance(part["text"], str):
                    raise TypeError(f"{where}.content[{j}].text must be a str, got {type(part['text']).__name__}")
        elif not isinstance(content, str):
            raise TypeError(f"{where}.content must be a str or a list of content parts, got {type(content).__name__}")
        out.append(_neutral_message(m))
    return out


def _neutral_message(m: dict[str, Any]) -> dict[str, Any]:
    content = m.get("content")
    if isinstance(content, str):
        safe = neutralise(content)
        return m if safe == content else {**m, "content": safe}
    if isinstance(content, list):
        parts = [{**p, "text": neutralise(p["text"])} if isinstance(p.get("text"), str) else p for p in content]
        return m if parts == content else {**m, "content": parts}
    return m


def _bad(where: str, what: str, value: Any, exc: type[Exception] = TypeError) -> Exception:
    return exc(f"{where} {what}, got {type(value).__name__} {value!r}"[:300])


def _read_memory(i: int, mem: Any, override: Any, seen: dict[str, int]) -> tuple[str, str, int, float | None, Any]:
    """(id, content, tier, score, kind) of memories[i], or an error naming the field."""
    where = f"memories[{i}]"
    if type(mem) is MemoryItem:
        rid, content, score, kind = mem.id, mem.content, mem.score, mem.kind
    else:
        if not hasattr(mem, "id"):
            raise TypeError(f"{where} must be a MemoryItem or have an 'id', got {type(mem).__name__}")
        rid = mem.id
        content = getattr(mem, "content", None)
        if content is None:
            content = getattr(mem, "text", None)
        score = getattr(mem, "score", None)
        kind = getattr(mem, "kind", None)
    if type(rid) is not str:
        if isinstance(rid, numbers.Integral) and not isinstance(rid, bool):
            rid = str(int(rid))
        else:
            raise _bad(f"{where}.id", "must be a str", rid)
    if not rid or rid.isspace():
        raise ValueError(f"{where}.id is empty; every memory needs an id to cite")
    if rid in seen:
        raise ValueError(f"{where}.id {rid!r} is a duplicate of memories[{seen[rid]}].id")
    if type(content) is not str:
        raise TypeError(f"{where}.content must be a str, got {type(content).__name__}")
    if score is not None and type(score) is not float:
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise _bad(f"{where}.score", "must be a number or None", score)
        score = float(score)
    if score is not None and math.isnan(score):
        raise ValueError(f"{where}.score must be a number, got nan")
    if kind is not None and type(kind) is not str:
        raise _bad(f"{where}.kind", "must be a str or None", kind)
    field = "tier_by_memory_id entry" if override is not None else "priority"
    return rid, content, tier_of(mem, override, f"{where}.{field}"), score, kind


def _read_memories(memories: Any, tier_by_memory_id: dict[int, int] | None, middle: Middle) -> list[str]:
    """Check every memory and lay out its line into ``middle``; returns their texts."""
    if memories is None:
        return []
    if isinstance(memories, (str, bytes)) or not hasattr(memories, "__iter__"):
        raise TypeError(f"memories must be a list of MemoryItem, got {type(memories).__name__}")
    memories = memories if type(memories) is list else list(memories)
    if not memories:
        return []
    columns = None if tier_by_memory_id else _plain_columns(memories)
    if columns is None:
        columns = _checked_columns(memories, tier_by_memory_id or {})
    ids, contents, tiers, scores, kinds = columns
    lines, truncated = memory_lines(contents, tiers, kinds, text_caps())
    n = len(lines)
    middle.ids, middle.refs, middle.tiers, middle.scores = ids, list(range(1, n + 1)), tiers, scores
    middle.lines, middle.truncated, middle.regions = lines, truncated, ["memory"] * n
    return contents


def _plain_columns(memories: list) -> tuple[list, ...] | None:
    """(ids, contents, tiers, scores, kinds) when every memory is a plain MemoryItem with
    ordinary values, checked a column at a time; None when any needs :func:`_read_memory`
    (which converts, or names what is wrong)."""
    if set(map(type, memories)) != {MemoryItem}:
        return None
    ids = [m.id for m in memories]
    contents = [m.content for m in memories]
    tiers = [m.priority for m in memories]
    scores = [m.score for m in memories]
    kinds = [m.kind for m in memories]
    if None in tiers:
        tiers = [TIER_BY_NAME.get(m.memory_type) if t is None else t for t, m in zip(tiers, memories)]
    plain = (set(map(type, ids)) == {str} and set(map(type, contents)) == {str}
             and set(map(type, tiers)) == {int} and set(tiers) <= TIER_NAMES.keys()
             and set(map(type, scores)) <= _SCORE_TYPES and all(map(eq, scores, scores))  # no nan
             and set(map(type, kinds)) <= _KIND_TYPES
             and len(set(ids)) == len(ids) and all(ids) and not any(map(str.isspace, ids)))
    return (ids, contents, tiers, scores, kinds) if plain else None


_SCORE_TYPES = {float, type(None)}
_KIND_TYPES = {str, type(None)}


def _checked_columns(memories: list, overrides: dict[int, int]) -> tuple[list, ...]:
    """The columns of :func:`_plain_columns`, one memory at a time through
    :func:`_read_memory`."""
    seen: dict[str, int] = {}
    rows = []
    for i, mem in enumerate(memories):
        row = _read_memory(i, mem, overrides.get(id(mem)) if overrides else None, seen)
        seen[row[0]] = i
        rows.append(row)
    return tuple(map(list, zip(*rows)))


def _read_extras(extras: Any, middle: Middle) -> None:
    if not extras:
        return
    if isinstance(extras, (str, bytes)) or not hasattr(extras, "__iter__"):
        raise TypeError(f"middle_extras must be a list of (text, tier) pairs, got {type(extras).__name__}")
    for j, item in enumerate(extras):
        where = f"middle_extras[{j}]"
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"{where} must be a (text, tier) pair")
        text, tier = item
        if not isinstance(text, str):
            raise TypeError(f"{where} text must be a str, got {type(text).__name__}")
        if tier is None:
            raise ValueError(f"{where} tier must be 1, 2 or 3, got None")
        tier = tier_of(None, tier, f"{where} tier")
        line = middle_line(text)
        if line:
            middle.add(None, None, tier, None, line, False, "extra")


class ContextCompiler:
    """Compiles rules, memories, history and the current turn into provider messages.

    See ``docs/compiler.md`` for the layout and the guarantees: the result never exceeds the
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
        reserve_output_tokens: int | None = None,
        semantic_dedup: bool = False,
        dedup_threshold: float | None = None,
    ) -> None:
        self.max_tokens = check_budget("max_tokens", max_tokens)
        if model_id is not None and not isinstance(model_id, str):
            raise TypeError(f"model_id must be a str or None, got {type(model_id).__name__}")
        self.model_id = model_id
        self.core_content = _check_str("core_content", core_content, allow_none=True)
        if memory_placement not in PLACEMENTS:
            raise ValueError(f"memory_placement must be 'end' or 'system', got {memory_placement!r}")
        self.memory_placement = memory_placement
        self.include_interrupt_instruction = _check_bool("include_interrupt_instruction",
                                                         include_interrupt_instruction)
        self.trim_history = _check_bool("trim_history", trim_history)
        self.metrics_callback = metrics_callback
        self.preflight_analyst_model = preflight_analyst_model or os.environ.get(
            "PREFLIGHT_ANALYST_MODEL", "openai/gpt-4o-mini"
        )
        self.reserve_output_tokens = self._reserve(reserve_output_tokens)
        # Needs the memories' vectors (an embedder or memory_vectors at compile time).
        self.semantic_dedup = _check_bool("semantic_dedup", semantic_dedup)
        self.dedup_threshold = None if dedup_threshold is None else check_cosine(dedup_threshold)

    @classmethod
    def from_profile(cls, profile: str, max_tokens: int, model_id: str | None = None, core_content: str = "",
                     **options: Any) -> ContextCompiler:
        """A compiler with the options of ``profile`` (minimal, coding, conversational;
        see :mod:`.profiles`); options given here win over the profile's."""
        return cls(max_tokens, model_id, core_content, **{**get_profile(profile).options_for(model_id), **options})

    def _reserve(self, reserve: Any) -> int | None:
        """The output reserve: given, else the capability map's for the model."""
        caps = model_capabilities(self.model_id)
        if reserve is None:
            return caps.reserve_output_tokens
        if isinstance(reserve, bool) or not isinstance(reserve, numbers.Integral) or reserve < 0:
            raise _bad("reserve_output_tokens", "must be a whole number of tokens >= 0", reserve, ValueError)
        reserve = int(reserve)
        if caps.context_cap is not None and reserve >= caps.context_cap:
            raise ValueError(f"reserve_output_tokens {reserve} leaves no room for the prompt in "
                             f"{caps.model_id}'s {caps.context_cap:,}-token window")
        return reserve

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
        debug_trace: bool = False,
        compressed_middle: str | None = None,
        embed: Embed | None = None,
        memory_vectors: Any = None,
        differ: Differ | None = None,
    ) -> PromptPlan:
        user_message = _check_str("user_message", user_message)
        last_assistant_turn = _check_str("last_assistant_turn", last_assistant_turn, allow_none=True)
        agent_persona_prompt = _check_str("agent_persona_prompt", agent_persona_prompt, allow_none=True)
        use_caching_split = _check_bool("use_prompt_caching_split", use_prompt_caching_split)
        debug = _check_bool("debug_trace", debug_trace)
        history = _validate_history(conversation_messages)
        registry = tokenizer_registry or TokenizerRegistry.get()
        choice = registry.resolve(self.model_id)
        adapter = choice.adapter
        placement = self.memory_placement

        core_text = build_core(self.core_content, agent_persona_prompt, self.include_interrupt_instruction,
                               placement)
        if placement == "system" and core_text:
            core_text += "\n\n"
        directives_text = build_directives(dynamic_directives)
        last_turn: tuple[str, str] | None = None
        if last_assistant_turn:
            last_turn = ("assistant", neutralise(last_assistant_turn))
        elif placement == "system" and history:
            last_turn = (history[-1]["role"], history_text(history[-1]))
        end_text = build_end(user_message, last_turn, bool(directives_text))

        middle = Middle()
        contents = _read_memories(memories, tier_by_memory_id, middle)
        memory_count = len(middle)
        duplicates, threshold = {}, None
        if (self.semantic_dedup and compressed_middle is None
                and (embed is not None or memory_vectors is not None)):
            threshold = self.dedup_threshold or dedup_threshold()
            if memory_count > 1:
                vectors = memory_vectors if memory_vectors is not None else embed_texts(embed, contents,
                                                                                        "the memories")
                duplicates = near_duplicates(vectors, contents, middle.tiers, middle.scores, threshold, differ)
        shift = None
        if embed is not None:
            shift = measure_attention_shift(user_texts(history), user_message, embed=embed)
        truncated_count = sum(middle.truncated)
        _read_extras(middle_extras, middle)
        offered_by_tier = {name: middle.tiers.count(tier) for tier, name in TIER_NAMES.items()}
        compressed_refs: list[tuple[int, str, str]] = []
        compressed_originals: list[Segment] = []
        if compressed_middle is not None:
            cited = set(refs_in(compressed_middle))
            counts = adapter.count_many(middle.lines[:memory_count])
            for i in range(memory_count):
                ref = middle.refs[i]
                if ref in cited:
                    compressed_refs.append((ref, middle.ids[i], TIER_NAMES[middle.tiers[i]]))
                compressed_originals.append(Segment(
                    "memory", middle.lines[i], counts[i], False, REASON_COMPRESSED,
                    middle.tiers[i], middle.ids[i], ref, None, middle.truncated[i]))
            middle = Middle()
            middle.add(None, None, TIER_SEMANTIC, None, as_line(compressed_middle), False, "memory")
        tokens = adapter.count_many(middle.lines)
        # Prompt order: by tier; inside a tier, input order (memories before extras).
        emission = sorted(range(len(middle)), key=middle.tiers.__getitem__)

        def overhead(m: dict[str, Any]) -> int:
            return message_overhead(m, adapter)

        return PromptPlan(
            placement=placement,
            model_id=self.model_id,
            caps=model_capabilities(self.model_id),
            tokenizer=choice,
            reserve_output_tokens=self.reserve_output_tokens,
            trim_history=self.trim_history,
            use_caching_split=use_caching_split,
            metrics_callback=self.metrics_callback,
            debug=debug,
            core_text=core_text,
            core_tokens=adapter.count(core_text) if core_text else 0,
            end_text=end_text,
            end_tokens=adapter.count(end_text),
            directives_text=directives_text,
            directives_tokens=adapter.count(directives_text) if directives_text else 0,
            history=history,
            history_tokens=[message_tokens(m, adapter) for m in history],
            history_overhead=[overhead(m) for m in history],
            frame_overhead=plan_frame_overhead(placement, overhead),
            middle=middle,
            trim=TrimOrder(middle.tiers, tokens, middle.scores, frozenset(duplicates)),
            emission=emission,
            memory_count=memory_count,
            truncated_count=truncated_count,
            offered_by_tier=offered_by_tier,
            compressed=compressed_middle is not None,
            compressed_refs=compressed_refs,
            compressed_originals=compressed_originals,
            duplicates=duplicates,
            dedup_threshold=threshold,
            attention_shift=shift,
            embedded=embed is not None,
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
        debug_trace: bool = False,
        max_tokens: int | None = None,
        embed: Embed | None = None,
        memory_vectors: Any = None,
        differ: Differ | None = None,
    ) -> CompileResult:
        """Compile one request. ``max_tokens`` overrides the compiler's budget for this call;
        ``debug_trace=True`` fills ``result.debug_trace`` with the ranking behind the trim.

        ``embed`` (``list[str] -> array`` of unit rows) lets the compile measure the topic
        shift of the user message (``metadata["attention_shift"]``) and, with
        ``semantic_dedup``, drop near-duplicate memories; ``memory_vectors`` (one row per
        memory, in input order) spares embedding the memories again; ``differ(a, b)``
        replaces :func:`~.dedup.differ_in_fact` as what keeps two close memories apart."""
        kwargs = dict(
            embed=embed,
            memory_vectors=memory_vectors,
            differ=differ,
            last_assistant_turn=last_assistant_turn,
            agent_persona_prompt=agent_persona_prompt,
            dynamic_directives=dynamic_directives,
            middle_extras=middle_extras,
            tier_by_memory_id=tier_by_memory_id,
            use_prompt_caching_split=use_prompt_caching_split,
            tokenizer_registry=tokenizer_registry,
            debug_trace=debug_trace,
        )
        plan = self._plan(memories, user_message, conversation_messages, **kwargs)
        if compress_sync is not None:
            raw = self._needs_compression(plan)
            if raw is not None:
                compressed = compress_sync(raw, _env_int("MEMORY_PREFLIGHT_TARGET_TOKENS", 500), user_message)
                plan = self._plan(memories, user_message, conversation_messages, compressed_middle=
                                  _check_str("compressor result", compressed), **kwargs)
        return plan.select(self.max_tokens if max_tokens is None else max_tokens)

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
        return plan.select(self.max_tokens if max_tokens is None else max_tokens)

    def estimate(self, memories: Any = None, user_message: str = "", conversation_messages: Any = None, *,
                 price_per_1k_input_tokens: float, **kwargs: Any) -> Quote:
        """Compile and quote the input side: billed tokens × price per 1,000 input tokens."""
        check_price(price_per_1k_input_tokens)
        result = self.compile(memories, user_message, conversation_messages, **kwargs)
        return quote_for(result, price_per_1k_input_tokens)

    def _needs_compression(self, plan: PromptPlan) -> str | None:
        threshold = _env_int("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", 8000)
        if plan.trim.total + sum(plan.trim.tokens[i] for i in plan.trim.capped) <= threshold:
            return None
        return "".join(plan.middle.lines[i] for i in plan.emission if i not in plan.duplicates)


def check_price(price: Any) -> float:
    """A price per 1,000 input tokens: a finite number, not negative."""
    if isinstance(price, bool) or not isinstance(price, numbers.Real):
        raise TypeError(f"price_per_1k_input_tokens must be a number, got {type(price).__name__} {price!r}")
    if not math.isfinite(price) or price < 0:
        raise ValueError(f"price_per_1k_input_tokens must be a finite number >= 0, got {price!r}")
    return float(price)


def quote_for(result: CompileResult, price_per_1k_input_tokens: float) -> Quote:
    """The input-side cost of a compiled prompt: its billed tokens at the given price."""
    price = check_price(price_per_1k_input_tokens)
    md = result.metadata
    billed = md["billed_input_tokens"]
    cost = round(billed / 1000.0 * price, 8)
    return Quote(md["token_count"], billed, price, cost, list(md["trimming_strategies"]), result)
