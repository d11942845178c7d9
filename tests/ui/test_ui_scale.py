"""Nothing long on the GUI thread: in a big store, tick, advance, import and reloads run
off it; the window answers meanwhile, shows progress past 300 ms with Cancel, applies the
result in one step, and a failed or cancelled job leaves no undo step and no write."""

import json
import os
import sqlite3
import threading

import pytest
from support.helpers import PLANTED, plant_write, unwritten, unwritten_unless

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore, StoreError  # noqa: E402


@pytest.fixture
def big(window):
    """The demo window as if its store were big: every read and long write goes off the GUI thread."""
    window.session.background_from = 0
    return window


def _dump(path: str) -> str:
    conn = sqlite3.connect(path)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


@pytest.fixture
def held_tick(monkeypatch):
    """Ticks wait for ``release`` before they run, so a test can look at the window meanwhile."""
    release, started = threading.Event(), threading.Event()
    tick = MemoryStore.tick

    def waiting(self, *a, **k):
        started.set()
        assert release.wait(20)
        return tick(self, *a, **k)

    monkeypatch.setattr(MemoryStore, "tick", waiting)
    yield release, started
    release.set()


def test_a_tick_runs_off_the_gui_thread_with_progress_and_lands_as_one_undo_step(big, qtbot, held_tick):
    release, started = held_tick
    steps = big.session.undo_stack.count()
    big.advance(7)
    assert started.wait(10)
    assert big.session.busy and not big.tick_action.isEnabled()  # nothing else writes meanwhile
    qtbot.waitUntil(lambda: big.cancel_button.isVisible(), timeout=3000)
    assert big.progress_label.text() == "Advancing 7 days…"
    assert not big.read_only_badge.isVisible()  # busy is not read-only (the badge showed during every job)
    big.map.search_box.setText("mara")  # the window answers meanwhile, and its search runs beside the job
    qtbot.waitUntil(lambda: bool(big.map.search_matches), timeout=20000)
    release.set()
    qtbot.waitUntil(lambda: big.session.undo_stack.count() == steps + 1, timeout=10000)
    assert big.session.undo_stack.text(steps) == "Advance 7 days"
    assert not big.cancel_button.isVisible() and big.tick_action.isEnabled()
    assert big.tick_summary.text().startswith(" +7 days: ")
    assert big.session.store.stats()["clock_offset_days"] == 7
    big.undo_action.trigger()  # the undo of a tick in a big store runs off the GUI thread too
    qtbot.waitUntil(lambda: not big.session.busy, timeout=10000)
    assert big.session.store.stats()["clock_offset_days"] == 0


def test_cancel_leaves_the_database_exactly_as_before_and_no_undo_step(big, qtbot, held_tick):
    release, started = held_tick
    path = big.session.store.path
    before = _dump(path)
    steps = big.session.undo_stack.count()
    big.advance(30)
    assert started.wait(10)
    qtbot.waitUntil(lambda: big.cancel_button.isVisible(), timeout=3000)
    qtbot.mouseClick(big.cancel_button, qtbot_left())
    release.set()
    qtbot.waitUntil(lambda: not big.session.busy, timeout=10000)
    assert "cancelled; nothing was written" in big.statusBar().currentMessage()
    assert big.session.undo_stack.count() == steps
    assert _dump(path) == before


def test_a_cancelled_write_is_rolled_back_even_halfway(big, qtbot):
    """The SQLite progress handler stops a write that already changed rows: it rolls back."""
    path = big.session.store.path
    before = _dump(path)

    def write(store):
        with store.tables.write():
            store.remember("Written before the cancel.")
            big.session.job.cancel()
            store.conn.execute("SELECT count(*) FROM memories a, memories b, memories c").fetchone()

    done = []
    big.session.start("Writing", write, done.append, "Write failed")
    qtbot.waitUntil(lambda: not big.session.busy, timeout=10000)
    assert done == [] and _dump(path) == before


def test_a_tick_that_fails_off_the_gui_thread_is_shown_and_leaves_no_undo_step(big, qtbot, monkeypatch):
    def refused(self, *a, **k):
        raise StoreError(f"the database {self.path} is busy (another program is writing); try again")

    monkeypatch.setattr(MemoryStore, "tick", refused)
    steps = big.session.undo_stack.count()
    big.last_error = None
    big.advance(0)
    qtbot.waitUntil(lambda: big.last_error is not None, timeout=10000)
    assert "busy" in big.last_error and not big.session.busy
    assert big.session.undo_stack.count() == steps and big.tick_action.isEnabled()


def test_an_import_runs_off_the_gui_thread_and_is_one_undo_step(big, qtbot, tmp_path):
    lines = tmp_path / "new.jsonl"
    lines.write_text("\n".join(json.dumps({"id": f"n{i}", "text": f"Imported line number {i} about tea."})
                               for i in range(50)))
    n = big.session.store.count()
    big.import_jsonl(str(lines))
    qtbot.waitUntil(lambda: big.session.store.count() == n + 50 and not big.session.busy, timeout=10000)
    assert "n0" in big.map.visible_ids and big.table.model.rowCount() == n + 50
    assert big.session.undo_stack.text(big.session.undo_stack.count() - 1) == "Import JSONL"
    big.undo_action.trigger()
    qtbot.waitUntil(lambda: big.table.model.rowCount() == n, timeout=10000)


def test_an_agents_write_is_read_again_off_the_gui_thread(big, qtbot):
    with MemoryStore(big.session.store.path) as agent:
        mid = agent.remember("Mara started learning the cello.").memory.id
    qtbot.waitUntil(lambda: mid in big.map.visible_ids, timeout=10000)
    assert big.table.model.row_of(mid) is not None


def test_the_time_travel_preview_is_projected_off_the_gui_thread(big, qtbot):
    shown = set(big.map.visible_ids)
    big.preview_slider.setValue(365)
    qtbot.waitUntil(lambda: big.map.data.preview_days == 365, timeout=10000)
    assert set(big.map.visible_ids) < shown  # a year on, some memories fell out of the rings
    big.preview_slider.setValue(0)
    qtbot.waitUntil(lambda: set(big.map.visible_ids) == shown, timeout=10000)


def test_undo_and_redo_of_a_big_import_run_off_the_gui_thread_in_one_transaction(window, qtbot, tmp_path,
                                                                                 monkeypatch):
    """A store that is not big, an import that is (#33: 2,000 memories took 0.95 s to undo and
    1.80 s to redo on the GUI thread, one transaction a memory): each step is one job and one
    write transaction, and Cancel leaves the database as it was."""
    session = window.session
    session.long_step_from = 40
    lines = tmp_path / "many.jsonl"
    lines.write_text("\n".join(json.dumps({"id": f"n{i}", "text": f"Imported line {i} about green tea.",
                                           **({"references": [f"n{i - 1}"]} if i else {})}) for i in range(60)))
    n = session.store.count()
    window.import_jsonl(str(lines))
    qtbot.waitUntil(lambda: session.store.count() == n + 60 and not session.busy, timeout=10000)
    linked = session.store.get("n5").references
    backend = type(session.store.tables.backend)
    begun = []
    begin = backend.begin_write
    monkeypatch.setattr(backend, "begin_write", lambda self: (begun.append(threading.current_thread()), begin(self)))
    window.undo_action.trigger()
    assert session.busy  # a job: the window answers meanwhile
    qtbot.waitUntil(lambda: not session.busy, timeout=10000)
    assert session.store.count() == n and session.undo_stack.index() == session.undo_stack.count() - 1
    assert len(begun) == 1 and begun[0] is not threading.main_thread()
    begun.clear()
    window.redo_action.trigger()
    assert session.busy
    qtbot.waitUntil(lambda: not session.busy, timeout=10000)
    assert session.store.count() == n + 60 and window.table.model.rowCount() == n + 60
    assert len(begun) == 1 and begun[0] is not threading.main_thread()
    assert session.store.get("n5").references == linked, "links between the memories put back come back too"
    release, delete_many = threading.Event(), MemoryStore.delete_many
    monkeypatch.setattr(MemoryStore, "delete_many", lambda self, ids: (release.wait(10), delete_many(self, ids))[1])
    window.undo_action.trigger()
    session.job.cancel()
    release.set()
    qtbot.waitUntil(lambda: not session.busy, timeout=10000)
    assert session.store.count() == n + 60 and session.undo_stack.index() == session.undo_stack.count()
    assert "cancelled; nothing was written" in window.statusBar().currentMessage()


def qtbot_left():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_a_job_holds_off_the_full_collection_and_freezes_what_it_built(big, qtbot, held_tick):
    """A full pass of Python's cycle collector over what a job builds at 100,000 memories
    held the interpreter lock for 0.7-2.9 s (the GUI thread's longest stalls): off while a
    job runs, and what the views took from it is frozen (never traversed again)."""
    import gc

    from mnemoscope.ui import heap

    release, started = held_tick
    qtbot.waitUntil(lambda: heap.running() == 0, timeout=20000)  # the window's first read has been applied
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    steps = big.session.undo_stack.count()
    big.advance(0)
    assert started.wait(10)
    assert not gc.isenabled() and heap.running() == 1
    release.set()
    qtbot.waitUntil(lambda: big.session.undo_stack.count() == steps + 1, timeout=10000)
    assert gc.isenabled() and heap.running() == 0
    assert gc.get_freeze_count() > frozen


@pytest.fixture
def held_apply(monkeypatch):
    """Foreign imports wait for ``release`` before they write (their dry run does not)."""
    import mnemoscope.ui.ecosystem as eco

    release, started, threads = threading.Event(), threading.Event(), []
    apply = eco.apply

    def waiting(store, plan, **k):
        threads.append(threading.current_thread())
        if not k.get("dry_run"):
            started.set()
            assert release.wait(20)
        return apply(store, plan, **k)

    monkeypatch.setattr(eco, "apply", waiting)
    yield release, started, threads
    release.set()


MCP_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "mcp_memory", "memory.jsonl")


def _dialog(window):
    from mnemoscope.ui.dialogs.job_dialog import JobProgressDialog

    return next((d for d in window.findChildren(JobProgressDialog) if d.isVisible()), None)


def test_import_from_runs_off_the_gui_thread_with_a_progress_dialog(big, qtbot, monkeypatch, held_apply):
    from mnemoscope.ui.dialogs.import_dialog import ImportChoice

    release, started, threads = held_apply
    asked = []
    monkeypatch.setattr(type(big.ecosystem), "ask_import",
                        lambda self, preview: asked.append(preview.summary()) or ImportChoice())
    n, steps = big.session.store.count(), big.session.undo_stack.count()
    assert big.ecosystem.import_path(MCP_FILE, None) is None  # it lands later
    qtbot.waitUntil(started.is_set, timeout=10000)  # the count comes back to the GUI thread first
    assert asked[0].startswith("would import 6 memories") and big.session.store.count() == n  # counted first
    qtbot.waitUntil(lambda: _dialog(big) is not None, timeout=3000)
    assert _dialog(big).labelText().startswith("Importing mcp-memory…")
    assert not big.cancel_button.isVisible()  # one progress, one Cancel: in the dialog
    big.map.search_box.setText("mara")  # the window answers meanwhile, and its search runs beside the job
    qtbot.waitUntil(lambda: bool(big.map.search_matches), timeout=20000)
    release.set()
    qtbot.waitUntil(lambda: big.session.undo_stack.count() == steps + 1, timeout=10000)
    assert big.session.store.count() == n + 6 and _dialog(big) is None
    assert threading.main_thread() not in threads
    assert big.session.undo_stack.text(steps) == "Import mcp-memory"
    big.undo_action.trigger()  # off the GUI thread too
    qtbot.waitUntil(lambda: not big.session.busy, timeout=10000)
    assert big.session.store.count() == n


@pytest.mark.parametrize(**PLANTED)
def test_a_cancelled_import_from_writes_nothing_and_leaves_no_undo_step(big, qtbot, monkeypatch, held_apply,
                                                                        planted):
    from mnemoscope.ui.dialogs.import_dialog import ImportChoice

    release, started, _threads = held_apply
    monkeypatch.setattr(type(big.ecosystem), "ask_import", lambda self, preview: ImportChoice())
    steps = big.session.undo_stack.count()
    with unwritten_unless(planted, big.session.store.path):
        big.ecosystem.import_path(MCP_FILE, None)
        qtbot.waitUntil(started.is_set, timeout=10000)  # the count comes back to the GUI thread first
        qtbot.waitUntil(lambda: _dialog(big) is not None, timeout=3000)
        qtbot.mouseClick(_dialog(big).cancel_button, qtbot_left())
        release.set()
        qtbot.waitUntil(lambda: not big.session.busy, timeout=10000)
        if planted:
            plant_write(big.session.store)
    assert "cancelled; nothing was written" in big.statusBar().currentMessage()
    assert big.session.undo_stack.count() == steps


def test_file_import_counts_the_lines_off_the_gui_thread_before_it_writes(big, qtbot, monkeypatch, tmp_path):
    from PySide6.QtWidgets import QMessageBox

    lines = tmp_path / "new.jsonl"
    lines.write_text("\n".join(json.dumps({"id": f"n{i}", "text": f"Counted line {i} about tea."}) for i in range(40)))
    asked = []
    answer = [QMessageBox.StandardButton.Cancel]
    monkeypatch.setattr(type(big.ecosystem), "ask", lambda self, preview: asked.append(preview) or answer[0])
    monkeypatch.setattr("mnemoscope.ui.main_window.QFileDialog.getOpenFileName", lambda *a, **k: (str(lines), ""))
    n = big.session.store.count()
    with unwritten(big.session.store.path):
        big.import_action.trigger()
        qtbot.waitUntil(lambda: bool(asked) and not big.session.busy, timeout=10000)
    assert asked[0].memories_new == 40 and big.session.store.count() == n
    answer[0] = QMessageBox.StandardButton.Yes
    big.import_action.trigger()
    qtbot.waitUntil(lambda: big.session.store.count() == n + 40 and not big.session.busy, timeout=10000)
    assert big.table.model.rowCount() == n + 40
