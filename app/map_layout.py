"""Where each memory sits on the radial map: pure geometry, no Qt.

Rings from the centre out: habit, fading, edge (archived outside them, hidden by
default). Inside its ring a memory's distance follows its strength's rank among the
ring's memories (the strongest nearest the centre), spread evenly over the ring's area:
a memory that fades faster than its neighbours slides outward, and a ring of memories
all fresh still fills its ring instead of hugging its inner edge.

Round the circle, each group (a memory's topic, else its first entity, else its kind)
has a sector as wide as its share of the memories (with a floor, so that a group of one
can be seen), clockwise from 12 o'clock, topics first, in order of name; a group's
memories spread evenly across its sector in the order of a hash of their ids. The same
memories always get the same places; a memory added moves the others a little.

Arranged by meaning instead (:func:`meaning_angles`), a memory's angle comes from its
vector, so memories that mean similar things sit together even with no topic in common.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
from mnemoscope.store.model.memory import LAYERS

RING_INNER = {"habit": 0.05, "fading": 1.0, "edge": 2.0, "archived": 3.0}
RING_WIDTH = 1.0
RING_MARGIN = 0.04  # between a ring's circle and its nearest memory
ENTITY_CLEARANCE = 0.25  # from the outermost ring shown to the first entity orbit
ENTITY_STAGGER = 0.25  # between the three entity orbits
SECTOR_GAP = 0.012  # radians between two sectors (less when there are many)
SECTOR_FLOOR = 0.035  # radians: the narrowest sector (less when there are many)
SECTOR_INSET = 0.01  # of a sector's width, left empty at each side (the gap and the spokes part the rest)
TWELVE = math.pi / 2  # where the first sector starts: the top of the map
TAU = 2 * math.pi
GROUP_KINDS = ("topic", "entity", "kind")  # the order of the sectors: topics first


def _unit_hash(text: str) -> float:
    return zlib.crc32(text.encode("utf-8")) / 0xFFFFFFFF


def unit_hashes(ids) -> np.ndarray:
    """Each id's crc32 in [0, 1]: where a memory sits among its group's, whatever else is there."""
    return np.fromiter((zlib.crc32(i.encode("utf-8")) for i in ids), dtype=np.float64) / 0xFFFFFFFF


def group_key(entities: list[str], topic: str, kind: str) -> str:
    """What a memory sits next to: its topic, else its first entity, else its kind."""
    if topic:
        return "topic:" + topic.lower()
    if entities:
        return "entity:" + sorted(entities, key=str.lower)[0].lower()
    return "kind:" + kind


def name_angle(name: str) -> float:
    """An angle from a name alone (for an entity whose memories are all round the map)."""
    return TAU * _unit_hash(name)


def group_label(group: str) -> str:
    """A group key as a person reads it: the topic, entity or kind name."""
    return group.split(":", 1)[-1]


def _group_order(group: str) -> tuple[int, str, str]:
    kind, _, name = group.partition(":")
    return (GROUP_KINDS.index(kind) if kind in GROUP_KINDS else len(GROUP_KINDS), name, group)


def sector_layout(counts) -> dict[str, tuple[float, float]]:
    """Each group's sector as (start, width) in radians: it runs clockwise (towards smaller
    angles) from ``start``. Widths are in proportion to ``counts`` (group → memories), none
    under :data:`SECTOR_FLOOR` while the circle has room, with :data:`SECTOR_GAP` between
    two; the first starts at 12 o'clock, topics first, then entities, then kinds, each in
    order of name."""
    groups = sorted((g for g, n in counts.items() if n > 0), key=_group_order)
    if not groups:
        return {}
    # Many groups (a long tail of entities): the gaps and the floors together take at most
    # a tenth of the circle each, or the tail would take the room of what holds the most.
    gap = min(SECTOR_GAP, 0.1 * TAU / len(groups)) if len(groups) > 1 else 0.0
    room = TAU - gap * len(groups)
    floor = min(SECTOR_FLOOR, 0.1 * room / len(groups))
    weights = np.array([counts[g] for g in groups], dtype=float)
    widths = np.zeros(len(groups))
    floored = np.zeros(len(groups), dtype=bool)
    while True:  # the groups under the floor get it; the others share what is left
        share = room - floor * floored.sum()
        widths = np.where(floored, floor, share * weights / weights[~floored].sum())
        under = (widths < floor) & ~floored
        if not under.any() or (floored | under).all():
            floored |= under
            widths = np.where(floored, floor, widths)
            break
        floored |= under
    out, at = {}, TWELVE
    for group, width in zip(groups, widths.tolist(), strict=True):
        out[group] = (at % TAU, width)
        at -= width + gap
    return out


def sector_angles(ids, groups, sectors: dict[str, tuple[float, float]] | None = None) -> np.ndarray:
    """Each memory's angle: its group's sector (:func:`sector_layout` of the groups' sizes
    here, unless ``sectors`` is given), and within it the memory's place among the group's
    by the hash of its id, evenly from one side to the other."""
    ids, groups = list(ids), list(groups)
    n = len(ids)
    if not n:
        return np.zeros(0)
    code: dict[str, int] = {}
    codes = np.fromiter((code.setdefault(g, len(code)) for g in groups), dtype=np.int64, count=n)
    names = list(code)
    sizes = np.bincount(codes, minlength=len(names))
    if sectors is None:
        sectors = sector_layout(dict(zip(names, sizes.tolist())))
    starts = np.array([sectors[g][0] for g in names])
    widths = np.array([sectors[g][1] for g in names])
    order = np.lexsort((unit_hashes(ids), codes))  # (two ids of one crc32: in the order given)
    rank = np.empty(n, dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # where each group begins in ``order``
    rank[order] = np.arange(n) - first[codes[order]]
    place = (rank + 0.5) / sizes[codes]  # 0-1 across the sector
    inset = SECTOR_INSET * widths[codes]
    return np.mod(starts[codes] - inset - place * (widths[codes] - 2 * inset), TAU)


def ring_radii(layers, strengths, hashes) -> np.ndarray:
    """Each memory's distance from the centre: inside its layer's ring (``layers`` as
    indices into ``LAYERS``), by its strength's rank among the ring's memories (ties by
    ``hashes``), the strongest nearest the centre, evenly over the ring's area."""
    layers = np.asarray(layers, dtype=np.int64)
    strengths = np.asarray(strengths, dtype=float)
    hashes = np.asarray(hashes, dtype=float)
    n = len(layers)
    out = np.zeros(n)
    if not n:
        return out
    # One sort of one key for every ring (a time-travel frame's longest step at 100,000):
    # by layer, then strongest first, then by hash (1e-12 apart: below any two strengths
    # that differ, above float noise at 1); a lexsort per ring took eight times as long.
    key = layers * 4.0 + (1.0 - np.clip(strengths, 0.0, 1.0)) + hashes * 1e-12
    order = np.argsort(key, kind="stable")
    sizes = np.bincount(layers, minlength=len(LAYERS))
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    ranked = layers[order]
    q = (np.arange(n) - first[ranked] + 0.5) / sizes[ranked]
    inner = np.array([RING_INNER[name] + RING_MARGIN for name in LAYERS])
    outer = np.array([(ring_outer(name) if name != LAYERS[-1] else layer_outer(name)) - RING_MARGIN
                      for name in LAYERS])
    out[order] = np.sqrt(inner[ranked] ** 2 + q * (outer[ranked] ** 2 - inner[ranked] ** 2))
    return out


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
