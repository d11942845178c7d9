"""mem0 and OpenMemory as they keep memory (#35.5): an item filed under a user and an agent is
found from both scopes; OpenMemory's export zip (``memories.json`` and ``memories.jsonl.gz``,
written here in the shape openmemory/api/app/routers/backup.py gives them) is read, a zip
that unpacks past what it says is refused; basic-memory's frontmatter ``aliases`` become the
entity's aliases and every other field it drops is listed. On SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
import io
import json
import zipfile

import pytest
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore
from mnemoscope.store.importers import detect, import_file

NOW = "2026-06-01T12:00:00Z"


def test_a_memory_of_a_user_and_an_agent_is_found_from_both(store, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({"results": [
        {"id": "m1", "memory": "Prefers the Sunday climbing session", "user_id": "mara", "agent_id": "coach",
         "created_at": "2026-01-14T09:12:44Z"},
        {"id": "m2", "memory": "Explains with diagrams", "agent_id": "coach"}]}), encoding="utf-8")
    result = import_file(store, path, now=NOW)
    assert result.placed["memory of a user and an agent -> also a copy in scope agent:ID, so the agent finds it"] == 1
    for scope in ("user:mara", "agent:coach"):
        hits = store.recall("Sunday climbing", scope=scope, with_global=False)
        assert hits and hits[0].text == "Prefers the Sunday climbing session", scope
    copy = next(m for m in store.list(scope="agent:coach") if m.text.startswith("Prefers"))
    assert "user:mara" in copy.tags and copy.created_at == 1768381964.0
    # Edited in mem0 and exported again: both stay in step.
    path.write_text(path.read_text().replace("Sunday climbing session", "Saturday climbing session"))
    again = import_file(store, path, now=NOW)
    assert (again.memories_updated, again.memories_new, again.memories_retired) == (2, 0, 0)
    assert sorted(m.scope for m in store.list() if "Saturday" in m.text) == ["agent:coach", "user:mara"]


def openmemory_zip(tmp_path, *, document=True, lines=True, name="memories_export_mara.zip"):
    """An export as OpenMemory's backup router writes it (made here, not copied)."""
    cat = {"id": "c-1", "name": "health", "description": None, "created_at": None, "updated_at": None}
    app = {"id": "a-1", "owner_id": "u-1", "name": "cursor", "description": None, "metadata": {}, "is_active": True}
    mems = [
        {"id": "11111111-0000-0000-0000-000000000001", "user_id": "u-1", "app_id": "a-1",
         "content": "Is allergic to peanuts", "metadata": {"source": "chat"}, "state": "active",
         "created_at": "2026-02-01T10:00:00+00:00", "updated_at": "2026-02-01T10:00:00+00:00",
         "archived_at": None, "deleted_at": None, "category_ids": ["c-1"]},
        {"id": "11111111-0000-0000-0000-000000000002", "user_id": "u-1", "app_id": "a-1",
         "content": "Old phone number", "metadata": {}, "state": "deleted", "created_at": None, "updated_at": None,
         "archived_at": None, "deleted_at": "2026-02-02T10:00:00+00:00", "category_ids": []},
        {"id": "11111111-0000-0000-0000-000000000003", "user_id": "u-1", "app_id": None,
         "content": "Paused note", "metadata": {}, "state": "paused", "created_at": None, "updated_at": None,
         "archived_at": None, "deleted_at": None, "category_ids": []}]
    doc = {"user": {"id": "u-1", "user_id": "mara", "name": "Mara", "email": None, "metadata": {}},
           "apps": [app], "categories": [cat], "memories": mems,
           "memory_categories": [{"memory_id": mems[0]["id"], "category_id": "c-1"}],
           "status_history": [{"id": "h-1", "memory_id": mems[1]["id"], "changed_by": "u-1", "old_state": "active",
                               "new_state": "deleted", "changed_at": "2026-02-02T10:00:00+00:00"}],
           "access_controls": [], "export_meta": {"app_id_filter": None, "version": "1"}}
    blob = io.BytesIO()
    with gzip.GzipFile(fileobj=blob, mode="wb") as gz:
        for m in mems:
            gz.write((json.dumps({"id": m["id"], "content": m["content"], "metadata": m["metadata"],
                                  "created_at": m["created_at"], "updated_at": m["updated_at"], "state": m["state"],
                                  "app": "cursor" if m["app_id"] else None,
                                  "categories": ["health"] if m["category_ids"] else []}) + "\n").encode())
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        if document:
            zf.writestr("memories.json", json.dumps(doc, indent=2))
        if lines:
            zf.writestr("memories.jsonl.gz", blob.getvalue())
    return path


@pytest.mark.parametrize("members", ["both", "lines only"])
def test_openmemorys_export_zip_is_read(db_path, tmp_path, capsys, members):
    path = openmemory_zip(tmp_path, document=members == "both")
    assert detect(path) == "mem0"
    assert main(["--db", db_path, "import", str(path)]) == 0
    out = capsys.readouterr().out
    with MemoryStore(db_path) as store:
        mems = {m.text: m for m in store.list()}
    if members == "both":
        assert sorted(mems) == ["Is allergic to peanuts"]
        assert "1 deleted memory" in out and "1 paused memory" in out
        peanuts = mems["Is allergic to peanuts"]
        assert peanuts.scope == "user:mara" and set(peanuts.tags) == {"health", "app:cursor"}
        assert peanuts.created_at == 1769940000.0
    else:  # the lines carry no user and no state filter: every line, in the import's scope
        assert "Is allergic to peanuts" in mems and mems["Is allergic to peanuts"].scope == "global"


def test_a_zip_that_unpacks_past_its_header_or_lacks_the_export_is_refused(db_path, tmp_path, capsys):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("memories.json", json.dumps({"user": {"user_id": "x"}, "memories": []}) + " " * 100000)
    data = bytearray(bomb.read_bytes())
    # Shrink the unpacked size both headers declare: the member inflates past it.
    for sig, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(sig)
        data[at + offset:at + offset + 4] = (10).to_bytes(4, "little")
    bomb.write_bytes(bytes(data))
    assert main(["--db", db_path, "import", "--format", "mem0", str(bomb)]) == 1
    err = capsys.readouterr().err
    assert "nothing was imported" in err and ("unpacks to more" in err or "zip" in err)
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("notes.txt", "hello")
    assert detect(other) is None
    assert main(["--db", db_path, "import", "--format", "mem0", str(other)]) == 1
    assert "without OpenMemory's memories.json" in capsys.readouterr().err


def test_basic_memory_aliases_become_the_entitys_and_dropped_fields_are_listed(store, tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "mara.md").write_text("---\ntitle: Mara Lindqvist\ntype: person\naliases:\n  - Mara\n  - M. L.\n"
                                  "status: active\nsource: interview\n---\n\n- [food] Is allergic to peanuts\n",
                                  encoding="utf-8")
    (root / "zig.md").write_text("---\ntitle: Zig\nstatus: draft\n---\n\n- [lang] A systems language\n",
                                 encoding="utf-8")
    result = import_file(store, root, now=NOW)
    mara = next(e for e in store.entities() if e.name == "Mara Lindqvist")
    assert {"Mara", "M. L."} <= set(mara.aliases)
    left = {x.what: x.why for x in result.left_out if x.where == "frontmatter"}
    assert left == {"field 'source' of 1 note": "no place for it here: the note keeps it",
                    "field 'status' of 2 notes": "no place for it here: the note keeps it"}
    assert store.recall("M. L. peanuts", scope="global")[0].text == "Is allergic to peanuts"
