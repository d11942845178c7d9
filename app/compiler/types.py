"""The compiler's records: memories in, segments and results out."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Protocol

TIER_PROCEDURAL = 1
TIER_SEMANTIC = 2
TIER_EPISODIC = 3

TIER_NAMES = {TIER_PROCEDURAL: "procedural", TIER_SEMANTIC: "semantic", TIER_EPISODIC: "episodic"}
TIER_BY_NAME = {name: tier for tier, name in TIER_NAMES.items()}

# Regions of a compiled prompt, in the order they appear with end placement.
REGIONS = ("core", "history", "memory", "extra", "end", "directives")

# Why a segment is not (wholly) in the prompt.
REASON_OVER_BUDGET = "over_budget"
REASON_PROCEDURAL_CAP = "procedural_cap"
REASON_HISTORY_DROPPED = "history_dropped"
REASON_TEXT_TRUNCATED = "text_truncated"
REASON_COMPRESSED = "compressed"
REASON_DUPLICATE = "near_duplicate"


@dataclass(slots=True)
class MemoryItem:
    """One retrieved memory offered to the compiler.

    ``priority`` is the tier (1 procedural, 2 semantic, 3 episodic); when omitted it
    follows ``memory_type``. ``score`` ranks memories inside a tier: the lowest score is
    trimmed first. ``kind`` is the label shown in the prompt (``fact``, ``lesson``...);
    it defaults to the memory type.
    """

    id: str
    content: str
    memory_type: str = "semantic"
    priority: int | None = None
    score: float | None = None
    kind: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def memory_kind(self) -> str:
        return self.memory_type


@dataclass(frozen=True, slots=True)
class SemanticMemory:
    """A subject–predicate–object fact."""

    id: str
    subject: str
    predicate: str
    object: str
    memory_kind: str = "semantic"

    @property
    def content(self) -> str:
        return f"{self.subject} {self.predicate.replace('_', ' ')} {self.object}"


@dataclass(frozen=True, slots=True)
class EpisodicMemory:
    """Something that happened."""

    id: str
    content: str
    memory_kind: str = "episodic"


@dataclass(frozen=True, slots=True)
class ProceduralMemory:
    """How to do something, as text or as steps."""

    id: str
    content: str = ""
    steps: tuple[str, ...] = ()
    memory_kind: str = "procedural"

    def __post_init__(self) -> None:
        if not self.content and self.steps:
            object.__setattr__(self, "content", "; ".join(f"{i}. {s}" for i, s in enumerate(self.steps, 1)))


@dataclass(frozen=True, slots=True)
class Segment:
    """One piece of the compiled prompt, kept or trimmed, as the inspector draws it.

    ``text`` is exactly what the piece contributes to its message, including the
    newline that separates it from the next piece, so the ``tokens`` of the kept
    segments add up to the prompt's ``token_count``.
    """

    region: str
    text: str
    tokens: int
    kept: bool
    reason: str | None = None
    tier: int | None = None
    record_id: str | None = None
    ref: int | None = None
    message_index: int | None = None
    truncated: bool = False
    # A near-duplicate: the kept memory it repeats, and the cosine of their vectors.
    duplicate_of: str | None = None
    similarity: float | None = None

    @property
    def why(self) -> str | None:
        """The reason as a person reads it."""
        if self.reason == REASON_DUPLICATE and self.duplicate_of is not None:
            return f"near-duplicate of {self.duplicate_of} (cosine {self.similarity:.2f}): sent once"
        return self.reason.replace("_", " ") if self.reason else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tier_name"] = TIER_NAMES.get(self.tier) if self.tier else None
        d["why"] = self.why
        return d


class Plan(Protocol):
    """What a result needs of the compile plan behind it (see :mod:`.plan`)."""

    core_text: str
    end_text: str
    directives_text: str

    def select(self, max_tokens: int) -> CompileResult: ...

    def segments(self, selection: Any) -> list[Segment]: ...


class CompileResult:
    """A compiled prompt: ``messages`` to send, the ``ref_map`` from ``[Mem:N]`` to record
    ids, ``metadata`` about tokens, trimming and caching, and ``segments``, the plan
    behind the prompt (built when first read)."""

    def __init__(self, messages: list[dict[str, Any]], ref_map: dict[int, str], ref_map_type: dict[int, str],
                 metadata: dict[str, Any], segments: list[Segment] | None = None,
                 debug_trace: dict[str, Any] | None = None, plan: Plan | None = None,
                 selection: Any = None) -> None:
        self.messages = messages
        self.ref_map = ref_map
        self.ref_map_type = ref_map_type
        self.metadata = metadata
        self.debug_trace = debug_trace
        self._plan = plan
        self._selection = selection
        if segments is not None:
            self.segments = segments  # given: the cached property is not worked out

    @cached_property
    def segments(self) -> list[Segment]:
        """Every segment of the plan, worked out when first read."""
        return self._plan.segments(self._selection) if self._plan is not None else []

    @property
    def rules_text(self) -> str | None:
        """The rules at the start of the prompt (the core), when the plan is known."""
        return None if self._plan is None else self._plan.core_text

    @property
    def turn_text(self) -> str | None:
        """The text the prompt ends with — the last turn, the current user message and
        the directives — when the plan is known."""
        return None if self._plan is None else self._plan.end_text + self._plan.directives_text

    def __repr__(self) -> str:
        return (f"CompileResult(messages={len(self.messages)}, ref_map={self.ref_map!r}, "
                f"token_count={self.metadata.get('token_count')})")

    def rebudget(self, max_tokens: int) -> CompileResult:
        """The same inputs compiled at another budget, re-selected from the token counts
        this compile already holds (no text is tokenized again)."""
        if self._plan is None:
            raise ValueError("this result holds no compile plan to re-budget")
        return self._plan.select(max_tokens)

    @property
    def token_count(self) -> int:
        return self.metadata["token_count"]

    def to_debug_dict(self) -> dict[str, Any]:
        """A JSON-friendly snapshot: messages, ref map, metadata and segments."""
        return {
            "messages": self.messages,
            "ref_map": {str(k): v for k, v in self.ref_map.items()},
            "ref_map_type": {str(k): v for k, v in self.ref_map_type.items()},
            "metadata": self.metadata,
            "segments": [s.to_dict() for s in self.segments],
            "debug_trace": self.debug_trace,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_debug_dict(), ensure_ascii=False, indent=indent)


@dataclass(frozen=True)
class CompileMetrics:
    """What a metrics callback receives: counts only, never prompt text."""

    token_count: int
    tokens_budget: int
    tokens_trimmed: int
    segments_offered: int
    segments_kept: int
    history_messages_dropped: int
    budget_exceeded: bool
    elapsed_ms: float


@dataclass(frozen=True)
class Quote:
    """An input-side cost estimate with the compile it came from."""

    total_tokens: int
    billed_tokens: int
    price_per_1k_input_tokens: float
    estimated_cost_usd: float
    trimming_strategies: list[str]
    compile_result: CompileResult
