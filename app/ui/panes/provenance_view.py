"""The prompt preview's Provenance tab: paste a model's answer to a prompt an agent compiled
(through a door, with a ``conversation_id``) and see, for each ``[Mem:N]``, its memory, why
recall put it in the prompt and the agent's call that fetched it; under it, the prompts
that carried the selected memory. Reading only (:mod:`mnemoscope.store.agents.provenance`)."""

from __future__ import annotations

import html
from datetime import datetime

from mnemoscope.store import StoreError
from mnemoscope.store.agents import provenance
from mnemoscope.store.recall.signals import SIGNALS
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ..session import StoreSession
from .preview_text import WARN


def _when(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M")


def call_words(call) -> str:
    if call is None:
        return "its call is no longer in the activity log"
    return (f"fetched by compile_prompt by {html.escape(call.client)} ({call.door}), "
            f"{_when(call.when)}, activity #{call.id}")


def why_words(why: dict) -> str:
    if not why:
        return "no recall explanation was kept for this prompt"
    # The weighted parts, as recall's signal table names them (store/recall/signals.py): they add
    # up to the score.
    weighted = why.get("parts") or {}
    parts = " + ".join(f"{s.name} {weighted[s.name]:.2f}" for s in SIGNALS
                       if isinstance(weighted.get(s.name), (int, float)))
    rel = f", relevance {why['relevance']:.2f}" if isinstance(why.get("relevance"), (int, float)) else ""
    by = f", meaning by {html.escape(str(why['meaning_by']))}" if why.get("meaning_by") else ""
    return f"recalled with score {why.get('score', 0):.3f} ({parts}{rel}{by})"


class ProvenancePane(QWidget):
    memory_clicked = Signal(str)

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.citations: list[provenance.Citation] = []
        self.conversation = QComboBox(self)
        self.conversation.setToolTip("A conversation an agent compiled prompts in (compile_prompt with a "
                                     "conversation_id); its newest turn is resolved")
        self.conversation.currentIndexChanged.connect(lambda _i: self.resolve())
        reload = QPushButton("Reload", self)
        reload.setToolTip("Read the agents' conversations again")
        reload.clicked.connect(self.refresh_conversations)
        self.answer = QPlainTextEdit(self)
        self.answer.setPlaceholderText("Paste the model's answer to the agent's prompt: each [Mem:N] is traced "
                                       "to its memory, why it was recalled and the call that fetched it.")
        self.answer.setFixedHeight(64)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self.resolve)
        self.answer.textChanged.connect(self._timer.start)
        self.result = self._browser()
        self.carried = self._browser()
        row = QHBoxLayout()
        row.addWidget(QLabel("Conversation", self))
        row.addWidget(self.conversation, 1)
        row.addWidget(reload)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.answer)
        layout.addWidget(self.result, 3)
        layout.addWidget(self.carried, 2)
        session.store_replaced.connect(self.refresh_conversations)
        session.selection_changed.connect(self.show_carried)
        session.changed.connect(lambda _ids: self.show_carried(self.session.selected_id)
                                if self.isVisible() else None)

    def _browser(self) -> QTextBrowser:
        view = QTextBrowser(self)
        view.setOpenLinks(False)
        view.anchorClicked.connect(lambda url: self.memory_clicked.emit(url.toString().split(":", 1)[1]))
        return view

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refresh_conversations()

    # -- reading -------------------------------------------------------------------------
    def refresh_conversations(self) -> None:
        store = self.session.store
        current = self.conversation.currentData()
        self.conversation.blockSignals(True)
        self.conversation.clear()
        for c in provenance.conversations(store) if store is not None else []:
            trust = c.context.split("|", 1)[0] if c.context else "owner"
            self.conversation.addItem(f"{c.conversation_id} · {c.turns} turn{'s' * (c.turns != 1)} · "
                                      f"trust {trust} · {_when(c.last_at)}", (c.conversation_id, c.context))
        index = self.conversation.findData(current) if current is not None else -1
        self.conversation.setCurrentIndex(max(index, 0) if self.conversation.count() else -1)
        self.conversation.blockSignals(False)
        self.resolve()
        self.show_carried(self.session.selected_id)

    def resolve(self) -> None:
        self._timer.stop()
        store, picked = self.session.store, self.conversation.currentData()
        self.citations = []
        if store is None or picked is None:
            self.result.setHtml("<i>No agent has compiled a prompt with a conversation_id in this database yet "
                                "(compile_prompt through MCP or HTTP keeps its citation map).</i>")
            return
        answer = self.answer.toPlainText()
        if not answer.strip():
            self.result.setHtml("<i>Paste a model's answer above.</i>")
            return
        try:
            turn, self.citations = provenance.resolve_answer(store, answer, picked[0], context=picked[1])
        except StoreError as exc:
            self.result.setHtml(f"<span style='color:{WARN}'>{html.escape(str(exc))}</span>")
            return
        head = (f"<p><b>{html.escape(turn.conversation_id)} turn {turn.turn}</b> ({_when(turn.at)}, "
                f"{html.escape(turn.model)}): “{html.escape(turn.query[:80])}”</p>")
        if not self.citations:
            self.result.setHtml(head + "<p><i>The answer cites no [Mem:N].</i></p>")
            return
        items = []
        for c in self.citations:
            if c.status == "unknown":
                items.append(f"<p><b style='color:{WARN}'>{c.citation}</b> resolves to nothing: that prompt had "
                             "no such memory</p>")
                continue
            rid = html.escape(c.memory_id or "")
            text = html.escape(c.text) if c.status == "ok" else "<i>forgotten since</i>"
            items.append(f"<p><b>{c.citation}</b> → <a href='mem:{rid}'>{rid}</a>: {text}<br>"
                         f"<small>{why_words(c.why)}<br>{call_words(c.call)}</small></p>")
        self.result.setHtml(head + "".join(items))

    def show_carried(self, memory_id: str | None) -> None:
        store = self.session.store
        if store is None or memory_id is None:
            self.carried.setHtml("<i>Select a memory to see which agents' prompts carried it.</i>")
            return
        carried = provenance.prompts_carrying(store, memory_id)
        mid = html.escape(memory_id)
        if not carried:
            self.carried.setHtml(f"<p>No prompt an agent compiled with a conversation_id carried {mid}.</p>")
            return
        rows = "".join(f"<li>{html.escape(c.turn.conversation_id)} turn {c.turn.turn} as [Mem:{c.n}] — "
                       f"“{html.escape(c.turn.query[:60])}” — {call_words(c.call)}</li>" for c in carried)
        n = len(carried)
        self.carried.setHtml(f"<p><b>{n} prompt{'s' * (n != 1)} carried {mid}</b></p><ul>{rows}</ul>")

