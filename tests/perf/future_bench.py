"""What following the time-travel slider costs the prompt preview: compiling as of a later
day and comparing with today (app/prompt_future.py) against one plain preview compile, in
the same process, at 10,000 memories (hash embedder, so the build takes seconds).

Run: python tests/perf/future_bench.py
Prints the medians of 15 runs each. Target: the future with its comparison is at most
about two plain compiles (it recalls and compiles twice) and stays under 100 ms, the time
a person waits after letting the slider rest.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from timing import median_ms  # noqa: E402


def main() -> None:
    from mnemoscope.bridge import PreviewRequest, preview
    from mnemoscope.prompt_future import prompt_future
    from mnemoscope.store import MemoryStore
    from mnemoscope.store.meaning.embedding import HashEmbedder

    rng = random.Random(22)
    words = "Mara peanuts snacks party coffee climbing Lisbon sourdough tea Porto brother deploy".split()
    kinds = ("fact", "lesson", "skill", "reflection", "event")
    lines = [json.dumps({"id": f"f{i:05d}", "kind": rng.choice(kinds), "importance": round(rng.random(), 2),
                         "text": " ".join(rng.choice(words) for _ in range(rng.randint(6, 20))) + f" (note {i})"})
             for i in range(10_000)]
    store = MemoryStore(":memory:", embedder=HashEmbedder())
    store.import_jsonl("\n".join(lines))
    request = PreviewRequest(user_message="What snacks can I bring for Mara's party?")
    plain = median_ms(lambda: preview(store, request), 15)
    future = median_ms(lambda: prompt_future(store, request, 60), 15)
    changed = prompt_future(store, request, 200)
    print(f"10,000 memories: preview {plain:.1f} ms; prompt_future (+60 days, with today) {future:.1f} ms "
          f"= {future / plain:.2f}x; at +200 days {len(changed.left)} leave, {len(changed.entered)} enter")


if __name__ == "__main__":
    main()
