"""The prompt preview as a person sees it: the output on screen at common sizes, tabs the
wheel does not flip, notes that never move the form, the prompt's future as a list, and
the why of every memory recall brought for the preview's own message."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from support.helpers import resize, settle  # noqa: E402

pytestmark = pytest.mark.usefixtures("qt_settings")
QUESTION = "How should I explain a Rust lifetime error to Mara?"


def ask(window, qtbot, text=QUESTION, **inputs):
    pv = window.preview
    for name, value in inputs.items():
        getattr(pv, name).setValue(value)
    pv.user_message.setPlainText(text)
    settle(qtbot, window)
    return pv


def fully_shown(widget) -> bool:
    """Every pixel of ``widget`` is on screen: not cut by a scroll area, a splitter or the window."""
    return widget.isVisible() and widget.visibleRegion().boundingRect().size() == widget.size()


@pytest.mark.parametrize("size", [(1366, 768), (1600, 1000)])
def test_the_token_bars_and_the_prompt_are_on_screen_without_scrolling(window, qtbot, size):
    resize(qtbot, window, *size)
    window.reset_layout()
    settle(qtbot, window)
    pv = ask(window, qtbot)
    assert fully_shown(pv.bars) and fully_shown(pv.summary)
    assert pv.tabs.currentWidget() is pv.messages
    page = pv.messages.viewport()
    assert page.visibleRegion().boundingRect().height() >= 150  # the prompt itself, not a 20 px strip
    for button in (*pv.copy_buttons.values(), pv.save_button):
        assert fully_shown(button)
    # and the inputs a person changes most are in view too
    for field in (pv.user_message, pv.model, pv.budget_spin, pv.k):
        assert fully_shown(field), field


def test_the_wheel_does_not_flip_the_tabs(window, qtbot):
    pv = ask(window, qtbot)
    bar = pv.tabs.tabBar()
    before = pv.tabs.currentIndex()
    centre = QPointF(bar.tabRect(1).center())
    for delta in (-120, 120, -120):
        event = QWheelEvent(centre, QPointF(bar.mapToGlobal(centre.toPoint())), QPoint(0, 0), QPoint(0, delta),
                            Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
                            False)
        QApplication.sendEvent(bar, event)
    assert pv.tabs.currentIndex() == before


def test_a_note_under_the_message_never_moves_the_form(window, qtbot):
    pv = ask(window, qtbot)
    at = pv.model.mapTo(pv, QPoint(0, 0))
    pv.meaning.setText("<b>Topic shift</b>: this message changes the subject (cosine distance 0.71 from the last "
                       "user message; a shift is over 0.45) · <b>2 near-duplicates not sent</b>: a long list " * 3)
    settle(qtbot, window)
    assert pv.model.mapTo(pv, QPoint(0, 0)) == at
    pv.meaning.setText("")
    settle(qtbot, window)
    assert pv.model.mapTo(pv, QPoint(0, 0)) == at


def test_the_item_models_pass_the_model_tester(window, qtbot, qtmodeltester):
    pv = ask(window, qtbot, budget_spin=400)
    qtmodeltester.check(pv.why_pane.model)
    window.preview_slider.setValue(120)
    settle(qtbot, window)
    qtmodeltester.check(pv.future_pane.model)


def test_why_lists_each_recalled_memory_with_parts_that_add_up_to_its_score(window, qtbot):
    pv = ask(window, qtbot, budget_spin=400)
    pv.tabs.setCurrentWidget(pv.why_pane)
    settle(qtbot, window)
    rows = pv.why_pane.rows
    recalled = [r for r in rows if r.outcome != "below k"]
    assert [r.id for r in recalled] == [h.id for h in pv.hits]
    for row in rows:
        assert row.parts and abs(sum(p.weighted for p in row.parts) - row.score) < 0.003, row
    kept = [r for r in recalled if r.outcome == "kept"]
    trimmed = [r for r in recalled if r.outcome == "trimmed"]
    assert kept and trimmed  # a 400-token budget cannot hold them all
    assert all(r.short.startswith("[Mem:") for r in kept)
    assert all("no room left in the budget" in r.detail for r in trimmed)
    model = pv.why_pane.model
    first = model.index(0, 1)
    assert model.data(first) == recalled[0].text
    tip = model.data(first, Qt.ItemDataRole.ToolTipRole)
    assert "meaning" in tip and " × " in tip and f"{recalled[0].score:.3f}" in tip
    assert "trimmed by the budget" in pv.why_pane.headline.text()


def test_why_lists_the_memories_just_below_the_k(window, qtbot):
    pv = ask(window, qtbot, k=3)
    pv.tabs.setCurrentWidget(pv.why_pane)
    settle(qtbot, window)
    below = [r for r in pv.why_pane.rows if r.outcome == "below k"]
    assert below and [r.rank for r in below] == list(range(4, 4 + len(below)))
    assert all(r.id not in {h.id for h in pv.hits} for r in below)
    assert "recall brings 3, this is number 4" in below[0].detail
    assert below[0].score <= pv.hits[-1].score
    assert "just below the k" in pv.why_pane.headline.text()


def test_a_bar_tooltip_says_why_the_memory_was_recalled(window, qtbot):
    pv = ask(window, qtbot)
    bar = next(b for b in pv.bars.rects if b.segment.region == "memory")
    words = pv.bars.describe(bar)
    assert "relevance" in words and "meaning" in words and " × " in words


def test_clicking_a_why_row_selects_the_memory(window, qtbot):
    pv = ask(window, qtbot)
    pv.tabs.setCurrentWidget(pv.why_pane)
    settle(qtbot, window)
    table = pv.why_pane.table
    rect = table.visualRect(pv.why_pane.model.index(1, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.session.selected_id == pv.why_pane.rows[1].id


def test_the_future_is_a_list_with_text_when_why_and_pin(window, qtbot):
    pv = ask(window, qtbot)
    window.preview_slider.setValue(365)
    settle(qtbot, window)
    assert pv.tabs.currentWidget() is pv.future_pane  # a first look ahead shows what it changes
    pane = pv.future_pane
    model = pane.model
    future = pv.future
    assert model.rowCount() == len(future.left) + len(future.entered) > 1
    assert fully_shown(pane.list.viewport()) and pane.list.viewport().height() >= 100
    for row, (change, leaves) in enumerate(model.rows):
        assert model.data(model.index(row, 1)) == change.text
        assert model.data(model.index(row, 0)) == ("− leaves" if leaves else "+ enters")
        when = model.data(model.index(row, 2))
        assert when.startswith("day ") or when == "by day 365"
        assert model.data(model.index(row, 3))
    archived = [c for c, leaves in model.rows if leaves and c.reason == "archived"]
    assert archived and all(model.data(model.index(i, 2)).startswith("day ") for i, (c, _) in enumerate(model.rows)
                            if c in archived)
    assert pv.tabs.tabText(pv.tabs.indexOf(pane)).startswith(f"Future · {len(future.left)} leave")


def test_a_big_stores_preview_recalls_off_the_gui_thread_and_shows_the_same(window, qtbot, monkeypatch):
    """At 100,000 memories the first message's recall held the window up for ~2 s (the model
    and every vector loading on the GUI thread), each later one 0.1-0.2 s. A big store's is
    worked out in a job; what it shows is what the small store's inline recall shows."""
    import threading

    from mnemoscope.ui.panes import prompt_preview

    pv = window.preview
    message = "What should I cook for Mara tonight?"
    pv.user_message.setPlainText(message)
    pv.recompile()
    inline = ([h.id for h in pv.hits], pv.result.metadata["token_count"], [r.id for r in pv.why_pane.rows])
    threads = []
    real = prompt_preview.recall_and_compile

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(prompt_preview, "recall_and_compile", recorded)
    window.session.background_from = 1  # as a big store
    pv.user_message.setPlainText("")
    pv.recompile()
    pv.user_message.setPlainText(message)
    pv.recompile()
    assert pv.result is None  # not yet: the window answers meanwhile
    qtbot.waitUntil(lambda: pv.result is not None, timeout=20000)
    assert threads and threading.main_thread() not in threads
    assert ([h.id for h in pv.hits], pv.result.metadata["token_count"]) == inline[:2]
    pv.tabs.setCurrentWidget(pv.why_pane)
    assert [r.id for r in pv.why_pane.rows][:len(inline[2])] == inline[2]
    # a newer message replaces one still being worked out
    pv.user_message.setPlainText("When is the rent due?")
    pv.recompile()
    pv.user_message.setPlainText(message + " And dessert?")
    pv.recompile()
    qtbot.waitUntil(lambda: pv._job is None, timeout=20000)
    assert pv.request().user_message.endswith("And dessert?") and pv.result is not None


def test_a_big_stores_tokenizer_loads_in_the_background_as_it_opens(qtbot, qt_settings, demo_db, monkeypatch):
    """Building tiktoken's encoding holds the interpreter lock for ~0.13 s: at 100,000
    memories that was the longest stall of a first message (ui_bench.py --stalls)."""
    import threading

    from mnemoscope.store import MemoryStore
    from mnemoscope.ui.main_window import MainWindow
    from mnemoscope.ui.panes import prompt_preview
    from support.helpers import closing_window

    loaded = []
    monkeypatch.setattr(prompt_preview, "count_tokens", lambda text, model: loaded.append(
        (threading.current_thread(), model)) or 0)
    monkeypatch.setattr("mnemoscope.ui.session.BACKGROUND_FROM", 1)  # as a big store: its reads are jobs
    with closing_window(MainWindow(MemoryStore(demo_db))) as w:
        w.show()
        qtbot.waitUntil(lambda: bool(loaded), timeout=10000)
        thread, model = loaded[0]
        assert thread is not threading.main_thread() and model == w.preview.model.currentText()


def test_the_summary_of_a_day_ahead_fits_its_two_lines_at_1366(window, qtbot):
    """Seen at 1366x768 with the slider at +226 days: "As of +226 days (time travel; nothing
    is written)" pushed the summary to three lines, the third cut in half over the bars."""
    resize(qtbot, window, 1366, 768)
    window.reset_layout()
    settle(qtbot, window)
    pv = ask(window, qtbot)
    window.preview_slider.setValue(226)
    settle(qtbot, window)
    label = pv.summary
    assert "+226 days" in label.text()
    assert label.heightForWidth(label.contentsRect().width()) <= label.contentsRect().height(), label.text()
    assert "nothing is written" in label.toolTip()
