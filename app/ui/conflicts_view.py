"""The Conflicts view: memories that say different things about the same subject, newest
first and side by side; the person keeps both or marks the newer one as superseding."""

from __future__ import annotations

from PySide6.QtWidgets import QHeaderView

from store import StoreError
from store import conflicts as conflict_check

from .commands import SupersedeCommand
from .records_panel import RecordsPanel
from .session import StoreSession

AUTO_SCAN_LIMIT = 20_000  # above this many memories, a scan waits for "Scan again"


class ConflictsView(RecordsPanel):
    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(session, [
            ("newer", lambda c: c.newer_text), ("older", lambda c: c.older_text),
            ("about", lambda c: c.subject), ("differs", lambda c: f"{c.slot}: {c.newer_claim} / {c.older_claim}")],
            parent)
        self.kept: set[tuple[str, str]] = set()  # pairs the person chose to keep, this session
        self.view.setWordWrap(True)
        header = self.view.horizontalHeader()
        for column, mode in enumerate((QHeaderView.ResizeMode.Stretch, QHeaderView.ResizeMode.Stretch,
                                       QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.ResizeToContents)):
            header.setSectionResizeMode(column, mode)
        self.scan_button = self.add_button("Scan again", self.refresh, needs_selection=False)
        self.supersede_button = self.add_button("Newer replaces older", self.supersede_selected,
                                                "Archive the older memory: it is no longer recalled (undoable)")
        self.keep_button = self.add_button("Keep both", self.keep_selected, "Both stay; the pair leaves this list")
        self.buttons.addStretch(1)

    def refresh(self) -> None:
        store = self.session.store
        found = [c for c in (conflict_check.scan(store) if store is not None else [])
                 if (c.newer, c.older) not in self.kept]
        self.show_records(found, f"{len(found)} pairs of memories say different things about the same subject "
                          "(newest first)." if found else "No conflicting memories.")
        self.view.resizeRowsToContents()

    def memory_of(self, conflict: conflict_check.Conflict) -> str:
        return conflict.newer

    def store_changed(self, ids: set[str] | None) -> None:
        if self.session.store.count() > AUTO_SCAN_LIMIT:
            self.summary.setText("The memories changed; press Scan again.")
        else:
            self.refresh()

    def supersede_selected(self) -> None:
        conflict = self.selected()
        if conflict is None:
            return
        try:  # an agent may have forgotten one of them since the scan: push only what can run
            for mid in (conflict.newer, conflict.older):
                self.session.store.get(mid)
        except StoreError as exc:
            self.summary.setText(str(exc))
            return
        self.session.undo_stack.push(SupersedeCommand(self.session, conflict.newer, conflict.older))

    def keep_selected(self) -> None:
        conflict = self.selected()
        if conflict is not None:
            self.kept.add((conflict.newer, conflict.older))
            self.refresh()
