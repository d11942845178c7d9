"""The map's arrangement by meaning against today's arrangement by topic.

Run: python tests/perf/map_meaning_bench.py [N]
Setup: N memories (default 100,000) with 512-dimension unit vectors around 40 meanings.
Times, as medians of 3 in one process: the angles by topic (``sector_angles`` for every
memory, what the map does today), the first arrangement by meaning (no previous one),
and a reload with one memory added (the previous arrangement kept).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mnemoscope.map_layout import meaning_angles, sector_angles  # noqa: E402
from timing import median_ms  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((40, 512)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, n)] + 0.3 * rng.standard_normal((n, 512)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"mem-{i:06d}" for i in range(n)]
    groups = [f"topic:t{i % 40}" for i in range(n)]
    topic_ms = median_ms(lambda: sector_angles(ids, groups), 3)
    first_ms = median_ms(lambda: meaning_angles(ids, vectors), 3)
    previous = dict(zip(ids, meaning_angles(ids, vectors).tolist()))
    more_ids, more = [*ids, "new"], np.vstack([vectors, vectors[:1]])
    added_ms = median_ms(lambda: meaning_angles(more_ids, more, previous=previous), 3)
    print(f"{'N':>8} {'topic ms':>9} {'meaning ms':>11} {'ratio':>6} {'+1 ms':>7} {'ratio':>6}")
    print(f"{n:>8} {topic_ms:>9.1f} {first_ms:>11.1f} {first_ms / topic_ms:>6.2f} {added_ms:>7.1f} "
          f"{added_ms / topic_ms:>6.2f}")


if __name__ == "__main__":
    main()
