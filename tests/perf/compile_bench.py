"""Compiler speed against the floor of tokenizing everything once.

Run: python tests/perf/compile_bench.py
Setup: 2,000-token system prompt, 40-message history, N memories of 1-3 sentences in
mixed tiers, budget 8,192, openai/gpt-4o. The floor (measured in the same process) is
tiktoken encoding each memory line, the core and the history once. Prints medians and
ratios. Targets: cold compile <= 1.3x floor; re-budget <= 2 ms at 1,000 memories and
<= 20 ms at 10,000.
"""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mnemoscope.compiler import ContextCompiler, MemoryItem, TokenizerRegistry  # noqa: E402
from timing import median_ms  # noqa: E402

SENTENCES = [
    "The user prefers concise answers with one example.", "We discussed the deployment pipeline on Tuesday.",
    "Retries use exponential backoff with jitter.", "The staging database was migrated to Postgres 16.",
    "Mara mentioned her brother is visiting next week.", "Always run the linter before pushing a branch.",
    "The invoice for March was paid late because of a bank holiday.", "Latency spikes came from the cache layer.",
    "The team agreed to freeze features two weeks before release.", "Use UTC timestamps in every log line.",
]


def memories(n: int, rng: random.Random) -> list[MemoryItem]:
    out = []
    for i in range(n):
        text = " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(1, 3))) + f" (note {i})"
        tier = rng.choice([1, 2, 2, 3, 3, 3])
        out.append(MemoryItem(id=f"m{i}", content=text, priority=tier,
                              memory_type={1: "procedural", 2: "semantic", 3: "episodic"}[tier],
                              score=rng.random()))
    return out


def main() -> None:
    rng = random.Random(7)
    adapter = TokenizerRegistry.get().adapter("openai/gpt-4o")
    enc = adapter.encoding
    core = " ".join(rng.choice(SENTENCES) for _ in range(220))
    while len(enc.encode_ordinary(core)) < 2000:
        core += " " + rng.choice(SENTENCES)
    history = [{"role": "user" if i % 2 == 0 else "assistant",
                "content": " ".join(rng.choice(SENTENCES) for _ in range(3))} for i in range(40)]
    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o", core_content=core)
    print(f"{'N':>6} {'floor ms':>9} {'cold ms':>9} {'cold/floor':>10} {'warm ms':>9} {'rebudget ms':>11}")
    for n in (100, 1000, 10000):
        mems = memories(n, rng)
        lines = [f"[Mem:{i + 1}] [fact] {m.content}\n" for i, m in enumerate(mems)]
        repeat = 15 if n < 10000 else 7

        def floor():
            for line in lines:  # noqa: B023
                enc.encode_ordinary(line)
            enc.encode_ordinary(core)
            for h in history:
                enc.encode_ordinary(h["content"])

        def cold():
            adapter._counts.clear()
            compiler.compile(mems, "How should retries work in the new service?", history)  # noqa: B023

        floor_ms = median_ms(floor, repeat)
        cold_ms = median_ms(cold, repeat)
        warm_ms = median_ms(lambda: compiler.compile(mems, "How should retries work?", history), repeat)  # noqa: B023
        result = compiler.compile(mems, "How should retries work?", history)
        budgets = [2048 + (i * 397) % 6000 for i in range(40)]
        reb = [median_ms(lambda b=b, r=result: r.rebudget(b), 3) for b in budgets]
        print(f"{n:>6} {floor_ms:>9.2f} {cold_ms:>9.2f} {cold_ms / floor_ms:>10.2f} {warm_ms:>9.2f} "
              f"{statistics.median(reb):>11.3f}")


if __name__ == "__main__":
    main()
