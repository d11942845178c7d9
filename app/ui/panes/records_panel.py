"""Lists of records the owner acts on (privacy findings, conflicts): a read-only table
model, and the panel that shows one with its buttons."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ..session import StoreSession
from ..widgets import FlowLayout, RowsModel

Index = QModelIndex | QPersistentModelIndex
FITTED_ROWS = 300  # records whose rows are sized to their text; more are three lines each


class RecordsModel(RowsModel):
    """One row per record; each column is a header and how to show a record in it."""

    def __init__(self, columns: Sequence[tuple[str, Callable[[Any], str]]], parent=None) -> None:
        super().__init__(parent)
        self.columns = tuple(header for header, _ in columns)
        self._show = [show for _, show in columns]

    def set_records(self, records: Sequence[Any]) -> None:
        self.beginResetModel()
        self.rows = list(records)
        self.endResetModel()

    def records(self) -> list[Any]:
        return list(self.rows)

    def record(self, row: int) -> Any:
        return self.rows[row]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self._show[index.column()](self.rows[index.row()])
        return None


class RecordsPanel(QWidget):
    """A summary line, a table of records and a row of buttons, over the session's store.

    Subclasses say how to read the records (:meth:`refresh`), which memory a record is
    about (:meth:`memory_of`) and how to follow a change (:meth:`store_changed`). A panel
    that is not shown does no work: it refreshes when it is shown again."""

    def __init__(self, session: StoreSession, columns: Sequence[tuple[str, Callable[[Any], str]]],
                 parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.model = RecordsModel(columns, self)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().hide()
        # A record is a card of a few lines across the whole width, wrapped, each row as
        # tall as its text: in a narrow dock, columns left each text a few characters wide.
        self.view.setWordWrap(True)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.selectionModel().currentRowChanged.connect(self._row_changed)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.buttons = FlowLayout()  # they wrap onto a second row rather than being cut
        self._edits_record: list[QPushButton] = []
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.view, 1)
        layout.addLayout(self.buttons)
        self._stale = True
        session.changed.connect(self._changed)

    def add_button(self, text: str, slot: Callable[[], None], tooltip: str = "", *,
                   edits_record: bool = True) -> QPushButton:
        """A button that changes the selected record's memory is enabled while a record is
        selected and the store is writable; any other (a new check) always is."""
        button = QPushButton(text, self)
        button.setToolTip(tooltip)
        button.clicked.connect(slot)
        self.buttons.addWidget(button)
        if edits_record:
            self._edits_record.append(button)
            button.setEnabled(False)
        return button

    def refresh(self) -> None:
        raise NotImplementedError

    def memory_of(self, record: Any) -> str:
        raise NotImplementedError

    def store_changed(self, ids: set[str] | None) -> None:
        self.refresh()

    def show_records(self, records: Sequence[Any], summary: str) -> None:
        self._stale = False
        # Each row as tall as its wrapped text, unless there are so many that measuring them
        # all would hold the window up: then three lines each (the full text is the tooltip).
        rows = self.view.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents if len(records) <= FITTED_ROWS
                                  else QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(3 * self.view.fontMetrics().lineSpacing() + 8)
        self.model.set_records(records)
        self.summary.setText(summary)
        self._update_buttons()

    def selected(self) -> Any | None:
        index = self.view.currentIndex()
        return self.model.record(index.row()) if index.isValid() else None

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self.refresh()

    def _changed(self, ids: set[str] | None) -> None:
        if self.session.store is None:
            self.show_records([], "")
        elif not self.isVisible():
            self._stale = True
        else:
            self.store_changed(ids)

    def _row_changed(self, *_args) -> None:
        record = self.selected()
        if record is not None:
            self.session.select(self.memory_of(record))
        self._update_buttons()

    def _update_buttons(self) -> None:
        can = self.selected() is not None and self.session.writable
        for button in self._edits_record:
            button.setEnabled(can)
