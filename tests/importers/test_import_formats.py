"""The import formats are declared once (store/importers/formats.py): a throwaway format
added to that list flows to detection, the plan's ids, the command line and the window."""

from __future__ import annotations

import json

import pytest
from mnemoscope.cli import main
from mnemoscope.store.importers import detect, formats, import_file, plan_import


def _read(store, path, plan, *, now=None):
    with open(path, encoding="utf-8") as fh:
        for line in fh.read().splitlines()[1:]:
            if line.strip():
                plan.memory(store, line, text=line.strip(), created=now)
                plan.place("line -> memory")
    return plan


THROWAWAY = formats.Format("throwaway", "a throwaway notes file", "tw", "Throwaway notes…", "Notes (*.tw)",
                           lambda s: not s.is_dir and s.first.startswith("#throwaway"), _read)


@pytest.fixture
def throwaway(monkeypatch, tmp_path):
    monkeypatch.setattr(formats, "FORMATS", [THROWAWAY, *formats.FORMATS])
    path = tmp_path / "notes.tw"
    path.write_text("#throwaway\nAna likes tea\nBo keeps bees\n", encoding="utf-8")
    return str(path)


def test_a_new_format_is_detected_read_and_numbered_by_its_record(store, throwaway):
    assert detect(throwaway) == "throwaway"
    plan = plan_import(store, throwaway)
    assert [m["text"] for m in plan.memories] == ["Ana likes tea", "Bo keeps bees"]
    assert all(m["id"].startswith("tw-") for m in plan.memories)
    result = import_file(store, throwaway, "throwaway", sensitivity="medium")
    assert result.memories_new == 2 and {m.sensitivity for m in store.list()} == {"medium"}


def test_a_new_format_is_a_choice_of_the_command_line(db_path, throwaway, capsys):
    assert main(["import", "--help"]) == 0
    assert "throwaway" in capsys.readouterr().out
    assert main(["--db", db_path, "import", throwaway, "--format", "throwaway", "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories_new"] == 2
    assert main(["--db", db_path, "import", throwaway, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "throwaway"
    assert main(["--db", db_path, "import", throwaway, "--format", "nonesuch"]) == 2
    assert "throwaway" in capsys.readouterr().err


def test_a_new_format_is_in_the_windows_import_menu(throwaway):
    pytest.importorskip("PySide6")
    from mnemoscope.ui.ecosystem import sources

    assert ("throwaway", "Throwaway notes…", "Notes (*.tw)") in sources()
    assert "jsonl" not in [name for name, _, _ in sources()]  # Mnemoscope's own is File › Import


def test_every_format_has_one_record():
    names = formats.names()
    assert len(names) == len(set(names))
    assert {"mcp-memory", "basic-memory", "letta", "mem0", "jsonl"} <= set(names)
    prefixes = [f.id_prefix for f in formats.FORMATS if f.read is not None]
    assert len(prefixes) == len(set(prefixes)) and all(prefixes)
