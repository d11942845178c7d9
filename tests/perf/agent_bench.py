"""What the MCP protocol adds to an agent's remember and recall.

Run: python tests/perf/agent_bench.py [N ...]   (default: 10000 100000)
For each store size it generates a database, then times, in this one process, the
same calls two ways: on the Python API (MemoryStore.remember / recall with
reinforce) and through a real `mnemoscope mcp` server over stdio with the official MCP
SDK client. Prints median and p95 round trips in ms and the median's difference.
Target: the protocol adds at most 5 ms to the median.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.types import Implementation  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from store_bench import NOW, WORDS, generate  # noqa: E402

CALLS = 60
QUERIES = ["mara lisbon tea", "rust lifetime parser", "deploy release dashboard", "dentist flight calendar",
           "sourdough miso basil", "flaky test cache latency"]


def summary(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def texts(rng: random.Random, tag: str) -> list[str]:
    return [f"{tag} note {i}: " + " ".join(rng.choice(WORDS) for _ in range(9)) for i in range(CALLS)]


def time_api(path: str, notes: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"remember": [], "recall": []}
    with MemoryStore(path) as store:
        for i, note in enumerate(notes):
            t0 = time.perf_counter()
            store.remember(note, kind="event", importance=0.5)
            out["remember"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            store.recall(QUERIES[i % len(QUERIES)], k=5, reinforce=True)
            out["recall"].append((time.perf_counter() - t0) * 1000)
    return out


def time_mcp(path: str, notes: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"remember": [], "recall": []}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemoscope", "--db", path, "mcp"], cwd=str(ROOT))

    async def run() -> None:
        async with Client(params, client_info=Implementation(name="agent-bench", version="1")) as client:
            await client.call_tool("brief", {})  # warm up: imports, caches
            for i, note in enumerate(notes):
                t0 = time.perf_counter()
                result = await client.call_tool("remember", {"text": note, "kind": "event"})
                out["remember"].append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content[0].text
                t0 = time.perf_counter()
                result = await client.call_tool("recall", {"query": QUERIES[i % len(QUERIES)], "k": 5})
                out["recall"].append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content[0].text

    anyio.run(run)
    return out


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000]
    rng = random.Random(9)
    print(f"{CALLS} calls each; ms per call (median / p95)")
    for n in sizes:
        path = os.path.join(tempfile.mkdtemp(), "agent.db")
        with MemoryStore(path) as store:
            store.import_jsonl(generate(n, random.Random(3)), now=NOW)
        api = time_api(path, texts(rng, "api"))
        mcp = time_mcp(path, texts(rng, "mcp"))
        for tool in ("remember", "recall"):
            (a_med, a_p95), (m_med, m_p95) = summary(api[tool]), summary(mcp[tool])
            print(f"N={n:>7,} {tool:8}  python API {a_med:7.2f} / {a_p95:7.2f}   "
                  f"MCP stdio {m_med:7.2f} / {m_p95:7.2f}   protocol adds {m_med - a_med:+.2f} ms "
                  f"({m_med / a_med:.2f}x)")


if __name__ == "__main__":
    main()
