"""Tokens as a provider bills them: the messages' text plus the chat format around it.

A message's *content tokens* are its text (a string, or its text parts) and, for an
assistant message that calls tools, the JSON of those calls; ``token_count`` is their sum.
What OpenAI bills follows its cookbook rule (``num_tokens_from_messages``): 3 tokens per
message, every other string value of the message encoded too (the role, a name, a
tool call id), 1 more for a name, and 3 for the reply's priming.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .tokenizers import TiktokenAdapter, TokenizerRegistry

TOKENS_PER_MESSAGE = 3  # <|start|>{role}<|message|> ... <|end|>
TOKENS_PER_NAME = 1
TOKENS_REPLY_PRIMING = 3  # <|start|>assistant<|message|>


def message_tokens(message: dict[str, Any], adapter: TiktokenAdapter) -> int:
    """Content tokens of one message."""
    n = 0
    content = message.get("content")
    if isinstance(content, str):
        n += adapter.count(content)
    elif isinstance(content, list):
        n += sum(adapter.count(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if message.get("tool_calls"):
        n += adapter.count(json.dumps(message["tool_calls"], ensure_ascii=False, sort_keys=True))
    return n


def message_overhead(message: dict[str, Any], adapter: TiktokenAdapter) -> int:
    """The chat-format tokens one message adds to its content tokens."""
    n = TOKENS_PER_MESSAGE
    for key, value in message.items():
        if key != "content" and isinstance(value, str):
            n += adapter.count(value)
            if key == "name":
                n += TOKENS_PER_NAME
    return n


def count_message_tokens(messages: Sequence[dict[str, Any]], adapter: TiktokenAdapter) -> int:
    """A fresh count of a message list's content tokens (what ``token_count`` reports)."""
    return sum(message_tokens(m, adapter) for m in messages)


def count_billed_tokens(messages: Sequence[dict[str, Any]], model_id: str | None = None, *,
                        adapter: TiktokenAdapter | None = None) -> int:
    """The input tokens a provider bills for ``messages`` (OpenAI's cookbook rule)."""
    adapter = adapter or TokenizerRegistry.get().adapter(model_id)
    return sum(message_tokens(m, adapter) + message_overhead(m, adapter) for m in messages) + TOKENS_REPLY_PRIMING
