"""File › Import from… and Help › Connect an agent… in the real window."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.gui
ImportChoice = pytest.importorskip("mnemoscope.ui.dialogs.import_dialog").ImportChoice
MCP_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "mcp_memory", "memory.jsonl")


def menu_texts(window, title):
    menu = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == title)
    return [a.text().replace("&", "") for a in menu.actions()], menu


def test_the_menus_offer_each_format_and_connect(window):
    texts, file_menu = menu_texts(window, "File")
    assert "Import from" in texts
    assert [a.text() for a in window.ecosystem.import_menu.actions()] == [
        "MCP memory server (memory.jsonl)…", "basic-memory folder…", "Letta agent file (.af)…", "mem0 or OpenMemory export…"]
    assert "Connect an agent…" in menu_texts(window, "Help")[0]


def test_import_previews_then_imports_as_one_undoable_step(window, monkeypatch):
    store = window.session.store
    before = store.count()
    shown = {}

    def answer(self, preview):
        shown["summary"] = preview.summary()
        return ImportChoice()

    monkeypatch.setattr(type(window.ecosystem), "ask_import", answer)
    result = window.ecosystem.import_path(MCP_FILE, None)
    assert shown["summary"].startswith("would import 6 memories, 5 entities, 4 relations")
    assert result.memories_new == 6 and store.count() == before + 6
    assert window.session.selected_id == result.ids[0]
    window.session.undo_stack.undo()
    assert store.count() == before and "Mara Lindqvist" not in {e.name for e in store.entities()}
    window.session.undo_stack.redo()
    assert store.count() == before + 6


def test_a_refused_file_shows_why_and_changes_nothing(window, tmp_path, monkeypatch):
    errors = []
    monkeypatch.setattr(window, "show_error", lambda title, message: errors.append(message))
    bad = tmp_path / "memory.jsonl"
    bad.write_text('{"type":"entity","name":"a\\u202eb","entityType":"x","observations":["y"]}\n', encoding="utf-8")
    before = window.session.store.count()
    assert window.ecosystem.import_path(str(bad), "mcp-memory", confirm=False) is None
    assert "text-direction character U+202E" in errors[0] and window.session.store.count() == before


def test_connect_dialog_shows_the_entry_and_writes_it_through_the_same_function(window, tmp_path, monkeypatch):
    from mnemoscope.ui.ecosystem import ConnectDialog

    monkeypatch.setenv("HOME", str(tmp_path))
    dialog = ConnectDialog(window.session.store.path, window)
    dialog.client.setCurrentIndex(dialog.client.findData("cursor"))
    dialog.scopes.setText("group:team private:ana")
    dialog.trust.setCurrentText("low")
    text = dialog.preview.toPlainText()
    assert text.startswith(str(tmp_path / ".cursor" / "mcp.json"))
    assert '"group:team"' in text and '"low"' in text and not (tmp_path / ".cursor").exists()
    monkeypatch.setattr(ConnectDialog, "exec", lambda self: ConnectDialog.DialogCode.Accepted)
    monkeypatch.setattr("mnemoscope.ui.ecosystem.ConnectDialog", lambda db, parent: dialog)
    window.ecosystem.connect_dialog()
    args = json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]["mnemoscope"]["args"]
    assert args[-9:] == ["mcp", "--db", window.session.store.path, "--scope", "group:team", "--scope",
                         "private:ana", "--trust", "low"]
    dialog.deleteLater()


def test_importing_a_source_again_shows_the_changes_first_and_undo_takes_them_back(window, tmp_path, monkeypatch):
    store = window.session.store
    memory = tmp_path / "memory.jsonl"

    def write(observations):
        memory.write_text(json.dumps({"type": "entity", "name": "Mara", "entityType": "person",
                                      "observations": observations}), encoding="utf-8")

    write(["Climbs on Sundays", "Drinks tea"])
    window.ecosystem.import_path(str(memory), None, confirm=False)
    before = sorted((m.id, m.text) for m in store.list())
    shown = {}

    def answer(self, preview):
        from mnemoscope.ui.ecosystem import preview_text

        shown["text"] = preview_text(preview)
        return ImportChoice()

    monkeypatch.setattr(type(window.ecosystem), "ask_import", answer)
    write(["Swims", "Drinks tea", "Bikes"])  # one gone, one edited where it stood, one added
    result = window.ecosystem.import_path(str(memory), None)
    assert "would import 1 memories" in shown["text"] and "would update 1 and would retire 0" in shown["text"]
    assert "'Climbs on Sundays' -> 'Swims'" in shown["text"]
    assert (result.memories_new, result.memories_updated) == (1, 1)
    assert {m.text for m in store.list()} >= {"Swims", "Drinks tea", "Bikes"}
    window.session.undo_stack.undo()
    assert sorted((m.id, m.text) for m in store.list()) == before
    window.session.undo_stack.redo()
    assert {m.text for m in store.list()} >= {"Swims", "Drinks tea", "Bikes"}
    write(["Drinks tea"])
    result = window.ecosystem.import_path(str(memory), None)
    assert "retire " in shown["text"] and "'Swims'" in shown["text"] and result.memories_retired == 2
    window.session.undo_stack.undo()
    assert {m.text for m in store.list()} >= {"Swims", "Drinks tea", "Bikes"}


def test_the_import_asks_how_sensitive_and_brings_flagged_memories_in_as_they_need(window, tmp_path, monkeypatch,
                                                                                   qtbot):
    from mnemoscope.ui.dialogs.import_dialog import ImportDialog

    letta = tmp_path / "agent.af"
    letta.write_text(json.dumps({"agents": [{"name": "ops-bot", "block_ids": ["b1", "b2"]}], "blocks": [
        {"id": "b1", "label": "human", "value": "Prefers short answers"},
        {"id": "b2", "label": "notes", "value": "The VPN password is hunter2hunter2"}]}), encoding="utf-8")
    asked = {}

    def answer(self, preview):
        from mnemoscope.ui.ecosystem import preview_text

        dialog = ImportDialog(preview, preview_text(preview))
        qtbot.addWidget(dialog)
        asked["flagged"] = dialog.raise_flagged.isChecked(), dialog.raise_flagged.text()
        dialog.sensitivity.setCurrentText("medium")
        return dialog.choice()

    monkeypatch.setattr(type(window.ecosystem), "ask_import", answer)
    result = window.ecosystem.import_path(str(letta), None)
    assert asked["flagged"][0] and "1 flagged memory" in asked["flagged"][1]
    levels = {m.text: m.sensitivity for m in window.session.store.list() if m.id in result.ids}
    assert levels["Prefers short answers"] == "medium"
    assert levels["The VPN password is hunter2hunter2"] in ("high", "hyper")
