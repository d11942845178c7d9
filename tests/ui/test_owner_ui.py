"""File › Back up now… and Restore…, the Privacy and Conflicts views, driven like a person would."""

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store.files.backup import snapshots  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

AWS = "AKIAQ3EGRV7XKJ4PLM2N"


@pytest.fixture(autouse=True)
def _settings(qt_settings, monkeypatch):
    monkeypatch.setattr(QMessageBox, "information", lambda *a, **k: QMessageBox.StandardButton.Ok)


def _show(window, view):
    window.owner.show_view(view)


def _theo_changed_jobs(window):
    """Two memories that conflict, the Conflicts view shown with the pair selected."""
    store = window.session.store
    old = store.remember("Theo works at Acme Corp.", now=store.now() - 86400).memory.id
    new = store.remember("Theo joined Globex last week.").memory.id
    window.session.notify(None)
    view = window.owner.conflicts
    _show(window, view)
    view.view.setCurrentIndex(view.model.index(0, 0))
    return store, old, new, view


def test_file_menu_has_backup_and_restore_above_quit(window):
    file_menu = window.menuBar().actions()[0].menu()
    texts = [a.text() for a in file_menu.actions() if a.text()]
    assert texts[-4:] == ["&Back up now…", "&Restore…", "Write &mirror…", "&Quit"]
    view_menu = window.menuBar().actions()[2].menu()
    assert "Privacy and conflicts" in {a.text() for a in view_menu.actions()}


def test_privacy_view_lists_a_finding_and_redact_and_raise_are_undoable(window, qtbot, qtmodeltester):
    store = window.session.store
    mid = store.remember(f"Deploy key {AWS} for staging.", sensitivity="low").memory.id
    window.session.notify(None)
    view = window.owner.privacy
    _show(window, view)
    qtbot.waitUntil(lambda: view.model.rowCount() == 1)
    qtmodeltester.check(view.model)
    assert view.model.columnCount() == 1  # a card a row, readable in a narrow dock
    assert view.model.index(0, 0).data() == f"AWS Access Key in {mid}, chars 11-31: marked low, needs hyper\n" \
                                            "starts: AKIA…"
    assert "1 findings in 1 memories" in view.summary.text()
    assert not view.redact_button.isEnabled()
    view.view.setCurrentIndex(view.model.index(0, 0))
    assert window.session.selected_id == mid
    qtbot.mouseClick(view.redact_button, Qt.MouseButton.LeftButton)
    assert store.get(mid).text == "Deploy key [redacted AWS Access Key] for staging."
    assert view.model.rowCount() == 0
    window.undo_action.trigger()
    assert store.get(mid).text == f"Deploy key {AWS} for staging." and view.model.rowCount() == 1
    view.view.setCurrentIndex(view.model.index(0, 0))
    qtbot.mouseClick(view.raise_button, Qt.MouseButton.LeftButton)
    assert store.get(mid).sensitivity == "hyper" and view.model.rowCount() == 0
    window.undo_action.trigger()
    assert store.get(mid).sensitivity == "low"


def test_conflicts_view_supersede_archives_the_older_and_undo_brings_it_back(window, qtbot, qtmodeltester):
    store, old, new, view = _theo_changed_jobs(window)
    assert view.model.rowCount() == 1
    qtmodeltester.check(view.model)
    assert view.model.index(0, 0).data() == ("Theo · employer: joined globex / works at acme corp\n"
                                             "newer: Theo joined Globex last week.\nolder: Theo works at Acme Corp.")
    view.view.setCurrentIndex(view.model.index(0, 0))
    qtbot.mouseClick(view.supersede_button, Qt.MouseButton.LeftButton)
    assert store.get(old).layer == "archived" and view.model.rowCount() == 0
    window.undo_action.trigger()
    assert store.get(old).layer != "archived" and view.model.rowCount() == 1
    view.view.setCurrentIndex(view.model.index(0, 0))
    qtbot.mouseClick(view.keep_button, Qt.MouseButton.LeftButton)
    assert view.model.rowCount() == 0 and store.get(old).layer != "archived" and store.exists(new)
    window.undo_action.trigger()
    assert view.model.rowCount() == 1


def test_back_up_now_then_restore_shows_the_differences_and_replaces_only_when_accepted(window, tmp_path):
    store = window.session.store
    snap = window.owner.back_up_now(str(tmp_path / "snaps"))
    assert snap is not None and snapshots(store.path, tmp_path / "snaps") == [snap]
    assert "Snapshot saved" in window.statusBar().currentMessage()
    added = store.remember("Mara adopted a second cat.", memory_id="later").memory.id
    window.session.notify(None)
    dialog = window.owner.open_restore(str(snap))
    items = [dialog.differences.item(i).text() for i in range(dialog.differences.count())]
    assert items == ["only in the current database: later  Mara adopted a second cat."]
    assert dialog.counts.item(0, 1).text() == "66" and dialog.counts.item(0, 2).text() == "65"
    dialog.reject()
    assert store.exists(added)
    dialog = window.owner.open_restore(str(snap))
    dialog.accept()
    assert not store.exists(added) and window.table.model.rowCount() == 65
    assert window.session.undo_stack.count() == 0
    assert len(snapshots(store.path)) == 1  # the replaced database, kept beside it


def test_restore_of_a_file_that_is_not_a_database_explains_why(window, tmp_path):
    bogus = tmp_path / "notes.db"
    bogus.write_text("not a database")
    assert window.owner.open_restore(str(bogus)) is None
    assert "not a SQLite database" in window.last_error


def test_merge_keeps_one_memory_with_the_merged_text_as_one_undo_step(window, qtbot, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    store, old, new, view = _theo_changed_jobs(window)
    monkeypatch.setattr(QInputDialog, "getMultiLineText",
                        lambda *a, **k: ("Theo left Acme and joined Globex in November.", True))
    qtbot.mouseClick(view.merge_button, Qt.MouseButton.LeftButton)
    assert store.get(new).text == "Theo left Acme and joined Globex in November."
    assert store.get(old).layer == "archived" and view.model.rowCount() == 0
    window.undo_action.trigger()
    assert store.get(new).text == "Theo joined Globex last week." and store.get(old).layer != "archived"


def test_advancing_more_than_30_days_snapshots_first(window):
    store = window.session.store
    window.advance(7)
    assert snapshots(store.path) == []
    window.advance(90)
    [snap] = snapshots(store.path)
    assert window.session.undo_stack.count() == 2  # the advances stay undoable


def test_export_asks_first_when_it_would_put_out_a_secret(window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    asked = []

    def answer(reply):
        return lambda *a, **k: asked.append(a[2]) or reply

    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.No))
    window._export_dialog()
    assert out.exists() and asked == []  # the demo holds nothing the check flags: no question
    out.unlink()
    window.session.store.remember(f"Deploy key {AWS}.")
    window.session.notify(None)
    window._export_dialog()
    assert not out.exists() and asked[0].startswith("The export holds 1 thing the privacy check flags (AWS")
    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.Yes))
    window._export_dialog()
    assert AWS in out.read_text()


def test_write_mirror_from_the_window(window, tmp_path):
    result = window.owner.write_mirror(str(tmp_path / "vault"))
    # a folder meant for git: nothing above medium (the demo's 4 high and hyper memories)
    assert result.memories == 57 and (tmp_path / "vault" / "entities" / "Mara.md").exists()
    assert "Mirror of 57 memories" in window.statusBar().currentMessage()
    assert not any("asthma" in p.read_text(encoding="utf-8") for p in (tmp_path / "vault").rglob("*.md"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "thesis.md").write_text("mine")
    assert window.owner.write_mirror(str(tmp_path / "docs")) is None
    assert "not empty" in window.last_error


def test_copying_a_prompt_that_holds_a_secret_asks_first(window, monkeypatch):
    from PySide6.QtGui import QGuiApplication

    pv = window.preview
    pv.user_message.setPlainText(f"Deploy with {AWS}, how does Mara like answers?")
    pv.recompile()
    QGuiApplication.clipboard().setText("before")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
    pv.copy_buttons["text"].click()
    assert QGuiApplication.clipboard().text() == "before"
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    pv.copy_buttons["text"].click()
    assert AWS in QGuiApplication.clipboard().text()
