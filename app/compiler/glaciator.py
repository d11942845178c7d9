"""Glaciation: split a prompt into a byte-stable, cacheable prefix and a dynamic tail.

Providers cache the longest prefix a request shares with an earlier one, so what is
the same every turn (rules, history) goes first and what changes (memories, the
current turn) goes last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .tokenizers import TiktokenAdapter, adapter_for

DEFAULT_MAX_CACHEABLE_TOKENS = 2000
MIN_CACHE_TOKENS = 256  # below this a cache hint is not worth sending


@dataclass(frozen=True)
class Glaciated:
    cacheable_prefix: str
    dynamic_tail: str
    prefix_tokens: int
    tail_tokens: int
    use_caching: bool


def _max_cacheable_default() -> int:
    raw = os.environ.get("MAX_CACHEABLE_PREFIX_TOKENS", "")
    try:
        return int(raw) if raw else DEFAULT_MAX_CACHEABLE_TOKENS
    except ValueError:
        raise ValueError(f"MAX_CACHEABLE_PREFIX_TOKENS must be an integer, got {raw!r}") from None


def glaciate(
    text: str,
    max_cacheable_tokens: int | None = None,
    *,
    stable_prefix: str | None = None,
    adapter: TiktokenAdapter | None = None,
) -> Glaciated:
    """Split ``text`` at a line boundary into a cacheable prefix and a dynamic tail.

    The prefix is the longest run of whole leading lines within
    ``max_cacheable_tokens`` (default 2,000, or ``MAX_CACHEABLE_PREFIX_TOKENS``). When
    ``stable_prefix`` is given and ``text`` starts with it, the cut is made no later than
    the end of that part, since only it is the same from turn to turn. Never cuts
    mid-line; ``use_caching`` is True once the prefix reaches 256 tokens.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    limit = _max_cacheable_default() if max_cacheable_tokens is None else max_cacheable_tokens
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"max_cacheable_tokens must be a non-negative integer, got {limit!r}")
    adapter = adapter or adapter_for("cl100k_base")
    horizon = len(text)
    if stable_prefix is not None and text.startswith(stable_prefix):
        horizon = len(stable_prefix)
    lines = text[:horizon].splitlines(keepends=True)
    cut = 0
    used = 0
    for line in lines:
        n = adapter.count(line)
        if used + n > limit:
            break
        used += n
        cut += len(line)
    # A line that did not end in a newline is only whole if it is the end of the stable part.
    if cut and not text[:cut].endswith("\n") and cut != horizon:
        cut = text.rfind("\n", 0, cut) + 1
    prefix, tail = text[:cut], text[cut:]
    prefix_tokens = adapter.count(prefix) if prefix else 0
    tail_tokens = adapter.count(tail) if tail else 0
    return Glaciated(prefix, tail, prefix_tokens, tail_tokens, prefix_tokens >= MIN_CACHE_TOKENS)
