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

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from store import SENSITIVITIES, StoreError

from ..bridge import DEFAULT_RULES, PreviewRequest, compile_items, recall_for
from ..compiler import CompileResult, TokenizerRegistry
from ..compiler.cache import prefix_cache_reads, request_tokens
from ..compiler.capabilities import capability_map, get_context_cap_for_model
from ..compiler.providers import render
from .session import StoreSession
from .token_bars import TokenBars

MEM_REF = re.compile(r"\[Mem:(\d+)\]")
FORMAT_LABELS = (("openai", "Copy OpenAI messages"), ("anthropic", "Copy Anthropic request"),
                 ("text", "Copy as text"))
MESSAGES_DELAY_MS = 120
RECOMPILE_DELAY_MS = 60
DEFAULT_BUDGET = 2048
MIN_BUDGET = 64
SLIDER_STEPS = 1000


def region_tokens(result: CompileResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in result.segments:
        if s.kept:
            out[s.region] = out.get(s.region, 0) + s.tokens
    return out


class PromptPreview(QWidget):
    compiled = Signal()

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.base: CompileResult | None = None     # the last full compile
        self.result: CompileResult | None = None   # the same at the current budget
        self.pinned: CompileResult | None = None
        self.hits = []
        self.kinds: dict[str, str] = {}
        self.texts: dict[str, str] = {}
        self.error = ""
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

    # -- construction ----------------------------------------------------------------
    def _build(self) -> None:
        inputs = QGroupBox("Inputs", self)
        form = QFormLayout(inputs)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.user_message = QPlainTextEdit(self)
        self.user_message.setPlaceholderText("What the user says to the agent…")
        self.user_message.setFixedHeight(48)
        form.addRow("User message", self.user_message)
        self.model = QComboBox(self)
        self.model.setEditable(True)
        self.model.addItems(capability_map().model_ids)
        self.model.setCurrentText("openai/gpt-4o")
        self.placement = QComboBox(self)
        self.placement.addItems(["end", "system"])
        row = QHBoxLayout()
        row.addWidget(self.model, 3)
        row.addWidget(QLabel("placement", self))
        row.addWidget(self.placement, 1)
        form.addRow("Model", row)
        # The slider is logarithmic so small budgets get as much travel as large ones.
        self.budget_slider = QSlider(Qt.Orientation.Horizontal, self)
        self.budget_slider.setRange(0, SLIDER_STEPS)
        self.budget_spin = QSpinBox(self)
        self.budget_spin.setSingleStep(64)
        self.budget_cap = 128_000
        self._set_budget_range(self.budget_cap)
        self.budget_spin.setValue(DEFAULT_BUDGET)
        self.budget_slider.setValue(self._slider_for(DEFAULT_BUDGET))
        row = QHBoxLayout()
        row.addWidget(self.budget_slider, 3)
        row.addWidget(self.budget_spin, 1)
        form.addRow("Budget", row)
        self.k = QSpinBox(self)
        self.k.setRange(1, 1000)
        self.k.setValue(20)
        self.scope = QComboBox(self)
        self.scope.setEditable(True)
        self.scope.addItem("global")
        self.trust = QComboBox(self)
        self.trust.addItems(SENSITIVITIES)
        self.trust.setCurrentText("medium")
        row = QHBoxLayout()
        row.addWidget(QLabel("recall", self))
        row.addWidget(self.k)
        row.addWidget(QLabel("scope", self))
        row.addWidget(self.scope, 2)
        row.addWidget(QLabel("trust", self))
        row.addWidget(self.trust, 1)
        form.addRow("Memories", row)
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
        self.history = QTableWidget(0, 2, self)
        self.history.setHorizontalHeaderLabels(["Role", "Content"])
        self.history.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.history.verticalHeader().setVisible(False)
        self.history.setFixedHeight(104)
        hist_buttons = QHBoxLayout()
        for label, slot in (("+ user", lambda: self.add_history("user", "")),
                            ("+ assistant", lambda: self.add_history("assistant", "")),
                            ("Remove", self._remove_history), ("Load…", self._load_history),
                            ("Save…", self._save_history)):
            b = QPushButton(label, self)
            b.clicked.connect(slot)
            hist_buttons.addWidget(b)
        box = QVBoxLayout()
        box.addWidget(self.history)
        box.addLayout(hist_buttons)
        form.addRow("History", box)

        self.bars = TokenBars(self)
        self.summary = QLabel(self)
        self.summary.setObjectName("preview_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.tabs = QTabWidget(self)
        self.messages = QTextBrowser(self)
        self.messages.setOpenLinks(False)
        self.messages.setMouseTracking(True)
        self.tabs.addTab(self.messages, "Prompt")
        self.tabs.addTab(self._build_compare(), "Compare")
        self.tabs.addTab(self._build_citations(), "Citations")
        self.tabs.addTab(self._build_cache(), "Cache")
        self.copy_buttons: dict[str, QPushButton] = {}
        exports = QHBoxLayout()
        for fmt, label in FORMAT_LABELS:
            b = QPushButton(label, self)
            b.clicked.connect(lambda _=False, f=fmt: self.copy(f))
            exports.addWidget(b)
            self.copy_buttons[fmt] = b
        self.save_button = QPushButton("Save…", self)
        self.save_button.clicked.connect(self._save_dialog)
        exports.addWidget(self.save_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(inputs)
        layout.addWidget(self.bars)
        layout.addWidget(self.summary)
        layout.addLayout(exports)
        layout.addWidget(self.tabs, 1)

        for w in (self.user_message, self.rules):
            w.textChanged.connect(self.schedule)
        for combo in (self.model, self.placement, self.scope, self.trust):
            combo.currentTextChanged.connect(self.schedule)
        self.k.valueChanged.connect(self.schedule)
        self.history.itemChanged.connect(lambda _item: self.schedule())
        self.price.valueChanged.connect(lambda _v: self._show_summary())
        self.budget_slider.valueChanged.connect(self._budget_from_slider)
        self.budget_spin.valueChanged.connect(self._budget_from_spin)
        self.bars.memory_clicked.connect(self.session.select)
        self.messages.anchorClicked.connect(lambda url: self.session.select(url.toString().split(":", 1)[1]))
        self.messages.highlighted.connect(self._hover_citation)

    def _build_compare(self) -> QWidget:
        w = QWidget(self)
        layout = QVBoxLayout(w)
        row = QHBoxLayout()
        self.pin_button = QPushButton("Pin this compile", w)
        self.pin_button.clicked.connect(self.pin)
        row.addWidget(self.pin_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.compare_text = QTextBrowser(w)
        self.compare_text.setOpenLinks(False)
        self.compare_text.anchorClicked.connect(lambda url: self.session.select(url.toString().split(":", 1)[1]))
        self.compare_text.setPlainText("Pin a compile, then change something (a tick, an edit, the budget, the "
                                       "model) to see what entered or left the prompt.")
        layout.addWidget(self.compare_text)
        return w

    def _build_citations(self) -> QWidget:
        w = QWidget(self)
        layout = QVBoxLayout(w)
        self.answer = QPlainTextEdit(w)
        self.answer.setPlaceholderText("Paste a model's answer here: every [Mem:N] is resolved to its memory.")
        self.answer.setFixedHeight(70)
        self.answer.textChanged.connect(self.resolve_citations)
        self.citations = QListWidget(w)
        self.citations.itemClicked.connect(self._citation_clicked)
        layout.addWidget(self.answer)
        layout.addWidget(self.citations)
        return w

    def _build_cache(self) -> QWidget:
        w = QWidget(self)
        layout = QVBoxLayout(w)
        row = QHBoxLayout()
        self.simulate_button = QPushButton("Simulate the conversation", w)
        self.simulate_button.setToolTip("Compile each user turn of the history plus the current message and "
                                        "count what a provider could read from its prefix cache")
        self.simulate_button.clicked.connect(self.simulate_cache)
        row.addWidget(self.simulate_button)
        self.cache_total = QLabel(w)
        row.addWidget(self.cache_total, 1)
        layout.addLayout(row)
        self.cache_table = QTableWidget(0, 4, w)
        self.cache_table.setHorizontalHeaderLabels(["Turn", "Request tokens", "Read from cache", "Share"])
        self.cache_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.cache_table.verticalHeader().setVisible(False)
        self.cache_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        layout.addWidget(self.cache_table)
        return w

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
        self.pinned = None
        self.schedule()

    def _set_budget_range(self, cap: int) -> None:
        self.budget_cap = cap
        self.budget_spin.blockSignals(True)
        self.budget_spin.setRange(MIN_BUDGET, cap)
        self.budget_spin.blockSignals(False)
        self.budget_slider.blockSignals(True)
        self.budget_slider.setValue(self._slider_for(self.budget_spin.value()))
        self.budget_slider.blockSignals(False)

    def budget_for(self, position: int) -> int:
        """Slider position → tokens, on a logarithmic scale from 64 to the model's window."""
        ratio = self.budget_cap / MIN_BUDGET
        return int(round(MIN_BUDGET * ratio ** (position / SLIDER_STEPS)))

    def _slider_for(self, tokens: int) -> int:
        import math

        ratio = self.budget_cap / MIN_BUDGET
        return int(round(SLIDER_STEPS * math.log(max(tokens, MIN_BUDGET) / MIN_BUDGET) / math.log(ratio)))

    def add_history(self, role: str, content: str) -> None:
        self.history.blockSignals(True)
        row = self.history.rowCount()
        self.history.insertRow(row)
        self.history.setItem(row, 0, QTableWidgetItem(role))
        self.history.setItem(row, 1, QTableWidgetItem(content))
        self.history.blockSignals(False)
        self.schedule()

    def set_history(self, messages: list[dict]) -> None:
        self.history.blockSignals(True)
        self.history.setRowCount(0)
        self.history.blockSignals(False)
        for m in messages:
            content = m.get("content")
            self.add_history(str(m.get("role", "user")), content if isinstance(content, str) else json.dumps(content))

    def history_messages(self) -> list[dict]:
        out = []
        for row in range(self.history.rowCount()):
            role = (self.history.item(row, 0).text() if self.history.item(row, 0) else "user").strip()
            content = self.history.item(row, 1).text() if self.history.item(row, 1) else ""
            out.append({"role": role, "content": content})
        return out

    def _remove_history(self) -> None:
        rows = sorted({i.row() for i in self.history.selectedIndexes()}, reverse=True)
        for row in rows or [self.history.rowCount() - 1]:
            if row >= 0:
                self.history.removeRow(row)
        self.schedule()

    def _load_history(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load history", "", "JSON (*.json)")
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
                raise ValueError("the file must hold a JSON list of {role, content} messages")
        except (OSError, ValueError) as exc:
            self._set_error(f"Cannot load history: {exc}")
            return
        self.set_history(data)

    def _save_history(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save history", "history.json", "JSON (*.json)")
        if path:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(self.history_messages(), fh, ensure_ascii=False, indent=2)

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
            user_message=self.user_message.toPlainText(), history=self.history_messages(),
            model_id=self.model.currentText().strip() or "openai/gpt-4o", max_tokens=self.budget_spin.value(),
            placement=self.placement.currentText(), rules=self.rules.toPlainText(), k=self.k.value(),
            scope=self.scope.currentText().strip() or "global", trust=self.trust.currentText())

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
            self.base = self.result = None
            self.hits = []
            self.bars.set_result(None)
            self.summary.setText("Type a user message to see the prompt the agent would send.")
            self.messages.clear()
            return
        try:
            self.hits, items = recall_for(store, request)
            self.base = compile_items(request, items)
        except (StoreError, ValueError, TypeError) as exc:
            self._set_error(str(exc))
            return
        self.error = ""
        self.kinds = {h.id: h.kind for h in self.hits}
        self.texts = {h.id: h.text or "" for h in self.hits}
        self.result = self.base
        self._refresh(messages_now=True)

    def _budget_from_slider(self, position: int) -> None:
        tokens = self.budget_for(position)
        self.budget_spin.blockSignals(True)
        self.budget_spin.setValue(tokens)
        self.budget_spin.blockSignals(False)
        self.set_budget(tokens)

    def _budget_from_spin(self, value: int) -> None:
        self.budget_slider.blockSignals(True)
        self.budget_slider.setValue(self._slider_for(value))
        self.budget_slider.blockSignals(False)
        self.set_budget(value)

    def set_budget(self, tokens: int) -> None:
        """Re-select the last compile at another budget: no recall, no tokenizing."""
        if self.base is None:
            return
        self.result = self.base.rebudget(tokens)
        self._refresh(messages_now=False)

    def _refresh(self, messages_now: bool) -> None:
        self.bars.set_result(self.result, self.kinds)
        self._show_summary()
        self._show_compare()
        self.resolve_citations()
        if messages_now:
            self._show_messages()
        else:
            self._messages_timer.start()
        self.compiled.emit()

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
                   "model caches prefixes ≥ 1,024 tokens" if v["caches"] else "model does not cache")
        approx = "" if v["exact"] else " (approximate: " + v["tokenizer"] + ")"
        over = " · <b style='color:#D55E00'>over budget: rules, history and turn alone do not fit</b>" \
            if self.result.metadata["budget_exceeded"] else ""
        self.summary.setText(
            f"<b>{v['tokens']:,} / {v['budget']:,} tokens</b>{approx} · memories kept {v['kept']} of "
            f"{v['offered']} · {v['trimmed_tokens']:,} tokens trimmed · {v['history_dropped']} history messages "
            f"dropped · cacheable prefix {v['prefix']:,} tokens ({caching}) · est. ${v['cost']:.5f} for "
            f"{v['billed']:,} billed tokens{over}")

    def _show_messages(self) -> None:
        if self.result is None:
            return
        ref_map = self.result.ref_map
        parts = []
        for m in self.result.messages:
            content = m.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=1)

            def link(match: re.Match) -> str:
                n = int(match.group(1))
                rid = ref_map.get(n)
                if rid is None:
                    return f"<span style='color:#D55E00'>{match.group(0)}</span>"
                return (f"<a href='mem:{html.escape(rid)}' style='background-color:#f3ec8f; color:#222222; "
                        f"text-decoration:none'><b>{match.group(0)}</b></a>")

            body = MEM_REF.sub(link, html.escape(text)).replace("\n", "<br>")
            parts.append(f"<p><b style='color:#0072B2'>{html.escape(m['role'])}</b><br>{body}</p>")
        self.messages.setHtml("".join(parts))

    def _hover_citation(self, url) -> None:
        target = url.toString() if hasattr(url, "toString") else str(url)
        if target.startswith("mem:"):
            rid = target.split(":", 1)[1]
            self.messages.setToolTip(f"{rid}: {self.texts.get(rid, '')}")
        else:
            self.messages.setToolTip("")

    # -- compare ---------------------------------------------------------------------
    def pin(self) -> None:
        self.pinned = self.result
        self._show_compare()

    def compare(self) -> dict:
        """Memories that entered or left since the pinned compile, and token deltas per region."""
        if self.pinned is None or self.result is None:
            return {}
        before = set(self.pinned.ref_map.values())
        after = set(self.result.ref_map.values())
        rb, ra = region_tokens(self.pinned), region_tokens(self.result)
        deltas = {r: ra.get(r, 0) - rb.get(r, 0) for r in sorted(set(rb) | set(ra))}
        return {"entered": sorted(after - before), "left": sorted(before - after), "deltas": deltas,
                "tokens": self.result.metadata["token_count"] - self.pinned.metadata["token_count"]}

    def _show_compare(self) -> None:
        diff = self.compare()
        if not diff:
            return
        texts = dict(self.texts)

        def items(ids):
            if not ids:
                return "<i>none</i>"
            return "<br>".join(f"<a href='mem:{html.escape(i)}'>{html.escape(i)}</a> "
                               f"{html.escape(texts.get(i, '')[:90])}" for i in ids)

        deltas = " · ".join(f"{r} {d:+,}" for r, d in diff["deltas"].items() if d) or "no change"
        self.compare_text.setHtml(
            f"<p><b>Since the pinned compile:</b> {diff['tokens']:+,} tokens ({deltas})</p>"
            f"<p><b style='color:#009E73'>Entered ({len(diff['entered'])})</b><br>{items(diff['entered'])}</p>"
            f"<p><b style='color:#D55E00'>Left ({len(diff['left'])})</b><br>{items(diff['left'])}</p>")

    # -- citations -------------------------------------------------------------------
    def resolve_citations(self) -> list[tuple[int, str | None, str]]:
        """Each [Mem:N] in the pasted answer: (N, record id or None, status)."""
        self.citations.clear()
        found: list[tuple[int, str | None, str]] = []
        if self.result is None:
            return found
        trimmed = {s.ref: s.record_id for s in self.result.segments if s.ref is not None and not s.kept}
        for n in dict.fromkeys(int(x) for x in MEM_REF.findall(self.answer.toPlainText())):
            if n in self.result.ref_map:
                rid, status = self.result.ref_map[n], "ok"
                label = f"[Mem:{n}] → {rid}: {self.texts.get(rid, '')[:100]}"
            elif n in trimmed:
                rid, status = trimmed[n], "trimmed"
                label = f"[Mem:{n}] → {rid} was trimmed: the model never saw it"
            else:
                rid, status = None, "unknown"
                label = f"[Mem:{n}] resolves to nothing: the prompt had no such memory"
            item = QListWidgetItem(("⚠ " if status != "ok" else "") + label)
            item.setData(Qt.ItemDataRole.UserRole, rid)
            if status != "ok":
                item.setForeground(QColor("#D55E00"))  # vermillion reads on light and dark
            self.citations.addItem(item)
            found.append((n, rid, status))
        return found

    def _citation_clicked(self, item: QListWidgetItem) -> None:
        rid = item.data(Qt.ItemDataRole.UserRole)
        if rid:
            self.session.select(rid)

    # -- cache -----------------------------------------------------------------------
    def simulate_cache(self) -> list[tuple[int, int, int]]:
        """Compile every user turn of the conversation and count the provider's cache reads."""
        store = self.session.store
        request = self.request()
        if store is None or self.result is None:
            return []
        history = request.history
        turns = [(i, m["content"]) for i, m in enumerate(history) if m["role"] == "user"]
        turns.append((len(history), request.user_message))
        adapter = TokenizerRegistry.get().adapter(request.model_id)
        streams = []
        for index, message in turns:
            turn = PreviewRequest(**{**request.__dict__, "user_message": message, "history": history[:index]})
            _hits, items = recall_for(store, turn)
            streams.append(request_tokens(compile_items(turn, items).messages, adapter))
        reads = prefix_cache_reads(streams)
        rows = [(i + 1, len(s), r) for i, (s, r) in enumerate(zip(streams, reads))]
        self.cache_table.setRowCount(len(rows))
        for r, (turn, total, read) in enumerate(rows):
            for c, value in enumerate((turn, f"{total:,}", f"{read:,}", f"{100 * read / max(total, 1):.0f}%")):
                self.cache_table.setItem(r, c, QTableWidgetItem(str(value)))
        sent = sum(t for _, t, _ in rows)
        read = sum(x for _, _, x in rows)
        self.cache_total.setText(f"{read:,} of {sent:,} input tokens ({100 * read / max(sent, 1):.0f}%) "
                                 "could be read from the provider's prefix cache")
        return rows

    # -- export ----------------------------------------------------------------------
    def export_text(self, fmt: str) -> str:
        return render(self.result, fmt, self.request().model_id)

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
        self.summary.setToolTip(f"Copied as {fmt}")

    def _save_dialog(self) -> None:
        if self.result is None:
            return
        path, chosen = QFileDialog.getSaveFileName(
            self, "Save the compiled prompt", "prompt.json",
            "OpenAI messages (*.json);;Anthropic request (*.json);;Plain text (*.txt)")
        if path:
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
