"""What the radial map draws, worked out from the memories without Qt, so that it can be
prepared off the GUI thread (see ``StoreSession.add_preparer``): one dot per memory, and
arrays of their angles, radii, kinds, layers, scopes and groups that a redraw filters
with numpy instead of walking a hundred thousand dots in Python."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from mnemoscope.store import KINDS, LAYERS
from mnemoscope.store.forgetting import decay
from mnemoscope.store.model.config import Decay

from ...map_layout import group_key, ring_radii, sector_angles, sector_layout, unit_hashes

DAY = 86400.0
ARCHIVED = LAYERS.index("archived")


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
    # Each memory's decay inputs (store.decay.arrays) and the moment they were read at: any
    # day is worked out from them in milliseconds (see ``day_of``); the day read itself
    # (the stored layers and strengths) is kept to come back to.
    decay_inputs: tuple | None = None
    read_at: float = 0.0
    stored: tuple | None = None  # (strengths, layers, radii) as stored


def map_data(memories: list, decay_config: Decay | None = None, read_at: float = 0.0) -> MapData:
    """The map's dots for ``memories`` as stored; with ``decay_config``, their decay
    inputs too, read at ``read_at``, for :func:`day_of` to work out another day."""
    dots = []
    for m in memories:
        dots.append(Dot(m.id, m.text, m.kind, m.layer, m.strength, m.importance, m.recall_count, m.scope,
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
    radii = ring_radii(layers, strengths, hashes)
    inputs = None
    if decay_config is not None and n:
        own = [m.half_life_days if m.half_life_days else np.nan for m in memories]
        inputs = decay.arrays(np.array([decay_config.half_life_days[m.kind] for m in memories], dtype=float),
                              np.array(own, dtype=float), [m.recall_count for m in memories],
                              [m.pinned for m in memories], [m.base for m in memories],
                              [m.ref_time for m in memories], decay_config)
    return MapData(
        decay_inputs=inputs,
        read_at=read_at,
        stored=(strengths, layers, radii),
        dots=dots,
        ids=np.array(ids, dtype=object),
        angles=sector_angles(ids, groups, sectors),
        sectors=sectors,
        radii=radii,
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
        groups=np.fromiter((group_code.setdefault(d.group, len(group_code)) for d in dots), dtype=np.int64,
                           count=n),
        group_names=list(group_code),
        source=memories,
    )


def day_of(base: MapData, days: float, decay_config: Decay) -> MapData:
    """``base``'s memories ``days`` after they were read (0: as stored), worked out over
    the arrays of their decay inputs as the store's projection does (store/forgetting/decay.py),
    without reading the store: at 100,000 memories a day takes tens of milliseconds, so
    time travel shows each day it is dragged over. Only strengths, layers and radii
    change; the dots are shared with ``base`` (a dot's own layer and strength are as
    stored: read the arrays). A memory archived stays archived (a newer one replaced it,
    or it was archived by age, which only grows)."""
    if not days or base.decay_inputs is None:
        strengths, layers, radii = base.stored if base.stored is not None else (base.strengths, base.layers,
                                                                                 base.radii)
        return replace(base, strengths=strengths, layers=layers, radii=radii, preview_days=0.0)
    strengths, layers = decay.array_states(*base.decay_inputs, base.read_at + days * DAY, decay_config)
    layers = layers.astype(np.int8)
    layers[base.stored[1] == ARCHIVED] = ARCHIVED
    return replace(base, strengths=strengths, layers=layers, radii=ring_radii(layers, strengths, base.hashes),
                   preview_days=days)


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


FIELDS = ("topic", "entity", "kind", "layer", "scope")  # what a colour group's query may name: field:value


def field_matches(data: MapData, query: str) -> np.ndarray | None:
    """The dots ``query`` names by a field, as a mask (``topic:cooking``, ``entity:Mara``,
    ``kind:event``, ``layer:edge``, ``scope:global``; case does not count), or None when
    it names no field (it is then looked for by meaning)."""
    name, sep, value = query.partition(":")
    name, value = name.strip().lower(), value.strip().lower()
    if not sep or name not in FIELDS or not value:
        return None
    n = len(data.ids)
    mask = np.zeros(n, dtype=bool)
    if name == "topic":
        codes = [i for i, g in enumerate(data.group_names) if g == "topic:" + value]
        mask = np.isin(data.groups, codes)
    elif name == "entity":
        for entity, idx in data.members.items():
            if entity.lower() == value:
                mask[idx] = True
    elif name == "kind":
        mask = data.kinds == (KINDS.index(value) if value in KINDS else -1)
    elif name == "layer":
        mask = data.layers == (LAYERS.index(value) if value in LAYERS else -1)
    else:
        codes = [i for i, s in enumerate(data.scope_names) if s.lower() == value]
        mask = np.isin(data.scopes, codes)
    return mask
