"""The prompt preview's Future tab: what the time-travel slider's day does to the prompt.

It is told a :class:`~mnemoscope.prompt_future.PromptFuture` (``show_future``) and lists
every memory that will leave the prompt and every one that will enter it, one row each:
its text, when (the day the clock changes its layer, or "by" the day looked at), why, and
a Pin button for one that pinning keeps; above the list, the tokens and cost against
today. The last day looked at stays shown after the slider goes back to now, so its Pin
can still be clicked (Close ends it). Pinning is one undoable edit through the session's
write path."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
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

from ...prompt_future import (
    ARCHIVED,
    NOT_RECALLED,
    REASON_WORDS,
    Change,
    PromptFuture,
    day_words,
    when_words,
)
from ..commands.memories import PinCommand
from ..session import StoreSession
from ..theme import ARRIVAL_COLOUR, REFUSED_COLOUR
from ..widgets import RowsModel

PINNABLE = (ARCHIVED, NOT_RECALLED)  # pinning keeps these; a trimmed one needs budget instead
HINT = ("Move the Time travel slider in the toolbar: the prompt is recalled and compiled as of that "
        "day (nothing is written), and this tab lists the memories that leave it and those that enter.")
COLUMNS = ("", "Memory", "When", "Why", "")
PIN_COLUMN = 4


class FutureModel(RowsModel):
    """One row per memory that leaves the prompt, then one per memory that enters it."""

    columns = COLUMNS

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.future: PromptFuture | None = None
        self.rows: list[tuple[Change, bool]] = []  # (change, leaves)

    def set_future(self, future: PromptFuture | None) -> None:
        self.beginResetModel()
        self.future = future
        self.rows = [(c, True) for c in future.left] + [(c, False) for c in future.entered] if future else []
        self.endResetModel()

    def change_at(self, row: int) -> tuple[Change, bool]:
        return self.rows[row]

    def why(self, change: Change, leaves: bool) -> str:
        move = f"{change.layer_now} → {change.layer_then}" if change.layer_then else ""
        if leaves:
            reason = REASON_WORDS[change.reason]
            return f"{reason} ({move}, strength {change.strength_then:.2f})" if move else reason
        return f"rises into the top of the recall ({move}, strength {change.strength_then:.2f})" if move \
            else "rises into the top of the recall"

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        change, leaves = self.rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return "− leaves" if leaves else "+ enters"
            if column == 1:
                return change.text or change.id
            if column == 2:
                return when_words(change, self.future.days)
            if column == 3:
                return self.why(change, leaves)
            return None
        if role == Qt.ItemDataRole.ToolTipRole and column in (1, 3):
            return f"{change.id}\n\n{change.text}\n\n{self.why(change, leaves)}"
        if role == Qt.ItemDataRole.ForegroundRole and column == 0:
            return QColor(REFUSED_COLOUR if leaves else ARRIVAL_COLOUR)
        if role == Qt.ItemDataRole.UserRole:
            return change.id
        return None


class FuturePane(QWidget):
    """The Future tab: a headline with the day, tokens and cost, then the list."""

    memory_clicked = Signal(str)
    dismissed = Signal()

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.future: PromptFuture | None = None
        self.price = 0.0
        self.pin_buttons: dict[str, QPushButton] = {}
        self.headline = QLabel(HINT, self)
        self.headline.setObjectName("future_headline")
        self.headline.setWordWrap(True)
        self.headline.setTextFormat(Qt.TextFormat.RichText)
        self.close_button = QPushButton("Close", self)
        self.close_button.setToolTip("Stop comparing with that day")
        self.close_button.clicked.connect(self.dismissed)
        self.close_button.setEnabled(False)
        self.model = FutureModel(self)
        self.list = QTableView(self)
        self.list.setObjectName("future_list")
        self.list.setModel(self.model)
        self.list.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setWordWrap(False)
        self.list.verticalHeader().setVisible(False)
        self.list.setShowGrid(False)
        self.list.setAlternatingRowColors(True)
        header = self.list.horizontalHeader()
        for column in (0, 2, PIN_COLUMN):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(3, 170)
        self.list.clicked.connect(self._clicked)
        top = QHBoxLayout()
        top.addWidget(self.headline, 1)
        top.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.list, 1)
        self.setObjectName("future_pane")

    # -- what is shown -------------------------------------------------------------------
    def lines(self) -> list[str]:
        """What the list says, as plain text (what a person reads, in order)."""
        return self.future.sentences() if self.future is not None else []

    def show_future(self, future: PromptFuture | None, price: float) -> None:
        self.future, self.price = future, price
        self.pin_buttons = {}
        self.model.set_future(future)
        self.close_button.setEnabled(future is not None)
        if future is None:
            self.headline.setText(HINT)
            return
        self.headline.setText(self._headline(future))
        for row, (change, leaves) in enumerate(self.model.rows):
            if leaves and change.reason in PINNABLE and not change.pinned:
                self.list.setIndexWidget(self.model.index(row, PIN_COLUMN), self._pin_button(change.id))

    def summary(self) -> str:
        """The headline, for the tab's label: "2 leave, 1 enter"."""
        f = self.future
        if f is None:
            return ""
        return f"{len(f.left)} leave, {len(f.entered)} enter" if f.left or f.entered else "no change"

    def _headline(self, f: PromptFuture) -> str:
        when = day_words(f.days)
        tokens = f.tokens_then - f.tokens_now
        cost = f.cost_delta(self.price)
        money = f" · {'+' if cost >= 0 else '−'}${abs(cost):.5f} a prompt" if self.price else ""
        if not f.left and not f.entered:
            what = "the prompt carries the same memories as today"
        else:
            what = (f"<b style='color:{REFUSED_COLOUR}'>{len(f.left)} leave</b>, "
                    f"<b style='color:{ARRIVAL_COLOUR}'>{len(f.entered)} enter</b> the prompt")
        return f"<b>{when}</b>: {what} · tokens {f.tokens_now:,} → {f.tokens_then:,} ({tokens:+,}){money}"

    def _pin_button(self, memory_id: str) -> QPushButton:
        pin = QPushButton("Pin", self.list)
        pin.setObjectName(f"pin_{memory_id}")
        pin.setToolTip("Pin this memory so it does not fade or archive (Edit › Undo unpins it)")
        pin.setEnabled(self.session.writable)
        pin.clicked.connect(lambda _=False, mid=memory_id: self.pin(mid))
        self.pin_buttons[memory_id] = pin
        return pin

    def _clicked(self, index: QModelIndex) -> None:
        memory_id = self.model.data(index, Qt.ItemDataRole.UserRole)
        if memory_id and index.column() != PIN_COLUMN:
            self.memory_clicked.emit(memory_id)

    # -- the one write ---------------------------------------------------------------------
    def pin(self, memory_id: str) -> bool:
        """Pin a memory that would leave the prompt: one undoable edit."""
        return self.session.run(PinCommand(self.session, memory_id), "Pin failed")
