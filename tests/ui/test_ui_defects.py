"""The inspector's defects found trying it as a new user would (issue 22), each as the
person met it."""

import json

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QKeySequence  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402


def test_typing_in_the_table_filter_with_an_unsaved_edit_asks_nothing_and_keeps_the_edit(window, qtbot,
                                                                                          monkeypatch):
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a) or QMessageBox.StandardButton.Cancel)
    monkeypatch.setattr(QMessageBox, "exec", lambda self: asked.append(self) or QMessageBox.StandardButton.Cancel)
    table = window.table
    first = table.proxy.data(table.proxy.index(0, 0), Qt.ItemDataRole.UserRole + 2)
    window.session.select(first)
    window.editor.text.setPlainText(window.editor.text.toPlainText() + " (edited)")
    assert window.editor.dirty
    qtbot.keyClicks(table.filter_box, "zzqx")  # matches nothing: the selected row is filtered out
    assert table.filter_box.text() == "zzqx" and asked == []
    assert window.session.selected_id == first and window.editor.dirty
    table.filter_box.clear()
    assert asked == [] and window.session.selected_id == first


def _chip_lightness(button) -> int:
    image = button.grab().toImage()
    return image.pixelColor(3, image.height() // 2).lightness()


def test_the_kind_legend_follows_the_theme_at_once(window, qtbot):
    chip = window.map.legend_buttons["fact"]
    window.set_theme("light")
    light = _chip_lightness(chip)
    window.set_theme("dark")
    dark = _chip_lightness(chip)
    assert dark < 110 < light
    window.set_theme("light")
    assert _chip_lightness(chip) == light


def test_ctrl_y_redoes_and_new_memory_has_a_shortcut_of_its_own(window, qtbot):
    assert QKeySequence("Ctrl+Y") in window.redo_action.shortcuts()
    keys = {a.shortcut().toString() for a in window.findChildren(type(window.redo_action)) if not a.shortcut().isEmpty()}
    assert window.new_memory_action.shortcut().toString() == "Ctrl+Shift+N"
    assert list(keys).count("Ctrl+Shift+N") == 1
    window.session.select(window.table.proxy.data(window.table.proxy.index(0, 0), Qt.ItemDataRole.UserRole + 2))
    window.new_memory_action.trigger()
    assert window.editor.memory_id is None and window.session.selected_id is None


def test_privacy_and_conflicts_open_as_a_tab_beside_the_preview_not_squeezed(window, qtbot):
    window.owner.show_view(window.owner.conflicts)
    assert window.owner.dock in window.tabifiedDockWidgets(window.preview_dock)


def test_a_refused_import_offers_to_import_only_the_good_lines(window, qtbot, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([json.dumps({"id": "ok1", "text": "Mara plays the cello on Sundays."}),
                               "{not json",
                               json.dumps({"text": "A line without an id gets one."})]))
    n = window.session.store.count()
    window.import_jsonl(str(path))
    box = window.import_refused_box
    assert box.isVisible() and "line 2" in box.text() and window.session.store.count() == n
    good = box.findChild(type(box.buttons()[0]), "import_good_lines")
    assert good is not None and good.text() == "Import the good lines"
    good.click()
    qtbot.waitUntil(lambda: window.session.store.count() == n + 2)
    assert window.session.store.exists("ok1")
    texts = {m.text for m in window.session.store.list()}
    assert "A line without an id gets one." in texts


def test_lines_without_an_id_get_one_that_a_second_import_skips(store):
    line = json.dumps({"text": "Theo's bike is a green Bianchi."})
    first = store.import_jsonl(line)
    again = store.import_jsonl(line)
    assert len(first.ids) == 1 and first.ids[0].startswith("m-") and again.ids == []
    assert store.count() == 1


def test_import_help_describes_the_line_format_and_a_line_from_it_imports(store, tmp_path):
    import re

    from click.testing import CliRunner
    from mnemoscope.cli import cli

    text = CliRunner().invoke(cli, ["import", "--help"]).output
    example = re.search(r"\{\"text\".*?\}", text.replace("\n", " ").replace("     ", " "), re.S).group(0)
    assert 'only "text" is needed' in text and 'without an "id" gets one' in text
    report = store.import_jsonl(example)
    assert report.imported == 1 and store.get(report.ids[0]).who == "Mara"


def test_the_editor_fits_its_pane_with_the_longest_heading_id_and_error(window, qtbot):
    store = window.session.store
    mid = "imported-from-the-old-assistant-" + "x" * 24
    store.remember("Theo's bike is a green Bianchi.", memory_id=mid)
    for _ in range(12):
        store.reinforce(mid)
    window.session.notify(None)
    window.resizeDocks([window.memory_dock], [300], Qt.Orientation.Horizontal)
    qtbot.wait(50)  # the docks take their widths
    window.session.select(mid)
    editor = window.editor
    editor.text.setPlainText("")  # unsaved, and saving says the text must not be empty
    assert not editor.save()
    assert "unsaved" in editor.heading.text() and editor.errors["text"].isVisible()
    area = editor.parentWidget().parentWidget()
    qtbot.wait(50)  # the layout follows the new heading and error
    assert editor.width() <= area.viewport().width() and not area.horizontalScrollBar().isVisible()
    for field in (editor.text, editor.scope, editor.errors["text"], editor.heading):
        assert field.mapTo(editor, field.rect().topRight()).x() <= area.viewport().width()


def test_an_activity_time_of_another_day_is_not_cut(window, qtbot):
    from mnemoscope.store.agents import activity

    store = window.session.store
    activity.record(store, client="claude-code", door="mcp", tool="recall", args={"query": "tea"},
                    at=store.now() - 40 * 86400)
    window.session.notify(None)
    dock = window.activity
    window.activity.show()
    qtbot.waitUntil(lambda: dock.model.rowCount() >= 1, timeout=5000)
    view, model = dock.view, dock.model
    text = model.index(0, 0).data()
    assert "-" in text  # month-day and time
    width = view.fontMetrics().horizontalAdvance(text)
    assert view.columnWidth(0) >= width + 8


def test_copy_anthropic_request_is_offered_for_claude_only_and_copy_buttons_stay_put(window, qtbot):
    pv = window.preview
    anthropic = pv.copy_buttons["anthropic"]
    pv.model.setCurrentText("openai/gpt-4o")
    assert not anthropic.isEnabled()
    pv.model.setCurrentText("anthropic/claude-sonnet-4.5")
    assert anthropic.isEnabled()
    window.preview_dock.show()
    pv.user_message.setPlainText("How does Mara like answers?")
    pv.recompile()
    qtbot.wait(20)
    at = pv.copy_buttons["text"].mapTo(pv, pv.copy_buttons["text"].rect().topLeft())
    pv.summary.setText("a much longer summary " * 30)
    qtbot.wait(20)
    assert pv.copy_buttons["text"].mapTo(pv, pv.copy_buttons["text"].rect().topLeft()) == at
