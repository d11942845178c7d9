"""Small things a new user meets that feel broken (issue 34, point 7), each as the person
met it."""

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
    from mnemoscope.ui.token_bars import LABEL_W

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
    from helpers import resize, settle

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
    from helpers import resize, settle

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
