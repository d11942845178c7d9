"""Where each memory sits on the radial map: pure geometry, no Qt.

Rings from the centre out: habit, fading, edge (archived outside them, hidden by
default). Inside its ring a memory's distance follows its strength (stronger is
nearer). Angles are stable: a memory's group (its first entity, else its topic, else
its kind) picks a sector by a hash of the group's name, and the memory's own id picks
its place inside the sector, so a memory keeps its angle across ticks and edits and a
dot that slides outward is a memory that is fading.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

RING_ORDER = ("habit", "fading", "edge", "archived")
RING_INNER = {"habit": 0.15, "fading": 1.0, "edge": 2.0, "archived": 3.0}
RING_WIDTH = 1.0
ENTITY_ORBIT = 4.35
SECTOR_SPREAD = 0.42  # radians a group's memories spread over
HABIT_MIN = 0.5
EDGE_BELOW = 0.18


def _unit_hash(text: str) -> float:
    return zlib.crc32(text.encode("utf-8")) / 0xFFFFFFFF


def group_key(entities: list[str], topic: str, kind: str) -> str:
    """What a memory sits next to: its topic, else its first entity, else its kind."""
    if topic:
        return "topic:" + topic.lower()
    if entities:
        return "entity:" + sorted(entities, key=str.lower)[0].lower()
    return "kind:" + kind


def sector_centres(groups: Iterable[str]) -> dict[str, float]:
    """Evenly spaced sector centres for the groups present, in name order: ticks and
    edits that keep a memory's group keep its angle."""
    names = sorted(set(groups))
    step = 2 * math.pi / max(len(names), 1)
    return {g: i * step for i, g in enumerate(names)}


def angle_for(memory_id: str, group: str, centres: dict[str, float] | None = None) -> float:
    if centres and group in centres:
        centre = centres[group]
        spread = min(SECTOR_SPREAD * 2, 0.8 * 2 * math.pi / len(centres))
    else:
        centre = 2 * math.pi * _unit_hash(group)
        spread = SECTOR_SPREAD
    offset = (_unit_hash(memory_id) - 0.5) * spread
    return (centre + offset) % (2 * math.pi)


def radius_for(layer: str, strength: float, habit_min: float = HABIT_MIN, edge_below: float = EDGE_BELOW) -> float:
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


@dataclass(frozen=True)
class Placement:
    x: float
    y: float
    angle: float
    radius: float


def place(memory_id: str, group: str, layer: str, strength: float, rotation: float = 0.0,
          centres: dict[str, float] | None = None) -> Placement:
    a = angle_for(memory_id, group, centres) + rotation
    r = radius_for(layer, strength)
    return Placement(r * math.cos(a), r * math.sin(a), a, r)


def mean_angle(angles: Iterable[float]) -> float | None:
    """The circular mean of ``angles`` (None for none)."""
    sx = sy = 0.0
    n = 0
    for a in angles:
        sx += math.cos(a)
        sy += math.sin(a)
        n += 1
    if n == 0:
        return None
    if abs(sx) < 1e-9 and abs(sy) < 1e-9:
        return 0.0
    return math.atan2(sy, sx) % (2 * math.pi)
