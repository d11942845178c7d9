"""The Privacy view: what memories hold that their sensitivity does not cover (credentials,
phone numbers, e-mail addresses …), with undoable "raise sensitivity" and "redact"."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from store import StoreError, privacy

from .commands import EditMemoryCommand
from .records_model import RecordsModel
from .session import StoreSession

AUTO_CHECK_LIMIT = 5000  # above this many memories, a full check waits for "Check again"


class PrivacyView(QWidget):
    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.model = RecordsModel([
            ("memory", lambda f: f.memory_id), ("what", lambda f: f.what),
            ("where", lambda f: f"chars {f.start}-{f.end}"), ("starts", lambda f: f.preview),
            ("marked", lambda f: f.sensitivity), ("needs", lambda f: f.needed)], self)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.view.verticalHeader().hide()
        self.view.selectionModel().currentRowChanged.connect(self._row_changed)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.check_button = QPushButton("Check again", self)
        self.raise_button = QPushButton("Raise sensitivity", self)
        self.raise_button.setToolTip("Mark the memory as sensitive as what it holds (undoable)")
        self.redact_button = QPushButton("Redact", self)
        self.redact_button.setToolTip("Replace what was found with [redacted …] (undoable)")
        self.check_button.clicked.connect(self.check)
        self.raise_button.clicked.connect(lambda: self._apply(privacy.raising, "Raise sensitivity"))
        self.redact_button.clicked.connect(lambda: self._apply(privacy.redaction, "Redact"))
        buttons = QHBoxLayout()
        for b in (self.check_button, self.raise_button, self.redact_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.view, 1)
        layout.addLayout(buttons)
        self._stale = True
        session.changed.connect(self._store_changed)
        self._update_buttons()

    def check(self) -> None:
        """Check every memory again."""
        self._stale = False
        store = self.session.store
        findings = privacy.check(store) if store is not None else []
        self.model.set_records(findings)
        memories = len({f.memory_id for f in findings})
        self.summary.setText(f"{len(findings)} findings in {memories} memories marked less sensitive than what "
                             "they hold" if findings else "No memory holds more than its sensitivity allows.")
        self._update_buttons()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self.check()

    def _store_changed(self, ids: set[str] | None) -> None:
        store = self.session.store
        if store is None:
            return self.model.set_records([])
        if not self.isVisible():  # checked when shown: a hidden view costs nothing
            self._stale = True
            return
        if ids is None:
            if store.count() <= AUTO_CHECK_LIMIT:
                self.check()
            else:
                self.summary.setText("The memories changed; press Check again.")
            return
        # only the memories that changed are checked again
        kept = [f for f in self.model.records() if f.memory_id not in ids]
        fresh = []
        for mid in sorted(ids):
            if store.exists(mid):
                m = store.get(mid)
                fresh += privacy.findings_in(m.id, m.text, m.sensitivity)
        self.model.set_records(kept + fresh)
        self._update_buttons()

    def selected(self) -> privacy.Finding | None:
        index = self.view.currentIndex()
        return self.model.record(index.row()) if index.isValid() else None

    def _row_changed(self, *_args) -> None:
        finding = self.selected()
        if finding is not None:
            self.session.select(finding.memory_id)
        self._update_buttons()

    def _update_buttons(self) -> None:
        has = self.selected() is not None
        self.raise_button.setEnabled(has)
        self.redact_button.setEnabled(has)

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
        self.session.undo_stack.push(cmd)
