"""Attacks on `mnemoscope import`: what a hostile file or folder does to the importers.
Each test is a finding of the import attack (round s29); what held is in the report."""

from __future__ import annotations

import json
import os
import threading

import pytest
from mnemoscope.store import ImportRefused, StoreError
from mnemoscope.store.importers import import_file, plan_import

pytestmark = pytest.mark.timeout(60)


def _note(folder, name, text):
    with open(os.path.join(folder, name), "w", encoding="utf-8") as fh:
        fh.write(text)


def _unblock_fifo(path):
    """Open the FIFO's writing end (and close it) so a reader stuck on it comes back: the
    test then fails on its assertion instead of hanging the run."""
    def opener():
        try:
            fd = os.open(path, os.O_WRONLY)
            os.close(fd)
        except OSError:
            pass
    t = threading.Timer(5, opener)
    t.daemon = True
    t.start()
    return t


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_basic_memory_never_reads_through_a_link(store, tmp_path):
    """A note that is a link to a file outside the folder (/etc/passwd, a secret) is not
    read: it is left out, named, and nothing of its target reaches the plan."""
    folder = tmp_path / "notes"
    folder.mkdir()
    _note(folder, "ana.md", "---\ntitle: Ana\n---\n- [pref] Ana likes tea\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("- [key] the launch code is 0000\n", encoding="utf-8")
    os.symlink(secret, folder / "stolen.md")
    os.symlink(tmp_path, folder / "up")  # a link to a folder above, and a loop
    os.symlink(".", folder / "loop")
    plan = plan_import(store, folder, "basic-memory")
    texts = [m["text"] for m in plan.memories]
    assert texts == ["Ana likes tea"], texts
    assert "stolen" not in plan.entities
    left = {x.where: x.why for x in plan.left_out}
    assert "stolen.md" in left and "link" in left["stolen.md"], left
    assert "up/" in left and "loop/" in left, left


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_basic_memory_note_that_is_a_fifo_does_not_hang(store, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    _note(folder, "ana.md", "- [pref] Ana likes tea\n")
    os.mkfifo(folder / "pipe.md")
    _unblock_fifo(str(folder / "pipe.md"))
    plan = plan_import(store, folder, "basic-memory")
    assert [m["text"] for m in plan.memories] == ["Ana likes tea"]
    left = {x.where: x.why for x in plan.left_out}
    assert "pipe.md" in left and "not a plain file" in left["pipe.md"], left


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("fmt", [None, "mcp-memory", "mem0"])
def test_import_of_a_fifo_is_refused_not_waited_on(store, tmp_path, fmt):
    pipe = tmp_path / "memory.jsonl"
    os.mkfifo(pipe)
    _unblock_fifo(str(pipe))
    with pytest.raises(StoreError, match="not a plain file"):
        import_file(store, pipe, fmt)
    assert store.stats()["memories"] == 0


def test_mem0_item_with_an_id_seen_before_is_reported_not_lost(store, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({"results": [
        {"id": "m1", "memory": "Ana likes tea", "user_id": "ana"},
        {"id": "m1", "memory": "Ana moved to Porto", "user_id": "ana"}]}), encoding="utf-8")
    plan = plan_import(store, path, "mem0")
    assert [m["text"] for m in plan.memories] == ["Ana likes tea"]
    left = [(x.where, x.why) for x in plan.left_out]
    assert any("results[1]" in where and "'m1'" in why for where, why in left), left


@pytest.mark.parametrize("name", ["x\x85y", "Ana\u202egpj.exe", "\u2066Ana\u2069", "a\u2028b"])
def test_entity_names_with_c1_controls_or_bidi_overrides_are_refused(store, tmp_path, name):
    """U+0085 is a line break to str.splitlines and a C1 control; U+202E and the isolates
    reorder what a reader sees (a name that shows as 'Anaexe.jpg'): refused, line named."""
    path = tmp_path / "memory.jsonl"
    lines = [{"type": "entity", "name": "Ok", "entityType": "person", "observations": ["fine"]},
             {"type": "entity", "name": name, "entityType": "person", "observations": ["hidden"]}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(ImportRefused) as err:
        import_file(store, path, "mcp-memory")
    assert [line for line, _ in err.value.errors] == [2]
    assert "name" in err.value.errors[0][1]
    assert store.stats()["memories"] == 0


def test_the_windows_jsonl_preview_lists_hostile_lines_as_the_import_does(store, tmp_path):
    """File › Import JSONL first previews the file (preview_jsonl): a line nested 100,000
    deep or a number of 5,000 digits raised RecursionError / ValueError there, where the
    import itself names each bad line."""
    from mnemoscope.store.importers.jsonl_preview import preview_jsonl

    path = tmp_path / "hostile.jsonl"
    path.write_text('{"text": "fine", "kind": "fact"}\n'
                    '{"text": "deep", "context": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
                    '{"text": "long", "importance": ' + "9" * 5000 + "}\n", encoding="utf-8")
    with pytest.raises(ImportRefused) as previewed:
        preview_jsonl(store, path)
    with pytest.raises(ImportRefused) as imported:
        store.import_jsonl(str(path))
    assert previewed.value.errors == imported.value.errors
    assert [line for line, _ in previewed.value.errors] == [2, 3]


def test_the_jsonl_preview_refuses_an_id_twice_as_the_import_does(store, tmp_path):
    from mnemoscope.store.importers.jsonl_preview import preview_jsonl

    path = tmp_path / "twice.jsonl"
    path.write_text('{"id": "a", "text": "one"}\n{"id": "a", "text": "two"}\n', encoding="utf-8")
    with pytest.raises(ImportRefused) as previewed:
        preview_jsonl(store, path)
    with pytest.raises(ImportRefused) as imported:
        store.import_jsonl(str(path))
    assert previewed.value.errors == imported.value.errors == [(2, "id 'a' already appears on line 1")]


def test_a_jsonl_line_that_is_not_utf8_is_named_and_partial_takes_the_rest(store, tmp_path):
    """README: every bad line (bad UTF-8 among them) is listed, and --partial takes the good
    ones. A byte that is not UTF-8 refused the whole file by its byte offset instead."""
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"text": "Mara likes tea."}\n{"text": "caf\xe9 au lait"}\n{"text": "Theo likes cocoa."}\n')
    with pytest.raises(ImportRefused) as err:
        store.import_jsonl(str(path))
    assert [line for line, _ in err.value.errors] == [2]
    assert "not UTF-8" in err.value.errors[0][1] and "0xe9" in err.value.errors[0][1]
    report = store.import_jsonl(str(path), partial=True)
    assert sorted(m.text for m in store.list()) == ["Mara likes tea.", "Theo likes cocoa."]
    assert [line for line, _ in report.errors] == [2]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_jsonl_import_of_a_fifo_is_refused_not_waited_on(store, tmp_path):
    pipe = tmp_path / "memories.jsonl"
    os.mkfifo(pipe)
    _unblock_fifo(str(pipe))
    with pytest.raises(StoreError, match="not a plain file"):
        store.import_jsonl(str(pipe))


def test_a_note_of_long_spaced_lines_is_read_in_linear_time(store, tmp_path):
    """Each line pattern of the basic-memory reader (frontmatter key, comment, observation,
    relation, trailing context) backtracked quadratically on a long run of spaces: 20,000
    spaces took 0.3-1 s a line, so one 8 MiB note (the limit) would hold the import (and the
    window's preview) for hours. 200,000 spaces a line must take well under a second each."""
    import time

    folder = tmp_path / "notes"
    folder.mkdir()
    gap = " " * 200_000
    _note(folder, "ana.md", "---\ntitle: Ana\nnote: a" + gap + "b\n---\n"
          "- [pref] Ana likes tea\n"
          "- [pref] x" + gap + "y\n"  # an observation with a long gap (over the text limit: refused)
          "- a" + gap + "\n"  # neither observation nor relation: prose
          "- see" + gap + "[[B\n")
    _note(folder, "bad.md", "---\nt" + gap + "!\n---\n")  # not 'key: value': refused
    started = time.perf_counter()
    plan = plan_import(store, folder, "basic-memory")
    assert time.perf_counter() - started < 5
    assert [m["text"] for m in plan.memories] == ["Ana likes tea"]
    assert sorted(where for where, _ in plan.errors) == ["ana.md:6", "bad.md:1"], plan.errors


def test_a_refused_jsonl_import_counts_its_good_lines_and_says_when_there_is_none(store, tmp_path):
    """The window offers "Import the good lines" only when there is one (issue 34)."""
    from mnemoscope.store.importers.jsonl_preview import preview_jsonl

    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"text": "fine"}\n\n{not json\n{"text": "also fine", "kind": "lesson"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n[1]\n")
    for read in (store.import_jsonl, lambda path: preview_jsonl(store, path)):
        with pytest.raises(ImportRefused) as err:
            read(str(mixed))
        assert err.value.good == 2 and "import only the good lines" in str(err.value)
        with pytest.raises(ImportRefused) as err:
            read(str(bad))
        assert err.value.good == 0 and "no good line" in str(err.value)
        assert "import only the good lines" not in str(err.value)
    assert store.stats()["memories"] == 0
