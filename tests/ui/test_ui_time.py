"""Time in the window: advancing the clock, and the time-travel slider that previews, writes nothing and returns."""


import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.ui.panes.memory_table import COLUMNS, ID_ROLE  # noqa: E402
from PySide6.QtCore import QStandardPaths, Qt  # noqa: E402
from support.helpers import PLANTED, plant_write, resize, settle, unwritten_unless  # noqa: E402

QStandardPaths.setTestModeEnabled(True)

# every test here keeps its Qt settings in its own temporary folder
pytestmark = pytest.mark.usefixtures("qt_settings")


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


@pytest.mark.parametrize(**PLANTED)
def test_time_travel_and_browsing_leave_the_file_unchanged(window, demo_db, qtbot, planted):
    with unwritten_unless(planted, demo_db):
        window.preview_slider.setValue(365)
        assert "Previewing 365 days" in window.map.caption.text()
        assert window.session.store.get("mem-049").layer != "archived"
        window.preview_slider.setValue(0)
        window.session.select("mem-001")
        window.map.set_search("Mara")
        qtbot.waitUntil(lambda: window.map.searched == "Mara", timeout=20000)  # a search recalls: it writes nothing
        window.table.filter_box.setText("tea")
        window.map.set_rotation(1.0)
        settle(qtbot, window)
        if planted:
            plant_write(window.session.store)


def test_time_travel_stays_where_it_is_let_go_and_now_brings_it_back(window, qtbot):
    assert not window.now_button.isEnabled()
    window.preview_slider.setValue(200)
    assert window.session.preview_days == 200
    window.preview_slider.sliderReleased.emit()
    settle(qtbot, window)
    assert window.session.preview_days == 200 and window.now_button.isEnabled()  # to be looked at
    qtbot.mouseClick(window.now_button, Qt.MouseButton.LeftButton)
    assert window.session.preview_days == 0 and window.preview_slider.value() == 0
    assert not window.now_button.isEnabled()


def test_advancing_one_day_reads_in_the_singular(window):
    window.advance(1)
    assert window.undo_action.text().endswith("Advance 1 day")
    assert "+1 day:" in window.tick_summary.text()
    window.advance(7)
    assert window.undo_action.text().endswith("Advance 7 days")


def test_a_click_on_the_time_travel_track_goes_there_and_stays(window, qtbot):
    from PySide6.QtCore import QPoint

    slider = window.preview_slider
    at = QPoint(int(slider.width() * 0.75), slider.height() // 2)
    qtbot.mouseClick(slider, Qt.MouseButton.LeftButton, pos=at)
    settle(qtbot, window)
    assert 230 < window.session.preview_days < 320 and "Previewing" in window.map.caption.text()


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_decay_plot_labels_are_inside_the_plot_and_apart(window, qtbot, size):
    resize(qtbot, window, size[0], size[1] - 30)
    window.session.select("mem-012")
    window.preview_slider.setValue(40)
    settle(qtbot, window)
    plot = window.decay
    area = plot.plot.getViewBox().sceneBoundingRect().adjusted(-1, -1, 1, 1)
    labels = [line.label.sceneBoundingRect() for line in
              (plot.now_line, plot.preview_line, plot.habit_line, plot.edge_line)]
    for label in labels:
        assert area.contains(label), (label, area)
    for i, one in enumerate(labels):
        assert not any(one.intersects(other) for other in labels[i + 1:]), (i, labels)


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
        qtbot.waitUntil(lambda: selected_row_in_view(window) == (chosen, True))  # noqa: B023 (waited for here)


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
    qtbot.waitUntil(lambda: selected_row_in_view(window) == (chosen, True))


# -- the time-travel slider: every way of moving it previews, writes nothing, returns ------

def handle_at(slider, days):
    """Where on the slider's track the handle for ``days`` sits."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QStyle

    span = slider.width()
    x = QStyle.sliderPositionFromValue(slider.minimum(), slider.maximum(), days, span)
    return QPoint(min(max(x, 4), span - 4), slider.height() // 2)


@pytest.fixture
def time_travel(window, demo_db, qtbot, request):
    """The slider, focused as a keyboard user leaves it; on leaving, the file is unchanged
    (parametrised indirectly with True: the test plants a write, and it must be seen)."""
    window.activateWindow()
    qtbot.waitActive(window)
    slider = window.preview_slider
    with unwritten_unless(getattr(request, "param", False), demo_db):
        slider.setFocus(Qt.FocusReason.TabFocusReason)
        qtbot.waitUntil(slider.hasFocus)
        yield slider
        settle(qtbot, window)


def test_dragging_the_time_travel_handle_previews_and_stays_when_let_go(window, qtbot, time_travel):
    slider = time_travel
    qtbot.mousePress(slider, Qt.MouseButton.LeftButton, pos=handle_at(slider, 0))
    qtbot.mouseMove(slider, handle_at(slider, 180))
    assert 150 < window.session.preview_days < 210 and "days" in window.preview_label.text()
    assert "Previewing" in window.map.caption.text()
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=handle_at(slider, 180))
    settle(qtbot, window)
    assert 150 < window.session.preview_days < 210
    qtbot.keyClick(slider, Qt.Key.Key_Escape)
    assert window.session.preview_days == 0 and window.preview_label.text().strip() == "now"


@pytest.mark.parametrize("key,days", [(Qt.Key.Key_Right, 1), (Qt.Key.Key_Up, 1), (Qt.Key.Key_PageUp, 30)])
def test_keys_move_the_time_travel_preview_and_escape_returns(window, qtbot, time_travel, key, days):
    slider = time_travel
    qtbot.keyClick(slider, key)
    qtbot.keyClick(slider, key)
    settle(qtbot, window)  # a key has no "let go": once all is still, the preview stays to be looked at
    assert window.session.preview_days == 2 * days and "Previewing" in window.map.caption.text()
    qtbot.keyClick(slider, Qt.Key.Key_Escape)
    assert window.session.preview_days == 0 and slider.value() == 0


def test_leaving_the_time_travel_slider_keeps_the_preview_to_look_at(window, qtbot, time_travel):
    slider = time_travel
    qtbot.keyClick(slider, Qt.Key.Key_PageUp)
    assert window.session.preview_days > 0
    window.table.view.setFocus(Qt.FocusReason.TabFocusReason)  # to pick a memory and see it then
    settle(qtbot, window)
    assert window.session.preview_days == 30 and window.now_button.isEnabled()
    window.now_button.click()
    assert window.session.preview_days == 0


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
    settle(qtbot, window)
    assert window.session.preview_days > 0
    qtbot.keyClick(slider, Qt.Key.Key_Escape)
    assert window.session.preview_days == 0


def test_the_time_travel_tooltip_says_how_each_way_returns(window):
    tip = window.preview_slider.toolTip()
    assert "nothing is written" in tip and "Esc" in tip and "Now" in tip and "stays" in tip


@pytest.mark.parametrize("time_travel", [True], indirect=True, ids=["planted-write"])
def test_the_time_travel_check_sees_a_write_made_while_previewing(window, qtbot, time_travel):
    qtbot.keyClick(time_travel, Qt.Key.Key_PageUp)
    assert window.session.preview_days > 0
    plant_write(window.session.store)


def test_a_big_stores_drag_shows_each_day_it_passes_over_at_once(window, qtbot):
    """Issue 34, point 6: at 100,000 a day was read from the store in a job that each
    step of a drag cancelled, so nothing showed until the mouse held still. A day is worked
    out from the dots' own decay inputs, on the spot, and nothing is read meanwhile."""
    window.session.background_from = 1  # as a big store
    reads = []
    window.session.store.project = lambda *a, **k: reads.append(a)  # not asked any more
    for days in (3, 17, 40, 90, 200):
        window.preview_slider.setValue(days)
        assert window.map.data.preview_days == days  # this day is drawn, not a later one
        assert f"Previewing {days} days" in window.map.caption.text()
    assert reads == [] and window.session.job is None
    window.now_button.click()
    assert window.map.data.preview_days == 0


def test_a_previewed_day_is_the_stores_projection_worked_out_over_arrays(demo_db):
    """The map's day is what store.project says, for every memory, without asking it."""
    import time

    import numpy as np
    from mnemoscope.store import LAYERS, MemoryStore
    from mnemoscope.ui.panes.map_data import day_of, map_data

    with MemoryStore(demo_db) as store:
        memories = store.list()
        decay = store.config.decay
        now = store.now()
        base = map_data(memories, decay, now)
        stored = (base.strengths.copy(), base.layers.copy())
        for days in (30, 200, 365, 500):
            projection = store.project(now + days * 86400.0)
            quick = day_of(base, days, decay)
            assert quick.dots is base.dots and quick.preview_days == days
            assert np.allclose(quick.strengths, [projection[m.id][0] for m in memories])
            assert [LAYERS[c] for c in quick.layers] == [projection[m.id][1] for m in memories]
        back = day_of(quick, 0, decay)  # Now: the day as stored
        assert np.array_equal(back.strengths, stored[0]) and np.array_equal(back.layers, stored[1])
    # and it is quick: 100,000 dots in well under a frame of the full build
    many = [type(m)(**{**m.__dict__, "id": f"{m.id}-{i}"}) for i in range(1600) for m in memories[:64]]
    started = time.perf_counter()
    base = map_data(many, decay, now)
    full_s = time.perf_counter() - started
    started = time.perf_counter()
    day_of(base, 30, decay)
    assert time.perf_counter() - started < full_s / 8
