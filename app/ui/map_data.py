"""What the radial map draws, worked out from the memories without Qt, so that it can be
prepared off the GUI thread (see ``StoreSession.add_preparer``): one dot per memory, and
arrays of their angles, radii, kinds, layers, scopes and groups that a redraw filters
with numpy instead of walking a hundred thousand dots in Python."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from mnemoscope.store import KINDS, LAYERS

from ..map_layout import group_key, ring_radii, sector_angles, sector_layout, unit_hashes


@dataclass
class Dot:
    id: str
    text: str
    kind: str
    layer: str
    strength: float
    importance: float
    recalls: int
    scope: str
    entities: list[str]
    group: str


@dataclass
class MapData:
    dots: list[Dot] = field(default_factory=list)
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    angles: np.ndarray = field(default_factory=lambda: np.zeros(0))
    radii: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    layers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    scopes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    scope_names: list[str] = field(default_factory=list)
    strengths: np.ndarray = field(default_factory=lambda: np.zeros(0))
    importances: np.ndarray = field(default_factory=lambda: np.zeros(0))
    members: dict[str, np.ndarray] = field(default_factory=dict)  # entity name -> dot indices
    index: dict[str, int] = field(default_factory=dict)  # memory id -> dot index
    member_ids: dict[str, list[str]] = field(default_factory=dict)  # entity name -> memory ids
    preview_days: float = 0.0
    groups: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # per dot
    group_names: list[str] = field(default_factory=list)
    source: object = None  # the memories list the dots were built from (a preview of it reuses them)
    hashes: np.ndarray = field(default_factory=lambda: np.zeros(0))  # each id's crc32 in [0, 1]
    sectors: dict[str, tuple[float, float]] = field(default_factory=dict)  # group -> (start, width), radians


def map_data(memories: list, projection: dict | None, preview_days: float = 0.0) -> MapData:
    """The map's dots for ``memories`` (strength and layer from ``projection`` when a
    future day is previewed)."""
    dots = []
    for m in memories:
        strength, layer = projection[m.id] if projection else (m.strength, m.layer)
        dots.append(Dot(m.id, m.text, m.kind, layer, strength, m.importance, m.recall_count, m.scope,
                        m.entities, group_key(m.entities, m.topic, m.kind)))
    n = len(dots)
    ids = [d.id for d in dots]
    hashes = unit_hashes(ids)
    kind_code = {k: i for i, k in enumerate(KINDS)}
    layer_code = {name: i for i, name in enumerate(LAYERS)}
    scope_names = sorted({d.scope for d in dots})
    scope_code = {s: i for i, s in enumerate(scope_names)}
    group_code: dict[str, int] = {}
    members: dict[str, list[int]] = {}
    for i, d in enumerate(dots):
        for name in d.entities:
            members.setdefault(name, []).append(i)
    groups = [d.group for d in dots]
    sizes: dict[str, int] = {}
    for group in groups:
        sizes[group] = sizes.get(group, 0) + 1
    sectors = sector_layout(sizes)
    layers = np.fromiter((layer_code[d.layer] for d in dots), dtype=np.int8, count=n)
    strengths = np.fromiter((d.strength for d in dots), dtype=float, count=n)
    return MapData(
        dots=dots,
        ids=np.array(ids, dtype=object),
        angles=sector_angles(ids, groups, sectors),
        sectors=sectors,
        radii=ring_radii(layers, strengths, hashes),
        hashes=hashes,
        kinds=np.fromiter((kind_code.get(d.kind, 0) for d in dots), dtype=np.int8, count=n),
        layers=layers,
        scopes=np.fromiter((scope_code[d.scope] for d in dots), dtype=np.int32, count=n),
        scope_names=scope_names,
        strengths=strengths,
        importances=np.fromiter((d.importance for d in dots), dtype=float, count=n),
        members={name: np.array(idx, dtype=np.int64) for name, idx in members.items()},
        index={d.id: i for i, d in enumerate(dots)},
        member_ids={name: [dots[i].id for i in idx] for name, idx in members.items()},
        preview_days=preview_days,
        groups=np.fromiter((group_code.setdefault(d.group, len(group_code)) for d in dots), dtype=np.int64,
                           count=n),
        group_names=list(group_code),
        source=memories,
    )


def reproject(base: MapData, projection: dict, preview_days: float) -> MapData:
    """``base``'s dots on another day: only strengths, layers and radii change, so they
    are worked out over arrays instead of building every dot again (at 100,000 memories
    1.3 s → a few tens of ms). The dots are shared with ``base``: a
    dot's own layer and strength are of ``base``'s day; read the arrays."""
    layer_code = {name: i for i, name in enumerate(LAYERS)}
    n = len(base.ids)
    pairs = [projection.get(i) for i in base.ids.tolist()]
    strengths = np.fromiter((p[0] if p else base.strengths[k] for k, p in enumerate(pairs)), dtype=float, count=n)
    layers = np.fromiter((layer_code[p[1]] if p else base.layers[k] for k, p in enumerate(pairs)), dtype=np.int8,
                         count=n)
    return replace(base, strengths=strengths, layers=layers,
                   radii=ring_radii(layers, strengths, base.hashes) if n else np.zeros(0),
                   preview_days=preview_days)


class Positions(Mapping):
    """Where each dot is drawn, read as ``{memory id: (x, y)}`` over two arrays: building a
    real dict of a hundred thousand points on every rotation costs a frame."""

    def __init__(self, index: dict[str, int], xs: np.ndarray, ys: np.ndarray) -> None:
        self._index, self.xs, self.ys = index, xs, ys

    def __getitem__(self, memory_id: str) -> tuple[float, float]:
        i = self._index[memory_id]
        return float(self.xs[i]), float(self.ys[i])

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)
