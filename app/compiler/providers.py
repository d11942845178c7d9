"""Provider shapes: OpenAI Chat Completions and Anthropic Messages, and :func:`render`,
what ``--format`` prints and the inspector copies."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from .capabilities import dashed, has_prompt_caching, model_capabilities
from .layout import content_text
from .types import CompileResult

FORMATS = ("text", "openai", "anthropic", "json")
EPHEMERAL = {"type": "ephemeral"}
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.DOTALL)


def _is_anthropic(model_id: str | None) -> bool:
    mid = (model_id or "").lower()
    return mid.startswith("anthropic/") or "claude" in mid


def anthropic_model_id(model_id: str | None) -> str:
    """``model_id`` as Anthropic's API spells it: the map's API id (``claude-sonnet-4-5``
    for ``anthropic/claude-sonnet-4.5``), or the id without its provider prefix and with
    dashes for dots between digits. An id with a date suffix is kept as given."""
    if not _is_anthropic(model_id):
        raise ValueError(f"an Anthropic request needs a Claude model, got {model_id!r}; "
                         "choose an anthropic/claude-... model or another format")
    bare = model_id.strip().split("/", 1)[-1]
    caps = model_capabilities(model_id)
    if caps.api_id and dashed(caps.model_id.split("/", 1)[-1]) == dashed(bare.lower()):
        return caps.api_id  # the map's id, not a dated one the caller chose
    return dashed(bare)


def anthropic_system_blocks(cacheable_prefix: str, dynamic_tail: str = "") -> list[dict[str, Any]]:
    """Anthropic ``system`` blocks: the stable prefix marked ``cache_control: ephemeral``,
    then the dynamic tail (if any) unmarked."""
    blocks: list[dict[str, Any]] = []
    if cacheable_prefix:
        blocks.append({"type": "text", "text": cacheable_prefix, "cache_control": dict(EPHEMERAL)})
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


def _image_block(part: dict[str, Any]) -> dict[str, Any]:
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    match = _DATA_URL.match(url or "")
    if match:
        return {"type": "image", "source": {"type": "base64", "media_type": match.group(1), "data": match.group(2)}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(content: Any) -> list[dict[str, Any]]:
    """OpenAI content (a string or parts) as Anthropic content blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content or []:
        kind = part.get("type")
        if kind == "image_url":
            blocks.append(_image_block(part))
        elif isinstance(part.get("text"), str):
            if part["text"]:
                blocks.append({"type": "text", "text": part["text"]})
        else:
            blocks.append(copy.deepcopy(part))
    return blocks


def _tool_use(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    try:
        arguments = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError:
        arguments = {"arguments": fn.get("arguments")}
    return {"type": "tool_use", "id": call.get("id"), "name": fn.get("name"), "input": arguments}


def _anthropic_message(m: dict[str, Any]) -> dict[str, Any]:
    role = m.get("role")
    if role in ("tool", "function"):
        result = {"type": "tool_result", "tool_use_id": m.get("tool_call_id") or m.get("name"),
                  "content": _blocks(m.get("content"))}
        return {"role": "user", "content": [result]}
    blocks = _blocks(m.get("content"))
    if role == "assistant":
        blocks += [_tool_use(c) for c in m.get("tool_calls") or []]
        return {"role": "assistant", "content": blocks}
    return {"role": "user", "content": blocks}


def _merge_same_role(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic wants user and assistant to alternate: consecutive messages of one role
    (a tool result and the next user turn) become one."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"]:
            out[-1]["content"] = out[-1]["content"] + m["content"]
        else:
            out.append(m)
    return out


def to_anthropic_request(
    messages: list[dict[str, Any]], model: str, *, max_tokens: int = 1024, stable_prefix_messages: int = 1
) -> dict[str, Any]:
    """An Anthropic Messages request from compiled OpenAI-style messages.

    Leading system messages become ``system`` blocks; tool calls become ``tool_use``
    blocks, tool results ``tool_result`` blocks and image parts image blocks. Only the
    stable prefix (the first ``stable_prefix_messages`` messages) is marked cacheable:
    the first system block and, when the prefix reaches into the history, its last
    message. Messages without content are left out, and consecutive messages of one
    role merged. Raises ValueError when no message is left for ``messages``.
    """
    msgs = list(messages)
    system_blocks: list[dict[str, Any]] = []
    while msgs and msgs[0].get("role") in ("system", "developer"):
        system_blocks.append({"type": "text", "text": content_text(msgs.pop(0).get("content"))})
    if not msgs:
        raise ValueError("an Anthropic request needs at least one user message after the system prompt")
    if system_blocks and stable_prefix_messages >= 1:
        system_blocks[0]["cache_control"] = dict(EPHEMERAL)
    converted = [_anthropic_message(m) for m in msgs]
    last_stable = min(stable_prefix_messages - len(system_blocks), len(converted) - 1) - 1
    while last_stable >= 0 and not converted[last_stable]["content"]:
        last_stable -= 1  # the breakpoint goes on the last stable message that has content
    if last_stable >= 0:
        content = converted[last_stable]["content"]
        content[-1] = {**content[-1], "cache_control": dict(EPHEMERAL)}
    # Anthropic refuses a message without content (an empty assistant turn): leave it out.
    converted = [m for m in converted if m["content"]]
    request: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": _merge_same_role(converted)}
    if system_blocks:
        request["system"] = system_blocks
    return request


def anthropic_request(result: CompileResult, model_id: str | None = None, *, max_tokens: int = 1024) -> dict:
    """The Anthropic Messages request for a compiled prompt. With memories in the system
    prompt, the rules are the cacheable system block, the memories an uncached one, and
    the current turn the user message (a request needs one)."""
    md = result.metadata
    model = anthropic_model_id(model_id or md.get("model_id"))
    messages = result.messages
    if md.get("memory_placement") == "system" and result.rules_text is not None:
        rules, turn = result.rules_text, result.turn_text
        text = messages[0]["content"]
        middle = text[len(rules): len(text) - len(turn)]
        system = [{"role": "system", "content": part} for part in (rules, middle) if part]
        return to_anthropic_request([*system, {"role": "user", "content": turn}], model, max_tokens=max_tokens,
                                    stable_prefix_messages=1 if rules else 0)
    return to_anthropic_request(messages, model, max_tokens=max_tokens,
                                stable_prefix_messages=md["stable_prefix_messages"])


def render(result: CompileResult, fmt: str, model_id: str | None = None) -> str:
    """What ``--format`` prints (and what the inspector copies): ``text``, ``openai``
    messages, an ``anthropic`` request, or ``json`` with the whole plan."""
    if fmt == "openai":
        return json.dumps(result.messages, ensure_ascii=False, indent=2)
    if fmt == "anthropic":
        return json.dumps(anthropic_request(result, model_id), ensure_ascii=False, indent=2)
    if fmt == "json":
        return result.to_json()
    if fmt != "text":
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    blocks = []
    for m in result.messages:
        content = m.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        blocks.append(f"[{m['role']}]\n{content}")
    return "\n\n".join(blocks)
