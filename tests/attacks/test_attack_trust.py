"""Attacks across trust at the operations every door shares, and at the owner's readers of
what agents did (the activity log, the mirror, the privacy check): what a caller may not
see must not change an answer, a count or a log line, and is never written to."""

import json
import sqlite3

import pytest
from mnemoscope.cli import main
from mnemoscope.serve.operations import Operations
from mnemoscope.store import MemoryStore
from mnemoscope.store.agents import activity as activity_log
from mnemoscope.store.curation import privacy
from mnemoscope.store.files.mirror import build_mirror
from mnemoscope.store.model.errors import NotFound, StoreError
from pydantic import ValidationError as PydanticValidationError
from pydantic import validate_call

PIN = "The door code of the lab is 4711."
TOKEN = "ghp_" + "Zk3QvT8mWb2Lr6Yp0Hs4Nd9Xc1Fg5Ja7Ue2x"


def stored(path):
    """Every table a refused or read-only call must leave alone, as rows (a file or a
    PostgreSQL database, read through a read-only store)."""
    with MemoryStore(path, read_only=True) as reader:
        return {t: reader.conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("memories", "memory_state", "entities", "edges", "recall_events", "ticks", "forgotten",
                          "conversations")}


def test_the_unwritten_check_catches_a_planted_write(store, db_path):
    mid = store.remember("Mara likes green tea.").memory.id
    before = stored(db_path)
    store.reinforce(mid)  # the kind of write a refused call must not make
    assert stored(db_path) != before


def logged(ops, tool, **args):
    """Call a tool the way a door does: through Operations.call, so it is logged."""
    return ops.call(tool, validate_call(ops.bound(tool)), args)


def everything_logged(store):
    return json.dumps([e.to_dict() for e in activity_log.recent(store, 1000, trust="hyper")], ensure_ascii=False)


# -- 6. remember's de-duplication ---------------------------------------------------------------
def test_remembering_a_hidden_memorys_text_neither_reveals_nor_reinforces_it(store):
    hidden = store.remember(PIN, scope="group:a", sensitivity="hyper").memory
    ops = Operations(store, scopes=["group:a"], trust="low")
    right = logged(ops, "remember", text=PIN)
    wrong = logged(ops, "remember", text="The door code of the lab is 4712.")
    # a right guess and a wrong one look alike: both stored for the agent, neither names the hidden memory
    assert right["created"] is True and wrong["created"] is True
    assert hidden.id not in json.dumps(right) and right["id"] != hidden.id
    assert right["message"] == f"remembered {right['id']}"
    after = store.get(hidden.id)
    assert (after.recall_count, after.importance, after.updated_at) == (0, hidden.importance, hidden.updated_at)
    assert store.recall_events(hidden.id) == []
    assert store.get(right["id"]).text == PIN and store.get(right["id"]).sensitivity == "low"
    # what the agent may see is still de-duplicated: its own copy is reinforced the next time
    again = logged(ops, "remember", text=PIN)
    assert again["created"] is False and again["id"] == right["id"]
    assert hidden.id not in everything_logged(store)


def test_the_stores_duplicate_lookup_takes_the_callers_trust(store):
    hidden = store.remember(PIN, sensitivity="hyper").memory
    seen = store.remember(PIN, trust="low")
    assert seen.created is True and seen.memory.id != hidden.id
    owner = store.remember(PIN)  # the owner (no trust given) sees everything
    assert owner.created is False and owner.memory.id in (hidden.id, seen.memory.id)


# -- 7. conversations belong to the trust context that made them ---------------------------------
def test_a_conversation_id_does_not_cross_trust_contexts(store):
    store.remember("Mara's blood type is AB negative.", scope="group:b", sensitivity="hyper")
    b = Operations(store, scopes=["group:b"], trust="hyper")
    a = Operations(store, scopes=["group:a"], trust="low")
    made = logged(b, "compile_prompt", user_message="What is Mara's blood type?", conversation_id="chat-1")
    assert made["ref_map"] and made["turn"] == 1
    with pytest.raises(NotFound) as theirs:
        logged(a, "resolve_citations", answer="AB negative [Mem:1]", conversation_id="chat-1")
    with pytest.raises(NotFound) as unknown:
        logged(a, "resolve_citations", answer="AB negative [Mem:1]", conversation_id="chat-2")
    assert str(theirs.value).replace("chat-1", "ID") == str(unknown.value).replace("chat-2", "ID")
    mine = logged(a, "compile_prompt", user_message="Hello there", conversation_id="chat-1")
    assert mine["turn"] == 1  # a conversation of its own, not turn 2 of b's
    again = logged(b, "resolve_citations", answer="[Mem:1]", conversation_id="chat-1")
    assert again["citations"][0]["status"] == "ok" and again["citations"][0]["turn"] == 1
    # the same scopes at another trust are another context too
    other = Operations(store, scopes=["group:b"], trust="low")
    with pytest.raises(NotFound):
        logged(other, "resolve_citations", answer="[Mem:1]", conversation_id="chat-1")


# -- 8. the activity log --------------------------------------------------------------------------
def test_the_log_shows_a_reader_only_what_its_trust_allows(store, db_path, capsys):
    ops = Operations(store, trust="hyper")
    made = logged(ops, "remember", text=f"The GitHub token is {TOKEN}.", sensitivity="hyper")
    logged(ops, "remember", text="Mara likes green tea.")
    entries = activity_log.recent(store)  # a reader at the default trust, medium
    assert TOKEN not in json.dumps([e.to_dict() for e in entries])
    secret_row = next(e for e in entries if made["id"] in e.memory_ids)
    assert secret_row.redacted and secret_row.sensitivity == "hyper" and secret_row.tool == "remember"
    assert secret_row.args == {"sensitivity": "hyper"}  # nothing for a replay to pick up
    tea_row = next(e for e in entries if e.memory_ids and e.memory_ids[0] != made["id"])
    assert tea_row.args["text"] == "Mara likes green tea." and not tea_row.redacted
    assert TOKEN in activity_log.recent(store, trust="hyper")[1].args["text"]
    assert main(["--db", db_path, "activity"]) == 0
    assert main(["--db", db_path, "activity", "--json"]) == 0
    out = capsys.readouterr().out
    assert TOKEN not in out and "Mara likes green tea." in out and "hyper" in out
    assert main(["--db", db_path, "activity", "--trust", "hyper"]) == 0
    assert TOKEN[:20] in capsys.readouterr().out  # the owner may ask for it


def test_a_write_refused_for_trust_keeps_no_text_in_the_log(store):
    ops = Operations(store, trust="low")
    for args in ({"text": "Bob's bank PIN is 9931.", "sensitivity": "hyper"},
                 {"text": "Bob's bank PIN is 9931.", "scope": "private:bob"},
                 {"text": "Bob's bank PIN is 9931.", "importance": 7}):
        with pytest.raises((StoreError, PydanticValidationError)):
            logged(ops, "remember", **args)
    refused = [e for e in activity_log.recent(store, trust="hyper") if not e.ok]
    assert len(refused) == 3
    assert "9931" not in everything_logged(store)


def test_forgetting_a_memory_scrubs_its_text_from_the_log(store):
    ops = Operations(store)
    made = logged(ops, "remember", text="Eve's new flat is at Rosenweg 12.")
    logged(ops, "update", memory_id=made["id"], text="Eve's new flat is at Rosenweg 14.")
    logged(ops, "recall", query="Eve flat Rosenweg")
    assert "Rosenweg" in everything_logged(store)
    logged(ops, "forget", memory_id=made["id"])
    assert "Rosenweg" not in everything_logged(store)
    assert [e.tool for e in activity_log.recent(store, trust="hyper")] == ["forget", "recall", "update", "remember"]


def test_the_privacy_check_reads_the_log(store, db_path, capsys):
    ops = Operations(store, trust="medium")
    with pytest.raises(StoreError):  # refused: a scope this server may not read; its text is not kept
        logged(ops, "recall", query=f"which repo does {TOKEN} open?", scope="private:eve")
    logged(ops, "recall", query=f"which repo does {TOKEN} open?")
    found = privacy.check_activity(store)
    assert len(found) == 1 and found[0].category == "credential" and found[0].memory_id.startswith("activity:")
    assert TOKEN not in found[0].line()
    assert main(["--db", db_path, "privacy-check"]) == 1
    assert "activity:" in capsys.readouterr().out


# -- 9. the mirror ----------------------------------------------------------------------------------
def test_the_mirror_leaves_out_what_is_above_medium_and_its_aliases(store):
    store.remember("Mara takes insulin twice a day.", sensitivity="hyper", topic="health",
                   entities=[{"name": "Mara", "kind": "person", "aliases": ["patient 4711"]}])
    store.remember("Mara likes green tea.", who="Mara")
    store.remember("Mara's salary is 91,000 euros.", sensitivity="high", entities=["Payroll"])
    default = "".join(build_mirror(store).values())
    assert "insulin" not in default and "salary" not in default and "patient 4711" not in default
    assert "green tea" in default
    low = build_mirror(store, trust="low")
    assert "patient 4711" not in low["entities/Mara.md"] and "Payroll" not in "".join(low.values())
    assert "health" not in "".join(low) + "".join(low.values())
    everything = build_mirror(store, trust="hyper")
    assert "patient 4711" in everything["entities/Mara.md"] and "insulin" in everything["entities/Mara.md"]


def test_the_mirror_command_defaults_to_medium(store, db_path, tmp_path, capsys):
    store.remember("Mara takes insulin twice a day.", sensitivity="hyper")
    store.remember("Mara likes green tea.")
    assert main(["--db", db_path, "mirror", "--out", str(tmp_path / "vault")]) == 0
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "vault").rglob("*.md"))
    assert "green tea" in pages and "insulin" not in pages


# -- 10. counts ------------------------------------------------------------------------------------
def test_stats_count_only_what_the_caller_may_see(store):
    store.remember("Seen by all.", scope="group:a")
    for text in ("Hidden one.", "Hidden two."):
        store.remember(text, scope="group:a", sensitivity="hyper")
    store.remember("Another group's.", scope="group:b")
    store.remember("A medium one.", scope="group:a", sensitivity="medium")  # one level above: redacted, not counted
    ops = Operations(store, scopes=["group:a"], trust="low")
    before = logged(ops, "stats")
    assert before["memories"] == 1 and before["scopes"] == {"group:a": 1}
    store.remember("Hidden three.", scope="group:a", sensitivity="hyper")
    store.remember("Another group's second.", scope="group:b")
    assert logged(ops, "stats") == before


# -- 11. a refused compile writes nothing ----------------------------------------------------------
@pytest.mark.parametrize("bad", [{"conversation_id": "has spaces"}, {"history": [{"role": "bogus", "content": "x"}]},
                                 {"history": [{"role": "user"}]}])
def test_a_refused_compile_reinforces_nothing(store, db_path, bad):
    store.remember("Mara likes green tea.", memory_id="m-tea")
    ops = Operations(store)
    before = stored(db_path)
    with pytest.raises((StoreError, PydanticValidationError)) as refused:
        logged(ops, "compile_prompt", user_message="What does Mara like to drink? tea", **bad)
    assert "conversation_id" in str(refused.value) or "role" in str(refused.value) or "content" in str(refused.value)
    assert stored(db_path) == before
    made = logged(ops, "compile_prompt", user_message="What does Mara like to drink? tea", conversation_id="ok-1")
    assert made["memory_ids"] == ["m-tea"] and store.get("m-tea").recall_count == 1


# -- 14. a recall on a full disk -------------------------------------------------------------------
def test_a_recall_on_a_full_disk_answers_and_says_the_reinforcement_was_skipped(store, monkeypatch):
    store.remember("Mara likes green tea.", memory_id="m-tea")
    ops = Operations(store)

    def full(*_args, **_kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store.tables, "reinforce", full)
    answer = logged(ops, "recall", query="green tea")
    assert [h["id"] for h in answer["hits"]] == ["m-tea"]
    assert answer["reinforced"] is False and "full" in answer["reinforcement"]
    assert store.get("m-tea").recall_count == 0
    monkeypatch.undo()
    answer = logged(ops, "recall", query="green tea")
    assert answer["reinforced"] is True and store.get("m-tea").recall_count == 1


def test_a_read_only_store_still_recalls(db_path):
    with MemoryStore(db_path) as s:
        s.remember("Mara likes green tea.", memory_id="m-tea")
    with MemoryStore(db_path, read_only=True) as s:
        answer = Operations(s).recall(query="green tea")
    assert [h["id"] for h in answer["hits"]] == ["m-tea"] and answer["reinforced"] is False


def test_a_capture_neither_links_to_nor_learns_of_hidden_memories_and_entities(store, db_path):
    hidden = store.remember(PIN, scope="group:a", sensitivity="hyper", who="Zed",
                            entities=[{"name": "Nightjar", "kind": "project", "aliases": ["project N"]}]).memory
    ops = Operations(store, scopes=["group:a"], trust="low")
    edges_before = stored(db_path)["edges"]
    to_hidden = logged(ops, "capture", content={"text": "Deployed project N.", "references": [hidden.id]})
    to_nothing = logged(ops, "capture", content={"text": "Deployed project N.", "references": ["m-000000000000"]})
    assert to_hidden["edges"] == to_nothing["edges"] and to_hidden["memory"]["entities"] == []
    new_edges = set(stored(db_path)["edges"]) - set(edges_before)
    assert not any(hidden.id in (src, dst) for src, _, dst, _ in new_edges)
    made = logged(ops, "remember", text="Zed plays the oboe.")
    assert made["memory"]["entities"] == []  # Zed is known only through the hidden memory


def test_an_entity_named_by_an_alias_only_hidden_memories_know_stays_the_callers_name(store):
    """remember(entities=["NJ"]) where "NJ" is an alias of an entity that only a memory above
    the caller's trust names: the answer (and recall after it) must say "NJ", not the
    hidden entity's name, and the new memory must not be linked to that entity."""
    hidden = store.remember(PIN, scope="group:a", sensitivity="hyper",
                            entities=[{"name": "Nightjar", "kind": "project", "aliases": ["NJ"]}]).memory
    ops = Operations(store, scopes=["group:a"], trust="low")
    made = logged(ops, "remember", text="Work on NJ resumes Monday.", entities=["NJ"])
    assert made["memory"]["entities"] == ["NJ"]
    found = logged(ops, "recall", query="NJ resumes Monday", k=5)
    assert "Nightjar" not in json.dumps(found) and "Nightjar" not in everything_logged(store)
    assert hidden.id not in json.dumps(found)


def test_an_alias_the_caller_may_see_still_names_its_entity(store):
    store.remember("Nightjar ships in May.", scope="group:a", sensitivity="low",
                   entities=[{"name": "Nightjar", "kind": "project", "aliases": ["NJ"]}])
    ops = Operations(store, scopes=["group:a"], trust="low")
    assert logged(ops, "remember", text="NJ has a new logo.", entities=["NJ"])["memory"]["entities"] == ["Nightjar"]


@pytest.mark.sqlite_only("traces statements with sqlite3's set_trace_callback")
@pytest.mark.parametrize("tool", ["update", "forget"])
def test_a_hidden_id_costs_the_same_statements_as_a_missing_one(store, tool):
    """An id that exists above the caller's trust or outside its scopes must not answer
    slower than one that does not exist: imported ids are made from their content (an MCP
    memory observation's id is a hash of its entity and text), so a timing difference
    would confirm a guessed hidden text. The statements run are the timing's cause; they
    must be the same."""
    store.remember(PIN, memory_id="hidden-high", scope="group:a", sensitivity="hyper", entities=["Lab"])
    store.remember(PIN + " (b)", memory_id="hidden-away", scope="group:b", sensitivity="low", entities=["Lab"])
    ops = Operations(store, scopes=["group:a"], trust="low")
    args = {"importance": 1} if tool == "update" else {}

    def statements(memory_id):
        seen = []
        store.conn.set_trace_callback(seen.append)
        try:
            with pytest.raises(NotFound):
                validate_call(ops.bound(tool))(memory_id=memory_id, **args)
        finally:
            store.conn.set_trace_callback(None)
        return [s.replace(memory_id, "?ID") for s in seen]

    missing = statements("no-such-id")
    assert statements("hidden-high") == missing
    assert statements("hidden-away") == missing
