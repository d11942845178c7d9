"""Meaning is not identity: a negation, a different number, date, amount or name is
never a duplicate, by characters or by meaning; and only what the caller may see is
compared (issue 18 item 4 and 6, issue 21)."""

from __future__ import annotations

import pytest
from mnemoscope.store import MemoryStore
from mnemoscope.store.curation.duplicates import difference
from mnemoscope.store.meaning.embedding import HashEmbedder

PAIRS = [
    ("Mara is allergic to peanuts.", "Mara is not allergic to peanuts."),
    ("The backups run on Fridays.", "The backups never run on Fridays."),
    ("The invoice is due on May 30.", "The invoice is due on May 3."),
    ("Read note 11 before the call.", "Read note 1 before the call."),
    ("The rent is 900 euros.", "The rent is 950 euros."),
    ("Mara likes green tea.", "Theo likes green tea."),
    ("玛拉喝咖啡。", "玛拉不喝咖啡。"),
]


@pytest.mark.parametrize("embedder", [None, HashEmbedder()], ids=["by meaning", "by characters"])
@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_a_negation_a_number_or_a_name_is_never_a_duplicate(new_db, embedder, first, second):
    s = MemoryStore(new_db(), embedder=embedder)
    a = s.remember(first)
    b = s.remember(second)
    assert b.created and b.memory.id != a.memory.id and s.count() == 2
    assert difference(first, second) is not None


def test_a_paraphrase_reinforces_and_says_so_and_allow_duplicate_adds_it(new_db):
    s = MemoryStore(new_db())
    a = s.remember("Mara's cat is called Miso.")
    b = s.remember("Mara's cat is named Miso.")
    assert not b.created and b.memory.id == a.memory.id and "same meaning" in b.message
    assert b.memory.recall_count == a.memory.recall_count + 1
    c = s.remember("Mara's cat is named Miso.", dedupe=False)
    assert c.created and s.count() == 2


def test_a_memory_above_the_callers_trust_is_never_compared_nor_reinforced(new_db):
    s = MemoryStore(new_db())
    secret = s.remember("The door code is 4417.", sensitivity="hyper")
    mine = s.remember("The door code is 4417.", sensitivity="low", trust="low")
    assert mine.created and secret.memory.id not in mine.message
    again = s.remember("The code for the door is 4417.", sensitivity="low", trust="low")
    assert again.memory.id == mine.memory.id  # what the caller sees, never the hidden one
    assert s.get(secret.memory.id).recall_count == secret.memory.recall_count
    owner = s.remember("The door code is 4417.", sensitivity="hyper")  # the owner sees all
    assert owner.memory.id in (secret.memory.id, mine.memory.id) and not owner.created


def test_with_hashed_bigrams_remember_compares_characters_once_and_scans_no_vector(new_db, monkeypatch):
    """The hash embedder's vectors are the characters again: its duplicate check is the
    one by characters, and remember does not also scan every vector of the scope (at
    100,000 memories that scan was most of a remember's 16 ms)."""
    from mnemoscope.store.meaning import vector_index

    s = MemoryStore(new_db(), embedder=HashEmbedder())
    first = s.remember("The backups run on Fridays at noon.")
    scans = []
    real = vector_index.nearest
    monkeypatch.setattr(vector_index, "nearest", lambda *a, **k: scans.append(a) or real(*a, **k))
    again = s.remember("The backups run on Fridays at noon!")
    assert not again.created and again.memory.id == first.memory.id
    other = s.remember("Mara waters the basil on Sundays.")
    assert other.created and s.count() == 2
    assert scans == []
