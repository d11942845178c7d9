"""``import --partial`` for every format (#35.1): a file with a bad record imports nothing by
default; with ``--partial`` the good records come in and each bad one is named, with its
reason, as left out (exit 1, as for JSONL). Through the real command line, on both engines."""

from __future__ import annotations

import json

import pytest
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore


def mcp_file(tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [
        {"type": "entity", "name": "Mara", "entityType": "person", "observations": ["Climbs on Sundays"]},
        {"type": "entity", "name": "Bad\u0007name", "entityType": "person", "observations": ["Never seen"]},
        {"type": "relation", "from": "Mara", "to": "Zig", "relationType": "uses"}]), encoding="utf-8")
    return path, "line 2"


def bm_folder(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "mara.md").write_text("---\ntitle: Mara\n---\n\n- [habit] Climbs on Sundays\n", encoding="utf-8")
    (folder / "broken.md").write_text("---\ntitle: Broken\n\n- [habit] Never seen\n", encoding="utf-8")
    return folder, "broken.md:1"


def letta_file(tmp_path):
    path = tmp_path / "agent.af"
    path.write_text(json.dumps({
        "agents": [{"name": "bot", "block_ids": ["b1", "b2"]}],
        "blocks": [{"id": "b1", "label": "human", "value": "Climbs on Sundays"},
                   {"id": "b2", "label": "persona", "value": 5}]}), encoding="utf-8")
    return path, "block b2"


def mem0_file(tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({"results": [
        {"id": "1", "memory": "Climbs on Sundays", "user_id": "mara"},
        {"id": "2", "memory": "Never seen", "user_id": "mara", "created_at": "not a time"}]}), encoding="utf-8")
    return path, "results[1]"


FILES = {"mcp-memory": mcp_file, "basic-memory": bm_folder, "letta": letta_file, "mem0": mem0_file}


def texts(db):
    with MemoryStore(db) as store:
        return sorted(m.text for m in store.list())


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_partial_takes_the_good_records_and_names_each_bad_one(db_path, tmp_path, capsys, fmt):
    path, where = FILES[fmt](tmp_path)
    assert main(["--db", db_path, "import", str(path)]) == 1
    assert "nothing was imported" in capsys.readouterr().err
    assert texts(db_path) == []
    assert main(["--db", db_path, "import", "--partial", str(path), "--dry-run"]) == 1
    out = capsys.readouterr().out
    assert "would import 1 memories" in out and "1 bad record(s) left out" in out
    assert texts(db_path) == []
    assert main(["--db", db_path, "import", "--partial", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["memories_new"] == 1 and report["bad_records"] == 1
    bad = [x for x in report["left_out"] if x["what"] == "a bad record"]
    assert [x["where"] for x in bad] == [where] and bad[0]["why"]
    assert texts(db_path) == ["Climbs on Sundays"]


def test_partial_still_refuses_a_file_with_nothing_good_in_it(db_path, tmp_path, capsys):
    path = tmp_path / "agent.af"
    path.write_text('{"agents": [], "blocks": [', encoding="utf-8")
    assert main(["--db", db_path, "import", "--format", "letta", "--partial", str(path)]) == 1
    assert "nothing was imported" in capsys.readouterr().err
