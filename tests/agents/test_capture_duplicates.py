"""Capture, like remember, reinforces a memory that already says the same (by characters
or by meaning) instead of adding a copy, says so in its result, and can be forced; it
never merges a different number or a negation; and a caller compares only what it may
see: hidden memories change nothing in a low-trust caller's results."""

from __future__ import annotations

import json
import re

from mnemoscope.cli import main
from mnemoscope.serve.operations import Operations
from mnemoscope.store import MemoryStore
from test_serve import http, http_server  # noqa: F401 - the real server, started as its tests start it

STANDUP = "The standup is at 9:30 every weekday."
STANDUP_AGAIN = "Every weekday the standup is at 9:30."  # the same by meaning, other words' order


def test_the_capture_command_reinforces_a_repeat_and_says_so(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    first.write_text(json.dumps(STANDUP))
    again.write_text(json.dumps({"content": STANDUP_AGAIN, "reason_to_remember": "the team's habit"}))
    assert main(["--db", db, "capture", str(first)]) == 0
    mid = re.search(r"captured (\S+)", capsys.readouterr().out).group(1)
    assert main(["--db", db, "capture", str(again), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert not answer["created"] and answer["id"] == mid and answer["memory"]["recall_count"] == 1
    assert f"reinforced existing memory {mid}" in answer["message"]
    assert main(["--db", db, "capture", str(again)]) == 0
    assert capsys.readouterr().out.startswith(f"reinforced existing memory {mid}")
    assert main(["--db", db, "capture", str(again), "--allow-duplicate"]) == 0
    assert capsys.readouterr().out.startswith("captured ")
    with MemoryStore(db) as s:
        assert s.count() == 2


def test_a_capture_that_differs_in_a_number_or_a_negation_is_a_memory_of_its_own(new_db):
    store = MemoryStore(new_db())
    ops = Operations(store, trust="low")
    ops.capture(STANDUP)
    for other in ("The standup is at 10:30 every weekday.", "The standup is not at 9:30 every weekday."):
        assert ops.capture(other)["created"], other
    again = ops.capture(STANDUP_AGAIN, source_kind="observation")
    assert not again["created"] and "instead of adding a copy" in again["message"]
    assert ops.capture(STANDUP_AGAIN, allow_duplicate=True)["created"]
    assert store.count() == 4


HIDDEN = [  # what the low-trust caller may not see: above its trust, or another scope
    dict(text=STANDUP, sensitivity="hyper"),
    dict(text="The safe's code is 7731.", sensitivity="high"),
    dict(text="The safe's code is 7731.", scope="private:theo"),
    dict(text="Mara lives in Lisbon.", sensitivity="hyper"),
]
CALLS = [  # (tool, argument) as the low-trust agent makes them
    ("remember", STANDUP_AGAIN), ("capture", STANDUP), ("capture", "The safe's code is 7731."),
    ("remember", "The safe's code is 7731."), ("capture", "Mara has moved to Porto."),
    ("remember", "Every weekday the standup is at 9:30."),
]


def _run(target: str, hidden: list[dict]) -> tuple[list, list]:
    store = MemoryStore(target)
    hidden_ids = [store.remember(**h, dedupe=False).memory.id for h in hidden]
    before = [store.get(h).to_dict() for h in hidden_ids]
    ops = Operations(store, trust="low")
    names: dict[str, str] = {}

    def plain(answer: dict) -> tuple:
        text = json.dumps({k: answer.get(k) for k in ("created", "id", "message", "conflicts")}
                          | {"text": answer["memory"]["text"]}, sort_keys=True)
        for mid in re.findall(r"m-[0-9a-f]{12}", text):  # ids by order of appearance, times left out
            names.setdefault(mid, f"M{len(names)}")
            text = text.replace(mid, names[mid])
        return text, answer["memory"]["recall_count"]

    seen = [plain(getattr(ops, tool)(arg)) for tool, arg in CALLS]
    assert [store.get(h).to_dict() for h in hidden_ids] == before  # never reinforced nor touched
    return seen, [n for n in names if n in hidden_ids]


def test_hidden_memories_change_nothing_a_low_trust_caller_gets_back(new_db):
    without, _ = _run(new_db(), [])
    with_hidden, named = _run(new_db(), HIDDEN)
    assert with_hidden == without
    assert named == []  # no hidden memory's id in any answer
    assert [json.loads(text)["created"] for text, _ in without] == [True, False, True, False, True, False]


def test_the_http_capture_reinforces_a_repeat_and_can_be_forced(http_server):  # noqa: F811
    base = http_server()
    body = {"content": "Deployed v2.3 to staging.", "source_kind": "event"}
    status, first = http("POST", base + "/capture", body)
    assert status == 200 and first["created"] is True
    status, again = http("POST", base + "/capture", body)
    assert status == 200 and again["created"] is False and again["id"] == first["id"]
    assert f"reinforced existing memory {first['id']}" in again["message"]
    status, forced = http("POST", base + "/capture", {**body, "allow_duplicate": True})
    assert status == 200 and forced["created"] is True and forced["id"] != first["id"]
