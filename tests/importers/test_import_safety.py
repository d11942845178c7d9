"""What an import must never do: lose a record without a word, take time or memory out of
proportion to a file, keep a secret where the privacy check does not look, or serve what
came in to an agent it should not reach (issue #32 item 7, #35 items 1 and 9)."""

from __future__ import annotations

import json
import time

import pytest
from mnemoscope.cli import main
from mnemoscope.store import StoreError
from mnemoscope.store.curation import privacy
from mnemoscope.store.importers import frontmatter, import_file, plan_import

pytestmark = [pytest.mark.timeout(120)]

NOW = "2026-06-01T12:00:00Z"


def _write(path, obj) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def _letta(tmp_path, blocks, agents=None) -> str:
    agents = agents if agents is not None else [{"name": "Ada", "block_ids": [b["id"] for b in blocks]}]
    return _write(tmp_path / "agent.af", {"agents": agents, "blocks": blocks})


# -- Letta: a block id seen twice -----------------------------------------------------------------
def test_two_letta_blocks_with_one_id_are_a_refusal_naming_both_not_a_silent_loss(store, tmp_path):
    path = _letta(tmp_path, [{"id": "block-1", "label": "human", "value": "Ana likes tea"},
                             {"id": "block-1", "label": "human", "value": "Ana hates coffee"}])
    plan = plan_import(store, path, "letta")
    assert plan.errors, "the first block vanished without a word"
    assert any("block-1" in why and "blocks[0]" in why for _, why in plan.errors), plan.errors
    with pytest.raises(StoreError):
        import_file(store, path, "letta")
    assert store.count() == 0


def test_the_same_letta_block_written_twice_is_one_memory(store, tmp_path):
    block = {"id": "block-1", "label": "human", "value": "Ana likes tea"}
    path = _letta(tmp_path, [block, dict(block)])
    result = import_file(store, path, "letta", now=NOW)
    assert [m.text for m in store.list()] == ["Ana likes tea"]
    assert any("block-1" in x.what and "blocks[0]" in x.why for x in result.left_out), result.left_out


# -- basic-memory: frontmatter in linear time ---------------------------------------------------
def test_frontmatter_of_many_indented_lines_is_read_in_linear_time():
    """A nested block under one key was kept by adding each line to a growing string:
    1.2 M lines took 131 s for one note's dry run (quadratic)."""
    def took(n: int) -> float:
        text = "title: Ana\nnested:\n" + "  k: 0123456789abcdef\n" * n
        started = time.perf_counter()
        meta = frontmatter.parse(text)
        assert meta["nested"].count("\n") == n - 1
        return time.perf_counter() - started

    took(1000)
    small, big = took(25_000), took(200_000)
    assert big < 2.0, f"200,000 indented lines took {big:.2f} s"
    assert big < small * 8 * 3, f"25,000 lines {small:.3f} s, 200,000 lines {big:.3f} s: not linear"


# -- sizes from the file's metadata, before reading ------------------------------------------
@pytest.mark.parametrize("fmt", ["mcp-memory", "letta", "mem0", None])
def test_a_sparse_file_over_the_limit_is_refused_at_once(store, tmp_path, fmt):
    """A sparse 2 GiB file took 20 s and 4.1 GB resident to be called "line 1: not valid
    JSON": its size is known from its metadata before a byte is read."""
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as fh:
        fh.write(b'{"type":"entity","name":"A","entityType":"x","observations":["')
        fh.truncate(2 << 30)
    started = time.perf_counter()
    with pytest.raises(StoreError, match="over 1,073,741,824 bytes"):
        import_file(store, str(path), fmt)
    assert time.perf_counter() - started < 3
    started = time.perf_counter()
    with pytest.raises(StoreError, match="over 1,073,741,824 bytes"):
        store.import_jsonl(str(path))
    assert time.perf_counter() - started < 3
    assert store.count() == 0


def test_a_basic_memory_note_over_its_limit_is_refused_without_reading_it(store, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    _write(folder / "ok.md", "- [pref] Ana likes tea\n")
    with open(folder / "huge.md", "wb") as fh:
        fh.write(b"- [pref] x\n")
        fh.truncate(2 << 30)
    started = time.perf_counter()
    plan = plan_import(store, str(folder), "basic-memory")
    assert time.perf_counter() - started < 3
    assert [w for w, _ in plan.errors] == ["huge.md:1"] and "8,388,608" in plan.errors[0][1]


# -- the privacy check reads what an import keeps in context -----------------------------------
def test_a_secret_in_an_imports_metadata_is_found_by_the_privacy_check(store, tmp_path):
    path = _write(tmp_path / "mem0.json", {"results": [
        {"id": "m1", "memory": "Ana likes tea", "user_id": "ana",
         "metadata": {"note": "the VPN password is hunter2hunter2"}}]})
    result = import_file(store, path, "mem0", now=NOW)
    findings = privacy.check(store)
    assert [(f.memory_id, f.category, f.where) for f in findings] == [(result.ids[0], "credential", "context")]
    # ... the import said so, and one action raises what it flagged
    assert [f.memory_id for f in result.findings] == [result.ids[0]]
    raised = privacy.raise_findings(store, result.findings)
    assert store.get(result.ids[0]).sensitivity == "hyper" and privacy.check(store) == []
    privacy.undo_raise(store, raised)
    assert store.get(result.ids[0]).sensitivity == "low"


def test_a_secret_in_a_letta_block_is_flagged_right_after_the_import(store, tmp_path):
    path = _letta(tmp_path, [{"id": "b1", "label": "human", "value": "the VPN password is hunter2hunter2"}])
    result = import_file(store, path, "letta", now=NOW)
    assert [(f.category, f.needed) for f in result.findings] == [("credential", "hyper")]
    assert "privacy" in result.to_dict() and result.to_dict()["privacy"][0]["needed"] == "hyper"


# -- sensitivity chosen at import ---------------------------------------------------------------
def test_an_import_takes_a_sensitivity(store, tmp_path):
    path = _letta(tmp_path, [{"id": "b1", "label": "human", "value": "the VPN password is hunter2hunter2"}])
    result = import_file(store, path, "letta", now=NOW, sensitivity="hyper")
    assert {m.sensitivity for m in store.list()} == {"hyper"}
    assert result.findings == []
    assert store.recall("VPN password", scope="global", trust="low") == [] or all(
        h.redacted for h in store.recall("VPN password", scope="global", trust="low"))


def test_cli_import_sensitivity_and_the_privacy_warning(db_path, tmp_path, capsys):
    path = _letta(tmp_path, [{"id": "b1", "label": "human", "value": "the VPN password is hunter2hunter2"}])
    assert main(["--db", db_path, "import", path]) == 0
    out = capsys.readouterr()
    assert "should be more sensitive" in out.out + out.err
    assert "mnemoscope privacy-check --raise" in out.out + out.err
    assert main(["--db", db_path, "privacy-check", "--raise"]) == 0
    assert "raised 1" in capsys.readouterr().out
    assert main(["--db", db_path, "privacy-check"]) == 0

    other = _letta(tmp_path, [{"id": "b2", "label": "human", "value": "Ana keeps bees"}])
    assert main(["--db", db_path, "import", other, "--sensitivity", "medium", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sensitivity"] == "medium"
    assert main(["--db", db_path, "import", other, "--sensitivity", "secret"]) == 2


# -- names keep their slashes (#35 item 1) ------------------------------------------------------
def test_names_with_slashes_are_names(store, tmp_path):
    path = _write(tmp_path / "memory.jsonl", "\n".join(json.dumps(x) for x in [
        {"type": "entity", "name": "TCP/IP", "entityType": "concept", "observations": ["Is a protocol suite"]},
        {"type": "entity", "name": "C:\\Users", "entityType": "place", "observations": ["Is a folder"]},
        {"type": "relation", "from": "TCP/IP", "to": "C:\\Users", "relationType": "lives_in"}]))
    import_file(store, path, "mcp-memory", now=NOW)
    assert sorted(e.name for e in store.entities()) == ["C:\\Users", "TCP/IP"]


def test_basic_memory_permalink_links_with_slashes(store, tmp_path):
    folder = tmp_path / "notes"
    (folder / "projects").mkdir(parents=True)
    _write(folder / "projects" / "project-orion.md", "---\ntitle: Project Orion\n---\n- [goal] Ship in May\n")
    _write(folder / "ana.md", "---\ntitle: Ana\n---\n- [pref] Likes tea\n- works_on [[projects/project-orion]]\n")
    result = import_file(store, str(folder), "basic-memory", now=NOW)
    assert result.memories_new == 2
    # the link is basic-memory's permalink of the note: it names the note's entity
    assert sorted(e.name for e in store.entities()) == ["Ana", "Project Orion"]
    assert store.conn.execute(
        "SELECT a.name, b.name FROM edges x JOIN entities a ON a.id = x.src JOIN entities b ON b.id = x.dst "
        "WHERE x.edge = 'relation:works_on'").fetchall() == [("Ana", "Project Orion")]
