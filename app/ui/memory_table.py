"""The memory table: a Qt model over the store's rows, sortable and filterable."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

from store import Memory

from .session import StoreSession
from .theme import KIND_COLOURS

COLUMNS = ("kind", "text", "layer", "strength", "importance", "recalls", "scope", "sensitivity", "updated")
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ID_ROLE = Qt.ItemDataRole.UserRole + 2


class MemoryTableModel(QAbstractTableModel):
    """Rows are the store's memories, as last read; ``refresh`` reads them again."""

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self._rows: list[Memory] = []
        self._index: dict[str, int] = {}

    def refresh(self) -> None:
        store = self.session.store
        self.beginResetModel()
        self._rows = store.list() if store is not None else []
        self._index = {m.id: i for i, m in enumerate(self._rows)}
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < len(
                COLUMNS):
            return COLUMNS[section].capitalize()
        return None

    def memory_at(self, row: int) -> Memory:
        return self._rows[row]

    def row_of(self, memory_id: str) -> int | None:
        return self._index.get(memory_id)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        m = self._rows[index.row()]
        col = COLUMNS[index.column()]
        if role == ID_ROLE:
            return m.id
        if role == SORT_ROLE:
            return {
                "kind": m.kind, "text": m.text.lower(), "layer": ("habit", "fading", "edge", "archived").index(
                    m.layer) if m.layer in ("habit", "fading", "edge", "archived") else 9,
                "strength": m.strength, "importance": m.importance, "recalls": m.recall_count, "scope": m.scope,
                "sensitivity": ("public", "low", "medium", "high", "hyper").index(m.sensitivity)
                if m.sensitivity in ("public", "low", "medium", "high", "hyper") else 9,
                "updated": m.updated_at,
            }[col]
        if role == Qt.ItemDataRole.DisplayRole:
            return {
                "kind": m.kind, "text": m.text, "layer": m.layer + (" (pinned)" if m.pinned else ""),
                "strength": f"{m.strength:.2f}", "importance": f"{m.importance:.2f}", "recalls": str(m.recall_count),
                "scope": m.scope, "sensitivity": m.sensitivity,
                "updated": datetime.fromtimestamp(m.updated_at).strftime("%Y-%m-%d"),
            }[col]
        if role == Qt.ItemDataRole.ToolTipRole and col == "text":
            return m.text
        if role == Qt.ItemDataRole.ForegroundRole and col == "kind":
            return QColor(KIND_COLOURS.get(m.kind, "#888888"))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in ("strength", "importance", "recalls"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class MemoryFilterProxy(QSortFilterProxyModel):
    """Sorts by the raw values and filters on any text column."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)


class MemoryTable(QWidget):
    """The table with its filter box; picking a row selects that memory everywhere."""

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.model = MemoryTableModel(session, self)
        self.proxy = MemoryFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.filter_box = QLineEdit(self)
        self.filter_box.setPlaceholderText("Filter memories…")
        self.filter_box.setClearButtonEnabled(True)
        self.filter_box.textChanged.connect(self.proxy.setFilterFixedString)
        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(COLUMNS.index("strength"), Qt.SortOrder.DescendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        for col, width in zip(COLUMNS, (70, 300, 80, 64, 72, 56, 120, 80, 84)):
            self.view.setColumnWidth(COLUMNS.index(col), width)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter_box)
        layout.addWidget(self.view)
        self.view.selectionModel().currentRowChanged.connect(self._row_changed)
        session.changed.connect(self._on_changed)
        session.selection_changed.connect(self._on_selection)
        self._syncing = False

    def _on_changed(self, _ids) -> None:
        self._syncing = True
        try:
            self.model.refresh()
            self._on_selection(self.session.selected_id)
        finally:
            self._syncing = False

    def _row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._syncing or not current.isValid():
            return
        self.session.select(self.proxy.data(current, ID_ROLE))

    def _on_selection(self, memory_id) -> None:
        self._syncing = True
        try:
            row = self.model.row_of(memory_id) if memory_id else None
            if row is None:
                self.view.clearSelection()
                return
            index = self.proxy.mapFromSource(self.model.index(row, 0))
            if index.isValid():
                self.view.selectRow(index.row())
                self.view.scrollTo(index)
        finally:
            self._syncing = False
