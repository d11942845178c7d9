"""The bridge from the store to the compiler: recalled memories become MemoryItems.

Kind decides the tier (fact and lesson: semantic; skill: procedural; reflection and
event: episodic, as DESIGN.md fixes it), the recall score ranks memories inside a tier,
and a redacted or archived memory never enters a prompt. Used by the inspector's live
preview and by ``mnemoscope preview``; recalling for a preview never writes.

The compiler never imports the store: :func:`compile_for` hands it the store's embedder
as a plain ``embed`` callable (topic shift, de-duplication) and the stored vectors of the
recalled memories, when the store has them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mnemoscope.store import MemoryStore
from mnemoscope.store.curation.duplicates import (
    difference as store_difference,  # so both de-duplications agree
)
from mnemoscope.store.recall.ranking import Hit

from .compiler import (
    TIER_EPISODIC,
    TIER_NAMES,
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    ContextCompiler,
    MemoryItem,
    get_profile,
)
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
        items.append(MemoryItem(id=h.id, content=with_subject(h.text, h.entities), memory_type=TIER_NAMES[tier],
                                priority=tier, score=h.score, kind=h.kind))
    return items


def with_subject(text: str, entities: list[str]) -> str:
    """The text a prompt carries of a memory: as stored, or, when it names entities and
    says none of their names ("Speaks Portuguese and English", an imported observation of
    Zoë Müller), led by the first: "Zoë Müller: Speaks Portuguese and English". Whom a
    memory is about is in its links; a prompt has only its text. The stored text (what
    the source said) is not changed."""
    if not entities:
        return text
    words = set(re.findall(r"\w+", text.casefold()))
    low = text.casefold()
    for name in entities:  # the name, or a word of it ("Mara" of Mara Lindqvist), is there
        if name.casefold() in low or any(len(w) > 2 and w in words for w in re.findall(r"\w+", name.casefold())):
            return text
    return f"{entities[0]}: {text}"


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
    profile: str = "minimal"  # coding and conversational de-duplicate by meaning


@dataclass
class Preview:
    request: PreviewRequest
    hits: list[Hit]
    items: list[MemoryItem]
    result: CompileResult


def recall_for(store: MemoryStore, request: PreviewRequest, now: Any = None, *,
               explain: bool = False) -> tuple[list[Hit], list[MemoryItem]]:
    """Recall for the request's message (writing nothing); ``explain``: each hit says why."""
    hits = store.recall(request.user_message, k=request.k, scope=request.scope, trust=request.trust, now=now,
                        explain=explain)
    return hits, memory_items(hits)


def compile_items(request: PreviewRequest, items: list[MemoryItem], *, embed: Callable | None = None,
                  memory_vectors: Any = None) -> CompileResult:
    compiler = ContextCompiler.from_profile(request.profile, request.max_tokens, request.model_id, request.rules,
                                            memory_placement=request.placement)
    return compiler.compile(items, request.user_message, request.history, embed=embed,
                            memory_vectors=memory_vectors, differ=store_difference)


class EmbedderFailed(Exception):
    """The store's embedder failed while a compile used it."""


def store_embed(store: MemoryStore) -> Callable[[list[str]], np.ndarray] | None:
    """The store's embedder as the compiler's ``embed`` callable, or None without one."""
    embedder = getattr(store, "embedder", None)
    if embedder is None:
        return None

    def embed(texts: list[str]) -> np.ndarray:
        try:
            return embedder.embed(texts)
        except Exception as exc:  # whatever a model or an endpoint raises: the compile goes on without it
            raise EmbedderFailed(f"{getattr(embedder, 'id', 'the embedder')}: {exc}") from exc

    return embed


def stored_vectors(store: MemoryStore, items: list[MemoryItem]) -> np.ndarray | None:
    """The stored vectors of ``items``, in their order, when every one has one."""
    if not items or not hasattr(store, "vectors"):
        return None
    ids, vectors = store.vectors([m.id for m in items])
    row = {rid: i for i, rid in enumerate(ids)}
    if any(m.id not in row for m in items):
        return None  # not all embedded yet: the compile embeds them itself
    return np.asarray(vectors)[[row[m.id] for m in items]]


def compile_for(store: MemoryStore, request: PreviewRequest, items: list[MemoryItem]) -> CompileResult:
    """:func:`compile_items` with the store's embedder and vectors, when it has them; an
    embedder that fails leaves a compile without meaning, which says why in
    ``metadata["meaning_unavailable"]``."""
    embed = store_embed(store)
    if embed is None:
        return compile_items(request, items)
    try:
        vectors = stored_vectors(store, items) if get_profile(request.profile).options.get("semantic_dedup") \
            else None
        return compile_items(request, items, embed=embed, memory_vectors=vectors)
    except EmbedderFailed as exc:
        result = compile_items(request, items)
        result.metadata["meaning_unavailable"] = str(exc)
        return result


def preview(store: MemoryStore, request: PreviewRequest, now: Any = None, *, explain: bool = False) -> Preview:
    """Recall for the user message (without writing) and compile the prompt."""
    hits, items = recall_for(store, request, now, explain=explain)
    return Preview(request, hits, items, compile_for(store, request, items))
