"""The map at any size: entities spread round the map instead of piling into one arc, and
Fit makes what is drawn fill the pane."""

import json
import math
import random

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402

NAMES = "Mara Theo Rust Garden Tea Deploy Lighthouse Climbing Mandarin Bank Cat Meeting Review".split()


@pytest.fixture
def spread_window(qtbot, qt_settings, tmp_path):
    """1,200 memories whose entities are each mentioned all round the map (random topics)."""
    from mnemoscope.ui.main_window import MainWindow

    rng = random.Random(5)
    path = str(tmp_path / "spread.db")
    with MemoryStore(path) as s:
        s.import_jsonl("\n".join(json.dumps({
            "id": f"s{i:05d}", "text": " ".join(rng.choice(NAMES).lower() for _ in range(8)) + f" {i}",
            "topic": f"topic{rng.randrange(25)}", "entities": [rng.choice(NAMES)]}) for i in range(1200)))
    w = MainWindow(MemoryStore(path))
    w.resize(1440, 900)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.session.close()


def test_entities_mentioned_all_round_do_not_pile_into_one_arc(spread_window):
    angles = sorted(math.atan2(y, x) % (2 * math.pi) for x, y in spread_window.map.entity_pos.values())
    assert len(angles) == len(NAMES)
    gaps = [b - a for a, b in zip(angles, [*angles[1:], angles[0] + 2 * math.pi])]
    assert max(gaps) < math.radians(120)


def test_fit_makes_what_is_drawn_fill_the_pane(spread_window, qtbot):
    m = spread_window.map
    m.fit_view()
    qtbot.wait(20)
    (x0, x1), (y0, y1) = m.plot.getViewBox().viewRange()
    xs = [*m._visible_xy[0], *(p[0] for p in m.entity_pos.values())]
    ys = [*m._visible_xy[1], *(p[1] for p in m.entity_pos.values())]
    width, height = max(xs) - min(xs), max(ys) - min(ys)
    # the limiting side of what is drawn takes most of the view's side
    assert max(width / (x1 - x0), height / (y1 - y0)) > 0.8


def _pixels(m, x: float, y: float):
    from PySide6.QtCore import QPointF

    return m.plot.mapFromScene(m.plot.getViewBox().mapViewToScene(QPointF(x, y)))


@pytest.fixture
def gathered_window(qtbot, qt_settings, tmp_path):
    """A memory as lived ones are: one big topic whose memories mention 40 people, each only
    there (so all 40 belong by the same sector), and smaller topics beside it."""
    from mnemoscope.ui.main_window import MainWindow

    rng = random.Random(7)
    people = [f"Person{i:02d}" for i in range(40)]
    path = str(tmp_path / "gathered.db")
    lines = []
    for i in range(1500):
        topic = "cooking" if i % 2 else f"topic{i % 7}"
        entities = [rng.choice(people)] if topic == "cooking" else []
        lines.append(json.dumps({"id": f"g{i:05d}", "text": f"note {i} on {topic}", "topic": topic,
                                 "entities": entities}))
    with MemoryStore(path) as s:
        s.import_jsonl("\n".join(lines))
    w = MainWindow(MemoryStore(path))
    w.resize(1366, 768)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.session.close()


def test_entities_of_one_sector_stand_apart_instead_of_piling(gathered_window, qtbot):
    m = gathered_window.map
    m.fit_view()
    qtbot.wait(20)
    assert len(m.entity_pos) == 40
    at = [_pixels(m, x, y) for x, y in m.entity_pos.values()]
    closest = min(math.hypot(a.x() - b.x(), a.y() - b.y()) for i, a in enumerate(at) for b in at[i + 1:])
    assert closest >= 10, closest  # a diamond is ~10-20 px: two never cover each other
    # still by their memories: every one within a quarter turn of the sector they are mentioned in
    cooking = [d for d in m.dots if d.group == "topic:cooking"]
    xs = [m._positions[d.id][0] for d in cooking]
    ys = [m._positions[d.id][1] for d in cooking]
    centre = math.atan2(sum(ys), sum(xs))
    for x, y in m.entity_pos.values():
        turn = abs((math.atan2(y, x) - centre + math.pi) % (2 * math.pi) - math.pi)
        assert turn < math.pi / 2, turn


def test_the_memory_disc_takes_most_of_the_fitted_map(spread_window, qtbot):
    from mnemoscope.map_layout import ring_outer

    m = spread_window.map
    m.fit_view()
    qtbot.wait(20)
    edge = ring_outer("edge")
    diameter = _pixels(m, edge, 0).x() - _pixels(m, -edge, 0).x()
    pane = m.plot.viewport().rect()
    assert diameter >= 0.7 * min(pane.width(), pane.height()), (diameter, pane)


def test_spreading_on_the_circle_keeps_apart_keeps_order_and_leaves_lone_ones_be():
    import numpy as np
    from mnemoscope.map_layout import spread_on_circle

    def arcs(a):
        s = np.sort(a)
        return np.diff(np.append(s, s[0] + 2 * math.pi))

    piled = spread_on_circle([1.0] * 10, 0.1)
    assert arcs(piled).min() >= 0.1 - 1e-9 and abs(np.angle(np.exp(1j * piled).mean()) - 1.0) < 1e-6
    across = spread_on_circle([6.25, 0.02, 6.27, 0.0], 0.1)  # a pile across the seam at 0
    assert arcs(across).min() >= 0.1 - 1e-9 and max(abs(np.angle(np.exp(1j * across)))) < 0.2
    lone = [0.5, 2.0, 4.0]
    assert np.allclose(spread_on_circle(lone, 0.1), lone)
    crowded = spread_on_circle(np.linspace(0, 0.01, 100), 0.2)  # more than the circle holds at 0.2
    assert arcs(crowded).min() >= 2 * math.pi / 100 - 1e-6
    three = spread_on_circle([0.3, 0.1, 0.2], 0.5)  # round the circle in the same order
    assert list(np.argsort((three - 0.2 + math.pi) % (2 * math.pi))) == [1, 2, 0]


@pytest.fixture
def topics_window(qtbot, qt_settings, tmp_path, monkeypatch):
    """12 topics of very unequal size (as a lived memory has), drawn as density."""
    from mnemoscope.ui.main_window import MainWindow
    from mnemoscope.ui.panes import memory_map

    monkeypatch.setattr(memory_map, "DENSITY_DOTS", 500)
    sizes = [400, 260, 200, 150, 120, 100, 80, 70, 60, 50, 45, 40]
    path = str(tmp_path / "topics.db")
    lines, n = [], 0
    for t, size in enumerate(sizes):
        for _ in range(size):
            lines.append(json.dumps({"id": f"t{n:05d}", "text": f"note {n}", "topic": f"topic{t:02d}",
                                     "recall_count": n % 7}))
            n += 1
    with MemoryStore(path) as s:
        s.import_jsonl("\n".join(lines))
    w = MainWindow(MemoryStore(path))
    w.resize(1366, 768)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.session.close()


def test_the_density_view_labels_most_topics_once_each(topics_window, qtbot):
    from support.helpers import settle

    settle(qtbot, topics_window)
    m = topics_window.map
    m.fit_view()
    qtbot.wait(20)
    assert m.dense
    texts = [m.sector_labels[k].textItem.toPlainText() for k in m.labelled_sectors]
    topics = [t.split(" · ")[0] for t in texts]
    assert len(topics) == len(set(topics)), texts  # one label per topic, not one per ring
    assert len(topics) >= 8, texts
    assert "topic00 · 400" in texts  # the whole topic's count, the biggest first


def _dot_angles(m, group: str):
    return [math.atan2(m._positions[d.id][1], m._positions[d.id][0]) for d in m.dots if d.group == group]


def _extent(angles) -> float:
    """The smallest arc holding every angle."""
    a = sorted(x % (2 * math.pi) for x in angles)
    gaps = [b - a_ for a_, b in zip(a, [*a[1:], a[0] + 2 * math.pi])]
    return 2 * math.pi - max(gaps)


def test_each_topics_sector_is_as_wide_as_what_it_holds(topics_window, qtbot):
    """Issue 34: ten equal topics filled half the disc; now all round, each by its share."""
    from support.helpers import settle

    settle(qtbot, topics_window)
    m = topics_window.map
    sizes = {f"topic:topic{t:02d}": n for t, n in enumerate([400, 260, 200, 150, 120, 100, 80, 70, 60, 50, 45, 40])}
    total = sum(sizes.values())
    extents = {group: _extent(_dot_angles(m, group)) for group in sizes}
    covered = sum(extents.values())
    for group, n in sizes.items():
        assert abs(extents[group] / covered - n / total) < 0.01, (group, extents[group])
    assert covered > 0.8 * 2 * math.pi  # the whole circle, less the gaps and insets


def test_the_sector_labels_stay_put_between_two_redraws_of_the_same_memories(topics_window, qtbot):
    from support.helpers import settle

    settle(qtbot, topics_window)
    m = topics_window.map
    m.fit_view()
    qtbot.wait(20)

    def placed():
        return {k: (m.sector_labels[k].pos().x(), m.sector_labels[k].pos().y(),
                    m.sector_labels[k].textItem.toPlainText()) for k in m.labelled_sectors}

    first = placed()
    m.redraw()
    assert placed() == first
    m.reload()  # the same memories read again
    qtbot.wait(20)
    assert placed() == first
    assert len(first) >= 10


def test_a_crowded_maps_cells_have_their_memories_kind_colour(qtbot, qt_settings, tmp_path, monkeypatch):
    from mnemoscope.ui.main_window import MainWindow
    from mnemoscope.ui.panes import memory_map
    from mnemoscope.ui.theme import KIND_COLOURS
    from PySide6.QtGui import QColor
    from support.helpers import settle

    monkeypatch.setattr(memory_map, "DENSITY_DOTS", 300)
    path = str(tmp_path / "kinds.db")
    lines = [json.dumps({"id": f"k{i:04d}", "text": f"note {i}", "topic": "a" if i % 2 else "b",
                         "kind": "event" if i % 2 else "fact", "recall_count": 9}) for i in range(1200)]
    with MemoryStore(path) as s:
        s.import_jsonl("\n".join(lines))
    w = MainWindow(MemoryStore(path))
    w.resize(1366, 768)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    settle(qtbot, w)
    m = w.map
    m.fit_view()
    qtbot.wait(20)
    assert m.dense and m.density_legend.isVisible() and "commonest kind" in m.density_legend.text()
    image = m.density.image
    drawn = {tuple(int(v) for v in px[:3]) for px in image.reshape(-1, 4) if px[3] > 0}
    colours = {k: QColor(c).getRgb()[:3] for k, c in KIND_COLOURS.items()}
    assert colours["event"] in drawn and colours["fact"] in drawn
    assert drawn <= set(colours.values())
    # every other sector a shade lighter, so a sector reads by its edges as a pie's wedge
    pixels = image.reshape(-1, 4)
    alpha = {kind: pixels[[tuple(int(v) for v in px[:3]) == colours[kind] and px[3] > 0 for px in pixels]][:, 3].mean()
             for kind in ("event", "fact")}
    ratio = min(alpha.values()) / max(alpha.values())
    assert 0.6 < ratio < 0.85, alpha
    w.session.close()
