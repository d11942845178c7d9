"""Answer provenance (issue 22, build 5): an agent compiles a prompt through a real door with
a conversation_id; a model's answer pasted later resolves each [Mem:N] to its memory, the
recall explanation that put it in the prompt and the agent's call in the activity log that
fetched it; from a memory, which prompts carried it."""

import pytest

pytest.importorskip("starlette")

from mnemoscope.serve.http_api import build_app  # noqa: E402
from mnemoscope.serve.operations import Operations  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.agents import provenance  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402
from support.helpers import PLANTED, plant_write, settle, unwritten_unless  # noqa: E402

QUESTION = "What snacks can I bring for Mara?"


@pytest.fixture
def compiled(db_path):
    """A database where an agent compiled two prompts of one conversation over HTTP."""
    path = db_path
    with MemoryStore(path) as store:
        store.remember("Mara is allergic to peanuts.", importance=0.9, memory_id="peanuts")
        store.remember("Mara loves dark chocolate snacks.", memory_id="chocolate")
        # recall ranks every time, so a memory the conversation's scope cannot see is the one
        # no prompt carries
        store.remember("The office plant needs water on Fridays.", memory_id="plant", scope="group:office")
        client = TestClient(build_app(Operations(store, door="http")), base_url="http://127.0.0.1")
        turns = []
        for message in (QUESTION, "And what should I avoid for Mara?"):
            response = client.post("/compile", json={"user_message": message, "conversation_id": "chat-7"},
                                   headers={"User-Agent": "snack-bot/1.0"})
            assert response.status_code == 200, response.text
            turns.append(response.json())
    return path, turns


def test_each_citation_resolves_to_memory_reason_and_call(compiled):
    path, turns = compiled
    last = turns[-1]
    n = next(int(k) for k, v in last["ref_map"].items() if v == "peanuts")
    answer = f"Avoid peanuts [Mem:{n}], and there is no [Mem:99]. Again [Mem:{n}]."
    with MemoryStore(path) as store:
        turn, cited = provenance.resolve_answer(store, answer, "chat-7")
    assert turn.turn == last["turn"] == 2
    first, unknown = cited
    assert (first.memory_id, first.status, first.text) == ("peanuts", "ok", "Mara is allergic to peanuts.")
    assert first.why["score"] > 0 and "keyword" in first.why and "meaning" in first.why
    assert first.call is not None and first.call.tool == "compile_prompt" and first.call.door == "http"
    assert first.call.client == "snack-bot/1.0" and first.call.args["conversation_id"] == "chat-7"
    assert "peanuts" in first.call.memory_ids
    assert (unknown.n, unknown.memory_id, unknown.status) == (99, None, "unknown")
    # turn 1 was another call: its own row in the log
    with MemoryStore(path) as store:
        _, [again] = provenance.resolve_answer(store, f"[Mem:{n}]", "chat-7", turn=1)
    assert again.call.id < first.call.id


def test_which_prompts_carried_a_memory(compiled):
    path, turns = compiled
    with MemoryStore(path) as store:
        carried = provenance.prompts_carrying(store, "peanuts")
        assert [c.turn.turn for c in carried] == [2, 1]
        assert all(c.call is not None and c.call.client == "snack-bot/1.0" for c in carried)
        assert carried[0].call.id != carried[1].call.id
        assert provenance.prompts_carrying(store, "plant") == []


def test_an_unknown_conversation_says_so(compiled):
    path, _ = compiled
    with MemoryStore(path) as store, pytest.raises(Exception, match="chat-8"):
        provenance.resolve_answer(store, "[Mem:1]", "chat-8")


@pytest.mark.parametrize(**PLANTED)
def test_the_window_shows_the_provenance_and_writes_nothing(compiled, qtbot, qt_settings, planted):
    pytest.importorskip("PySide6")
    from mnemoscope.ui.main_window import MainWindow

    path, turns = compiled
    n = next(int(k) for k, v in turns[-1]["ref_map"].items() if v == "peanuts")
    window = MainWindow(MemoryStore(path))
    window.resize(1366, 768)
    window.show()
    qtbot.waitExposed(window)
    try:
        pane = window.preview.provenance_pane
        with unwritten_unless(planted, path):
            window.preview.tabs.setCurrentWidget(pane)
            pane.refresh_conversations()
            assert pane.conversation.currentText().startswith("chat-7")
            pane.answer.setPlainText(f"Avoid peanuts [Mem:{n}].")
            qtbot.waitUntil(lambda: "→" in pane.result.toPlainText(), timeout=2000)  # resolved as one types
            shown = pane.result.toPlainText()
            assert f"[Mem:{n}] → peanuts: Mara is allergic to peanuts." in shown
            assert "score" in shown and "keyword" in shown
            assert "compile_prompt by snack-bot/1.0 (http)" in shown
            window.session.select("peanuts")
            settle(qtbot, window)
            carried = pane.carried.toPlainText()
            assert "2 prompts carried peanuts" in carried and "chat-7 turn 2" in carried and "turn 1" in carried
            if planted:
                plant_write(window.session.store)
    finally:
        window.close()
