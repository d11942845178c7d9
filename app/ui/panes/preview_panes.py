"""The prompt preview's tabs besides the prompt itself: compare with a pinned compile,
resolve the citations of a pasted answer, simulate the provider's prefix cache. Each
pane is told the current compile (``show``) and reports a clicked memory."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ...compiler import CompileResult
from .preview_text import WARN, cache_summary, citations, compare, compare_html


def _button_over(pane: QWidget, button: QPushButton, *below: QWidget) -> None:
    """Lay ``pane`` out as ``button`` at the left of a row, then ``below`` one under another."""
    row = QHBoxLayout()
    row.addWidget(button)
    row.addStretch(1)
    layout = QVBoxLayout(pane)
    layout.addLayout(row)
    for widget in below:
        layout.addWidget(widget)


def _memory_of(url) -> str:
    return url.toString().split(":", 1)[1]


class ComparePane(QWidget):
    memory_clicked = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.result: CompileResult | None = None
        self.pinned: CompileResult | None = None
        self.pinned_texts: dict[str, str] = {}
        self.texts: dict[str, str] = {}
        self.diff: dict = {}
        self.pin_button = QPushButton("Pin this compile", self)
        self.pin_button.clicked.connect(self.pin)
        self.text = QTextBrowser(self)
        self.text.setOpenLinks(False)
        self.text.anchorClicked.connect(lambda url: self.memory_clicked.emit(_memory_of(url)))
        self.text.setPlainText("Pin a compile, then change something (a tick, an edit, the budget, the "
                               "model) to see what entered or left the prompt.")
        _button_over(self, self.pin_button, self.text)

    def pin(self) -> None:
        self.pinned = self.result
        self.pinned_texts = dict(self.texts)  # what left is no longer among the hits: keep its text
        self.show_result(self.result, self.texts)

    def show_result(self, result: CompileResult | None, texts: dict[str, str]) -> None:
        self.result, self.texts = result, texts
        self.diff = compare(self.pinned, result) if self.pinned is not None and result is not None else {}
        if self.diff:
            self.text.setHtml(compare_html(self.diff, {**self.pinned_texts, **texts}))


class CitationsPane(QWidget):
    memory_clicked = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.result: CompileResult | None = None
        self.texts: dict[str, str] = {}
        self.found: list[tuple[int, str | None, str]] = []
        self.answer = QPlainTextEdit(self)
        self.answer.setPlaceholderText("Paste a model's answer here: every [Mem:N] is resolved to its memory.")
        self.answer.setFixedHeight(70)
        self.answer.textChanged.connect(self._resolve)
        self.list = QListWidget(self)
        self.list.itemClicked.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.addWidget(self.answer)
        layout.addWidget(self.list)

    def show_result(self, result: CompileResult | None, texts: dict[str, str]) -> None:
        self.result, self.texts = result, texts
        self._resolve()

    def _resolve(self) -> None:
        """Each [Mem:N] of the answer: (N, record id or None, status), listed and flagged."""
        self.list.clear()
        self.found = []
        if self.result is None:
            return
        for n, rid, status, label in citations(self.answer.toPlainText(), self.result, self.texts):
            item = QListWidgetItem(("⚠ " if status != "ok" else "") + label)
            item.setData(Qt.ItemDataRole.UserRole, rid)
            if status != "ok":
                item.setForeground(QColor(WARN))
            self.list.addItem(item)
            self.found.append((n, rid, status))

    def _clicked(self, item: QListWidgetItem) -> None:
        rid = item.data(Qt.ItemDataRole.UserRole)
        if rid:
            self.memory_clicked.emit(rid)


class CachePane(QWidget):
    """Runs ``simulate`` (turn, request tokens, cache reads per user turn) on demand."""

    def __init__(self, simulate: Callable[[], list[tuple[int, int, int]]], parent=None) -> None:
        super().__init__(parent)
        self._simulate = simulate
        self.rows: list[tuple[int, int, int]] = []
        self.button = QPushButton("Simulate the conversation", self)
        self.button.setToolTip("Compile each user turn of the history plus the current message and "
                               "count what a provider could read from its prefix cache")
        self.button.clicked.connect(self.simulate)
        self.total = QLabel(self)
        self.total.setWordWrap(True)
        self.table = QTableWidget(0, 4, self)
        self.table.setHorizontalHeaderLabels(["Turn", "Tokens sent", "From cache", "Share"])
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        for column in (0, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        _button_over(self, self.button, self.total, self.table)

    def simulate(self) -> list[tuple[int, int, int]]:
        self.rows = self._simulate()
        self.table.setRowCount(len(self.rows))
        for r, (turn, total, read) in enumerate(self.rows):
            for c, value in enumerate((turn, f"{total:,}", f"{read:,}", f"{100 * read / max(total, 1):.0f}%")):
                self.table.setItem(r, c, QTableWidgetItem(str(value)))
        self.total.setText(cache_summary(self.rows) if self.rows else "")
        return self.rows
