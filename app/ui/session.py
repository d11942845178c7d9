"""The open database as the inspector sees it: one store, one undo stack, one selection.

Views never keep their own copy of the truth: they read the store and refresh when
``changed`` says so. Writes made by another process (an agent adding memories) are
noticed through SQLite's data version and announced the same way.

A big store is read again off the GUI thread (:mod:`.background`): a view registers a
*preparer*, a function of the memories that does its heavy work without Qt, and finds what
it prepared in :meth:`prepared` when ``changed`` comes. Long writes (tick, advance,
import) run the same way through :meth:`start`, and so do their undo and redo
(:meth:`undo`, :meth:`redo`); while one runs the session is ``busy`` and nothing else
writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mnemoscope.store import ListenerLost, MemoryStore
from mnemoscope.store.forgetting.decay import DAY
from PySide6.QtCore import QObject, QSocketNotifier, QTimer, Signal
from PySide6.QtGui import QUndoStack

from .background import Cancelled, Job, drop_elsewhere

log = logging.getLogger("mnemoscope")

# From this many memories on, reading them again and long writes run off the GUI thread.
BACKGROUND_FROM = 5000
# An undo or redo that writes this many memories (an import's) runs off it in any store.
LONG_STEP_FROM = 500


class StoreSession(QObject):
    changed = Signal(object)            # set of memory ids, or None for "anything may have changed"
    selection_changed = Signal(object)  # memory id or None
    store_replaced = Signal()
    preview_changed = Signal(float)     # days ahead being previewed (0 = now)
    failed = Signal(str, str)           # title, message: an undo or redo the store refused
    busy_changed = Signal(object)       # the Job now running, or None when it ended
    said = Signal(str)                  # a short note for the status bar (a cancelled job)

    WATCH_INTERVAL_MS = 700
    RELISTEN_INTERVAL_MS = 1000

    def __init__(self, store: MemoryStore | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.undo_stack = QUndoStack(self)
        self._store: MemoryStore | None = None
        self._selected: str | None = None
        self._data_version = None
        self.preview_days = 0.0
        self._memories = None
        self._count = 0
        self._preparers: dict[str, Callable[[MemoryStore, list], Any]] = {}
        self._prepared: dict[str, Any] = {}
        self.job: Job | None = None
        self._fresh = False  # the memories were just read with the write being announced
        self.background_from = BACKGROUND_FROM
        self.long_step_from = LONG_STEP_FROM
        # Asked before the selection moves away (the editor: "save your edit?"); False keeps it.
        self.leave_guard: Callable[[], bool] = lambda: True
        self._watch = QTimer(self)
        self._watch.setInterval(self.WATCH_INTERVAL_MS)
        self._watch.timeout.connect(self._poll)
        # On PostgreSQL other writers are heard, not polled for: a LISTEN connection whose
        # socket Qt watches (store/backends/pg_notify.py); when it drops, it is reopened every second.
        self._listener = None
        self._heard: QSocketNotifier | None = None
        self._relisten = QTimer(self)
        self._relisten.setInterval(self.RELISTEN_INTERVAL_MS)
        self._relisten.timeout.connect(self._listen_again)
        if store is not None:
            self.set_store(store)

    @property
    def store(self) -> MemoryStore | None:
        return self._store

    @property
    def writable(self) -> bool:
        """Whether the window may write: a database is open and not read-only. Every
        action that writes is enabled by this one test (``store_replaced`` says when it
        may have changed)."""
        return self._store is not None and not self._store.read_only and self.job is None

    @property
    def busy(self) -> bool:
        return self.job is not None

    def memories(self):
        """The store's memories as of the last change, read once and shared by the views."""
        if self._memories is None:
            self._memories = self._store.list() if self._store is not None else []
            self._count = len(self._memories)
        return self._memories

    # -- work off the GUI thread ---------------------------------------------------
    def add_preparer(self, key: str, prepare: Callable[[MemoryStore, list], Any]) -> None:
        """``prepare(store, memories)`` runs off the GUI thread after a background read; it
        must not touch Qt objects (it gets a store of its own)."""
        self._preparers[key] = prepare

    def prepared(self, key: str) -> Any | None:
        """What ``key``'s preparer made for the change being announced (None: compute it)."""
        return self._prepared.get(key)

    def in_background(self) -> bool:
        """Whether reads and long writes go off the GUI thread: a big store in a file."""
        store = self._store
        return store is not None and store.path != ":memory:" and self._count >= self.background_from

    def read_all(self, store: MemoryStore, _written: Any = None) -> tuple[list, dict[str, Any]]:
        """The memories and every view's prepared data, read through ``store`` (a job's)."""
        memories = store.list()
        return memories, {key: prepare(store, memories) for key, prepare in list(self._preparers.items())}

    def start(self, title: str, write: Callable[[MemoryStore], Any], done: Callable[[Any], None],
              failure: str, *, cancellable: bool = True, reports: bool = False, writes: bool = True,
              refused: Callable[[Exception], None] | None = None, background: bool = False) -> Job | None:
        """Run ``write`` (a store operation) off the GUI thread when the store is big (or
        ``background``, and it is in a file), else here; then ``done(result)`` on the GUI thread with the memories already read again,
        so the command it pushes shows at once (``reports``: ``write(store, report)`` says how
        far it is through ``report(done, total)``). A failure is reported under ``failure`` and
        leaves no undo step (``refused(error)``, when given, is called instead); a cancelled
        job leaves the database as it was. ``writes=False``: ``write`` only reads (an
        import's plan and counts), and the memories are not read again after it."""

        def report(exc: Exception) -> None:
            if refused is not None:
                refused(exc)
            else:
                self.failed.emit(failure, str(exc))

        if self.job is not None or self._store is None:
            return None
        if not (self.in_background() or background and self._store.path != ":memory:"):
            try:
                result = write(self._store, lambda _done, _total: None) if reports else write(self._store)
            except Exception as exc:
                report(exc)
                return None
            done(result)
            return None
        job = Job(self._store, title, write, self.read_all if writes else None, cancellable=cancellable,
                  writes=writes, reports=reports, memories=self._count if writes else 0, parent=self)

        def finished(written, read):
            if not self._ended(job):
                return
            if not writes:
                done(written)
                return
            self._install(read)
            self._fresh = isinstance(read, tuple)
            try:
                done(written)
            finally:
                self._fresh = False
                self._prepared = {}

        def failed(exc):
            if not self._ended(job):
                return
            if isinstance(exc, Cancelled):
                self.said.emit(f"{title}: cancelled; nothing was written")
            else:
                report(exc)

        job.finished.connect(finished)
        job.failed.connect(failed)
        self.job = job
        self.busy_changed.emit(job)
        job.start()
        return job

    def undo(self) -> None:
        """Edit › Undo: the last command's undo, its store work off the GUI thread first when
        it is long (StoreCommand.runs_long) and the store or the step big."""
        self._step(self.undo_stack.index() - 1, "Undo")

    def redo(self) -> None:
        """Edit › Redo, as :meth:`undo`."""
        self._step(self.undo_stack.index(), "Redo")

    def _step(self, index: int, verb: str) -> None:
        stack = self.undo_stack
        command = stack.command(index) if 0 <= index < stack.count() else None
        if self.job is not None or command is None:
            return
        step = stack.undo if verb == "Undo" else stack.redo
        if not (getattr(command, "runs_long", False)
                and (self.in_background() or command.memories() >= self.long_step_from)):
            step()
            return

        def done(result: Any) -> None:  # nothing else wrote meanwhile: the session was busy
            command.prepare(result)
            step()

        self.start(f"{verb}: {command.text()}", command.undo_work if verb == "Undo" else command.redo_work, done,
                   f"{verb} failed: {command.text()}", background=True)

    def reload_in_background(self) -> Job | None:
        """Read every memory again off the GUI thread and then announce ``changed(None)``."""
        if self.job is not None or self._store is None:
            return None
        job = Job(self._store, f"Reading {self._count:,} memories", lambda _store: None, self.read_all,
                  writes=False, memories=self._count, parent=self)

        def finished(_written, read):
            if not self._ended(job):
                return
            self._install(read)
            try:
                self.changed.emit(None)
            finally:
                self._prepared = {}

        def failed(exc):
            if self._ended(job):
                self.notify(None)  # read here instead

        job.finished.connect(finished)
        job.failed.connect(failed)
        self.job = job
        self.busy_changed.emit(job)
        job.start()
        return job

    def _install(self, read) -> None:
        drop_elsewhere(self._memories)
        if isinstance(read, tuple):
            self._memories, self._prepared = read
            self._count = len(self._memories)
        else:  # the read after a write failed: views read for themselves
            self._memories, self._prepared = None, {}
        self._data_version = self._store.data_version()  # the job's own commit is no outside write

    def _ended(self, job: Job) -> bool:
        """The job is over; False when its result no longer matters (the store was closed
        or replaced meanwhile)."""
        if job is not self.job:
            return False
        self.job = None
        self.busy_changed.emit(None)
        return self._store is not None

    def _drop_job(self) -> None:
        if self.job is not None:
            self.job.cancel()
            self.job = None
            self.busy_changed.emit(None)

    def set_store(self, store: MemoryStore) -> None:
        self._drop_job()
        old = self._store
        self._store = store
        self._selected = None
        self.undo_stack.clear()
        self._data_version = store.data_version()
        self._stop_listening()
        if store.hears_other_writers:
            self._watch.stop()
            self._listen(store)
        else:
            self._watch.start()
        if old is not None and old is not store:
            old.close()
        self._memories = None
        self._count = store.count()
        self.store_replaced.emit()
        if self.in_background():
            self._memories = []  # the window shows at once, empty; the memories follow
            self._fresh = True
            try:
                self.changed.emit(None)
            finally:
                self._fresh = False
            self.reload_in_background()
        else:
            self.changed.emit(None)
        self.selection_changed.emit(None)

    def close(self) -> None:
        self._drop_job()
        self._watch.stop()
        self._stop_listening()
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- selection shared by every view -----------------------------------------
    @property
    def selected_id(self) -> str | None:
        return self._selected

    def select(self, memory_id: str | None) -> bool:
        """Select a memory everywhere; when the guard refuses, every view is told to show
        the current selection again and False is returned."""
        if memory_id == self._selected:
            return True
        if not self.leave_guard():
            self.selection_changed.emit(self._selected)
            return False
        self._selected = memory_id
        self.selection_changed.emit(memory_id)
        return True

    # -- time travel -------------------------------------------------------------
    def set_preview_days(self, days: float) -> None:
        if days != self.preview_days:
            self.preview_days = days
            self.preview_changed.emit(days)

    def preview_now(self) -> float:
        return self._store.now() + self.preview_days * DAY

    # -- writes ------------------------------------------------------------------
    def push(self, command) -> None:
        """Run an undoable store command; when it fails nothing stays on the undo stack
        and its error is raised here."""
        self.undo_stack.push(command)
        if command.error is not None:
            raise command.error

    def run(self, command, failure: str) -> bool:
        """Run an undoable store command, as Anki's ``CollectionOp`` does: True when it was
        written; when it fails nothing stays on the undo stack, ``failed`` reports the error
        under the title ``failure`` and False is returned. Every view writes through here
        (or :meth:`push`, when it shows the error itself)."""
        try:
            self.push(command)
        except Exception as exc:  # a store error, or a file that vanished: the person must see it
            self.failed.emit(failure, str(exc))
            return False
        return True

    def notify(self, ids: set[str] | None) -> None:
        """A write of ours happened: refresh views. (Our own commits leave our connection's
        data version as it was, so the watch still sees an outside write made just before.)
        After a background job the memories were read again with the write; a change of
        everything in a big store (an undone tick) is read again off the GUI thread."""
        if self._fresh:
            self.changed.emit(ids)
            return
        if ids is None and self.job is None and self.in_background():
            self.reload_in_background()
            return
        self._memories = None
        self.changed.emit(ids)

    def own_write_elsewhere(self) -> None:
        """The window's own work committed through another connection (the backfill of
        vectors): not an outside write for the watch to read everything again for."""
        if self._store is not None:
            self._data_version = self._store.data_version()

    # -- other writers on PostgreSQL: heard through LISTEN/NOTIFY -----------------------
    @property
    def listening(self) -> bool:
        return self._heard is not None

    def _listen(self, store: MemoryStore) -> bool:
        try:
            self._listener = store.listen()
        except ListenerLost as exc:
            log.warning("cannot listen for other writers of %s: %s", store.path, exc)
            self._relisten.start()
            return False
        self._heard = QSocketNotifier(self._listener.fileno(), QSocketNotifier.Type.Read, self)
        self._heard.activated.connect(self._hear)
        return True

    def _stop_listening(self) -> None:
        self._relisten.stop()
        if self._heard is not None:
            self._heard.setEnabled(False)
            self._heard.deleteLater()
            self._heard = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _hear(self, *_args) -> None:
        try:
            heard = self._listener.pending()
        except ListenerLost as exc:
            log.warning("lost the listening connection to %s: %s", self._store.path, exc)
            self._stop_listening()
            self._relisten.start()
            return
        if heard:
            self._outside_write()

    def _listen_again(self) -> None:
        store = self._store
        if store is None:
            self._relisten.stop()
            return
        self._stop_listening()
        if self._listen(store):  # back: what was written meanwhile had no one to hear it
            self._outside_write()

    def _outside_write(self) -> None:
        if self._store is None:
            return
        if self.job is not None:  # its own commit may be what was heard; look again once it is done
            QTimer.singleShot(250, self._outside_write)
            return
        if self.in_background():
            self.reload_in_background()
            return
        self._memories = None
        self.changed.emit(None)

    def _poll(self) -> None:
        if self._store is None or self.job is not None:
            return
        try:
            version = self._store.data_version()
        except Exception:  # a closed or vanished database: stop watching
            self._watch.stop()
            return
        if version != self._data_version:
            self._data_version = version
            if self.in_background():
                self.reload_in_background()
                return
            self._memories = None
            self.changed.emit(None)
