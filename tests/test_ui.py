"""The inspector window, driven like a person would, on real temporary databases."""

import hashlib
import os

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QStandardPaths, Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from store import MemoryStore  # noqa: E402

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
    assert "cashews" in window.table.model.index(row, 1).data()
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
    from app.ui.launch import build_window
    from app.ui.main_window import settings

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

    from app.ui import launch

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
