"""An import as one undoable step: Mnemoscope's JSONL and the other tools' formats."""

from __future__ import annotations

from typing import Any

from mnemoscope.store import DeletedMemory, MemoryStore, importers
from mnemoscope.store.importers import ImportPlan, ImportResult
from mnemoscope.store.importers.jsonl import ImportReport

from ..session import StoreSession
from .base import StoreCommand


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
