"""Vectors in the database: written with their memory, 512 bytes each, kept through
update, delete and restore, backfilled resumably, switched by reembed, carried by backups
and left out of JSONL exports."""

from __future__ import annotations

import json

import numpy as np
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.files.backup import backup
from mnemoscope.store.meaning.embedding import HashEmbedder, UseEmbedder

TEXTS = ["Mara is allergic to peanuts.", "Theo takes oat milk in his coffee.", "玛拉住在里斯本。",
         "The team's standup meeting is at 9:30 every weekday.", "Priya is vegetarian."]


def _vector_count(store):
    return store.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]


def test_remember_writes_a_unit_vector_of_512_bytes_with_the_memory(store):
    ids = [store.remember(t).memory.id for t in TEXTS]
    got, matrix = store.vectors()
    assert got == ids and matrix.shape == (5, 512)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert np.allclose(matrix, UseEmbedder().embed(TEXTS), atol=0.01)  # int8 keeps the direction
    sizes = {r[0] for r in store.conn.execute("SELECT length(vec) FROM vectors")}
    assert sizes == {512}
    assert store.vectors([ids[2], "m-none", ids[0]])[0] == [ids[2], ids[0]]
    assert store.vector_status().usable


def test_a_new_text_gets_a_new_vector_and_undo_brings_the_old_one(store):
    mid = store.remember(TEXTS[0]).memory.id
    first = store.vectors([mid])[1][0]
    result = store.update(mid, text="Mara drinks her coffee black.")
    after = store.vectors([mid])[1][0]
    assert np.allclose(after, UseEmbedder().embed(["Mara drinks her coffee black."])[0], atol=0.01)
    store.restore_state(result.before)
    assert np.allclose(store.vectors([mid])[1][0], first)


def test_a_deleted_memory_takes_its_vector_and_restore_brings_it_back(store):
    mid = store.remember(TEXTS[1]).memory.id
    vec = store.vectors([mid])[1][0]
    deleted = store.delete(mid)
    assert _vector_count(store) == 0
    store.remember(TEXTS[0])  # reuses the freed rowid: the old vector must not come with it
    assert np.allclose(store.vectors()[1][0], UseEmbedder().embed([TEXTS[0]])[0], atol=0.01)
    store.restore(deleted)
    assert np.allclose(store.vectors([mid])[1][0], vec)


def test_backfill_is_resumable_cancellable_and_reports_progress(store):
    for t in TEXTS:
        store.remember(t, dedupe=False)
    with store.tables.write():
        store.conn.execute("DELETE FROM vectors")  # as a database from before vectors
    assert "5 of 5 memories have no vector" in store.vector_status().note()
    seen, calls = [], {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 1

    report = store.backfill(batch=2, progress=lambda d, t: seen.append((d, t)), cancel=cancel)
    assert report.cancelled and report.remaining == 3 and seen == [(2, 5)] and _vector_count(store) == 2
    report = store.backfill(batch=2, progress=lambda d, t: seen.append((d, t)))
    assert not report.cancelled and report.embedded == 3 and seen[1:] == [(2, 3), (3, 3)]
    assert _vector_count(store) == 5 and store.vector_status().usable


def test_another_models_vectors_are_used_for_nothing_until_reembed(db_path):
    s = MemoryStore(db_path, embedder=HashEmbedder())
    mid = s.remember("Usually stays up past two in the morning.").memory.id
    s.close()
    s = MemoryStore(db_path)  # the default model now
    status = s.vector_status()
    assert not status.usable and "run mnemoscope reembed" in status.note()
    assert s.recall("What time do I go to bed at night?") == []  # keywords only: none shared
    new = s.remember("Theo takes oat milk in his coffee.").memory.id
    assert s.vectors([new])[0] == []  # never a mix of two models' vectors
    report = s.reembed(batch=1)
    assert report.embedded == 2 and s.vector_status().usable
    assert [h.id for h in s.recall("What time do I go to bed at night?")][:1] == [mid]
    s.close()


@pytest.mark.sqlite_only("compares the file's bytes (tests/store/test_postgres.py opens a server read-only)")
def test_a_read_only_database_recalls_by_meaning_and_writes_nothing(db_path):
    s = MemoryStore(db_path)
    mid = s.remember("Usually stays up past two in the morning.").memory.id
    s.close()
    with open(db_path, "rb") as fh:
        before = fh.read()
    ro = MemoryStore(db_path, read_only=True)
    assert [h.id for h in ro.recall("What time do I go to bed at night?")] == [mid]
    with pytest.raises(Exception, match="read-only"):
        ro.backfill()
    ro.close()
    with open(db_path, "rb") as fh:
        assert fh.read() == before


@pytest.mark.sqlite_only("backups are SQLite files; on PostgreSQL: tests/store/test_postgres.py")
def test_vectors_travel_in_backups_and_stay_out_of_exports(store, tmp_path):
    for t in TEXTS:
        store.remember(t)
    snap = backup(store, tmp_path / "backups").path
    copy = MemoryStore(str(snap), read_only=True)
    assert copy.vectors()[1].shape == (5, 512)
    copy.close()
    exported = store.export_jsonl()
    assert all("vec" not in key for line in exported.splitlines() for key in json.loads(line))
    other = MemoryStore(str(tmp_path / "other.db"))
    seen = []
    other.import_jsonl(exported, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(5, 5)] and other.vectors()[1].shape == (5, 512)
    other.close()


def test_the_file_grows_by_at_most_0_6_kb_per_memory_for_its_vector(tmp_path):
    sizes = {}
    for name, embedder in (("with", UseEmbedder()), ("without", None)):
        s = MemoryStore(str(tmp_path / f"{name}.db"), embedder=embedder)
        s.import_jsonl("\n".join(json.dumps({"id": f"m-{i}", "text": f"Memory number {i} about {TEXTS[i % 5]}"})
                                 for i in range(400)))
        if embedder is None:
            with s.tables.write():
                s.conn.execute("DELETE FROM vectors")
        s.conn.execute("VACUUM")
        sizes[name] = s.conn.execute("PRAGMA page_count").fetchone()[0] * s.conn.execute(
            "PRAGMA page_size").fetchone()[0]
        s.close()
    assert (sizes["with"] - sizes["without"]) / 400 <= 600


def _held_equals_fresh(store):
    """The index recall holds agrees with one built from the file now."""
    from mnemoscope.store.meaning import vector_index

    held = vector_index.index(store)
    store.held_vectors = None
    fresh = vector_index.index(store)
    store.held_vectors = held
    assert held.ids == fresh.ids
    assert np.array_equal(held.matrix, fresh.matrix)
    assert np.array_equal(held.inverse_norms[:len(held.ids)], fresh.inverse_norms[:len(fresh.ids)])
    assert [held.scope_names[i] for i in held.scopes] == [fresh.scope_names[i] for i in fresh.scopes]
    assert list(held.ranks) == list(fresh.ranks)
    assert held.position == fresh.position
    return held


def test_the_held_vector_index_follows_every_change_and_grows_in_place(store, db_path):
    from mnemoscope.store.meaning import vector_index

    ids = [store.remember(t).memory.id for t in TEXTS[:3]]
    _held_equals_fresh(store)
    store.remember("The bike is in the shed.")
    # the first append may move the rows read to the byte into a buffer with room to grow
    first = _held_equals_fresh(store)
    added = store.remember("The dentist appointment moved to Friday.").memory.id
    # a remember is appended, not reloaded: into the same rows (on PostgreSQL a new Index holds
    # them, as readers of other threads may be searching the old one)
    assert np.shares_memory(_held_equals_fresh(store).buffer, first.buffer)
    assert store.recall("when is the dentist", k=1)[0].id == added
    store.update(ids[0], scope="group:a")
    _held_equals_fresh(store)
    assert all(h.id != ids[0] for h in store.recall("peanut allergy", scope="group:b", k=5))
    store.update(ids[1], text="Theo drinks his coffee black.")
    _held_equals_fresh(store)
    store.delete(ids[2])
    _held_equals_fresh(store)
    store.remember(TEXTS[3])  # may reuse the deleted memory's rowid
    _held_equals_fresh(store)
    with MemoryStore(db_path) as other:  # another process's writes count as well
        late = other.remember("Priya is vegetarian.").memory.id
    held = _held_equals_fresh(store)
    assert late in held.position and vector_index.index(store) is held
    assert store.recall("does priya eat meat", k=1)[0].id == late


def test_the_held_index_costs_the_stored_bytes_and_ranks_as_float32_unit_rows(store):
    """Recall holds every vector of the database: at 100,000 memories float32 rows took
    205 MB of the window's memory, four times the 512 stored bytes a vector."""
    from mnemoscope.store.meaning import vector_index

    texts = [f"{t} (note {i})" for i in range(12) for t in TEXTS]
    store.import_jsonl("\n".join(json.dumps({"id": f"m-{i}", "text": t}) for i, t in enumerate(texts)))
    idx = vector_index.index(store)
    # every array it holds: the rows, and what recall filters on (scope, sensitivity) or scales by
    per_vector = sum(a.nbytes for a in vars(idx).values() if isinstance(a, np.ndarray)) / len(idx.ids)
    assert per_vector <= 512 + 16, f"the held index costs {per_vector:.0f} bytes a vector (stored: 512)"
    assert idx.nbytes == len(idx.ids) * (512 + 4)
    assert idx.matrix.dtype == np.int8, f"the held rows are {idx.matrix.dtype}, not the stored int8"
    ids, unit_rows = store.vectors()  # the stored vectors as float32 unit rows
    assert ids == idx.ids
    for query in ("does mara have an allergy", "coffee with milk", "里斯本", "who eats no meat"):
        q = UseEmbedder().embed([query])[0]
        want, got = unit_rows @ q, idx.cosines(q)
        assert np.allclose(got, want, atol=1e-6), f"{query!r}: cosines off by {np.abs(got - want).max()}"
        assert list(np.argsort(-got, kind="stable")) == list(np.argsort(-want, kind="stable")), query
        some = np.array([40, 3, 17])
        assert np.allclose(idx.cosines(q, some), want[some], atol=1e-6)
        near = vector_index.nearest(idx, q, ["global"], 4, 10, -1.0)
        assert [m for m, _, _ in near] == [ids[i] for i in np.argsort(-want, kind="stable")[:10]], query
