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
module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemoscope.store import DeletedMemory, Memory, MemoryStore, TickReport, activity, conflicts, importers
from mnemoscope.store.activity import Forgotten
from mnemoscope.store.importers import ImportPlan, ImportResult
from mnemoscope.store.jsonl import ImportReport
from PySide6.QtGui import QUndoCommand

from .session import StoreSession


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


class NewMemoryCommand(StoreCommand):
    """Remember a memory (a near-duplicate reinforces the existing one instead)."""

    def __init__(self, session: StoreSession, fields: dict[str, Any]) -> None:
        super().__init__(session, "New memory")
        self.fields = fields
        self.memory_id: str | None = None
        self.created = False
        self.before: Memory | None = None
        self.snapshot: DeletedMemory | None = None
        self.message = ""

    def apply(self) -> None:
        store = self.session.store
        if self.snapshot is not None:
            store.restore(self.snapshot)
        elif self.memory_id is None:
            result = store.remember(**self.fields)
            self.memory_id, self.created, self.message = result.memory.id, result.created, result.message
            self.before = result.before
            if not self.created:
                self.setText("Reinforce memory")
                by = "by meaning" if result.duplicate_by == "meaning" else "by its characters"
                self.message = (f"Reinforced memory {self.memory_id} (“{_short(result.memory.text)}”), which "
                                f"already says this ({by}, similarity {result.similarity:.2f}), instead of adding "
                                "a copy. Edit › Undo takes the reinforcement back.")
        else:  # redo of a reinforcement
            store.reinforce(self.memory_id)
        self.session.notify({self.memory_id})
        self.session.select(self.memory_id)

    def revert(self) -> None:
        store = self.session.store
        if self.created:
            self.snapshot = store.delete(self.memory_id)
            self.session.select(None)
        else:  # only what the reinforcement wrote: an agent's edit made since stays
            store.restore_state(self.before, store.REINFORCED)
        self.session.notify({self.memory_id})


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EditMemoryCommand(StoreCommand):
    """Change some fields; undo puts back those fields only, so whatever an agent did to
    the memory meanwhile (recalls, other fields) stays."""

    def __init__(self, session: StoreSession, memory_id: str, changes: dict[str, Any]) -> None:
        super().__init__(session, "Edit memory")
        self.memory_id = memory_id
        self.changes = changes
        self.before: dict[str, Any] | None = None

    def apply(self) -> None:
        result = self.session.store.update(self.memory_id, **self.changes)
        if self.before is None:
            self.before = {k: getattr(result.before, k) for k in self.changes}
        self.session.notify({self.memory_id})

    def revert(self) -> None:
        self.session.store.update(self.memory_id, **self.before)
        self.session.notify({self.memory_id})


class DeleteMemoryCommand(StoreCommand):
    def __init__(self, session: StoreSession, memory_id: str) -> None:
        super().__init__(session, "Delete memory")
        self.memory_id = memory_id
        self.snapshot: DeletedMemory | None = None

    def apply(self) -> None:
        self.snapshot = self.session.store.delete(self.memory_id)
        if self.session.selected_id == self.memory_id:
            self.session.select(None)
        self.session.notify({self.memory_id})

    def revert(self) -> None:
        self.session.store.restore(self.snapshot)
        self.session.notify({self.memory_id})
        self.session.select(self.memory_id)


class ImportCommand(StoreCommand):
    """Import JSONL lines (existing ids are skipped); undo deletes what came in, and redo
    puts it back, each in one transaction. Given the ``report`` of an import already made
    (off the GUI thread), the first run only shows it."""

    runs_long = True

    def __init__(self, session: StoreSession, source: Any, label: str = "Import",
                 report: ImportReport | None = None) -> None:
        super().__init__(session, label)
        self.source = source
        self.report: ImportReport | None = report
        self.snapshots: list[DeletedMemory] = []

    def memories(self) -> int:
        return len(self.report.ids) if self.report is not None else 0

    def undo_work(self, store: MemoryStore) -> list[DeletedMemory]:
        return store.delete_many(self.report.ids)

    def redo_work(self, store: MemoryStore) -> None:
        store.restore_many(self.snapshots)

    def apply(self) -> None:
        if self.report is None:
            self.report = self.session.store.import_jsonl(self.source)
        elif self._done:
            self._work(self.redo_work)
            self.snapshots = []
        self.session.notify(None)
        if self.report.ids:
            self.session.select(self.report.ids[0])

    def revert(self) -> None:
        if self.session.selected_id in self.report.ids:
            self.session.select(None)
        self.snapshots = self._work(self.undo_work)
        self.session.notify(None)


class ForeignImportCommand(StoreCommand):
    """Write another tool's import plan; undo takes back its memories, relations and new
    entities, in one transaction. Given the ``result`` of the plan already written (off the
    GUI thread), the first run only shows it."""

    runs_long = True

    def __init__(self, session: StoreSession, plan: ImportPlan, result: ImportResult | None = None) -> None:
        super().__init__(session, f"Import {plan.format}")
        self.plan = plan
        self.result: ImportResult | None = result

    def memories(self) -> int:
        return len(self.result.ids) if self.result is not None else 0

    def undo_work(self, store: MemoryStore) -> None:
        importers.undo(store, self.result)

    def redo_work(self, store: MemoryStore) -> ImportResult:
        return importers.apply(store, self.plan)

    def apply(self) -> None:
        if self.result is None or self._done:
            self.result = self._work(self.redo_work)
        self.session.notify(None)
        if self.result.ids:
            self.session.select(self.result.ids[0])

    def revert(self) -> None:
        if self.session.selected_id in self.result.ids:
            self.session.select(None)
        self._work(self.undo_work)
        self.session.notify(None)


def days_label(days: float) -> str:
    return f"{days:g} day" + ("" if days == 1 else "s")


class TickCommand(StoreCommand):
    """Move the clock ``advance_days`` forward (0: not at all) and tick, as one step. Given
    the ``report`` of a tick already made (off the GUI thread), the first run only shows it."""

    runs_long = True

    def __init__(self, session: StoreSession, advance_days: float = 0.0, report: TickReport | None = None) -> None:
        super().__init__(session, "Tick" if not advance_days else f"Advance {days_label(advance_days)}")
        self.advance_days = advance_days
        self.report: TickReport | None = report

    def memories(self) -> int:
        return self.report.changed if self.report is not None else 0

    def undo_work(self, store: MemoryStore) -> None:
        store.undo_tick(self.report.tick_id)

    def redo_work(self, store: MemoryStore) -> TickReport:
        return store.redo_tick(self.report.tick_id)

    def apply(self) -> None:
        if self.report is None:
            self.report = self.session.store.tick(advance_days=self.advance_days or None)
        elif self._done:
            self.report = self._work(self.redo_work)
        self.session.notify(None)

    def revert(self) -> None:
        self._work(self.undo_work)
        self.session.notify(None)


class PinCommand(StoreCommand):
    """Pin a memory; undo puts back its pin and what pinning touched (its strength's start,
    so the days towards the archive count from where they were), nothing else."""

    def __init__(self, session: StoreSession, memory_id: str) -> None:
        super().__init__(session, "Pin memory")
        self.memory_id = memory_id
        self.before: Memory | None = None

    def apply(self) -> None:
        result = self.session.store.pin(self.memory_id)
        self.before = self.before or result.before
        self.session.notify({self.memory_id})

    def revert(self) -> None:
        store = self.session.store
        store.restore_state(self.before, ("pinned", *store.TOUCHED))
        self.session.notify({self.memory_id})


class RestoreForgottenCommand(StoreCommand):
    """Bring back a memory an agent forgot; undo forgets it again (restorable as before).
    Restored elsewhere meanwhile, or its id taken: ``error`` says so and no step is left."""

    def __init__(self, session: StoreSession, forgotten: Forgotten) -> None:
        super().__init__(session, "Restore forgotten memory")
        self.forgotten = forgotten

    def apply(self) -> None:
        activity.restore_forgotten(self.session.store, self.forgotten.memory_id)
        self.session.notify({self.forgotten.memory_id})
        self.session.select(self.forgotten.memory_id)

    def revert(self) -> None:
        activity.forget(self.session.store, self.forgotten.memory_id, client=self.forgotten.client)
        if self.session.selected_id == self.forgotten.memory_id:
            self.session.select(None)
        self.session.notify({self.forgotten.memory_id})


class SupersedeCommand(StoreCommand):
    """``newer`` replaces ``older``: the older memory is archived (store.conflicts.supersede)."""

    def __init__(self, session: StoreSession, newer: str, older: str) -> None:
        super().__init__(session, "Supersede memory")
        self.newer, self.older = newer, older
        self.result = None

    def apply(self) -> None:
        self.result = conflicts.supersede(self.session.store, self.newer, self.older)
        self.session.notify({self.newer, self.older})

    def revert(self) -> None:
        conflicts.undo_supersede(self.session.store, self.result)
        self.session.notify({self.newer, self.older})


class MergeCommand(StoreCommand):
    """Two conflicting memories become one (store.conflicts.merge): one store operation,
    one undo step; undo puts back only what the merge changed."""

    def __init__(self, session: StoreSession, newer: str, older: str, text: str) -> None:
        super().__init__(session, "Merge memories")
        self.newer, self.older, self.text = newer, older, text
        self.result: conflicts.MergeResult | None = None

    def apply(self) -> None:
        self.result = conflicts.merge(self.session.store, self.newer, self.older, self.text)
        self.session.notify({self.newer, self.older})

    def revert(self) -> None:
        conflicts.undo_merge(self.session.store, self.result)
        self.session.notify({self.newer, self.older})


class KeepBothCommand(StoreCommand):
    """Two memories that seemed to conflict both stay: the pair is no longer flagged."""

    def __init__(self, session: StoreSession, a: str, b: str) -> None:
        super().__init__(session, "Keep both memories")
        self.a, self.b = a, b
        self.edges: list[tuple[str, str, str]] = []

    def apply(self) -> None:
        self.edges = conflicts.keep_both(self.session.store, self.a, self.b)
        self.session.notify({self.a, self.b})

    def revert(self) -> None:
        conflicts.remove_edges(self.session.store, self.edges)
        self.session.notify({self.a, self.b})
