"""Semantic de-duplication in the coding and conversational profiles: of two memories
that say the same thing only one is sent, the plan says which and why, and the budget's
promises hold. Vectors are deterministic: a table, or a seeded random vector per text."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mnemoscope.compiler import (
    ContextCompiler,
    EmbeddingError,
    MemoryItem,
    TokenizerRegistry,
    count_message_tokens,
    differ_in_fact,
    get_profile,
    near_duplicates,
)
from mnemoscope.compiler.dedup import DEDUP_THRESHOLD


def fresh(result):
    return count_message_tokens(result.messages, TokenizerRegistry.get().adapter(result.metadata["model_id"]))


def text_vector(text: str, dim: int = 64) -> np.ndarray:
    v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(dim)
    return (v / np.linalg.norm(v)).astype(np.float32)


def near(base: np.ndarray, amount: float, seed: int) -> np.ndarray:
    v = base + amount * np.random.default_rng(seed).standard_normal(base.shape)
    return (v / np.linalg.norm(v)).astype(np.float32)


class Embedder:
    """A fake embedder: listed texts get their table's vector, others one from their hash."""

    def __init__(self, table: dict[str, np.ndarray] | None = None):
        self.table = table or {}
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.table.get(t, text_vector(t)) for t in texts])


PYTEST = "Use pytest for the tests."
PYTEST_AGAIN = "Tests are written with pytest."
PEANUTS = "Mara is allergic to peanuts."
NO_PEANUTS = "Mara is not allergic to peanuts."
TABLE = {PYTEST: text_vector(PYTEST), PYTEST_AGAIN: near(text_vector(PYTEST), 0.05, 1),
         PEANUTS: text_vector(PEANUTS), NO_PEANUTS: near(text_vector(PEANUTS), 0.02, 2)}


def compile_with(profile: str, memories, **kw):
    compiler = ContextCompiler.from_profile(profile, 4096, "openai/gpt-4o", "Rules.")
    return compiler.compile(memories, "How should I test parse_date()?", **kw)


def test_the_coding_and_conversational_profiles_send_one_of_two_near_identical_memories():
    assert get_profile("coding").options["semantic_dedup"] is True
    assert get_profile("conversational").options["semantic_dedup"] is True
    assert "semantic_dedup" not in get_profile("minimal").options
    memories = [MemoryItem("a", PYTEST, score=0.4), MemoryItem("b", PYTEST_AGAIN, score=0.9),
                MemoryItem("c", "Dates are ISO 8601.")]
    for profile in ("coding", "conversational"):
        result = compile_with(profile, memories, embed=Embedder(TABLE))
        assert set(result.ref_map.values()) == {"b", "c"}  # the higher score is kept
        prompt = result.messages[-1]["content"]
        assert PYTEST_AGAIN in prompt and PYTEST not in prompt
        dropped = [s for s in result.segments if s.reason == "near_duplicate"]
        assert [(s.record_id, s.duplicate_of, s.kept) for s in dropped] == [("a", "b", False)]
        assert dropped[0].similarity >= DEDUP_THRESHOLD
        assert dropped[0].why == f"near-duplicate of b (cosine {dropped[0].similarity:.2f}): sent once"
        md = result.metadata
        assert md["memories_deduplicated"] == 1 and "semantic_dedup" in md["trimming_strategies"]
        assert md["semantic_dedup"]["dropped"] == [{"record_id": "a", "ref": 1, "duplicate_of": "b",
                                                    "duplicate_of_ref": 2, "cosine": dropped[0].similarity}]
        assert md["token_count"] == fresh(result) == sum(s.tokens for s in result.segments if s.kept)
        assert md["tokens_trimmed"] == dropped[0].tokens


def test_the_minimal_profile_sends_both_even_with_an_embedder():
    memories = [MemoryItem("a", PYTEST), MemoryItem("b", PYTEST_AGAIN)]
    embed = Embedder(TABLE)
    result = compile_with("minimal", memories, embed=embed)
    assert set(result.ref_map.values()) == {"a", "b"} and result.metadata["memories_deduplicated"] == 0
    assert all(PYTEST not in call for call in embed.calls)  # the memories were not even embedded


def test_without_vectors_nothing_is_deduplicated_and_the_prompt_is_as_before():
    memories = [MemoryItem("a", PYTEST), MemoryItem("b", PYTEST)]
    result = compile_with("coding", memories)
    plain = ContextCompiler.from_profile("coding", 4096, "openai/gpt-4o", "Rules.", semantic_dedup=False).compile(
        memories, "How should I test parse_date()?")
    assert result.messages == plain.messages and set(result.ref_map.values()) == {"a", "b"}
    assert "semantic_dedup" not in result.metadata and result.metadata["memories_deduplicated"] == 0


def test_a_negation_is_not_a_duplicate():
    result = compile_with("conversational", [MemoryItem("a", PEANUTS), MemoryItem("b", NO_PEANUTS)],
                          embed=Embedder(TABLE))
    assert set(result.ref_map.values()) == {"a", "b"}


@pytest.mark.parametrize("a, b", [
    ("Mara is allergic to peanuts.", "Mara is not allergic to peanuts."),
    ("Theo never drinks coffee.", "Theo drinks coffee."),
    ("The build doesn't cache wheels.", "The build caches wheels."),
    ("The meeting is at 9:30.", "The meeting is at 10:30."),
    ("The invoice was 120 euros.", "The invoice was 210 euros."),
    ("Release on 2026-03-01.", "Release on 2026-04-01."),
    ("Mara lives in Lisbon.", "Mara lives in Porto."),
    ("Priya is vegetarian.", "Theo is vegetarian."),
    ("玛拉对花生过敏。", "玛拉对花生不过敏。"),
    ("会议在三点。", "会议在四点。"),
    ("Er trinkt Kaffee.", "Er trinkt keinen Kaffee."),
])
def test_a_different_number_date_amount_name_or_a_negation_is_a_different_fact(a, b):
    assert differ_in_fact(a, b) and differ_in_fact(b, a)


@pytest.mark.parametrize("a, b", [
    (PYTEST, PYTEST_AGAIN),
    ("tests use pytest", "Tests use pytest."),
    ("Mara lives in Lisbon.", "Mara's home is in Lisbon."),
    ("Mara is not vegan.", "Mara isn't vegan."),
    ("会议在三点。", "三点开会。"),
])
def test_rephrasing_the_same_fact_is_not_a_different_fact(a, b):
    assert not differ_in_fact(a, b)


def test_the_copy_kept_is_the_one_the_firewall_trims_last():
    v = text_vector("x")
    vectors = [v, v, v]
    # procedural beats semantic beats episodic, whatever the scores and the input order
    assert {i: d.of for i, d in near_duplicates(vectors, ["x"] * 3, [3, 2, 1], [0.9, 0.9, 0.1]).items()} == \
        {0: 2, 1: 2}
    # in a tier: the higher score, then the earlier input; no score ranks lowest
    assert set(near_duplicates(vectors, ["x"] * 3, [2, 2, 2], [None, 0.2, 0.7])) == {0, 1}
    assert set(near_duplicates(vectors, ["x"] * 3, [2, 2, 2], [0.5, 0.5, 0.5])) == {1, 2}


def test_a_chain_of_near_duplicates_keeps_what_is_not_a_copy_of_a_kept_one():
    def at(deg):
        return [np.cos(np.radians(deg)), np.sin(np.radians(deg))]

    # b is 20° from a and from c; a and c are 40° apart; the threshold is cos 30°
    dropped = near_duplicates([at(0), at(20), at(40)], ["a", "b", "c"], [2, 2, 2], [0.9, 0.5, 0.1],
                              float(np.cos(np.radians(30))))
    assert {i: d.of for i, d in dropped.items()} == {1: 0}  # c repeats only b, which is not sent


def test_precomputed_vectors_spare_the_embedder():
    memories = [MemoryItem("a", PYTEST), MemoryItem("b", PYTEST_AGAIN)]
    result = compile_with("coding", memories, memory_vectors=np.stack([TABLE[PYTEST], TABLE[PYTEST_AGAIN]]))
    assert list(result.ref_map.values()) == ["a"]
    with pytest.raises(EmbeddingError, match="1 rows for 2 texts"):
        compile_with("coding", memories, memory_vectors=np.stack([TABLE[PYTEST]]))


def test_the_threshold_is_an_option_and_an_environment_variable(monkeypatch):
    memories = [MemoryItem("a", PYTEST), MemoryItem("b", PYTEST_AGAIN)]
    cosine = float(TABLE[PYTEST] @ TABLE[PYTEST_AGAIN])
    strict = ContextCompiler.from_profile("coding", 4096, "openai/gpt-4o", semantic_dedup=True,
                                          dedup_threshold=min(cosine + 0.001, 1.0))
    assert len(strict.compile(memories, "q", embed=Embedder(TABLE)).ref_map) == 2
    monkeypatch.setenv("MNEMOSCOPE_DEDUP_COSINE_THRESHOLD", str(min(cosine + 0.001, 1.0)))
    assert len(compile_with("coding", memories, embed=Embedder(TABLE)).ref_map) == 2
    monkeypatch.setenv("MNEMOSCOPE_DEDUP_COSINE_THRESHOLD", "high")
    with pytest.raises(ValueError, match="MNEMOSCOPE_DEDUP_COSINE_THRESHOLD"):
        compile_with("coding", memories, embed=Embedder(TABLE))
    with pytest.raises(ValueError, match="dedup_threshold must be a cosine"):
        ContextCompiler(1000, dedup_threshold=1.5)


def test_a_dropped_duplicate_leaves_its_procedural_place_to_another():
    v = text_vector("skill")
    memories = [MemoryItem(f"p{i}", f"Skill number {chr(97 + i)}.", priority=1, score=1 - i / 10) for i in range(4)]
    memories[1].content = memories[0].content  # a copy of the best skill
    vectors = [v, v, text_vector("c"), text_vector("d")]
    result = compile_with("coding", memories, memory_vectors=vectors)
    assert set(result.ref_map.values()) == {"p0", "p2", "p3"}  # the cap of 3 counts only what is sent


def test_rebudget_keeps_the_duplicates_out():
    memories = [MemoryItem("a", PYTEST), MemoryItem("b", PYTEST_AGAIN), MemoryItem("c", "Dates are ISO 8601.")]
    result = compile_with("coding", memories, embed=Embedder(TABLE))
    for budget in (4096, 300, 60):
        other = result.rebudget(budget)
        assert "b" not in other.ref_map.values()
        assert other.metadata["token_count"] == fresh(other)
        assert [s.record_id for s in other.segments if s.reason == "near_duplicate"] == ["b"]


def test_the_profile_explains_it():
    assert "semantic_dedup = True" in get_profile("coding").explain()
    assert "negation" in get_profile("conversational").explain()


words = st.sampled_from(["alpha", "beta", "gamma", "delta", "Mara", "7", "not", "pytest", "中文", "/x"])
contents = st.lists(words, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(contents, st.sampled_from([1, 2, 3]), st.one_of(st.none(), st.floats(0, 1))),
                max_size=12),
       st.integers(1, 600), st.sampled_from(["coding", "conversational"]))
def test_no_two_copies_are_sent_and_the_count_stays_exact(mems, budget, profile):
    memories = [MemoryItem(f"m{i}", c, priority=t, score=s) for i, (c, t, s) in enumerate(mems)]
    compiler = ContextCompiler.from_profile(profile, budget, "openai/gpt-4o", "Rules.")
    result = compiler.compile(memories, "q", embed=Embedder())
    md = result.metadata
    assert md["token_count"] == fresh(result) == sum(s.tokens for s in result.segments if s.kept)
    if not md["budget_exceeded"]:
        assert md["token_count"] <= md["tokens_budget"] <= budget
    sent = [memories[int(rid[1:])].content for rid in result.ref_map.values()]
    assert len(sent) == len(set(sent))
    offered = {m.content for m in memories}
    deduped = {memories[int(s.record_id[1:])].content for s in result.segments if s.reason == "near_duplicate"}
    assert deduped <= offered and md["memories_deduplicated"] == len(memories) - len(offered)


# -- in the window's preview ---------------------------------------------------------------
ESPRESSO = "Mara takes her espresso coffee without sugar, caffeine first."
ESPRESSO_AGAIN = "Mara drinks her espresso coffee without sugar, caffeine first."


@pytest.fixture
def dup_window(qtbot, qt_settings, tmp_path, monkeypatch):
    pytest.importorskip("PySide6")
    from mnemoscope.store import MemoryStore
    from mnemoscope.ui.main_window import MainWindow
    from support.meaning_doubles import install

    install(monkeypatch)
    store = MemoryStore(str(tmp_path / "d.db"))
    ids = [store.remember(t, dedupe=False).memory.id for t in (ESPRESSO, ESPRESSO_AGAIN)]
    store.remember("The flight to Lisbon leaves at dawn.")
    w = MainWindow(store)
    w.resize(1366, 768)
    w.show()
    qtbot.waitExposed(w)
    yield w, ids
    w.editor.dirty = False
    w.close()
    w.session.close()
    w.deleteLater()


def test_the_preview_shows_which_memory_was_left_out_as_a_duplicate_and_why(dup_window, qtbot):
    window, ids = dup_window
    pv = window.preview
    pv.user_message.setPlainText("How does Mara take her espresso coffee?")
    pv.recompile()
    assert set(ids) <= set(pv.result.ref_map.values())  # minimal: both sent
    assert "near-duplicate" not in pv.meaning.text()
    pv.profile.setCurrentText("coding")
    pv.recompile()
    dropped = pv.result.metadata["semantic_dedup"]["dropped"]
    assert len(dropped) == 1 and {dropped[0]["record_id"], dropped[0]["duplicate_of"]} == set(ids)
    assert dropped[0]["record_id"] not in pv.result.ref_map.values()
    assert "1 near-duplicate not sent" in pv.meaning.text()
    assert f"[Mem:{dropped[0]['ref']}]</a> repeats" in pv.meaning.text()
    bars = [br for br in pv.bars.rects if br.segment.reason == "near_duplicate"]
    assert len(bars) == 1 and bars[0].row == "trimmed"
    described = pv.bars.describe(bars[0])
    assert "not sent (near-duplicate of " + dropped[0]["duplicate_of"] in described
    # a click on the dropped one's citation selects it
    pv.meaning.linkActivated.emit(f"mem:{dropped[0]['record_id']}")
    assert window.session.selected_id == dropped[0]["record_id"]


def test_the_caller_may_say_what_keeps_two_memories_apart():
    memories = [MemoryItem("a", PYTEST), MemoryItem("b", PYTEST_AGAIN)]
    asked = []

    def never_the_same(a, b):
        asked.append((a, b))
        return "the caller says so"

    result = compile_with("coding", memories, embed=Embedder(TABLE), differ=never_the_same)
    assert set(result.ref_map.values()) == {"a", "b"} and asked == [(PYTEST_AGAIN, PYTEST)]
