"""The U-shaped token bars: one bar per region of the prompt, in prompt order, each as
long as its tokens on one shared token axis drawn underneath; memories as sub-bars
coloured by kind; the trimmed memories hatched grey on their own row, from zero on the
same axis; the budget line and the cacheable prefix bracketed. A bar's tooltip says what
it is and, for a memory, why recall brought it (its relevance and the weighted parts of
its score). Compact: the extras and directives rows are drawn only when a prompt has them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ...compiler.types import REASON_DUPLICATE, TIER_NAMES, CompileResult, Segment
from ..theme import KIND_COLOURS

ROWS = (("core", "rules"), ("history", "history"), ("memory", "memories"), ("extra", "extras"),
        ("end", "current turn"), ("directives", "directives"))
ALWAYS = ("core", "history", "memory", "end")  # drawn even when empty, so the bars keep their height
REGION_COLOURS = {"core": "#6b7a8f", "history": "#8d99ae", "extra": "#a3a3c2", "end": "#4f6d7a",
                  "directives": "#7d6b91"}
TIER_KIND = {1: "skill", 2: "fact", 3: "event"}
LABEL_W = 84
ROW_H = 15
ROW_GAP = 4
TOP = 24
AXIS_H = 18


def axis_ticks(axis: float, width_px: float, min_gap_px: float = 60) -> list[int]:
    """Round token counts (1, 2 or 5 times a power of ten apart) for an axis of ``axis``
    tokens drawn ``width_px`` wide, at least ``min_gap_px`` apart."""
    if axis <= 0 or width_px <= 0:
        return [0]
    raw = axis * min_gap_px / width_px
    power = 10 ** math.floor(math.log10(max(raw, 1)))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return list(range(0, int(axis) + 1, int(step)))


@dataclass
class BarRect:
    rect: QRectF
    segment: Segment
    row: str


class TokenBars(QWidget):
    memory_clicked = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.result: CompileResult | None = None
        self.kinds: dict[str, str] = {}
        self.whys: dict[str, str] = {}  # record id -> why recall brought it, for the tooltip
        self.rows = [r for r in ROWS if r[0] in ALWAYS]
        self.rects: list[BarRect] = []
        self.ticks: list[int] = []  # token counts marked on the axis at the last paint
        self.budget_label_rect = QRectF()
        self.prefix_label = ""  # the cacheable prefix's label as drawn
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumHeight(self.sizeHint().height())

    def sizeHint(self) -> QSize:
        return QSize(640, TOP + (len(self.rows) + 1) * (ROW_H + ROW_GAP) + AXIS_H + 6)

    def set_result(self, result: CompileResult | None, kinds: dict[str, str] | None = None,
                   whys: dict[str, str] | None = None) -> None:
        """Show ``result``; ``kinds`` maps record ids to store kinds (for the colours),
        ``whys`` to why recall brought each (for the tooltips)."""
        self.result = result
        if kinds is not None:
            self.kinds = kinds
        if whys is not None:
            self.whys = whys
        present = {s.region for s in result.segments if s.kept} if result is not None else set()
        rows = [r for r in ROWS if r[0] in ALWAYS or r[0] in present]
        if rows != self.rows:
            self.rows = rows
            self.setMinimumHeight(self.sizeHint().height())
            self.updateGeometry()
        self._layout()
        self.update()

    # -- geometry --------------------------------------------------------------------
    def _scale(self) -> tuple[float, float]:
        """Pixels per token, and the tokens the axis spans: the budget, the prompt and
        the trimmed memories all fit, so every bar is drawn to the same scale."""
        md = self.result.metadata
        trimmed = sum(s.tokens for s in self.result.segments if not s.kept and s.region in ("memory", "extra"))
        axis = max(md["tokens_budget"], md["token_count"], trimmed, 1) * 1.08
        width = max(self.width() - LABEL_W - 12, 50)
        return width / axis, axis

    def _layout(self) -> None:
        self.rects = []
        if self.result is None:
            return
        per_token, _axis = self._scale()
        x_tokens = 0
        rows = {name: i for i, (name, _) in enumerate(self.rows)}
        trimmed_x = float(LABEL_W)
        trimmed_row = len(self.rows)
        for seg in self.result.segments:
            if seg.kept:
                y = TOP + rows[seg.region] * (ROW_H + ROW_GAP)
                rect = QRectF(LABEL_W + x_tokens * per_token, y, max(seg.tokens * per_token, 1.0), ROW_H)
                x_tokens += seg.tokens
                self.rects.append(BarRect(rect, seg, seg.region))
            elif seg.region in ("memory", "extra"):
                y = TOP + trimmed_row * (ROW_H + ROW_GAP)
                rect = QRectF(trimmed_x, y, max(seg.tokens * per_token, 1.0), ROW_H)
                self.rects.append(BarRect(rect, seg, "trimmed"))
                trimmed_x += seg.tokens * per_token

    def resizeEvent(self, event) -> None:
        self._layout()
        super().resizeEvent(event)

    # -- painting --------------------------------------------------------------------
    def _colour(self, seg: Segment) -> QColor:
        if seg.region == "memory":
            kind = self.kinds.get(seg.record_id or "", TIER_KIND.get(seg.tier or 2, "fact"))
            return QColor(KIND_COLOURS.get(kind, "#888888"))
        return QColor(REGION_COLOURS.get(seg.region, "#888888"))

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        pal = self.palette()
        text_colour = pal.color(pal.ColorRole.WindowText)
        small = QFont(self.font())
        small.setPointSizeF(max(small.pointSizeF() - 1, 7))
        p.setFont(small)
        if self.result is None:
            # the hint alone, in the middle of where the bars will be: beside the first row's
            # label it read as part of that row ("rules Type a user message…")
            p.setPen(pal.color(pal.ColorRole.PlaceholderText))
            height = (len(self.rows) + 1) * (ROW_H + ROW_GAP)
            p.drawText(QRectF(LABEL_W, TOP, max(self.width() - LABEL_W - 8, 50), height),
                       Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
                       "The prompt's token bars appear here when there is a user message.")
            return
        for i, (_name, label) in enumerate((*self.rows, ("trimmed", "trimmed"))):
            y = TOP + i * (ROW_H + ROW_GAP)
            p.setPen(text_colour)
            p.drawText(QRectF(2, y, LABEL_W - 6, ROW_H), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                       label)
        hatch = QBrush(QColor("#9aa0a8"), Qt.BrushStyle.BDiagPattern)
        duplicate_hatch = QBrush(QColor("#9aa0a8"), Qt.BrushStyle.DiagCrossPattern)  # left out, not over budget
        for br in self.rects:
            if br.row == "trimmed":
                p.fillRect(br.rect, QColor(150, 150, 150, 60))
                p.fillRect(br.rect, duplicate_hatch if br.segment.reason == REASON_DUPLICATE else hatch)
                p.setPen(QPen(QColor("#9aa0a8"), 1))
                p.drawRect(br.rect)
            else:
                p.fillRect(br.rect, self._colour(br.segment))
                if br.rect.width() > 3:
                    p.setPen(QPen(pal.color(pal.ColorRole.Base), 1))
                    p.drawLine(br.rect.topRight(), br.rect.bottomRight())
        md = self.result.metadata
        per_token, axis = self._scale()
        bottom = TOP + (len(self.rows) + 1) * (ROW_H + ROW_GAP)
        p.setPen(text_colour)
        p.drawLine(QPointF(LABEL_W, bottom), QPointF(LABEL_W + axis * per_token, bottom))
        self.ticks = axis_ticks(axis, axis * per_token)
        for tokens in self.ticks:
            x = LABEL_W + tokens * per_token
            p.drawLine(QPointF(x, bottom), QPointF(x, bottom + 4))
            p.drawText(QRectF(x - 40, bottom + 4, 80, AXIS_H - 4), Qt.AlignmentFlag.AlignHCenter, f"{tokens:,}")
        p.drawText(QRectF(2, bottom + 4, LABEL_W - 16, AXIS_H - 4), Qt.AlignmentFlag.AlignRight, "tokens")
        budget_x = LABEL_W + md["tokens_budget"] * per_token
        p.setPen(QPen(QColor("#D55E00"), 2, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(budget_x, 4), QPointF(budget_x, bottom))
        p.setPen(QColor("#D55E00"))
        label = f"budget {md['tokens_budget']:,}"
        label_w = p.fontMetrics().horizontalAdvance(label)
        # right of the line when there is room, else left of it: never cut by the edge
        label_x = budget_x + 4 if budget_x + 4 + label_w <= self.width() - 2 else budget_x - 4 - label_w
        self.budget_label_rect = QRectF(label_x, 2, label_w, 14)
        p.drawText(QPointF(label_x, 14), label)
        prefix = md["cacheable_prefix_tokens"]
        if prefix:
            x1 = LABEL_W + prefix * per_token
            colour = QColor("#009E73") if md["prompt_cache_used"] else QColor("#8a8f98")
            p.setPen(QPen(colour, 2))
            y = TOP - 6
            p.drawLine(QPointF(LABEL_W, y), QPointF(x1, y))
            p.drawLine(QPointF(LABEL_W, y), QPointF(LABEL_W, y + 5))
            p.drawLine(QPointF(x1, y), QPointF(x1, y + 5))
            cached = "cached" if md["prompt_cache_used"] else "not cached"
            room = self.width() - LABEL_W - 8
            if self.budget_label_rect.left() > LABEL_W:  # stop short of the budget's label
                room = min(room, self.budget_label_rect.left() - LABEL_W - 12)
            # the longest wording that fits, then the shortest cut: "(not c…" said nothing
            wordings = [f"cacheable prefix {prefix:,} tok ({cached})", f"prefix {prefix:,} tok ({cached})",
                        f"prefix {prefix:,} tok"]
            fm = p.fontMetrics()
            text = next((w for w in wordings if fm.horizontalAdvance(w) <= room), wordings[-1])
            self.prefix_label = fm.elidedText(text, Qt.TextElideMode.ElideRight, int(max(room, 0)))
            p.drawText(QPointF(LABEL_W + 4, y - 4), self.prefix_label)
        p.end()

    # -- interaction -----------------------------------------------------------------
    def rect_at(self, pos: QPointF) -> BarRect | None:
        for br in self.rects:
            if br.rect.contains(pos):
                return br
        return None

    def describe(self, br: BarRect) -> str:
        seg = br.segment
        text = seg.text.strip()
        excerpt = text if len(text) <= 220 else text[:219] + "…"
        kind = self.kinds.get(seg.record_id or "")
        tier = f" [{TIER_NAMES[seg.tier]} tier]" if seg.tier else ""
        tier = f" · {kind}{tier}" if kind else f" ·{tier}" if tier else ""
        state = "kept" if seg.kept else "not sent" if seg.reason == REASON_DUPLICATE else "trimmed"
        why = f" ({seg.why})" if seg.reason else ""
        ident = f"\n{seg.record_id}" + (f" as [Mem:{seg.ref}]" if seg.ref else "") if seg.record_id else ""
        recalled = self.whys.get(seg.record_id or "")
        recalled = f"\n{recalled}" if recalled else ""
        return f"{seg.region}{tier} · {seg.tokens} tokens · {state}{why}{ident}{recalled}\n\n{excerpt}"

    def mouseMoveEvent(self, event) -> None:
        br = self.rect_at(event.position())
        if br is None:
            QToolTip.hideText()
        else:
            QToolTip.showText(event.globalPosition().toPoint(), self.describe(br), self)
        super().mouseMoveEvent(event)

    def mousePressEvent(self, event) -> None:
        br = self.rect_at(event.position())
        if br is not None and br.segment.record_id:
            self.memory_clicked.emit(br.segment.record_id)
        super().mousePressEvent(event)
