"""Importing what other memory tools keep: each format on a file the real tool wrote (the
MCP memory server, driven here by the MCP SDK's client) or, where the tool cannot run
here (Letta, mem0), on a file built from its published schema (tests/data/*/README.md)."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from mnemoscope.cli import main
from mnemoscope.store import ImportRefused, MemoryStore, StoreError
from mnemoscope.store.importers import detect, export_mcp_memory, import_file, plan_import

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
MCP_FILE = os.path.join(DATA, "mcp_memory", "memory.jsonl")
LETTA_FILE = os.path.join(DATA, "letta", "agent.af")
LETTA_V1 = os.path.join(DATA, "letta", "agent_v1.af")
MEM0_FILE = os.path.join(DATA, "mem0", "memories.json")
NOW = "2026-06-01T12:00:00Z"


def read(path) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def snapshot(path) -> list[str]:
    """Every row of every table, read through a separate connection: any committed write shows."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@pytest.fixture
def empty_db(tmp_path):
    path = str(tmp_path / "memory.db")
    MemoryStore(path).close()
    return path


def relations(store):
    return sorted(store.conn.execute(
        "SELECT a.name, x.edge, b.name FROM edges x JOIN entities a ON a.id = x.src JOIN entities b ON b.id = x.dst "
        "WHERE x.edge LIKE 'relation:%'").fetchall())


# -- the MCP memory server (a file it wrote) ----------------------------------------------------
def test_mcp_memory_file_becomes_entities_memories_and_relations(store):
    result = import_file(store, MCP_FILE, now=NOW)
    assert (result.memories_new, result.entities_new, result.relations_new) == (6, 5, 4)
    kinds = {e.name: e.kind for e in store.entities()}
    assert kinds == {"Mara Lindqvist": "person", "Parser Team": "group", "Zig": "other", "Göteborg office": "place",
                     "Quarterly review": "other"}
    mara = [m for m in store.list() if "Mara Lindqvist" in m.entities]
    assert sorted(m.text for m in mara) == ["Drinks oat-milk flat whites", "Is allergic to peanuts",
                                            "Leads the parser team"]
    assert all(m.kind == "fact" and m.context["mcp_memory"]["entityType"] == "person" for m in mara)
    assert relations(store) == [("Mara Lindqvist", "relation:leads", "Parser Team"),
                                ("Mara Lindqvist", "relation:works_at", "Göteborg office"),
                                ("Parser Team", "relation:presents_at", "Quarterly review"),
                                ("Parser Team", "relation:uses", "Zig")]
    # the type of an entity without observations is kept beside its kind, for the way out
    assert result.left_out == []
    assert '"name":"Quarterly review","entityType":"event"' in export_mcp_memory(store)
    assert store.recall("peanuts", scope="global")[0].text == "Is allergic to peanuts"


def test_the_memory_takes_new_memories_after_an_import(store):
    """An import numbers its memories itself (many rows in one statement); on PostgreSQL
    the server's numbering went on from where it was, so the next remember took a number
    the import had used and failed ("duplicate key")."""
    store.remember("Written before the import.", now=NOW)
    import_file(store, MCP_FILE, now=NOW)
    after = store.remember("Written after the import.", now=NOW).memory.id
    import_file(store, MEM0_FILE, now=NOW)
    last = store.remember("And after the second one.", now=NOW).memory.id
    assert store.get(after).text == "Written after the import." and store.get(last).text.startswith("And after")
    rowids = [r[0] for r in store.conn.execute("SELECT rowid FROM memories ORDER BY rowid").fetchall()]
    assert len(rowids) == len(set(rowids)) == store.count()


def test_importing_the_same_file_twice_adds_nothing(store):
    import_file(store, MCP_FILE, now=NOW)
    again = import_file(store, MCP_FILE, now=NOW)
    assert (again.memories_new, again.entities_new, again.relations_new) == (0, 0, 0)
    assert (again.memories_existing, again.entities_existing, again.relations_existing) == (6, 5, 4)
    assert store.count() == 6


def test_export_writes_the_servers_format_and_the_real_server_reads_it_back(store, tmp_path):
    from support.mcp_memory_server import INSTALL, result, server_script, session

    import_file(store, MCP_FILE, now=NOW)
    out = tmp_path / "memory.jsonl"
    export_mcp_memory(store, out)
    original = [json.loads(line) for line in read(MCP_FILE).splitlines()]
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    types = {e["name"]: e["entityType"] for e in exported if e["type"] == "entity"}
    assert types["Zig"] == "programming_language" and types["Parser Team"] == "team"
    # every entity (the observation-less one's type too), its observations and every relation come back
    assert types["Quarterly review"] == "event"
    key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
    expected = original
    assert sorted(map(key, exported)) == sorted(map(key, expected))
    if server_script() is None:
        pytest.skip(f"the MCP memory server is not installed ({INSTALL}); the file shape was checked above")

    async def body(client):
        return result(await client.call_tool("read_graph", {}))

    graph = session(str(out), body)
    assert {e["name"]: sorted(e["observations"]) for e in graph["entities"]} == {
        e["name"]: sorted(e["observations"]) for e in expected if e["type"] == "entity"}
    assert sorted(map(key, graph["relations"])) == sorted(
        key({k: v for k, v in r.items() if k != "type"}) for r in expected if r["type"] == "relation")


# -- Letta and mem0 (files built from their published schemas; see tests/data/*/README.md) --------
def test_letta_agent_file_from_its_schema(store):
    result = import_file(store, LETTA_FILE, now=NOW)
    memories = {m.text: m for m in store.list()}
    persona = memories["I am a patient support agent for the parser team."]
    assert persona.pinned and persona.topic == "persona" and "core_memory" in persona.tags
    assert persona.entities == ["support-bot"]
    passage = memories["Mara's team moved the new parser from C++ to Zig in February."]
    assert not passage.pinned and "archival" in passage.tags and "parser" in passage.tags
    assert passage.created_at == 1771596000.0  # 2026-02-20T14:00:00Z, the passage's own time
    assert persona.kind == "skill" and persona.who == "support-bot" and persona.scope == "agent:support-bot"
    assert result.memories_new == 6  # two blocks, two passages, two messages
    said = sorted((m.context["letta"]["role"], m.text) for m in memories.values() if "message" in m.tags)
    assert said == [("assistant", "Hello Mara!"), ("user", "Hi, I'm Mara.")]
    left = {x.where: x for x in result.left_out}
    assert left["block block-2"].what == "block 'scratchpad'"  # empty
    assert "1 tools" in left["tools"].what and "agents[0].system" in left


def test_letta_first_format_keeps_block_times(store):
    import_file(store, LETTA_V1, now=NOW)
    human = next(m for m in store.list() if m.topic == "human")
    assert human.text == "Ana prefers green tea." and human.updated_at == 1743683400.0  # 2025-04-03T12:30Z


def test_letta_block_longer_than_a_memory_is_split_and_reported(store, tmp_path):
    doc = json.loads(read(LETTA_FILE))
    doc["blocks"][1]["value"] = "\n".join(f"fact number {i} about Mara" for i in range(400))
    path = tmp_path / "big.af"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = import_file(store, path, now=NOW)
    parts = [m for m in store.list() if m.topic == "human"]
    assert len(parts) > 1 and all(len(m.text) <= store.config.limits.max_text_chars for m in parts)
    assert "\n".join(m.text for m in sorted(parts, key=lambda m: m.context["letta"]["part"])) == doc["blocks"][1]["value"]
    assert result.placed["block longer than a memory -> split at line breaks"] == len(parts) - 1


def test_mem0_export_from_its_schema_scopes_by_user_agent_and_run(store):
    result = import_file(store, MEM0_FILE, now=NOW)
    by_text = {m.text: m for m in store.list()}
    nuts = by_text["Is a vegetarian and allergic to nuts"]
    assert nuts.scope == "user:alex" and {"food", "health"} <= set(nuts.tags)
    assert nuts.created_at == 1768410764.12  # 09:12:44.120 at -08:00
    basketball = by_text["Loves basketball and gaming"]
    assert basketball.scope == "user:alex" and {"agent:coach", "run:session-7"} <= set(basketball.tags)
    assert by_text["Answers should cite the style guide"].scope == "agent:coach"
    assert by_text["Prefers meetings after 10am"].scope == "run:session-9"
    assert nuts.context["mem0"]["id"] == "0b6f4a8e-6c3d-4b8e-9f1a-2d5c7e9a1b3c"
    assert [x.where for x in result.left_out] == ["relations"]


# -- detection, dry runs, refusals --------------------------------------------------------------
def test_formats_are_recognised_and_a_wrong_one_says_what_the_file_looks_like(store):
    assert detect(MCP_FILE) == "mcp-memory" and detect(LETTA_FILE) == "letta" and detect(MEM0_FILE) == "mem0"
    assert detect(LETTA_V1) == "letta"
    with pytest.raises(StoreError, match="looks like a mem0 or OpenMemory export; import it with --format mem0"):
        plan_import(store, MEM0_FILE, "mcp-memory")
    with pytest.raises(StoreError, match="looks like an MCP memory server file"):
        plan_import(store, MCP_FILE, "letta")


def test_dry_run_reports_and_writes_nothing(empty_db):
    store = MemoryStore(empty_db)
    before = snapshot(empty_db)
    result = import_file(store, MCP_FILE, now=NOW, dry_run=True)
    assert (result.memories_new, result.entities_new) == (6, 5) and result.dry_run
    assert snapshot(empty_db) == before
    store.add_entity("planted")  # the check sees a write
    assert snapshot(empty_db) != before


HOSTILE = {
    "deep nesting": ('{"type":"entity","name":"A","entityType":"x","observations":' + "[" * 5000 + "]" * 5000 + "}",
                     "line 2: JSON nested deeper than"),
    "a huge line": ('{"type":"entity","name":"A","entityType":"x","observations":["' + "a" * 1_100_000 + '"]}',
                    "line 2: is 1,100,0"),
    "a direction mark in a name": ('{"type":"entity","name":"invoice\\u202efdp.exe","entityType":"x",'
                                   '"observations":["y"]}', "line 2: name: 'invoice\\u202efdp.exe' contains the "
                                   "control, line-separator or text-direction character U+202E"),
    "a line separator in a relation": ('{"type":"relation","from":"A","to":"x\\u2028y","relationType":"r"}',
                                       "line 2: to: 'x\\u2028y' contains the control, line-separator or "
                                       "text-direction character U+2028"),
    "a non-string observation": ('{"type":"entity","name":"B","entityType":"x","observations":[{"a":1}]}',
                                 "line 2: observations[0]: must be a string"),
    "a truncated line": ('{"type":"entity","name":"B","entityType":"x","observ', "line 2: not valid JSON"),
    "an unknown line type": ('{"type":"note","name":"B"}', "line 2: type: must be 'entity' or 'relation'"),
    "a text over the limit": ('{"type":"entity","name":"B","entityType":"x","observations":["' + "b" * 5000 + '"]}',
                              "line 2: observations[0]: is 5000 characters"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_mcp_file_is_refused_with_its_line_and_writes_nothing(empty_db, tmp_path, case):
    bad, message = HOSTILE[case]
    path = tmp_path / "memory.jsonl"
    path.write_text('{"type":"entity","name":"Good","entityType":"person","observations":["fine"]}\n' + bad + "\n",
                    encoding="utf-8")
    store = MemoryStore(empty_db)
    before = snapshot(empty_db)
    with pytest.raises(ImportRefused) as caught:
        import_file(store, path, "mcp-memory", now=NOW)
    assert message in str(caught.value)
    assert snapshot(empty_db) == before


def test_invalid_utf8_is_refused_with_its_line(empty_db, tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_bytes(b'{"type":"entity","name":"A","entityType":"x","observations":[]}\n'
                     b'{"type":"entity","name":"B\xff","entityType":"x","observations":[]}\n')
    store = MemoryStore(empty_db)
    before = snapshot(empty_db)
    with pytest.raises(ImportRefused, match=r"line 2: is not UTF-8 text \(byte 27 of the line: 0xff"):
        import_file(store, path, "mcp-memory", now=NOW)
    assert snapshot(empty_db) == before


def test_every_bad_line_is_listed_not_just_the_first(store, tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join([HOSTILE["a direction mark in a name"][0], '{"type":"entity","name":"ok","observations":["x"]}',
                               HOSTILE["a truncated line"][0]]), encoding="utf-8")
    with pytest.raises(ImportRefused) as caught:
        import_file(store, path, "mcp-memory", now=NOW)
    assert [n for n, _ in caught.value.errors] == [1, 3] and store.count() == 0
    assert "2 bad record(s), so nothing was imported; fix them in the file" in str(caught.value)
    assert "partial" not in str(caught.value)  # other tools' files import whole or not at all


# -- the command line -----------------------------------------------------------------------------
def test_cli_import_dry_run_then_import_then_export(empty_db, tmp_path, capsys):
    before = snapshot(empty_db)
    assert main(["--db", empty_db, "import", MCP_FILE, "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] and report["memories_new"] == 6 and report["left_out"] == []
    assert snapshot(empty_db) == before
    assert main(["--db", empty_db, "import", MCP_FILE]) == 0
    out = capsys.readouterr().out
    assert out.startswith("imported 6 memories, 5 entities, 4 relations from mcp-memory")
    assert "left out:" not in out
    assert main(["--db", empty_db, "export", "--format", "mcp-memory", "--out", str(tmp_path / "out.jsonl")]) == 0
    assert len((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()) == 9
    with MemoryStore(empty_db) as store:
        from mnemoscope.store.agents import activity

        entry = activity.recent(store, 1)[0]
    assert entry.tool == "import" and entry.args["format"] == "mcp-memory" and len(entry.memory_ids) == 6


def test_cli_wrong_format_fails_with_the_format_it_looks_like(empty_db, capsys):
    assert main(["--db", empty_db, "import", MEM0_FILE, "--format", "letta"]) == 1
    assert "it looks like a mem0 or OpenMemory export; import it with --format mem0" in capsys.readouterr().err
    # Named as Mnemoscope's own JSONL, another tool's file is not read as bad JSONL lines.
    before = rows(empty_db)
    for wrong, looks in ((MCP_FILE, "an MCP memory server file (memory.jsonl); import it with --format mcp-memory"),
                         (LETTA_FILE, "a Letta agent file (.af); import it with --format letta")):
        for dry in ([], ["--dry-run"]):
            assert main(["--db", empty_db, "import", wrong, "--format", "jsonl", *dry]) == 1
            assert f"is not a Mnemoscope JSONL export: it looks like {looks}" in capsys.readouterr().err
    assert rows(empty_db) == before


def test_cli_dry_run_into_a_database_not_made_yet_creates_nothing(tmp_path, capsys):
    path = tmp_path / "new.db"
    assert main(["--db", str(path), "import", MCP_FILE, "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("would import 6 memories, 5 entities, 4 relations from mcp-memory")
    assert not path.exists()
    assert main(["--db", str(path), "import", MCP_FILE]) == 0 and path.exists()  # the real one makes it


# -- basic-memory (notes its own markdown writer wrote; tests/data/basic_memory/make_fixture.py) ---
BM_PROJECT = os.path.join(DATA, "basic_memory", "project")


def test_basic_memory_notes_become_entities_observations_and_relations(store):
    result = import_file(store, BM_PROJECT, now=NOW)
    assert detect(BM_PROJECT) == "basic-memory"
    assert (result.memories_new, result.entities_new, result.relations_new) == (6, 5, 5)
    assert {e.name: e.kind for e in store.entities()} == {
        "Coffee Brewing Methods": "topic", "Coffee Bean Origins": "topic", "Mara Lindqvist": "person",
        "Gooseneck Kettle": "other", "Chocolate Desserts": "other"}
    tip = next(m for m in store.list() if m.topic == "tip")
    assert tip.text == "Water at 96 °C extracts best" and tip.entities == ["Coffee Brewing Methods"]
    assert set(tip.tags) == {"coffee", "brewing"}  # the note's frontmatter tags
    assert tip.context["basic_memory"]["context"] == "measured with a probe"
    assert ("Coffee Brewing Methods", "relation:links_to", "Gooseneck Kettle") in relations(store)
    assert ("Mara Lindqvist", "relation:drinks", "Coffee Brewing Methods") in relations(store)
    left = [(x.where, x.what) for x in result.left_out]
    assert ("coffee/Coffee Brewing Methods.md",
            "1 line(s) of text that are not observations or relations (lines 12)") in left
    assert ("coffee/Coffee Brewing Methods.md:17", "context 'same tasting' of relation relates_to") in left


def test_basic_memory_tags_dates_and_bad_notes(store, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "tea.md").write_text(
        "---\ntitle: Tea\ntype: note\ncreated: 2026-01-05T10:00:00Z\n---\n"
        "- [taste] Sencha is grassy #green #japan (first flush)\n- [taste] #only-tags\n", encoding="utf-8")
    (tmp_path / "notes" / "image.png").write_bytes(b"\x89PNG")
    result = import_file(store, tmp_path / "notes", now=NOW)
    sencha = store.list()[0]
    assert sencha.text == "Sencha is grassy" and set(sencha.tags) == {"green", "japan"}
    assert sencha.created_at == 1767607200.001 and sencha.context["basic_memory"]["context"] == "first flush"
    assert {x.what for x in result.left_out} == {"an observation with only tags", "file"}
    (tmp_path / "notes" / "evil.md").write_text("---\ntitle: invoice\u202efdp.exe\n---\n- [x] y\n", encoding="utf-8")
    (tmp_path / "notes" / "bad.md").write_bytes(b"- [x] caf\xe9\n")
    with pytest.raises(ImportRefused) as caught:
        import_file(store, tmp_path / "notes", now=NOW)
    assert [n for n, _ in caught.value.errors] == ["bad.md:1", "evil.md:1"]
    assert "text-direction character U+202E" in str(caught.value) and "is not UTF-8" in str(caught.value)


def test_undo_takes_back_memories_relations_and_the_entities_it_created(empty_db):
    from mnemoscope.store.importers import undo

    store = MemoryStore(empty_db)
    store.add_entity("Zig", kind="tool")  # there before: stays
    before = rows(empty_db)
    result = import_file(store, MCP_FILE, now=NOW)
    assert store.count() == 6 and len(result.entity_ids) == 4
    undo(store, result)
    assert rows(empty_db) == before


def rows(path) -> dict[str, list]:
    """What a person can see: memories, their state, entities, edges, recalls."""
    conn = sqlite3.connect(path)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
                for t in ("memories", "memory_state", "entities", "edges", "recall_events")}
    finally:
        conn.close()


def test_cli_dry_run_of_a_jsonl_export(empty_db, tmp_path, capsys):
    with MemoryStore(empty_db) as store:
        store.remember("Mara likes tea", now=NOW)
        store.export_jsonl(str(tmp_path / "export.jsonl"))
    (tmp_path / "more.jsonl").write_text((tmp_path / "export.jsonl").read_text() + json.dumps(
        {"id": "new-1", "text": "Bo likes coffee"}) + "\n", encoding="utf-8")
    before = snapshot(empty_db)
    assert main(["--db", empty_db, "import", str(tmp_path / "more.jsonl"), "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["memories_new"], report["memories_existing"]) == (1, 1) and snapshot(empty_db) == before


def test_names_differing_only_in_case_are_one_entity_and_the_report_says_so(store, tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_text('{"type":"entity","name":"Ana","entityType":"person","observations":["likes tea"]}\n'
                    '{"type":"entity","name":"ana","entityType":"person","observations":["likes cake"]}\n',
                    encoding="utf-8")
    result = import_file(store, path, now=NOW)
    assert [e.name for e in store.entities()] == ["Ana"] and store.count() == 2
    assert all(m.entities == ["Ana"] for m in store.list())
    assert [(x.where, x.what) for x in result.left_out] == [("line 2", "entity 'ana' as an entity of its own")]


def test_cli_shows_progress_on_a_big_file(empty_db, tmp_path, capsys):
    lines = [json.dumps({"type": "entity", "name": f"E{i}", "entityType": "person", "observations": [f"fact {i}"]})
             for i in range(700)]
    lines += [json.dumps({"type": "relation", "from": f"E{i}", "to": f"E{(i + 1) % 700}", "relationType": "knows"})
              for i in range(700)]
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert main(["--db", empty_db, "import", str(path)]) == 0
    captured = capsys.readouterr()
    # 700 memories embedded, then 2,100 records written: one count from the first to the last.
    assert "importing: 9% (256 of 2,800)" in captured.err and "importing: 100% (2,800 of 2,800)" in captured.err
    assert captured.out.startswith("imported 700 memories, 700 entities, 700 relations")
    with MemoryStore(empty_db) as store:  # every memory found by meaning at once, as after a JSONL import
        status = store.vector_status()
        assert (status.with_vector, status.memories, status.stored_by) == (700, 700, store.embedder_id())


def test_an_entity_known_by_an_alias_is_reused(store):
    known = store.add_entity("Parser Group", kind="group", aliases=["Parser Team"])
    result = import_file(store, MCP_FILE, now=NOW)
    assert (result.entities_new, result.entities_existing) == (4, 1)
    moved = next(m for m in store.list() if m.text == "Moved the new parser from C++ to Zig")
    assert moved.entities == ["Parser Group"] and known.id not in result.entity_ids
    assert ("Mara Lindqvist", "relation:leads", "Parser Group") in relations(store)


def test_basic_memory_imports_without_pyyaml_as_in_the_frozen_app(empty_db, monkeypatch, capsys):
    # The desktop bundle excludes PyYAML (packaging/mnemoscope.spec); the notes basic-memory
    # wrote must import all the same, frontmatter tags and all, from the command line.
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)  # "import yaml" raises ImportError now
    assert main(["--db", empty_db, "import", BM_PROJECT, "--format", "basic-memory"]) == 0
    assert "imported 6 memories, 5 entities, 5 relations" in capsys.readouterr().out
    with MemoryStore(empty_db) as store:
        tip = next(m for m in store.list() if m.topic == "tip")
        assert set(tip.tags) == {"coffee", "brewing"} and tip.entities == ["Coffee Brewing Methods"]


def test_frontmatter_reads_what_yaml_reads_in_basic_memory_notes(tmp_path):
    import yaml
    from mnemoscope.store.importers import frontmatter

    blocks = []
    for root, _, files in os.walk(BM_PROJECT):
        for f in files:
            blocks.append(read(os.path.join(root, f)).split("---\n")[1])
    blocks += ["title: 'It''s quoted'\ntags: [green, \"japan, tea\"]  # a comment\ncreated: 2026-01-05\n",
               "title: 2026\naliases:\n  - Mara L\n"]
    for block in blocks:
        expected = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in yaml.safe_load(block).items()}
        expected = {k: ([str(x) for x in v] if isinstance(v, list) else str(v)) for k, v in expected.items()}
        assert frontmatter.parse(block) == expected
    with pytest.raises(Exception, match="line 3: 'just words' is not 'key: value'"):
        frontmatter.parse("title: x\njust words\n")


BROKEN_DOCUMENTS = {
    "a Letta file nested too deep": ("agent.af", b'{"agents": [{"name": "a", "core_memory": ' + b"[" * 5000 + b"]" * 5000
                                     + b"}]}", "letta", "line 1: JSON nested deeper than 32 levels"),
    "a truncated Letta file": ("agent.af", b'{\n  "agents": [],\n  "blocks": [\n    {"label": "human", "val',
                               "letta", "line 1: not valid JSON"),
    "a mem0 export that is not UTF-8": ("mem0.json", b'{"results": [\n  {"id": "1", "memory": "caf\xe9",'
                                        b' "user_id": "u"}\n]}', "mem0", "line 2: is not UTF-8 text (byte 29 of the line: 0xe9"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_DOCUMENTS))
def test_cli_a_broken_document_is_refused_by_its_own_format_and_writes_nothing(empty_db, tmp_path, capsys, case):
    # Recognised by the keys it starts with, not sent to the JSONL reader (which called it
    # "bad JSONL lines" and offered a partial import of another tool's file).
    name, data, fmt, message = BROKEN_DOCUMENTS[case]
    path = tmp_path / name
    path.write_bytes(data)
    with MemoryStore(empty_db) as store:
        store.remember("Mara likes tea", now=NOW)
    before = rows(empty_db)  # the memory; the activity log records the refused call
    assert detect(path) == fmt
    assert main(["--db", empty_db, "import", str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and "nothing was imported" in err and "partial" not in err
    assert rows(empty_db) == before


def test_keyword_index_after_an_import_holds_the_imported_and_later_memories(empty_db):
    # An import fills the full-text index in bulk, its insert trigger set aside meanwhile:
    # the index must match the rows, and a memory written afterwards must still be found.
    with MemoryStore(empty_db) as store:
        import_file(store, MCP_FILE, now=NOW)
        store.conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
        assert store.recall("peanuts", scope="global")[0].text == "Is allergic to peanuts"
        store.remember("Keeps a sourdough starter called Gus", scope="global")
        assert store.recall("sourdough", scope="global")[0].text == "Keeps a sourdough starter called Gus"
        assert store.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'memories_ai'").fetchone()[0] == 1


# -- what an import stores does not change when the import gets faster ----------------------------
GOLDEN = os.path.join(DATA, "import_golden")


def _without_origin(line: str) -> str:
    """An export's line without the origin a memory's context holds since imports sync
    (store/importers/sync.py): a path of this machine's, and the only thing added since."""
    rec = json.loads(line)
    assert rec["context"].pop("origin")["source"]
    return json.dumps(rec, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def test_import_stores_what_it_always_stored(empty_db):
    """The fixture, then a generated file (tests/perf/import_bench.py's generator, 40 entities)
    into two scopes: both exports equal the ones the import wrote before it was batched
    (tests/data/import_golden, made with main at cece159), but for each memory's origin."""
    with MemoryStore(empty_db) as store:
        import_file(store, MCP_FILE, now=NOW)
        import_file(store, os.path.join(GOLDEN, "memory.jsonl"), now=NOW)
        import_file(store, os.path.join(GOLDEN, "memory.jsonl"), now=NOW, scope="work")
        # (The export's entity and relation lines, which came later, are the graph lines' test's.)
        exported = store.export_jsonl().splitlines(keepends=True)
        memories = "".join(_without_origin(line) for line in exported
                           if not line.startswith(('{"entity":', '{"relation":')))
        assert memories == read(os.path.join(GOLDEN, "export.jsonl"))
        # The MCP export now writes each memory once (the golden file folded the second
        # scope's copies into the first's, leaving them out): folded again, it is the same.
        lines = [json.loads(line) for line in export_mcp_memory(store).splitlines()]
        assert sum(len(e.get("observations", [])) for e in lines) == store.count()
        for e in lines:
            if "observations" in e:
                e["observations"] = list(dict.fromkeys(e["observations"]))
        golden = [json.loads(line) for line in read(os.path.join(GOLDEN, "export_mcp.jsonl")).splitlines()]
        for e in golden:  # an entity without observations keeps its type since it is kept beside its kind
            if e.get("name") == "Quarterly review":
                e["entityType"] = "event"
        assert lines == golden
