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
