"""The neighbourhood of the selected memory, as a small graph (Obsidian's local graph is
the model): the memory in the middle, the memories that share an entity with it or
reference it around it to a depth of 1-3, and the entities that join them, each link
drawn. A click on a memory selects it (and the graph moves to its neighbourhood); a node
can be dragged where a person wants it, and the others make room."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pyqtgraph as pg
from mnemoscope.store import KINDS
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QSpinBox, QToolTip, QVBoxLayout, QWidget

from ...neighbourhood import MAX_DEPTH, Neighbourhood, layout, neighbourhood
from ..theme import ENTITY_COLOUR, HIGHLIGHT, HIGHLIGHT_EDGE, KIND_COLOURS, map_colours
from .map_data import MapData

LABEL_CHARS = 38  # of a memory's text under its node
RELAX_STEPS = 80  # force steps after a node is let go, the others making room


class _Shown(Mapping):
    """A shown memory's entities, read from the map's dots (no dict of 100,000 built)."""

    def __init__(self, data: MapData, shown: set[str]) -> None:
        self.data, self.shown = data, shown

    def __getitem__(self, memory_id: str) -> list[str]:
        if memory_id not in self.shown:
            raise KeyError(memory_id)
        return self.data.dots[self.data.index[memory_id]].entities

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self.shown

    def __iter__(self) -> Iterator[str]:
        return iter(self.shown)

    def __len__(self) -> int:
        return len(self.shown)


class _Strength(Mapping):
    def __init__(self, data: MapData) -> None:
        self.data = data

    def __getitem__(self, memory_id: str) -> float:
        return float(self.data.strengths[self.data.index[memory_id]])

    def __iter__(self) -> Iterator[str]:
        return iter(self.data.index)

    def __len__(self) -> int:
        return len(self.data.index)


class Nodes(pg.ScatterPlotItem):
    """The graph's nodes; a node can be dragged (the view pans when the drag starts on
    empty space)."""

    dragged = Signal(int, float, float, bool)  # node, x, y, finished

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._held: int | None = None

    def mouseDragEvent(self, ev) -> None:  # noqa: N802 (pyqtgraph's name)
        if ev.button() != Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        if ev.isStart():
            points = self.pointsAt(ev.buttonDownPos())
            if not len(points):
                ev.ignore()
                return
            self._held = int(points[0].index())
        elif self._held is None:
            ev.ignore()
            return
        ev.accept()
        at = ev.pos()
        self.dragged.emit(self._held, at.x(), at.y(), ev.isFinish())
        if ev.isFinish():
            self._held = None


class LocalGraph(QWidget):
    """The selected memory's neighbourhood to ``depth``, over the map's dots (``data``) and
    the memories shown (``shown``); ``references``: memory id → the memories it references
    or is referenced by."""

    picked = Signal(str)  # a memory clicked

    def __init__(self, dark: bool = False, parent=None) -> None:
        super().__init__(parent)
        self.depth = 1
        self.graph: Neighbourhood | None = None
        self.positions = np.zeros((0, 2))
        self.pinned: dict[int, tuple[float, float]] = {}
        self.hits: set[str] = set()
        self._data: MapData | None = None
        # a memory's colour (its kind's, or its colour group's): the map says
        self.colour_of = lambda memory_id: KIND_COLOURS.get(self._data.dots[self._data.index[memory_id]].kind,
                                                            "#888888")
        self.plot = pg.PlotWidget()
        self.plot.setAspectLocked(True)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.mentions = pg.PlotCurveItem(connect="pairs")
        self.mentions.setZValue(1)
        self.plot.addItem(self.mentions)
        self.hub_links = pg.PlotCurveItem(connect="pairs")  # to an entity most of them name: faint
        self.hub_links.setZValue(0.5)
        self.plot.addItem(self.hub_links)
        self.links = pg.PlotCurveItem(connect="pairs")  # memory to memory: a reference
        self.links.setZValue(2)
        self.plot.addItem(self.links)
        self.hit_rings = pg.ScatterPlotItem(pxMode=True, symbol="o", brush=pg.mkBrush(0, 0, 0, 0),
                                            pen=pg.mkPen(HIGHLIGHT_EDGE, width=3))
        self.hit_rings.setZValue(3)
        self.plot.addItem(self.hit_rings)
        self.nodes = Nodes(pxMode=True, hoverable=True, tip=None)
        self.nodes.setZValue(4)
        self.plot.addItem(self.nodes)
        self.nodes.sigClicked.connect(self._clicked)
        self.nodes.sigHovered.connect(self._hovered)
        self.nodes.dragged.connect(self._dragged)
        self.labels: list[pg.TextItem] = []
        self.labelled: list[int] = []  # the node each label names
        self.hint = pg.TextItem("Select a memory to see its neighbourhood", anchor=(0.5, 0.5))
        self.plot.addItem(self.hint)
        self.depth_box = QSpinBox(self.plot.viewport())
        self.depth_box.setRange(1, MAX_DEPTH)
        self.depth_box.setPrefix("depth ")
        self.depth_box.setToolTip("How many steps out from the selected memory (1-3)")
        self.depth_box.valueChanged.connect(self.set_depth)
        self.plot.viewport().installEventFilter(self)
        layout_ = QVBoxLayout(self)
        layout_.setContentsMargins(0, 0, 0, 0)
        layout_.addWidget(self.plot)
        self.set_dark(dark)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.plot.viewport() and event.type() == QEvent.Type.Resize:
            self.depth_box.adjustSize()
            self.depth_box.move(self.plot.viewport().width() - self.depth_box.width() - 6, 6)
        return super().eventFilter(watched, event)

    def set_dark(self, dark: bool) -> None:
        self.colours = map_colours(dark)
        self.dark = dark
        self.plot.setBackground(self.colours["background"])
        self.mentions.setPen(pg.mkPen(self.colours["link"], width=1.2))
        self.hub_links.setPen(pg.mkPen(self.colours["line"], width=1))
        self.links.setPen(pg.mkPen(self.colours["link"], width=2.5))
        self.hint.setColor(self.colours["label"])
        for label in self.labels:
            label.setColor(self.colours["label"])
        if self.graph is not None:
            self._draw()

    # -- what is shown -----------------------------------------------------------------
    def show_of(self, centre: str | None, data: MapData, shown: set[str], references: Mapping[str, list[str]],
                keep_places: bool = False) -> None:
        """The neighbourhood of ``centre`` among the memories ``shown`` (None: a hint)."""
        self._data = data
        if centre is None or centre not in shown:
            self.graph = None
            self.positions = np.zeros((0, 2))
            self._draw()
            return
        previous = self.graph
        graph = neighbourhood(centre, _Shown(data, shown), data.member_ids, references, _Strength(data),
                              self.depth)
        start = None
        if keep_places and previous is not None and previous.nodes == graph.nodes:
            start, pinned = self.positions, self.pinned
        else:
            pinned = {}
        self.graph, self.pinned = graph, pinned
        self.positions = layout(graph, pinned, start=start, iterations=RELAX_STEPS if start is not None else 200)
        if start is None:
            self._fit()
        self._draw()

    def _fit(self) -> None:
        """The whole neighbourhood in view, with room round it for the labels."""
        if not len(self.positions):
            return
        (x0, y0), (x1, y1) = self.positions.min(axis=0), self.positions.max(axis=0)
        pad = 0.12 * max(x1 - x0, y1 - y0, 1.0)
        self.plot.getViewBox().setRange(xRange=(x0 - pad, x1 + pad), yRange=(y0 - pad, y1 + pad), padding=0)

    def set_depth(self, depth: int) -> None:
        self.depth = depth

    def set_hits(self, hits: set[str]) -> None:
        """The memories a search lit: ringed here too."""
        self.hits = set(hits)
        if self.graph is not None:
            self._draw()

    def caption(self) -> str:
        g = self.graph
        if g is None:
            return "Select a memory to see its neighbourhood"
        by_depth = [sum(1 for d in g.depth_of.values() if d == k) for k in range(1, self.depth + 1)]
        left = sum(g.more.values())
        text = (f"{g.centre}: {len(g.memories) - 1} neighbouring memories ("
                + ", ".join(f"{n} at depth {k}" for k, n in enumerate(by_depth, 1)) + f"), {len(g.entities)} "
                f"entities joining them")
        if left:
            text += f"; {left:,} more not shown (the closest are)"
        return text + " · drag a node to move it"

    # -- drawing -----------------------------------------------------------------------
    def _draw(self) -> None:
        g, pos = self.graph, self.positions
        self.hint.setVisible(g is None)
        if g is None:
            for label in self.labels:
                self.plot.removeItem(label)
            self.labels, self.labelled = [], []
            for item in (self.nodes, self.mentions, self.hub_links, self.links, self.hit_rings):
                item.setData([], [])
            self.hint.setPos(0, 0)
            return
        data = self._data
        memories = len(g.memories)
        sizes, brushes, pens, symbols = [], [], [], []
        for i, name in enumerate(g.nodes):
            if i < memories:
                dot = data.dots[data.index[name]]
                colour = QColor(self.colour_of(name))
                sizes.append(28.0 if i == 0 else 12.0 + 10.0 * dot.importance)
                brushes.append(pg.mkBrush(colour))
                pens.append(pg.mkPen(HIGHLIGHT, width=3) if i == 0 else pg.mkPen(self.colours["background"]))
                symbols.append("o")
            else:
                sizes.append(14.0)
                brushes.append(pg.mkBrush(ENTITY_COLOUR))
                pens.append(pg.mkPen(self.colours["background"]))
                symbols.append("d")
        self.nodes.setData(pos=pos, size=sizes, brush=brushes, pen=pens, symbol=symbols, data=list(range(len(pos))))
        self._draw_edges()
        ringed = [i for i, mid in enumerate(g.memories) if mid in self.hits]
        self.hit_rings.setData(pos=pos[ringed] if ringed else np.zeros((0, 2)),
                               size=[sizes[i] + 10 for i in ringed])
        self._place_labels()

    def _place_labels(self) -> None:
        """Name what fits without covering another name: the memory itself, then the
        entities (those joining the most first), then the nearest memories, the most
        important first; the rest say what they are on hover."""
        g, pos, data = self.graph, self.positions, self._data
        for label in self.labels:
            self.plot.removeItem(label)
        self.labels, self.labelled = [], []
        memories = len(g.memories)
        joins = {}
        for _m, e in g.mentions:
            joins[e] = joins.get(e, 0) + 1
        near = [i for i in range(1, memories) if g.depth_of[g.memories[i]] == 1]
        order = [0, *sorted(range(memories, len(g.nodes)), key=lambda e: -joins.get(e, 0)),
                 *sorted(near, key=lambda i: -float(data.importances[data.index[g.memories[i]]]))]
        vb = self.plot.getViewBox()
        view = self.plot.viewport().rect()
        taken = []
        for i in order:
            if i < memories:
                text = data.dots[data.index[g.nodes[i]]].text
                text = text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"
            else:
                text = g.nodes[i]
            label = pg.TextItem(text, color=self.colours["text"] if i == 0 else self.colours["label"],
                                anchor=(0.5, -0.45))
            at = self.plot.mapFromScene(vb.mapViewToScene(QPointF(*pos[i])))
            size = label.textItem.boundingRect().size()
            rect = QRectF(at.x() - size.width() / 2, at.y() + 0.45 * size.height(), size.width(), size.height())
            if i and (any(rect.intersects(r) for r in taken) or not view.contains(rect.toRect())):
                continue
            taken.append(rect)
            label.setZValue(5)
            label.setPos(*pos[i])
            self.plot.addItem(label)
            self.labels.append(label)
            self.labelled.append(i)

    def _draw_edges(self) -> None:
        g, pos = self.graph, self.positions

        def pairs(edges):
            if not edges:
                return np.zeros(0), np.zeros(0)
            e = np.array(edges)
            xy = pos[e.reshape(-1)]
            return xy[:, 0], xy[:, 1]

        self.mentions.setData(*pairs([e for e in g.mentions if e[1] not in g.hubs]))
        self.hub_links.setData(*pairs([e for e in g.mentions if e[1] in g.hubs]))
        self.links.setData(*pairs(g.references))

    def kind_of(self, node: int) -> str:
        g = self.graph
        if node >= len(g.memories):
            return "entity"
        return KINDS[int(self._data.kinds[self._data.index[g.memories[node]]])]

    # -- interaction -------------------------------------------------------------------
    def node_at(self, node: int):
        """Where node ``node`` is drawn, in the plot widget's pixels (for tests)."""
        x, y = self.positions[node]
        return self.plot.mapFromScene(self.plot.getViewBox().mapViewToScene(QPointF(x, y)))

    def _clicked(self, _item, points, _ev=None) -> None:
        if len(points) and self.graph is not None:
            node = int(points[0].data())
            if node < len(self.graph.memories):
                self.picked.emit(self.graph.memories[node])

    def _hovered(self, _item, points, ev=None) -> None:
        if not len(points) or self.graph is None:
            return
        node = int(points[0].data())
        g = self.graph
        if node < len(g.memories):
            dot = self._data.dots[self._data.index[g.memories[node]]]
            text = f"{dot.text}\n\n{dot.kind} · depth {g.depth_of[dot.id]} · entities: {', '.join(dot.entities) or 'none'}"
        else:
            name = g.nodes[node]
            text = f"{name}: joins {sum(1 for _m, e in g.mentions if e == node)} of these memories"
        try:
            at = self.plot.mapToGlobal(self.plot.mapFromScene(ev.scenePos()))
        except Exception:
            at = self.plot.mapToGlobal(self.plot.rect().center())
        QToolTip.showText(at, text, self.plot)

    def _dragged(self, node: int, x: float, y: float, finished: bool) -> None:
        """A node follows the pointer; let go, it stays there and the others make room."""
        if self.graph is None or node == 0:
            return  # the memory itself stays in the middle
        self.positions[node] = (x, y)
        if finished:
            self.pinned[node] = (x, y)
            self.positions = layout(self.graph, self.pinned, start=self.positions, iterations=RELAX_STEPS)
            self._draw()
            return
        self.nodes.setData(pos=self.positions, size=[p.size() for p in self.nodes.points()],
                           brush=[p.brush() for p in self.nodes.points()], pen=[p.pen() for p in self.nodes.points()],
                           symbol=[p.symbol() for p in self.nodes.points()], data=list(range(len(self.positions))))
        self._draw_edges()
        for label, i in zip(self.labels, self.labelled, strict=True):
            label.setPos(*self.positions[i])
