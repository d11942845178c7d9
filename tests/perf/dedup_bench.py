"""What semantic de-duplication costs a compile.

Run: python tests/perf/dedup_bench.py
Setup as compile_bench.py (2,000-token rules, 40-message history, budget 8,192,
openai/gpt-4o). Without an embedder, a compiler with ``semantic_dedup`` on is timed
against one with it off, in the same process: the target is a ratio of 1.00 (it costs
nothing). With precomputed unit vectors (dimension 512, one in ten memories a near copy
of another), the de-duplicating compile is timed against the plain one, and the topic
shift with a lookup "embedder" (so only the compiler's own work is timed).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile_bench import SENTENCES, memories  # noqa: E402
from mnemoscope.compiler import ContextCompiler, TokenizerRegistry  # noqa: E402
from timing import median_ms  # noqa: E402

DIM = 512


def with_copies(mems: list, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors for ``mems``, one in ten made a near copy of the next memory (text too)."""
    n = len(mems)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    copies = rng.choice(n, size=n // 10, replace=False)
    v[copies] = v[(copies + 1) % n] + 0.01 * rng.standard_normal((len(copies), DIM)).astype(np.float32)
    for c in copies.tolist():
        mems[c].content = mems[(c + 1) % n].content
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def main() -> None:
    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    adapter = TokenizerRegistry.get().adapter("openai/gpt-4o")
    core = " ".join(rng.choice(SENTENCES) for _ in range(240))
    history = [{"role": "user" if i % 2 == 0 else "assistant",
                "content": " ".join(rng.choice(SENTENCES) for _ in range(3))} for i in range(40)]
    plain = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o", core_content=core)
    dedup = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o", core_content=core, semantic_dedup=True)
    user = "How should retries work in the new service?"
    table = {h["content"]: nrng.standard_normal(DIM).astype(np.float32) for h in history}
    table[user] = nrng.standard_normal(DIM).astype(np.float32)

    def embed(texts):
        return np.stack([table[t] for t in texts])

    print("without an embedder (cold compiles)")
    print(f"{'N':>6} {'off ms':>9} {'on ms':>9} {'on/off':>7}")
    for n in (100, 1000, 10000):
        mems = memories(n, rng)
        repeat = 15 if n < 10000 else 7

        def run(compiler):
            def once():
                adapter._counts.clear()
                compiler.compile(mems, user, history)  # noqa: B023
            return once

        off_ms, on_ms = median_ms(run(plain), repeat), median_ms(run(dedup), repeat)
        print(f"{n:>6} {off_ms:>9.2f} {on_ms:>9.2f} {on_ms / off_ms:>7.2f}")

    print(f"with precomputed vectors (dimension {DIM}; warm token counts)")
    print(f"{'N':>6} {'plain ms':>9} {'dedup ms':>9} {'dropped':>8} {'+shift ms':>10}")
    for n in (20, 100, 1000):
        mems = memories(n, rng)
        vecs = with_copies(mems, nrng)
        plain_ms = median_ms(lambda: plain.compile(mems, user, history), 15)  # noqa: B023
        dedup_ms = median_ms(lambda: dedup.compile(mems, user, history, memory_vectors=vecs), 15)  # noqa: B023
        shift_ms = median_ms(lambda: dedup.compile(mems, user, history, memory_vectors=vecs,  # noqa: B023
                                                   embed=embed), 15)
        dropped = dedup.compile(mems, user, history, memory_vectors=vecs).metadata["memories_deduplicated"]
        print(f"{n:>6} {plain_ms:>9.2f} {dedup_ms:>9.2f} {dropped:>8} {shift_ms:>10.2f}")


if __name__ == "__main__":
    main()
