"""The Activity dock, driven like a person would while real agents write to the same file:
other connections, the doors' own operations, and real ``mnemoscope mcp`` servers."""

import json
import os
import random
import sys
import threading
import time

import pytest

pytest.importorskip("PySide6")

from mnemoscope.serve.operations import Operations, ScopeRefused  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.agents import activity as activity_log  # noqa: E402
from mnemoscope.ui.panes import activity_dock  # noqa: E402
from mnemoscope.ui.panes.activity_dock import COLUMNS  # noqa: E402
from PySide6.QtCore import QStandardPaths, Qt  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402
from support.helpers import PLANTED, plant_write, resize, unwritten_unless  # noqa: E402

QStandardPaths.setTestModeEnabled(True)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIVE_MS = 1000  # "the window shows every write within a second"


@pytest.fixture(autouse=True)
def _settings(qt_settings):
    """Every test here keeps its Qt settings in its own temporary folder."""


@pytest.fixture
def agent(demo_db):
    """Another connection to the window's database, as an agent's server holds one."""
    with MemoryStore(demo_db) as store:
        yield store


def ops_for(store, client="Claude Desktop 0.14", door="mcp", **kwargs):
    return Operations(store, client=client, door=door, **kwargs)


def cell(window, row, column):
    model = window.activity.model
    return model.data(model.index(row, COLUMNS.index(column)))


def wait_rows(window, qtbot, n, timeout=LIVE_MS):
    qtbot.waitUntil(lambda: window.activity.model.rowCount() == n, timeout=timeout)


def pick(window, row, qtbot=None):
    """Pick a call: a click on its row when a qtbot is given, else as the keyboard does."""
    view = window.activity.view
    index = window.activity.model.index(row, COLUMNS.index("tool"))
    if qtbot is None:
        view.setCurrentIndex(index)
        return
    view.scrollTo(index)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualRect(index).center())
    assert view.currentIndex().row() == row


# -- the live table ------------------------------------------------------------------------
def test_a_call_logged_by_another_connection_shows_within_a_second(window, agent, qtbot):
    assert window.activity.model.rowCount() == 0 and window.activity.isVisible()
    assert "mnemoscope mcp" in window.activity.status.text()
    activity_log.record(agent, client="cursor 1.7", door="http", tool="stats", duration_ms=0.4)
    activity_log.record(agent, client="cursor 1.7", door="http", tool="brief", summary="limit=5")
    wait_rows(window, qtbot, 2)
    assert [cell(window, r, "tool") for r in (0, 1)] == ["brief", "stats"]  # newest first
    assert (cell(window, 0, "client"), cell(window, 0, "door"), cell(window, 0, "summary")) == \
        ("cursor 1.7", "http", "limit=5")
    assert cell(window, 0, "outcome") == "ok" and window.activity.status.text() == ""


def test_a_real_operations_call_shows_and_its_memory_gets_a_halo(window, agent, qtbot):
    ops = ops_for(agent)
    result = ops.call("remember", ops.remember, {"text": "Mara started learning Rust in November.",
                                                 "kind": "event"})
    new_id = result["id"]
    wait_rows(window, qtbot, 1)
    assert (cell(window, 0, "tool"), cell(window, 0, "client"), cell(window, 0, "memories")) == \
        ("remember", "Claude Desktop 0.14", new_id)
    qtbot.waitUntil(lambda: new_id in window.map.visible_ids, timeout=LIVE_MS)
    assert new_id in window.map.arrivals
    assert len(window.map.arrival_halos.data) == 1
    # the halo is short-lived
    window.map.arrivals[new_id] = time.monotonic() - 1
    window.map._draw_call_marks()
    assert not window.map.arrivals and len(window.map.arrival_halos.data) == 0


def test_calls_logged_before_the_window_opened_get_no_halo(qtbot, qt_settings, demo_db):
    from mnemoscope.ui.main_window import MainWindow

    with MemoryStore(demo_db) as agent:
        ops = ops_for(agent)
        ops.call("remember", ops.remember, {"text": "Theo prefers tea to coffee.", "kind": "fact"})
    w = MainWindow(MemoryStore(demo_db))
    qtbot.addWidget(w)
    assert w.activity.model.rowCount() == 1 and not w.map.arrivals
    w.session.close()


def test_new_calls_are_read_after_the_last_seen_id_without_a_reset(window, agent, qtbot, monkeypatch):
    for i in range(3):
        activity_log.record(agent, client="a", door="mcp", tool="stats", summary=f"n={i}")
    wait_rows(window, qtbot, 3)
    asked = []
    real = activity_log.recent

    def spy(store, limit=500, **kwargs):
        asked.append(kwargs)
        return real(store, limit, **kwargs)

    monkeypatch.setattr(activity_dock.activity, "recent", spy)
    last = window.activity.model.last_id
    activity_log.record(agent, client="a", door="mcp", tool="stats", summary="n=3")
    with qtbot.assertNotEmitted(window.activity.model.modelReset, wait=0):
        wait_rows(window, qtbot, 4)
    assert asked and all(kw.get("after_id") == last for kw in asked[:1])
    assert cell(window, 0, "summary") == "n=3" and window.activity.model.last_id > last


def test_the_model_passes_the_model_tester_while_rows_arrive(window, agent, qtbot, qtmodeltester):
    ops = ops_for(agent)
    ops.call("recall", ops.recall, {"query": "Mara allergy"})
    wait_rows(window, qtbot, 1)
    qtmodeltester.check(window.activity.model)
    ops.call("stats", ops.stats, {})
    wait_rows(window, qtbot, 2)
    qtmodeltester.check(window.activity.model)


def test_filter_by_client_and_tool_and_keep_it_while_calls_arrive(window, agent, qtbot):
    claude, cursor = ops_for(agent, "Claude Desktop"), ops_for(agent, "cursor", door="http")
    claude.call("recall", claude.recall, {"query": "tea"})
    cursor.call("recall", cursor.recall, {"query": "garden"})
    cursor.call("stats", cursor.stats, {})
    wait_rows(window, qtbot, 3)
    dock = window.activity
    assert [dock.client_box.itemText(i) for i in range(dock.client_box.count())] == \
        ["all clients", "Claude Desktop", "cursor"]
    dock.client_box.setCurrentIndex(dock.client_box.findData("cursor"))
    assert [cell(window, r, "tool") for r in range(dock.model.rowCount())] == ["stats", "recall"]
    dock.tool_box.setCurrentIndex(dock.tool_box.findData("recall"))
    assert dock.model.rowCount() == 1 and cell(window, 0, "summary") == "query=garden"
    claude.call("recall", claude.recall, {"query": "climbing"})   # another client: stays hidden
    cursor.call("recall", cursor.recall, {"query": "sourdough"})  # this client and tool: shows
    wait_rows(window, qtbot, 2)
    assert cell(window, 0, "summary") == "query=sourdough"
    dock.set_filter(None, None)
    assert dock.model.rowCount() == 5


def test_a_refused_call_is_marked(window, agent, qtbot):
    ops = ops_for(agent)
    with pytest.raises(ScopeRefused):
        ops.call("recall", ops.recall, {"query": "secrets", "scope": "private:theo"})
    wait_rows(window, qtbot, 1)
    model = window.activity.model
    assert cell(window, 0, "outcome") == "✗ refused"
    colour = model.data(model.index(0, COLUMNS.index("tool")), Qt.ItemDataRole.ForegroundRole)
    assert isinstance(colour, QColor) and colour.name().lower() == "#d55e00"
    tip = model.data(model.index(0, COLUMNS.index("outcome")), Qt.ItemDataRole.ToolTipRole)
    assert "private:theo" in tip and "ScopeRefused" in tip


def test_long_summaries_are_elided_and_the_tooltip_holds_them(window, agent, qtbot):
    ops = ops_for(agent)
    question = "What does Mara like to eat, what is she allergic to, and which cafés does she go to on Sundays?"
    ops.call("recall", ops.recall, {"query": question, "k": 7})
    wait_rows(window, qtbot, 1)
    model, view = window.activity.model, window.activity.view
    summary = model.data(model.index(0, COLUMNS.index("summary")), Qt.ItemDataRole.ToolTipRole)
    assert question[:50] in summary and "k=7" in summary
    assert not view.wordWrap() and view.textElideMode() == Qt.TextElideMode.ElideRight
    ids = model.entry(0).memory_ids
    memories_tip = model.data(model.index(0, COLUMNS.index("memories")), Qt.ItemDataRole.ToolTipRole)
    assert all(mid in memories_tip for mid in ids) and len(ids) > 1
    assert cell(window, 0, "memories") == f"{ids[0]} +{len(ids) - 1}"


def test_the_log_keeps_a_calls_arguments_for_replay():
    question = "tea, coffee or juice? " * 200
    kept = json.loads(activity_log.kept_arguments({"query": question, "k": 5, "explain": True, "scope": None}))
    assert kept == {"query": question[: activity_log.ARG_CHARS - 1] + "…", "k": 5, "explain": True}


# -- picking a call ------------------------------------------------------------------------
def test_picking_a_recall_rings_its_memories_and_selects_the_first(window, agent, qtbot):
    ops = ops_for(agent)
    ids = ops.call("recall", ops.recall, {"query": "Mara food allergy", "k": 4})["memory_ids"]
    assert len(ids) > 1
    wait_rows(window, qtbot, 1)
    pick(window, 0, qtbot)
    assert window.map.call_ids == ids
    shown = [mid for mid in ids if mid in window.map.visible_ids]
    xs, ys = window.map.call_rings.getData()
    assert sorted(zip(xs, ys)) == sorted(window.map._positions[mid] for mid in shown) and shown
    assert window.session.selected_id == ids[0]
    rows = window.table.view.selectionModel().selectedRows()
    assert len(rows) == 1 and window.table.proxy.data(rows[0], Qt.ItemDataRole.UserRole + 2) == ids[0]
    # a call without memories clears the rings
    ops.call("stats", ops.stats, {})
    wait_rows(window, qtbot, 2)
    pick(window, 0)
    assert window.map.call_ids == [] and len(window.map.call_rings.data) == 0


def test_replay_loads_a_recall_into_the_preview(window, agent, qtbot):
    ops = ops_for(agent, scopes=("group:garden-club", "global"), trust="low")
    ops.call("recall", ops.recall, {"query": "When does the garden club meet?", "k": 6})
    wait_rows(window, qtbot, 1)
    assert not window.activity.replay_button.isEnabled()
    pick(window, 0)
    assert window.activity.replay_button.isEnabled()
    qtbot.mouseClick(window.activity.replay_button, Qt.MouseButton.LeftButton)
    pv = window.preview
    assert pv.user_message.toPlainText() == "When does the garden club meet?"
    assert pv.scope.currentText() == "group:garden-club" and pv.k.value() == 6
    assert pv.trust.currentText() == "low"  # the server's trust, from the log
    with qtbot.waitSignal(pv.compiled, timeout=3000):
        pass
    assert pv.result is not None and "garden" in pv.export_text("text").lower()


def test_replay_of_a_compile_sets_model_and_budget(window, agent, qtbot):
    ops = ops_for(agent)
    ops.call("compile_prompt", ops.compile_prompt, {"user_message": "Plan Mara's week", "max_tokens": 1500,
                                                    "model": "anthropic/claude-sonnet-4-5", "k": 9})
    wait_rows(window, qtbot, 1)
    pick(window, 0)
    window.activity.replay()
    pv = window.preview
    assert (pv.user_message.toPlainText(), pv.budget_spin.value(), pv.k.value(), pv.model.currentText()) == \
        ("Plan Mara's week", 1500, 9, "anthropic/claude-sonnet-4-5")


# -- forgotten memories --------------------------------------------------------------------
def test_restore_a_forgotten_memory_from_its_forget_call_then_undo(window, agent, qtbot):
    store = window.session.store
    before = store.get("mem-006")
    ops = ops_for(agent, trust="high")
    ops.call("forget", ops.forget, {"memory_id": "mem-006"})
    wait_rows(window, qtbot, 1)
    qtbot.waitUntil(lambda: "mem-006" not in window.map.visible_ids, timeout=LIVE_MS)
    dock = window.activity
    assert dock.tabs.tabText(1) == "Forgotten (1)" and dock.forgotten_list.count() == 1
    assert not dock.restore_button.isEnabled()
    pick(window, 0, qtbot)
    assert dock.restore_button.isEnabled()
    qtbot.mouseClick(dock.restore_button, Qt.MouseButton.LeftButton)
    after = store.get("mem-006")
    assert (after.text, after.recall_count, after.entities) == (before.text, before.recall_count, before.entities)
    assert "mem-006" in window.map.visible_ids and dock.forgotten_list.count() == 0
    assert window.session.undo_stack.undoText() == "Restore forgotten memory"
    assert not dock.restore_button.isEnabled()
    window.undo_action.trigger()
    assert not store.exists("mem-006") and "mem-006" not in window.map.visible_ids
    assert [f.memory_id for f in activity_log.forgotten(store)] == ["mem-006"]
    assert dock.forgotten_list.count() == 1
    window.redo_action.trigger()
    assert store.get("mem-006").text == before.text


def test_restore_from_the_forgotten_list(window, agent, qtbot):
    ops = ops_for(agent, trust="high")
    for mid in ("mem-006", "mem-011"):
        ops.call("forget", ops.forget, {"memory_id": mid})
    qtbot.waitUntil(lambda: window.activity.forgotten_list.count() == 2, timeout=LIVE_MS)
    dock = window.activity
    assert not dock.restore_forgotten_button.isEnabled()
    item = dock.forgotten_list.item(1)
    mid = item.data(Qt.ItemDataRole.UserRole)
    assert not window.session.store.exists(mid)
    assert "Claude Desktop" in item.toolTip()
    dock.forgotten_list.setCurrentItem(item)
    qtbot.mouseClick(dock.restore_forgotten_button, Qt.MouseButton.LeftButton)
    assert window.session.store.exists(mid) and dock.forgotten_list.count() == 1


def test_a_restore_that_fails_says_why_and_leaves_no_undo_step(window, agent, qtbot):
    ops = ops_for(agent, trust="high")
    ops.call("forget", ops.forget, {"memory_id": "mem-006"})
    qtbot.waitUntil(lambda: window.activity.forgotten_list.count() == 1, timeout=LIVE_MS)
    forgotten = window.activity.forgotten[0]
    activity_log.restore_forgotten(agent, "mem-006")  # someone else restored it meanwhile
    assert not window.activity.restore(forgotten)
    assert "mem-006" in window.activity.message and window.session.undo_stack.count() == 0


# -- looking never writes ------------------------------------------------------------------
@pytest.mark.parametrize(**PLANTED)
def test_browsing_the_dock_leaves_the_file_unchanged(window, demo_db, qtbot, planted):
    with MemoryStore(demo_db) as agent:
        ops = ops_for(agent, trust="high")
        ops.call("recall", ops.recall, {"query": "Mara tea"})
        ops.call("forget", ops.forget, {"memory_id": "mem-011"})
        ops_for(agent, "cursor").call("stats", ops.stats, {})
    wait_rows(window, qtbot, 3)
    watch = window.session._watch
    with unwritten_unless(planted, demo_db):
        dock = window.activity
        for row in range(3):
            pick(window, row)
        pick(window, 2)
        dock.replay()
        dock.set_filter("cursor", None)
        dock.set_filter(None, "recall")
        dock.set_filter(None, None)
        dock.tabs.setCurrentIndex(1)
        dock.forgotten_list.setCurrentRow(0)
        dock.hide()
        dock.show()
        watch.setInterval(20)  # the same polls of the data version, sooner
        for _ in range(2):
            with qtbot.waitSignal(watch.timeout, timeout=1000):
                pass
        if planted:
            plant_write(window.session.store)


def test_the_window_with_the_dock_renders_readably(window, agent, qtbot, tmp_path):
    ops = ops_for(agent)
    ops.call("recall", ops.recall, {"query": "x" * 300})
    wait_rows(window, qtbot, 1)
    for size in ((1366, 768), (1920, 1080)):
        resize(qtbot, window, *size)
        image = window.grab().toImage()
        path = tmp_path / f"activity-{size[0]}.png"
        assert image.save(str(path)) and os.path.getsize(path) > 10_000
        dock = window.activity.geometry()
        assert window.activity.isVisible() and dock.height() >= 150
        assert window.rect().contains(dock)
        view = window.activity.view
        assert all(view.columnWidth(COLUMNS.index(c)) > 0 and not view.isColumnHidden(COLUMNS.index(c))
                   for c in ("time", "client", "tool", "scope", "memories", "outcome", "summary"))


def test_an_agent_write_just_before_one_of_ours_still_reaches_the_editor(window, agent, qtbot):
    """Our own commit must not hide an agent's commit that the watch has not seen yet."""
    from mnemoscope.ui.commands.memories import EditMemoryCommand

    window.session.select("mem-006")
    assert window.editor.text.toPlainText() == "Mara is allergic to peanuts."
    ops = ops_for(agent, trust="high")
    ops.call("update", ops.update, {"memory_id": "mem-006", "text": "Mara is allergic to peanuts and sesame."})
    window.session.undo_stack.push(EditMemoryCommand(window.session, "mem-011", {"importance": 0.4}))
    qtbot.waitUntil(lambda: window.editor.text.toPlainText() == "Mara is allergic to peanuts and sesame.",
                    timeout=LIVE_MS)
    wait_rows(window, qtbot, 1)


# -- two MCP servers and the inspector writing at once -------------------------------------
WORDS = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp",
         "lagoon", "meadow", "nectar", "orchid", "pebble", "quartz", "river", "saffron", "tundra", "umber",
         "violet", "willow", "yarrow", "zephyr")


def sentence(writer, i):
    """Distinct enough that no write is taken for a near-duplicate of another."""
    words = random.Random(f"{writer}/{i}").sample(WORDS, 6)
    return f"{writer} saw {' '.join(words)} on day {i}."


def test_two_mcp_servers_and_the_window_write_at_once_and_the_window_shows_every_write(window, demo_db, qtbot):
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.types import Implementation
    from mnemoscope.ui.commands.memories import NewMemoryCommand

    per_client = 12
    env = dict(os.environ)
    returned: dict[str, list[tuple[str, float]]] = {}
    failures: list[str] = []
    seen: dict[int, float] = {}
    model = window.activity.model

    def on_rows(_parent, first, last):
        for row in range(first, last + 1):
            seen.setdefault(model.entry(row).id, time.monotonic())

    model.rowsInserted.connect(on_rows)

    def agent(name):
        async def main():
            params = StdioServerParameters(command=sys.executable, args=["-m", "mnemoscope", "--db", demo_db, "mcp"],
                                           cwd=ROOT, env=env)
            async with Client(params, client_info=Implementation(name=name, version="1.0")) as client:
                for i in range(per_client):
                    result = await client.call_tool("remember", {"text": sentence(name, i), "kind": "event"})
                    text = result.content[0].text
                    if result.is_error:
                        failures.append(f"{name}: {text}")
                        continue
                    returned.setdefault(name, []).append((json.loads(text)["id"], time.monotonic()))
                    await anyio.sleep(0.05)

        try:
            anyio.run(main)
        except BaseException as exc:  # noqa: BLE001 (reported below, in the test's thread)
            failures.append(f"{name}: {exc!r}")

    threads = [threading.Thread(target=agent, args=(name,)) for name in ("agent-one", "agent-two")]
    for t in threads:
        t.start()
    ours = []
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        if len(ours) < per_client:
            command = NewMemoryCommand(window.session, {"text": sentence("owner", len(ours)), "kind": "fact"})
            window.session.undo_stack.push(command)
            ours.append(command.memory_id)
        qtbot.wait(60)
    for t in threads:
        t.join(timeout=10)
    assert not failures, failures
    assert not any("locked" in f for f in failures)
    written = {mid: at for calls in returned.values() for mid, at in calls}
    assert len(written) == 2 * per_client and all(ours) and len(set(ours)) == len(ours)
    qtbot.waitUntil(lambda: model.rowCount() == 2 * per_client, timeout=LIVE_MS)
    # nothing lost
    store = window.session.store
    assert all(store.exists(mid) for mid in [*written, *ours])
    # the window showed each agent's write within a second of the server answering
    by_memory = {model.entry(r).memory_ids[0]: model.entry(r).id for r in range(model.rowCount())}
    assert set(by_memory) == set(written)
    lags = {mid: seen[by_memory[mid]] - at for mid, at in written.items()}
    assert max(lags.values()) < 1.0, sorted(lags.values())[-3:]
    assert {model.entry(r).client for r in range(model.rowCount())} == {"agent-one 1.0", "agent-two 1.0"}
    qtbot.waitUntil(lambda: set(written) <= set(window.map.visible_ids), timeout=LIVE_MS)
    assert set(ours) <= set(window.map.visible_ids)
    window.undo_action.trigger()  # the owner's writes stay undoable in between the agents'
    assert not store.exists(ours[-1])
