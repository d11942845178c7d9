"""Defect 9 of issue 22: the Activity dock said when an agent called by the store's clock,
which "Advance" moves forward, so a call made a minute ago read as a day months ahead; and
its time column cut the date ("03-01 2…"). The log keeps both times now: the store's
clock (what pruning and ticks go by) and the wall clock (when it really happened)."""

import time
from datetime import datetime

import pytest

pytest.importorskip("PySide6")

from mnemoscope.serve.operations import Operations  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.agents import activity as activity_log  # noqa: E402
from mnemoscope.ui.panes.activity_dock import COLUMNS  # noqa: E402


@pytest.fixture(autouse=True)
def _settings(qt_settings):
    """Qt settings in the test's own folder."""


def test_a_call_is_logged_at_the_wall_clock_even_after_the_store_clock_advanced(store):
    store.tick(advance_days=90)
    before = time.time()
    ops = Operations(store, client="agent")
    ops.call("recall", ops.recall, {"query": "tea"})
    [entry] = activity_log.recent(store, 1)
    assert before - 1 <= entry.called_at <= time.time() + 1      # when it happened
    assert entry.at == pytest.approx(store.now(), abs=5)          # the store's clock, as before
    assert entry.at - entry.called_at == pytest.approx(90 * 86400, abs=5)


def test_the_dock_shows_the_wall_clock_time_uncut(window, qtbot, demo_db):
    window.advance(90)
    with MemoryStore(demo_db) as agent:
        ops = Operations(agent, client="Claude Desktop 0.14")
        ops.call("recall", ops.recall, {"query": "tea"})
    qtbot.waitUntil(lambda: window.activity.model.rowCount() == 1, timeout=2000)
    model, view = window.activity.model, window.activity.view
    shown = model.data(model.index(0, COLUMNS.index("time")))
    assert shown == datetime.now().strftime("%H:%M:%S")[:len(shown)] or shown.count(":") == 2
    assert "-" not in shown  # today's call, by the wall clock: no date of a day 90 days on
    # a call of another day shows its date, and the column is wide enough for it (the
    # delegate's own size hint, with the style's margins, is what a cut would exceed)
    column = COLUMNS.index("time")
    agent_entry = model.entry(0)
    long_ago = time.time() - 40 * 86400
    model.rows[0] = type(agent_entry)(**{**agent_entry.__dict__, "called_at": long_ago})
    shown = model.data(model.index(0, column))
    assert shown == datetime.fromtimestamp(long_ago).strftime("%m-%d %H:%M")
    assert view.sizeHintForColumn(column) <= view.columnWidth(column), (shown, view.columnWidth(column))
