"""What the framework adapters add to a call on the Python API.

Run: python tests/perf/adapter_bench.py [ITEMS]   (default: 2000)
Fills a database with ITEMS items through the LangGraph adapter, then times in this one
process, alternating, each adapter call and the Python API call that does the same work:
LangGraph get / put (a new key) / search with a query, and a LangChain retriever call,
against MemoryStore.get / remember / recall. The adapter's time includes its activity
log entry. Prints medians in ms and the median's difference. Target: at most 2 ms. The
last row is what LangChain itself spends invoking a retriever that does nothing (its
callback manager and run tree): part of every retriever call, not of this adapter.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time

from langchain_core.retrievers import BaseRetriever
from mnemoscope.adapters.langchain import MnemoscopeRetriever
from mnemoscope.adapters.langgraph import MnemoscopeStore, memory_id, scope_of
from mnemoscope.store import MemoryStore

# A vocabulary of made-up words, so that a query matches some notes, as in a real memory, not all.
WORDS = [a + b + c for a in ("ka", "lo", "mi", "nu", "se", "tor", "vel", "zan") for b in ("ri", "po", "du", "fe", "ga", "hu")
         for c in ("n", "s", "th", "m", "lk", "r", "x", "nd", "sh", "v")]
CALLS = 200
NS = ("memories", "ana")


def text(rng: random.Random, i: int) -> str:
    return f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(9))


def ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def calls(store, lg, retriever, scope, items, rng, i, key, query):
    """(Python API call, adapter call) doing the same work, per kind of call."""
    return {
        "get": (lambda: store.get(memory_id(scope, key)), lambda: lg.get(NS, key)),
        "put": (lambda: store.remember(text(rng, -i), scope=scope, dedupe=False,
                                       context={"bench": {"value": {}}}),
                lambda: lg.put(NS, f"new{i}", {"content": text(rng, items + i)})),
        "search": (lambda: store.recall(query, k=10, scope=[scope], reinforce=True),
                   lambda: lg.search(NS, query=query, limit=10)),
        "retriever": (lambda: store.recall(query, k=5, scope=scope, explain=True, reinforce=True),
                      lambda: retriever.invoke(query)),
        # LangChain's own cost of invoking any retriever (its callbacks and run tree), not ours
        "langchain's invoke of an empty retriever": (lambda: None, lambda: EMPTY.invoke(query)),
    }


class Empty(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return []


EMPTY = Empty()


def main(items: int) -> None:
    rng = random.Random(3)
    path = os.path.join(tempfile.mkdtemp(prefix="mnemoscope-adapter-bench-"), "m.db")
    store = MemoryStore(path)
    lg = MnemoscopeStore(store)
    for i in range(items):
        lg.put(NS, f"k{i}", {"content": text(rng, i)})
    retriever = MnemoscopeRetriever(store=store, scope=scope_of(NS), k=5)
    scope = scope_of(NS)
    times: dict[str, tuple[list[float], list[float]]] = {}
    for i in range(CALLS):
        key = f"k{rng.randrange(items)}"
        query = " ".join(rng.choice(WORDS) for _ in range(3))
        pairs = calls(store, lg, retriever, scope, items, rng, i, key, query)
        for name, (api, adapter) in pairs.items():
            times.setdefault(name, ([], []))
            order = [(0, api), (1, adapter)] if i % 2 else [(1, adapter), (0, api)]
            for which, fn in order:
                times[name][which].append(ms(fn))
    print(f"{items:,} items, {CALLS} calls each (median ms)")
    print(f"{'call':<42} {'python api':>11} {'adapter':>9} {'added':>8}")
    for name, (api, adapter) in times.items():
        a, b = statistics.median(api), statistics.median(adapter)
        print(f"{name:<42} {a:>11.2f} {b:>9.2f} {b - a:>+8.2f}")
    store.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
