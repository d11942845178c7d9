"""The Conflicts view: memories that say different things about the same subject, newest
first and side by side; the person keeps both or marks the newer one as superseding."""

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

from store import StoreError
from store import conflicts as conflict_check

from .commands import SupersedeCommand
from .records_model import RecordsModel
from .session import StoreSession

AUTO_SCAN_LIMIT = 20_000  # above this many memories, a scan waits for "Scan again"


class ConflictsView(QWidget):
    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.kept: set[tuple[str, str]] = set()  # pairs the person chose to keep, this session
        self.model = RecordsModel([
            ("newer", lambda c: c.newer_text), ("older", lambda c: c.older_text),
            ("about", lambda c: c.subject), ("differs", lambda c: f"{c.slot}: {c.newer_claim} / {c.older_claim}")],
            self)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setWordWrap(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        self.view.verticalHeader().hide()
        self.view.selectionModel().currentRowChanged.connect(self._row_changed)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.scan_button = QPushButton("Scan again", self)
        self.supersede_button = QPushButton("Newer replaces older", self)
        self.supersede_button.setToolTip("Archive the older memory: it is no longer recalled (undoable)")
        self.keep_button = QPushButton("Keep both", self)
        self.keep_button.setToolTip("Both stay; the pair leaves this list")
        self.scan_button.clicked.connect(self.scan)
        self.supersede_button.clicked.connect(self.supersede_selected)
        self.keep_button.clicked.connect(self.keep_selected)
        buttons = QHBoxLayout()
        for b in (self.scan_button, self.supersede_button, self.keep_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.view, 1)
        layout.addLayout(buttons)
        self._stale = True
        session.changed.connect(self._store_changed)
        self._update_buttons()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self.scan()

    def scan(self) -> None:
        self._stale = False
        store = self.session.store
        found = conflict_check.scan(store) if store is not None else []
        found = [c for c in found if (c.newer, c.older) not in self.kept]
        self.model.set_records(found)
        self.view.resizeRowsToContents()
        self.summary.setText(f"{len(found)} pairs of memories say different things about the same subject "
                             "(newest first)." if found else "No conflicting memories.")
        self._update_buttons()

    def _store_changed(self, _ids) -> None:
        store = self.session.store
        if not self.isVisible():  # scanned when shown: a hidden view costs nothing
            self._stale = True
            return
        if store is not None and store.count() > AUTO_SCAN_LIMIT:
            self.summary.setText("The memories changed; press Scan again.")
            return
        self.scan()

    def selected(self) -> conflict_check.Conflict | None:
        index = self.view.currentIndex()
        return self.model.record(index.row()) if index.isValid() else None

    def _row_changed(self, *_args) -> None:
        conflict = self.selected()
        if conflict is not None:
            self.session.select(conflict.newer)
        self._update_buttons()

    def _update_buttons(self) -> None:
        has = self.selected() is not None
        self.supersede_button.setEnabled(has)
        self.keep_button.setEnabled(has)

    def supersede_selected(self) -> None:
        conflict = self.selected()
        if conflict is None:
            return
        cmd = SupersedeCommand(self.session, conflict.newer, conflict.older)
        try:
            self.session.undo_stack.push(cmd)
        except StoreError as exc:
            cmd.setObsolete(True)
            self.summary.setText(str(exc))

    def keep_selected(self) -> None:
        conflict = self.selected()
        if conflict is not None:
            self.kept.add((conflict.newer, conflict.older))
            self.scan()
