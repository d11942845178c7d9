"""Every write of the inspector is an undoable command over one store operation.

A command whose store operation fails marks itself obsolete, so ``QUndoStack`` drops it:
a failed first run leaves nothing on the stack (``StoreSession.push`` then raises the
error), and a failed undo or redo removes the command and is reported through
``StoreSession.failed`` — the way Anki's operations report a failure and change nothing.

A command that ``runs_long`` (an import, a tick) keeps its undo and redo in two parts:
``undo_work(store)`` and ``redo_work(store)``, the store operation alone (one transaction,
no Qt), which the session runs off the GUI thread on a big store or a big step
(StoreSession.undo, .redo); then ``revert`` and ``apply`` only show what it did
(:meth:`StoreCommand.prepare`). Every undoable write of the window is a command of this
package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemoscope.store import MemoryStore
from PySide6.QtGui import QUndoCommand

from ..session import StoreSession


class StoreCommand(QUndoCommand):
    """One store operation: subclasses write ``apply`` (first run and redo) and ``revert``,
    and, when it ``runs_long``, ``undo_work`` and ``redo_work`` (see the module's docstring)."""

    runs_long = False

    def __init__(self, session: StoreSession, text: str) -> None:
        super().__init__(text)
        self.session = session
        self.error: Exception | None = None
        self._done = False
        self._prepared: tuple[Any] | None = None

    def apply(self) -> None:
        raise NotImplementedError

    def revert(self) -> None:
        raise NotImplementedError

    def memories(self) -> int:
        """How many memories its undo and redo write (a long one runs off the GUI thread
        from StoreSession.long_step_from on)."""
        return 0

    def undo_work(self, store: MemoryStore) -> Any:
        """The store operation of an undo, on ``store`` (perhaps a job's own): no Qt here."""
        raise NotImplementedError

    def redo_work(self, store: MemoryStore) -> Any:
        """The store operation of a redo, on ``store``: no Qt here."""
        raise NotImplementedError

    def prepare(self, result: Any) -> None:
        """What the next undo or redo wrote already, off the GUI thread: it only shows it."""
        self._prepared = (result,)

    def _work(self, work: Callable[[MemoryStore], Any]) -> Any:
        """``work``'s result: prepared already, or run here on the window's store."""
        if self._prepared is not None:
            (result,), self._prepared = self._prepared, None
            return result
        return work(self.session.store)

    def _run(self, step, action: str) -> None:
        try:
            step()
        except Exception as exc:  # any failure must leave the stack as it was
            self.error = exc
            self.setObsolete(True)
            if self._done:  # a later undo/redo: there is no caller to raise to
                self.session.failed.emit(f"{action} failed: {self.text()}", str(exc))
            self.session.notify(None)
            return
        self._done = True

    def redo(self) -> None:
        self._run(self.apply, "Redo" if self._done else "Operation")

    def undo(self) -> None:
        self._run(self.revert, "Undo")
