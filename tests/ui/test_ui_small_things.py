"""Small things a new user meets that feel broken (issue 34, point 7), each as the person
met it."""

import json
import re

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402


def _rows(box) -> dict[str, str]:
    """The shortcuts dialog as {what it does: its keys}."""
    rows = re.findall(r"<tr><td><b>(.*?)</b></td><td>(.*?)</td></tr>", box.text())
    return {name: keys for keys, name in rows}


def test_the_shortcuts_dialog_lists_keys_a_person_types_under_stable_names(window, qtbot):
    window.editor.start_new()
    window.editor.text.setPlainText("A memory made so that Undo has something to say")
    window.editor.save()
    assert window.undo_action.text() != "&Undo"  # the action's live text names the last edit...
    box = window.show_shortcuts()
    rows = _rows(box)
    box.close()
    assert "Undo" in rows and "Redo" in rows  # ...the dialog does not
    assert not any(name.startswith(("Undo ", "Redo ")) for name in rows), rows
    # Qt's media keys (a keyboard's Redo, Undo and Help buttons) are not keys one types
    for keys in rows.values():
        assert not {"Redo", "Undo", "Help"} & {k.strip() for k in keys.split(",")}, keys
    assert "Ctrl+Shift+Z" in rows["Redo"] and "Ctrl+Y" in rows["Redo"]
    assert rows["Tick"] == "Ctrl+T"
    assert rows["Advance +1 day"] == "Ctrl+D"
    assert any(keys == "Esc" for keys in rows.values())
    assert "Ctrl+Enter" in rows.values()


def test_tick_and_advance_keys_do_what_the_dialog_says(window, qtbot):
    tables = window.session.store.tables
    before = tables.clock_offset()
    qtbot.keyClick(window.map.plot, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.session.job is None and tables.clock_offset() > before, timeout=10000)
    assert tables.clock_offset() - before == pytest.approx(86400)
    undo_depth = window.session.undo_stack.count()
    qtbot.keyClick(window.map.plot, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.session.undo_stack.count() == undo_depth + 1, timeout=10000)
    assert tables.clock_offset() - before == pytest.approx(86400)  # a tick does not move the clock


def test_the_empty_token_bars_say_what_to_do_without_reading_as_a_row(window, qtbot):
    from mnemoscope.ui.panes.token_bars import LABEL_W

    pv = window.preview
    pv.user_message.clear()
    pv.recompile()
    qtbot.waitUntil(lambda: pv.bars.result is None)
    image = pv.bars.grab().toImage()
    background = image.pixelColor(1, 1)

    def inked(x0, x1):
        return any(image.pixelColor(x, y) != background for x in range(x0, x1) for y in range(image.height()))

    # no "rules" label beside the hint, which read as "rules Type a user message…"
    assert not inked(0, LABEL_W - 2)
    assert inked(LABEL_W, image.width())  # the hint itself is there


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_editors_save_and_delete_are_on_screen_without_scrolling(window, qtbot, size):
    from support.helpers import resize, settle

    resize(qtbot, window, size[0], size[1] - 30)
    settle(qtbot, window)
    window.session.select(window.table.proxy.data(window.table.proxy.index(0, 0), Qt.ItemDataRole.UserRole + 2))
    qtbot.wait(20)
    dock = window.memory_dock.widget()
    for button in (window.editor.save_button, window.editor.delete_button):
        assert button.isVisible()
        top_left = button.mapTo(dock, button.rect().topLeft())
        bottom = button.mapTo(dock, button.rect().bottomRight())
        assert top_left.y() >= 0 and bottom.y() <= dock.height(), (button.text(), bottom.y(), dock.height())
        # and not scrolled out of an inner viewport either: what shows of it is all of it
        assert not button.visibleRegion().isEmpty()
        assert button.visibleRegion().boundingRect().height() == button.height()


def test_the_why_tab_gives_the_memory_text_most_of_its_width_at_1366(window, qtbot):
    from support.helpers import resize, settle

    resize(qtbot, window, 1366, 738)
    pv = window.preview
    pv.user_message.setPlainText("What should I cook for Mara tonight?")
    pv.recompile()
    pv.tabs.setCurrentWidget(pv.why_pane)
    settle(qtbot, window)
    table = pv.why_pane.table
    header = table.horizontalHeader()
    widths = [header.sectionSize(c) for c in range(header.count())]
    assert widths[1] >= 0.4 * table.viewport().width(), (widths, table.viewport().width())


# -- point 7, each as a person met it ---------------------------------------------------
ID = Qt.ItemDataRole.UserRole + 2


def _row_centre(table, row: int):
    view = table.view
    return view.visualRect(table.proxy.index(row, 2)).center()


def test_a_filtered_row_opens_when_another_memory_was_selected(window, qtbot):
    table = window.table
    first = table.proxy.data(table.proxy.index(0, 0), ID)
    window.session.select(first)
    first_text = window.session.store.get(first).text
    qtbot.keyClicks(table.filter_box, "Lisbon")  # the selected memory is filtered out
    assert table.proxy.rowCount() >= 1 and first_text not in \
        {table.proxy.data(table.proxy.index(r, 2)) for r in range(table.proxy.rowCount())}
    wanted = table.proxy.data(table.proxy.index(0, 0), ID)
    qtbot.mouseClick(table.view.viewport(), Qt.MouseButton.LeftButton, pos=_row_centre(table, 0))
    assert window.session.selected_id == wanted
    assert window.editor.memory_id == wanted
    assert window.editor.text.toPlainText() == window.session.store.get(wanted).text


def test_the_map_tooltip_stays_while_the_pointer_rests_on_the_dot(window, qtbot):
    from PySide6.QtCore import QEvent, QPoint
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QApplication, QToolTip
    from support.helpers import settle

    settle(qtbot, window)
    m = window.map
    mid = m.visible_ids[0]
    at = m.screen_pos_of(mid)
    at = QPoint(round(at.x()), round(at.y()))
    viewport = m.plot.viewport()
    qtbot.mouseMove(viewport, at)
    qtbot.waitUntil(QToolTip.isVisible)
    text = QToolTip.text()
    assert "strength" in text
    # the pointer rests: Qt asks the view for its tooltip (QEvent.ToolTip) after ~0.7 s
    QApplication.sendEvent(viewport, QHelpEvent(QEvent.Type.ToolTip, at, viewport.mapToGlobal(at)))
    qtbot.wait(500)  # a tooltip told to go goes 300 ms later
    assert QToolTip.isVisible() and QToolTip.text() == text


@pytest.mark.parametrize("field", ["who", "topic", "text"])
def test_ctrl_z_in_an_editor_field_with_nothing_typed_undoes_the_last_edit(window, qtbot, field):
    from PySide6.QtWidgets import QApplication

    store = window.session.store
    mid = window.table.proxy.data(window.table.proxy.index(0, 0), ID)
    window.session.select(mid)
    before = store.get(mid).importance
    window.editor.importance.setValue(0.11 if before != 0.11 else 0.12)
    window.editor.save()
    assert store.get(mid).importance != before
    widget = getattr(window.editor, field)
    window.activateWindow()
    widget.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is widget)
    qtbot.keyClick(widget, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert store.get(mid).importance == before
    qtbot.keyClick(widget, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert store.get(mid).importance != before


def test_ctrl_z_in_a_field_with_typing_undoes_the_typing_first(window, qtbot):
    from PySide6.QtWidgets import QApplication

    mid = window.table.proxy.data(window.table.proxy.index(0, 0), ID)
    window.session.select(mid)
    window.editor.importance.setValue(0.13)
    window.editor.save()
    index = window.session.undo_stack.index()
    widget = window.editor.topic
    window.activateWindow()
    widget.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is widget)
    before = widget.text()
    qtbot.keyClicks(widget, "xyz")
    qtbot.keyClick(widget, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert widget.text() == before and window.session.undo_stack.index() == index
    window.editor.dirty = False


def test_a_file_with_no_good_line_offers_no_partial_import_and_leaves_undo_alone(window, qtbot, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("{not json\n[1, 2]\n")
    stack = window.session.undo_stack
    count, top = stack.count(), stack.undoText()
    window.import_jsonl(str(path), confirm=True)
    qtbot.waitUntil(lambda: getattr(window, "import_refused_box", None) is not None
                    and window.import_refused_box.isVisible())
    box = window.import_refused_box
    good = box.findChild(type(box.buttons()[0]), "import_good_lines")
    assert good is None or not good.isVisible()
    assert "no good line" in box.text().lower() or "nothing to import" in box.text().lower()
    box.close()
    assert stack.count() == count and stack.undoText() == top


def test_a_partial_import_that_brings_nothing_new_leaves_no_undo_entry(window, qtbot, tmp_path):
    store = window.session.store
    existing = store.list()[0]
    path = tmp_path / "again.jsonl"
    path.write_text(json.dumps({"id": existing.id, "text": existing.text}) + "\n{not json\n")
    stack = window.session.undo_stack
    count = stack.count()
    window.import_jsonl(str(path))
    qtbot.waitUntil(lambda: getattr(window, "import_refused_box", None) is not None
                    and window.import_refused_box.isVisible())
    window.import_refused_box.findChild(type(window.import_refused_box.buttons()[0]), "import_good_lines").click()
    qtbot.waitUntil(lambda: window.session.job is None)
    qtbot.wait(50)
    assert stack.count() == count
    assert "nothing" in window.statusBar().currentMessage().lower()


def test_a_file_of_another_format_is_named_in_the_windows_words(window, qtbot, monkeypatch):
    import os

    from PySide6.QtWidgets import QMessageBox

    shown = []
    monkeypatch.setattr(QMessageBox, "exec", lambda self: shown.append(self.text() + "\n" + "\n".join(
        b.text() for b in self.buttons())) or QMessageBox.StandardButton.Cancel)
    errors = []
    monkeypatch.setattr(window, "show_error", lambda title, message: errors.append(message))
    mem0 = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "mem0", "memories.json")
    window.ecosystem.import_path(mem0, "letta", confirm=True)
    qtbot.waitUntil(lambda: bool(shown or errors))
    said = "\n".join(shown + errors)
    assert "--format" not in said
    assert "mem0" in said


@pytest.mark.parametrize("model, price", [("anthropic/claude-sonnet-4.5", 0.003), ("openai/gpt-4o-mini", 0.00015),
                                          ("openai/gpt-4o", 0.0025)])
def test_the_price_follows_the_model(window, model, price):
    pv = window.preview
    pv.model.setCurrentText("openai/gpt-4.1-mini")
    pv.model.setCurrentText(model)
    assert pv.price.value() == pytest.approx(price)


def test_a_typed_price_is_kept_for_an_unknown_model(window):
    pv = window.preview
    pv.model.setCurrentText("my-local-model")
    pv.price.setValue(0.0042)
    pv.model.setCurrentText("my-other-local-model")
    assert pv.price.value() == pytest.approx(0.0042)


def test_file_dialogs_open_in_the_last_folder_used(window, monkeypatch, tmp_path):
    from PySide6.QtWidgets import QFileDialog

    folder = tmp_path / "elsewhere"
    folder.mkdir()
    asked = []

    def open_name(parent, title, start="", *a, **k):
        asked.append(start)
        return (str(folder / "notes.jsonl"), "") if "Import" in title else ("", "")

    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(open_name))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(open_name))
    monkeypatch.setattr(window, "import_jsonl", lambda *a, **k: None)
    window._import_dialog()
    window._open_dialog()
    window._export_dialog()
    assert asked[1] == str(folder) and asked[2].startswith(str(folder))


def _contrast(a, b) -> float:
    def lum(c):
        def ch(v):
            v = v / 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c.red()) + 0.7152 * ch(c.green()) + 0.0722 * ch(c.blue())
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_dark_themes_time_travel_groove_and_faintest_dots_can_be_seen(window, qtbot):
    from PySide6.QtGui import QColor
    from support.helpers import settle

    window.set_theme("dark")
    settle(qtbot, window)
    slider = window.preview_slider
    image = slider.grab().toImage()
    background = image.pixelColor(2, 1)
    y = image.height() // 2
    groove = [image.pixelColor(x, y) for x in range(image.width() // 2, image.width() - 10)]
    assert max(_contrast(c, background) for c in groove) >= 1.8, [c.name() for c in groove[:5]]
    faint = window.map.dot_colour("event", 0.0)
    plain = QColor(window.map.colours["background"])
    shown = QColor(round(faint.red() * faint.alphaF() + plain.red() * (1 - faint.alphaF())),
                   round(faint.green() * faint.alphaF() + plain.green() * (1 - faint.alphaF())),
                   round(faint.blue() * faint.alphaF() + plain.blue() * (1 - faint.alphaF())))
    assert _contrast(shown, plain) >= 1.8
    window.set_theme("light")


def test_help_about_names_the_embedding_model_and_its_licence(window):
    box = window.show_about()
    text = box.text()
    box.close()
    assert window.session.store.embedder_id() in text
    assert "Apache-2.0" in text or "MIT" in text.split("Embedding")[-1]
    assert "Embedding model" in text


@pytest.fixture
def owner_window(qtbot, qt_settings, tmp_path):
    """The window at 1366×768 on the demo with two conflicts (one in Chinese) and a finding."""
    from mnemoscope.store import MemoryStore
    from mnemoscope.store.files.demo import load_demo
    from mnemoscope.ui.main_window import MainWindow
    from support.helpers import closing_window

    path = str(tmp_path / "owner.db")
    with MemoryStore(path) as s:
        load_demo(s)
        t = s.now() - 30 * 86400
        s.remember("Mara lives in Lisbon.", now=t, dedupe=False)
        s.remember("Mara moved to Porto in March.", now=t + 86400, dedupe=False)
        s.remember("玛拉喜欢喝乌龙茶,尤其是冻顶乌龙。", who="Mara", now=t, dedupe=False)
        s.remember("玛拉现在不喝乌龙茶了,只喝绿茶。", who="Mara", now=t + 86400, dedupe=False)
        s.remember("Mara's phone is +351 912 345 678, call after six.", now=t, dedupe=False)
    with closing_window(MainWindow(MemoryStore(path))) as w:
        w.resize(1366, 738)
        w.show()
        qtbot.waitExposed(w)
        yield w


@pytest.mark.parametrize("view", ["conflicts", "privacy"])
def test_the_owner_views_show_their_text_and_every_button_at_1366(owner_window, qtbot, view):
    from support.helpers import settle

    window = owner_window
    panel = getattr(window.owner, view)
    window.owner.show_view(panel)
    settle(qtbot, window)
    qtbot.waitUntil(lambda: panel.model.rowCount() > 0)
    settle(qtbot, window)
    for button in panel.findChildren(type(window.editor.save_button)):
        assert button.isVisible(), button.text()
        shown = button.visibleRegion().boundingRect()
        assert shown.width() == button.width() and shown.height() == button.height(), button.text()
    table = panel.view
    header = table.horizontalHeader()
    # the memories' text gets the width: no column squeezed to a character or two
    widest = max(header.sectionSize(c) for c in range(header.count()) if not header.isSectionHidden(c))
    assert widest >= 0.7 * table.viewport().width()
    assert table.rowHeight(0) <= 6 * table.fontMetrics().height()  # not one character a line
    if view == "conflicts":
        texts = "\n".join(panel.model.data(panel.model.index(r, 0)) for r in range(panel.model.rowCount()))
        assert "玛拉现在不喝乌龙茶了" in texts and "Porto" in texts


def test_picking_a_memory_with_a_long_text_leaves_the_docks_under_the_map_their_width(window, qtbot):
    from support.helpers import resize, settle

    resize(qtbot, window, 1366, 738)
    settle(qtbot, window)
    store = window.session.store
    short = min(store.list(), key=lambda m: len(m.text))
    window.session.select(short.id)
    settle(qtbot, window)
    before = window.activity.width()
    long = max(store.list(), key=lambda m: len(m.text))
    window.session.select(long.id)
    settle(qtbot, window)
    assert window.activity.width() == before
    assert window.decay.title.text().startswith(long.kind)


def test_the_maps_entity_labels_can_be_read_after_a_change_to_the_dark_theme(window, qtbot):
    """Seen at 1366x768 on the demo: after View › Theme › Dark the entity names were light
    grey on the light backing they were made with, unreadable."""
    from PySide6.QtGui import QColor
    from support.helpers import settle

    settle(qtbot, window)
    labels = [label for label in window.map.entity_labels.values() if label.isVisible()]
    assert labels
    window.set_theme("dark")
    settle(qtbot, window)
    try:
        plain = QColor(window.map.colours["background"])
        for label in labels:
            backing = label.fill.color()
            text = label.color
            shown = QColor(round(backing.red() * backing.alphaF() + plain.red() * (1 - backing.alphaF())),
                           round(backing.green() * backing.alphaF() + plain.green() * (1 - backing.alphaF())),
                           round(backing.blue() * backing.alphaF() + plain.blue() * (1 - backing.alphaF())))
            assert _contrast(QColor(text), shown) >= 3, (label.textItem.toPlainText(), backing.name(), text.name())
    finally:
        window.set_theme("light")
