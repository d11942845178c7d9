"""The tick engine: bring every memory's layer and archive state up to a moment, log each
transition, and undo or redo a whole tick.

Strength is a pure function of stored inputs and time (:mod:`.decay`), so a tick writes
only the memories whose layer changes (each knows when that next happens), and ticking
often gives the same result as ticking once.
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Any

from . import activity, decay
from .backend import wall_time
from .errors import NotFound, StoreError, ValidationError
from .model import LAYERS, iso
from .results import TickReport, transition_label

if TYPE_CHECKING:
    from .store import MemoryStore

# A tick's state (the ``undone`` column of ``ticks``): as it ran; undone; or undone and
# then run again, as a later tick of its own.
APPLIED, UNDONE, REDONE = 0, 1, 2


def states(store: MemoryStore, now: float) -> tuple[list[tuple], list[float], list[str]]:
    """Every memory's decay inputs, strength and layer at ``now`` (a superseded memory stays
    archived); the caller holds the connection."""
    rows = store.conn.execute("SELECT id, kind, recall_count, half_life_days, pinned, base, ref_time "
                             "FROM memories").fetchall()
    strengths, layers = decay.states_at([r[1:7] for r in rows], now, store.config.decay)
    superseded = store.tables.superseded_ids()
    if superseded:  # a memory another one replaced stays archived (conflicts.supersede)
        layers = ["archived" if r[0] in superseded else layer for r, layer in zip(rows, layers)]
    return rows, strengths, layers


def project(store: MemoryStore, now: Any = None) -> dict[str, tuple[float, str]]:
    """Strength and layer of every memory at ``now``, without writing anything."""
    now = store.tables.now(now)
    with store.tables.reading():
        rows, strengths, layers = states(store, now)
    return {r[0]: (s, layer) for r, s, layer in zip(rows, strengths, layers)}


def tick(store: MemoryStore, now: Any = None, *, advance_days: float | None = None) -> TickReport:
    """Bring every memory's layer and archive state up to ``now`` (after moving the
    clock ``advance_days`` forward, in the same transaction). Logs each layer
    transition; the whole tick can be undone with :meth:`undo_tick`.

    Strength is a pure function of time, so a tick writes only what changed: the
    memories whose layer changes (each knows when that will happen). Every memory's
    strength reads as of the tick from then on."""
    if advance_days is not None:
        advance_days = check_days(advance_days)
    tables = store.tables
    with tables.write():
        offset_before = store.clock_offset
        offset_after = tables.advance(advance_days) if advance_days else offset_before
        now = tables.now(now)
        ticked_before = tables.meta("ticked_at")  # the last tick not undone
        if ticked_before is not None and now < float(ticked_before):
            raise ValidationError("now", f"{iso(now)} is before the last tick ({iso(float(ticked_before))}); "
                                         "time only runs forward, so undo the later ticks first to go back")
        config_before = tables.meta("decay_config")
        # With other decay numbers than the layers were worked out with, look at every memory.
        full = config_before != tables.decay_fingerprint()
        # The due rows in rowid order: one sorted walk through the table, and the UPDATEs
        # below touch its pages (and each index's runs) in that order too.
        rows = store.conn.execute(
            "SELECT s.rowid, m.id, m.kind, m.recall_count, m.half_life_days, m.pinned, m.base, m.ref_time, "
            "s.strength, s.layer, s.ticked_at, s.next_change_at FROM memory_state s "
            "JOIN memories m ON m.rowid = s.rowid"
            + ("" if full else " WHERE s.rowid IN (SELECT rowid FROM memory_state WHERE next_change_at <= ?)"),
            () if full else (now,)).fetchall()
        strengths, layers, next_changes = decay.tick_states([r[2:8] for r in rows], now, store.config.decay)
        superseded = tables.superseded_ids() if full else set()  # none of them is ever due
        if superseded:
            layers = ["archived" if r[1] in superseded else layer for r, layer in zip(rows, layers)]
            next_changes = [None if r[1] in superseded else n for r, n in zip(rows, next_changes)]
        moves, nexts, changed = [], [], []
        for row, s, layer, next_at in zip(rows, strengths, layers, next_changes):
            rowid, memory_id, *_, strength_was, layer_was, ticked_was, due_at = row
            if layer != layer_was:
                moves.append((s, layer, now, next_at, rowid))
                changed.append((due_at, rowid, (memory_id, layer_was, layer, strength_was, s), ticked_was))
            elif next_at != due_at:
                nexts.append((next_at, rowid))
        if not full:  # transitions in the order they came due (a full tick: by rowid)
            changed.sort(key=lambda c: (c[0], c[1]))
        transitions = [t for _, _, t, _ in changed]
        undo = [(mid, strength_was, layer_was, ticked_was)
                for _, _, (mid, layer_was, _, strength_was, _), ticked_was in changed]
        counts: dict[str, int] = {}
        for _, before, after, _, _ in transitions:
            label = transition_label(before, after)
            counts[label] = counts.get(label, 0) + 1
        store.conn.executemany("UPDATE memory_state SET strength = ?, layer = ?, ticked_at = ?, next_change_at = ? "
                              "WHERE rowid = ?", moves)
        store.conn.executemany("UPDATE memory_state SET next_change_at = ? WHERE rowid = ?", nexts)
        tables.set_meta("ticked_at", repr(now))
        tables.set_meta("decay_config", tables.decay_fingerprint())
        info = {"counts": counts, "changed": len(moves), "ticked_before": ticked_before}
        if full:  # what an undo puts back; kept only when it differs (it is a few hundred bytes)
            info["config_before"] = config_before
        tick_id = store.conn.execute(
            "INSERT INTO ticks (at, offset_before, offset_after, created, summary, undo) VALUES (?,?,?,?,?,?)",
            (now, offset_before, offset_after, wall_time(store.conn), json.dumps(info, ensure_ascii=False),
             _pack_undo(undo))).lastrowid
        store.conn.executemany(
            "INSERT INTO tick_log (tick_id, memory_id, from_layer, to_layer, strength_before, strength_after) "
            "VALUES (?,?,?,?,?,?)", [(tick_id, *t) for t in transitions])
        # Only the last ``undoable_ticks`` keep their undo record: the history stays bounded.
        store.conn.execute(
            "UPDATE ticks SET undo = NULL WHERE undo IS NOT NULL AND id <= "
            "(SELECT id FROM ticks ORDER BY id DESC LIMIT 1 OFFSET ?)", (store.config.limits.undoable_ticks,))
        activity.prune(store, now)
        layer_counts = dict.fromkeys(LAYERS, 0)
        layer_counts.update(store.conn.execute("SELECT layer, count(*) FROM memory_state GROUP BY layer").fetchall())
    return TickReport(tick_id, now, [(t[0], t[1], t[2]) for t in transitions], counts, layer_counts,
                      len(moves), offset_before, offset_after)


def undo_tick(store: MemoryStore, tick_id: int) -> TickReport:
    """Put back every memory a tick changed, and the clock as it was before it."""
    tables = store.tables
    with tables.write():
        row = store.conn.execute("SELECT undo, offset_before, offset_after, undone, at, summary FROM ticks "
                                "WHERE id = ?", (tick_id,)).fetchone()
        if row is None:
            raise NotFound("tick", str(tick_id))
        blob, before, after, undone, at, summary = row
        if undone != APPLIED:
            raise StoreError(f"tick {tick_id} was already undone")
        if blob is None:
            n = store.config.limits.undoable_ticks
            raise StoreError(f"tick {tick_id} can no longer be undone: only the last {n} ticks are kept "
                             "undoable (limits.undoable_ticks in the store's TOML settings)")
        later = store.conn.execute(f"SELECT id FROM ticks WHERE id > ? AND undone != {UNDONE} LIMIT 1",
                                  (tick_id,)).fetchone()
        if later is not None:
            raise StoreError(f"tick {tick_id} cannot be undone before the later tick {later[0]}; "
                             "undo the latest tick first")
        undo = _unpack_undo(blob)
        for mid, s, layer, t in undo:
            tables.write_memory(mid, {"strength": s, "layer": layer, "ticked_at": t})
        info = json.loads(summary or "{}")
        marks = {"ticked_at": info.get("ticked_before")}
        if "config_before" in info:
            marks["decay_config"] = info["config_before"]
        for key, value in marks.items():
            if value is None:
                store.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                tables.set_meta(key, value)
        for mid, *_ in undo:
            tables.refresh_next_change(mid)
        tables.set_meta("clock_offset", repr(before))
        store.conn.execute("UPDATE ticks SET undone = ? WHERE id = ?", (UNDONE, tick_id))
        log = store.conn.execute("SELECT memory_id, to_layer, from_layer FROM tick_log WHERE tick_id = ?",
                                (tick_id,)).fetchall()
    counts: dict[str, int] = {}
    for _, a, b in log:
        label = transition_label(a, b)
        counts[label] = counts.get(label, 0) + 1
    return TickReport(tick_id, at, [tuple(r) for r in log], counts, store.stats()["layers"], len(undo),
                      after, before)


def redo_tick(store: MemoryStore, tick_id: int) -> TickReport:
    """Apply an undone tick again (at the same clock time)."""
    with store.tables.write():
        row = store.conn.execute("SELECT at, offset_before, offset_after, undone FROM ticks WHERE id = ?",
                                (tick_id,)).fetchone()
        if row is None or row[3] == APPLIED:
            raise StoreError(f"tick {tick_id} is not undone")
        store.tables.set_meta("clock_offset", repr(row[1]))
        store.conn.execute("UPDATE ticks SET undone = ? WHERE id = ?", (REDONE, tick_id))
        days = (row[2] - row[1]) / decay.DAY
        return tick(store, now=row[0], advance_days=days or None)


_LAYER_CODES = {name: i for i, name in enumerate(LAYERS)}


def _pack_undo(undo: list[tuple[str, float, str, float | None]]) -> bytes:
    """What a tick overwrote, compactly: ids, then old strengths, layers and tick times."""
    from array import array

    ids = "\x1f".join(u[0] for u in undo).encode("utf-8")
    strengths = array("d", (u[1] for u in undo)).tobytes()
    layers = bytes(_LAYER_CODES[u[2]] for u in undo)
    times = array("d", (-1.0 if u[3] is None else u[3] for u in undo)).tobytes()
    header = array("q", [len(undo), len(ids)]).tobytes()
    return b"MU1" + zlib.compress(header + ids + strengths + layers + times, 1)


def _unpack_undo(blob: bytes) -> list[tuple[str, float, str, float | None]]:
    from array import array

    if not blob.startswith(b"MU1"):
        raise StoreError("this tick's undo record is damaged; it cannot be undone")
    data = zlib.decompress(blob[3:])
    n, id_len = array("q", data[:16])
    pos = 16
    ids = data[pos:pos + id_len].decode("utf-8").split("\x1f") if n else []
    pos += id_len
    strengths = array("d", data[pos:pos + 8 * n])
    pos += 8 * n
    layers = [LAYERS[b] for b in data[pos:pos + n]]
    pos += n
    times = array("d", data[pos:pos + 8 * n])
    return [(ids[i], strengths[i], layers[i], None if times[i] < 0 else times[i]) for i in range(n)]


def check_days(days: Any) -> float:
    """``days`` as a float, or a :class:`ValidationError`: the clock moves forward, by at
    most a hundred years at a time."""
    if isinstance(days, bool) or not isinstance(days, (int, float)) or days != days or abs(days) > 36500:
        raise ValidationError("days", f"must be a number of days (at most 100 years), got {days!r}")
    if days < 0:
        raise ValidationError("days", f"the clock only moves forward; got {days}")
    return float(days)
