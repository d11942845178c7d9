"""Prompt-cache simulation: how many tokens of each request a provider could serve from
its prefix cache, given the request before it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .layout import history_text
from .tokenizers import TiktokenAdapter

PROVIDER_MIN_CACHE_TOKENS = 1024


def request_tokens(messages: Sequence[dict[str, Any]], adapter: TiktokenAdapter) -> list[int]:
    """The token stream a provider would see for ``messages``: each message's role
    marker, then its text."""
    out: list[int] = []
    for m in messages:
        out += adapter.encode(f"<|{m.get('role', 'user')}|>")
        out += adapter.encode(history_text(m))
    return out


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prefix_cache_reads(requests: Sequence[Sequence[int]], min_tokens: int = PROVIDER_MIN_CACHE_TOKENS) -> list[int]:
    """For each request (a token stream), the tokens read from cache: the prefix it shares
    with the previous request, when that prefix is at least ``min_tokens`` long."""
    reads = []
    previous: Sequence[int] = ()
    for tokens in requests:
        shared = shared_prefix(previous, tokens)
        reads.append(shared if shared >= min_tokens else 0)
        previous = tokens
    return reads
