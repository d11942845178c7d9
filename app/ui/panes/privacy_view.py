"""The Privacy view: what memories hold that their sensitivity does not cover (credentials,
phone numbers, e-mail addresses …), with undoable "raise sensitivity" and "redact"."""

from __future__ import annotations

from mnemoscope.store import StoreError
from mnemoscope.store.curation import privacy, privacy_scan

from ..commands.memories import EditMemoryCommand
from ..session import StoreSession
from .records_panel import RecordsPanel

AUTO_CHECK_LIMIT = 5000  # above this many memories, a full check waits for "Check again"


def card(finding: privacy_scan.Finding) -> str:
    """A finding as the view shows it: what was found where, and how sensitive the memory
    is marked and needs to be; then how it starts."""
    where = "" if finding.where == "text" else f" of its {finding.where}"
    return (f"{finding.what} in {finding.memory_id}, chars {finding.start}-{finding.end}{where}: marked "
            f"{finding.sensitivity}, needs {finding.needed}\nstarts: {finding.preview}")


class PrivacyView(RecordsPanel):
    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(session, [("finding", card)], parent)
        self.check_button = self.add_button("Check again", self.refresh, edits_record=False)
        self.raise_button = self.add_button("Raise sensitivity", lambda: self._apply(privacy.raising, "Raise "
                                            "sensitivity"), "Mark the memory as sensitive as what it holds (undoable)")
        self.redact_button = self.add_button("Redact", lambda: self._apply(privacy.redaction, "Redact"),
                                             "Replace what was found with [redacted …] (undoable)")

    def refresh(self) -> None:
        """Check every memory again."""
        store = self.session.store
        self._show(privacy.check(store) if store is not None else [])

    def _show(self, findings: list[privacy_scan.Finding]) -> None:
        memories = len({f.memory_id for f in findings})
        self.show_records(findings, f"{len(findings)} findings in {memories} memories marked less sensitive than "
                          "what they hold" if findings else "No memory holds more than its sensitivity allows.")

    def memory_of(self, finding: privacy_scan.Finding) -> str:
        return finding.memory_id

    def store_changed(self, ids: set[str] | None) -> None:
        store = self.session.store
        if ids is None:
            if store.count() <= AUTO_CHECK_LIMIT:
                self.refresh()
            else:
                self.summary.setText("The memories changed; press Check again.")
            return
        # only the memories that changed are checked again
        kept = [f for f in self.model.records() if f.memory_id not in ids]
        for mid in sorted(ids):
            if store.exists(mid):
                m = store.get(mid)
                kept += privacy.findings_in(m.id, m.text, m.sensitivity)
        self._show(kept)

    def _apply(self, change, label: str) -> None:
        finding = self.selected()
        if finding is None:
            return
        try:
            changes = change(self.session.store, finding)  # refused if the memory changed since
        except StoreError as exc:
            self.summary.setText(str(exc))
            return
        cmd = EditMemoryCommand(self.session, finding.memory_id, changes)
        cmd.setText(f"{label} {finding.what} in {finding.memory_id}")
        if not self.session.run(cmd, f"{label} failed"):
            self.summary.setText(f"{label} failed: {cmd.error}")
