"""The memory editor, driven like a person would: edits, new memories, deletes, undo, and never losing an edit."""


import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from PySide6.QtCore import QStandardPaths, Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

QStandardPaths.setTestModeEnabled(True)

# every test here keeps its Qt settings in its own temporary folder
pytestmark = pytest.mark.usefixtures("qt_settings")


def test_edit_save_then_undo_restores(window):
    window.session.select("mem-006")
    window.editor.text.setPlainText("Mara is allergic to peanuts and cashews.")
    window.editor.importance.setValue(0.99)
    assert window.editor.save()
    assert window.session.store.get("mem-006").text == "Mara is allergic to peanuts and cashews."
    row = window.table.model.row_of("mem-006")
    assert "cashews" in window.table.model.index(row, 2).data()
    window.undo_action.trigger()
    restored = window.session.store.get("mem-006")
    assert restored.text == "Mara is allergic to peanuts." and restored.importance == 0.95
    assert window.editor.text.toPlainText() == "Mara is allergic to peanuts."
    window.redo_action.trigger()
    assert window.session.store.get("mem-006").importance == 0.99


def test_invalid_input_is_shown_next_to_the_field_and_nothing_is_written(window):
    window.session.select("mem-006")
    before = window.session.store.get("mem-006")
    window.editor.scope.setText("team 7")
    assert not window.editor.save()
    assert window.editor.errors["scope"].isVisibleTo(window.editor)
    assert "group:ID" in window.editor.errors["scope"].text()
    assert window.session.store.get("mem-006") == before
    window.editor.scope.setText("global")
    window.editor.text.setPlainText("   ")
    assert not window.editor.save() and window.editor.errors["text"].isVisibleTo(window.editor)
    assert window.session.undo_stack.count() == 0


def test_new_memory_then_undo_removes_it(window):
    n = window.session.store.count()
    window.editor.start_new()
    window.editor.text.setPlainText("Mara adopted a second cat called Tofu.")
    window.editor.entities.setText("Tofu, Mara")
    assert window.editor.save()
    assert window.session.store.count() == n + 1
    new_id = window.session.selected_id
    assert set(window.session.store.get(new_id).entities) == {"Tofu", "Mara"}
    assert new_id in window.map.visible_ids
    window.undo_action.trigger()
    assert window.session.store.count() == n and new_id not in window.map.visible_ids
    window.redo_action.trigger()
    assert window.session.store.get(new_id).text == "Mara adopted a second cat called Tofu."


def test_delete_then_undo_restores_the_memory_with_its_links(window):
    store = window.session.store
    before = store.get("mem-032")
    assert before.references == ["mem-011"] and before.entities
    window.session.select("mem-032")
    window.editor.delete()
    assert not store.exists("mem-032") and "mem-032" not in window.map.visible_ids
    window.undo_action.trigger()
    after = store.get("mem-032")
    assert after.references == ["mem-011"] and after.entities == before.entities
    assert "mem-032" in window.map.visible_ids


# -- never lose an edit ------------------------------------------------------------------

def answer_next_dialog(button):
    """Click ``button`` in the next modal dialog, as a person would."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    def click():
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox), box
        box.button(button).click()

    QTimer.singleShot(0, click)


def type_into_editor(window, qtbot, text):
    qtbot.keyClicks(window.editor.topic, text)


def test_an_unsaved_edit_is_marked_and_kept_until_the_user_decides(window, qtbot):
    store = window.session.store
    window.session.select("mem-006")
    assert not window.isWindowModified() and "unsaved" not in window.editor.heading.text()
    type_into_editor(window, qtbot, "allergy")
    assert window.isWindowModified() and "[*]" in window.windowTitle()
    assert "unsaved" in window.editor.heading.text()
    # Cancel: the selection stays, the typed text stays, the table row stays
    answer_next_dialog(QMessageBox.StandardButton.Cancel)
    window.table.view.selectRow(window.table.proxy.mapFromSource(
        window.table.model.index(window.table.model.row_of("mem-011"), 0)).row())
    assert window.session.selected_id == "mem-006"
    assert window.editor.topic.text().endswith("allergy")
    def the_row_shown_selected():
        rows = window.table.view.selectionModel().selectedRows()
        assert window.table.proxy.data(rows[0], Qt.ItemDataRole.UserRole + 2) == "mem-006"

    qtbot.waitUntil(the_row_shown_selected)  # the table puts it back once the dialog is answered
    # Save: the edit is written, then the other memory opens
    answer_next_dialog(QMessageBox.StandardButton.Save)
    assert window.session.select("mem-011")
    assert store.get("mem-006").topic.endswith("allergy")
    assert window.editor.memory_id == "mem-011" and not window.isWindowModified()
    # Discard: the edit is dropped
    type_into_editor(window, qtbot, "zzz")
    answer_next_dialog(QMessageBox.StandardButton.Discard)
    assert window.session.select("mem-001")
    assert "zzz" not in store.get("mem-011").topic
    assert window.editor.memory_id == "mem-001" and "unsaved" not in window.editor.heading.text()


def test_ctrl_s_saves_the_memory_in_the_editor(window, qtbot):
    window.session.select("mem-006")
    type_into_editor(window, qtbot, " pets")
    window.activateWindow()
    qtbot.keyClick(window.editor.topic, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert window.session.store.get("mem-006").topic.endswith(" pets")
    assert not window.isWindowModified()


def test_quitting_or_opening_another_file_asks_about_an_unsaved_edit(window, qtbot, tmp_path):
    window.session.select("mem-006")
    type_into_editor(window, qtbot, "x")
    answer_next_dialog(QMessageBox.StandardButton.Cancel)
    assert not window.open_path(str(tmp_path / "other.db"), create=True)
    assert window.session.store.path.endswith("demo.db")
    answer_next_dialog(QMessageBox.StandardButton.Cancel)
    assert not window.close() and window.isVisible()
    answer_next_dialog(QMessageBox.StandardButton.Discard)
    assert window.close()


def test_a_failed_write_shows_its_error_and_leaves_nothing_to_undo(window, monkeypatch):
    from mnemoscope.store import StoreError

    def locked(*_a, **_k):
        raise StoreError("database is locked: another program is writing")

    monkeypatch.setattr(window.session.store, "tick", locked)
    window.advance(1)
    assert "database is locked" in window.last_error
    assert window.session.undo_stack.count() == 0 and not window.undo_action.isEnabled()
    monkeypatch.setattr(window.session.store, "update", locked)
    window.session.select("mem-006")
    window.editor.topic.setText("food")
    assert not window.editor.save()
    assert "database is locked" in window.editor.status.text()
    assert window.session.undo_stack.count() == 0 and window.editor.dirty


def test_undoing_an_edit_restores_only_the_fields_it_changed(window, demo_db):
    store = window.session.store
    before = store.get("mem-006")
    window.session.select("mem-006")
    window.editor.text.setPlainText("Mara is allergic to peanuts and cashews.")
    assert window.editor.save()
    with MemoryStore(demo_db) as agent:  # meanwhile an agent recalls it and tags it
        agent.reinforce("mem-006")
        agent.update("mem-006", tags=["health", "agent-tag"])
    window.undo_action.trigger()
    after = store.get("mem-006")
    assert after.text == before.text
    assert after.recall_count == before.recall_count + 1
    assert len(store.recall_events("mem-006")) == before.recall_count + 1
    assert after.tags == ["health", "agent-tag"]


def test_a_failed_undo_is_reported_and_dropped(window, demo_db):
    window.session.select("mem-006")
    window.editor.topic.setText("food")
    assert window.editor.save()
    with MemoryStore(demo_db) as agent:
        agent.delete("mem-006")
    window.undo_action.trigger()
    assert "mem-006" in window.last_error
    assert window.session.undo_stack.count() == 0


def test_delete_key_deletes_the_selected_memory_undoably(window, qtbot):
    window.session.select("mem-032")
    window.table.view.setFocus()
    window.activateWindow()
    qtbot.keyClick(window.table.view, Qt.Key.Key_Delete)
    assert not window.session.store.exists("mem-032")
    assert window.undo_action.text().endswith("Delete memory")
    window.undo_action.trigger()
    assert window.session.store.exists("mem-032")
    # in a text field the key edits the text
    window.session.select("mem-006")
    window.editor.topic.setText("abc")
    window.editor.topic.setCursorPosition(0)
    qtbot.keyClick(window.editor.topic, Qt.Key.Key_Delete)
    assert window.editor.topic.text() == "bc" and window.session.store.exists("mem-006")


def test_a_field_error_clears_when_corrected_and_importance_is_checked(window, qtbot):
    window.session.select("mem-006")
    window.editor.importance.setValue(1.5)
    assert not window.editor.save()
    assert window.editor.errors["importance"].isVisibleTo(window.editor)
    assert "0 to 1" in window.editor.errors["importance"].text()
    assert window.session.store.get("mem-006").importance == 0.95
    window.editor.importance.setValue(0.9)
    assert not window.editor.errors["importance"].isVisibleTo(window.editor)
    window.editor.scope.clear()
    qtbot.keyClicks(window.editor.scope, "my team")
    assert not window.editor.save() and window.editor.errors["scope"].isVisibleTo(window.editor)
    qtbot.keyClick(window.editor.scope, Qt.Key.Key_Backspace)
    assert not window.editor.errors["scope"].isVisibleTo(window.editor)


CI_CONTEXT = {"repo": "lighthouse", "file": ".github/workflows/ci.yml", "line": 12, "tools": ["gh", "git"]}


def test_the_editor_shows_a_captures_reason_and_context_and_edits_them_undoably(window, qtbot, tmp_path):
    import json

    from mnemoscope.store.agents.capture import capture

    store = window.session.store
    mid = capture(store, "The staging token is used only in CI, never in a pull request.", context=CI_CONTEXT,
                  reason_to_remember="the agent pasted it into a PR once").primary.id
    window.session.notify(None)
    window.session.select(mid)
    ed = window.editor
    assert ed.reason_to_remember.text() == "the agent pasted it into a PR once"
    assert json.loads(ed.context.toPlainText()) == CI_CONTEXT
    assert '\n  "file": ".github/workflows/ci.yml",\n' in ed.context.toPlainText()  # formatted, one key a line
    assert not ed.dirty
    window.grab().save(str(tmp_path / "editor-context.png"))

    ed.reason_to_remember.setText("a token in a PR has to be rotated")
    ed.context.setPlainText('{"repo": "lighthouse", "file": ".github/workflows/ci.yml"}')
    assert ed.dirty
    assert ed.save()
    edited = store.get(mid)
    assert edited.reason_to_remember == "a token in a PR has to be rotated"
    assert edited.context == {"repo": "lighthouse", "file": ".github/workflows/ci.yml"}
    window.undo_action.trigger()
    back = store.get(mid)
    assert (back.reason_to_remember, back.context) == ("the agent pasted it into a PR once", CI_CONTEXT)
    assert json.loads(ed.context.toPlainText()) == CI_CONTEXT
    assert ed.reason_to_remember.text() == "the agent pasted it into a PR once"
    window.redo_action.trigger()
    assert store.get(mid).context == {"repo": "lighthouse", "file": ".github/workflows/ci.yml"}

    # JSON that does not parse is refused next to the field; nothing is written
    ed.context.setPlainText('{"repo": "lighthouse",')
    assert not ed.save()
    assert ed.errors["context"].isVisible() and "not valid JSON" in ed.errors["context"].text()
    assert "line 1" in ed.errors["context"].text()
    assert store.get(mid).context == {"repo": "lighthouse", "file": ".github/workflows/ci.yml"}
    # an empty box is no context
    ed.context.setPlainText("   ")
    assert ed.save() and store.get(mid).context is None


def test_a_new_memory_keeps_the_reason_typed_for_it(window):
    ed = window.editor
    ed.start_new()
    assert ed.context.toPlainText() == "" and ed.reason_to_remember.text() == ""
    ed.text.setPlainText("Mara's standup moved to 9:30.")
    ed.reason_to_remember.setText("she is annoyed when it is booked at 9")
    assert ed.save()
    m = window.session.store.get(window.session.selected_id)
    assert m.reason_to_remember == "she is annoyed when it is booked at 9" and m.context is None
