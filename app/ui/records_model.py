"""A read-only table model over a list of records (privacy findings, conflicts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

Index = QModelIndex | QPersistentModelIndex


class RecordsModel(QAbstractTableModel):
    """One row per record; each column is a header and how to show a record in it."""

    def __init__(self, columns: Sequence[tuple[str, Callable[[Any], str]]], parent=None) -> None:
        super().__init__(parent)
        self._columns = list(columns)
        self._records: list[Any] = []

    def set_records(self, records: Sequence[Any]) -> None:
        self.beginResetModel()
        self._records = list(records)
        self.endResetModel()

    def records(self) -> list[Any]:
        return list(self._records)

    def record(self, row: int) -> Any:
        return self._records[row]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._records)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._records):
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self._columns[index.column()][1](self._records[index.row()])
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal \
                and 0 <= section < len(self._columns):
            return self._columns[section][0]
        return None
