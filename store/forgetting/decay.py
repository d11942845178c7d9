"""Forgetting on a curve: strength and layer as pure functions of stored inputs and ``now``.

Nothing compounds. A memory keeps a base value and a reference time (set at creation
and at each reinforcement); its strength at any moment is the base halved once per
effective half-life since the reference time. Ticking every hour for thirty days
therefore lands exactly where one tick at day thirty does, and the map can preview any
future day without writing.
"""

from __future__ import annotations

from ..model.config import Decay
from ..model.memory import LAYERS  # a layer's code is its place here: 0 habit, 1 fading, 2 edge, 3 archived

DAY = 86400.0


def effective_half_life(kind: str, recall_count: int, decay: Decay, override_days: float | None = None) -> float:
    """Half-life in days: the kind's (or the memory's own), lengthened by every recall."""
    base = override_days if override_days else decay.half_life_days[kind]
    return base * (1.0 + decay.recall_half_life_growth * max(recall_count, 0))


def strength_at(base: float, ref_time: float, now: float, half_life_days: float, pinned: bool) -> float:
    if pinned:
        return base
    age_days = max(now - ref_time, 0.0) / DAY
    return base * 0.5 ** (age_days / half_life_days)


def layer_for(strength: float, recall_count: int, ref_time: float, now: float, pinned: bool, decay: Decay) -> str:
    if not pinned and (now - ref_time) / DAY >= decay.archive_after_days:
        return "archived"
    if recall_count >= decay.habit_min_recalls and strength >= decay.habit_min_strength:
        return "habit"
    if strength < decay.edge_below:
        return "edge"
    return "fading"


def state_at(row: dict, now: float, decay: Decay) -> tuple[float, str]:
    """(strength, layer) of a stored memory row at ``now``."""
    hl = effective_half_life(row["kind"], row["recall_count"], decay, row.get("half_life_days"))
    pinned = bool(row["pinned"])
    s = strength_at(row["base"], row["ref_time"], now, hl, pinned)
    return s, layer_for(s, row["recall_count"], row["ref_time"], now, pinned, decay)


def next_change(row: dict, at: float, decay: Decay) -> float | None:
    """The first moment after ``at`` at which the memory's layer will differ from its
    layer at ``at`` (no recall assumed), or None if it never will (pinned)."""
    return next_changes([inputs(row)], at, decay)[0]


def inputs(row: dict) -> tuple:
    """The decay inputs of a stored memory row, as :func:`states_at` takes them."""
    return row["kind"], row["recall_count"], row.get("half_life_days"), row["pinned"], row["base"], row["ref_time"]


def _arrays(rows: list[tuple], decay: Decay):
    import numpy as np

    kind, rc, hl, pinned, base, ref = zip(*rows)
    return arrays(np.array([decay.half_life_days[k] for k in kind], dtype=float), np.array(hl, dtype=float),
                  rc, pinned, base, ref, decay)


def arrays(kind_half_life, own_half_life, recall_count, pinned, base, ref_time, decay: Decay):
    """Many memories' decay inputs as the numpy arrays :func:`tick_arrays` takes: the
    half-life of each one's kind, its own half-life (NaN or 0 where it has none, as
    :func:`effective_half_life` takes it), recall count, pinned, base and reference time."""
    import numpy as np

    rc = np.asarray(recall_count, dtype=float)
    own = np.asarray(own_half_life, dtype=float)
    base_hl = np.where(np.isnan(own) | (own == 0), kind_half_life, own)
    half_life = base_hl * (1.0 + decay.recall_half_life_growth * np.maximum(rc, 0))
    return rc, half_life, np.asarray(pinned, dtype=bool), np.asarray(base, dtype=float), \
        np.asarray(ref_time, dtype=float)


def _states(rc, half_life, pinned, base, ref, now, decay: Decay):
    """Strengths and layer codes (0 habit, 1 fading, 2 edge, 3 archived) at ``now``
    (one time, or one per memory)."""
    import numpy as np

    age_days = np.maximum(now - ref, 0.0) / DAY
    strength = np.where(pinned, base, base * np.power(0.5, age_days / half_life))
    layer = np.where(strength < decay.edge_below, 2, 1)
    layer[(rc >= decay.habit_min_recalls) & (strength >= decay.habit_min_strength)] = 0
    layer[~pinned & ((now - ref) / DAY >= decay.archive_after_days)] = 3
    return strength, layer


def array_states(rc, half_life, pinned, base, ref, now: float, decay: Decay):
    """Strengths and layer codes (0 habit, 1 fading, 2 edge, 3 archived) at ``now`` of the
    memories whose inputs :func:`arrays` made: a whole store's day in milliseconds (the
    map's time travel works out each day it is dragged over with it)."""
    return _states(rc, half_life, pinned, base, ref, now, decay)


def states_at(rows: list[tuple], now: float, decay: Decay) -> tuple[list[float], list[str]]:
    """Strength and layer of many memories at once (numpy): ``rows`` are
    (kind, recall_count, half_life_days, pinned, base, ref_time) tuples. Same answers as
    :func:`state_at`, for ticks and previews of a whole store."""
    if not rows:
        return [], []
    strength, layer = _states(*_arrays(rows, decay), now, decay)
    return strength.tolist(), [LAYERS[i] for i in layer.tolist()]


def next_changes(rows: list[tuple], at: float, decay: Decay) -> list[float | None]:
    """For each memory (rows as :func:`states_at` takes them), the first moment after
    ``at`` at which its layer will differ from its layer at ``at``, or None if it never
    will (pinned).

    Strength only falls, so a layer can change only where strength crosses the habit or
    the edge line, or when the archive age is reached: a tick reads just the memories
    whose moment has come instead of every memory."""
    return tick_states(rows, at, decay)[2]


def tick_states(rows: list[tuple], at: float, decay: Decay) -> tuple[list[float], list[str], list[float | None]]:
    """Strength, layer and next change (see :func:`next_changes`) of many memories at ``at``."""
    import numpy as np

    if not rows:
        return [], [], []
    strength, layer, result = tick_arrays(*_arrays(rows, decay), at, decay)
    return (strength.tolist(), [LAYERS[i] for i in layer.tolist()],
            [None if np.isinf(t) else float(t) for t in result.tolist()])


def tick_arrays(rc, half_life, pinned, base, ref, at, decay: Decay):
    """:func:`tick_states` over the arrays :func:`arrays` makes, at one moment ``at`` or
    one per memory (an array): numpy arrays of strengths, layer codes (0 habit, 1 fading,
    2 edge, 3 archived) and next changes (inf: never)."""
    import numpy as np

    strength, layer_now = _states(rc, half_life, pinned, base, ref, at, decay)
    with np.errstate(divide="ignore", invalid="ignore"):
        def crossing(line: float, where):
            return np.where(where & (base > line), ref + half_life * DAY * np.log2(base / line), np.inf)

        moments = np.sort(np.stack([ref + decay.archive_after_days * DAY, crossing(decay.edge_below, True),
                                    crossing(decay.habit_min_strength, rc >= decay.habit_min_recalls)]), axis=0)
    result = np.full(len(base), np.inf)
    for moment in moments:
        # A millisecond past the line, where the float arithmetic has surely crossed it.
        moment = np.round(moment + 0.001, 3)
        finite = np.isfinite(moment)
        probe = np.where(finite, moment, at)
        _, layer_then = _states(rc, half_life, pinned, base, ref, probe, decay)
        found = finite & (moment > at) & (layer_then != layer_now) & np.isinf(result)
        result[found] = moment[found]
    result[pinned] = np.inf
    return strength, layer_now, result


def strength_curve(row: dict, start: float, end: float, decay: Decay, points: int = 200) -> list[tuple[float, float]]:
    """Strength from ``start`` to ``end`` for plotting, assuming no further recalls."""
    if end <= start:
        end = start + DAY
    step = (end - start) / (points - 1)
    return [(start + i * step, state_at(row, start + i * step, decay)[0]) for i in range(points)]
