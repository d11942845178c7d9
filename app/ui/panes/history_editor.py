"""The conversation so far, for the prompt preview: a table of {role, content} messages
with add, remove, load and save."""

from __future__ import annotations

import json

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..preferences import picked, start_in


class HistoryEditor(QWidget):
    changed = Signal()
    failed = Signal(str)  # a history file that could not be read

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, 2, self)
        self.table.setHorizontalHeaderLabels(["Role", "Content"])
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setFixedHeight(104)
        self.table.itemChanged.connect(lambda _item: self.changed.emit())
        buttons = QGridLayout()
        for i, (label, slot) in enumerate((("+ user", lambda: self.add("user", "")),
                                           ("+ assistant", lambda: self.add("assistant", "")),
                                           ("Remove", self.remove_selected), ("Load…", self._load_dialog),
                                           ("Save…", self._save_dialog))):
            b = QPushButton(label, self)
            b.clicked.connect(slot)
            buttons.addWidget(b, i // 3, i % 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)
        layout.addLayout(buttons)

    def add(self, role: str, content: str) -> None:
        self.table.blockSignals(True)
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.table.setItem(row, 0, QTableWidgetItem(role))
        self.table.setItem(row, 1, QTableWidgetItem(content))
        self.table.blockSignals(False)
        self.changed.emit()

    def set_messages(self, messages: list[dict]) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        self.table.blockSignals(False)
        for m in messages:
            content = m.get("content")
            self.add(str(m.get("role", "user")), content if isinstance(content, str) else json.dumps(content))

    def messages(self) -> list[dict]:
        out = []
        for row in range(self.table.rowCount()):
            role = (self.table.item(row, 0).text() if self.table.item(row, 0) else "user").strip()
            content = self.table.item(row, 1).text() if self.table.item(row, 1) else ""
            out.append({"role": role, "content": content})
        return out

    def remove_selected(self) -> None:
        """Remove the selected messages, else the last one."""
        rows = sorted({i.row() for i in self.table.selectedIndexes()}, reverse=True)
        for row in rows or [self.table.rowCount() - 1]:
            if row >= 0:
                self.table.removeRow(row)
        self.changed.emit()

    def _load_dialog(self) -> None:
        path = picked(QFileDialog.getOpenFileName(self, "Load history", start_in(), "JSON (*.json)")[0])
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
                raise ValueError("the file must hold a JSON list of {role, content} messages")
        except (OSError, ValueError) as exc:
            self.failed.emit(f"Cannot load history: {exc}")
            return
        self.set_messages(data)

    def _save_dialog(self) -> None:
        path = picked(QFileDialog.getSaveFileName(self, "Save history", start_in("history.json"), "JSON (*.json)")[0])
        if not path:
            return
        try:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(self.messages(), fh, ensure_ascii=False, indent=2)
        except OSError as exc:
            self.failed.emit(f"Cannot save history: {exc.strerror or exc}")
