"""Prompt-cache simulation: how much of each request a provider could read from cache.

Run: python tests/perf/cache_savings.py
A 20-turn chat on openai/gpt-4o with a 2,000-token system prompt and 5 new memories
retrieved every turn. The simulated provider caches the longest token prefix a request
shares with the previous one, when that prefix is at least 1,024 tokens. Compares a
naive prompt (memories inside the system prompt, full history) with end and system
placement.
"""

from __future__ import annotations

import random

from mnemoscope.compiler import ContextCompiler, MemoryItem, TokenizerRegistry  # noqa: E402
from mnemoscope.compiler.cache import prefix_cache_reads, request_tokens  # noqa: E402

TURNS = 20
FACTS = ["prefers concise answers", "works in Rust", "lives in Lisbon", "has a cat called Miso",
         "deploys on Mondays", "hates being called buddy", "climbs twice a week", "learns Mandarin",
         "uses Obsidian", "drinks black coffee", "leads the Lighthouse project", "bakes sourdough"]


def simulate(mode: str, adapter, rules: str, rng: random.Random) -> tuple[int, int]:
    history: list[dict] = []
    requests: list[list[int]] = []
    for turn in range(TURNS):
        mems = [MemoryItem(id=f"t{turn}m{k}", content=f"Turn {turn}: the user {rng.choice(FACTS)} ({k}).")
                for k in range(5)]
        question = f"Question {turn}: " + " ".join(rng.choice(FACTS) for _ in range(6))
        if mode == "naive":
            system = rules + "\n\nMemories:\n" + "\n".join(m.content for m in mems)
            messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": question}]
        else:
            compiler = ContextCompiler(max_tokens=128_000, model_id="openai/gpt-4o", core_content=rules,
                                       memory_placement=mode)
            messages = compiler.compile(mems, question, history).messages
        requests.append(request_tokens(messages, adapter))
        answer = "Answer: " + " ".join(rng.choice(FACTS) for _ in range(25))
        history += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    return sum(len(r) for r in requests), sum(prefix_cache_reads(requests))


def main() -> None:
    adapter = TokenizerRegistry.get().adapter("openai/gpt-4o")
    enc = adapter.encoding
    rules = ""
    while len(enc.encode_ordinary(rules)) < 2000:
        rules += f"Rule {len(rules) % 97}: be precise, cite memories as [Mem:N], and never guess. "
    rows = {}
    for mode in ("naive", "end", "system"):
        rows[mode] = simulate(mode, adapter, rules, random.Random(11))
    naive_sent, naive_cached = rows["naive"]

    def cost(sent, cached, read_price):
        return (sent - cached) + cached * read_price

    print(f"{'setup':<36}{'input tokens':>13}{'from cache':>11}{'cost @0.1x':>11}{'cost @0.5x':>11}")
    for mode, label in (("naive", "naive: memories in system prompt"), ("end", 'memory_placement="end"'),
                        ("system", 'memory_placement="system"')):
        sent, cached = rows[mode]
        c1 = 100 * cost(sent, cached, 0.1) / cost(naive_sent, naive_cached, 0.1)
        c5 = 100 * cost(sent, cached, 0.5) / cost(naive_sent, naive_cached, 0.5)
        print(f"{label:<36}{sent:>13,}{100 * cached / sent:>10.0f}%{c1:>11.0f}{c5:>11.0f}")


if __name__ == "__main__":
    main()
