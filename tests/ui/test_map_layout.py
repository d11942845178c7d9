"""Where the radial map puts each memory (app/map_layout.py, no Qt): sectors sized by what
they hold, all round the circle; each ring filled, the strongest nearest the centre."""

import math
import random
import zlib

import numpy as np
from mnemoscope.map_layout import (
    RING_INNER,
    ring_outer,
    ring_radii,
    sector_angles,
    sector_layout,
    unit_hashes,
)
from mnemoscope.store.model.memory import LAYERS

TAU = 2 * math.pi


def _arc(start: float, width: float, angle: float) -> bool:
    """``angle`` inside the arc of ``width`` that starts at ``start`` and runs clockwise."""
    return (start - angle) % TAU <= width + 1e-9


def test_sectors_are_sized_by_what_they_hold_and_go_all_round():
    counts = {"topic:cooking": 24_000, "topic:work": 13_000, "topic:pets": 2_500, "entity:mara": 40, "kind:event": 3}
    sectors = sector_layout(counts)
    widths = {g: w for g, (_start, w) in sectors.items()}
    total = sum(counts.values())
    for group in ("topic:cooking", "topic:work", "topic:pets"):
        assert abs(widths[group] / TAU - counts[group] / total) < 0.03, group
    assert widths["topic:cooking"] / widths["topic:work"] > 1.6  # not ten equal sectors
    # the small ones still get a sector a person can see
    assert min(widths.values()) >= 0.02
    # the circle is used: the sectors and the gaps between them add up to it, none overlap
    gaps = TAU - sum(widths.values())
    assert 0 < gaps < 0.1 * TAU
    starts = sorted(((s, w) for s, w in sectors.values()), reverse=True)
    for (s1, w1), (s2, _w2) in zip(starts, starts[1:]):
        assert s1 - w1 >= s2 - 1e-9  # clockwise: each ends before the next starts


def test_sectors_go_clockwise_from_twelve_topics_first_in_order_of_name():
    sectors = sector_layout({"topic:work": 5, "kind:fact": 5, "topic:cooking": 5, "entity:ana": 5})
    order = sorted(sectors, key=lambda g: (math.pi / 2 - sectors[g][0]) % TAU)
    assert order == ["topic:cooking", "topic:work", "entity:ana", "kind:fact"]
    assert abs(sectors["topic:cooking"][0] - math.pi / 2) < 0.05  # the first starts at 12 o'clock


def test_the_same_memories_get_the_same_places_in_any_order():
    rng = random.Random(3)
    ids = [f"m{i}" for i in range(500)]
    groups = [rng.choice(["topic:a", "topic:b", "entity:c"]) for _ in ids]
    angles = dict(zip(ids, sector_angles(ids, groups)))
    order = list(range(len(ids)))
    rng.shuffle(order)
    again = sector_angles([ids[i] for i in order], [groups[i] for i in order])
    assert all(abs(angles[ids[i]] - a) < 1e-12 for i, a in zip(order, again))


def test_a_groups_memories_spread_over_its_whole_sector():
    ids = [f"m{i}" for i in range(300)]
    groups = ["topic:a"] * 200 + ["topic:b"] * 100
    sectors = sector_layout({"topic:a": 200, "topic:b": 100})
    angles = sector_angles(ids, groups)
    for group, (start, width) in sectors.items():
        mine = np.array([a for a, g in zip(angles, groups) if g == group])
        assert all(_arc(start, width, a) for a in mine)
        offsets = np.sort((start - mine) % TAU)
        assert offsets[0] < 0.15 * width and offsets[-1] > 0.85 * width
        assert np.diff(offsets).max() < 0.05 * width  # evenly, no clump and no hole


def test_each_ring_is_filled_strongest_nearest_the_centre():
    rng = np.random.default_rng(1)
    n = 400
    layers = rng.integers(0, 3, n)  # habit, fading, edge
    strengths = np.where(layers == 0, 0.95 + 0.05 * rng.random(n), 0.9 + 0.1 * rng.random(n))  # all fresh
    hashes = unit_hashes([f"m{i}" for i in range(n)])
    radii = ring_radii(layers, strengths, hashes)
    for code in range(3):
        name = LAYERS[code]
        mine = np.flatnonzero(layers == code)
        r = radii[mine]
        inner, outer = RING_INNER[name], ring_outer(name)
        assert r.min() >= inner and r.max() <= outer
        # nearly from one edge of the ring to the other, though every strength is near 1
        assert r.min() - inner < 0.1 * (outer - inner) and outer - r.max() < 0.1 * (outer - inner)
        order = np.argsort(-strengths[mine], kind="stable")
        assert np.all(np.diff(r[order]) >= -1e-12)  # stronger is nearer the centre
        # even over the ring's area: as many inside its middle circle as outside
        middle = math.sqrt((inner ** 2 + outer ** 2) / 2)
        assert abs((r < middle).mean() - 0.5) < 0.05


def test_unit_hashes_are_crc32_of_the_id():
    assert unit_hashes(["abc"])[0] == zlib.crc32(b"abc") / 0xFFFFFFFF
