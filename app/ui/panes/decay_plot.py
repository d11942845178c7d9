"""The decay plot: the selected memory's strength from creation to the previewed future,
with the edge and habit thresholds, its recalls and a marker for now."""

from __future__ import annotations

import pyqtgraph as pg
from mnemoscope.store import NotFound
from mnemoscope.store.forgetting.decay import DAY, strength_curve
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ..session import StoreSession
from ..theme import HIGHLIGHT, KIND_COLOURS, map_colours
from ..widgets import ElidedLabel


class DecayPlot(QWidget):
    def __init__(self, session: StoreSession, dark: bool = False, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        # elided, not wrapped or widening: a long memory's text made the dock, and the
        # Activity dock beside it, change width with each memory picked
        self.title = ElidedLabel("Select a memory to see how it fades.", self)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("bottom", "days from now")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.plot.setLabel("left", "strength")
        self.plot.setYRange(0, 1.12, padding=0)
        # three ticks are readable however short the plot is; 100 px keep its lines apart
        self.plot.getAxis("left").setTicks([[(0.0, "0"), (0.5, "0.5"), (1.0, "1")]])
        self.plot.setMinimumHeight(100)
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.curve = self.plot.plot([], [], pen=pg.mkPen("#0072B2", width=2))
        self.recalls = pg.ScatterPlotItem(symbol="t1", size=11, brush=pg.mkBrush(HIGHLIGHT), pen=pg.mkPen("#555"))
        self.plot.addItem(self.recalls)
        dash = pg.QtCore.Qt.PenStyle.DashLine
        # "edge" further along its line than "habit": in a short plot the two lines are close
        self.edge_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#D55E00", style=dash),
                                         label="edge", labelOpts={"position": 0.16, "color": "#D55E00"})
        self.habit_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#009E73", style=dash),
                                          label="habit", labelOpts={"position": 0.02, "color": "#009E73",
                                                                     "anchors": [(0, 1), (0, 1)]})
        # Labels right of their lines and inside the plot however short it is: "now" standing
        # on the bottom (a fresh memory's curve runs along the top), "preview" hanging from the
        # top. (An anchor is the text's point put on the line: (0, 1) its bottom-left corner.)
        self.now_line = pg.InfiniteLine(angle=90, label="now",
                                        labelOpts={"position": 0.0, "anchors": [(0, 1), (0, 1)]})
        self.preview_line = pg.InfiniteLine(angle=90, pen=pg.mkPen("#CC79A7", width=1.5, style=dash),
                                            label="preview", labelOpts={"position": 1.0, "color": "#CC79A7",
                                                                        "anchors": [(0, 0), (0, 0)]})
        for item in (self.edge_line, self.habit_line, self.now_line, self.preview_line):
            self.plot.addItem(item)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        session.selection_changed.connect(lambda _id: self.refresh())
        session.changed.connect(lambda _ids: self.refresh())
        session.preview_changed.connect(lambda _d: self.refresh())
        self.points: list[tuple[float, float]] = []
        self.set_dark(dark)
        self.refresh()

    def _place_preview_label(self) -> None:
        """"preview" right of its line, or left of it where the plot ends too soon (a narrow
        dock, a day far along the axis)."""
        label = self.preview_line.label
        (x0, x1), _ = self.plot.getViewBox().viewRange()
        width = self.plot.getViewBox().sceneBoundingRect().width() or 1.0
        room = (x1 - self.session.preview_days) / max(x1 - x0, 1e-9) * width
        label.anchors = [(1, 0), (1, 0)] if room < label.boundingRect().width() + 4 else [(0, 0), (0, 0)]
        label.updatePosition()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._place_preview_label()

    def set_dark(self, dark: bool) -> None:
        colours = map_colours(dark)
        self.plot.setBackground(colours["background"])
        self.now_line.setPen(pg.mkPen(colours["label"], width=1.5))
        self.now_line.label.setColor(colours["label"])

    def refresh(self) -> None:
        store = self.session.store
        mid = self.session.selected_id
        cfg = store.config.decay if store else None
        if cfg:
            self.edge_line.setValue(cfg.edge_below)
            self.habit_line.setValue(cfg.habit_min_strength)
        if store is None or mid is None:
            self.curve.setData([], [])
            self.recalls.setData([], [])
            self.points = []
            self.title.setText("Select a memory to see how it fades.")
            self.preview_line.setVisible(False)
            self.plot.setXRange(-30, 90, padding=0)
            return
        try:
            m = store.get(mid)
        except NotFound:
            self.session.select(None)
            return
        now = store.now()
        horizon = max(now + max(self.session.preview_days, 90) * DAY, now + 30 * DAY)
        row = {"kind": m.kind, "recall_count": m.recall_count, "half_life_days": m.half_life_days,
               "pinned": m.pinned, "base": m.base, "ref_time": m.ref_time}
        # Before the last reinforcement the curve restarts at each recall; we draw the
        # current curve from the reference time on, and mark the recalls.
        self.points = strength_curve(row, m.ref_time, horizon, cfg)
        xs = [(t - now) / DAY for t, _ in self.points]
        ys = [s for _, s in self.points]
        self.curve.setData(xs, ys, pen=pg.mkPen(KIND_COLOURS.get(m.kind, "#0072B2"), width=2))
        events = store.recall_events(m.id)
        self.recalls.setData([(t - now) / DAY for t in events], [1.0] * len(events))
        self.now_line.setValue(0)
        self.preview_line.setValue(self.session.preview_days)
        self.preview_line.setVisible(bool(self.session.preview_days))
        first = min([(m.created_at - now) / DAY] + [x for x in xs[:1]])
        self.plot.setXRange(first, xs[-1], padding=0.02)
        self._place_preview_label()
        self.title.setText(f"{m.kind} · {m.text}")
