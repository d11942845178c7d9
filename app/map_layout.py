"""Where each memory sits on the radial map: pure geometry, no Qt.

Rings from the centre out: habit, fading, edge (archived outside them, hidden by
default). Inside its ring a memory's distance follows its strength (stronger is
nearer). Angles are stable: a memory's group (its topic, else its first entity, else
its kind) picks a sector by a hash of the group's name alone, and the memory's own id
picks its place inside the sector, so a memory keeps its angle across ticks, edits and
the arrival of other memories, and a dot that slides outward is a memory that is fading.
The habit and edge thresholds come from the store's decay config.
"""

from __future__ import annotations

import math
import zlib

from mnemoscope.store.model import LAYERS

RING_INNER = {"habit": 0.15, "fading": 1.0, "edge": 2.0, "archived": 3.0}
RING_WIDTH = 1.0
ENTITY_ORBIT = 4.35
SECTOR_SPREAD = 0.42  # radians a group's memories spread over


def _unit_hash(text: str) -> float:
    return zlib.crc32(text.encode("utf-8")) / 0xFFFFFFFF


def group_key(entities: list[str], topic: str, kind: str) -> str:
    """What a memory sits next to: its topic, else its first entity, else its kind."""
    if topic:
        return "topic:" + topic.lower()
    if entities:
        return "entity:" + sorted(entities, key=str.lower)[0].lower()
    return "kind:" + kind


def sector_centre(group: str) -> float:
    """The angle of a group's sector, from its name only."""
    return 2 * math.pi * _unit_hash(group)


def group_label(group: str) -> str:
    """A group key as a person reads it: the topic, entity or kind name."""
    return group.split(":", 1)[-1]


def angle_for(memory_id: str, group: str) -> float:
    """The group's sector and the memory's place in it (from its id)."""
    offset = (_unit_hash(memory_id) - 0.5) * SECTOR_SPREAD
    return (sector_centre(group) + offset) % (2 * math.pi)


def ring_middle(layer: str) -> float:
    """Halfway across a layer's ring: where the density view writes a sector's count."""
    return (RING_INNER[layer] + ring_outer(layer)) / 2


def ring_outer(layer: str) -> float:
    """The radius of the circle drawn round a layer's ring: where the next ring begins."""
    return RING_INNER[LAYERS[LAYERS.index(layer) + 1]]


def orbit_for(entity: str) -> float:
    """An entity's distance from the centre: one of three orbits, picked by its name, so
    neighbouring diamonds are staggered and no entity moves when another one arrives."""
    return ENTITY_ORBIT + int(_unit_hash("orbit:" + entity) * 3) * 0.42


def radius_for(layer: str, strength: float, habit_min: float, edge_below: float) -> float:
    """Distance from the centre: the ring of the layer, nearer its inner edge when stronger."""
    s = max(0.0, min(1.0, strength))
    if layer == "habit":
        depth = (1.0 - s) / max(1.0 - habit_min, 1e-6)
        return RING_INNER["habit"] + min(depth, 1.0) * (RING_WIDTH - RING_INNER["habit"]) * 0.95
    if layer == "edge":
        depth = (edge_below - s) / edge_below
    elif layer == "archived":
        depth = 1.0 - s
    else:
        depth = (1.0 - s) / (1.0 - edge_below)
    return RING_INNER.get(layer, 1.0) + max(0.0, min(depth, 1.0)) * RING_WIDTH * 0.95
