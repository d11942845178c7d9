"""Where each memory sits on the radial map: pure geometry, no Qt.

Rings from the centre out: habit, fading, edge (archived outside them, hidden by
default). Inside its ring a memory's distance follows its strength (stronger is
nearer). Angles are stable: a memory's group (its topic, else its first entity, else
its kind) picks a sector by a hash of the group's name alone, and the memory's own id
picks its place inside the sector, so a memory keeps its angle across ticks, edits and
the arrival of other memories, and a dot that slides outward is a memory that is fading.
The habit and edge thresholds come from the store's decay config.

Arranged by meaning instead (:func:`meaning_angles`), a memory's angle comes from its
vector, so memories that mean similar things sit together even with no topic in common.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
from mnemoscope.store.model import LAYERS

RING_INNER = {"habit": 0.15, "fading": 1.0, "edge": 2.0, "archived": 3.0}
RING_WIDTH = 1.0
ENTITY_CLEARANCE = 0.35  # from the outermost ring shown to the first entity orbit
ENTITY_STAGGER = 0.3  # between the three entity orbits
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


def layer_outer(layer: str) -> float:
    """How far out a layer's memories reach (the archived ring has no next ring)."""
    return RING_INNER[layer] + RING_WIDTH


def orbit_for(step: int, outer: float) -> float:
    """An entity's distance from the centre: just outside ``outer`` (the outermost ring
    shown), ``step`` (0-2) orbits further out. Close to the rings, not far out: the
    memories' disc is what the map is for, and a far orbit shrinks it when fitted."""
    return outer + ENTITY_CLEARANCE + (step % 3) * ENTITY_STAGGER


def orbit_steps(angles, crowded: float) -> np.ndarray:
    """Which orbit (0-2) each entity at ``angles`` takes: a lone one the nearest; in a run
    of neighbours closer than ``crowded`` each a step further out than the last, so
    side-by-side diamonds and their labels have room. A run is local: an entity that
    arrives elsewhere moves no other one to another orbit."""
    a = np.mod(np.asarray(angles, dtype=float), 2 * math.pi)
    n = len(a)
    steps = np.zeros(n, dtype=np.int64)
    if n < 2:
        return steps
    order = np.argsort(a, kind="stable")
    ordered = a[order]
    gaps = np.diff(np.append(ordered, ordered[0] + 2 * math.pi))  # gaps[i]: from i to the next
    close = gaps < crowded
    if close.all():  # one run all round: start it at its widest gap
        start = int(np.argmax(gaps)) + 1
    else:  # start at the beginning of a run, i.e. just after a wide gap
        start = int(np.flatnonzero(~close)[-1]) + 1
    step = 0
    for k in range(n):
        i = (start + k) % n
        steps[order[i]] = step
        step = step + 1 if close[i] else 0
    return steps


def _increasing_fit(values: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence nearest ``values`` (least squares): pool adjacent
    violators, each block at the mean of what it pools."""
    means: list[float] = []
    sizes: list[int] = []
    for v in values.tolist():
        means.append(v)
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            n = sizes[-2] + sizes[-1]
            means[-2] = (means[-2] * sizes[-2] + means[-1] * sizes[-1]) / n
            sizes[-2] = n
            means.pop()
            sizes.pop()
    return np.repeat(means, sizes)


def spread_on_circle(targets, gap: float) -> np.ndarray:
    """Angles as near ``targets`` as they can be (least squares) with neighbours at least
    ``gap`` apart (less when the circle has no room for that), keeping their order round
    the circle: entities that all belong by one sector stand side by side there instead
    of piling into one diamond. Deterministic; a lone target stays where it is."""
    t = np.mod(np.asarray(targets, dtype=float), 2 * math.pi)
    n = len(t)
    if n < 2:
        return t
    gap = min(gap, 2 * math.pi / n)
    order = np.argsort(t, kind="stable")
    ordered = t[order]
    # cut the circle at its widest empty arc, so the sequence has a start and an end
    gaps = np.diff(np.append(ordered, ordered[0] + 2 * math.pi))
    start = int(np.argmax(gaps)) + 1
    order = np.roll(order, -start)
    seq = np.unwrap(t[order], period=2 * math.pi)
    steps = np.arange(n) * gap
    wanted = seq - steps
    moved = _increasing_fit(wanted) - wanted  # exactly 0 for one that needs no room
    placed = seq + moved
    span, room = placed[-1] - placed[0], 2 * math.pi - gap
    if span > room:  # the ends would meet across the cut: close up evenly round the middle
        middle = (placed[0] + placed[-1]) / 2
        moved = middle + (placed - middle) * room / span - seq
    out = t.copy()
    out[order] += moved
    return np.where((out < 0) | (out >= 2 * math.pi), np.mod(out, 2 * math.pi), out)


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


def radii_for(layers: np.ndarray, strengths: np.ndarray, habit_min: float, edge_below: float) -> np.ndarray:
    """:func:`radius_for` over arrays (``layers`` as indices into ``LAYERS``): a previewed
    day at 100,000 memories in milliseconds, not a Python call per memory."""
    s = np.clip(np.asarray(strengths, dtype=float), 0.0, 1.0)
    names = np.array(LAYERS)[np.asarray(layers, dtype=np.int64)]
    inner = np.array([RING_INNER.get(name, 1.0) for name in LAYERS])[layers]
    depth = np.where(names == "edge", (edge_below - s) / edge_below,
                     np.where(names == "archived", 1.0 - s, (1.0 - s) / (1.0 - edge_below)))
    out = inner + np.clip(depth, 0.0, 1.0) * RING_WIDTH * 0.95
    habit = names == "habit"
    habit_depth = np.minimum((1.0 - s) / max(1.0 - habit_min, 1e-6), 1.0)
    out[habit] = (RING_INNER["habit"] + habit_depth * (RING_WIDTH - RING_INNER["habit"]) * 0.95)[habit]
    return out


# -- the arrangement by meaning ------------------------------------------------------------
MEANING_SAMPLE = 2000  # memories the principal plane is fitted on (the rest are only projected)


def _sample(ids: list[str]) -> np.ndarray:
    """The rows the plane is fitted on: the MEANING_SAMPLE ids of smallest hash, so adding
    one memory changes the sample by at most one member."""
    if len(ids) <= MEANING_SAMPLE:
        return np.arange(len(ids))
    keys = np.fromiter((zlib.crc32(i.encode("utf-8")) for i in ids), dtype=np.int64, count=len(ids))
    return np.sort(np.argsort(keys, kind="stable")[:MEANING_SAMPLE])


def _align(angles: np.ndarray, ids: list[str], previous: dict[str, float]) -> np.ndarray:
    """``angles`` turned (and mirrored, if that fits better) to match ``previous`` where
    they share ids: a new fit of the plane may come out rotated or flipped."""
    shared = [k for k, i in enumerate(ids) if i in previous]
    if not shared:
        return angles
    before = np.fromiter((previous[ids[k]] for k in shared), dtype=float, count=len(shared))
    best, best_fit = angles, -1.0
    for mirror in (1.0, -1.0):
        turned = mirror * angles
        resultant = np.exp(1j * (before - turned[shared])).mean()
        if abs(resultant) > best_fit:
            best, best_fit = turned + np.angle(resultant), abs(resultant)
    return best


def _leading_axes(centred: np.ndarray, iterations: int = 12) -> np.ndarray:
    """The two leading principal axes of ``centred`` (rows), as a 2 × d matrix: subspace
    iteration on a few directions from a fixed seed, then the exact answer inside them,
    which is what a full SVD would give at a fraction of its cost for d in the hundreds."""
    d = centred.shape[1]
    k = min(6, d, len(centred))
    basis = np.random.default_rng(0).standard_normal((d, k))
    for _ in range(iterations):
        basis, _r = np.linalg.qr(centred.T @ (centred @ basis))
    _u, _s, vt = np.linalg.svd(centred @ basis, full_matrices=False)
    axes = np.zeros((2, d))
    found = (vt @ basis.T)[:2]
    axes[: len(found)] = found
    return axes


def _plane_angles(ids: list[str], m: np.ndarray) -> np.ndarray:
    """Each unit row's direction in the plane of the two leading principal components."""
    sample = _sample(ids)
    fit = m[sample].astype(np.float64)
    centre = fit.mean(axis=0)
    axes = _leading_axes(fit - centre)
    projected = m @ axes.T.astype(np.float32) - (centre @ axes.T)  # no centred copy of every vector
    # An axis's sign is arbitrary: point it to the heavier tail of the fitted memories.
    skew = np.sum(projected[sample] ** 3, axis=0)
    projected *= np.where(skew < 0, -1.0, 1.0)
    return np.arctan2(projected[:, 1], projected[:, 0])


def _beside_neighbours(m: np.ndarray, placed: np.ndarray, angles: np.ndarray, new: np.ndarray,
                       ids: list[str]) -> None:
    """Give each ``new`` row the angle of its nearest ``placed`` rows (weighted by cosine),
    leaving every placed angle where it was."""
    sims = (m[new] @ m.T)[:, placed]
    k = min(NEIGHBOURS, len(placed))
    for row, i in enumerate(new):
        top = np.argpartition(-sims[row], k - 1)[:k]
        weights = np.clip(sims[row, top], 0.0, None) + 1e-9
        resultant = (weights * np.exp(1j * angles[placed[top]])).sum() / weights.sum()
        best = angles[placed[top[np.argmax(sims[row, top])]]]
        centre = np.angle(resultant) if abs(resultant) > 0.5 else best  # scattered neighbours: the nearest
        angles[i] = centre + (_unit_hash(ids[i]) - 0.5) * 0.02  # a copy does not hide its original


NEIGHBOURS = 3
REFIT_SHARE = 0.1  # more new memories than this share of the map: fit the plane again


def meaning_angles(ids: list[str], vectors, previous: dict[str, float] | None = None) -> np.ndarray:
    """An angle for each memory from its vector (one row per id), so memories that mean
    similar things sit at similar angles whatever their topic.

    With no ``previous`` arrangement (id → angle), the angle is the memory's direction in
    the plane of the two leading principal components: a circle has no seam, unlike a
    1-D ordering laid round it. With one, memories it places keep their angles and a
    newcomer sits by its nearest neighbours, so adding a memory moves no other; past
    ``REFIT_SHARE`` newcomers (an import) the plane is fitted again, turned and mirrored
    to match ``previous`` as well as it can."""
    m = np.asarray(vectors, dtype=np.float32)  # 100,000 memories of 512 floats: 200 MB, not 400
    n = len(ids)
    if m.ndim != 2 or m.shape[0] != n:
        raise ValueError(f"vectors must be one row per memory: {n} ids, got shape {m.shape}")
    if n and not np.isfinite(m).all():
        raise ValueError("vectors contain nan or infinity")
    previous = previous or {}
    if n < 2:
        return np.array([previous.get(i, 0.0) for i in ids], dtype=float)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    m = m / np.where(norms > 0, norms, np.float32(1.0))
    placed = np.fromiter((i for i, rid in enumerate(ids) if rid in previous), dtype=np.int64)
    if len(placed) and n - len(placed) <= REFIT_SHARE * n:
        angles = np.zeros(n)
        angles[placed] = [previous[ids[i]] for i in placed]
        new = np.setdiff1d(np.arange(n), placed)
        if len(new):
            _beside_neighbours(m, placed, angles, new, ids)
    else:
        angles = _align(_plane_angles(ids, m), ids, previous) if previous else _plane_angles(ids, m)
    return np.mod(angles, 2 * math.pi)
