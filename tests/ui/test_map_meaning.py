"""The map by meaning: angles from the memories' vectors (app/map_layout.py), on
synthetic clustered vectors, and the map's toggle that uses them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mnemoscope.map_layout import MEANING_SAMPLE, meaning_angles

TAU = 2 * math.pi


def arc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angular distance, on the circle."""
    d = np.mod(np.asarray(a) - np.asarray(b), TAU)
    return np.minimum(d, TAU - d)


def clusters(n_per: int, k: int = 5, dim: int = 48, spread: float = 0.15, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, dim))
    rows, labels = [], []
    for c in range(k):
        rows.append(centres[c] + spread * rng.standard_normal((n_per, dim)))
        labels += [c] * n_per
    vectors = np.vstack(rows)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    order = rng.permutation(len(labels))  # no cluster arrives in one run
    return [f"mem-{i:05d}" for i in range(len(labels))], vectors[order].astype(np.float32), np.array(labels)[order]


def circular_spread(angles: np.ndarray) -> float:
    return 1 - abs(np.exp(1j * angles).mean())


def test_memories_that_mean_similar_things_sit_together():
    ids, vectors, labels = clusters(40)
    angles = meaning_angles(ids, vectors)
    assert angles.shape == (200,) and ((angles >= 0) & (angles < TAU)).all()
    within = np.mean([circular_spread(angles[labels == c]) for c in range(5)])
    assert within < 0.05 < circular_spread(angles)  # each cluster tight, the whole map spread round
    # a memory's nearest neighbour on the circle usually means what it means
    near = [np.argsort(arc(angles, angles[i]))[1] for i in range(len(ids))]
    assert np.mean(labels[near] == labels) > 0.9


def test_adding_one_memory_moves_the_others_by_little():
    ids, vectors, _ = clusters(40, seed=1)
    before = meaning_angles(ids, vectors)
    extra = vectors[3] + 0.05 * np.random.default_rng(9).standard_normal(vectors.shape[1])
    after = meaning_angles([*ids, "mem-new"], np.vstack([vectors, extra]),
                           previous=dict(zip(ids, before.tolist())))
    assert arc(after[:-1], before).max() < 1e-9
    assert arc(after[-1:], before[3:4])[0] < 0.05  # the new one sits by the memory it repeats


def test_an_import_fits_the_plane_again_but_keeps_the_map_from_turning():
    ids, vectors, labels = clusters(40, seed=5)
    old = 150  # the first 150 were on the map; 50 arrive at once
    before = meaning_angles(ids[:old], vectors[:old])
    after = meaning_angles(ids, vectors, previous=dict(zip(ids[:old], before.tolist())))
    assert np.mean([circular_spread(after[labels == c]) for c in range(5)]) < 0.05
    assert np.median(arc(after[:old], before)) < 0.3


def test_a_refit_that_comes_out_mirrored_or_turned_is_put_back():
    ids, vectors, _ = clusters(30, seed=2)
    before = meaning_angles(ids, vectors)
    previous = dict(zip(ids, np.mod(-before + 1.0, TAU).tolist()))  # as if last time was flipped and turned
    again = meaning_angles(ids, vectors, previous=previous)
    assert arc(again, np.array(list(previous.values()))).max() < 1e-6


def test_without_a_previous_arrangement_the_angles_are_deterministic():
    ids, vectors, _ = clusters(20, seed=3)
    assert np.array_equal(meaning_angles(ids, vectors), meaning_angles(ids, vectors.copy()))


def test_a_large_map_fits_its_plane_on_a_sample_that_one_arrival_barely_changes(monkeypatch):
    monkeypatch.setattr("mnemoscope.map_layout.MEANING_SAMPLE", 100)
    ids, vectors, labels = clusters(80, seed=4)  # 400 memories, plane fitted on 100
    before = meaning_angles(ids, vectors)
    assert np.mean([circular_spread(before[labels == c]) for c in range(5)]) < 0.05
    again = meaning_angles([*ids, "x"], np.vstack([vectors, vectors[:1]]))  # a refit, as on opening
    assert np.mean([circular_spread(again[:-1][labels == c]) for c in range(5)]) < 0.05
    assert MEANING_SAMPLE >= 1000


def test_small_and_bad_inputs():
    assert meaning_angles([], np.zeros((0, 4))).shape == (0,)
    assert meaning_angles(["a"], [[1.0, 0.0]]).tolist() == [0.0]
    assert meaning_angles(["a"], [[1.0, 0.0]], previous={"a": 2.0}).tolist() == [2.0]
    two = meaning_angles(["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    assert arc(two[:1], two[1:])[0] == pytest.approx(math.pi)  # two memories: opposite each other
    with pytest.raises(ValueError, match="one row per memory: 2 ids"):
        meaning_angles(["a", "b"], [[1.0, 0.0]])
    with pytest.raises(ValueError, match="nan"):
        meaning_angles(["a", "b"], [[1.0, np.nan], [0.0, 1.0]])


# -- the map's toggle ----------------------------------------------------------------------
MEANINGS = {
    "drinks": ["Mara takes her espresso without sugar.", "Theo switched to oat latte.",
               "Priya drinks green tea after lunch."],
    "code": ["The borrow checker rejects the second mutable reference.", "Cargo builds the workspace in CI.",
             "Lifetime elision covers most of the parser."],
    "travel": ["The flight to Lisbon leaves at dawn.", "Book the hotel near the Porto station.",
               "The train from the airport takes forty minutes."],
}


@pytest.fixture
def meaning_map(qtbot, qt_settings, tmp_path, monkeypatch):
    pytest.importorskip("PySide6")
    from mnemoscope.store import MemoryStore
    from mnemoscope.ui.panes.memory_map import RadialMap
    from mnemoscope.ui.session import StoreSession
    from support.meaning_doubles import install

    install(monkeypatch)
    store = MemoryStore(str(tmp_path / "m.db"))
    ids = {}
    for group, texts in MEANINGS.items():
        for i, text in enumerate(texts):  # every memory its own topic: no two share a sector
            ids[text] = store.remember(text, topic=f"{group}-topic-{i}").memory.id
    session = StoreSession(store)
    view = RadialMap(session)
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    view.reload()
    yield view, ids
    session.close()


def group_angles(view, ids):
    return {g: np.array([view._angles[view.dot_index[ids[t]]] for t in texts]) for g, texts in MEANINGS.items()}


def test_by_meaning_similar_memories_sit_together_without_a_shared_topic(meaning_map):
    view, ids = meaning_map
    assert view.meaning_action.isEnabled()
    topic = group_angles(view, ids)
    view.meaning_action.trigger()
    assert view.by_meaning
    meaning = group_angles(view, ids)
    assert max(circular_spread(a) for a in meaning.values()) < 0.05
    assert min(circular_spread(a) for a in topic.values()) > 0.05  # by topic the same memories lie apart
    assert "arranged by meaning" in view.caption.text()
    view.meaning_action.trigger()  # and back to the topics' sectors
    assert not view.by_meaning and all(np.allclose(topic[g], a) for g, a in group_angles(view, ids).items())
    assert "arranged by meaning" not in view.caption.text()


def test_a_memory_added_by_meaning_moves_no_other_and_joins_its_kind(meaning_map):
    view, ids = meaning_map
    view.set_by_meaning(True)
    before = {mid: view._angles[view.dot_index[mid]] for mid in ids.values()}
    new = view.session.store.remember("A double espresso, no milk.", topic="mornings").memory.id
    view.session.notify({new})
    after = {mid: view._angles[view.dot_index[mid]] for mid in ids.values()}
    assert after == before
    drinks = np.array([before[ids[t]] for t in MEANINGS["drinks"]])
    assert arc(np.array([view._angles[view.dot_index[new]]]), drinks).min() < 0.1


def test_the_next_session_starts_from_the_last_arrangement_so_a_memory_added_meanwhile_moves_no_other(
        meaning_map, qtbot):
    from mnemoscope.ui.panes.memory_map import RadialMap
    from mnemoscope.ui.session import StoreSession

    view, ids = meaning_map
    view.set_by_meaning(True)
    before = {mid: view._angles[view.dot_index[mid]] for mid in ids.values()}
    path = view.session.store.path
    view.session.close()  # the window is closed; an agent remembers one more thing
    from mnemoscope.store import MemoryStore

    with MemoryStore(path) as store:
        new = store.remember("A double espresso, no milk.", topic="mornings").memory.id
    session = StoreSession(MemoryStore(path))
    again = RadialMap(session)
    qtbot.addWidget(again)
    again.resize(900, 700)
    again.show()
    again.reload()
    again.set_by_meaning(True)
    try:
        after = {mid: again._angles[again.dot_index[mid]] for mid in ids.values()}
        moved = arc(np.array(list(after.values())), np.array(list(before.values())))
        assert moved.max() < 1e-9, moved  # a fresh fit of the plane would have moved them
        drinks = np.array([before[ids[t]] for t in MEANINGS["drinks"]])
        assert arc(np.array([again._angles[again.dot_index[new]]]), drinks).min() < 0.1
    finally:
        session.close()


def test_memories_without_a_vector_keep_their_topic_and_the_caption_says_so(meaning_map, monkeypatch):
    from mnemoscope.store import MemoryStore

    view, ids = meaning_map
    topic = group_angles(view, ids)
    monkeypatch.setattr(MemoryStore, "vectors", lambda self, ids=None: ([], np.zeros((0, 16))))
    view.set_by_meaning(True)
    assert all(np.allclose(topic[g], a) for g, a in group_angles(view, ids).items())
    assert "9 without a vector, by topic" in view.caption.text()


def test_the_view_menu_holds_the_toggle(window):
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    assert window.map.meaning_action in menus["View"].actions()
    assert window.map.meaning_action.isCheckable()
