"""Long store operations off the GUI thread, the way napari's ``thread_worker`` runs them:
Qt's thread pool runs the work, signals bring the result back to the GUI thread, where it
is applied in one step.

The work gets a store of its own on the same file (an SQLite connection belongs to the
thread that uses it, and the window keeps reading through its own meanwhile: WAL lets
both). A job has two parts: ``write`` runs in one transaction and may be cancelled until
that commits — an SQLite progress handler aborts a long statement, the transaction rolls
back and the database is exactly as before; ``read`` follows once the write committed (the
window's new view of the store) and is never cancelled, so a committed write always
reaches the undo stack. A write that commits in steps of its own (``in_steps``: the
backfill of vectors, batch by batch) is asked to stop between two steps instead, through
``job.cancelled``, and what it committed stays.

This is the window's one way to run work off the GUI thread: every long operation, its
undo and redo (StoreSession.start, .undo, .redo), the map's preview and the backfill are
jobs.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import Any

from mnemoscope.store import MemoryStore
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from . import heap

PROGRESS_AFTER_MS = 300  # a job that lasts longer shows its progress line
DROP_AFTER_S = 0.5
FREE_SLICE = 2000  # objects freed at once when letting go of a big list


class Cancelled(Exception):
    """The person cancelled the job before it wrote anything."""


class _Signals(QObject):
    done = Signal(object, object)  # what write returned, what read returned
    failed = Signal(object)        # the exception
    progress = Signal(int, int)    # done, total


class _Task(QRunnable):
    def __init__(self, job: Job) -> None:
        super().__init__()
        self.job = job
        self.signals = job._signals

    def _emit(self, name: str, *args: Any) -> None:
        # Once the window is gone (the job was dropped with it) there is nobody to tell.
        try:
            getattr(self.signals, name).emit(*args)
        except RuntimeError:
            heap.resume(self.job)

    def run(self) -> None:
        job = self.job
        try:
            store = MemoryStore(job.path, job.config, create=False, read_only=not job.writes, embedder=job.embedder,
                                recall_embedder=job.recall_embedder)
        except Exception as exc:  # the file went away: said like any other failure
            self._emit("failed", exc)
            return
        try:
            # A cancel stops the running statement (SQLite looks at the flag as it runs; a
            # PostgreSQL server is asked to stop it); a job in steps stops between two.
            with store.cancellable(lambda: job.cancelled and not job.in_steps) as stop:
                job.interrupt = None if job.in_steps else stop
                try:
                    if job.cancelled:
                        raise Cancelled()
                    if job.writes and not job.in_steps:
                        # One transaction round the whole write: a cancel that comes before its
                        # end rolls everything back, however short each statement was.
                        with store.transaction():
                            written = job.call(store)
                            if job.cancelled:
                                raise Cancelled()
                    else:
                        written = job.call(store)
                except Exception as exc:
                    self._emit("failed", Cancelled() if job.cancelled else exc)
                    return
                finally:
                    job.interrupt = None  # the read after the write is never cancelled
            try:
                read = job.read(store, written) if job.read is not None else None
            except Exception as exc:  # the write stands; the window reads again itself
                read = exc
            self._emit("done", written, read)
        finally:
            store.close()


class _Drop(QRunnable):
    def __init__(self, objects: tuple) -> None:
        super().__init__()
        self.objects = objects

    def run(self) -> None:
        time.sleep(DROP_AFTER_S)  # the caller lets go of its own references meanwhile
        pending, self.objects = list(self.objects), None
        # Freeing is C code that holds the interpreter lock until it is done: a list of a
        # hundred thousand memories freed at once held it (and the GUI thread) for a tenth
        # of a second. What only we hold now is freed in slices, between which the GUI
        # thread may run; what someone still holds is only let go.
        while pending:
            obj = pending.pop()
            if sys.getrefcount(obj) == 2:  # ``obj`` here and getrefcount's own argument
                if isinstance(obj, list):
                    while obj:
                        del obj[-FREE_SLICE:]
                elif hasattr(obj, "__dict__") and not isinstance(obj, type):
                    pending.extend(vars(obj).values())  # a MapData: its lists go the same way
                    vars(obj).clear()
            del obj


def drop_elsewhere(*objects: Any) -> None:
    """Let go of ``objects`` on a pool thread: freeing a hundred thousand memories read
    before takes a noticeable part of a second, which the GUI thread need not wait for.
    The caller replaces its references to them at once (within ``DROP_AFTER_S``)."""
    if any(objects):
        QThreadPool.globalInstance().start(_Drop(objects))


class Job(QObject):
    """One store operation in the background. ``finished(written, read)`` or ``failed(exc)``
    is emitted on the GUI thread (``Cancelled`` when cancelled in time). ``memories``: how
    many memories it reads or builds objects for (the collector's pass after it is skipped
    when that is many, see :mod:`.heap`)."""

    finished = Signal(object, object)
    failed = Signal(object)
    progress = Signal(int, int)  # done, total: said by a ``write`` that ``reports``

    def __init__(self, store: MemoryStore, title: str, write: Callable[[MemoryStore], Any],
                 read: Callable[[MemoryStore, Any], Any] | None = None, *, cancellable: bool = True,
                 writes: bool = True, in_steps: bool = False, reports: bool = False, memories: int = 0,
                 share_embedder: bool = False, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.path = store.reopen_target()  # a server's URL keeps its password here
        self.config = store.config
        # The window's embedder itself, not one of the job's own: a model loaded once.
        self.embedder = store.embedder if share_embedder else None
        self.recall_embedder = store.recall_embedder if share_embedder else "config"
        self.in_steps = in_steps  # the write commits its own steps; a cancel is asked between two
        self.write = write
        self.read = read
        self.cancellable = cancellable
        self.writes = writes  # False: ``write`` only reads (no transaction, no write lock)
        self.memories = memories  # how many memories it reads or builds for (see heap.pause)
        self.reports = reports  # True: ``write(store, report)``, where ``report(done, total)`` says how far
        self.cancelled = False
        self.interrupt: Callable[[], None] | None = None  # stops the server's statement (PostgreSQL)
        self.running = False
        self.shown_by: QObject | None = None  # a dialog of its own showing its progress (else the status bar)
        self._said_at = 0.0
        self._signals = _Signals()
        self._signals.done.connect(self._done)
        self._signals.failed.connect(self._failed)
        self._signals.progress.connect(self.progress)
        self._inline_store = store if store.path == ":memory:" else None

    def start(self) -> None:
        self.running = True
        if self._inline_store is not None:
            # An in-memory database has no file a second connection could open: it runs here.
            try:
                written = self.call(self._inline_store)
            except Exception as exc:
                self._failed(exc)
                return
            self._done(written, self.read(self._inline_store, written) if self.read else None)
            return
        heap.pause(self, self.memories)  # a full collection over what the job builds would stall the GUI thread
        self.destroyed.connect(partial(heap.resume_key, id(self)))  # gone before its end was heard
        QThreadPool.globalInstance().start(_Task(self))

    def call(self, store: MemoryStore) -> Any:
        return self.write(store, self.report) if self.reports else self.write(store)

    def report(self, done: int, total: int) -> None:
        """How far the write is (called on its thread; said at most every 50 ms). A cancel
        ends the write here too, between two steps that run no SQL (embedding a batch),
        unless it commits in steps of its own (it reads ``cancelled`` itself)."""
        if self.cancelled and not self.in_steps:
            raise Cancelled()
        now = time.monotonic()
        if done >= total or now - self._said_at >= 0.05:
            self._said_at = now
            with suppress(RuntimeError):  # the window is gone
                self._signals.progress.emit(done, total)

    def cancel(self) -> None:
        if self.cancellable:
            self.cancelled = True
            interrupt = self.interrupt
            if interrupt is not None:
                interrupt()

    def _done(self, written: Any, read: Any) -> None:
        self.running = False
        try:
            self.finished.emit(written, read)
        finally:
            heap.resume(self)  # after the views took the result: it is what gets frozen

    def _failed(self, exc: Exception) -> None:
        self.running = False
        try:
            self.failed.emit(exc)
        finally:
            heap.resume(self)
