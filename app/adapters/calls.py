"""Timing and logging one adapter call in the activity log (door ``python``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from mnemoscope.store import MemoryStore
from mnemoscope.store.agents import activity as activity_log
from mnemoscope.store.model.errors import StoreError


@contextmanager
def logged(store: MemoryStore, client: str, tool: str, scope: str, trust: str, args: dict[str, Any], *,
           writes: bool = False) -> Iterator[list[str]]:
    """Record the call with the memory ids appended to the yielded list, failed or not.

    ``writes``: the call writes anyway (a recall that reinforces), so it runs in one
    transaction with its log entry: one commit, not two (the second was most of what the
    LangChain retriever added to a recall). A failed call's transaction is rolled back and
    its entry written on its own."""
    ids: list[str] = []
    started = time.perf_counter()

    def record(error: str = "") -> None:
        with suppress(StoreError):  # a busy or read-only database must not turn an answer into a failure
            activity_log.record(store, client=client, door="python", tool=tool, scope=scope[:140], trust=trust,
                                args=args, memory_ids=ids[:200], duration_ms=(time.perf_counter() - started) * 1000,
                                ok=not error, error=error)

    try:
        if writes and not store.read_only:
            with store.transaction():
                yield ids
                record()
            return
        yield ids
    except Exception as exc:
        record(f"{type(exc).__name__}: {exc}")
        raise
    record()
