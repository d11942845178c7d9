"""compile_prompt_async: the chat-backend entry point over pre-retrieved (memory, tier) pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .compiler import AsyncCompressor, ContextCompiler
from .types import CompileResult


async def compile_prompt_async(
    *,
    user_msg: str,
    messages_list: Sequence[dict[str, Any]] | None = None,
    max_tokens: int,
    model_id: str | None = None,
    core_content: str = "",
    retrieved_objects: Sequence[tuple[Any, int]] = (),
    user_id: str | None = None,
    conversation_id: str | None = None,
    memory_placement: str = "end",
    compress_async: AsyncCompressor | None = None,
    **kwargs: Any,
) -> CompileResult:
    """Compile from ``(memory, tier)`` pairs and the raw message list.

    ``user_id`` and ``conversation_id`` are recorded in the metadata; Mnemoscope keeps
    no Redis, so they change nothing else. Topic shifts are detected when ``embed=`` is
    passed (see :meth:`ContextCompiler.compile`).
    """
    memories = [m for m, _ in retrieved_objects]
    tiers = {id(m): tier for m, tier in retrieved_objects}
    compiler = ContextCompiler(max_tokens=max_tokens, model_id=model_id, core_content=core_content,
                               memory_placement=memory_placement)
    result = await compiler.compile_async(
        memories, user_msg, list(messages_list or []), tier_by_memory_id=tiers, compress_async=compress_async,
        **kwargs,
    )
    result.metadata["user_id"] = user_id
    result.metadata["conversation_id"] = conversation_id
    return result


compile_prompt_payload = compile_prompt_async
