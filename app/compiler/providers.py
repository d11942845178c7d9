"""Provider shapes: OpenAI Chat Completions and Anthropic Messages."""

from __future__ import annotations

import copy
import json
from typing import Any

from .capabilities import has_prompt_caching
from .layout import content_text
from .types import CompileResult


def _is_anthropic(model_id: str | None) -> bool:
    mid = (model_id or "").lower()
    return mid.startswith("anthropic/") or "claude" in mid


def anthropic_system_blocks(cacheable_prefix: str, dynamic_tail: str = "") -> list[dict[str, Any]]:
    """Anthropic ``system`` blocks: the stable prefix marked ``cache_control: ephemeral``,
    then the dynamic tail (if any) unmarked."""
    blocks: list[dict[str, Any]] = []
    if cacheable_prefix:
        blocks.append({"type": "text", "text": cacheable_prefix, "cache_control": {"type": "ephemeral"}})
    if dynamic_tail:
        blocks.append({"type": "text", "text": dynamic_tail})
    return blocks


def build_system_messages(
    model_id: str | None, cacheable_prefix: str, dynamic_tail: str = ""
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """System message(s) for ``model_id`` plus a cache hint.

    OpenAI-style models get the prefix and the tail as two system messages, so the
    first stays byte-identical; Anthropic models get one system message whose content is
    :func:`anthropic_system_blocks`.
    """
    caching = has_prompt_caching(model_id)
    if _is_anthropic(model_id):
        messages = [{"role": "system", "content": anthropic_system_blocks(cacheable_prefix, dynamic_tail)}]
        provider = "anthropic"
    else:
        messages = [{"role": "system", "content": cacheable_prefix}] if cacheable_prefix else []
        if dynamic_tail:
            messages.append({"role": "system", "content": dynamic_tail})
        provider = "openai"
    hint = {"provider": provider, "prompt_caching": caching, "cacheable_prefix": bool(cacheable_prefix)}
    return messages, hint


def to_anthropic_request(
    messages: list[dict[str, Any]], model: str, *, max_tokens: int = 1024, stable_prefix_messages: int = 1
) -> dict[str, Any]:
    """An Anthropic Messages request from compiled OpenAI-style messages.

    The leading system message becomes cached ``system`` blocks; when the stable prefix
    reaches into the history, the last stable history message also gets a
    ``cache_control`` breakpoint so the history is read from cache too.
    """
    msgs = copy.deepcopy(messages)
    system_blocks: list[dict[str, Any]] = []
    if msgs and msgs[0].get("role") == "system":
        system_blocks = anthropic_system_blocks(content_text(msgs[0].get("content")), "")
        msgs = msgs[1:]
    out: list[dict[str, Any]] = []
    for m in msgs:
        role = m.get("role")
        if role == "system":
            system_blocks.append({"type": "text", "text": content_text(m.get("content"))})
            continue
        if role not in ("user", "assistant"):
            role = "user"
        out.append({"role": role, "content": m.get("content") if m.get("content") is not None else ""})
    last_stable = stable_prefix_messages - 2  # index in ``out`` of the last stable history message
    if 0 <= last_stable < len(out) - 1:
        content = out[last_stable]["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if content:
            content = list(content)
            content[-1] = {**content[-1], "cache_control": {"type": "ephemeral"}}
            out[last_stable]["content"] = content
    request: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": out}
    if system_blocks:
        request["system"] = system_blocks
    return request


FORMATS = ("text", "openai", "anthropic", "json")


def render(result: CompileResult, fmt: str, model_id: str | None) -> str:
    """The prompt as ``fmt`` (one of :data:`FORMATS`): what ``mnemoscope compile --format``
    prints and what the inspector's copy buttons copy."""
    if fmt == "openai":
        return json.dumps(result.messages, ensure_ascii=False, indent=2)
    if fmt == "anthropic":
        model = (model_id or "claude").split("/", 1)[-1]
        request = to_anthropic_request(result.messages, model,
                                       stable_prefix_messages=result.metadata["stable_prefix_messages"])
        return json.dumps(request, ensure_ascii=False, indent=2)
    if fmt == "json":
        return result.to_json()
    blocks = []
    for m in result.messages:
        content = m.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        blocks.append(f"[{m['role']}]\n{content}")
    return "\n\n".join(blocks)
