"""A complete way out (#35.2): every export carries every memory, each once, and says what
its format could not carry; what Mnemoscope exports in a format it imports back equal.
Driven through the real command line, on SQLite and PostgreSQL; the files are written
whole or not at all, never through a link."""

from __future__ import annotations

import errno
import json
import os
import uuid

import pytest
from mnemoscope.cli import main
from mnemoscope.store import MemoryStore
from mnemoscope.store.importers import import_file

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
MCP_FILE = os.path.join(DATA, "mcp_memory", "memory.jsonl")
BM_PROJECT = os.path.join(DATA, "basic_memory", "project")
NOW = "2026-06-01T12:00:00Z"


@pytest.fixture
def second_db(request, backend, tmp_path):
    """Another empty database on the same engine: where an export is imported back."""
    if backend == "postgresql":
        return request.getfixturevalue("pg_server").new_database(f"second_{uuid.uuid4().hex[:12]}")
    return str(tmp_path / "second.db")


def rich(db: str) -> None:
    """A store with what people keep: imported graphs (relations, aliases, an entity no
    memory names), plain remembers in several scopes and sensitivities, a memory naming
    two entities, pinned, tags, recalls."""
    with MemoryStore(db) as store:
        import_file(store, MCP_FILE, now=NOW)
        import_file(store, BM_PROJECT, now=NOW, scope="group:coffee")
        store.remember("The VPN rotates monthly", scope="private:ana", sensitivity="high", kind="lesson",
                       tags=["ops"], importance=0.8, now=NOW)
        store.remember("Zig and the Parser Team ship on Fridays", entities=["Zig", "Parser Team"],
                       kind="event", pinned=True, who="Ana", topic="release", now=NOW)
        store.remember("TCP/IP notes live in the wiki", entities=["TCP/IP"], now=NOW)
        store.remember("A plain thought", now=NOW)
        store.recall("plain thought", now="2026-06-02T12:00:00Z")


def graph(db: str) -> dict:
    """Everything a store holds that an export is about, ids of entities aside."""
    with MemoryStore(db) as store:
        ents = {eid: (name, scope) for eid, name, scope in store.conn.execute("SELECT id, name, scope FROM entities")}
        return {
            "entities": sorted((n, k, s, a, c) for n, k, s, a, c in store.conn.execute(
                "SELECT name, kind, scope, aliases, created_at FROM entities")),
            "relations": sorted((ents[a], e, ents[b]) for a, e, b in store.conn.execute(
                "SELECT src, edge, dst FROM edges WHERE edge LIKE 'relation:%'")),
            "mentions": sorted((m, ents[e]) for m, e in store.conn.execute(
                "SELECT src, dst FROM edges WHERE edge = 'mentions_entity'")),
            "memories": sorted(json.dumps(m, sort_keys=True, default=str) for m in (
                {k: v for k, v in vars(x).items() if k not in ("strength", "layer", "ticked_at", "next_change_at")} for x in store.list())),
        }


def test_jsonl_export_carries_everything_and_imports_back_equal(db_path, second_db, tmp_path, capsys):
    rich(db_path)
    with MemoryStore(db_path) as store:
        assert store.conn.execute("SELECT count(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM edges x "
                                  "WHERE x.dst = e.id AND x.edge = 'mentions_entity')").fetchone()[0] >= 1
    out = tmp_path / "all.jsonl"
    assert main(["--db", db_path, "export", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "exported 16 of 16 memories" in err and "entities" in err and "relations" in err
    assert main(["--db", second_db, "import", str(out)]) == 0
    assert graph(second_db) == graph(db_path)
    again = tmp_path / "again.jsonl"
    assert main(["--db", second_db, "export", "--out", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()
    # importing it again adds nothing
    assert main(["--db", second_db, "import", str(out)]) == 0
    assert graph(second_db) == graph(db_path)


def test_mcp_memory_export_carries_every_memory_once_and_imports_back(db_path, second_db, tmp_path, capsys):
    rich(db_path)
    out = tmp_path / "memory.jsonl"
    assert main(["--db", db_path, "export", "--format", "mcp-memory", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    with MemoryStore(db_path) as store:
        texts = sorted(m.text for m in store.list())
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    observations = sorted(o for e in lines if e["type"] == "entity" for o in e["observations"])
    assert observations == texts  # every memory, each once
    assert report["written"] == report["memories"] == len(texts)
    lost = {x["what"]: x["count"] for x in report["not_carried"]}
    assert lost["links to a second entity"] == 2  # (who="Ana" names Ana too) and lost["sensitivity above low"] == 1
    assert lost["times (created, updated, recalled)"] == len(texts)
    scopes = {e["name"]: e["observations"] for e in lines if e.get("entityType") == "mnemoscope_scope"}
    assert scopes == {"private:ana": ["The VPN rotates monthly"], "global": ["A plain thought"]}
    # Imported back: the same memories under the same entities, the unnamed ones in their scopes ...
    assert main(["--db", second_db, "import", str(out)]) == 0
    with MemoryStore(second_db) as store:
        back = {m.text: m for m in store.list()}
    assert sorted(back) == texts
    assert back["The VPN rotates monthly"].scope == "private:ana" and back["The VPN rotates monthly"].entities == []
    assert back["TCP/IP notes live in the wiki"].entities == ["TCP/IP"]
    # ... and exported again, the same file (what the format carries, it carries both ways).
    again = tmp_path / "again.jsonl"
    assert main(["--db", second_db, "export", "--format", "mcp-memory", "--out", str(again)]) == 0
    assert sorted(again.read_text(encoding="utf-8").splitlines()) == sorted(out.read_text(encoding="utf-8").splitlines())


def test_the_real_memory_server_reads_the_complete_export(db_path, tmp_path):
    from support.mcp_memory_server import INSTALL, result, server_script, session

    if server_script() is None:
        pytest.skip(f"the MCP memory server is not installed ({INSTALL})")
    rich(db_path)
    out = tmp_path / "memory.jsonl"
    assert main(["--db", db_path, "export", "--format", "mcp-memory", "--out", str(out)]) == 0

    async def body(client):
        return result(await client.call_tool("read_graph", {}))

    graph_ = session(str(out), body)
    with MemoryStore(db_path) as store:
        texts = sorted(m.text for m in store.list())
    assert sorted(o for e in graph_["entities"] for o in e["observations"]) == texts


# -- writing the file: whole or not at all, never through a link -----------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "mcp-memory"])
def test_an_export_never_writes_through_a_link(db_path, tmp_path, fmt, capsys):
    rich(db_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    out.symlink_to(victim)
    assert main(["--db", db_path, "export", "--format", fmt, "--out", str(out)]) == 1
    assert "is a link; Mnemoscope never writes through a link" in capsys.readouterr().err
    assert victim.read_text(encoding="utf-8") == "keep me" and out.is_symlink()
    # a link planted where the old writer put its temporary file is not followed either
    out.unlink()
    (tmp_path / "out.jsonl.tmp").symlink_to(victim)
    assert main(["--db", db_path, "export", "--format", fmt, "--out", str(out)]) == 0
    assert victim.read_text(encoding="utf-8") == "keep me" and out.stat().st_size > 0


def test_a_full_disk_or_a_kill_mid_write_leaves_the_old_file(db_path, tmp_path, monkeypatch, capsys):
    rich(db_path)
    out = tmp_path / "out.jsonl"
    out.write_text("the old export\n", encoding="utf-8")
    os.chmod(out, 0o600)
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    assert main(["--db", db_path, "export", "--out", str(out)]) == 1
    assert "cannot write" in (err := capsys.readouterr().err) and "No space left on device" in err
    assert out.read_text(encoding="utf-8") == "the old export\n"
    assert sorted(os.listdir(tmp_path)) == sorted(n for n in os.listdir(tmp_path) if not n.endswith(".tmp"))

    monkeypatch.setattr(os, "fsync", real_fsync)

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    assert main(["--db", db_path, "export", "--out", str(out)]) != 0  # (the command line says "aborted")
    assert out.read_text(encoding="utf-8") == "the old export\n"
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    monkeypatch.undo()
    assert main(["--db", db_path, "export", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").count("\n") > 16 and (out.stat().st_mode & 0o777) == 0o600


def test_graph_lines_that_are_bad_are_refused_by_line(store, tmp_path):
    from mnemoscope.store import ImportRefused

    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine", "kind": "fact"}\n'
                    '{"entity": {"name": "A", "kind": "wizard"}}\n'
                    '{"entity": {"name": "B\\u202e"}}\n'
                    '{"relation": {"from": "A", "to": "B", "type": ""}}\n'
                    '{"entity": {"name": "A"}, "extra": 1}\n', encoding="utf-8")
    with pytest.raises(ImportRefused) as caught:
        store.import_jsonl(str(path))
    assert [n for n, _ in caught.value.errors] == [2, 3, 4, 5] and store.count() == 0
    assert "entity.kind" in caught.value.errors[0][1] and "U+202E" in caught.value.errors[1][1]


# -- mem0 and basic-memory ---------------------------------------------------------------------------
def memories(db: str) -> list[str]:
    with MemoryStore(db) as store:
        return sorted(json.dumps({k: v for k, v in vars(m).items()
                                  if k not in ("strength", "layer", "ticked_at", "next_change_at")},
                                 sort_keys=True, default=str) for m in store.list())


def test_mem0_export_is_mem0s_shape_and_imports_back_equal(db_path, second_db, tmp_path, capsys):
    rich(db_path)
    out = tmp_path / "mem0.json"
    assert main(["--db", db_path, "export", "--format", "mem0", "--out", str(out)]) == 0
    assert "exported 16 of 16 memories" in capsys.readouterr().err
    doc = json.loads(out.read_text(encoding="utf-8"))
    items = doc["results"]
    assert len(items) == 16 and all({"id", "memory", "hash", "metadata", "created_at", "updated_at"} <= set(i)
                                    for i in items)
    vpn = next(i for i in items if i["memory"] == "The VPN rotates monthly")
    assert "user_id" not in vpn and vpn["metadata"]["mnemoscope"]["scope"] == "private:ana"
    assert main(["--db", second_db, "import", str(out)]) == 0
    assert memories(second_db) == memories(db_path)  # every field of every memory, recalls too
    with MemoryStore(second_db) as store:
        assert store.get(vpn["id"]).sensitivity == "high"  # its own, not the import's default
    # --sensitivity, given, still sets every memory's
    third = tmp_path / "third.db"
    assert main(["--db", str(third), "import", str(out), "--sensitivity", "medium"]) == 0
    with MemoryStore(str(third)) as store:
        assert {m.sensitivity for m in store.list()} == {"medium"}


def bm_notes(folder) -> dict[str, list[str]]:
    """Each note's observation and relation lines (what basic-memory reads as its graph)."""
    out = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as fh:
                body = fh.read().split("\n---\n", 1)[1]  # after the frontmatter (its aliases are "- " lines)
            out[os.path.relpath(path, folder)] = [ln for ln in body.splitlines() if ln.startswith("- ")]
    return out


def test_basic_memory_export_reads_back_and_basic_memory_reads_it(db_path, second_db, tmp_path, capsys):
    rich(db_path)
    out = tmp_path / "project"
    assert main(["--db", db_path, "export", "--format", "basic-memory", "--out", str(out)]) == 0
    assert "exported 16 of 16 memories" in capsys.readouterr().err
    notes = bm_notes(out)
    assert "- [ops] The VPN rotates monthly #ops" not in notes["private-ana/private-ana.md"]  # topic or kind
    assert notes["private-ana/private-ana.md"] == ["- [lesson] The VPN rotates monthly #ops"]
    assert "- [fact] TCP/IP notes live in the wiki" in notes["global/TCP-IP.md"]
    assert main(["--db", second_db, "import", str(out)]) == 0
    with MemoryStore(db_path) as a, MemoryStore(second_db) as b:
        first = {m.text: m for m in a.list()}
        back = {m.text: m for m in b.list()}
        assert sorted(back) == sorted(first)
        for text, m in back.items():
            assert m.scope == first[text].scope and m.tags == first[text].tags, text
            assert m.entities == first[text].entities[:1], text
            assert m.topic == (first[text].topic or first[text].kind), text
        rels = "SELECT a.name, x.edge, b.name FROM edges x JOIN entities a ON a.id = x.src " \
               "JOIN entities b ON b.id = x.dst WHERE x.edge LIKE 'relation:%'"
        assert sorted(b.conn.execute(rels).fetchall()) == sorted(a.conn.execute(rels).fetchall())
    again = tmp_path / "again"
    assert main(["--db", second_db, "export", "--format", "basic-memory", "--out", str(again)]) == 0
    assert {k: sorted(v) for k, v in bm_notes(again).items()} == {
        k: sorted(v) for k, v in notes.items()}  # (the kind became the category: the same lines)

    python = os.environ.get("BASIC_MEMORY_PYTHON")
    if not python:
        pytest.skip("basic-memory is not installed: set BASIC_MEMORY_PYTHON to a Python that has it "
                    "(python3 -m venv V && V/bin/pip install --ignore-requires-python basic-memory)")
    import subprocess

    seen = json.loads(subprocess.run([python, os.path.join(os.path.dirname(os.path.dirname(__file__)), "support", "basic_memory_reader.py"),
                                      str(out)], capture_output=True, text=True, check=True,
                                     env={**os.environ, "HOME": str(tmp_path)}).stdout)
    assert set(seen) == set(notes)
    for rel, note in seen.items():
        # (basic-memory keeps an observation's #tags in its content, and lists them as tags too)
        lines = [f"- [{o['category']}] {o['content']}" for o in note["observations"]]
        assert all(f"#{t}" in o["content"] for o in note["observations"] for t in o["tags"])
        lines += [f"- {r['type']} [[{r['target']}]]" for r in note["relations"]]
        assert sorted(lines) == sorted(notes[rel]), rel
    assert seen["global/TCP-IP.md"]["title"] == "TCP/IP"


def test_basic_memory_export_goes_to_a_new_or_empty_folder_and_never_through_a_link(db_path, tmp_path, capsys):
    rich(db_path)
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "mine.md").write_text("my note", encoding="utf-8")
    assert main(["--db", db_path, "export", "--format", "basic-memory", "--out", str(mine)]) == 1
    assert "goes to a new or empty folder" in capsys.readouterr().err
    assert os.listdir(mine) == ["mine.md"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    assert main(["--db", db_path, "export", "--format", "basic-memory", "--out", str(link)]) == 1
    assert "is a link" in capsys.readouterr().err and os.listdir(elsewhere) == []
    assert main(["--db", db_path, "export", "--format", "basic-memory"]) == 2  # no --out: said so


def test_a_basic_memory_export_is_a_whole_folder_or_none(db_path, tmp_path, monkeypatch, capsys):
    """A full disk midway was a traceback and left the notes written so far, which looked
    like an export; a kill midway left them too, and the next export to that folder was
    refused (not empty). Now the notes go to a hidden folder beside it, renamed when all
    are written."""
    from mnemoscope.store.files import safe_folder

    rich(db_path)
    out = tmp_path / "notes"
    written = []
    real_write = safe_folder.SafeFolder.write

    def fills_up(self, name, data, **kw):
        if len(written) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(name)
        return real_write(self, name, data, **kw)

    monkeypatch.setattr(safe_folder.SafeFolder, "write", fills_up)
    assert main(["--db", db_path, "export", "--format", "basic-memory", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err and "nothing was written" in err
    assert not [n for n in os.listdir(tmp_path) if "notes" in n]  # nor its hidden folder

    def killed(self, name, data, **kw):
        if len(written) == 5:
            raise KeyboardInterrupt
        written.append(name)
        return real_write(self, name, data, **kw)

    monkeypatch.setattr(safe_folder.SafeFolder, "write", killed)
    with pytest.raises(KeyboardInterrupt):
        from mnemoscope.store.importers import basic_memory

        with MemoryStore(db_path) as store:
            basic_memory.export(store, out)
    assert not out.exists()
    monkeypatch.undo()
    assert main(["--db", db_path, "export", "--format", "basic-memory", "--out", str(out)]) == 0
    assert len(list(out.rglob("*.md"))) > 5


def test_basic_memory_notes_of_scopes_that_differ_in_case_do_not_share_a_file(db_path, tmp_path, capsys):
    """group:A and group:a were the folders group-A and group-a: one folder where case is
    not told apart (Windows, macOS), so each note of one overwrote its namesake of the other."""
    with MemoryStore(db_path) as store:
        for scope in ("group:A", "group:a"):
            store.remember(f"Mara drinks tea in {scope}", entities=["Mara"], scope=scope, now=NOW)
    out = tmp_path / "notes"
    assert main(["--db", db_path, "export", "--format", "basic-memory", "--out", str(out)]) == 0
    paths = [str(p.relative_to(out)).lower() for p in out.rglob("*.md")]
    assert len(paths) == len(set(paths)) == 2, paths
