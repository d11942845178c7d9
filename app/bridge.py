"""The bridge from the store to the compiler: recalled memories become MemoryItems.

Kind decides the tier (fact and lesson: semantic; skill: procedural; reflection and
event: episodic, as DESIGN.md fixes it), the recall score ranks memories inside a tier,
and a redacted or archived memory never enters a prompt. Used by the inspector's live
preview and by ``mnemoscope preview``; recalling for a preview never writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnemoscope.store import MemoryStore
from mnemoscope.store.recall import Hit

from .compiler import TIER_EPISODIC, TIER_NAMES, TIER_PROCEDURAL, TIER_SEMANTIC, ContextCompiler, MemoryItem
from .compiler.capabilities import DEFAULT_MAX_TOKENS, DEFAULT_MODEL
from .compiler.types import CompileResult

TIER_BY_KIND = {
    "fact": TIER_SEMANTIC,
    "lesson": TIER_SEMANTIC,
    "skill": TIER_PROCEDURAL,
    "reflection": TIER_EPISODIC,
    "event": TIER_EPISODIC,
}
DEFAULT_K = 20  # memories recalled for a prompt
DEFAULT_RULES = (
    "You are the user's long-term assistant. Use the memories below when they help, cite each one you use "
    "as [Mem:N], and say so plainly when you do not know something."
)


def memory_items(hits: list[Hit]) -> list[MemoryItem]:
    """MemoryItems for the hits that may enter a prompt (never redacted or archived ones)."""
    items = []
    for h in hits:
        if h.redacted or h.text is None or h.layer == "archived":
            continue
        tier = TIER_BY_KIND[h.kind]
        items.append(MemoryItem(id=h.id, content=h.text, memory_type=TIER_NAMES[tier], priority=tier,
                                score=h.score, kind=h.kind))
    return items


@dataclass
class PreviewRequest:
    user_message: str
    history: list[dict[str, Any]] = field(default_factory=list)
    model_id: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    placement: str = "end"
    rules: str = DEFAULT_RULES
    k: int = DEFAULT_K
    scope: str = "global"
    trust: str = "medium"


@dataclass
class Preview:
    request: PreviewRequest
    hits: list[Hit]
    items: list[MemoryItem]
    result: CompileResult


def recall_for(store: MemoryStore, request: PreviewRequest, now: Any = None) -> tuple[list[Hit], list[MemoryItem]]:
    hits = store.recall(request.user_message, k=request.k, scope=request.scope, trust=request.trust, now=now)
    return hits, memory_items(hits)


def compile_items(request: PreviewRequest, items: list[MemoryItem]) -> CompileResult:
    compiler = ContextCompiler(max_tokens=request.max_tokens, model_id=request.model_id, core_content=request.rules,
                               memory_placement=request.placement)
    return compiler.compile(items, request.user_message, request.history)


def preview(store: MemoryStore, request: PreviewRequest, now: Any = None) -> Preview:
    """Recall for the user message (without writing) and compile the prompt."""
    hits, items = recall_for(store, request, now)
    return Preview(request, hits, items, compile_items(request, items))
