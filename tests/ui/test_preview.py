"""The live prompt preview, driven like a person would, on real temporary databases."""

import json

import pytest

pytest.importorskip("PySide6")

from mnemoscope.bridge import PreviewRequest, preview  # noqa: E402
from mnemoscope.compiler.providers import render  # noqa: E402
from mnemoscope.store import MemoryStore  # noqa: E402
from PySide6.QtCore import QPointF, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402
from support.helpers import PLANTED, plant_write, settle, unwritten_unless  # noqa: E402

QUESTION = "How should I explain a Rust lifetime error to Mara?"


@pytest.fixture(autouse=True)
def _settings(qt_settings):
    """Every test here keeps its Qt settings in its own temporary folder."""


def ask(window, qtbot, text=QUESTION, budget=None):
    pv = window.preview
    if budget is not None:
        pv.budget_spin.setValue(budget)
    pv.user_message.setPlainText("")
    qtbot.keyClicks(pv.user_message, text)
    with qtbot.waitSignal(pv.compiled, timeout=3000):
        pass
    return pv


def test_typing_a_message_recalls_and_compiles_like_compile(window, qtbot, demo_db):
    pv = ask(window, qtbot, budget=1500)
    with MemoryStore(demo_db) as s:
        direct = preview(s, PreviewRequest(user_message=QUESTION, max_tokens=1500)).result
    assert pv.result.messages == direct.messages and pv.result.ref_map == direct.ref_map
    md = direct.metadata
    v = pv.summary_values()
    assert (v["tokens"], v["budget"], v["kept"], v["offered"]) == (md["token_count"], 1500, md["memories_kept"],
                                                                   md["memories_offered"])
    assert f"{md['token_count']:,} / 1,500 tokens" in pv.summary.text()
    kept_bars = [b for b in pv.bars.rects if b.row != "trimmed"]
    assert sum(b.segment.tokens for b in kept_bars) == md["token_count"]
    assert [b.segment.region for b in kept_bars][0] == "core" and kept_bars[-1].segment.region == "end"


def test_dragging_the_budget_down_trims_more_and_never_passes_it(window, qtbot):
    pv = ask(window, qtbot, budget=4000)
    trimmed = []
    for position in range(pv.budget_slider.value(), 250, -40):
        pv.budget_slider.setValue(position)
        md = pv.result.metadata
        assert md["token_count"] <= md["tokens_budget"] == pv.budget_spin.value()
        trimmed.append(pv.summary_values()["trimmed_memories"])
    assert trimmed == sorted(trimmed) and trimmed[-1] > trimmed[0]


def test_episodic_trimmed_before_semantic_and_procedural_last(window, qtbot):
    pv = ask(window, qtbot, text="Lighthouse release deploy Rust tests flaky parser", budget=8000)
    tiers_in_prompt = {s.tier for s in pv.result.segments if s.region == "memory"}
    assert tiers_in_prompt == {1, 2, 3}
    full = pv.result.metadata["token_count"]
    for budget in range(full, 150, -25):
        pv.budget_spin.setValue(budget)
        md = pv.result.metadata
        mem = [s for s in pv.result.segments if s.region == "memory"]
        trimmed = [s for s in mem if not s.kept and s.reason == "over_budget"]
        for s in trimmed:
            # a higher tier is only trimmed when it is too big for the room that is left
            assert md["token_count"] + s.tokens > md["tokens_budget"], (budget, s)
            if any(k.kept and k.tier > s.tier for k in mem):
                assert all(k.tokens < s.tokens for k in mem if k.kept and k.tier > s.tier), (budget, s)


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "text"])
def test_copy_puts_exactly_the_compiled_result_on_the_clipboard(window, qtbot, fmt):
    model = "anthropic/claude-sonnet-4.5" if fmt == "anthropic" else "openai/gpt-4o"
    window.preview.model.setCurrentText(model)
    pv = ask(window, qtbot, budget=900)
    pv.copy_buttons[fmt].click()
    text = QGuiApplication.clipboard().text()
    assert text == render(pv.result, fmt, model)
    if fmt == "openai":
        assert json.loads(text) == pv.result.messages
    elif fmt == "anthropic":
        request = json.loads(text)
        assert request["model"] == "claude-sonnet-4-5"
        assert request["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert request["messages"][-1]["content"] == [{"type": "text", "text": pv.result.messages[-1]["content"]}]


def test_copying_an_anthropic_request_for_an_openai_model_says_why_not(window, qtbot):
    window.preview.model.setCurrentText("openai/gpt-4o")
    pv = ask(window, qtbot, budget=900)
    QGuiApplication.clipboard().setText("before")
    pv.copy_buttons["anthropic"].click()  # it is not offered for an OpenAI model, and says why
    assert QGuiApplication.clipboard().text() == "before"
    assert not pv.copy_buttons["anthropic"].isEnabled()
    assert "Needs a Claude model" in pv.copy_buttons["anthropic"].toolTip()


def test_save_writes_the_prompt_and_the_ref_map(window, qtbot, tmp_path):
    pv = ask(window, qtbot, budget=900)
    ref_path = pv.save(str(tmp_path / "prompt.json"), "openai")
    assert json.loads((tmp_path / "prompt.json").read_text()) == pv.result.messages
    with open(ref_path, encoding="utf-8") as fh:
        refs = json.load(fh)
    assert {int(n): r["id"] for n, r in refs.items()} == pv.result.ref_map


def test_citations_resolve_flag_and_select(window, qtbot):
    pv = ask(window, qtbot, budget=420)
    kept_n, kept_id = next(iter(pv.result.ref_map.items()))
    trimmed = next(s for s in pv.result.segments if s.region == "memory" and not s.kept)
    pv.citations_pane.answer.setPlainText(f"Use a snippet [Mem:{kept_n}], see [Mem:{trimmed.ref}] and [Mem:99].")
    found = pv.citations_pane.found
    assert found == [(kept_n, kept_id, "ok"), (trimmed.ref, trimmed.record_id, "trimmed"), (99, None, "unknown")]
    pv.tabs.setCurrentIndex(2)
    item = pv.citations_pane.list.item(0)
    rect = pv.citations_pane.list.visualItemRect(item)
    qtbot.mouseClick(pv.citations_pane.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.session.selected_id == kept_id
    assert window.editor.memory_id == kept_id


def test_clicking_a_memory_bar_selects_it(window, qtbot):
    pv = ask(window, qtbot, budget=1500)
    bar = next(b for b in pv.bars.rects if b.segment.region == "memory")
    qtbot.mouseClick(pv.bars, Qt.MouseButton.LeftButton, pos=bar.rect.center().toPoint())
    assert window.session.selected_id == bar.segment.record_id
    assert "tokens" in pv.bars.describe(bar) and bar.segment.record_id in pv.bars.describe(bar)
    assert pv.bars.rect_at(QPointF(bar.rect.center())) is bar


def test_compare_shows_the_memories_that_left_after_a_tick(window, qtbot):
    pv = ask(window, qtbot, text="What did Mara do at Vertigo climbing with Theo?", budget=6000)
    qtbot.mouseClick(pv.compare_pane.pin_button, Qt.MouseButton.LeftButton)
    before = set(pv.result.ref_map.values())
    window.advance(400)
    pv.recompile()
    diff = pv.compare_pane.diff
    assert diff["left"] and set(diff["left"]) <= before
    shown = pv.compare_pane.text.toPlainText()
    assert "Left (" in shown
    store = window.session.store
    for rid in diff["left"]:  # each by its text, not by its id alone (it is no longer among the hits)
        assert store.get(rid).text[:60] in shown


def test_cache_view_counts_prefix_reads_across_turns(window, qtbot):
    pv = ask(window, qtbot, budget=16000)
    pv.rules.setPlainText("Always answer carefully and cite memories. " * 150)
    for i in range(3):
        pv.history.add("user", f"Question {i} about Rust lifetimes")
        pv.history.add("assistant", f"Answer {i}: lifetimes tie borrows to scopes.")
    pv.recompile()
    qtbot.mouseClick(pv.cache_pane.button, Qt.MouseButton.LeftButton)
    rows = pv.cache_pane.rows
    assert len(rows) == 4 and rows[0][2] == 0 and all(read > 1024 for _, _, read in rows[1:])
    assert "could be read" in pv.cache_pane.total.text()


@pytest.mark.parametrize(**PLANTED)
def test_many_recompiles_leave_the_database_unchanged(window, qtbot, demo_db, planted):
    with unwritten_unless(planted, demo_db):
        pv = ask(window, qtbot, budget=800)
        for text in ("peanut allergy", "garden club", "Rust", "bank manager", "Theo"):
            pv.user_message.setPlainText(text)
            pv.recompile()
            for b in (300, 900, 2000):
                pv.budget_spin.setValue(b)
        settle(qtbot, window)
        if planted:
            plant_write(window.session.store)


def test_a_memory_from_another_scope_never_appears(window, qtbot):
    pv = ask(window, qtbot, text="garden club seeds basil repotting Ines", budget=8000)
    scopes = {window.session.store.get(rid).scope for rid in pv.result.ref_map.values()}
    assert scopes == {"global"} or scopes <= {"global"}
    pv.scope.setCurrentText("group:garden-club")
    pv.recompile()
    scopes = {window.session.store.get(rid).scope for rid in pv.result.ref_map.values()}
    assert "group:garden-club" in scopes and scopes <= {"group:garden-club", "global"}
    text = json.dumps(pv.result.messages)
    assert "Rui Sousa" not in text and "asthma" not in text  # private:mara stays out


def test_preview_command_prints_what_the_window_copies(window, qtbot, demo_db, capsys):
    from mnemoscope.cli import main

    pv = ask(window, qtbot, budget=700)
    assert main(["preview", "--db", demo_db, "--user-message", QUESTION, "--max-tokens", "700",
                 "--format", "openai"]) == 0
    assert json.loads(capsys.readouterr().out) == pv.result.messages


def test_token_bars_are_all_drawn_to_one_scale_with_an_axis(window, qtbot):
    pv = ask(window, qtbot, budget=400)
    pv.bars.grab()  # paint once, as the screen would
    trimmed = [b for b in pv.bars.rects if b.row == "trimmed"]
    kept = [b for b in pv.bars.rects if b.row != "trimmed" and b.segment.tokens > 20]
    assert trimmed and kept
    per_token = kept[0].rect.width() / kept[0].segment.tokens
    for bar in trimmed + kept:
        if bar.segment.tokens > 20:  # a 1-pixel minimum keeps tiny bars visible
            assert abs(bar.rect.width() / bar.segment.tokens - per_token) < 1e-6
        assert bar.rect.right() <= pv.bars.width()
    assert len(pv.bars.ticks) >= 3 and pv.bars.ticks[0] == 0
    assert pv.bars.rect().contains(pv.bars.budget_label_rect.toRect())


def test_the_numbers_and_words_say_what_they_mean(window, qtbot):
    pv = ask(window, qtbot, budget=1500)
    v = pv.summary_values()
    assert f"<b>{v['tokens']:,} / 1,500 tokens</b>" in pv.summary.text()
    text = pv.summary.toolTip()  # the whole account, behind the two lines a glance reads
    assert f"{v['tokens']:,} / 1,500 tokens (prompt / budget)" in text
    assert f"{v['billed']:,} billed tokens (the prompt + {v['billed'] - v['tokens']:,} for message framing)" in text
    bar = next(b for b in pv.bars.rects if b.segment.region == "memory" and b.segment.tier)
    kind = window.session.store.get(bar.segment.record_id).kind
    assert pv.bars.describe(bar).startswith(f"memory · {kind} [")
    assert " tier] · " in pv.bars.describe(bar)


def test_the_cacheable_prefix_label_says_a_whole_word_in_a_narrow_dock(window, qtbot):
    """At 1366x768 the label read "cacheable prefix 94 tok (not c…": a shorter wording first."""
    pv = ask(window, qtbot, budget=400)
    if not pv.result.metadata["cacheable_prefix_tokens"]:
        pytest.skip("no cacheable prefix in this prompt")
    for width in (260, 330, 900):
        pv.bars.resize(width, pv.bars.height())
        pv.bars.grab()
        assert pv.bars.prefix_label.startswith(("cacheable prefix", "prefix")), pv.bars.prefix_label
        if width >= 330:
            assert not pv.bars.prefix_label.endswith("…"), (width, pv.bars.prefix_label)
