"""Every write of the inspector is an undoable command over one store operation."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QUndoCommand

from store import DeletedMemory, Memory, StoreError, TickReport, activity
from store.activity import Forgotten

from .session import StoreSession


class NewMemoryCommand(QUndoCommand):
    """Remember a memory (a near-duplicate reinforces the existing one instead)."""

    def __init__(self, session: StoreSession, fields: dict[str, Any]) -> None:
        super().__init__("New memory")
        self.session = session
        self.fields = fields
        self.memory_id: str | None = None
        self.created = False
        self.before: Memory | None = None
        self.snapshot: DeletedMemory | None = None
        self.message = ""

    def redo(self) -> None:
        store = self.session.store
        if self.snapshot is not None:
            store.restore(self.snapshot)
        elif self.memory_id is None:
            result = store.remember(**self.fields)
            self.memory_id, self.created, self.message = result.memory.id, result.created, result.message
            self.before = result.before
            if not self.created:
                self.setText("Reinforce memory")
        else:  # redo of a reinforcement
            store.reinforce(self.memory_id)
        self.session.notify({self.memory_id})
        self.session.select(self.memory_id)

    def undo(self) -> None:
        store = self.session.store
        if self.created:
            self.snapshot = store.delete(self.memory_id)
            self.session.select(None)
        else:
            store.restore_state(self.before)
        self.session.notify({self.memory_id})


class EditMemoryCommand(QUndoCommand):
    def __init__(self, session: StoreSession, memory_id: str, changes: dict[str, Any]) -> None:
        super().__init__("Edit memory")
        self.session = session
        self.memory_id = memory_id
        self.changes = changes
        self.before: Memory | None = None

    def redo(self) -> None:
        result = self.session.store.update(self.memory_id, **self.changes)
        if self.before is None:
            self.before = result.before
        self.session.notify({self.memory_id})

    def undo(self) -> None:
        self.session.store.restore_state(self.before)
        self.session.notify({self.memory_id})


class DeleteMemoryCommand(QUndoCommand):
    def __init__(self, session: StoreSession, memory_id: str) -> None:
        super().__init__("Delete memory")
        self.session = session
        self.memory_id = memory_id
        self.snapshot: DeletedMemory | None = None

    def redo(self) -> None:
        self.snapshot = self.session.store.delete(self.memory_id)
        if self.session.selected_id == self.memory_id:
            self.session.select(None)
        self.session.notify({self.memory_id})

    def undo(self) -> None:
        self.session.store.restore(self.snapshot)
        self.session.notify({self.memory_id})
        self.session.select(self.memory_id)


class TickCommand(QUndoCommand):
    """Move the clock ``advance_days`` forward (0: not at all) and tick, as one step."""

    def __init__(self, session: StoreSession, advance_days: float = 0.0) -> None:
        label = "Tick" if not advance_days else f"Advance {advance_days:g} days"
        super().__init__(label)
        self.session = session
        self.advance_days = advance_days
        self.report: TickReport | None = None

    def redo(self) -> None:
        store = self.session.store
        if self.report is None:
            self.report = store.tick(advance_days=self.advance_days or None)
        else:
            self.report = store.redo_tick(self.report.tick_id)
        self.session.notify(None)

    def undo(self) -> None:
        self.session.store.undo_tick(self.report.tick_id)
        self.session.notify(None)


class RestoreForgottenCommand(QUndoCommand):
    """Bring back a memory an agent forgot; undo forgets it again (restorable as before)."""

    def __init__(self, session: StoreSession, forgotten: Forgotten) -> None:
        super().__init__("Restore forgotten memory")
        self.session = session
        self.forgotten = forgotten
        self.error = ""

    def redo(self) -> None:
        try:
            activity.restore_forgotten(self.session.store, self.forgotten.memory_id)
        except StoreError as exc:  # restored elsewhere meanwhile, or the id is taken: leave no step behind
            self.error = str(exc)
            self.setObsolete(True)
            return
        self.session.notify({self.forgotten.memory_id})
        self.session.select(self.forgotten.memory_id)

    def undo(self) -> None:
        activity.forget(self.session.store, self.forgotten.memory_id, client=self.forgotten.client)
        if self.session.selected_id == self.forgotten.memory_id:
            self.session.select(None)
        self.session.notify({self.forgotten.memory_id})


class SupersedeCommand(QUndoCommand):
    """``newer`` replaces ``older``: the older memory is archived (store.conflicts.supersede)."""

    def __init__(self, session: StoreSession, newer: str, older: str) -> None:
        super().__init__("Supersede memory")
        self.session = session
        self.newer, self.older = newer, older
        self.result = None

    def redo(self) -> None:
        from store.conflicts import supersede

        self.result = supersede(self.session.store, self.newer, self.older)
        self.session.notify({self.newer, self.older})

    def undo(self) -> None:
        from store.conflicts import undo_supersede

        undo_supersede(self.session.store, self.result)
        self.session.notify({self.newer, self.older})


class KeepBothCommand(QUndoCommand):
    """Two memories that seemed to conflict both stay: the pair is no longer flagged."""

    def __init__(self, session: StoreSession, a: str, b: str) -> None:
        super().__init__("Keep both memories")
        self.session = session
        self.a, self.b = a, b
        self.edges: list[tuple[str, str, str]] = []

    def redo(self) -> None:
        from store.conflicts import keep_both

        self.edges = keep_both(self.session.store, self.a, self.b)
        self.session.notify({self.a, self.b})

    def undo(self) -> None:
        from store.conflicts import remove_edges

        remove_edges(self.session.store, self.edges)
        self.session.notify({self.a, self.b})
