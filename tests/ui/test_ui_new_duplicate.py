"""The window's New, given what a memory already says in other words, reinforces that
memory (by meaning), says which in the editor, and Undo takes the reinforcement back."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")


def test_new_reinforces_a_memory_that_means_the_same_and_undo_takes_it_back(window):
    store = window.session.store
    mid = store.remember("Theo is afraid of spiders.").memory.id
    window.session.notify(None)
    count, recalls = store.count(), store.get(mid).recall_count
    window.editor.start_new()
    window.editor.text.setPlainText("Theo is scared of spiders.")  # other words: the same by meaning only
    assert window.editor.save()
    said = window.editor.status.text()
    assert said.startswith(f"Reinforced memory {mid} (“Theo is afraid of spiders.”)") and "by meaning" in said
    assert "Edit › Undo takes the reinforcement back" in said and "allow_duplicate" not in said
    assert store.count() == count and store.get(mid).recall_count == recalls + 1
    assert window.session.selected_id == mid
    window.undo_action.trigger()
    assert store.count() == count and store.get(mid).recall_count == recalls
    window.redo_action.trigger()
    assert store.get(mid).recall_count == recalls + 1


def test_new_keeps_a_memory_that_differs_in_a_negation_as_its_own(window):
    store = window.session.store
    store.remember("Theo is afraid of spiders.")
    window.session.notify(None)
    count = store.count()
    window.editor.start_new()
    window.editor.text.setPlainText("Theo is not afraid of spiders.")
    assert window.editor.save()
    assert store.count() == count + 1 and window.editor.status.text().startswith("remembered ")
