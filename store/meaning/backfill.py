"""Making the vectors a memory lacks, in the background or on request: the backfill of a
set (resumable, cancellable, a batch per transaction), the recall vectors of a small bulk
write made at once, and ``reembed``, which replaces every vector of a set by its model's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .embedding import EmbeddingError, prepare
from .vectors import BATCH, RECALL, SIMILARITY, VectorSet, _embedder_id, embedded, put_many, writable_for

if TYPE_CHECKING:
    from ..store import MemoryStore


@dataclass
class BackfillReport:
    embedded: int
    skipped: list[tuple[str, str]]  # (memory id, why) left for later
    remaining: int
    cancelled: bool
    seconds: float
    failed: str = ""  # why the embedder stopped the run (the ``remaining`` memories wait for the next one)

    def note(self) -> str:
        """What was left for later and why, in words ("" when nothing was)."""
        if self.failed:
            return (f"{self.remaining} memories are left without a vector for a later backfill (they are found "
                    f"by keywords until then): {self.failed}")
        if self.cancelled and self.remaining:
            return f"cancelled: {self.remaining} memories are left without a vector for a later backfill"
        return ""


def backfill(store: MemoryStore, batch: int = BATCH, progress: Callable[[int, int], None] | None = None,
             cancel: Callable[[], bool] | None = None, vs: VectorSet | None = None,
             only: Sequence[str] | None = None) -> BackfillReport:
    """Embed every memory that has no vector, ``batch`` at a time, each batch in its own
    transaction: resumable (what is done stays done), cancellable between batches
    (``cancel()`` true), ``progress(done, total)`` after each. A memory whose text
    cannot be embedded is left without a vector and named in the report. When the
    embedder itself fails (an endpoint that does not answer, or answers garbage), the run
    stops there: what is done stays, the rest is left for the next run, and the report
    says why (``failed``). ``vs`` is the set (:data:`SIMILARITY` unless said; a store that
    does not keep :data:`RECALL` has nothing to do for it). ``only``: of these memories alone."""
    start = time.perf_counter()
    vs = vs or SIMILARITY
    if store.read_only:
        raise EmbeddingError("the database is open read-only: its memories cannot be embedded here")
    if not vs.kept(store):
        return BackfillReport(0, [], 0, False, 0.0)
    with store.tables.reading():
        todo = [tuple(r) for r in store.conn.execute(
            "SELECT m.rowid, m.id, m.text FROM memories m WHERE NOT EXISTS "
            f"(SELECT 1 FROM {vs.table} v WHERE v.rowid = m.rowid) ORDER BY m.rowid").fetchall()]
        if only is not None:
            wanted = set(only)
            todo = [row for row in todo if row[1] in wanted]
        unavailable = _embedder_id(store, vs)[1] if todo else ""
        if unavailable:
            return BackfillReport(0, [], len(todo), False, time.perf_counter() - start, unavailable)
        if todo and not writable_for(store, vs):
            raise EmbeddingError(f"this database's {vs.name} vectors are by {store.tables.meta(vs.meta_key)}; "
                                 f"run mnemoscope reembed to replace them with {vs.embedder_id(store)}'s")
    done, skipped, cancelled, failed = 0, [], False, ""
    total = len(todo)
    why = [_nothing_to_embed(row[2]) for row in todo]  # "" for a text that can be embedded
    # Every text's vector is asked for at once: in worker processes for many (they all
    # work while batches are written), else a batch at a time here, as it is taken.
    stream = _Taken(embedded(store, [row[2] for row, w in zip(todo, why) if not w], max(1, batch), vs))
    try:
        for first in range(0, total, max(1, batch)):
            if cancel is not None and cancel():
                cancelled = True
                break
            chunk, reasons = todo[first:first + batch], why[first:first + batch]
            good = [row for row, w in zip(chunk, reasons) if not w]
            try:
                vectors = stream.take(len(good))
            except EmbeddingError as exc:
                failed = str(exc)
                break
            skipped += [(row[1], w) for row, w in zip(chunk, reasons) if w]
            with store.tables.write():
                # Only memories whose text is still what was embedded (another writer may have
                # changed it since: the trigger dropped that vector, and the next run makes it).
                pairs = [(mid, v) for (rowid, mid, text), v in zip(good, vectors)
                         if store.conn.execute("SELECT 1 FROM memories WHERE rowid = ? AND id = ? AND text = ?",
                                               (rowid, mid, text)).fetchone()]
                put_many(store, pairs, vs)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    finally:
        stream.close()
    return BackfillReport(done - len(skipped), skipped, total - done, cancelled, time.perf_counter() - start,
                          failed)


RECALL_AT_ONCE = 128  # a bulk write of at most this many memories makes their recall vectors itself (~4 s)


def recall_soon(store: MemoryStore, ids: Sequence[str]) -> int:
    """After a bulk write (an import) of ``ids``: when they are few (:data:`RECALL_AT_ONCE`),
    make their recall vectors now, in a transaction of their own; otherwise leave them to the
    background backfill (store/meaning/catch_up.py). Returns how many are left waiting (0 when the
    store keeps no recall set). A model that fails here leaves them waiting too."""
    if not ids or not RECALL.kept(store) or store.read_only:
        return 0
    if len(ids) <= RECALL_AT_ONCE:
        with suppress(EmbeddingError):
            report = backfill(store, vs=RECALL, only=ids)
            return report.remaining
    return len(ids)


def _nothing_to_embed(text: str) -> str:
    """Why ``text`` cannot be embedded ("" when it can)."""
    try:
        prepare(text)
    except EmbeddingError as exc:
        return str(exc)
    return ""


class _Taken:
    """Rows taken from a stream of parts (:func:`embedded`) as many at a time as asked."""

    def __init__(self, parts: Iterator[np.ndarray]) -> None:
        self.parts = parts
        self.held: list[np.ndarray] = []

    def take(self, n: int) -> np.ndarray:
        have = sum(len(rows) for rows in self.held)
        while have < n:
            part = next(self.parts)
            self.held.append(part)
            have += len(part)
        if not n:
            return np.zeros((0, 0), dtype=np.float32)
        rows = np.concatenate(self.held) if len(self.held) > 1 else self.held[0]
        self.held = [rows[n:]] if len(rows) > n else []
        return rows[:n]

    def close(self) -> None:
        close = getattr(self.parts, "close", None)
        if close is not None:
            close()


def reembed(store: MemoryStore, batch: int = BATCH, progress: Callable[[int, int], None] | None = None,
            cancel: Callable[[], bool] | None = None, vs: VectorSet | None = None) -> BackfillReport:
    """Replace every vector with the store's embedder's: the old ones are dropped (in one
    transaction, with the record of whose they were), then the backfill embeds all.
    Resumable: once the record names the store's embedder, the vectors there are its own
    (a reembed stopped midway, or none to switch), and only the missing ones are embedded."""
    if store.read_only:
        raise EmbeddingError("the database is open read-only: its memories cannot be embedded here")
    vs = vs or SIMILARITY
    if not vs.kept(store):
        return BackfillReport(0, [], 0, False, 0.0)
    vs.embedder(store).embed(["a probe that the new model loads and answers"])  # fail before dropping anything
    with store.tables.write():
        if store.tables.meta(vs.meta_key) != vs.embedder_id(store):
            store.conn.execute(f"DELETE FROM {vs.table}")
            store.tables.set_meta(vs.meta_key, vs.embedder_id(store))
    return backfill(store, batch, progress, cancel, vs)
