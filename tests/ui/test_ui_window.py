"""The inspector window as a whole: opening files, the table, the status bar, docks, themes, dialogs, fitting the screen."""

import os

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.ui.panes.memory_table import COLUMNS  # noqa: E402
from PySide6.QtCore import QStandardPaths, Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from support.helpers import resize, settle  # noqa: E402

QStandardPaths.setTestModeEnabled(True)

# every test here keeps its Qt settings in its own temporary folder
pytestmark = pytest.mark.usefixtures("qt_settings")


def test_table_models_pass_the_model_tester(window, qtmodeltester):
    qtmodeltester.check(window.table.model)
    qtmodeltester.check(window.table.proxy)


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
    from mnemoscope.default_database import default_database

    assert default_database().path == os.path.abspath(demo_db) and settings().value("last_db") is None
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


# -- fit any screen ------------------------------------------------------------------------

def clipped_widgets(window):
    """Visible widgets that their parent cuts off, and buttons, boxes and labels narrower
    than their text (an eliding label is allowed to be)."""
    from mnemoscope.ui.widgets import ElidedLabel
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractScrollArea,
        QComboBox,
        QLabel,
        QToolBar,
        QToolButton,
        QWidget,
    )

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
        arrow = isinstance(w, QToolButton) and w.arrowType() != Qt.ArrowType.NoArrow and not w.text()
        has_text = (isinstance(w, (QAbstractButton, QComboBox)) and not arrow) or (
            isinstance(w, QLabel) and not isinstance(w, ElidedLabel) and not w.wordWrap() and w.text())
        needed = min(w.sizeHint().width(), w.maximumWidth())
        if has_text and w.width() < needed - 1:
            found.append(f"{name(w)} is {w.width()} px wide, its text needs {needed}")
    return found


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_window_fits_the_screen_and_nothing_is_cut(window, qtbot, tmp_path, size):
    width, height = size
    resize(qtbot, window, width, height - 30)  # the title bar takes the rest
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
    settle(qtbot, window)
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


def test_copy_confirms_in_the_status_bar_what_it_copied(window, qtbot):
    pv = window.preview
    pv.user_message.setPlainText("What is Mara allergic to?")
    pv.recompile()
    qtbot.mouseClick(pv.copy_buttons["openai"], Qt.MouseButton.LeftButton)
    tokens = pv.result.metadata["token_count"]
    assert window.statusBar().currentMessage() == \
        f"Copied {len(pv.result.messages)} OpenAI messages, {tokens:,} tokens"


def test_the_table_sorts_by_a_column_that_is_on_screen(window):
    header = window.table.view.horizontalHeader()
    sorted_by = header.sortIndicatorSection()
    assert header.sectionViewportPosition(sorted_by) + header.sectionSize(sorted_by) <= \
        window.table.view.viewport().width()


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_table_headers_are_whole_and_the_text_column_ends_on_screen(window, qtbot, size):
    resize(qtbot, window, size[0], size[1] - 30)
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

    resize(qtbot, window, size[0], size[1] - 30)
    area = window.activity.widget()
    assert isinstance(area, QScrollArea) and not area.horizontalScrollBar().isVisible()
    button = window.activity.restore_button
    right = button.mapTo(area.viewport(), button.rect().topRight()).x()
    assert 0 < right < area.viewport().width()
    hint = window.activity.status
    assert hint.isVisible() and "mnemoscope mcp" in hint.shown_text()


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


def test_the_table_keeps_no_sort_key_per_memory(window, qtbot):
    """A tuple and a lowered copy of the text per memory, kept after the sort, were ~24 MB
    of a 100,000-memory window (issue #34: <= 600 MB). The sort and its role still work."""
    from mnemoscope.ui.panes.memory_table import SORT_ROLE

    model = window.table.model
    n = len(model.rows)
    assert n > 10
    per_row = [name for name, value in vars(model).items()
               if isinstance(value, (list, dict)) and len(value) == n and name not in ("rows", "_index")]
    assert not per_row
    text = COLUMNS.index("text")
    model.sort(text, Qt.SortOrder.AscendingOrder)
    keys = [model.data(model.index(r, text), SORT_ROLE) for r in range(n)]
    assert keys == sorted(m.text.lower() for m in model.rows)
