"""A memory's neighbourhood (app/neighbourhood.py, no Qt): by shared entities and
references, to depth 1-3, the closest first, and a layout that keeps it readable."""

import math

import numpy as np
import pytest
from mnemoscope.neighbourhood import layout, neighbourhood

# m0 names Mara and Tea; m1 Mara; m2 Tea and Mara; m3 Rust (referenced by m1); m4 Rust; m5 alone
ENTITIES = {"m0": ["Mara", "Tea"], "m1": ["Mara"], "m2": ["Tea", "Mara"], "m3": ["Rust"], "m4": ["Rust"], "m5": []}
MEMBERS = {"Mara": ["m0", "m1", "m2"], "Tea": ["m0", "m2"], "Rust": ["m3", "m4"]}
REFERENCES = {"m1": ["m3"], "m3": ["m1"]}
STRENGTH = {m: 0.5 for m in ENTITIES}


def test_depth_one_is_what_shares_an_entity_closest_first():
    g = neighbourhood("m0", ENTITIES, MEMBERS, REFERENCES, STRENGTH, depth=1)
    assert g.memories == ["m0", "m2", "m1"]  # m2 shares two entities, m1 one
    assert g.depth_of == {"m0": 0, "m2": 1, "m1": 1}
    assert g.entities == ["Mara", "Tea"]
    names = g.nodes
    assert {(names[a], names[b]) for a, b in g.mentions} == {
        ("m0", "Mara"), ("m1", "Mara"), ("m2", "Mara"), ("m0", "Tea"), ("m2", "Tea")}


def test_deeper_reaches_through_references_and_draws_the_link():
    g = neighbourhood("m0", ENTITIES, MEMBERS, REFERENCES, STRENGTH, depth=3)
    assert g.depth_of["m3"] == 2 and g.depth_of["m4"] == 3 and "m5" not in g.depth_of
    names = g.nodes
    assert [(names[a], names[b]) for a, b in g.references] == [("m1", "m3")]
    assert "Rust" in g.entities  # it joins m3 and m4


def test_each_depth_is_capped_and_says_how_many_it_left_out():
    entities = {f"n{i}": ["Hub"] for i in range(50)}
    g = neighbourhood("n0", entities, {"Hub": list(entities)}, {}, {f"n{i}": i / 50 for i in range(50)},
                      depth=1, per_depth=(0, 10))
    assert len(g.memories) == 11 and g.more == {1: 39}
    assert g.memories[1] == "n49"  # among equals, the strongest
    with pytest.raises(ValueError, match="depth"):
        neighbourhood("n0", entities, {}, {}, {}, depth=4)


def test_the_layout_puts_the_memory_in_the_middle_and_no_two_nodes_together():
    g = neighbourhood("m0", ENTITIES, MEMBERS, REFERENCES, STRENGTH, depth=3)
    pos = layout(g)
    assert tuple(pos[0]) == (0.0, 0.0)
    gaps = [math.dist(pos[i], pos[j]) for i in range(len(pos)) for j in range(i)]
    assert min(gaps) > 0.3
    # linked nodes sit nearer one another than the average pair
    linked = np.mean([math.dist(pos[a], pos[b]) for a, b in g.edges])
    assert linked < np.mean(gaps)
    assert np.array_equal(layout(g), pos)  # the same every time


def test_a_dragged_node_stays_where_it_was_put():
    g = neighbourhood("m0", ENTITIES, MEMBERS, REFERENCES, STRENGTH, depth=2)
    pos = layout(g)
    pos2 = layout(g, pinned={2: (5.0, -4.0)}, start=pos, iterations=60)
    assert tuple(pos2[2]) == (5.0, -4.0) and tuple(pos2[0]) == (0.0, 0.0)
