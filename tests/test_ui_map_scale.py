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


def test_the_density_view_has_a_perceptual_scale_and_a_legend_in_both_themes(spread_window, qtbot, monkeypatch):
    from mnemoscope.ui import memory_map

    monkeypatch.setattr(memory_map, "DENSITY_DOTS", 500)
    w = spread_window
    for theme in ("light", "dark"):
        w.set_theme(theme)
        w.map.fit_view()
        qtbot.wait(20)
        assert w.map.dense and w.map.density_legend.isVisible()
        assert w.map.density_legend.most > 1
        table = memory_map.density_table(theme == "dark")
        lightness = [0.3 * r + 0.59 * g + 0.11 * b for r, g, b, _a in table[::51].tolist()]
        # one-way from the background: few memories look like it, many stand out
        assert (lightness == sorted(lightness, reverse=theme == "light"))
        assert abs(lightness[-1] - lightness[0]) > 120
        image = w.map.density.image
        assert image[..., 3].max() == 255 and (image[..., 3] == 0).any()
