"""One write path in the window: every write goes through the session, a failure is shown
and leaves no undo step, a merge is one step, and undo puts back only what it changed."""

import ast
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore, StoreError  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QInputDialog, QMainWindow, QMenu, QMessageBox  # noqa: E402

AWS = "AKIAQ3EGRV7XKJ4PLM2N"
UI = Path(__file__).resolve().parents[2] / "app" / "ui"


@pytest.fixture(autouse=True)
def _settings(qt_settings, monkeypatch):
    monkeypatch.setattr(QMessageBox, "information", lambda *a, **k: QMessageBox.StandardButton.Ok)


def _conflict(window):
    store = window.session.store
    old = store.remember("Theo works at Acme Corp.", now=store.now() - 86400).memory.id
    new = store.remember("Theo joined Globex last week.").memory.id
    window.session.notify(None)
    view = window.owner.conflicts
    window.owner.show_view(view)
    view.view.setCurrentIndex(view.model.index(0, 0))
    return store, old, new, view


def _refuse_writes(monkeypatch, store):
    """Every write transaction of ``store`` is refused, as when another program holds the lock."""
    def refused(*_a, **_k):
        raise StoreError(f"the database {store.path} is busy (another program is writing); try again")
    monkeypatch.setattr(store.tables, "write", refused)


def test_a_redact_the_store_refuses_is_shown_and_leaves_no_undo_step(window, qtbot, monkeypatch):
    store = window.session.store
    mid = store.remember(f"Deploy key {AWS} for staging.", sensitivity="low").memory.id
    window.session.notify(None)
    view = window.owner.privacy
    window.owner.show_view(view)
    qtbot.waitUntil(lambda: view.model.rowCount() == 1)
    view.view.setCurrentIndex(view.model.index(0, 0))
    steps = window.session.undo_stack.count()
    window.last_error = None
    _refuse_writes(monkeypatch, store)
    qtbot.mouseClick(view.redact_button, Qt.MouseButton.LeftButton)
    assert window.last_error is not None and "busy" in window.last_error
    assert "Redact failed" in view.summary.text()
    assert window.session.undo_stack.count() == steps
    monkeypatch.undo()
    assert AWS in store.get(mid).text


def test_a_supersede_the_store_refuses_is_shown_and_leaves_no_undo_step(window, qtbot, monkeypatch):
    store, old, new, view = _conflict(window)
    steps = window.session.undo_stack.count()
    window.last_error = None
    _refuse_writes(monkeypatch, store)
    qtbot.mouseClick(view.supersede_button, Qt.MouseButton.LeftButton)
    assert window.last_error is not None and "busy" in window.last_error
    assert window.session.undo_stack.count() == steps
    monkeypatch.undo()
    assert store.get(old).layer != "archived"


def test_a_merge_whose_older_memory_went_meanwhile_changes_nothing_and_says_so(window, qtbot, monkeypatch):
    store, old, new, view = _conflict(window)
    steps = window.session.undo_stack.count()

    def agent_forgets_the_older_while_the_dialog_is_open(*_a, **_k):
        with MemoryStore(store.path) as agent:
            agent.delete(old)
        return "Theo left Acme and joined Globex in November.", True

    monkeypatch.setattr(QInputDialog, "getMultiLineText", agent_forgets_the_older_while_the_dialog_is_open)
    window.last_error = None
    qtbot.mouseClick(view.merge_button, Qt.MouseButton.LeftButton)
    assert store.get(new).text == "Theo joined Globex last week."  # not half-applied
    assert window.last_error is not None and old in window.last_error
    assert window.session.undo_stack.count() == steps


def test_a_merge_is_one_undo_step_that_keeps_what_an_agent_changed_meanwhile(window, qtbot, monkeypatch):
    store, old, new, view = _conflict(window)
    steps = window.session.undo_stack.count()
    monkeypatch.setattr(QInputDialog, "getMultiLineText",
                        lambda *a, **k: ("Theo left Acme and joined Globex in November.", True))
    qtbot.mouseClick(view.merge_button, Qt.MouseButton.LeftButton)
    assert window.session.undo_stack.count() == steps + 1
    assert window.session.undo_stack.text(steps) == "Merge memories"
    assert store.get(new).text == "Theo left Acme and joined Globex in November."
    assert store.get(old).layer == "archived"
    with MemoryStore(store.path) as agent:  # meanwhile an agent tags both memories
        agent.update(new, tags=["work"])
        agent.update(old, tags=["history"])
    window.undo_action.trigger()
    assert store.get(new).text == "Theo joined Globex last week." and store.get(new).tags == ["work"]
    assert store.get(old).layer != "archived" and store.get(old).tags == ["history"]
    window.redo_action.trigger()
    assert store.get(new).text == "Theo left Acme and joined Globex in November."
    assert store.get(old).layer == "archived"


def test_undo_of_a_supersede_keeps_an_agents_edit_of_the_older_memory(window, qtbot):
    store, old, new, view = _conflict(window)
    qtbot.mouseClick(view.supersede_button, Qt.MouseButton.LeftButton)
    assert store.get(old).layer == "archived"
    with MemoryStore(store.path) as agent:
        agent.update(old, text="Theo worked at Acme Corp until October.")
    window.undo_action.trigger()
    back = store.get(old)
    assert back.text == "Theo worked at Acme Corp until October." and back.layer != "archived"


def test_undo_of_a_reinforcement_keeps_an_agents_edit_and_takes_back_the_recall(window):
    store = window.session.store
    mid = store.remember("Mara takes her coffee black, no sugar.").memory.id
    window.session.notify(None)
    recalls = store.get(mid).recall_count
    window.editor.start_new()
    window.editor.text.setPlainText("Mara takes her coffee black, no sugar.")
    assert window.editor.save()
    assert window.session.undo_stack.text(window.session.undo_stack.count() - 1) == "Reinforce memory"
    assert store.get(mid).recall_count == recalls + 1
    with MemoryStore(store.path) as agent:
        agent.update(mid, tags=["drinks"], topic="food")
    window.undo_action.trigger()
    back = store.get(mid)
    assert back.recall_count == recalls and len(store.recall_events(mid)) == recalls
    assert back.tags == ["drinks"] and back.topic == "food"


def test_owner_tools_signal_a_plain_main_window_and_do_not_import_it(qtbot):
    from mnemoscope.ui.owner_tools import OwnerTools
    from mnemoscope.ui.session import StoreSession

    tree = ast.parse((UI / "owner_tools.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "main_window" not in imported and not any("main_window" in (m or "") for m in imported)
    host = QMainWindow()
    qtbot.addWidget(host)
    session = StoreSession(MemoryStore(":memory:"), parent=host)
    file_menu, view_menu = QMenu(host), QMenu(host)
    file_menu.addAction("&Quit")
    tools = OwnerTools(session, host, file_menu, view_menu)
    said, failed = [], []
    tools.status_message.connect(said.append)
    tools.failed.connect(lambda title, message: failed.append(title))
    assert tools.back_up_now() is None and failed == ["No database file"]
    assert said == []
