"""What the radial map draws, worked out from the memories without Qt, so that it can be
prepared off the GUI thread (see ``StoreSession.add_preparer``): one dot per memory, and
arrays of their angles, radii, kinds, layers, scopes and cells that a redraw filters
with numpy instead of walking a hundred thousand dots in Python."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from mnemoscope.store import KINDS, LAYERS

from ..map_layout import angle_for, group_key, radii_for, radius_for


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
    cells: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (layer, group) per dot
    cell_keys: list[tuple[str, str]] = field(default_factory=list)
    strengths: np.ndarray = field(default_factory=lambda: np.zeros(0))
    importances: np.ndarray = field(default_factory=lambda: np.zeros(0))
    members: dict[str, np.ndarray] = field(default_factory=dict)  # entity name -> dot indices
    index: dict[str, int] = field(default_factory=dict)  # memory id -> dot index
    member_ids: dict[str, list[str]] = field(default_factory=dict)  # entity name -> memory ids
    preview_days: float = 0.0
    groups: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # per dot
    group_names: list[str] = field(default_factory=list)
    source: object = None  # the memories list the dots were built from (a preview of it reuses them)


def map_data(memories: list, projection: dict | None, habit_min: float, edge_below: float,
             preview_days: float = 0.0) -> MapData:
    """The map's dots for ``memories`` (strength and layer from ``projection`` when a
    future day is previewed)."""
    dots = []
    for m in memories:
        strength, layer = projection[m.id] if projection else (m.strength, m.layer)
        dots.append(Dot(m.id, m.text, m.kind, layer, strength, m.importance, m.recall_count, m.scope,
                        m.entities, group_key(m.entities, m.topic, m.kind)))
    n = len(dots)
    kind_code = {k: i for i, k in enumerate(KINDS)}
    layer_code = {name: i for i, name in enumerate(LAYERS)}
    scope_names = sorted({d.scope for d in dots})
    scope_code = {s: i for i, s in enumerate(scope_names)}
    cells: dict[tuple[str, str], int] = {}
    group_code: dict[str, int] = {}
    members: dict[str, list[int]] = {}
    for i, d in enumerate(dots):
        for name in d.entities:
            members.setdefault(name, []).append(i)
    return MapData(
        dots=dots,
        ids=np.array([d.id for d in dots], dtype=object),
        angles=np.fromiter((angle_for(d.id, d.group) for d in dots), dtype=float, count=n),
        radii=np.fromiter((radius_for(d.layer, d.strength, habit_min, edge_below) for d in dots), dtype=float,
                          count=n),
        kinds=np.fromiter((kind_code.get(d.kind, 0) for d in dots), dtype=np.int8, count=n),
        layers=np.fromiter((layer_code[d.layer] for d in dots), dtype=np.int8, count=n),
        scopes=np.fromiter((scope_code[d.scope] for d in dots), dtype=np.int32, count=n),
        scope_names=scope_names,
        cells=np.fromiter((cells.setdefault((d.layer, d.group), len(cells)) for d in dots), dtype=np.int64,
                          count=n),
        cell_keys=list(cells),
        strengths=np.fromiter((d.strength for d in dots), dtype=float, count=n),
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


def reproject(base: MapData, projection: dict, habit_min: float, edge_below: float,
              preview_days: float) -> MapData:
    """``base``'s dots on another day: only strengths, layers, radii and (layer, group)
    cells change, so they are worked out over arrays instead of building every dot again
    (at 100,000 memories 1.3 s → a few tens of ms). The dots are shared with ``base``: a
    dot's own layer and strength are of ``base``'s day; read the arrays."""
    layer_code = {name: i for i, name in enumerate(LAYERS)}
    n = len(base.ids)
    pairs = [projection.get(i) for i in base.ids.tolist()]
    strengths = np.fromiter((p[0] if p else base.strengths[k] for k, p in enumerate(pairs)), dtype=float, count=n)
    layers = np.fromiter((layer_code[p[1]] if p else base.layers[k] for k, p in enumerate(pairs)), dtype=np.int8,
                         count=n)
    width = max(len(base.group_names), 1)
    keys, cells = np.unique(layers.astype(np.int64) * width + base.groups, return_inverse=True)
    cell_keys = [(LAYERS[int(k) // width], base.group_names[int(k) % width]) for k in keys.tolist()]
    return replace(base, strengths=strengths, layers=layers,
                   radii=radii_for(layers, strengths, habit_min, edge_below) if n else np.zeros(0),
                   cells=cells.astype(np.int64).reshape(-1), cell_keys=cell_keys, preview_days=preview_days)


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
