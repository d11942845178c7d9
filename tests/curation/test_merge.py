"""store.conflicts.merge: two conflicting memories become one in one transaction, and its
undo puts back only what it changed."""

import pytest
from mnemoscope.store import MemoryStore, NotFound, ValidationError
from mnemoscope.store.curation.resolving import merge, undo_merge
from mnemoscope.store.schema.tables import REINFORCED


@pytest.fixture
def pair(store):
    old = store.remember("Theo works at Acme Corp.", now=store.now() - 86400).memory.id
    new = store.remember("Theo joined Globex last week.").memory.id
    return store, old, new


def test_merge_edits_the_newer_and_archives_the_older_and_undo_keeps_later_edits(pair):
    store, old, new = pair
    result = merge(store, new, old, "Theo left Acme and joined Globex.")
    assert store.get(new).text == "Theo left Acme and joined Globex." and store.get(old).layer == "archived"
    store.update(old, tags=["history"])
    store.update(new, who="Theo")
    undo_merge(store, result)
    assert store.get(new).text == "Theo joined Globex last week." and store.get(new).who == "Theo"
    assert store.get(old).layer != "archived" and store.get(old).tags == ["history"]


@pytest.mark.parametrize("bad", ["gone", "empty text"])
def test_a_merge_that_cannot_finish_writes_nothing(pair, bad):
    store, old, new = pair
    if bad == "gone":
        store.delete(old)
    before = store.get(new)
    with pytest.raises(NotFound if bad == "gone" else ValidationError):
        merge(store, new, old, "  " if bad == "empty text" else "Theo joined Globex.")
    assert store.get(new) == before
    if bad == "empty text":
        assert store.get(old).layer != "archived"


def test_restore_state_of_some_fields_keeps_the_others(db_path):
    with MemoryStore(db_path) as store:
        mid = store.remember("Mara takes her coffee black.").memory.id
        before = store.get(mid)
        store.reinforce(mid)
        store.update(mid, tags=["drinks"], touch=False)
        back = store.restore_state(before, REINFORCED)
        assert back.recall_count == before.recall_count and back.ref_time == before.ref_time
        assert back.tags == ["drinks"] and store.recall_events(mid) == []
