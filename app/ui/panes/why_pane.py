"""The prompt preview's Why tab: for the preview's own message, every memory recall brought,
best first, with its relevance, the weighted parts of its score drawn as one bar whose
length is the score (one colour per signal of store/recall/signals.py, each part as long as
it adds), and what the prompt did with it; then the memories that just missed: trimmed by
the budget, or ranked just below the k. A click selects the memory everywhere."""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ...recall_why import (
    BELOW_K,
    DUPLICATE,
    KEPT,
    REDACTED,
    SIGNAL_ABOUT,
    SIGNAL_WORDS,
    TRIMMED,
    WhyRow,
    parts_words,
)
from ..theme import KIND_COLOURS
from ..widgets import RowsModel

# One colour per signal, in recall's order (ColorBrewer's Set2: tells eight apart, on light
# and dark, and none is a kind's colour, so a part is never read as a kind).
SET2 = ("#fc8d62", "#66c2a5", "#ffd92f", "#a6d854", "#8da0cb", "#e78ac3", "#e5c494", "#b3b3b3")
PART_COLOURS = {name: SET2[i % len(SET2)] for i, name in enumerate(SIGNAL_WORDS)}
OUTCOME_COLOURS = {KEPT: "#009E73", TRIMMED: "#D55E00", DUPLICATE: "#8a8f98", REDACTED: "#8a8f98",
                   BELOW_K: "#D55E00"}
COLUMNS = ("#", "Memory", "Relevance", "Parts", "Prompt")
RELEVANCE_COLUMN = 2
PARTS_COLUMN = 3  # the model's (for a reader of the model); the view draws the parts beside the relevance
RELEVANCE_WIDTH = 112
HINT = "Type a user message: this tab says why each memory is in the prompt, or is not."


class WhyModel(RowsModel):
    columns = COLUMNS

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[WhyRow] = []
        self.top = 1.0  # the longest score, which the bars are drawn to

    def set_rows(self, rows: list[WhyRow]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.top = max([sum(p.weighted for p in r.parts) for r in self.rows] + [r.score for r in self.rows] + [1e-9])
        self.endResetModel()

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        row = self.rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (str(row.rank), row.text if row.outcome != REDACTED else "(redacted)", f"{row.relevance:.3f}",
                    None, row.short)[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            return (f"{row.id} · {row.kind}\n\n{row.text}\n\nscore {row.score:.3f} = "
                    f"{parts_words(row.parts, row.score)}\n{row.detail}")
        if role == Qt.ItemDataRole.ForegroundRole:
            if column == 0:
                return QColor(KIND_COLOURS.get(row.kind, "#888888"))
            if column == 4:
                return QColor(OUTCOME_COLOURS.get(row.outcome, "#8a8f98"))
        if role == Qt.ItemDataRole.TextAlignmentRole and column == 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.UserRole:
            return row.id
        return None


class PartsDelegate(QStyledItemDelegate):
    """The Relevance column: the score, then its weighted parts side by side, the whole bar
    as long as the score (one column, not two: at 1366×768 the memory's text needs the room)."""

    def __init__(self, model: WhyModel, parent=None) -> None:
        super().__init__(parent)
        self.model = model

    def paint(self, painter: QPainter, option, index: QModelIndex) -> None:
        super().paint(painter, option, index)  # the relevance, on the left
        row = self.model.rows[index.row()]
        number = option.fontMetrics.horizontalAdvance("0.000") + 10
        rect = QRectF(option.rect).adjusted(number, 5, -3, -5)
        x = rect.left()
        per = rect.width() / self.model.top
        painter.save()
        for part in row.parts:
            width = max(part.weighted * per, 0.0)
            colour = QColor(PART_COLOURS.get(part.signal, "#999999"))
            if row.missed:
                colour.setAlpha(150)
            painter.fillRect(QRectF(x, rect.top(), width, rect.height()), colour)
            x += width
        painter.restore()

    def sizeHint(self, option, index) -> QSize:
        return QSize(RELEVANCE_WIDTH, super().sizeHint(option, index).height())


class WhyPane(QWidget):
    memory_clicked = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[WhyRow] = []
        # Asked for the memories just below the k when the tab is looked at (a second
        # recall with a larger k): None when there is no message.
        self.below_k: Callable[[], list] | None = None
        self.headline = QLabel(HINT, self)
        self.headline.setObjectName("why_headline")
        self.headline.setWordWrap(True)
        # One label that wraps (six signals side by side would widen the window past a
        # laptop's screen); its tooltip says what each signal measures.
        legend = QLabel("&nbsp;&nbsp; ".join(f"<span style='color:{PART_COLOURS[signal]}'>■</span>&nbsp;{words}"
                                             for signal, words in SIGNAL_WORDS.items()), self)
        legend.setObjectName("why_legend")
        legend.setWordWrap(True)
        legend.setToolTip("<br>".join(f"<b>{html.escape(words)}</b>: {html.escape(SIGNAL_ABOUT[signal])}"
                                      for signal, words in SIGNAL_WORDS.items()))
        self.model = WhyModel(self)
        self.table = QTableView(self)
        self.table.setObjectName("why_table")
        self.table.setModel(self.model)
        self.table.setItemDelegateForColumn(RELEVANCE_COLUMN, PartsDelegate(self.model, self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.setShowGrid(False)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(RELEVANCE_COLUMN, QHeaderView.ResizeMode.Fixed)
        header.resizeSection(RELEVANCE_COLUMN, RELEVANCE_WIDTH)
        self.table.setColumnHidden(PARTS_COLUMN, True)  # drawn in the Relevance column
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.ResizeToContents)
        self.table.clicked.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.headline)
        layout.addWidget(legend)
        layout.addWidget(self.table, 1)
        self._below_shown = False

    def show_rows(self, rows: list[WhyRow], k: int, below_k: Callable[[], list] | None = None) -> None:
        """Show what the prompt did with each recalled memory; the ones below the k are
        asked for when the tab is visible (now, or when it is next shown)."""
        self.rows, self.k, self.below_k = list(rows), k, below_k
        self._below_shown = False
        self.model.set_rows(self.rows)
        self._headline()
        if self.isVisible():
            self._add_below_k()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._add_below_k()

    def _add_below_k(self) -> None:
        if self._below_shown or self.below_k is None:
            return
        self._below_shown = True
        below = self.below_k()
        if below:
            self.rows = [r for r in self.rows if r.outcome != BELOW_K] + below
            self.model.set_rows(self.rows)
            self._headline()

    def _headline(self) -> None:
        if not self.rows:
            self.headline.setText(HINT)
            return
        recalled = [r for r in self.rows if r.outcome != BELOW_K]
        counts = {outcome: sum(r.outcome == outcome for r in recalled) for outcome in (KEPT, TRIMMED, DUPLICATE)}
        below = sum(r.outcome == BELOW_K for r in self.rows)
        words = [f"recall brought {len(recalled)} (k {self.k})", f"{counts[KEPT]} in the prompt"]
        if counts[TRIMMED]:
            words.append(f"{counts[TRIMMED]} trimmed by the budget")
        if counts[DUPLICATE]:
            words.append(f"{counts[DUPLICATE]} not sent as duplicates")
        if below:
            words.append(f"{below} just below the k")
        self.headline.setText(" · ".join(words) + ". Each bar is a memory's score, in the parts it adds up from.")

    def _clicked(self, index: QModelIndex) -> None:
        memory_id = self.model.data(index, Qt.ItemDataRole.UserRole)
        if memory_id:
            self.memory_clicked.emit(memory_id)
