"""The open database as the inspector sees it: one store, one undo stack, one selection.

Views never keep their own copy of the truth: they read the store and refresh when
``changed`` says so. Writes made by another process (an agent adding memories) are
noticed through SQLite's data version and announced the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from mnemoscope.store import MemoryStore
from mnemoscope.store.decay import DAY
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoStack


class StoreSession(QObject):
    changed = Signal(object)            # set of memory ids, or None for "anything may have changed"
    selection_changed = Signal(object)  # memory id or None
    store_replaced = Signal()
    preview_changed = Signal(float)     # days ahead being previewed (0 = now)
    failed = Signal(str, str)           # title, message: an undo or redo the store refused

    WATCH_INTERVAL_MS = 700

    def __init__(self, store: MemoryStore | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.undo_stack = QUndoStack(self)
        self._store: MemoryStore | None = None
        self._selected: str | None = None
        self._data_version = None
        self.preview_days = 0.0
        self._memories = None
        # Asked before the selection moves away (the editor: "save your edit?"); False keeps it.
        self.leave_guard: Callable[[], bool] = lambda: True
        self._watch = QTimer(self)
        self._watch.setInterval(self.WATCH_INTERVAL_MS)
        self._watch.timeout.connect(self._poll)
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
        return self._store is not None and not self._store.read_only

    def memories(self):
        """The store's memories as of the last change, read once and shared by the views."""
        if self._memories is None:
            self._memories = self._store.list() if self._store is not None else []
        return self._memories

    def set_store(self, store: MemoryStore) -> None:
        old = self._store
        self._store = store
        self._selected = None
        self.undo_stack.clear()
        self._data_version = store.data_version()
        self._watch.start()
        if old is not None and old is not store:
            old.close()
        self._memories = None
        self.store_replaced.emit()
        self.changed.emit(None)
        self.selection_changed.emit(None)

    def close(self) -> None:
        self._watch.stop()
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

    def notify(self, ids: set[str] | None) -> None:
        """A write of ours happened: refresh views. (Our own commits leave our connection's
        data version as it was, so the watch still sees an outside write made just before.)"""
        self._memories = None
        self.changed.emit(ids)

    def _poll(self) -> None:
        if self._store is None:
            return
        try:
            version = self._store.data_version()
        except Exception:  # a closed or vanished database: stop watching
            self._watch.stop()
            return
        if version != self._data_version:
            self._data_version = version
            self._memories = None
            self.changed.emit(None)
