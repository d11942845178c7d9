"""The inspector window, driven like a person would, on real temporary databases."""

import hashlib
import os

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.ui.memory_table import COLUMNS, ID_ROLE  # noqa: E402
from PySide6.QtCore import QStandardPaths, Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

QStandardPaths.setTestModeEnabled(True)


@pytest.fixture(autouse=True)
def _settings(qt_settings):
    """Every test here keeps its Qt settings in its own temporary folder."""


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def test_window_shows_one_dot_per_visible_memory(window):
    store = window.session.store
    not_archived = [m.id for m in store.list() if m.layer != "archived"]
    assert sorted(window.map.visible_ids) == sorted(not_archived)
    assert len(window.map.scatter.data) == len(not_archived)
    assert "archived 4" in window.map.caption.text() or "archived" in window.map.caption.text()
    assert window.table.model.rowCount() == store.count()
    entities_shown = set(window.map.entity_names)
    assert "Mara" in entities_shown and "Lighthouse" in entities_shown


def test_table_models_pass_the_model_tester(window, qtmodeltester):
    qtmodeltester.check(window.table.model)
    qtmodeltester.check(window.table.proxy)


def test_clicking_a_dot_selects_the_row_and_fills_the_editor(window, qtbot):
    target = "mem-011"
    pos = window.map.screen_pos_of(target)
    qtbot.mouseClick(window.map.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.waitUntil(lambda: window.session.selected_id is not None)
    selected = window.session.selected_id
    memory = window.session.store.get(selected)
    assert window.editor.text.toPlainText() == memory.text
    rows = window.table.view.selectionModel().selectedRows()
    assert len(rows) == 1 and window.table.proxy.data(rows[0], Qt.ItemDataRole.UserRole + 2) == selected
    # and the other way round: picking a row selects the dot
    index = window.table.proxy.index(3, 0)
    window.table.view.setCurrentIndex(index)
    row_id = window.table.proxy.data(index, Qt.ItemDataRole.UserRole + 2)
    assert window.session.selected_id == row_id
    assert window.map.selection_ring.data["x"].size == (1 if row_id in window.map.visible_ids else 0)


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


def test_advance_a_year_moves_memories_outward_and_undo_restores(window):
    store = window.session.store
    before = {m.id: m.layer for m in store.list()}
    radii_before = {mid: (x * x + y * y) ** 0.5 for mid, (x, y) in window.map._positions.items()}
    window.advance(365)
    stats = store.stats()["layers"]
    assert window.map.caption.text().endswith(" · ".join(f"{k} {v}" for k, v in stats.items()))
    assert stats["archived"] > 4
    summary = window.tick_summary.text()
    assert "+365 days" in summary and "→ archived" in summary
    moved_out = [mid for mid, (x, y) in window.map._positions.items()
                 if (x * x + y * y) ** 0.5 > radii_before[mid] + 1e-6]
    assert len(moved_out) > 20
    window.undo_action.trigger()
    assert {m.id: m.layer for m in store.list()} == before
    assert store.clock_offset == 0


def test_time_travel_and_browsing_leave_the_file_unchanged(window, demo_db, qtbot):
    window.session.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = digest(demo_db)
    window.preview_slider.setValue(365)
    assert "Previewing 365 days" in window.map.caption.text()
    assert window.session.store.get("mem-049").layer != "archived"
    window.preview_slider.setValue(0)
    window.session.select("mem-001")
    window.map.set_search("Mara")
    window.table.filter_box.setText("tea")
    window.map.set_rotation(1.0)
    qtbot.wait(50)
    assert digest(demo_db) == before


def test_time_travel_returns_to_now_when_let_go(window, qtbot):
    window.preview_slider.setValue(200)
    assert window.session.preview_days == 200
    window.preview_slider.sliderReleased.emit()
    qtbot.waitUntil(lambda: window.session.preview_days == 0)


def test_legend_click_hides_a_kind(window, qtbot):
    events = [m.id for m in window.session.store.list(kind="event") if m.layer != "archived"]
    assert set(events) <= set(window.map.visible_ids)
    qtbot.mouseClick(window.map.legend_buttons["event"], Qt.MouseButton.LeftButton)
    assert not set(events) & set(window.map.visible_ids)
    qtbot.mouseClick(window.map.legend_buttons["event"], Qt.MouseButton.LeftButton)
    assert set(events) <= set(window.map.visible_ids)


def test_search_highlights_matches(window, qtbot):
    qtbot.keyClicks(window.map.search_box, "lighthouse")
    matches = window.map.search_matches
    expected = {m.id for m in window.session.store.list() if m.layer != "archived" and
                ("lighthouse" in m.text.lower() or "Lighthouse" in m.entities)}
    assert matches == expected and matches
    assert f"{len(matches)} match" in window.map.caption.text()


def test_hovering_an_entity_highlights_its_lines(window):
    window.map.highlight_entity("Theo")
    xs, _ = window.map.highlight_curve.getData()
    theo = [m for m in window.session.store.list() if "Theo" in m.entities and m.layer != "archived"]
    assert len(xs) == 2 * len(theo)


def test_tooltip_describes_the_memory(window):
    tip = window.map.tooltip_for("mem-006")
    for part in ("peanuts", "fact", "strength", "importance", "recalls", "scope", "entities: Mara"):
        assert part in tip


def test_opening_a_corrupt_file_shows_the_reason_and_keeps_the_app(window, tmp_path, qtbot):
    bad = tmp_path / "broken.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x13" * 5000)
    before = window.session.store.path
    assert not window.open_path(str(bad))
    dialog = window.findChild(QMessageBox, "error_dialog")
    assert dialog is not None and "corrupt" in dialog.text()
    dialog.close()
    assert window.session.store.path == before
    text = tmp_path / "notes.db"
    text.write_text("hello")
    assert not window.open_path(str(text)) and "not a SQLite database" in window.last_error
    assert "looks like a text file" in window.last_error and "b'" not in window.last_error


def test_external_writes_refresh_the_views_and_keep_the_selection(window, demo_db, qtbot):
    window.session.select("mem-006")
    window.editor.topic.setText("unsaved edit")
    window.editor.dirty = True
    with MemoryStore(demo_db) as agent:
        agent.remember("Mara booked a flight to Tokyo.", kind="event")
    qtbot.waitUntil(lambda: window.table.model.rowCount() == 66, timeout=3000)
    assert window.session.selected_id == "mem-006"
    assert window.editor.topic.text() == "unsaved edit"
    assert len(window.map.dots) == 66


def test_status_bar_shows_path_counts_and_clock(window, demo_db):
    assert window.status_path.text() == demo_db
    assert "habit" in window.status_counts.text() and "archived" in window.status_counts.text()
    window.advance(30)
    assert "(+30 d)" in window.status_clock.text()


def test_screenshot_is_the_window_size_and_not_blank(window, tmp_path):
    image = window.grab().toImage()
    assert (image.width(), image.height()) == (window.width(), window.height())
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 37)
               for y in range(0, image.height(), 37)}
    assert len(colours) > 10
    path = tmp_path / "window.png"
    assert window.grab().save(str(path)) and os.path.getsize(path) > 10_000


def test_window_remembers_geometry_and_last_database(qtbot, demo_db):
    from mnemoscope.ui.launch import build_window
    from mnemoscope.ui.main_window import settings

    w = build_window(demo_db, dark=False)
    qtbot.addWidget(w)
    w.resize(700, 500)
    w.close()
    assert settings().value("last_db") == os.path.abspath(demo_db)
    again = build_window(None, dark=False)
    qtbot.addWidget(again)
    assert again.session.store.path == os.path.abspath(demo_db)
    assert (again.width(), again.height()) == (700, 500)
    again.session.close()


def test_qt_binding_keeps_none_alive(qtbot):
    """PySide6 6.12.0 under Python 3.11 loses a reference to None each time a pyqtgraph
    item's itemChange returns; the inspector then aborts mid-redraw. Guard the pin."""
    import sys

    import pyqtgraph as pg

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    label = pg.TextItem("x")
    plot.addItem(label)
    before = sys.getrefcount(None)
    for i in range(2000):
        label.setPos(i, i)
        label.setVisible(i % 2 == 0)
    assert sys.getrefcount(None) - before > -100


def test_unexpected_errors_are_shown_and_logged(window, tmp_path, monkeypatch):
    import logging
    import sys

    from mnemoscope.ui import launch

    log_file = tmp_path / "mnemoscope.log"
    handler = logging.FileHandler(log_file)
    logging.getLogger("mnemoscope").addHandler(handler)
    old_hook = sys.excepthook
    try:
        launch.install_excepthook(lambda: window)
        try:
            raise RuntimeError("boom in a slot")
        except RuntimeError:
            sys.excepthook(*sys.exc_info())
    finally:
        sys.excepthook = old_hook
        logging.getLogger("mnemoscope").removeHandler(handler)
        handler.close()
    boxes = [b for b in window.findChildren(QMessageBox) if "boom in a slot" in b.text()]
    assert boxes and boxes[0].isVisible()
    assert "RuntimeError: boom in a slot" in log_file.read_text()
    boxes[0].close()
    assert window.isVisible()


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
    qtbot.wait(10)
    rows = window.table.view.selectionModel().selectedRows()
    assert window.table.proxy.data(rows[0], Qt.ItemDataRole.UserRole + 2) == "mem-006"
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


def test_import_is_one_undoable_step_that_selects_what_came_in(window, tmp_path):
    store = window.session.store
    window.session.select("mem-006")
    window.editor.topic.setText("food")
    assert window.editor.save()
    lines = [
        '{"id": "imp-1", "text": "Theo learned to sail in Brittany.", "kind": "event", "importance": 0.6}',
        '{"id": "imp-2", "text": "An old note about a printer.", "kind": "fact", "importance": 0.05, '
        '"created_at": "2019-01-01T00:00:00Z", "ref_time": "2019-01-01T00:00:00Z"}',
    ]
    path = tmp_path / "more.jsonl"
    path.write_text("\n".join(lines) + "\n")
    n = store.count()
    window.import_jsonl(str(path))
    assert store.count() == n + 2
    assert window.session.selected_id == "imp-1" and window.editor.memory_id == "imp-1"
    rows = window.table.view.selectionModel().selectedRows()
    assert window.table.proxy.data(rows[0], Qt.ItemDataRole.UserRole + 2) == "imp-1"
    assert store.get("imp-2").layer == "archived"
    message = window.statusBar().currentMessage()
    assert "2 imported" in message and "1 in the archived layer" in message
    assert window.session.undo_stack.count() == 2  # the edit before is still undoable
    assert window.undo_action.text().endswith("Import JSONL")
    window.undo_action.trigger()
    assert store.count() == n and not store.exists("imp-1")
    window.redo_action.trigger()
    assert store.get("imp-1").text == "Theo learned to sail in Brittany."
    window.undo_action.trigger()
    window.undo_action.trigger()
    assert store.get("mem-006").topic != "food"


def test_with_no_database_open_nothing_offers_to_write(qtbot, qt_settings):
    from mnemoscope.ui.main_window import MainWindow

    w = MainWindow(None)
    qtbot.addWidget(w)
    w.show()
    assert not w.save_action.isEnabled() and not w.tick_action.isEnabled()
    assert not w.editor.save_button.isEnabled() and not w.import_action.isEnabled()
    assert not w.advance_button.isEnabled()
    assert not w.editor.save()
    assert "No database open" in w.editor.status.text()


def test_advancing_one_day_reads_in_the_singular(window):
    window.advance(1)
    assert window.undo_action.text().endswith("Advance 1 day")
    assert "+1 day:" in window.tick_summary.text()
    window.advance(7)
    assert window.undo_action.text().endswith("Advance 7 days")


# -- fit any screen ------------------------------------------------------------------------

def clipped_widgets(window):
    """Visible widgets that their parent cuts off, and buttons, boxes and labels narrower
    than their text (an eliding label is allowed to be)."""
    from mnemoscope.ui.widgets import ElidedLabel
    from PySide6.QtWidgets import QAbstractButton, QAbstractScrollArea, QComboBox, QLabel, QToolBar, QWidget

    def ancestors(w):
        p = w.parentWidget()
        while p is not None:
            yield p
            p = p.parentWidget()

    def name(w):
        text = w.text() if callable(getattr(w, "text", None)) else ""
        return f"{type(w).__name__}({w.objectName() or text[:20]!r})"

    found = []
    for w in window.findChildren(QWidget):
        if not w.isVisible() or w.isWindow():
            continue
        parent = w.parentWidget()
        scrolls = any(isinstance(a, (QAbstractScrollArea, QToolBar)) for a in ancestors(w))
        if parent is not None and not scrolls and not parent.rect().contains(w.geometry()):
            found.append(f"{name(w)} {w.geometry().getRect()} outside {name(parent)} {parent.rect().getRect()}")
        has_text = isinstance(w, (QAbstractButton, QComboBox)) or (
            isinstance(w, QLabel) and not isinstance(w, ElidedLabel) and not w.wordWrap() and w.text())
        needed = min(w.sizeHint().width(), w.maximumWidth())
        if has_text and w.width() < needed - 1:
            found.append(f"{name(w)} is {w.width()} px wide, its text needs {needed}")
    return found


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_window_fits_the_screen_and_nothing_is_cut(window, qtbot, tmp_path, size):
    width, height = size
    window.resize(width, height - 30)  # the title bar takes the rest
    qtbot.wait(20)
    assert (window.width(), window.height()) == (width, height - 30)
    assert clipped_widgets(window) == []
    window.grab().save(str(tmp_path / f"window-{width}.png"))
    # what used to widen the window: time travel, a long tick summary, the cache
    # simulation, a long scope name, a long path
    window.session.store.remember("Quill keeps a note in a scope with a very long name.",
                                  scope="private:" + "agent-with-a-long-identifier" * 3)
    window.session.notify(None)
    window.preview_slider.setValue(365)
    window.advance(365)
    pv = window.preview
    pv.user_message.setPlainText("What should I cook for Mara?")
    pv.history.add("user", "Hello there")
    pv.history.add("assistant", "Hi Mara")
    pv.recompile()
    pv.cache_pane.simulate()
    pv.tabs.setCurrentIndex(3)
    qtbot.wait(20)
    assert window.width() == width and window.minimumSizeHint().width() <= width
    assert clipped_widgets(window) == []
    window.grab().save(str(tmp_path / f"window-{width}-after.png"))


def test_view_reset_layout_brings_back_closed_and_floating_docks(window):
    window.preview_dock.close()
    window.memory_dock.setFloating(True)
    action = next(a for a in window.menuBar().actions() if a.text() == "&View").menu().actions()
    next(a for a in action if a.text() == "&Reset layout").trigger()
    assert window.preview_dock.isVisible() and not window.memory_dock.isFloating()
    assert window.preview_dock.width() >= 280 and window.memory_dock.width() >= 280


# -- desktop conventions -------------------------------------------------------------------

def test_clicking_the_time_travel_track_previews_while_held_like_a_drag(window, qtbot):
    from PySide6.QtCore import QPoint

    slider = window.preview_slider
    at = QPoint(int(slider.width() * 0.75), slider.height() // 2)
    qtbot.mousePress(slider, Qt.MouseButton.LeftButton, pos=at)
    assert window.session.preview_days > 200 and slider.isSliderDown()
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=at)
    qtbot.waitUntil(lambda: window.session.preview_days == 0)


def test_help_about_names_versions_licences_and_the_data_folder(window, qt_settings):
    import sqlite3

    box = window.show_about()
    text = box.text()
    assert "0.1.0" in text and sqlite3.sqlite_version in text and "LGPL" in text and "MIT" in text
    assert os.environ["MNEMOSCOPE_HOME"] in text
    box.close()
    shortcuts = window.show_shortcuts().text()
    for key in ("Ctrl+S", "Ctrl+O", "Ctrl+N", "Ctrl+Z", "Ctrl+F", "Del"):
        assert key in shortcuts, key
    assert "Save memory" in shortcuts


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


def test_ctrl_f_goes_to_the_map_search(window, qtbot):
    window.activateWindow()
    qtbot.keyClick(window.table.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.map.search_box.hasFocus()


def test_copy_confirms_in_the_status_bar_what_it_copied(window, qtbot):
    pv = window.preview
    pv.user_message.setPlainText("What is Mara allergic to?")
    pv.recompile()
    qtbot.mouseClick(pv.copy_buttons["openai"], Qt.MouseButton.LeftButton)
    tokens = pv.result.metadata["token_count"]
    assert window.statusBar().currentMessage() == \
        f"Copied {len(pv.result.messages)} OpenAI messages, {tokens:,} tokens"


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


def test_the_table_sorts_by_a_column_that_is_on_screen(window):
    header = window.table.view.horizontalHeader()
    sorted_by = header.sortIndicatorSection()
    assert header.sectionViewportPosition(sorted_by) + header.sectionSize(sorted_by) <= \
        window.table.view.viewport().width()



@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_table_headers_are_whole_and_the_text_column_ends_on_screen(window, qtbot, size):
    window.resize(size[0], size[1] - 30)
    qtbot.wait(20)
    view = window.table.view
    header = view.horizontalHeader()
    for column, title in enumerate(COLUMNS):  # the title and the sort arrow, when scrolled to
        assert header.sectionSize(column) >= header.sectionSizeHint(column), title
    text = COLUMNS.index("text")
    assert 0 < header.sectionViewportPosition(text) + header.sectionSize(text) <= view.viewport().width()
    window.memory_dock.setMinimumWidth(600)  # a wider dock: the text column takes the room
    qtbot.waitUntil(lambda: view.viewport().width() > 500)
    assert header.sectionViewportPosition(text) + header.sectionSize(text) == view.viewport().width()


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_docks_under_the_map_need_no_sideways_scrolling(window, qtbot, size):
    """Their buttons and the first-start hint are on screen."""
    from PySide6.QtWidgets import QScrollArea

    window.resize(size[0], size[1] - 30)
    qtbot.wait(20)
    area = window.activity.widget()
    assert isinstance(area, QScrollArea) and not area.horizontalScrollBar().isVisible()
    button = window.activity.restore_button
    right = button.mapTo(area.viewport(), button.rect().topRight()).x()
    assert 0 < right < area.viewport().width()
    hint = window.activity.status
    assert hint.isVisible() and "mnemoscope mcp" in hint.shown_text()


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_decay_plot_labels_are_inside_the_plot_and_apart(window, qtbot, size):
    window.resize(size[0], size[1] - 30)
    window.session.select("mem-012")
    window.preview_slider.setValue(40)
    qtbot.wait(50)
    plot = window.decay
    area = plot.plot.getViewBox().sceneBoundingRect().adjusted(-1, -1, 1, 1)
    labels = [line.label.sceneBoundingRect() for line in
              (plot.now_line, plot.preview_line, plot.habit_line, plot.edge_line)]
    for label in labels:
        assert area.contains(label), (label, area)
    for i, one in enumerate(labels):
        assert not any(one.intersects(other) for other in labels[i + 1:]), (i, labels)

# -- the map -------------------------------------------------------------------------------

def view_radius(window):
    (x0, x1), (y0, y1) = window.map.plot.getViewBox().viewRange()
    return min(x1 - x0, y1 - y0) / 2


def test_fit_view_brings_the_whole_map_back(window, qtbot):
    vb = window.map.plot.getViewBox()
    full = view_radius(window)
    for way_home in ("key", "button", "double-click"):
        vb.scaleBy((0.2, 0.2))
        vb.translateBy(x=2.0, y=1.0)
        assert view_radius(window) < full / 2
        if way_home == "key":
            window.activateWindow()
            window.map.plot.setFocus()
            qtbot.keyClick(window.map.plot, Qt.Key.Key_Home)
        elif way_home == "button":
            qtbot.mouseClick(window.map.fit_button, Qt.MouseButton.LeftButton)
        else:
            corner = window.map.plot.viewport().rect().topLeft() + window.map.plot.viewport().rect().center() / 8
            qtbot.mouseDClick(window.map.plot.viewport(), Qt.MouseButton.LeftButton, pos=corner)
        assert abs(view_radius(window) - full) < 0.2, way_home


def test_ring_labels_are_drawn_above_the_dots(window, qtbot):
    window.resize(1920, 1050)  # room for all three; a smaller map drops the one that would overlap
    qtbot.wait(20)
    for label in window.map.ring_labels.values():
        assert label.zValue() > window.map.scatter.zValue() and label.isVisible()


def test_entity_labels_never_overlap_and_the_most_mentioned_come_first(window):
    m = window.map
    m.plot.grab()  # as painted: a label settles its anchor when drawn
    labels = [m.entity_labels[n] for n in m.labelled_entities]
    rects = [label.sceneBoundingRect() for label in labels] + \
        [label.sceneBoundingRect() for label in m.ring_labels.values() if label.isVisible()]
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert not a.intersects(b)
    most = max(m.entity_weight, key=m.entity_weight.get)
    assert most in m.labelled_entities
    unlabelled = set(m.entity_pos) - m.labelled_entities
    assert all(not m.entity_labels[n].isVisible() for n in unlabelled if n in m.entity_labels)


def test_adding_a_memory_leaves_other_entities_where_they_were(window, demo_db, qtbot):
    before = dict(window.map.entity_pos)
    with MemoryStore(demo_db) as agent:
        agent.remember("Zoe started a pottery class.", kind="event", topic="pottery", entities=["Zoe"])
    qtbot.waitUntil(lambda: "Zoe" in window.map.entity_pos, timeout=3000)
    qtbot.waitUntil(lambda: not window.map._anim_timer.isActive(), timeout=3000)
    after = window.map.entity_pos
    assert {n: after[n] for n in before} == before


def test_map_tooltips_are_ours_not_pyqtgraphs(window, qtbot):
    m = window.map
    assert m.scatter.opts["tip"] is None and m.entity_scatter.opts["tip"] is None
    x, y = m.entity_pos["Mara"]
    from PySide6.QtCore import QPointF

    at = m.plot.mapFromScene(m.plot.getViewBox().mapViewToScene(QPointF(x, y)))
    qtbot.mouseMove(m.plot.viewport(), at)
    qtbot.wait(50)
    assert "data=" not in m.entity_scatter.toolTip() and "x:" not in m.entity_scatter.toolTip()


@pytest.fixture
def crowded_window(qtbot, qt_settings, tmp_path):
    """The window on 4,000 memories in 8 topics, more than the map draws as dots."""
    import json

    from mnemoscope.ui.main_window import MainWindow

    path = str(tmp_path / "crowded.db")
    lines = [json.dumps({"id": f"c{i:05d}", "text": f"note {i} about topic {i % 8}", "kind": "fact",
                         "topic": f"t{i % 8}", "importance": 0.5, "recall_count": 6}) for i in range(4000)]
    with MemoryStore(path) as s:
        s.import_jsonl("\n".join(lines))
    w = MainWindow(MemoryStore(path))
    w.resize(1366, 738)
    w.show()
    qtbot.waitExposed(w)
    qtbot.wait(50)  # the docks take their first sizes
    yield w
    w.close()
    w.session.close()
    w.deleteLater()


def test_a_crowded_map_shows_labelled_density_that_resolves_into_dots(crowded_window):
    m = crowded_window.map
    assert m.dense and m.density.isVisible() and not m.scatter.isVisible()
    texts = [m.sector_labels[c].textItem.toPlainText() for c in m.labelled_sectors]
    assert texts and all(" · " in t for t in texts)
    shown = {c: m.sector_counts[c] for c in m.labelled_sectors}
    assert sum(m.sector_counts.values()) == 4000
    for (_layer, group), n in shown.items():
        assert f"{group.split(':', 1)[1]} · {n:,}" in texts
    m.plot.getViewBox().setRange(xRange=(0.2, 0.8), yRange=(0.2, 0.8), padding=0)
    assert not m.dense and m.scatter.isVisible() and not m.density.isVisible()
    m.fit_view()
    assert m.dense


def test_view_theme_applies_now_and_is_remembered(window, monkeypatch):
    from mnemoscope.ui import theme
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    monkeypatch.delenv("MNEMOSCOPE_THEME")
    app = QApplication.instance()
    try:
        window.findChild(type(window.theme_actions.actions()[0]), "theme_dark").trigger()
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 128
        assert window.map.plot.backgroundBrush().color().lightness() < 128
        assert theme.chosen() == "dark"  # what the next start reads
        assert window.findChild(type(window.theme_actions.actions()[0]), "theme_dark").isChecked()
    finally:
        window.set_theme("light")
    assert app.palette().color(QPalette.ColorRole.Window).lightness() > 128
    assert window.map.plot.backgroundBrush().color().lightness() > 128
    assert theme.chosen() == "light"


def test_new_database_with_the_demo_is_one_undoable_step(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    path = str(tmp_path / "fresh.db")
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (path, "Databases (*.db)"))
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    window._new_dialog()
    store = window.session.store
    assert store.path == path and store.count() == 65
    assert window.undo_action.text().endswith("Load the demo memories")
    assert window.session.selected_id is not None
    window.undo_action.trigger()
    assert store.count() == 0


CI_CONTEXT = {"repo": "lighthouse", "file": ".github/workflows/ci.yml", "line": 12, "tools": ["gh", "git"]}


def test_the_editor_shows_a_captures_reason_and_context_and_edits_them_undoably(window, qtbot, tmp_path):
    import json

    from mnemoscope.store.capture import capture

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


# -- the selected memory stays in view -----------------------------------------------------

def selected_row_in_view(window):
    """The selected memory's id and whether its whole row is within the table's viewport
    from top to bottom (the table may be scrolled sideways)."""
    view = window.table.view
    rows = view.selectionModel().selectedRows()
    assert len(rows) == 1, "exactly one row is selected"
    shown = view.visualRect(rows[0])
    in_view = shown.height() > 0 and shown.top() >= 0 and shown.bottom() < view.viewport().height()
    return view.model().data(rows[0], ID_ROLE), in_view


def select_far_down(window, qtbot, row_from_end=2):
    """Click a memory near the bottom of the table, scrolled into view as a person would."""
    view = window.table.view
    index = view.model().index(view.model().rowCount() - row_from_end, 2)
    view.scrollTo(index)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualRect(index).center())
    chosen = view.model().data(index, ID_ROLE)
    assert window.session.selected_id == chosen and selected_row_in_view(window) == (chosen, True)
    return chosen


@pytest.mark.parametrize("column", ["strength", "layer", "text"])
def test_the_selected_memory_stays_selected_and_in_view_after_ticks(window, qtbot, column):
    window.table.view.sortByColumn(COLUMNS.index(column), Qt.SortOrder.AscendingOrder)
    for step in (lambda: window.advance(0), lambda: window.advance(30), window.undo_action.trigger,
                 lambda: window.advance(365), window.undo_action.trigger, window.redo_action.trigger):
        chosen = select_far_down(window, qtbot)
        window.table.view.scrollToTop()  # the user looked elsewhere: a tick brings it back too
        step()
        qtbot.wait(10)
        assert selected_row_in_view(window) == (chosen, True)


def test_the_selected_memory_stays_in_view_when_another_process_writes(window, demo_db, qtbot):
    chosen = select_far_down(window, qtbot)
    with MemoryStore(demo_db) as agent:
        for word in ("tulips", "Lisbon", "violin", "chess", "kayaks", "quilts", "lanterns", "puffins"):
            agent.remember(f"Mara is fond of {word}.", importance=1.0)  # strong: sorted above it
    qtbot.waitUntil(lambda: window.table.model.rowCount() == 73, timeout=3000)
    assert selected_row_in_view(window) == (chosen, True)
    with MemoryStore(demo_db) as agent:
        agent.tick(advance_days=200)  # strengths and layers change under the table's sort
    qtbot.waitUntil(lambda: window.session.store.clock_offset == 200 * 86400, timeout=3000)
    qtbot.wait(10)
    assert selected_row_in_view(window) == (chosen, True)


# -- the time-travel slider: every way of moving it previews, writes nothing, returns ------

def handle_at(slider, days):
    """Where on the slider's track the handle for ``days`` sits."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QStyle

    span = slider.width()
    x = QStyle.sliderPositionFromValue(slider.minimum(), slider.maximum(), days, span)
    return QPoint(min(max(x, 4), span - 4), slider.height() // 2)


@pytest.fixture
def time_travel(window, demo_db, qtbot):
    """The slider, focused as a keyboard user leaves it; on leaving, the file is unchanged."""
    window.activateWindow()
    qtbot.waitActive(window)
    window.session.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = digest(demo_db)
    slider = window.preview_slider
    slider.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(slider.hasFocus)
    yield slider
    qtbot.wait(20)
    assert digest(demo_db) == before


def test_dragging_the_time_travel_handle_previews_until_let_go(window, qtbot, time_travel):
    slider = time_travel
    qtbot.mousePress(slider, Qt.MouseButton.LeftButton, pos=handle_at(slider, 0))
    qtbot.mouseMove(slider, handle_at(slider, 180))
    assert 150 < window.session.preview_days < 210 and "days" in window.preview_label.text()
    assert "Previewing" in window.map.caption.text()
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=handle_at(slider, 180))
    qtbot.waitUntil(lambda: window.session.preview_days == 0)
    assert window.preview_label.text().strip() == "now"


@pytest.mark.parametrize("key,days", [(Qt.Key.Key_Right, 1), (Qt.Key.Key_Up, 1), (Qt.Key.Key_PageUp, 30)])
def test_keys_move_the_time_travel_preview_and_escape_returns(window, qtbot, time_travel, key, days):
    slider = time_travel
    qtbot.keyClick(slider, key)
    qtbot.keyClick(slider, key)
    qtbot.wait(20)  # a key has no "let go": the preview stays to be looked at
    assert window.session.preview_days == 2 * days and "Previewing" in window.map.caption.text()
    qtbot.keyClick(slider, Qt.Key.Key_Escape)
    assert window.session.preview_days == 0 and slider.value() == 0


def test_leaving_the_time_travel_slider_returns_to_now(window, qtbot, time_travel):
    slider = time_travel
    qtbot.keyClick(slider, Qt.Key.Key_PageUp)
    assert window.session.preview_days > 0
    window.table.view.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(lambda: window.session.preview_days == 0)


def test_the_wheel_moves_the_time_travel_preview_like_the_keys(window, qtbot, time_travel):
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    slider = time_travel
    window.table.view.setFocus()
    qtbot.waitUntil(lambda: not slider.hasFocus())
    at = QPointF(handle_at(slider, 100))
    wheel = QWheelEvent(at, QPointF(slider.mapToGlobal(at.toPoint())), QPoint(), QPoint(0, 120),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(slider, wheel)
    assert window.session.preview_days > 0 and slider.hasFocus()
    qtbot.wait(20)
    assert window.session.preview_days > 0
    qtbot.keyClick(slider, Qt.Key.Key_Escape)
    assert window.session.preview_days == 0


def test_the_time_travel_tooltip_says_how_each_way_returns(window):
    tip = window.preview_slider.toolTip()
    assert "nothing is written" in tip and "Esc" in tip and "let go" in tip.lower()
