"""The prompt's future (issue 22, build 4): the prompt preview follows the time-travel
slider, recalls and compiles as of that day without writing or reinforcing, and says what
leaves the prompt and what enters; one click pins what would leave, undoably. The same
through ``mnemoscope preview --in-days``."""

import json

import pytest
from click.testing import CliRunner
from mnemoscope.bridge import PreviewRequest
from mnemoscope.cli import cli
from mnemoscope.prompt_future import ARCHIVED, prompt_future
from mnemoscope.store import MemoryStore
from mnemoscope.store.forgetting.decay import DAY
from support.helpers import PLANTED, plant_write, settle, unwritten_unless

QUESTION = "What snacks can I bring for Mara?"
PEANUTS = "Mara is allergic to peanuts."


@pytest.fixture
def mara_db(tmp_path):
    """Mara's allergy, last touched 350 days ago: untouched for 400 it is archived, so in 60
    days no recall finds it. Beside it, memories that stay."""
    path = str(tmp_path / "mara.db")
    with MemoryStore(path) as store:
        now = store.now()
        store.remember(PEANUTS, kind="fact", importance=0.9, who="Mara", memory_id="peanuts", now=now - 350 * DAY)
        store.remember("Mara loves dark chocolate snacks.", memory_id="chocolate", now=now - 2 * DAY)
        store.remember("Mara brings crisps to every party.", kind="event", memory_id="crisps", now=now - 1 * DAY)
    return path


@pytest.mark.parametrize(**PLANTED)
def test_in_60_days_the_agent_is_no_longer_told_of_the_allergy_and_nothing_is_written(mara_db, planted):
    with MemoryStore(mara_db) as store:
        recalls_before = store.get("peanuts").recall_count
        with unwritten_unless(planted, mara_db):
            future = prompt_future(store, PreviewRequest(user_message=QUESTION), 60)
            if planted:
                plant_write(store)
        assert "peanuts" in future.today.result.ref_map.values()
        assert "peanuts" not in future.then.result.ref_map.values()
        [left] = [c for c in future.left if c.id == "peanuts"]
        assert left.reason == ARCHIVED and left.layer_then == "archived" and left.layer_now != "archived"
        assert f"In 60 days the agent will no longer be told: {PEANUTS} (archived by then)" in future.sentences()
        assert future.tokens_then < future.tokens_now and future.cost_delta(0.0025) < 0
        assert store.get("peanuts").recall_count == recalls_before  # looking ahead reinforces nothing


def test_a_pinned_memory_stays_in_the_future_prompt(mara_db):
    with MemoryStore(mara_db) as store:
        store.pin("peanuts")
        future = prompt_future(store, PreviewRequest(user_message=QUESTION), 60)
        assert "peanuts" in future.then.result.ref_map.values() and not future.left


def test_bad_days_are_refused_with_what_was_wrong(mara_db):
    with MemoryStore(mara_db) as store, pytest.raises(Exception, match="days ahead must be a number"):
        prompt_future(store, PreviewRequest(user_message=QUESTION), -1)


def test_the_command_line_says_what_leaves(mara_db):
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", mara_db, "preview", "--user-message", QUESTION, "--in-days", "60", "--json"])
    assert out.exit_code == 0, out.output
    future = json.loads(out.output)["future"]
    assert [c["id"] for c in future["left"]] == ["peanuts"] and future["left"][0]["reason"] == "archived"
    assert "peanuts" not in future["ref_map_then"].values()
    out = runner.invoke(cli, ["--db", mara_db, "preview", "--user-message", QUESTION, "--in-days", "60",
                              "--format", "text"])
    assert out.exit_code == 0 and PEANUTS not in out.stdout
    assert f"In 60 days the agent will no longer be told: {PEANUTS}" in out.stderr


# -- the window --------------------------------------------------------------------------------------
@pytest.fixture
def mara_window(qtbot, qt_settings, mara_db):
    pytest.importorskip("PySide6")
    from mnemoscope.ui.main_window import MainWindow

    w = MainWindow(MemoryStore(mara_db))
    w.resize(1366, 768)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.editor.dirty = False
    w.close()


def _ask(window, qtbot):
    window.preview.user_message.setPlainText(QUESTION)
    settle(qtbot, window)
    assert "peanuts" in window.preview.result.ref_map.values()


@pytest.mark.parametrize(**PLANTED)
def test_the_preview_follows_the_slider_and_writes_nothing(mara_window, mara_db, qtbot, planted):
    window, preview = mara_window, mara_window.preview
    _ask(window, qtbot)
    with unwritten_unless(planted, mara_db):
        window.preview_slider.setValue(60)  # as the keyboard leaves it
        settle(qtbot, window)
        if planted:
            plant_write(window.session.store)
    pane = preview.future_pane
    assert pane.isVisible()  # one glance: at the top of the preview, in view without scrolling
    top = pane.mapTo(window, pane.rect().topLeft())
    assert window.preview_dock.geometry().contains(top) and top.y() + 60 < window.height()
    assert "peanuts" not in preview.result.ref_map.values()
    assert "As of +60 days" in preview.summary.text()
    pane = preview.future_pane
    assert f"In 60 days the agent will no longer be told: {PEANUTS} (archived by then)" in pane.lines()
    assert "1 leave" in pane.headline.text() and "tokens" in pane.headline.text()
    assert "peanuts" in pane.pin_buttons and pane.pin_buttons["peanuts"].isVisible()


def test_one_click_pins_what_would_leave_and_undo_unpins(mara_window, qtbot):
    from PySide6.QtCore import Qt

    window, preview = mara_window, mara_window.preview
    _ask(window, qtbot)
    window.preview_slider.setValue(60)
    settle(qtbot, window)
    window.preview_slider.return_to_start()  # the slider springs back; the Future tab keeps day 60
    settle(qtbot, window)
    assert "peanuts" in preview.result.ref_map.values()  # the prompt is today's again
    assert "As of" not in preview.summary.text()
    pane = preview.future_pane
    qtbot.mouseClick(pane.pin_buttons["peanuts"], Qt.MouseButton.LeftButton)
    settle(qtbot, window)
    store = window.session.store
    assert store.get("peanuts").pinned
    assert window.session.undo_stack.undoText() == "Pin memory"
    assert pane.isVisible() and "In 60 days" in pane.headline.text()
    assert not pane.future.left and "peanuts" not in pane.pin_buttons  # it stays in the day-60 prompt
    window.undo_action.trigger()
    settle(qtbot, window)
    assert not store.get("peanuts").pinned
    assert [c.id for c in pane.future.left] == ["peanuts"]


def test_close_ends_the_comparison(mara_window, qtbot):
    window, preview = mara_window, mara_window.preview
    _ask(window, qtbot)
    window.preview_slider.setValue(60)
    settle(qtbot, window)
    window.preview_slider.return_to_start()
    settle(qtbot, window)
    from PySide6.QtCore import Qt

    qtbot.mouseClick(preview.future_pane.close_button, Qt.MouseButton.LeftButton)
    settle(qtbot, window)
    pane = preview.future_pane
    assert preview.future is None and pane.model.rowCount() == 0 and not pane.close_button.isEnabled()
    assert preview.tabs.tabText(preview.tabs.indexOf(pane)) == "Future"
    assert "peanuts" in preview.result.ref_map.values()
