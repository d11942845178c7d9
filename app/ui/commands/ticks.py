"""A tick, or an advance of the store's clock, as one undoable step."""

from __future__ import annotations

from mnemoscope.store import MemoryStore, TickReport

from ..session import StoreSession
from .base import StoreCommand


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
