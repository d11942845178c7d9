"""Importing the same source again brings its memories in step (#35.3): what the source
changed is updated in place (same memory, its recalls and links kept), what it no longer
has is retired (forgotten, restorable), what it did not change is not written at all, and
a person's edit of such a memory stays. ``--dry-run`` lists the changes first; the window's
undo takes a sync back whole. Through the real command line, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from mnemoscope.cli import main
from mnemoscope.store import MemoryStore
from mnemoscope.store.importers import apply, import_file, plan_import, undo

NOTE = """---
title: Mara Lindqvist
type: person
---

# Mara Lindqvist

## Observations
- [food] Is allergic to peanuts
- [drink] Drinks oat-milk flat whites
- [work] Leads the parser team
"""


def folder(tmp_path, **notes):
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    for name, text in notes.items():
        path = root / f"{name}.md"
        if text is None:
            path.unlink()
        else:
            path.write_text(text, encoding="utf-8")
    return root


def memories(db):
    with MemoryStore(db) as store:
        return {m.text: m for m in store.list()}


def test_a_basic_memory_folder_imported_again_is_brought_in_step(db_path, tmp_path, capsys):
    root = folder(tmp_path, mara=NOTE, zig="---\ntitle: Zig\n---\n\n- [lang] A systems language\n")
    assert main(["--db", db_path, "import", str(root)]) == 0
    first = memories(db_path)
    assert set(first) == {"Is allergic to peanuts", "Drinks oat-milk flat whites", "Leads the parser team",
                          "A systems language"}
    with MemoryStore(db_path) as store:
        store.recall("flat whites", now="2026-06-02T00:00:00Z", reinforce=True)  # used since: kept by the update
        recalled = store.get(first["Drinks oat-milk flat whites"].id).recall_count
    capsys.readouterr()
    # Edited with basic-memory's edit-note: one observation changed where it stands, one
    # removed, one added; the Zig note deleted.
    folder(tmp_path, mara=NOTE.replace("Drinks oat-milk flat whites", "Drinks black coffee now")
           .replace("- [work] Leads the parser team\n", "- [work] Moved to the compiler team\n- [sport] Climbs\n"),
           zig=None)
    assert main(["--db", db_path, "import", str(root), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would update 2 and would retire 1 memories" in out and "would import 1 memories" in out
    assert f"update {first['Drinks oat-milk flat whites'].id}: 'Drinks oat-milk flat whites' -> " \
           "'Drinks black coffee now'" in out
    assert f"retire {first['A systems language'].id}: 'A systems language'" in out
    assert set(memories(db_path)) == set(first)  # the dry run wrote nothing
    assert main(["--db", db_path, "import", str(root), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["memories_new"], report["memories_updated"], report["memories_retired"],
            report["memories_unchanged"]) == (1, 2, 1, 1)
    now = memories(db_path)
    assert set(now) == {"Is allergic to peanuts", "Drinks black coffee now", "Moved to the compiler team", "Climbs"}
    coffee = now["Drinks black coffee now"]
    assert coffee.id == first["Drinks oat-milk flat whites"].id and coffee.recall_count == recalled
    assert coffee.entities == ["Mara Lindqvist"]
    with MemoryStore(db_path) as store:
        hit = store.recall("flat white oat milk", scope="global", k=5)
        assert "Drinks oat-milk flat whites" not in [h.text for h in hit]  # the stale one is gone
    # The retired memory comes back with restore.
    assert main(["--db", db_path, "restore", first["A systems language"].id]) == 0
    assert "A systems language" in memories(db_path)


def test_an_unchanged_source_writes_nothing_and_a_persons_edit_stays(db_path, tmp_path, capsys):
    root = folder(tmp_path, mara=NOTE)
    assert main(["--db", db_path, "import", str(root)]) == 0
    peanuts = memories(db_path)["Is allergic to peanuts"]
    assert main(["--db", db_path, "update", peanuts.id, "--sensitivity", "high", "--importance", "1"]) == 0
    with MemoryStore(db_path) as store:
        before = sorted((m.id, m.updated_at, m.sensitivity, m.importance) for m in store.list())
    capsys.readouterr()
    assert main(["--db", db_path, "import", str(root)]) == 0
    assert "imported 0 memories" in capsys.readouterr().out
    with MemoryStore(db_path) as store:
        assert sorted((m.id, m.updated_at, m.sensitivity, m.importance) for m in store.list()) == before
    # The source changes the observation: its text follows; the person's sensitivity and
    # importance stay.
    folder(tmp_path, mara=NOTE.replace("Is allergic to peanuts", "Is allergic to peanuts and cashews"))
    assert main(["--db", db_path, "import", str(root)]) == 0
    after = memories(db_path)["Is allergic to peanuts and cashews"]
    assert (after.id, after.sensitivity, after.importance) == (peanuts.id, "high", 1.0)


def test_an_mcp_memory_file_a_letta_file_and_a_mem0_export_imported_again(db_path, tmp_path):
    mcp = tmp_path / "memory.jsonl"

    def write_mcp(observations):
        mcp.write_text(json.dumps({"type": "entity", "name": "Mara", "entityType": "person",
                                   "observations": observations}), encoding="utf-8")

    write_mcp(["Climbs", "Likes tea", "Bikes"])
    letta = tmp_path / "agent.af"

    def write_letta(human):
        letta.write_text(json.dumps({"agents": [{"name": "bot", "block_ids": ["b1"]}],
                                     "blocks": [{"id": "b1", "label": "human", "value": human}]}), encoding="utf-8")

    write_letta("Name: Mara")
    mem0 = tmp_path / "mem0.json"

    def write_mem0(text):
        mem0.write_text(json.dumps({"results": [{"id": "m1", "memory": text, "user_id": "mara"}]}), encoding="utf-8")

    write_mem0("Drinks tea")
    with MemoryStore(db_path) as store:
        for path in (mcp, letta, mem0):
            import_file(store, path)
        ids = {m.text: m.id for m in store.list()}
        # The memory server deleted an observation and added one (at the end); the block and
        # the mem0 item were edited.
        write_mcp(["Climbs", "Bikes", "Swims"])
        write_letta("Name: Mara Lindqvist")
        write_mem0("Drinks green tea")
        results = [import_file(store, path) for path in (mcp, letta, mem0)]
        assert [(r.memories_new, r.memories_updated, r.memories_retired) for r in results] == [
            (1, 0, 1), (0, 1, 0), (0, 1, 0)]
        now = {m.text: m.id for m in store.list()}
    assert sorted(now) == ["Bikes", "Climbs", "Drinks green tea", "Name: Mara Lindqvist", "Swims"]
    assert now["Name: Mara Lindqvist"] == ids["Name: Mara"] and now["Drinks green tea"] == ids["Drinks tea"]
    assert now["Climbs"] == ids["Climbs"] and now["Bikes"] == ids["Bikes"]


def test_another_scope_is_another_source_and_a_partial_import_retires_nothing(db_path, tmp_path):
    root = folder(tmp_path, mara=NOTE)
    with MemoryStore(db_path) as store:
        import_file(store, root)
        import_file(store, root, scope="work")  # a second source: the same notes in another scope
        assert len(store.list()) == 6
        folder(tmp_path, mara=NOTE.replace("- [work] Leads the parser team\n", ""), broken="---\ntitle: Broken\n")
        result = import_file(store, root, partial=True)
        assert (result.bad, result.memories_retired) == (1, 0)  # it could not read all of the source
        folder(tmp_path, broken=None)
        result = import_file(store, root, scope="work")
        assert result.memories_retired == 1
        left = sorted((m.scope, m.text) for m in store.list() if "parser" in m.text)
    assert left == [("global", "Leads the parser team")]


def test_undo_takes_a_sync_back_whole(db_path, tmp_path):
    root = folder(tmp_path, mara=NOTE)
    with MemoryStore(db_path) as store:
        import_file(store, root)
        before = sorted((m.id, m.text, tuple(m.entities)) for m in store.list())
        folder(tmp_path, mara=NOTE.replace("Drinks oat-milk flat whites", "Drinks tea")
               .replace("- [work] Leads the parser team\n", "- [sport] Climbs\n"))
        result = apply(store, plan_import(store, root))
        assert (result.memories_new, result.memories_updated, result.memories_retired) == (0, 2, 0)
        undo(store, result)
        assert sorted((m.id, m.text, tuple(m.entities)) for m in store.list()) == before


def test_the_origin_an_import_keeps_is_no_finding_of_the_privacy_check(db_path, tmp_path):
    """An origin's digests are hex: "0570074901196255" reads as a phone number. They are the
    import's bookkeeping, not what the source said: the check reads around them (and a
    context many memories share is scanned once again)."""
    from mnemoscope.store.curation import privacy

    ctx = {"mcp_memory": {"entity": "Mara"}, "origin": {"source": "/x", "key": "0570074901196255",
                                                         "slot": "0809810201392678", "digest": "0570074901196255"}}
    assert privacy.context_text(ctx) == "Mara"
    assert privacy.check_records([{"id": "a", "text": "Climbs", "context": ctx, "sensitivity": "low"}]) == []
    root = folder(tmp_path, mara=NOTE)
    with MemoryStore(db_path) as store:
        import_file(store, root)
        store.update(store.list()[0].id, context=ctx)
        assert privacy.check(store) == []
