"""The radial memory map (pyqtgraph): habit at the centre, then fading, then edge.

Each memory is a dot (colour by kind, size by importance, opacity by strength) at a
stable angle; entities are diamonds on an outer orbit joined to their memories by thin
lines. The map reads the store; with the time-travel slider it reads the store's
projection of a future day instead, which writes nothing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGraphicsEllipseItem,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from store import KINDS

from ..map_layout import ENTITY_ORBIT, group_key, mean_angle, place, sector_centres
from .session import StoreSession
from .theme import ARRIVAL_COLOUR, CALL_COLOUR, ENTITY_COLOUR, HIGHLIGHT, KIND_COLOURS, map_colours

LAYER_TOGGLES = ("habit", "fading", "edge", "archived")
ANIMATION_MS = 450
ANIMATION_STEPS = 12
ENTITY_CROWDING = 0.16  # radians
LINES_MAX = 2500
HALO_SECONDS = 8.0
HALO_FRAME_MS = 250


@dataclass
class Dot:
    id: str
    text: str
    kind: str
    layer: str
    strength: float
    importance: float
    recalls: int
    scope: str
    entities: list[str]
    group: str
    x: float = 0.0
    y: float = 0.0


class RadialMap(QWidget):
    """The map with its controls: legend (kind toggles), layer toggles, search, scope, rotation."""

    hovered = Signal(object)  # memory id or None

    def __init__(self, session: StoreSession, dark: bool = False, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.colours = map_colours(dark)
        self.dots: list[Dot] = []
        self.dot_index: dict[str, int] = {}
        self.visible_ids: list[str] = []
        self.hidden_kinds: set[str] = set()
        self.visible_layers = {"habit", "fading", "edge"}
        self.scope_filter: str | None = None
        self.search_text = ""
        self.rotation = 0.0
        self.entity_names: list[str] = []
        self.entity_members: dict[str, list[str]] = {}
        self.hover_entity: str | None = None
        self._positions: dict[str, tuple[float, float]] = {}
        self._anim_from: dict[str, tuple[float, float]] = {}
        self._anim_step = 0
        self._anim_timer = QTimer(self)
        self._anim_timer.setInterval(ANIMATION_MS // ANIMATION_STEPS)
        self._anim_timer.timeout.connect(self._animate)
        self._build()
        self._build_call_marks()
        session.changed.connect(self._on_changed)
        session.selection_changed.connect(lambda _id: self._draw_selection())
        session.preview_changed.connect(lambda _d: self.reload(animate=False))

    # -- construction ----------------------------------------------------------------
    def _build(self) -> None:
        pg.setConfigOptions(antialias=True)
        self.plot = pg.PlotWidget(background=self.colours["background"])
        self.plot.setAspectLocked(True)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(True, True)
        vb = self.plot.getViewBox()
        vb.setRange(xRange=(-5.4, 5.4), yRange=(-5.4, 5.4), padding=0)
        ring_pen = QPen(QColor(self.colours["ring"]))
        ring_pen.setCosmetic(True)
        ring_pen.setWidthF(1.2)
        for name, radius in (("habit", 1.0), ("fading", 2.0), ("edge", 3.0)):
            ring = QGraphicsEllipseItem(-radius, -radius, 2 * radius, 2 * radius)
            ring.setPen(ring_pen)
            ring.setZValue(-10)
            self.plot.addItem(ring)
            label = pg.TextItem(name, color=self.colours["label"], anchor=(0.5, 1.0))
            label.setPos(0, radius - 0.02 if name != "habit" else 0.98)
            self.plot.addItem(label)
        self.link_curve = pg.PlotCurveItem(pen=pg.mkPen(self.colours["line"], width=1), connect="pairs")
        self.link_curve.setZValue(-5)
        self.plot.addItem(self.link_curve)
        self.highlight_curve = pg.PlotCurveItem(pen=pg.mkPen(ENTITY_COLOUR, width=2), connect="pairs")
        self.highlight_curve.setZValue(-4)
        self.plot.addItem(self.highlight_curve)
        self._match_pen = pg.mkPen(HIGHLIGHT, width=2)
        self._plain_pen = pg.mkPen(None)
        self._entity_brush = pg.mkBrush(ENTITY_COLOUR)
        self._entity_pen = pg.mkPen(self.colours["background"])
        self.scatter = pg.ScatterPlotItem(pxMode=True, hoverable=True)
        self.scatter.setZValue(5)
        self.plot.addItem(self.scatter)
        self.entity_scatter = pg.ScatterPlotItem(pxMode=True, hoverable=True, symbol="d")
        self.entity_scatter.setZValue(6)
        self.plot.addItem(self.entity_scatter)
        self.entity_labels: dict[str, pg.TextItem] = {}
        self.selection_ring = pg.ScatterPlotItem(pxMode=True, symbol="o", size=26,
                                                 pen=pg.mkPen(HIGHLIGHT, width=3), brush=pg.mkBrush(0, 0, 0, 0))
        self.selection_ring.setZValue(7)
        self.plot.addItem(self.selection_ring)
        self.scatter.sigClicked.connect(self._clicked)
        self.scatter.sigHovered.connect(self._hovered)
        self.entity_scatter.sigHovered.connect(self._entity_hovered)

        # controls
        self.legend_buttons: dict[str, QPushButton] = {}
        legend = QHBoxLayout()
        legend.setSpacing(4)
        for kind in KINDS:
            b = QPushButton(f"● {kind}", self)
            b.setCheckable(True)
            b.setChecked(True)
            b.setObjectName(f"legend_{kind}")
            b.setToolTip(f"Show or hide {kind} memories")
            self._style_legend(b, kind, True)
            b.toggled.connect(lambda on, k=kind: self.set_kind_visible(k, on))
            legend.addWidget(b)
            self.legend_buttons[kind] = b
        diamond = QLabel(f"<span style='color:{ENTITY_COLOUR}'>◆</span> entity", self)
        legend.addWidget(diamond)
        legend.addStretch(1)
        legend.addWidget(QLabel("Rotate", self))
        self.rotate_slider = QSlider(Qt.Orientation.Horizontal, self)
        self.rotate_slider.setRange(0, 359)
        self.rotate_slider.setFixedWidth(90)
        self.rotate_slider.valueChanged.connect(lambda v: self.set_rotation(math.radians(v)))
        legend.addWidget(self.rotate_slider)
        self.layer_boxes: dict[str, QCheckBox] = {}
        layers = QHBoxLayout()
        layers.setSpacing(8)
        layers.addWidget(QLabel("Layers:", self))
        for layer in LAYER_TOGGLES:
            box = QCheckBox(layer, self)
            box.setChecked(layer in self.visible_layers)
            box.toggled.connect(lambda on, name=layer: self.set_layer_visible(name, on))
            layers.addWidget(box)
            self.layer_boxes[layer] = box
        layers.addSpacing(12)
        self.search_box = QLineEdit(self)
        self.search_box.setPlaceholderText("Search the map…")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.setMinimumWidth(130)
        self.search_box.textChanged.connect(self.set_search)
        layers.addWidget(self.search_box, 2)
        self.scope_box = QComboBox(self)
        self.scope_box.setToolTip("Show one scope (and global) or all")
        self.scope_box.currentIndexChanged.connect(self._scope_changed)
        layers.addWidget(self.scope_box, 1)
        self.caption = QLabel(self)
        self.caption.setObjectName("map_caption")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addLayout(legend)
        layout.addLayout(layers)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.caption)

    # -- data ------------------------------------------------------------------------
    def _on_changed(self, _ids) -> None:
        self.reload(animate=True)

    def reload(self, animate: bool = False) -> None:
        """Read the store (or its projection of the previewed day) and redraw."""
        store = self.session.store
        if store is None:
            self.dots = []
            self.redraw()
            return
        memories = self.session.memories()
        projection = store.project(self.session.preview_now()) if self.session.preview_days else None
        dots = []
        for m in memories:
            strength, layer = projection[m.id] if projection else (m.strength, m.layer)
            dots.append(Dot(m.id, m.text, m.kind, layer, strength, m.importance, m.recall_count, m.scope,
                            m.entities, group_key(m.entities, m.topic, m.kind)))
        old = dict(self._positions)
        self.dots = dots
        self.dot_index = {d.id: i for i, d in enumerate(dots)}
        self.entity_members = {}
        for d in dots:
            for name in d.entities:
                self.entity_members.setdefault(name, []).append(d.id)
        scopes = sorted({d.scope for d in dots})
        current = self.scope_box.currentData()
        self.scope_box.blockSignals(True)
        self.scope_box.clear()
        self.scope_box.addItem("all scopes", None)
        for scope in scopes:
            self.scope_box.addItem(scope, scope)
        idx = self.scope_box.findData(current)
        self.scope_box.setCurrentIndex(max(idx, 0))
        self.scope_box.blockSignals(False)
        self._layout_positions()
        if animate and old:
            moved = {d.id: old[d.id] for d in dots if d.id in old and old[d.id] != (d.x, d.y)}
            if moved:
                self._anim_from = moved
                self._anim_step = 0
                self._anim_timer.start()
        self.redraw()

    def _layout_positions(self) -> None:
        centres = sector_centres(d.group for d in self.dots)
        for d in self.dots:
            p = place(d.id, d.group, d.layer, d.strength, self.rotation, centres)
            d.x, d.y = p.x, p.y
        self._positions = {d.id: (d.x, d.y) for d in self.dots}

    def _visible(self, d: Dot) -> bool:
        if d.kind in self.hidden_kinds or d.layer not in self.visible_layers:
            return False
        return self.scope_filter is None or d.scope in (self.scope_filter, "global")

    def _matches(self, d: Dot) -> bool:
        q = self.search_text
        return q in d.text.lower() or any(q in e.lower() for e in d.entities) or q in d.kind

    # -- drawing ---------------------------------------------------------------------
    def redraw(self, positions: dict[str, tuple[float, float]] | None = None) -> None:
        visible = [d for d in self.dots if self._visible(d)]
        self.visible_ids = [d.id for d in visible]
        pos = positions or self._positions
        n = len(visible)
        xs = np.fromiter((pos[d.id][0] for d in visible), dtype=float, count=n)
        ys = np.fromiter((pos[d.id][1] for d in visible), dtype=float, count=n)
        searching = bool(self.search_text)
        brushes, sizes, pens = [], [], []
        self.search_matches = set()
        brush_cache: dict[tuple[str, int], QBrush] = {}
        match_pen = self._match_pen
        plain_pen = self._plain_pen
        for d in visible:
            # Quantised so pyqtgraph renders a few hundred symbols, not one per dot.
            alpha = 60 + 27 * round(7 * max(0.0, min(1.0, d.strength)))
            size = 6.0 + 2.0 * round(6 * d.importance)
            pen = plain_pen
            if searching:
                if self._matches(d):
                    self.search_matches.add(d.id)
                    alpha, size, pen = 255, size + 4, match_pen
                else:
                    alpha = 28
            key = (d.kind, alpha)
            brush = brush_cache.get(key)
            if brush is None:
                colour = QColor(KIND_COLOURS.get(d.kind, "#888888"))
                colour.setAlpha(alpha)
                brush = brush_cache[key] = QBrush(colour)
            brushes.append(brush)
            sizes.append(size)
            pens.append(pen)
        self.scatter.setData(x=xs, y=ys, size=np.array(sizes), brush=brushes, pen=pens, data=self.visible_ids,
                             symbol="o")
        self._draw_entities(visible, pos)
        self._draw_selection(pos)
        self._draw_call_marks(pos)
        self._update_caption(visible)

    def _draw_entities(self, visible: list[Dot], pos) -> None:
        members: dict[str, list[Dot]] = {}
        for d in visible:
            for name in d.entities:
                members.setdefault(name, []).append(d)
        names, ex, ey, lx, ly = [], [], [], [], []
        self.entity_pos: dict[str, tuple[float, float]] = {}
        angles = {name: mean_angle(math.atan2(pos[d.id][1], pos[d.id][0]) for d in dots)
                  for name, dots in members.items()}
        # Neighbours on the orbit step outwards in turn so their labels do not pile up.
        orbit: dict[str, float] = {}
        previous, step = None, 0
        for name in sorted(angles, key=lambda n: (angles[n], n)):
            step = step + 1 if previous is not None and angles[name] - previous < ENTITY_CROWDING else 0
            orbit[name] = ENTITY_ORBIT + (step % 3) * 0.42
            previous = angles[name]
        for name, dots in sorted(members.items()):
            angle = angles[name]
            x, y = orbit[name] * math.cos(angle), orbit[name] * math.sin(angle)
            names.append(name)
            ex.append(x)
            ey.append(y)
            self.entity_pos[name] = (x, y)
            for d in dots:
                lx += [x, pos[d.id][0]]
                ly += [y, pos[d.id][1]]
        self.entity_names = names
        sizes = [9 + min(len(members[n]), 12) for n in names]
        self.entity_scatter.setData(x=ex, y=ey, size=sizes, data=names, symbol="d",
                                    brush=self._entity_brush, pen=self._entity_pen)
        # Thousands of antialiased lines cost most of a frame: above LINES_MAX dots only
        # the hovered entity's lines are drawn.
        if len(visible) <= LINES_MAX:
            self.link_curve.setData(np.array(lx, dtype=float), np.array(ly, dtype=float))
        else:
            self.link_curve.setData([], [])
        # Labels are kept and moved, not re-created: only while they stay readable.
        show = set(names) if len(names) <= 40 else set()
        for name in list(self.entity_labels):
            if name not in show:
                self.entity_labels[name].hide()
        for name, x, y in zip(names, ex, ey):
            if name not in show:
                continue
            label = self.entity_labels.get(name)
            if label is None:
                label = pg.TextItem(name, color=self.colours["label"], anchor=(0.5, -0.3))
                label.setZValue(8)
                self.plot.addItem(label)
                self.entity_labels[name] = label
            label.setPos(x, y)
            label.show()
        self._draw_entity_highlight(pos)

    def _draw_entity_highlight(self, pos=None) -> None:
        pos = pos or self._positions
        name = self.hover_entity
        if not name or name not in getattr(self, "entity_pos", {}):
            self.highlight_curve.setData([], [])
            return
        x, y = self.entity_pos[name]
        lx, ly = [], []
        visible = set(self.visible_ids)
        for mid in self.entity_members.get(name, []):
            if mid in visible:
                lx += [x, pos[mid][0]]
                ly += [y, pos[mid][1]]
        self.highlight_curve.setData(np.array(lx, dtype=float), np.array(ly, dtype=float))

    def _draw_selection(self, pos=None) -> None:
        pos = pos or self._positions
        mid = self.session.selected_id
        if mid and mid in pos and mid in set(self.visible_ids):
            self.selection_ring.setData([pos[mid][0]], [pos[mid][1]])
        else:
            self.selection_ring.setData([], [])

    def _update_caption(self, visible: list[Dot]) -> None:
        counts = {layer: 0 for layer in LAYER_TOGGLES}
        for d in self.dots:
            counts[d.layer] = counts.get(d.layer, 0) + 1
        text = f"{len(visible)} of {len(self.dots)} memories shown · " + " · ".join(
            f"{k} {v}" for k, v in counts.items())
        if self.session.preview_days:
            text = f"Previewing {self.session.preview_days:g} days ahead (nothing is written) · " + text
        if self.search_text:
            text += f" · {len(self.search_matches)} match “{self.search_text}”"
        self.caption.setText(text)

    def _animate(self) -> None:
        self._anim_step += 1
        t = min(1.0, self._anim_step / ANIMATION_STEPS)
        t = 1 - (1 - t) ** 3  # ease out
        frame = dict(self._positions)
        for mid, (x0, y0) in self._anim_from.items():
            if mid in frame:
                x1, y1 = frame[mid]
                frame[mid] = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)
        self.redraw(frame)
        if t >= 1.0:
            self._anim_timer.stop()
            self._anim_from = {}

    # -- controls --------------------------------------------------------------------
    def set_kind_visible(self, kind: str, visible: bool) -> None:
        if visible:
            self.hidden_kinds.discard(kind)
        else:
            self.hidden_kinds.add(kind)
        button = self.legend_buttons[kind]
        if button.isChecked() != visible:
            button.setChecked(visible)
        self._style_legend(button, kind, visible)
        self.redraw()

    @staticmethod
    def _style_legend(button: QPushButton, kind: str, visible: bool) -> None:
        colour = KIND_COLOURS[kind] if visible else "#8a8f98"
        strike = "none" if visible else "line-through"
        button.setStyleSheet(f"QPushButton {{ color: {colour}; font-weight: 600; padding: 2px 8px; "
                             f"text-decoration: {strike}; }}")

    def set_layer_visible(self, layer: str, visible: bool) -> None:
        if visible:
            self.visible_layers.add(layer)
        else:
            self.visible_layers.discard(layer)
        self.redraw()

    def set_search(self, text: str) -> None:
        self.search_text = text.strip().lower()
        self.redraw()

    def _scope_changed(self, _index: int) -> None:
        self.scope_filter = self.scope_box.currentData()
        self.redraw()

    def set_rotation(self, radians: float) -> None:
        self.rotation = radians
        self._layout_positions()
        self.redraw()

    # -- interaction -----------------------------------------------------------------
    def _clicked(self, _item, points, _ev=None) -> None:
        if len(points):
            self.session.select(points[0].data())

    def tooltip_for(self, memory_id: str) -> str:
        d = self.dots[self.dot_index[memory_id]]
        excerpt = d.text if len(d.text) <= 160 else d.text[:159] + "…"
        entities = ", ".join(d.entities) or "none"
        return (f"{excerpt}\n\n{d.kind} · {d.layer} · strength {d.strength:.2f} · importance {d.importance:.2f}\n"
                f"recalls {d.recalls} · scope {d.scope}\nentities: {entities}")

    def _hovered(self, _item, points, ev=None) -> None:
        if len(points):
            mid = points[0].data()
            self.hovered.emit(mid)
            QToolTip.showText(self._global_pos(ev), self.tooltip_for(mid), self.plot)
        else:
            self.hovered.emit(None)
            QToolTip.hideText()

    def _entity_hovered(self, _item, points, ev=None) -> None:
        name = points[0].data() if len(points) else None
        if name != self.hover_entity:
            self.hover_entity = name
            self._draw_entity_highlight()
        if name:
            n = len(self.entity_members.get(name, []))
            QToolTip.showText(self._global_pos(ev), f"{name}: mentioned in {n} memories", self.plot)

    def _global_pos(self, ev):
        try:
            scene_pos = ev.scenePos()
            view_pos = self.plot.mapFromScene(scene_pos)
            return self.plot.mapToGlobal(view_pos)
        except Exception:
            return self.plot.mapToGlobal(QPointF(10, 10).toPoint())

    def screen_pos_of(self, memory_id: str):
        """Where a memory's dot is drawn, in the plot widget's coordinates (for tests)."""
        x, y = self._positions[memory_id]
        scene = self.plot.getViewBox().mapViewToScene(QPointF(x, y))
        return self.plot.mapFromScene(scene)

    def highlight_entity(self, name: str | None) -> None:
        self.hover_entity = name
        self._draw_entity_highlight()

    # -- agents' calls (the Activity dock) ----------------------------------------------
    def _build_call_marks(self) -> None:
        self.call_ids: list[str] = []          # the memories of the call picked in the Activity dock
        self.arrivals: dict[str, float] = {}   # memory id → when its halo goes (time.monotonic)
        self.call_rings = pg.ScatterPlotItem(pxMode=True, symbol="o", size=22, pen=pg.mkPen(CALL_COLOUR, width=3),
                                             brush=pg.mkBrush(0, 0, 0, 0))
        self.call_rings.setZValue(6.5)
        self.plot.addItem(self.call_rings)
        self.arrival_halos = pg.ScatterPlotItem(pxMode=True, symbol="o", brush=pg.mkBrush(0, 0, 0, 0))
        self.arrival_halos.setZValue(4)
        self.plot.addItem(self.arrival_halos)
        self._halo_timer = QTimer(self)
        self._halo_timer.setInterval(HALO_FRAME_MS)
        self._halo_timer.timeout.connect(self._draw_call_marks)

    def show_call(self, memory_ids: list[str]) -> None:
        """Ring the memories a call returned or wrote (an empty list clears the rings)."""
        self.call_ids = list(memory_ids)
        self._draw_call_marks()

    def mark_arrivals(self, memory_ids: list[str]) -> None:
        """Give memories an agent just wrote a halo that fades within ``HALO_SECONDS``."""
        until = time.monotonic() + HALO_SECONDS
        self.arrivals.update(dict.fromkeys(memory_ids, until))
        self._draw_call_marks()
        self._halo_timer.start()

    def _draw_call_marks(self, pos=None) -> None:
        pos = pos or self._positions
        shown = set(self.visible_ids)
        ringed = [mid for mid in self.call_ids if mid in shown]
        self.call_rings.setData([pos[m][0] for m in ringed], [pos[m][1] for m in ringed])
        now = time.monotonic()
        self.arrivals = {mid: until for mid, until in self.arrivals.items() if until > now}
        if not self.arrivals:
            self._halo_timer.stop()
        haloed = [mid for mid in self.arrivals if mid in shown]
        pens = []
        for mid in haloed:
            colour = QColor(ARRIVAL_COLOUR)
            colour.setAlphaF(max(0.15, min(1.0, (self.arrivals[mid] - now) / HALO_SECONDS)))
            pens.append(pg.mkPen(colour, width=3))
        self.arrival_halos.setData([pos[m][0] for m in haloed], [pos[m][1] for m in haloed], pen=pens,
                                   size=30)


__all__ = ["RadialMap", "Dot"]

