"""Recall ranks every time: the best memories first, each with a relevance and parts that add
up to its score; entities found by their names; the turns next to a hit; abstention only
when the caller asks for it (min_relevance); bad queries refused with a sentence."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from mnemoscope.store import MemoryStore, ValidationError
from mnemoscope.store.meaning.embedding import EmbeddingError, HashEmbedder
from mnemoscope.store.model.config import StoreConfig
from mnemoscope.store.model.errors import ConfigError

NOW = "2026-11-19T12:00:00Z"


def test_a_store_of_two_memories_answers_both_questions(store):
    """The issue's example: a floor used to answer both with "nothing relevant remembered"."""
    answers = store.remember("Mara prefers short answers with one example.", now=NOW).memory.id
    standup = store.remember("The standup moved to 10:15 on Mondays.", now=NOW).memory.id
    assert store.recall("what time is the daily meeting", now=NOW)[0].id == standup
    assert store.recall("how long should replies be", now=NOW)[0].id == answers


def test_an_entitys_memories_are_found_by_its_name_and_by_a_question_about_it(store):
    zoe = store.remember("Works at Orion as tech lead.", entities=[{"name": "Zoë Müller", "kind": "person"}],
                         now=NOW).memory.id
    store.remember("Plays chess on Tuesdays.", entities=[{"name": "Zoë Müller", "kind": "person"}], now=NOW)
    for other in ("Ravi Patel works at a bakery in Leeds.", "Muller's ratchet is a term from genetics.",
                  "The office moved to the third floor."):
        store.remember(other, now=NOW)
    by_name = store.recall("Zoë Müller", k=3, now=NOW)
    assert {h.id for h in by_name[:2]} >= {zoe} and all("Zoë Müller" in h.entities for h in by_name[:2])
    assert store.recall("where does Zoë work", k=3, now=NOW)[0].id == zoe
    assert store.recall("zoe muller", k=3, now=NOW)[0].entities == ["Zoë Müller"]  # folded as words are


def test_the_turn_after_a_matching_one_is_found_through_it(store):
    """In a conversation the answer often follows the turn that matches the question."""
    turns = ["Ana: Did you ever find out where the lost keys were?", "Ben: Yes! Under the sofa cushion.",
             "Ana: Great. What are we cooking tonight?", "Ben: Lentil soup."]
    ids = [store.remember(t, source="chat-7", now=1_790_000_000 + 30 * i, dedupe=False).memory.id
           for i, t in enumerate(turns)]
    for t in ("The lost-and-found desk closes at six.", "Keys are cut at the shop on Rua Augusta."):
        store.remember(t, now=1_780_000_000, dedupe=False)
    hits = store.recall("where were the lost keys", k=6, explain=True)
    answer = next(h for h in hits if h.id == ids[1])
    assert answer.parts["neighbour"] > 0 and ids[0] in answer.why["next_to"]
    # a memory of another episode (another source, or long before) is no neighbour
    far = store.remember("Ben: unrelated aside", source="chat-7", now=1_700_000_000, dedupe=False).memory.id
    assert far not in store.recall("where were the lost keys", k=6, explain=True)[0].why["next_to"]


def test_min_relevance_is_the_callers_choice_and_is_checked(store):
    store.remember("The standup moved to 10:15 on Mondays.", now=NOW)
    store.remember("Their cat is called Pixel.", now=NOW)
    everything = store.recall("what time is the daily meeting", k=5, now=NOW)
    assert len(everything) == 2
    top = everything[0].relevance
    assert [h.id for h in store.recall("what time is the daily meeting", now=NOW, min_relevance=top)] == \
        [everything[0].id]
    assert store.recall("what time is the daily meeting", now=NOW, min_relevance=1.0) == [] or top == 1.0
    for bad in (-0.1, 1.5, "high", float("nan"), True):
        with pytest.raises(ValidationError, match="min_relevance"):
            store.recall("standup", min_relevance=bad)


def test_min_relevance_in_the_config():
    with pytest.raises(ConfigError, match="limits.min_relevance"):
        StoreConfig.from_dict({"limits": {"min_relevance": 2}})
    s = MemoryStore(":memory:", config=StoreConfig.from_dict({"limits": {"min_relevance": 0.99}}),
                    embedder=HashEmbedder())
    s.remember("Their cat is called Pixel.", now=NOW)
    assert s.recall("cat", now=NOW) == [] and len(s.recall("cat", now=NOW, min_relevance=0)) == 1


@pytest.mark.parametrize("query, said", [
    ("", "nothing to search"), ("   \t\n", "nothing to search"), ("\x01\x02\x7f", "nothing to search"),
    ("?!…", "nothing to search"), ("a" * 1_000_000, "at most 4,000"), ("tea\x00", "NUL"),
    ("tea \ud800", "lone surrogate"), (b"tea", "must be a string")])
def test_a_bad_query_is_refused_with_a_sentence(store, query, said):
    store.remember("Mara likes green tea.", now=NOW)
    with pytest.raises(ValidationError, match="query") as err:
        store.recall(query)
    assert said in str(err.value)


class _FailingQueries:
    """Embeds memories; fails on a query, as an endpoint that went down does."""

    id, dim, meaningful = "test:failing:1:8", 8, True

    def embed(self, texts):
        rows = np.ones((len(texts), 8), dtype=np.float32)
        rows[:, 0] += np.arange(len(texts))
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def embed_query(self, texts):
        raise EmbeddingError("the embeddings endpoint http://127.0.0.1:9/v1/embeddings did not answer")


def test_recall_by_words_when_the_query_cannot_be_embedded_and_says_so(store_target):
    with MemoryStore(store_target, embedder=_FailingQueries()) as s:
        mid = s.remember("Mara likes green tea.", now=NOW).memory.id
        s.remember("The standup moved to 10:15 on Mondays.", now=NOW)
        hits = s.recall("green tea", now=NOW)
        assert hits[0].id == mid and "recalled by words only" in hits.note and "did not answer" in hits.note
        assert hits.meaning_by == ""


def test_a_new_signal_is_one_declaration_and_flows_to_config_and_explanation():
    """A throwaway signal declared in store/recall/signals.py's table: the config takes its weight,
    recall adds its part and explains it, the window lists it."""
    code = """
import json
from mnemoscope.store.recall import signals
signals.SIGNALS = signals.SIGNALS + (signals.Signal("novelty", "novelty", 0.3, "a test signal",
                                                   lambda c, ctx: 0.5),)
from mnemoscope.store.model.config import StoreConfig
from mnemoscope.store import MemoryStore
from mnemoscope.store.meaning.embedding import HashEmbedder
cfg = StoreConfig.from_dict({"weights": {"novelty": 0.8}})
s = MemoryStore(":memory:", config=cfg, embedder=HashEmbedder())
s.remember("Mara likes green tea.")
h = s.recall("green tea", explain=True)[0]
from mnemoscope.ui.panes.provenance_view import why_words
print(json.dumps({"part": h.parts["novelty"], "raw": h.why["novelty"], "score": h.score,
                  "sum": round(sum(h.parts.values()), 4), "words": why_words(h.why)}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"})
    got = json.loads(out.stdout)
    assert got["part"] == pytest.approx(0.4) and got["raw"] == 0.5
    assert got["score"] == pytest.approx(got["sum"], abs=0.001) and "novelty 0.40" in got["words"]


def test_min_relevance_through_the_command_line_and_the_agents_doors(store_target):
    from click.testing import CliRunner
    from mnemoscope.cli import cli
    from mnemoscope.serve.operations import Operations

    with MemoryStore(store_target) as s:
        s.remember("The standup moved to 10:15 on Mondays.", now=NOW)
        s.remember("Their cat is called Pixel.", now=NOW)
        ops = Operations(s, client="pytest")
        everything = ops.recall("what time is the daily meeting", k=5)
        assert len(everything["hits"]) == 2 and all(0 <= h["relevance"] <= 1 for h in everything["hits"])
        none = ops.recall("what time is the daily meeting", k=5, min_relevance=1.0)
        assert none["hits"] == [] or none["hits"][0]["relevance"] == 1.0
    out = CliRunner().invoke(cli, ["--db", store_target, "recall", "daily meeting", "--json"])
    assert out.exit_code == 0, out.output
    assert len(json.loads(out.output)) == 2
    out = CliRunner().invoke(cli, ["--db", store_target, "recall", "daily meeting", "--min-relevance", "1.5"])
    assert out.exit_code != 0 and "--min-relevance" in out.output


def test_a_memory_one_level_above_trust_is_no_text_oracle(store):
    """Issue 32: "4921" used to bring back a redacted hit where every other guess brought
    nothing. Now whether anything comes back does not depend on a memory above the caller's
    trust: the answers to the right guess and to a wrong one are the same."""
    store.remember("Mara's door code is 4921.", sensitivity="high", now=NOW)
    store.remember("Mara waters the plants on Fridays.", now=NOW)
    answers = {guess: [(h.id, h.redacted) for h in store.recall(f"door code {guess}", k=10, trust="medium", now=NOW)]
               for guess in ("4921", "4922", "1234")}
    assert answers["4921"] == answers["4922"] == answers["1234"]
    assert all(not redacted for hits in answers.values() for _, redacted in hits)


def test_a_hidden_turn_between_two_visible_ones_changes_nothing(store_target, tmp_path):
    """The neighbour signal counts distance among the turns the caller may see, and bm25's
    rarity among the memories it may see: a hidden memory changes no order, no part (the
    database without them is SQLite's, so on PostgreSQL the engines are compared too)."""
    def answers(with_hidden):
        path = store_target if with_hidden else str(tmp_path / "plain.db")
        with MemoryStore(path) as s:
            turns = ["Ana: Did you ever find out where the lost keys were?", "Ben: Yes! Under the sofa cushion.",
                     "Ana: Great. What are we cooking tonight?", "Ben: Lentil soup."]
            for i, t in enumerate(turns):
                if with_hidden and i == 1:
                    s.remember("Ben: the keys to the safe are in the blue keys box.", source="chat-7",
                               sensitivity="high", now=1_790_000_000 + 30 * i - 1, dedupe=False, memory_id="hid")
                    s.remember("keys keys lost keys", scope="group:other", now=1_790_000_000, dedupe=False)
                s.remember(t, source="chat-7", now=1_790_000_000 + 30 * i, dedupe=False, memory_id=f"t{i}")
            return [(h.id, h.score, h.parts) for h in s.recall("where were the lost keys", k=6, trust="medium")]

    assert answers(True) == answers(False)


def test_a_memory_far_below_near_copies_keeps_what_its_words_say():
    """Among near copies of one text the nearest cosines' spread is a few thousandths: a
    memory found by its words stood -57 below them and its relevance was 0.000."""
    from mnemoscope.store.recall import relevance

    floor = relevance.of(2.0, 1.0, relevance.STANDING_FLOOR)
    assert relevance.of(2.0, 1.0, -60.0) == floor > 0.05
    assert relevance.of(2.0, 1.0, 2.0) > relevance.of(2.0, 1.0, 0.0) > floor
