"""The prompt preview's Future tab: what the time-travel slider's day does to the prompt.

It is told a :class:`~mnemoscope.prompt_future.PromptFuture` (``show_future``) and lists,
one card each, the memories that will leave the prompt ("In 60 days the agent will no
longer be told: …", with why and a Pin button) and those that will enter, over the
tokens and cost against today. The last day looked at stays shown after the slider
springs back to now, so its Pin can be clicked. Pinning is one undoable edit through the
session's write path."""

from __future__ import annotations

import html

from mnemoscope.store import Memory
from mnemoscope.store.tables import TOUCHED
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ..prompt_future import ARCHIVED, NOT_RECALLED, REASON_WORDS, PromptFuture, day_words
from .commands import StoreCommand
from .session import StoreSession
from .theme import ARRIVAL_COLOUR, REFUSED_COLOUR
from .widgets import scrolling

PINNABLE = (ARCHIVED, NOT_RECALLED)  # pinning keeps these; a trimmed one needs budget instead
HINT = ("Move the Time travel slider in the toolbar: the prompt is recalled and compiled as of that "
        "day (nothing is written), and this tab says which memories leave it and which enter.")


class PinCommand(StoreCommand):
    """Pin a memory; undo puts back its pin and what pinning touched (its strength's start,
    so the days towards the archive count from where they were), nothing else."""

    def __init__(self, session: StoreSession, memory_id: str) -> None:
        super().__init__(session, "Pin memory")
        self.memory_id = memory_id
        self.before: Memory | None = None

    def apply(self) -> None:
        result = self.session.store.pin(self.memory_id)
        self.before = self.before or result.before
        self.session.notify({self.memory_id})

    def revert(self) -> None:
        self.session.store.restore_state(self.before, ("pinned", *TOUCHED))
        self.session.notify({self.memory_id})


class FuturePane(QFrame):
    """Shown at the top of the prompt preview while a later day is being looked at (or
    was, until Close), so the change is seen at once without scrolling."""

    memory_clicked = Signal(str)
    dismissed = Signal()
    MAX_HEIGHT = 240

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
        self.close_button.setToolTip("Stop comparing with that day (the slider shows another one again)")
        self.close_button.clicked.connect(self.dismissed)
        self.cards = QWidget(self)
        self.cards_layout = QVBoxLayout(self.cards)
        self.cards_layout.setContentsMargins(0, 0, 0, 0)
        self.cards_layout.addStretch(1)
        self.setObjectName("future_pane")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMaximumHeight(self.MAX_HEIGHT)
        top = QHBoxLayout()
        top.addWidget(self.headline, 1)
        top.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(scrolling(self.cards, self), 1)

    # -- what is shown -------------------------------------------------------------------
    def lines(self) -> list[str]:
        """What the cards say, as plain text (what a person reads, in order)."""
        return self.future.sentences() if self.future is not None else []

    def show_future(self, future: PromptFuture | None, price: float) -> None:
        self.future, self.price = future, price
        self.pin_buttons = {}
        while self.cards_layout.count() > 1:  # the stretch stays last
            item = self.cards_layout.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        if future is None:
            self.headline.setText(HINT)
            return
        self.headline.setText(self._headline(future))
        sentences = future.sentences()
        changes = [*future.left, *future.entered]
        for i, (change, sentence) in enumerate(zip(changes, sentences)):
            self.cards_layout.insertWidget(i, self._card(change, sentence, leaving=i < len(future.left)))

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
        return (f"<b>{when}</b> (as the Time travel slider showed): {what} · tokens {f.tokens_now:,} → "
                f"{f.tokens_then:,} ({tokens:+,}){money}")

    def _card(self, change, sentence: str, *, leaving: bool) -> QFrame:
        card = QFrame(self.cards)
        card.setFrameShape(QFrame.Shape.StyledPanel)
        row = QHBoxLayout(card)
        row.setContentsMargins(6, 4, 6, 4)
        colour = REFUSED_COLOUR if leaving else ARRIVAL_COLOUR
        mark = "−" if leaving else "+"
        words = html.escape(sentence.rsplit(" (", 1)[0] if leaving else sentence)
        head, _, text = words.partition(": ")
        detail = (f"{change.layer_now} → {change.layer_then}, strength {change.strength_now:.2f} → "
                  f"{change.strength_then:.2f}")
        why = f" — {REASON_WORDS[change.reason]}" if leaving else ""
        label = QLabel(f"<b style='color:{colour}'>{mark}</b> {head}: <a href='mem:{html.escape(change.id)}'>"
                       f"<b>{text}</b></a><br><small>{html.escape(change.id)} · {detail}{why}</small>", card)
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.RichText)
        label.linkActivated.connect(lambda url: self.memory_clicked.emit(url.split(":", 1)[1]))
        row.addWidget(label, 1)
        if leaving and change.reason in PINNABLE and not change.pinned:
            pin = QPushButton("Pin", card)
            pin.setObjectName(f"pin_{change.id}")
            pin.setToolTip("Pin this memory so it does not fade or archive (Edit › Undo unpins it)")
            pin.setEnabled(self.session.writable)
            pin.clicked.connect(lambda _=False, mid=change.id: self.pin(mid))
            row.addWidget(pin, 0, Qt.AlignmentFlag.AlignTop)
            self.pin_buttons[change.id] = pin
        return card

    # -- the one write ---------------------------------------------------------------------
    def pin(self, memory_id: str) -> bool:
        """Pin a memory that would leave the prompt: one undoable edit."""
        return self.session.run(PinCommand(self.session, memory_id), "Pin failed")
