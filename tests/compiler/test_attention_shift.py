"""Topic shift: the current message's cosine distance from the centroid of recent user
messages, with deterministic vectors and a fake embedder keyed by text."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mnemoscope.compiler import (
    ContextCompiler,
    EmbeddingError,
    MemoryItem,
    compute_attention_shift,
    compute_attention_shift_with_embeddings,
    measure_attention_shift,
    measure_attention_shift_with_embeddings,
)
from mnemoscope.compiler.attention import ATTENTION_SHIFT_THRESHOLD, attention_shift_threshold


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def at_angle(degrees: float) -> np.ndarray:
    r = math.radians(degrees)
    return np.array([math.cos(r), math.sin(r), 0.0], dtype=np.float32)


TESTING = unit(1, 0, 0)
DEPLOY = unit(0, 1, 0)
VECTORS = {
    "What's the best Python testing framework?": unit(1, 0.1, 0),
    "How does pytest discover tests?": unit(1, -0.1, 0),
    "Can pytest run tests in parallel?": TESTING,
    "How do I deploy to Kubernetes?": DEPLOY,
}


class FakeEmbedder:
    def __init__(self, table=VECTORS):
        self.table = table
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


RECENT = ["What's the best Python testing framework?", "How does pytest discover tests?"]


def test_the_references_example_a_change_of_subject_is_a_shift_and_a_follow_up_is_not():
    embed = FakeEmbedder()
    assert compute_attention_shift(RECENT, "How do I deploy to Kubernetes?", embed=embed) is True
    assert compute_attention_shift(RECENT, "Can pytest run tests in parallel?", embed=embed) is False
    shift = measure_attention_shift(RECENT, "How do I deploy to Kubernetes?", embed=embed)
    assert shift.distance == pytest.approx(1.0, abs=1e-6) and shift.compared == 2
    assert embed.calls[0] == [*RECENT, "How do I deploy to Kubernetes?"]  # one batch


def test_the_threshold_is_a_cosine_distance_of_0_35_from_the_centroid():
    assert ATTENTION_SHIFT_THRESHOLD == 0.35 and attention_shift_threshold() == 0.35
    recent = [at_angle(0)]
    # cos 49.5° = 0.649 → distance 0.351; cos 49° = 0.656 → distance 0.344
    assert compute_attention_shift_with_embeddings(recent, at_angle(49.5)) is True
    assert compute_attention_shift_with_embeddings(recent, at_angle(49)) is False
    shift = measure_attention_shift_with_embeddings(recent, at_angle(60))
    assert shift.distance == pytest.approx(0.5, abs=1e-6) and shift.threshold == 0.35


def test_the_centroid_is_of_the_recent_messages_not_the_last_one():
    recent = [at_angle(-40), at_angle(40)]
    # 30° from the last message, 0° from their centroid: no shift
    assert measure_attention_shift_with_embeddings(recent, at_angle(0)).distance == pytest.approx(0, abs=1e-6)
    assert compute_attention_shift_with_embeddings(recent, at_angle(70)) is True  # 70° from the centroid


def test_vectors_need_not_be_unit_length():
    assert compute_attention_shift_with_embeddings([[10, 0, 0], [0.1, 0, 0]], [0, 3, 0]) is True
    assert compute_attention_shift_with_embeddings([[10, 0, 0]], [5, 0.1, 0]) is False


@pytest.mark.parametrize("name", ["MNEMOSCOPE_ATTENTION_SHIFT_COSINE_THRESHOLD",
                                  "LOD_ATTENTION_SHIFT_COSINE_THRESHOLD"])
def test_the_threshold_comes_from_the_environment_under_either_name(monkeypatch, name):
    monkeypatch.setenv(name, "0.6")
    assert compute_attention_shift_with_embeddings([at_angle(0)], at_angle(60)) is False  # 0.5 < 0.6
    monkeypatch.setenv(name, "0.4")
    assert compute_attention_shift_with_embeddings([at_angle(0)], at_angle(60)) is True
    monkeypatch.setenv(name, "wide")
    with pytest.raises(ValueError, match=name):
        attention_shift_threshold()
    monkeypatch.setenv(name, "3")
    with pytest.raises(ValueError, match="between 0 and 2"):
        attention_shift_threshold()


def test_our_name_wins_over_the_references(monkeypatch):
    monkeypatch.setenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", "0.9")
    monkeypatch.setenv("MNEMOSCOPE_ATTENTION_SHIFT_COSINE_THRESHOLD", "0.2")
    assert attention_shift_threshold() == 0.2


def test_an_explicit_threshold_wins_and_is_checked():
    assert compute_attention_shift_with_embeddings([at_angle(0)], at_angle(60), threshold=0.6) is False
    with pytest.raises(TypeError, match="threshold must be a number"):
        compute_attention_shift_with_embeddings([at_angle(0)], at_angle(60), threshold="0.3")
    with pytest.raises(ValueError, match="between 0 and 2"):
        compute_attention_shift_with_embeddings([at_angle(0)], at_angle(60), threshold=-0.1)


def test_no_history_is_no_shift_and_embeds_nothing():
    embed = FakeEmbedder()
    assert compute_attention_shift([], "How do I deploy to Kubernetes?", embed=embed) is False
    assert measure_attention_shift(["  ", ""], "How do I deploy to Kubernetes?", embed=embed) is None
    assert measure_attention_shift_with_embeddings(np.zeros((0, 3)), DEPLOY) is None
    assert embed.calls == []


def test_only_the_last_few_user_messages_count():
    table = {**VECTORS, "old": DEPLOY}
    embed = FakeEmbedder(table)
    recent = ["old"] + [RECENT[0], RECENT[1]] * 3  # "old" is six messages back
    assert compute_attention_shift(recent, "Can pytest run tests in parallel?", embed=embed, window=5) is False
    assert "old" not in embed.calls[-1]
    assert compute_attention_shift(recent, "Can pytest run tests in parallel?", embed=embed, window=7) is False
    assert "old" in embed.calls[-1]


def test_a_zero_vector_is_a_clear_error():
    with pytest.raises(EmbeddingError, match="zero vector"):
        compute_attention_shift_with_embeddings([at_angle(0)], [0, 0, 0])
    with pytest.raises(EmbeddingError, match="row 1 is a zero vector"):
        compute_attention_shift_with_embeddings([at_angle(0), [0, 0, 0]], at_angle(10))


def test_recent_messages_that_cancel_out_share_no_subject():
    shift = measure_attention_shift_with_embeddings([at_angle(0), at_angle(180)], at_angle(0))
    assert shift.distance == 1.0 and shift.shifted


def test_mismatched_dimensions_name_both():
    with pytest.raises(EmbeddingError, match="dimension 3 and the current message's 4"):
        compute_attention_shift_with_embeddings([at_angle(0)], [1, 0, 0, 0])


def test_an_embedder_that_answers_the_wrong_shape_or_garbage_is_a_clear_error():
    with pytest.raises(EmbeddingError, match="2 rows for 3 texts"):
        compute_attention_shift(RECENT, "x", embed=lambda texts: np.ones((2, 3)))
    with pytest.raises(EmbeddingError, match="nan"):
        compute_attention_shift(RECENT, "x", embed=lambda texts: np.full((3, 3), np.nan))
    with pytest.raises(TypeError, match="array of numbers"):
        compute_attention_shift(RECENT, "x", embed=lambda texts: [["a", "b"]] * 3)
    with pytest.raises(TypeError, match="embed must be a callable"):
        compute_attention_shift(RECENT, "x", embed="minilm")
    with pytest.raises(TypeError, match="recent_messages must be a list of str"):
        compute_attention_shift("one message", "x", embed=FakeEmbedder())
    with pytest.raises(TypeError, match="found a int"):
        compute_attention_shift(["a", 3], "x", embed=FakeEmbedder())


# -- in a compile ------------------------------------------------------------------------
HISTORY = [
    {"role": "user", "content": RECENT[0]},
    {"role": "assistant", "content": "pytest."},
    {"role": "user", "content": [{"type": "text", "text": RECENT[1]}]},
    {"role": "assistant", "content": "It collects test_*.py."},
]
TABLE = {**VECTORS, "Use pytest for tests.": unit(1, 0, 0.2), "Deploys go through Helm.": unit(0, 1, 0.2)}


def compiled(user: str, **kw):
    compiler = ContextCompiler(max_tokens=2048, model_id="openai/gpt-4o", core_content="Rules.")
    memories = [MemoryItem("a", "Use pytest for tests."), MemoryItem("b", "Deploys go through Helm.")]
    return compiler.compile(memories, user, HISTORY, **kw)


def test_the_compile_reports_the_shift_when_given_an_embedder():
    md = compiled("How do I deploy to Kubernetes?", embed=FakeEmbedder(TABLE)).metadata
    assert md["attention_shift"] == {"shifted": True, "distance": pytest.approx(1.0, abs=1e-6),
                                     "threshold": 0.35, "recent_messages": 2}
    md = compiled("Can pytest run tests in parallel?", embed=FakeEmbedder(TABLE)).metadata
    assert md["attention_shift"]["shifted"] is False


def test_without_an_embedder_the_compile_says_nothing_of_a_shift():
    assert "attention_shift" not in compiled("How do I deploy to Kubernetes?").metadata


def test_a_first_message_has_no_shift_to_report():
    compiler = ContextCompiler(max_tokens=2048)
    md = compiler.compile([], "How do I deploy to Kubernetes?", embed=FakeEmbedder(TABLE)).metadata
    assert md["attention_shift"] is None


def test_the_shift_does_not_change_the_prompt():
    plain = compiled("How do I deploy to Kubernetes?")
    shifted = compiled("How do I deploy to Kubernetes?", embed=FakeEmbedder(TABLE))
    assert shifted.messages == plain.messages and shifted.ref_map == plain.ref_map


# -- in the window's preview ---------------------------------------------------------------
@pytest.fixture
def preview_window(qtbot, qt_settings, tmp_path, monkeypatch):
    pytest.importorskip("PySide6")
    from mnemoscope.store import MemoryStore
    from mnemoscope.ui.main_window import MainWindow
    from support.meaning_doubles import install

    install(monkeypatch)
    store = MemoryStore(str(tmp_path / "p.db"))
    for text in ("Mara takes her espresso without sugar.", "The borrow checker rejects the second reference.",
                 "The flight to Lisbon leaves at dawn."):
        store.remember(text)
    from support.helpers import closing_window

    with closing_window(MainWindow(store)) as w:
        w.resize(1366, 768)
        w.show()
        qtbot.waitExposed(w)
        yield w


def test_the_preview_says_when_the_message_changes_the_subject(preview_window, qtbot):
    pv = preview_window.preview
    pv.history.set_messages([{"role": "user", "content": "Is the borrow checker happy with cargo test?"},
                             {"role": "assistant", "content": "Yes."}])
    pv.user_message.setPlainText("Which flight goes to Lisbon?")
    pv.recompile()
    assert pv.result.metadata["attention_shift"]["shifted"] is True
    assert pv.meaning.isVisibleTo(pv) and "Topic shift" in pv.meaning.text()
    distance = pv.result.metadata["attention_shift"]["distance"]
    assert f"cosine distance {distance:.2f} from the last user message" in pv.meaning.text()
    pv.user_message.setPlainText("And does the borrow checker know lifetime rules?")
    pv.recompile()
    assert "Same subject" in pv.meaning.text() and "Topic shift" not in pv.meaning.text()


def test_an_embedder_that_fails_leaves_the_compile_working_and_says_so(preview_window, monkeypatch):
    # The store's recall needs the embedder too and reports its own error; here the
    # embedder breaks between the recall and the compile, as a model or endpoint can.
    from mnemoscope.bridge import PreviewRequest, compile_for, recall_for
    from mnemoscope.ui.panes.preview_text import meaning_html
    from support.meaning_doubles import KeywordEmbedder

    store = preview_window.session.store
    request = PreviewRequest(user_message="Which flight goes to Lisbon?",
                             history=[{"role": "user", "content": "Is cargo fast?"}])
    _hits, items = recall_for(store, request)

    def broken(self, texts):
        raise RuntimeError("model file missing")

    monkeypatch.setattr(KeywordEmbedder, "embed", broken)
    result = compile_for(store, request, items)
    assert result.ref_map and "attention_shift" not in result.metadata
    assert "model file missing" in result.metadata["meaning_unavailable"]
    assert "Meaning unavailable" in meaning_html(result) and "model file missing" in meaning_html(result)
