"""A memory's neighbourhood, as a small graph a person can read: no Qt.

Two memories are neighbours when they name the same entity or one references the other.
The neighbourhood to depth d holds the memory, its neighbours (depth 1), theirs (depth 2)
and so on, each depth at most ``per_depth`` memories: those that share the most with the
depth before (a reference counts as two entities), then the strongest. The entities that
join them are nodes too, so a person sees *why* two memories sit together; an entity
every shown memory names is drawn once, not as a wheel of identical links.

:func:`layout` places the nodes by forces (linked nodes pull, all nodes push apart), the
memory itself at the centre, from a start fixed by the ids: the same neighbourhood is
drawn the same way every time, and a node a person has dragged stays where it was put.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_DEPTH = 3
PER_DEPTH = (0, 16, 12, 8)  # memories shown at each depth (0: the memory itself)
REFERENCE_WEIGHT = 2  # a reference joins two memories as much as two shared entities
HUB_SHARE = 0.5  # an entity named by this share of the memories shown (and 6 or more) is a hub
HUB_PULL = 0.08  # how hard a hub's links pull, against 1 for another link


@dataclass
class Neighbourhood:
    """Nodes (memory ids, then entity names) and edges as pairs of node indices."""

    centre: str
    memories: list[str] = field(default_factory=list)  # the centre first, then by depth
    depth_of: dict[str, int] = field(default_factory=dict)
    entities: list[str] = field(default_factory=list)
    mentions: list[tuple[int, int]] = field(default_factory=list)  # (memory node, entity node)
    references: list[tuple[int, int]] = field(default_factory=list)  # (memory node, memory node)
    more: dict[int, int] = field(default_factory=dict)  # depth -> neighbours left out at it
    hubs: set[int] = field(default_factory=set)  # entity nodes most of the memories name (Mara, in hers)

    @property
    def nodes(self) -> list[str]:
        return [*self.memories, *self.entities]

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [*self.references, *self.mentions]


def neighbourhood(centre: str, entities_of: Mapping[str, Sequence[str]], members: Mapping[str, Sequence[str]],
                  references: Mapping[str, Iterable[str]], strength: Mapping[str, float], depth: int = 1,
                  per_depth: Sequence[int] = PER_DEPTH) -> Neighbourhood:
    """The neighbourhood of ``centre`` to ``depth`` (1-3). ``entities_of``: a memory's
    entity names; ``members``: an entity's memories; ``references``: the memories a
    memory references or is referenced by (both ways); ``strength``: to pick among equals.
    Only memories in ``entities_of`` (the ones shown) are taken."""
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be 1 to {MAX_DEPTH}, got {depth!r}")
    found = Neighbourhood(centre, [centre], {centre: 0})
    level = [centre]
    for d in range(1, depth + 1):
        ties: dict[str, float] = {}
        for mid in level:
            for name in entities_of.get(mid, ()):
                for other in members.get(name, ()):
                    if other not in found.depth_of and other in entities_of:
                        ties[other] = ties.get(other, 0) + 1
            for other in references.get(mid, ()):
                if other not in found.depth_of and other in entities_of:
                    ties[other] = ties.get(other, 0) + REFERENCE_WEIGHT
        chosen = sorted(ties, key=lambda m: (-ties[m], -strength.get(m, 0.0), m))
        cap = per_depth[min(d, len(per_depth) - 1)]
        if len(chosen) > cap:
            found.more[d] = len(chosen) - cap
        level = chosen[:cap]
        for mid in level:
            found.depth_of[mid] = d
            found.memories.append(mid)
        if not level:
            break
    index = {mid: i for i, mid in enumerate(found.memories)}
    shown = set(index)
    # An entity joins when it links two shown memories, or is the centre's own.
    named: dict[str, list[int]] = {}
    for mid in found.memories:
        for name in entities_of.get(mid, ()):
            named.setdefault(name, []).append(index[mid])
    for name in sorted(named, key=str.lower):
        at = named[name]
        if len(at) >= 2 or at == [0]:
            node = len(found.memories) + len(found.entities)
            found.entities.append(name)
            found.mentions += [(i, node) for i in at]
            if len(at) >= max(6, HUB_SHARE * len(found.memories)):
                found.hubs.add(node)
    pairs = set()
    for mid in found.memories:
        for other in references.get(mid, ()):
            if other in shown and other != mid:
                pairs.add(tuple(sorted((index[mid], index[other]))))
    found.references = sorted(pairs)
    return found


def _start(names: Sequence[str], depth: Sequence[int]) -> np.ndarray:
    """Where each node starts: on the circle of its depth, at an angle of its name."""
    angles = np.array([2 * math.pi * zlib.crc32(n.encode("utf-8")) / 0xFFFFFFFF for n in names])
    radii = np.asarray(depth, dtype=float)
    return np.stack([radii * np.cos(angles), radii * np.sin(angles)], axis=1)


def layout(graph: Neighbourhood, pinned: Mapping[int, tuple[float, float]] | None = None,
           start: np.ndarray | None = None, iterations: int = 200) -> np.ndarray:
    """Each node's (x, y): the centre at (0, 0), linked nodes near one another, no two on
    top of each other (Fruchterman and Reingold's forces, cooling as it goes). ``pinned``:
    nodes that stay where they are (node index → place); ``start``: where the others
    begin (else a fixed start by depth and name)."""
    n = len(graph.nodes)
    if n == 0:
        return np.zeros((0, 2))
    depth = [graph.depth_of[m] for m in graph.memories] + [0.5 + max(graph.depth_of.values(), default=0)] * len(
        graph.entities)
    pos = _start(graph.nodes, depth) if start is None else np.array(start, dtype=float)
    fixed = dict(pinned or {})
    fixed.setdefault(0, (0.0, 0.0))
    for i, (x, y) in fixed.items():
        pos[i] = (x, y)
    if n == 1:
        return pos
    edges = np.array(graph.edges, dtype=np.int64).reshape(-1, 2)
    # A hub's links pull gently: they would gather every memory round it in one ball, where
    # the entities only some of them share say more about how they hang together.
    pull_of = np.array([HUB_PULL if b in graph.hubs else 1.0 for _a, b in graph.edges]).reshape(-1, 1)
    free = np.ones(n, dtype=bool)
    free[list(fixed)] = False
    k = 1.0  # the natural distance between two linked nodes
    spread = max(1.0, math.sqrt(n / 12))  # many nodes push harder, or they pack in a ball
    step = 0.3 * spread
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.hypot(delta[..., 0], delta[..., 1]) + np.eye(n)
        dist = np.maximum(dist, 0.05)
        push = (spread * k * k / dist ** 2)[..., None] * delta  # repulsion, every pair
        move = push.sum(axis=1)
        if len(edges):
            d = pos[edges[:, 0]] - pos[edges[:, 1]]
            length = np.maximum(np.hypot(d[:, 0], d[:, 1]), 0.05)[:, None]
            pull = pull_of * d * length / k  # attraction along each link
            np.add.at(move, edges[:, 0], -pull)
            np.add.at(move, edges[:, 1], pull)
        move -= 0.02 * pos  # a little gravity: loose parts stay near
        size = np.maximum(np.hypot(move[:, 0], move[:, 1]), 1e-9)[:, None]
        pos[free] += (move / size * np.minimum(size, step))[free]
        step = max(step * 0.98, 0.01 * spread)
    return pos
