"""The live prompt preview: type what a user would say and see the prompt the agent
would send — what is recalled, kept, trimmed and cacheable — then copy it.

Changing any input recalls (without writing) and compiles again; moving the budget
only re-selects from the last compile's token counts.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from mnemoscope.store import SENSITIVITIES, StoreError
from mnemoscope.store.recall.ranking import MAX_K
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ...bridge import DEFAULT_K, DEFAULT_RULES, PreviewRequest, compile_for, recall_for
from ...compiler import PROFILES, CompileResult
from ...compiler.cache import PROVIDER_MIN_CACHE_TOKENS
from ...compiler.capabilities import (
    DEFAULT_MODEL,
    capability_map,
    get_context_cap_for_model,
    model_capabilities,
)
from ...compiler.providers import anthropic_model_id, render
from ...compiler.tokenizers import count_tokens
from ...prompt_future import PromptFuture, prompt_future
from ...recall_why import NEAR_MISSES, WhyRow, explain_prompt, hit_words
from ..preferences import picked, start_in
from ..session import StoreSession
from ..widgets import SteadyLabel, StillTabs, scrolling, visible_groove
from .future_pane import FuturePane
from .history_editor import HistoryEditor
from .preview_panes import CachePane, CitationsPane, ComparePane
from .preview_text import (
    MIN_BUDGET,
    SLIDER_STEPS,
    budget_for,
    copied_message,
    meaning_html,
    messages_html,
    simulate_cache,
    slider_for,
)
from .provenance_view import ProvenancePane
from .token_bars import TokenBars
from .why_pane import WhyPane


@dataclass
class Found:
    """What a message's recall and compile found: the prompt's future (when a later day is
    looked at), the hits shown, their compile, and the recall with a few more hits."""

    future: PromptFuture | None
    hits: list
    base: CompileResult
    more: list | None


def recall_and_compile(store, request: PreviewRequest, future_days: float, as_of_days: float,
                       below_now) -> Found:
    """Recall for ``request`` and compile (writing nothing): today's prompt, or today's and
    ``future_days`` later's (the one shown: that day's when ``as_of_days``); and the same
    recall with ``NEAR_MISSES`` more hits (as of ``below_now``), for the Why tab. No Qt: a
    big store's runs in a Job."""
    if future_days > 0:  # today and that day, both recalled without writing
        future = prompt_future(store, request, future_days, explain=True)
        shown = future.then if as_of_days > 0 else future.today
        hits, base = shown.hits, shown.result
    else:
        future = None
        hits, items = recall_for(store, request, explain=True)
        base = compile_for(store, request, items)
    more = None
    if hits:
        wider = replace(request, k=min(request.k + NEAR_MISSES, MAX_K))
        try:
            more, _items = recall_for(store, wider, below_now, explain=True)
        except (StoreError, ValueError, TypeError):
            more = None
    return Found(future, hits, base, more)


FORMAT_LABELS = (("openai", "Copy OpenAI", "Copy the prompt as OpenAI chat messages (JSON)"),
                 ("anthropic", "Copy Anthropic", "Copy the prompt as an Anthropic Messages API request (JSON)"),
                 ("text", "Copy text", "Copy the prompt as plain text"))
INPUTS_HEIGHT = 214  # the preview's inputs pane at first: message, model, budget, memories and scope
MESSAGES_DELAY_MS = 120
RECOMPILE_DELAY_MS = 60
DEFAULT_BUDGET = 2048


class PromptPreview(QWidget):
    compiled = Signal()
    status_message = Signal(str)  # a one-line confirmation for the window's status bar

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.base: CompileResult | None = None     # the last full compile
        self.result: CompileResult | None = None   # the same at the current budget
        self.hits = []
        self.kinds: dict[str, str] = {}
        self.texts: dict[str, str] = {}
        self.error = ""
        self._job = None  # a big store's recall and compile, off the GUI thread
        self._more: list | None = None  # the recall with NEAR_MISSES more: what the Why tab shows below the k
        # The time-travel slider's day (0: today), and the last day it showed, whose changes
        # the Future tab keeps after the slider goes back to now.
        self.as_of_days = 0.0
        self.future_days = 0.0
        self.future: PromptFuture | None = None
        # Asked before a copy leaves the window (the owner tools' privacy warning), if set.
        self.confirm_output: Callable[[list[str], str], bool] | None = None
        self._build()
        self._recompile_timer = QTimer(self)
        self._recompile_timer.setSingleShot(True)
        self._recompile_timer.setInterval(RECOMPILE_DELAY_MS)
        self._recompile_timer.timeout.connect(self.recompile)
        self._messages_timer = QTimer(self)
        self._messages_timer.setSingleShot(True)
        self._messages_timer.setInterval(MESSAGES_DELAY_MS)
        self._messages_timer.timeout.connect(self._show_messages)
        session.changed.connect(lambda _ids: self.schedule())
        session.store_replaced.connect(self._store_replaced)
        # A big store's reads run off the GUI thread: its tokenizer is built there too, as
        # the window loads. Building it holds the interpreter lock for ~0.13 s (tiktoken's
        # constructor): at 100,000 memories the longest stall of a first message. The model
        # is read from a plain attribute: the preparer must not touch the combo box.
        self._tokenizer_model = self.model.currentText().strip()
        self.model.currentTextChanged.connect(
            lambda text: setattr(self, "_tokenizer_model", text.strip()))
        session.add_preparer("tokenizer", lambda _store, _memories: count_tokens("", self._tokenizer_model))
        session.preview_changed.connect(self._preview_day)

    # -- construction ----------------------------------------------------------------
    def _build(self) -> None:
        """Inputs above, the product below: the summary, the token bars, copy and save, and
        the tabs (the prompt, why each memory is there, the future, …). The two share the
        pane through a splitter; the inputs scroll in theirs, so the output is on screen
        whatever the window's height (at 1366×768 too) and nothing in it moves when a note
        comes or goes."""
        inputs = QWidget(self)
        form = QFormLayout(inputs)
        form.setContentsMargins(4, 4, 4, 4)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.user_message = QPlainTextEdit(self)
        self.user_message.setObjectName("user_message")
        self.user_message.setPlaceholderText("What the user says to the agent…")
        self.user_message.setFixedHeight(self.user_message.fontMetrics().lineSpacing() * 2 + 14)
        form.addRow("User message", self.user_message)
        # under the message it is about: the topic shift, and the near-duplicates left out
        # (with the store's embedder); its room is kept when it says nothing, so the form
        # under it never moves
        self.meaning = SteadyLabel(1, self)
        self.meaning.setObjectName("preview_meaning")
        self.meaning.linkActivated.connect(lambda url: self.session.select(url.split(":", 1)[1]))
        form.addRow(self.meaning)
        self.model = QComboBox(self)
        self.model.setEditable(True)
        self.model.addItems(capability_map().model_ids)
        self.model.setCurrentText(DEFAULT_MODEL)
        form.addRow("Model", self.model)
        # The slider is logarithmic so small budgets get as much travel as large ones.
        self.budget_slider = visible_groove(QSlider(Qt.Orientation.Horizontal, self))
        self.budget_slider.setRange(0, SLIDER_STEPS)
        self.budget_spin = QSpinBox(self)
        self.budget_spin.setSingleStep(64)
        self.budget_cap = 128_000
        self._set_budget_range(self.budget_cap)
        self.budget_spin.setValue(DEFAULT_BUDGET)
        self.budget_slider.setValue(slider_for(DEFAULT_BUDGET, self.budget_cap))
        row = QHBoxLayout()
        row.addWidget(self.budget_slider, 3)
        row.addWidget(self.budget_spin, 1)
        form.addRow("Budget", row)
        self.k = QSpinBox(self)
        self.k.setRange(1, 1000)
        self.k.setValue(DEFAULT_K)
        self.k.setToolTip("How many memories recall brings for the prompt (the k)")
        self.trust = QComboBox(self)
        self.trust.addItems(SENSITIVITIES)
        self.trust.setCurrentText("medium")
        row = QHBoxLayout()
        row.addWidget(QLabel("recall", self))
        row.addWidget(self.k)
        row.addWidget(QLabel("trust", self))
        row.addWidget(self.trust, 1)
        form.addRow("Memories", row)
        self.scope = QComboBox(self)
        self.scope.setEditable(True)
        self.scope.addItem("global")
        form.addRow("Scope", self.scope)
        self.placement = QComboBox(self)
        self.placement.addItems(["end", "system"])
        self.placement.setToolTip("Where the memories go: at the end of the prompt, or in the system message")
        self.profile = QComboBox(self)
        self.profile.addItems(list(PROFILES))
        self.profile.setToolTip("The compiler profile: coding and conversational send one of two memories "
                                "that say the same thing (with the store's embedder)")
        row = QHBoxLayout()
        row.addWidget(self.placement, 1)
        row.addWidget(QLabel("profile", self))
        row.addWidget(self.profile, 1)
        form.addRow("Placement", row)
        self.price = QDoubleSpinBox(self)
        self.price.setDecimals(5)
        self.price.setRange(0, 10)
        self.price.setSingleStep(0.0005)
        self.price.setValue(0.0025)
        self.price.setPrefix("$")
        self.price.setSuffix(" / 1k input tokens")
        form.addRow("Price", self.price)
        self.rules = QPlainTextEdit(self)
        self.rules.setPlainText(DEFAULT_RULES)
        self.rules.setFixedHeight(54)
        form.addRow("System rules", self.rules)
        self.history = HistoryEditor(self)
        self.history.changed.connect(self.schedule)
        self.history.failed.connect(self._set_error)
        form.addRow("History", self.history)
        self.inputs_area = scrolling(inputs, self)
        self.inputs_area.setObjectName("preview_inputs")
        self.inputs_area.setMinimumHeight(90)

        self.bars = TokenBars(self)
        self.summary = SteadyLabel(2, self)
        self.summary.setObjectName("preview_summary")
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.tabs = StillTabs(self)
        self.tabs.setObjectName("preview_tabs")
        self.messages = QTextBrowser(self)
        self.messages.setOpenLinks(False)
        self.messages.setMouseTracking(True)
        self.tabs.addTab(self.messages, "Prompt")
        self.why_pane = WhyPane(self)
        self.why_pane.memory_clicked.connect(self.session.select)
        self.tabs.addTab(self.why_pane, "Why")
        self.compare_pane = ComparePane(self)
        self.citations_pane = CitationsPane(self)
        self.cache_pane = CachePane(self._simulate_cache, self)
        for pane in (self.compare_pane, self.citations_pane):
            pane.memory_clicked.connect(self.session.select)
        self.future_pane = FuturePane(self.session, self)
        self.future_pane.memory_clicked.connect(self.session.select)
        self.future_pane.dismissed.connect(self.forget_future)
        self.tabs.addTab(self.future_pane, "Future")
        self.tabs.addTab(self.compare_pane, "Compare")
        self.tabs.addTab(self.citations_pane, "Citations")
        self.tabs.addTab(self.cache_pane, "Cache")
        self.provenance_pane = ProvenancePane(self.session, self)
        self.provenance_pane.memory_clicked.connect(self.session.select)
        self.tabs.addTab(self.provenance_pane, "Answers")
        self.copy_buttons: dict[str, QPushButton] = {}
        exports = QHBoxLayout()
        exports.setSpacing(4)
        for fmt, label, tip in FORMAT_LABELS:
            b = QPushButton(label, self)
            b.setToolTip(tip)
            b.clicked.connect(lambda _=False, f=fmt: self.copy(f))
            exports.addWidget(b)
            self.copy_buttons[fmt] = b
        self.save_button = QPushButton("Save…", self)
        self.save_button.setToolTip("Save the prompt to a file, with its [Mem:N] map beside it")
        self.save_button.clicked.connect(self._save_dialog)
        exports.addWidget(self.save_button)

        output = QWidget(self)
        output.setObjectName("preview_output")
        below = QVBoxLayout(output)
        below.setContentsMargins(4, 2, 4, 4)
        below.setSpacing(4)
        below.addWidget(self.summary)
        below.addWidget(self.bars)
        below.addLayout(exports)
        below.addWidget(self.tabs, 1)
        # a page as tall as its own form would lift the output's floor and squeeze the
        # inputs; each page scrolls instead
        self.tabs.setMinimumHeight(150)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.setObjectName("preview_splitter")
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(self.inputs_area)
        self.splitter.addWidget(output)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        # the inputs a person changes most (message, model, budget, memories, scope) in view
        self.splitter.setSizes([INPUTS_HEIGHT, 600])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)
        self._split = False  # True once a person has moved the splitter
        self.splitter.splitterMoved.connect(lambda *_a: setattr(self, "_split", True))

        for w in (self.user_message, self.rules):
            w.textChanged.connect(self.schedule)
        for combo in (self.model, self.placement, self.profile, self.scope, self.trust):
            combo.currentTextChanged.connect(self.schedule)
        self.k.valueChanged.connect(self.schedule)
        self.model.currentTextChanged.connect(self._offer_formats)
        self.model.currentTextChanged.connect(self._price_of_model)
        self._offer_formats(self.model.currentText())
        self._price_of_model(self.model.currentText())
        self.price.valueChanged.connect(self._price_changed)
        self.budget_slider.valueChanged.connect(self._budget_from_slider)
        self.budget_spin.valueChanged.connect(self._budget_from_spin)
        self.bars.memory_clicked.connect(self.session.select)
        self.messages.anchorClicked.connect(lambda url: self.session.select(url.toString().split(":", 1)[1]))
        self.messages.highlighted.connect(self._hover_citation)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # Until a person drags the splitter, the inputs keep their height and the output
        # takes the rest (a splitter scales the sizes it was given to each new height).
        if not self._split:
            height = event.size().height() - self.splitter.handleWidth()  # the splitter fills the pane
            inputs = max(min(INPUTS_HEIGHT, height - self.splitter.widget(1).minimumSizeHint().height()), 90)
            self.splitter.setSizes([inputs, max(height - inputs, 0)])

    # -- inputs ----------------------------------------------------------------------
    def _store_replaced(self) -> None:
        store = self.session.store
        current = self.scope.currentText()
        self.scope.blockSignals(True)
        self.scope.clear()
        scopes = store.scopes() if store else []
        self.scope.addItems(sorted(set(["global", *scopes])))
        self.scope.setCurrentText(current if current in scopes or current == "global" else "global")
        self.scope.blockSignals(False)
        self.compare_pane.pinned = None  # a compile of another database compares with nothing
        self.future_days, self.future = 0.0, None
        self._show_future()
        self.schedule()

    def _set_budget_range(self, cap: int) -> None:
        self.budget_cap = cap
        self.budget_spin.blockSignals(True)
        self.budget_spin.setRange(MIN_BUDGET, cap)
        self.budget_spin.blockSignals(False)
        self.budget_slider.blockSignals(True)
        self.budget_slider.setValue(slider_for(self.budget_spin.value(), self.budget_cap))
        self.budget_slider.blockSignals(False)

    def replay(self, user_message: str, scope: str, *, trust: str | None = None, k: int | None = None,
               model: str | None = None, budget: int | None = None) -> None:
        """Load an agent's call into the inputs (what is not given stays as it is)."""
        self.user_message.setPlainText(user_message)
        self.scope.setCurrentText(scope or "global")
        if trust:
            self.trust.setCurrentText(trust)
        if k is not None:
            self.k.setValue(k)
        if model:
            self.model.setCurrentText(model)
        if budget is not None:
            self.budget_spin.setValue(budget)
        self.schedule()

    def request(self) -> PreviewRequest:
        return PreviewRequest(
            user_message=self.user_message.toPlainText(), history=self.history.messages(),
            model_id=self.model.currentText().strip() or DEFAULT_MODEL, max_tokens=self.budget_spin.value(),
            placement=self.placement.currentText(), rules=self.rules.toPlainText(), k=self.k.value(),
            scope=self.scope.currentText().strip() or "global", trust=self.trust.currentText(),
            profile=self.profile.currentText())

    # -- compiling -------------------------------------------------------------------
    def schedule(self, *_args) -> None:
        self._recompile_timer.start()

    def recompile(self) -> None:
        """Recall for the user message (writing nothing) and compile from scratch."""
        self._recompile_timer.stop()
        store = self.session.store
        request = self.request()
        cap = get_context_cap_for_model(request.model_id) or 1_000_000
        self._set_budget_range(cap)
        if request.max_tokens > cap:
            request.max_tokens = cap
        if store is None or not request.user_message.strip():
            if self._job is not None:  # what it would bring is of a message no longer there
                self._job.cancel()
                self._job = None
            self.base = self.result = None
            self.hits = []
            self.bars.set_result(None)
            self.meaning.setText("")
            self.future = None
            self._show_future()
            self.summary.setText("Type a user message to see the prompt the agent would send.")
            self.summary.setToolTip("")
            self.messages.clear()
            self.why_pane.show_rows([], self.k.value())
            return
        below_now = self.session.preview_now() if self.as_of_days > 0 and self.future_days > 0 else None
        work = (request, self.future_days, self.as_of_days, below_now)
        if not self.session.in_background():
            try:
                found = recall_and_compile(store, *work)
            except (StoreError, ValueError, TypeError) as exc:
                self._set_error(str(exc))
                return
            self._show_found(found)
            return
        # A big store: recalled and compiled off the GUI thread (the first time the model and
        # every vector load there; each later message's recall is ~0.1-0.2 s at 100,000), a
        # newer message replacing one still being worked out.
        from ..background import Job

        if self._job is not None:
            self._job.cancel()
        held = store.held_vectors

        def run(worker):
            worker.held_vectors = held
            return recall_and_compile(worker, *work), worker.held_vectors

        job = Job(store, "Recalling", run, writes=False, share_embedder=True, parent=self)
        job.finished.connect(lambda found, _read, j=job: self._job_done(j, found, None))
        job.failed.connect(lambda exc, j=job: self._job_done(j, None, exc))
        self._job = job
        job.start()

    def _job_done(self, job, found, error: Exception | None) -> None:
        if job is not self._job:
            return  # a newer message is being worked out
        self._job = None
        if found is None:
            from ..background import Cancelled

            if not isinstance(error, Cancelled):
                self._set_error(str(error))
            return
        found, held = found
        store = self.session.store
        if store is not None and held is not None and store.held_vectors is None:
            store.held_vectors = held  # the next message's recall reads none of them again
        self._show_found(found)

    def _show_found(self, found: Found) -> None:
        self.error = ""
        self.future, self.hits, self.base, self._more = found.future, found.hits, found.base, found.more
        hits = [*self.future.today.hits, *self.future.then.hits] if self.future else self.hits
        self.kinds = {h.id: h.kind for h in hits}
        self.texts = {h.id: h.text or "" for h in hits}
        self._show_future()
        self.result = self.base
        self._refresh(messages_now=True)

    def _preview_day(self, days: float) -> None:
        """The time-travel slider moved: compile as of that day (today again at 0), and
        show what changes at the top of the preview (kept after the slider springs back, until Close)."""
        if days > 0 and self.future_days == 0:  # a first look ahead: show what it changes
            self.tabs.setCurrentWidget(self.future_pane)
        self.as_of_days = days
        if days > 0:
            self.future_days = days
        self.schedule()

    def _price_changed(self, price: float) -> None:
        self._show_summary()
        self._show_future()

    def forget_future(self) -> None:
        """Close the comparison with a later day."""
        self.future_days, self.future = 0.0, None
        self._show_future()
        self.schedule()

    def _show_future(self) -> None:
        """The Future tab's list, and its label: "Future · 1 leave, 0 enter"."""
        self.future_pane.show_future(self.future, self.price.value())
        said = self.future_pane.summary()
        self.tabs.setTabText(self.tabs.indexOf(self.future_pane), f"Future · {said}" if said else "Future")

    def _budget_from_slider(self, position: int) -> None:
        tokens = budget_for(position, self.budget_cap)
        self.budget_spin.blockSignals(True)
        self.budget_spin.setValue(tokens)
        self.budget_spin.blockSignals(False)
        self.set_budget(tokens)

    def _budget_from_spin(self, value: int) -> None:
        self.budget_slider.blockSignals(True)
        self.budget_slider.setValue(slider_for(value, self.budget_cap))
        self.budget_slider.blockSignals(False)
        self.set_budget(value)

    def set_budget(self, tokens: int) -> None:
        """Re-select the last compile at another budget: no recall, no tokenizing."""
        if self.base is None:
            return
        if self.future is not None:  # what leaves at that day depends on the budget: compare again
            self.schedule()
        self.result = self.base.rebudget(tokens)
        if "meaning_unavailable" in self.base.metadata:  # said by the bridge, not by the plan
            self.result.metadata["meaning_unavailable"] = self.base.metadata["meaning_unavailable"]
        self._refresh(messages_now=False)

    def _refresh(self, messages_now: bool) -> None:
        weights = self.session.store.config.weights
        self.bars.set_result(self.result, self.kinds, {h.id: hit_words(h, weights) for h in self.hits})
        self.why_pane.show_rows(explain_prompt(self.hits, self.result, weights, self.k.value()),
                                self.k.value(), self._below_k)
        self._show_summary()
        text = meaning_html(self.result)
        self.meaning.setText(text)
        self.compare_pane.show_result(self.result, self.texts)
        self.citations_pane.show_result(self.result, self.texts)
        if messages_now:
            self._show_messages()
        else:
            self._messages_timer.start()
        self.compiled.emit()

    def _below_k(self) -> list[WhyRow]:
        """The memories recall ranks just under the k for this message: recalled again
        with a larger k (writing nothing), with the hits, those not among them."""
        store = self.session.store
        if store is None or not self.hits or self._more is None:
            return []
        more = self._more
        shown = {h.id for h in self.hits}
        below = [h for h in more if h.id not in shown][:NEAR_MISSES]
        rows = explain_prompt(self.hits, self.result, store.config.weights, self.k.value(), below)
        return rows[len(self.hits):]

    def _set_error(self, message: str) -> None:
        self.error = message
        self.summary.setText(f"<span style='color:#D55E00'>{html.escape(message)}</span>")

    # -- showing ---------------------------------------------------------------------
    def summary_values(self) -> dict:
        md = self.result.metadata
        trimmed = [s for s in self.result.segments if s.region in ("memory", "extra") and not s.kept]
        price = self.price.value()
        return {
            "tokens": md["token_count"], "budget": md["tokens_budget"], "kept": md["memories_kept"],
            "offered": md["memories_offered"], "trimmed_tokens": md["tokens_trimmed"],
            "trimmed_memories": len(trimmed), "history_dropped": md["history_messages_dropped"],
            "prefix": md["cacheable_prefix_tokens"], "caches": md["prompt_caching_supported"],
            "cache_used": md["prompt_cache_used"], "billed": md["billed_input_tokens"],
            "cost": md["billed_input_tokens"] / 1000 * price, "exact": md["token_count_exact"],
            "tokenizer": md["tokenizer"],
        }

    def _show_summary(self) -> None:
        if self.result is None:
            return
        v = self.summary_values()
        caching = ("cached by the provider" if v["cache_used"] else
                   f"model caches prefixes ≥ {PROVIDER_MIN_CACHE_TOKENS:,} tokens" if v["caches"] else "model does not cache")
        approx = "" if v["exact"] else " (approximate: " + v["tokenizer"] + ")"
        over = " · <b style='color:#D55E00'>over budget: rules, history and turn alone do not fit</b>" \
            if self.result.metadata["budget_exceeded"] else ""
        ahead = self.as_of_days > 0 and self.future is not None
        # Two short lines a glance reads; the whole account in the tooltip. A day ahead takes
        # the place of the cacheable prefix (the bars show it): a third line would be cut.
        second = (f"<b>As of +{self.as_of_days:g} days</b> · {v['trimmed_tokens']:,} tokens trimmed · "
                  f"est. ${v['cost']:.5f}") if ahead else \
            f"{v['trimmed_tokens']:,} tokens trimmed · est. ${v['cost']:.5f} · cacheable prefix {v['prefix']:,}"
        self.summary.setText(
            f"<b>{v['tokens']:,} / {v['budget']:,} tokens</b>{approx} · <b>{v['kept']} of {v['offered']}</b> "
            f"memories kept{over}<br>{second}")
        as_of = f"As of +{self.as_of_days:g} days (time travel; nothing is written): " if ahead else ""
        self.summary.setToolTip(
            f"{as_of}{v['tokens']:,} / {v['budget']:,} tokens (prompt / budget){approx}; memories kept {v['kept']} of "
            f"{v['offered']} recalled; {v['trimmed_tokens']:,} tokens trimmed; {v['history_dropped']} history "
            f"messages dropped; cacheable prefix {v['prefix']:,} tokens ({caching}); est. ${v['cost']:.5f} for "
            f"{v['billed']:,} billed tokens (the prompt + {v['billed'] - v['tokens']:,} for message framing)")

    def _show_messages(self) -> None:
        if self.result is not None:
            self.messages.setHtml(messages_html(self.result))

    def _hover_citation(self, url) -> None:
        target = url.toString() if hasattr(url, "toString") else str(url)
        if target.startswith("mem:"):
            rid = target.split(":", 1)[1]
            self.messages.setToolTip(f"{rid}: {self.texts.get(rid, '')}")
        else:
            self.messages.setToolTip("")

    def _simulate_cache(self) -> list[tuple[int, int, int]]:
        store = self.session.store
        if store is None or self.result is None:
            return []
        return simulate_cache(store, self.request())

    # -- export ----------------------------------------------------------------------
    def export_text(self, fmt: str) -> str:
        return render(self.result, fmt, self.request().model_id)

    def _price_of_model(self, model: str) -> None:
        """The price follows the model: its list price from the capability map; a model the
        map has no price for keeps the price shown (a person may have typed their own)."""
        price = model_capabilities(model.strip()).input_price_per_1k if model.strip() else None
        if price is not None:
            self.price.setValue(price)
            self.price.setToolTip(f"The list price of {model.strip()}'s input tokens (the capability map); "
                                  "type your own if you pay another")
        else:
            self.price.setToolTip("The capability map has no price for this model: type what you pay")

    def _offer_formats(self, model: str) -> None:
        """An Anthropic request is offered for a Claude model only."""
        try:
            anthropic_model_id(model.strip())
            claude = True
        except ValueError:
            claude = False
        button = self.copy_buttons["anthropic"]
        button.setEnabled(claude)
        button.setToolTip("" if claude else "Needs a Claude model (anthropic/claude-…): choose one above")

    def copy(self, fmt: str) -> None:
        if self.result is None:
            return
        try:
            text = self.export_text(fmt)
        except ValueError as exc:  # e.g. an Anthropic request for a model that is not Claude
            self._set_error(str(exc))
            return
        if self.confirm_output is not None and not self.confirm_output([text], "the copied prompt"):
            return
        QGuiApplication.clipboard().setText(text)
        self.status_message.emit(copied_message(fmt, len(self.result.messages),
                                                self.result.metadata["token_count"]))

    def _save_dialog(self) -> None:
        if self.result is None:
            return
        path, chosen = QFileDialog.getSaveFileName(
            self, "Save the compiled prompt", start_in("prompt.json"),
            "OpenAI messages (*.json);;Anthropic request (*.json);;Plain text (*.txt)")
        if picked(path):
            fmt = "anthropic" if chosen.startswith("Anthropic") else "text" if chosen.startswith("Plain") else "openai"
            self.save(path, fmt)

    def save(self, path: str, fmt: str) -> str:
        """Write the prompt in ``fmt`` to ``path`` and its ref map beside it; returns the ref map's path."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.export_text(fmt))
        ref_path = re.sub(r"(\.\w+)?$", ".refmap.json", path, count=1)
        refs = {str(n): {"id": rid, "tier": self.result.ref_map_type.get(n), "text": self.texts.get(rid, "")}
                for n, rid in self.result.ref_map.items()}
        with open(ref_path, "w", encoding="utf-8") as fh:
            json.dump(refs, fh, ensure_ascii=False, indent=2)
        return ref_path
