"""The Conflicts view: memories that say different things about the same subject, newest
first and side by side; the person keeps both, marks the newer one as superseding, or
merges them into one."""

from __future__ import annotations

from mnemoscope.store import StoreError
from mnemoscope.store.curation import conflicts as conflict_check
from mnemoscope.store.model.memory import validate_fields
from PySide6.QtWidgets import QInputDialog

from ..commands.conflicts import KeepBothCommand, MergeCommand, SupersedeCommand
from ..session import StoreSession
from .records_panel import RecordsPanel

AUTO_SCAN_LIMIT = 20_000  # above this many memories, a scan waits for "Scan again"


def card(conflict: conflict_check.Conflict) -> str:
    """A conflict as the view shows it: what the two disagree about, then each memory's
    text on a line of its own (read at any width, wrapped, not in columns a few
    characters wide)."""
    return (f"{conflict.subject} · {conflict.slot}: {conflict.newer_claim} / {conflict.older_claim}\n"
            f"newer: {conflict.newer_text}\nolder: {conflict.older_text}")


class ConflictsView(RecordsPanel):
    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(session, [("conflict (newest first)", card)], parent)
        self.scan_button = self.add_button("Scan again", self.refresh, edits_record=False)
        self.supersede_button = self.add_button("Newer replaces older", self.supersede_selected,
                                                "Archive the older memory: it is no longer recalled (undoable)")
        self.merge_button = self.add_button("Merge…", self.merge_selected,
                                            "Write one memory that says what is true now; the older is archived")
        self.keep_button = self.add_button("Keep both", self.keep_selected,
                                           "Both stay and the pair is no longer flagged (undoable)")

    def refresh(self) -> None:
        store = self.session.store
        found = conflict_check.scan(store) if store is not None else []
        pairs = "1 pair of memories says" if len(found) == 1 else f"{len(found)} pairs of memories say"
        self.show_records(found, f"{pairs} different things about the same subject (newest first)."
                          if found else "No conflicting memories.")

    def memory_of(self, conflict: conflict_check.Conflict) -> str:
        return conflict.newer

    def store_changed(self, ids: set[str] | None) -> None:
        if self.session.store.count() > AUTO_SCAN_LIMIT:
            self.summary.setText("The memories changed; press Scan again.")
        else:
            self.refresh()

    def _still_there(self, conflict: conflict_check.Conflict) -> bool:
        """An agent may have forgotten one of them since the scan: push only what can run."""
        try:
            for mid in (conflict.newer, conflict.older):
                self.session.store.get(mid)
        except StoreError as exc:
            self.summary.setText(str(exc))
            return False
        return True

    def supersede_selected(self) -> None:
        conflict = self.selected()
        if conflict is not None and self._still_there(conflict):
            self.session.run(SupersedeCommand(self.session, conflict.newer, conflict.older), "Supersede failed")

    def merge_selected(self) -> None:
        """The newer memory takes the merged text and supersedes the older, as one undoable step."""
        conflict = self.selected()
        if conflict is None or not self._still_there(conflict):
            return
        text, ok = QInputDialog.getMultiLineText(
            self, "Merge two memories", f"Older: {conflict.older_text}\n\nThe memory to keep:", conflict.newer_text)
        if not ok or not text.strip():
            return
        try:
            validate_fields({"text": text}, self.session.store.config, partial=True)
        except StoreError as exc:
            self.summary.setText(str(exc))
            return
        if not self.session.run(MergeCommand(self.session, conflict.newer, conflict.older, text), "Merge failed"):
            self.summary.setText("The merge failed; nothing was changed.")

    def keep_selected(self) -> None:
        conflict = self.selected()
        if conflict is not None and self._still_there(conflict):
            self.session.run(KeepBothCommand(self.session, conflict.newer, conflict.older), "Keep both failed")
