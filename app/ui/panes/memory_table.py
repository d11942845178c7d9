"""The memory table: a Qt model over the store's rows, sortable and filterable."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mnemoscope.store import LAYERS, SENSITIVITIES, Memory
from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QTimer,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

from ..background import drop_elsewhere
from ..session import StoreSession
from ..theme import KIND_COLOURS
from ..widgets import RowsModel

# strength, the default sort, comes before the wide text column so it is on screen in a narrow dock
COLUMNS = ("kind", "strength", "text", "layer", "importance", "recalls", "scope", "sensitivity", "updated")
TEXT = COLUMNS.index("text")
TEXT_MIN_WIDTH = 120
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ID_ROLE = Qt.ItemDataRole.UserRole + 2


class MemoryTableModel(RowsModel):
    """Rows are the store's memories, as last read; ``refresh`` reads them again."""

    columns = tuple(c.capitalize() for c in COLUMNS)

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.rows: list[Memory] = []
        self._index: dict[str, int] = {}
        self._display: dict[int, tuple] = {}
        self._sort: tuple[int, Qt.SortOrder] = (-1, Qt.SortOrder.AscendingOrder)

        session.add_preparer("table", self._prepare)

    def _prepare(self, _store, memories: list[Memory]) -> tuple:
        sort = self._sort
        rows = sorted_rows(memories, sort)
        return sort, rows, {m.id: i for i, m in enumerate(rows)}

    def refresh(self) -> None:
        """Show the memories again, sorted as before (sorted off the GUI thread when a
        background read prepared them)."""
        prepared = self.session.prepared("table")
        self.beginResetModel()
        drop_elsewhere(self.rows, self._index)
        if prepared is not None and prepared[0] == self._sort:
            _, self.rows, self._index = prepared
            self._display = {}
        else:
            self.rows = list(self.session.memories())
            self._apply_sort()
        self.endResetModel()

    def _apply_sort(self) -> None:
        self.rows = sorted_rows(self.rows, self._sort)
        self._index = {m.id: i for i, m in enumerate(self.rows)}
        self._display = {}

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort in Python over keys made for the sort (a proxy sort would call data() ~n·log n times)."""
        self._sort = (column, order)
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        ids = [self.rows[i.row()].id if 0 <= i.row() < len(self.rows) else None for i in persistent]
        self._apply_sort()
        moved = [self.index(self._index[mid], i.column()) if mid in self._index else QModelIndex()
                 for mid, i in zip(ids, persistent)]
        self.changePersistentIndexList(persistent, moved)
        self.layoutChanged.emit()

    def memory_at(self, row: int) -> Memory:
        return self.rows[row]

    def row_of(self, memory_id: str) -> int | None:
        return self._index.get(memory_id)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self.rows)):
            return None
        m = self.rows[index.row()]
        col = COLUMNS[index.column()]
        if role == ID_ROLE:
            return m.id
        if role == SORT_ROLE:
            return _sort_key(m)[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            row = self._display.get(index.row())
            if row is None:
                row = self._display[index.row()] = _display(m)
            return row[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole and col == "text":
            return m.text
        if role == Qt.ItemDataRole.ForegroundRole and col == "kind":
            return QColor(KIND_COLOURS.get(m.kind, "#888888"))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in ("strength", "importance", "recalls"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


LAYER_ORDER = {name: i for i, name in enumerate(LAYERS)}
SENSITIVITY_ORDER = {name: i for i, name in enumerate(SENSITIVITIES)}


def sorted_rows(memories: list[Memory], sort: tuple[int, Qt.SortOrder]) -> list[Memory]:
    """The memories in the table's order (no Qt object is touched: this runs off the GUI
    thread too). The keys live only while sorting: kept, a tuple and a lowered copy of the
    text per memory were ~24 MB of a 100,000-memory window (issue #34's 600 MB)."""
    column, order = sort
    rows = list(memories)
    if column >= 0:
        # (value, id, place): unique, so a comparison never reaches the memory itself
        decorated = [(_sort_key(m)[column], m.id, i) for i, m in enumerate(rows)]
        sort_in_steps(decorated, reverse=order == Qt.SortOrder.DescendingOrder)
        rows = [rows[i] for _, _, i in decorated]
    return rows


SORT_STEP = 4096  # items sorted (or merged) by one call of list.sort


def sort_in_steps(items: list, reverse: bool = False) -> None:
    """``items.sort(reverse=reverse)``, in calls that each hold the interpreter lock for a
    few milliseconds. One sort of 100,000 rows' keys is 45-55 ms of C code that no other
    thread can interrupt: on a job's thread it held the GUI thread up for as long. Here runs
    of ``SORT_STEP`` are sorted, then merged two by two (list.sort finds the two runs and
    merges them in one pass). The order is the same as one sort's, ties included."""
    n = len(items)
    for start in range(0, n, SORT_STEP):
        run = items[start:start + SORT_STEP]
        run.sort(reverse=reverse)
        items[start:start + SORT_STEP] = run
    width = SORT_STEP
    while width < n:
        for start in range(0, n, 2 * width):
            if start + width < n:
                pair = items[start:start + 2 * width]
                pair.sort(reverse=reverse)
                items[start:start + 2 * width] = pair
        width *= 2


def _sort_key(m: Memory) -> tuple:
    """Raw values to sort by, one per column."""
    return (m.kind, m.strength, m.text.lower(), LAYER_ORDER.get(m.layer, 9), m.importance, m.recall_count,
            m.scope, SENSITIVITY_ORDER.get(m.sensitivity, 9), m.updated_at)


def _display(m: Memory) -> tuple:
    return (m.kind, f"{m.strength:.2f}", m.text, m.layer + (" (pinned)" if m.pinned else ""),
            f"{m.importance:.2f}", str(m.recall_count), m.scope, m.sensitivity,
            datetime.fromtimestamp(m.updated_at).strftime("%Y-%m-%d"))


class MemoryFilterProxy(QSortFilterProxyModel):
    """Filters on any text column; sorting is handed to the source model, which sorts
    10,000 rows over precomputed keys in milliseconds, and the proxy keeps its order."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        source = self.sourceModel()
        if isinstance(source, MemoryTableModel):
            source.sort(column, order)
        else:
            super().sort(column, order)


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
        self.filter_box.textChanged.connect(self._filter)
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
        for column, width in enumerate((64, 64, TEXT_MIN_WIDTH, 80, 72, 56, 120, 80, 84)):
            # never narrower than the title and its sort arrow
            self.view.setColumnWidth(column, max(width, header.sectionSizeHint(column)))
        self.view.viewport().installEventFilter(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter_box)
        layout.addWidget(self.view)
        self.view.selectionModel().currentRowChanged.connect(self._row_changed)
        session.changed.connect(self._on_changed)
        session.selection_changed.connect(self._on_selection)
        self._syncing = False

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_text_column()
        return super().eventFilter(watched, event)

    def _fit_text_column(self) -> None:
        """The text column ends at the table's right edge, so its title and the ends of the
        texts ("…") are on screen; the columns after it are a scroll away."""
        start = self.view.horizontalHeader().sectionPosition(TEXT)
        self.view.setColumnWidth(TEXT, max(TEXT_MIN_WIDTH, self.view.viewport().width() - start))

    def _filter(self, text: str) -> None:
        """Filter the rows; the selection stays where it is (a row filtered out is not a
        move away from the memory, so no "unsaved edit?" question mid-word)."""
        self._syncing = True
        try:
            self.proxy.setFilterFixedString(text)
        finally:
            self._syncing = False
        self._on_selection(self.session.selected_id)

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
        if not self.session.select(self.proxy.data(current, ID_ROLE)):
            # the user kept an unsaved edit: once the view has finished moving, move it back
            QTimer.singleShot(0, lambda: self._on_selection(self.session.selected_id))

    def _on_selection(self, memory_id) -> None:
        self._syncing = True
        try:
            row = self.model.row_of(memory_id) if memory_id else None
            index = self.proxy.mapFromSource(self.model.index(row, 0)) if row is not None else QModelIndex()
            if index.isValid():
                self.view.selectRow(index.row())
                self.view.scrollTo(index)
            else:
                # Not in the table (none, or filtered out): no row is current either, or a
                # click on the row Qt made current meanwhile would not count as a change
                # and the memory it shows could not be opened.
                self.view.selectionModel().clear()
        finally:
            self._syncing = False
