"""Test doubles for the store's embedder (``MemoryStore.embedder`` and ``.vectors``), so
the window's meaning features can be tested with deterministic vectors: texts that use
words of one group mean the same thing, whatever their topic."""

from __future__ import annotations

import re
import zlib

import numpy as np

GROUPS = {
    "drinks": ("coffee", "espresso", "latte", "cappuccino", "tea", "caffeine"),
    "code": ("rust", "borrow", "lifetime", "cargo", "compiler", "traits"),
    "travel": ("flight", "lisbon", "porto", "train", "hotel", "airport"),
}
DIM = 16


def keyword_vectors(texts: list[str]) -> np.ndarray:
    """Unit vectors: one axis per group of words, plus a little noise from the text's hash."""
    rows = []
    for text in texts:
        words = re.findall(r"\w+", text.lower())
        v = 0.08 * np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIM)
        for axis, group in enumerate(GROUPS.values()):
            v[axis] += sum(w in group for w in words)
        rows.append(v / np.linalg.norm(v))
    return np.array(rows, dtype=np.float32).reshape(len(texts), DIM)


class KeywordEmbedder:
    """The live embedder: :func:`keyword_vectors`, counting its calls."""

    id = "test-keywords-16"
    dim = DIM
    meaningful = True

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return keyword_vectors(texts)


def install(monkeypatch, embedder: KeywordEmbedder | None = None) -> KeywordEmbedder:
    """Give every MemoryStore ``embedder`` and ``vectors`` as the contract with the store
    says (``vectors(ids) -> (ids, unit rows)``), the vectors as if stored when written."""
    from mnemoscope.store import MemoryStore

    embedder = embedder or KeywordEmbedder()

    def vectors(self, ids=None):
        memories = [self.get(i) for i in ids] if ids is not None else self.list()
        kept = [m for m in memories if m.text]
        return [m.id for m in kept], keyword_vectors([m.text for m in kept])  # as stored, not embedded now

    monkeypatch.setattr(MemoryStore, "embedder", property(lambda self: embedder), raising=False)
    monkeypatch.setattr(MemoryStore, "vectors", vectors, raising=False)
    return embedder
