"""The radial memory map (pyqtgraph): habit at the centre, then fading, then edge.

Each memory is a dot (colour by kind, size by importance, opacity by strength) in its
group's sector (see ``map_layout``); the most mentioned entities are diamonds on an outer
orbit, joined to their memories by lines when hovered or when one of them is selected. The map reads the store; with the time-travel slider it reads the store's
projection of a future day instead, which writes nothing. "By meaning" arranges the
angles by the memories' vectors instead of their topics (see ``map_layout``).
"""

from __future__ import annotations

import html
import math
import time

import numpy as np
import pyqtgraph as pg
from mnemoscope.store import KINDS, LAYERS
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFont, QKeySequence, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGraphicsEllipseItem,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ...map_layout import (
    RING_INNER,
    SECTOR_GAP,
    group_label,
    layer_outer,
    meaning_angles,
    name_angle,
    orbit_for,
    orbit_steps,
    ring_outer,
    spread_on_circle,
)
from ..background import drop_elsewhere
from ..session import StoreSession
from ..theme import (
    ARRIVAL_COLOUR,
    CALL_COLOUR,
    ENTITY_COLOUR,
    HIGHLIGHT,
    HIGHLIGHT_EDGE,
    KIND_COLOURS,
    map_colours,
)
from ..widgets import ElidedLabel
from . import map_memory
from .colour_groups import GROUP_COLOURS, GROUPS_MAX
from .local_graph import LocalGraph
from .map_data import Dot, MapData, Positions, day_of, field_matches, map_data

TURN_DEGREES = 30  # one click of the turn button
SEARCH_K = 40  # hits the map's search asks recall for; it lights those that stand out (standing_out)
SEARCH_ALWAYS = 3
GROUP_K = 200  # hits a colour group's query by meaning asks recall for
GROUPLESS_ALPHA = 0.35
ODD_SECTOR_ALPHA = 0.72  # a crowded map's every other sector, at this share of its opacity  # a dot no colour group finds, at this share of its opacity
SEARCH_SHARE = 0.25
SEARCH_DELAY_MS = 250  # typing pauses this long before a search runs
ANIMATION_MS = 450
ANIMATION_STEPS = 12
LABELS_MAX = 40  # entity names drawn at once; the rest show on hover
ENTITIES_DRAWN = 40  # the most mentioned entities of what is shown get a diamond
ENTITY_LABELS_ALWAYS = 8  # the most mentioned entities are labelled even over a crowd of diamonds
LABEL_CLEARANCE_PX = 7  # from an entity's centre to its label, outward
DENSITY_DOTS = 3000  # more dots than this in view: draw them as cells (see _draw_cells)
DENSITY_BINS = 160
SECTOR_LABELS_MAX = 24
RING_LABEL_ANGLES = tuple(math.radians(90 + sign * a) for a in range(0, 181, 15) for sign in (1, -1))[1:]
SECTORS_ALWAYS = 6  # the biggest sectors are labelled even over a diamond
SECTOR_LABEL_INSET = 0.42  # a sector's label sits this far inside the outermost ring shown
SPOKE_MIN = 0.12  # radians: a line is drawn between two sectors when one of them is this wide
VIEW_RADIUS = 4.4  # what Fit view shows: the rings and the entity orbits just outside them
HALO_SECONDS = 8.0
HALO_FRAME_MS = 250
ENTITY_GAP = 0.06  # radians between neighbouring entities at least (~10 px along a fitted orbit)
ENTITY_GATHERED = 0.35  # mean resultant length of its memories' directions above which an entity sits by them
FAINTEST_LIGHT = 70  # a dot's opacity (of 255) at strength 0, on the light theme
FAINTEST_DARK = 135  # and on the dark one, where a faint dot sinks into the background sooner
ANIMATE_MAX = 5000  # more dots than this: a change moves them at once (a frame each would stall)


class RadialMap(QWidget):
    """The map with its controls: legend (kind toggles), layer toggles, search, scope, rotation."""

    hovered = Signal(object)  # memory id or None

    def __init__(self, session: StoreSession, dark: bool = False, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.colours = map_colours(dark)
        self.dots: list[Dot] = []
        self.dot_index: dict[str, int] = {}
        self._visible_ids: list[str] | None = []  # worked out when first asked for (see visible_ids)
        self.hidden_kinds: set[str] = set()
        self.visible_layers = set(LAYERS) - {"archived"}
        self.scope_filter: str | None = None
        self.search_text = ""  # what the search box says
        self.searched = ""  # the query the hits below are for
        self.search_hits: dict[str, float] = {}  # memory id -> relevance, best first (store.recall)
        self.search_matches: set[str] = set()  # the hits shown (after the filters)
        self._search_job = None
        self.group_queries: list[str] = []  # the colour groups' queries (see colour_groups)
        self.group_hits: list[set[str] | None] = []  # a meaning query's hits (None: a field query, or not back yet)
        self._group_jobs: dict[int, object] = {}
        self._codes: tuple | None = None  # (data, groups, each dot's colour: a kind, or 5 + its group)
        self.colour_dialog = None
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self._run_search)
        self.rotation = 0.0
        self.entity_names: list[str] = []
        self.entity_members: dict[str, list[str]] = {}
        self.hover_entity: str | None = None
        self.data = MapData()
        self._positions = Positions({}, np.zeros(0), np.zeros(0))
        self._x = self._y = np.zeros(0)
        self._mask = np.zeros(0, dtype=bool)
        self._visible_index = np.zeros(0, dtype=np.int64)
        self._shown: tuple | None = None  # the dots and filters the visible set below was worked out for
        self._members: dict[str, np.ndarray] | None = None
        self._fitted = False  # the first dots of a store are shown fitted to the pane
        self.by_meaning = False
        self.meaning_angles: dict[str, float] = {}  # the last arrangement by meaning, kept across reloads
        self._meaning_for: tuple[str, str] | None = None  # the database and model it is of
        self.unembedded = 0  # memories without a vector, placed by topic in the arrangement by meaning
        self._angles = self._radii = np.zeros(0)
        self._anim_from: dict[str, tuple[float, float]] = {}
        self._anim_step = 0
        self._anim_timer = QTimer(self)
        self._anim_timer.setInterval(ANIMATION_MS // ANIMATION_STEPS)
        self._anim_timer.timeout.connect(self._animate)
        self._build(dark)
        self._build_call_marks()
        self._enable_meaning(session.store)
        session.store_replaced.connect(lambda: self._enable_meaning(self.session.store))
        session.changed.connect(self._on_changed)
        session.selection_changed.connect(lambda _id: self._draw_selection())
        session.selection_changed.connect(lambda _id: self._show_local())
        session.preview_changed.connect(self._preview_changed)
        session.add_preparer("map", self._prepare)
        session.store_replaced.connect(lambda: setattr(self, "_fitted", False))

    # -- construction ----------------------------------------------------------------
    def _build(self, dark: bool) -> None:
        pg.setConfigOptions(antialias=True)
        self.plot = pg.PlotWidget()
        self.plot.setAspectLocked(True)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(True, True)
        vb = self.plot.getViewBox()
        vb.setRange(xRange=(-VIEW_RADIUS, VIEW_RADIUS), yRange=(-VIEW_RADIUS, VIEW_RADIUS), padding=0)
        vb.sigRangeChanged.connect(lambda *_a: self._update_detail())
        vb.sigResized.connect(lambda *_a: self._place_labels())  # same range, other pixels
        self.plot.viewport().installEventFilter(self)  # a double-click on empty space fits the view
        self.ring_labels: dict[str, pg.TextItem] = {}
        self.rings: list[QGraphicsEllipseItem] = []
        for name in LAYERS[:-1]:  # every ring but the archived one, which is outside them
            radius = ring_outer(name)
            ring = QGraphicsEllipseItem(-radius, -radius, 2 * radius, 2 * radius)
            ring.setZValue(4.2)  # over a crowded map's cells, under the dots
            self.plot.addItem(ring)
            self.rings.append(ring)
            # above the dots, on a backing, so a crowded habit ring cannot hide its name
            label = pg.TextItem(name, anchor=(0.5, 0.5))
            label.setPos(0, radius)
            label.setZValue(9)
            self.plot.addItem(label)
            self.ring_labels[name] = label
        self.link_curve = pg.PlotCurveItem(connect="pairs")  # the selected memory's entities
        self.link_curve.setZValue(4.8)
        self.plot.addItem(self.link_curve)
        self.spokes = pg.PlotCurveItem(connect="pairs")  # between the sectors
        self.spokes.setZValue(4.2)  # as the rings: over a crowded map's cells, under the dots
        self.plot.addItem(self.spokes)
        self._sector_font = QFont()
        self._sector_font.setBold(True)
        self.highlight_curve = pg.PlotCurveItem(pen=pg.mkPen(ENTITY_COLOUR, width=2), connect="pairs")
        self.highlight_curve.setZValue(-4)
        self.plot.addItem(self.highlight_curve)
        self._match_pen = pg.mkPen(HIGHLIGHT, width=2)
        self._plain_pen = pg.mkPen(None)
        self._entity_brush = pg.mkBrush(ENTITY_COLOUR)
        # tip=None: our own tooltips, not pyqtgraph's "x: … y: … data=…"
        self.scatter = pg.ScatterPlotItem(pxMode=True, hoverable=True, tip=None)
        self.scatter.setZValue(5)
        self.plot.addItem(self.scatter)
        self.entity_scatter = pg.ScatterPlotItem(pxMode=True, hoverable=True, symbol="d", tip=None)
        self.entity_scatter.setZValue(6)
        self.plot.addItem(self.entity_scatter)
        self.entity_labels: dict[str, pg.TextItem] = {}
        self.sector_labels: dict[str, pg.TextItem] = {}  # by group
        self.density = pg.ImageItem()
        self.density.setZValue(4)
        self.density.hide()
        self.plot.addItem(self.density)
        self.dense = False
        self.sector_totals: dict[str, int] = {}  # group -> memories of it shown
        self._visible_xy = (np.zeros(0), np.zeros(0))
        self._dots_stale = True
        self.selection_ring = pg.ScatterPlotItem(pxMode=True, symbol="o", size=26,
                                                 pen=pg.mkPen(HIGHLIGHT, width=3), brush=pg.mkBrush(0, 0, 0, 0))
        self.selection_ring.setZValue(7)
        self.plot.addItem(self.selection_ring)
        # the search's hits, over the dots and a crowded map's cells alike
        self.hit_shadow = pg.ScatterPlotItem(pxMode=True, symbol="o", brush=pg.mkBrush(0, 0, 0, 0),
                                             pen=pg.mkPen(HIGHLIGHT_EDGE, width=5))
        self.hit_shadow.setZValue(6.7)
        self.plot.addItem(self.hit_shadow)
        self.hit_marks = pg.ScatterPlotItem(pxMode=True, symbol="o", brush=pg.mkBrush(0, 0, 0, 0),
                                            pen=pg.mkPen(HIGHLIGHT, width=2.5))
        self.hit_marks.setZValue(6.8)
        self.plot.addItem(self.hit_marks)
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
        legend.addSpacing(12)
        # in the View menu: a button would widen the map's controls, which have no room to spare
        self.meaning_action = QAction("Arrange the map by &meaning", self)
        self.meaning_action.setCheckable(True)
        self.meaning_action.toggled.connect(self.set_by_meaning)
        self.local_action = QAction("The selected memory's &neighbourhood", self)
        self.local_action.setCheckable(True)
        self.local_action.setShortcut(QKeySequence("Ctrl+L"))
        self.local_action.setToolTip("The selected memory's neighbourhood: the memories that share an entity "
                                     "with it or reference it, to the depth beside, and the entities joining "
                                     "them (Ctrl+L)")
        self.local_button = QToolButton(self)
        self.local_button.setDefaultAction(self.local_action)
        self.local_button.setText("Neighbourhood")
        self.local_button.setObjectName("neighbourhood_button")
        self.local_action.toggled.connect(self.set_local)
        legend.addWidget(self.local_button)
        self.colour_button = QToolButton(self)
        self.colour_button.setText("Colour…")
        self.colour_button.setObjectName("colour_groups_button")
        self.colour_button.setToolTip("Colour groups: the memories a query finds (topic:cooking, entity:Mara, "
                                      "or words, by meaning) in a colour of their own")
        self.colour_button.clicked.connect(self.open_colour_groups)
        legend.addWidget(self.colour_button)
        # Fit and turn sit on the map itself, in its top right corner, as a web map's zoom
        # buttons do: the row above has no room for them at 1366 px.
        self.view_buttons = QWidget(self.plot.viewport())
        corner = QHBoxLayout(self.view_buttons)
        corner.setContentsMargins(0, 0, 0, 0)
        corner.setSpacing(2)
        self.fit_button = QToolButton(self.view_buttons)
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("Fit view: show the whole map (Home, or double-click empty space)")
        self.fit_button.clicked.connect(self.fit_view)
        self.turn_button = QToolButton(self.view_buttons)
        self.turn_button.setText("⟳")
        self.turn_button.setToolTip(f"Turn the map by {TURN_DEGREES}° clockwise")
        self.turn_button.clicked.connect(lambda: self.set_rotation(self.rotation - math.radians(TURN_DEGREES)))
        for button in (self.fit_button, self.turn_button):
            corner.addWidget(button)
        self.layer_boxes: dict[str, QCheckBox] = {}
        layers = QHBoxLayout()
        layers.setSpacing(8)
        layers.addWidget(QLabel("Layers:", self))
        for layer in LAYERS:
            box = QCheckBox(layer, self)
            box.setChecked(layer in self.visible_layers)
            box.toggled.connect(lambda on, name=layer: self.set_layer_visible(name, on))
            layers.addWidget(box)
            self.layer_boxes[layer] = box
        layers.addSpacing(12)
        self.search_box = QLineEdit(self)
        self.search_box.setPlaceholderText("Search by meaning…")
        self.search_box.setToolTip("Find memories by what they mean, as an agent's recall does (words and "
                                   "meaning); the best hits light up on the map. Enter selects the best.")
        self.search_box.setClearButtonEnabled(True)
        self.search_box.setMinimumWidth(90)
        self.search_box.textChanged.connect(self.set_search)
        self.search_box.returnPressed.connect(self.select_best_hit)
        layers.addWidget(self.search_box, 2)
        self.scope_box = QComboBox(self)
        self.scope_box.setToolTip("Show one scope (and global) or all")
        # sized for a dozen characters whatever the scopes are: a long scope id that arrives
        # later must not make the map need more room than the window gave it
        self.scope_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.scope_box.setMinimumContentsLength(12)
        self.scope_box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.scope_box.setMaximumWidth(220)
        self.scope_box.currentIndexChanged.connect(self._scope_changed)
        layers.addWidget(self.scope_box, 1)
        self.density_legend = DensityLegend(self)
        self.density_legend.hide()
        self.caption = ElidedLabel("", self)
        self.caption.setObjectName("map_caption")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addLayout(legend)
        layout.addLayout(layers)
        self.local = LocalGraph(dark, self)
        self.depth_box = self.local.depth_box  # on the neighbourhood itself, in its corner
        self.depth_box.valueChanged.connect(self._depth_changed)
        self.local.colour_of = lambda memory_id: self.palette[int(self.colour_codes()[self.data.index[memory_id]])]
        self.local.picked.connect(self.session.select)
        self.views = QStackedWidget(self)
        self.views.addWidget(self.plot)
        self.views.addWidget(self.local)
        layout.addWidget(self.views, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.caption, 1)
        self.groups_legend = QLabel(self)
        self.groups_legend.setObjectName("colour_groups_legend")
        self.groups_legend.hide()
        bottom.addWidget(self.groups_legend)
        bottom.addWidget(self.density_legend)
        layout.addLayout(bottom)

        self.set_dark(dark)

    def set_dark(self, dark: bool) -> None:
        """Recolour the map for a light or dark theme."""
        self.colours = map_colours(dark)
        self.dark = dark
        if hasattr(self, "local"):
            self.local.set_dark(dark)
        self.palette = [KIND_COLOURS[k] for k in KINDS] + list(GROUP_COLOURS)  # a dot's colour code: its index
        self._palette_rgba = np.array([[*QColor(c).getRgb()[:3], 255] for c in self.palette], dtype=np.ubyte)
        self.density_legend.set_text_colour(self.colours["label"])
        self.plot.setBackground(self.colours["background"])
        ring_pen = QPen(QColor(self.colours["ring"]))
        ring_pen.setCosmetic(True)
        ring_pen.setWidthF(1.2)
        self._label_fill = QColor(self.colours["background"])
        self._label_fill.setAlpha(200)
        for ring in self.rings:
            ring.setPen(ring_pen)
        for label in self.ring_labels.values():
            label.setColor(self.colours["label"])
            label.fill = pg.mkBrush(self._label_fill)
            label.update()
        for label in [*self.entity_labels.values(), *self.sector_labels.values()]:
            label.setColor(self.colours["label"])
        for label in self.entity_labels.values():  # made on the old theme's backing
            label.fill = pg.mkBrush(self._label_fill)
            label.update()
        self.link_curve.setPen(pg.mkPen(self.colours["link"], width=1.5))
        spoke = QColor(self.colours["ring"])
        spoke.setAlpha(110)
        self.spokes.setPen(pg.mkPen(spoke, width=1))
        self._sector_fill = QColor(self.colours["background"])
        self._sector_fill.setAlpha(150)
        for label in self.sector_labels.values():
            label.fill = pg.mkBrush(self._sector_fill)
        for kind, button in self.legend_buttons.items():  # a style sheet keeps the old palette: set it again
            self._style_legend(button, kind, kind not in self.hidden_kinds)
        self._entity_pen = pg.mkPen(self.colours["background"])
        if self.entity_names:
            self.redraw()

    # -- data ------------------------------------------------------------------------
    def _on_changed(self, _ids) -> None:
        self.reload(animate=True)

    def _prepare(self, store, memories) -> MapData:
        """The dots, off the GUI thread (a background read): nothing here touches Qt. On a
        previewed day, that day's."""
        data = map_data(memories, store.config.decay, store.now())
        return day_of(data, self.session.preview_days, store.config.decay)

    def _preview_changed(self, days: float) -> None:
        """Another previewed day: worked out from the dots' decay inputs, at once (tens of
        milliseconds at 100,000 memories), so a drag shows every day it passes over."""
        store = self.session.store
        if store is None or self.data.source is not self.session.memories() or self.data.decay_inputs is None:
            self.reload(animate=False)  # the dots are of other memories: build them again
            return
        self.reload(animate=False, data=day_of(self.data, days, store.config.decay))

    def reload(self, animate: bool = False, data: MapData | None = None) -> None:
        """Read the store (or its projection of the previewed day) and redraw; ``data``: the
        dots already prepared off the GUI thread."""
        store = self.session.store
        if data is None:
            data = self.session.prepared("map")
        if store is None:
            data = MapData()
        elif data is None or data.source is not self.session.memories():
            data = self._prepare(store, self.session.memories())
        elif data.preview_days != self.session.preview_days:
            data = day_of(data, self.session.preview_days, store.config.decay)
        old = self._positions
        if not animate or len(data.dots) > ANIMATE_MAX:
            self._shown = self._members = None
            drop_elsewhere(self.data, self.dots, self.dot_index, self.entity_members, old, self._visible_ids)
            old = Positions({}, np.zeros(0), np.zeros(0))
        self.data = data
        self.dots = data.dots
        self.dot_index = data.index
        self.entity_members = data.member_ids
        current = self.scope_box.currentData()
        self.scope_box.blockSignals(True)
        self.scope_box.clear()
        self.scope_box.addItem("all scopes", None)
        for scope in data.scope_names:
            self.scope_box.addItem(scope, scope)
        idx = self.scope_box.findData(current)
        self.scope_box.setCurrentIndex(max(idx, 0))
        self.scope_box.blockSignals(False)
        self._enable_meaning(store)
        self._layout_positions()
        if animate and len(old) and len(self.dots) <= ANIMATE_MAX:
            moved = {d.id: old[d.id] for d in self.dots if d.id in old and old[d.id] != self._positions[d.id]}
            if moved:
                self._anim_from = moved
                self._anim_step = 0
                self._anim_timer.start()
        else:
            self._anim_timer.stop()
            self._anim_from = {}
        self.redraw()
        if not self._fitted and len(self.dots):
            self._fitted = True
            self.fit_view()

    def _layout_positions(self) -> None:
        """Each dot's angle and radius (worked out with the dots, see ``map_data``); by
        meaning, the angles come from the stored vectors instead."""
        self._radii = self.data.radii
        if self.by_meaning and self.session.store is not None:
            self._angles = self.data.angles.copy()
            self._arrange_by_meaning()
        elif self._angles is not self.data.angles:  # another day of the same dots keeps them (and their cosines)
            self._angles = self.data.angles
        self._rotate()

    def _enable_meaning(self, store) -> None:
        has = hasattr(store, "vectors")
        self.meaning_action.setEnabled(has or self.by_meaning)
        tip = ("Arrange the memories by what they mean, not by topic: similar memories sit together" if has
               else "Arranging by meaning needs the memories' vectors, which this store does not keep")
        self.meaning_action.setToolTip(tip)
        self.meaning_action.setStatusTip(tip)

    def _arrange_by_meaning(self) -> None:
        """Angles from the stored vectors; a memory without one keeps its topic's angle."""
        store = self.session.store
        if not hasattr(store, "vectors"):
            self.unembedded = len(self.dots)
            return
        model = store.embedder_id() if hasattr(store, "embedder_id") else ""
        if self._meaning_for != (store.path, model):  # a new session: start from the last one's
            self._meaning_for = (store.path, model)
            self.meaning_angles = map_memory.load(store.path, model)
        ids, vectors = store.vectors([d.id for d in self.dots])
        ids = list(ids)
        angles = meaning_angles(ids, vectors, previous=self.meaning_angles)
        arranged = dict(zip(ids, angles.tolist()))
        if arranged != self.meaning_angles:
            map_memory.save(store.path, model, arranged)
        self.meaning_angles = arranged
        for i, d in enumerate(self.dots):
            angle = self.meaning_angles.get(d.id)
            if angle is not None:
                self._angles[i] = angle
        self.unembedded = len(self.dots) - sum(d.id in self.meaning_angles for d in self.dots)

    def set_by_meaning(self, on: bool) -> None:
        """Arrange by the memories' vectors (on) or by their topics (off), sliding the dots."""
        if self.meaning_action.isChecked() != on:
            self.meaning_action.setChecked(on)  # calls back here
            return
        self.by_meaning = on
        old = self._positions
        self._layout_positions()
        moved = {d.id: old[d.id] for d in self.dots if d.id in old and old[d.id] != self._positions[d.id]} \
            if len(self.dots) <= ANIMATE_MAX else {}
        if moved:
            self._anim_from, self._anim_step = moved, 0
            self._anim_timer.start()
        self.redraw()

    def _rotate(self) -> None:
        unit = self.unit_vectors()
        self._x, self._y = self._radii * unit[0], self._radii * unit[1]
        self._positions = Positions(self.dot_index, self._x, self._y)

    def unit_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Each dot's direction from the centre (cos, sin of its angle, turned): the same
        for every previewed day, so worked out once per arrangement and turn."""
        made = getattr(self, "_unit_made", None)  # (angles, meaning arrangement, turn) they were made for
        if made is None or made[0] is not self._angles or made[1] is not self.meaning_angles or made[2] != self.rotation:
            angles = self._angles + self.rotation
            self._unit = (np.cos(angles), np.sin(angles))
            self._unit_made = (self._angles, self.meaning_angles, self.rotation)
            self._unit_version = getattr(self, "_unit_version", 0) + 1
        return self._unit

    # -- drawing ---------------------------------------------------------------------
    def _visible_mask(self) -> np.ndarray:
        data = self.data
        if not len(self.dots):
            return np.zeros(0, dtype=bool)
        kinds = np.array([k not in self.hidden_kinds for k in KINDS])
        layers = np.array([name in self.visible_layers for name in LAYERS])
        mask = kinds[data.kinds] & layers[data.layers]
        if self.scope_filter is not None:
            shown = np.array([s in (self.scope_filter, "global") for s in data.scope_names], dtype=bool)
            mask &= shown[data.scopes]
        return mask

    def redraw(self, positions: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Draw what is visible (at ``positions``, arrays over every dot, while animating)."""
        # What is shown depends on the dots and the filters, not on where they are drawn: a
        # rotation or an animation frame reuses it (at 100,000 dots, most of a redraw).
        shown = (self.data, frozenset(self.hidden_kinds), frozenset(self.visible_layers), self.scope_filter,
                 tuple(self.search_hits))
        if self._shown is None or self._shown[0] is not self.data or self._shown[1:] != shown[1:]:
            mask = self._visible_mask()
            # Another day of the same memories (time travel) mostly shows the same ones:
            # then what is worked out from the set shown stays (a frame's tens of ms).
            same = (self._shown is not None and self._shown[1:] == shown[1:] and self._shown[0].dots is self.dots
                    and len(self._mask) == len(mask) and np.array_equal(self._mask, mask))
            self._shown = shown
            if same:
                return self._draw_shown(positions)
            self._members = None
            self._mask = mask
            where = self._visible_index = np.flatnonzero(mask)
            # No list of the visible dots or their ids here: at 100,000 building them took
            # 15-25 ms of every apply on the GUI thread, and the density view needs neither.
            self._visible_ids = None
            index = self.dot_index
            self.search_matches = {mid for mid in standing_out(self.search_hits) if mid in index and mask[index[mid]]}
            counts = np.bincount(self.data.groups[where], minlength=len(self.data.group_names))
            self.sector_totals = {self.data.group_names[i]: int(counts[i]) for i in np.flatnonzero(counts)}
        self._draw_shown(positions)

    def _draw_shown(self, positions) -> None:
        where = self._visible_index
        all_x, all_y = positions if positions is not None else (self._x, self._y)
        xs, ys = all_x[where], all_y[where]
        pos = Positions(self.dot_index, all_x, all_y)
        self._visible_xy = (xs, ys)
        self._dots_stale = True  # the dots are drawn when they are shown, not under the density
        self._draw_spokes()
        self._draw_entities(len(where), pos)
        self._update_detail()
        self._draw_selection(pos)
        self._draw_hits(pos)
        self._draw_call_marks(pos)
        self._update_caption(len(where))
        self._show_groups_legend()
        self._show_local(keep_places=True)

    @property
    def visible_ids(self) -> list[str]:
        """The ids of the memories shown (after the filters), in dot order."""
        if self._visible_ids is None:
            self._visible_ids = self.data.ids[self._visible_index].tolist()
        return self._visible_ids

    def _draw_dots(self) -> None:
        xs, ys = self._visible_xy
        where = self._visible_index
        alpha = self._alphas(self.data.strengths[where])
        sizes = 6.0 + 2.0 * np.round(6 * self.data.importances[where])
        pens = self._plain_pen  # one pen for all unless a search outlines its matches: a pen each costs a frame
        if self.search_matches:
            matched = np.fromiter((mid in self.search_matches for mid in self.visible_ids), dtype=bool,
                                  count=len(where))
            alpha = np.where(matched, 255, 28)
            sizes = np.where(matched, sizes + 4, sizes)
            pens = [self._match_pen if m else self._plain_pen for m in matched.tolist()]
        codes = self.colour_codes()[where]
        if self.group_queries and not self.search_matches:  # what no group finds steps back
            alpha = np.where(codes < len(KINDS), alpha * GROUPLESS_ALPHA, alpha).astype(int)
        keys = codes.astype(int) * 256 + alpha
        table = {}
        for key in np.unique(keys).tolist():
            colour = QColor(self.palette[key // 256])
            colour.setAlpha(key % 256)
            table[key] = QBrush(colour)
        brushes = [table[k] for k in keys.tolist()]
        self.scatter.setData(x=xs, y=ys, size=sizes, brush=brushes, pen=pens, data=self.visible_ids, symbol="o")
        self._dots_stale = False

    def _alphas(self, strengths: np.ndarray) -> np.ndarray:
        """A dot's opacity from its strength, quantised to 8 steps (pyqtgraph renders a few
        hundred symbols, not one per dot); the faintest still stands out from the theme's
        background (on dark, a weak dot at light's opacity was all but invisible)."""
        floor = FAINTEST_DARK if self.dark else FAINTEST_LIGHT
        steps = np.round(7 * np.clip(strengths, 0.0, 1.0)).astype(int)
        return floor + (255 - floor) * steps // 7

    def dot_colour(self, kind: str, strength: float) -> QColor:
        """The colour a memory of ``kind`` at ``strength`` is drawn in (with its opacity)."""
        colour = QColor(KIND_COLOURS.get(kind, "#888888"))
        colour.setAlpha(int(self._alphas(np.array([strength]))[0]))
        return colour

    def _draw_entities(self, visible: int, pos) -> None:
        members = self._members
        if members is None:  # worked out again when what is shown changes (see redraw)
            order = np.full(len(self.dots), -1, dtype=np.int64)  # a dot's place among the visible ones
            order[self._visible_index] = np.arange(len(self._visible_index))
            members = self._members = {}  # entity name -> indices into visible
            self._members_version = getattr(self, "_members_version", 0) + 1
            for name, idx in self.data.members.items():
                shown = order[idx]
                shown = shown[shown >= 0]
                if len(shown):
                    members[name] = shown
        # Where they sit depends on the directions of the memories shown, not on how far
        # out they are: another previewed day of the same ones leaves them where they are.
        unit = self.unit_vectors()
        key = (self._members_version, self._unit_version, frozenset(self.visible_layers))
        if key == getattr(self, "_entities_for", None):
            self._draw_entity_highlight(pos)
            return
        self._entities_for = key
        ux, uy = unit[0][self._visible_index], unit[1][self._visible_index]
        names, targets = [], []
        # the most mentioned only: a ring of a hundred diamonds round a big memory says nothing
        drawn = sorted(members, key=lambda n: (-len(members[n]), n))[:ENTITIES_DRAWN]
        for name, idx in sorted((n, members[n]) for n in drawn):
            # An entity sits by its memories: at the circular mean of their angles when they
            # gather on one side; when they are all round the map (the mean says nothing, and
            # every such entity would pile into one arc) at an angle of its own name.
            sx, sy = float(ux[idx].sum()), float(uy[idx].sum())
            gathered = math.hypot(sx, sy) >= ENTITY_GATHERED * len(idx)
            names.append(name)
            targets.append(math.atan2(sy, sx) if gathered else name_angle("entity:" + name.lower()))
        # Side by side where many belong by one sector, not piled into one diamond; in such
        # a run each a step further out than the last, so neighbours' diamonds have room.
        angles = spread_on_circle(targets, ENTITY_GAP)
        steps = orbit_steps(angles, 1.5 * ENTITY_GAP)
        outer = max((layer_outer(layer) for layer in self.visible_layers), default=layer_outer("edge"))
        ex, ey = [], []
        self.entity_pos: dict[str, tuple[float, float]] = {}
        for name, angle, step in zip(names, angles.tolist(), steps.tolist(), strict=True):
            orbit = orbit_for(step, outer)
            x, y = orbit * math.cos(angle), orbit * math.sin(angle)
            ex.append(x)
            ey.append(y)
            self.entity_pos[name] = (x, y)
        self.entity_names = names
        sizes = self._entity_sizes = [9 + min(len(members[n]), 12) for n in names]
        self.entity_scatter.setData(x=ex, y=ey, size=sizes, data=names, symbol="d",
                                    brush=self._entity_brush, pen=self._entity_pen)
        # No line from every entity to every memory (a fan of pale lines across the disc):
        # the hovered entity's lines, and the selected memory's, say what they join.
        self.entity_weight = {n: len(members[n]) for n in names}
        self._draw_entity_highlight(pos)

    def _update_detail(self) -> None:
        """Dots when a person can tell them apart; past DENSITY_DOTS in view, the density
        of each ring and sector, which resolves into dots as the view zooms in."""
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        xs, ys = self._visible_xy
        in_view = (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)
        self.dense = int(in_view.sum()) > DENSITY_DOTS
        if not self.dense and self._dots_stale:
            self._draw_dots()
        self.scatter.setVisible(not self.dense)
        self.density.setVisible(self.dense)
        self.density_legend.setVisible(self.dense and not self.local_action.isChecked())
        if self.dense:
            self._draw_cells(in_view, (x0, x1), (y0, y1))
        self._place_labels()

    def _draw_cells(self, in_view: np.ndarray, xrange, yrange) -> None:
        """Too many dots to tell apart: the view in cells, each drawn as its memories would
        be, in the colour of their commonest kind, as opaque as they are strong on average
        (a count per cell would be all one colour: the rings spread memories evenly)."""
        (x0, x1), (y0, y1) = xrange, yrange
        nx = DENSITY_BINS
        ny = max(1, round(DENSITY_BINS * (y1 - y0) / max(x1 - x0, 1e-9)))
        xs, ys = self._visible_xy
        where = self._visible_index[in_view]
        cells = cell_index(xs[in_view], ys[in_view], (nx, ny), ((x0, x1), (y0, y1)))
        counts = np.bincount(cells, minlength=nx * ny)
        colours = len(self.palette)
        codes = self.colour_codes()[where].astype(np.int64)
        by_colour = np.bincount(cells * colours + codes, minlength=nx * ny * colours).reshape(nx * ny, colours)
        strength = np.bincount(cells, weights=self.data.strengths[where], minlength=nx * ny)
        commonest = np.argmax(by_colour, axis=1)
        image = self._palette_rgba[commonest].copy()
        image[:, 3] = self._alphas(strength / np.maximum(counts, 1))
        if not self.by_meaning and len(self.data.sectors) > 1:
            # Every other sector a shade lighter, as a pie's wedges: at this size a sector is
            # read by its edges, which cells of one kind's colour would not show.
            odd = self._sector_parity()[where].astype(np.int64)
            odd_share = np.bincount(cells, weights=odd, minlength=nx * ny) / np.maximum(counts, 1)
            image[odd_share > 0.5, 3] = (image[odd_share > 0.5, 3] * ODD_SECTOR_ALPHA).astype(np.ubyte)
        if self.group_queries:
            image[commonest < len(KINDS), 3] = (image[commonest < len(KINDS), 3] * GROUPLESS_ALPHA).astype(np.ubyte)
        image[counts == 0, 3] = 0
        self.density.setImage(image.reshape(nx, ny, 4), autoLevels=False)
        self.density.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))
        self.density_legend.set_range(max(int(counts.max()), 1))

    def _sector_parity(self) -> np.ndarray:
        """Per dot, 1 when its sector is an odd one round the circle (0: even)."""
        made = getattr(self, "_parity_made", None)
        if made is None or made[0] is not self.data.sectors or made[1] is not self.data.groups:
            order = sorted(self.data.sectors, key=lambda g: (math.pi / 2 - self.data.sectors[g][0]) % (2 * math.pi))
            odd = {g: i % 2 for i, g in enumerate(order)}
            per_group = np.array([odd.get(g, 0) for g in self.data.group_names], dtype=np.int8)
            self._parity = per_group[self.data.groups] if len(self.data.groups) else np.zeros(0, dtype=np.int8)
            self._parity_made = (self.data.sectors, self.data.groups)
        return self._parity

    def _outer_ring(self) -> float:
        """The radius of the outermost ring shown (its circle, or the archived ring's reach)."""
        shown = [layer for layer in LAYERS if layer in self.visible_layers] or ["edge"]
        last = shown[-1]
        return layer_outer(last) if last == LAYERS[-1] else ring_outer(last)

    def _draw_spokes(self) -> None:
        """A faint line between two sectors where one of them is wide enough to read as one."""
        sectors = [] if self.by_meaning else sorted(self.data.sectors.values(), reverse=True)
        xs, ys = [], []
        if len(sectors) > 1:
            inner, outer = RING_INNER["fading"], self._outer_ring()  # not into the centre, where they meet
            for (start, width), (_next_start, next_width) in zip(sectors, [*sectors[1:], sectors[0]]):
                if width < SPOKE_MIN and next_width < SPOKE_MIN:
                    continue
                angle = start - width - SECTOR_GAP / 2 + self.rotation  # where this one ends
                c, s_ = math.cos(angle), math.sin(angle)
                xs += [inner * c, outer * c]
                ys += [inner * s_, outer * s_]
        self.spokes.setData(np.array(xs, dtype=float), np.array(ys, dtype=float))

    def _place_labels(self) -> None:
        """Label the busiest sectors (in the density view), then the most mentioned
        entities, skipping any label that would overlap one already placed: on screen, so
        zooming in makes room for more."""
        if not hasattr(self, "entity_pos"):
            return
        # Nothing a label depends on moved (a time-travel frame: the radii change, not the
        # sectors, the entities or the view): they stay as placed.
        key = (tuple(self.plot.getViewBox().viewRange()[0]), tuple(self.plot.getViewBox().viewRange()[1]),
               self.plot.viewport().size().toTuple(),
               tuple((name, round(x, 2), round(y, 2)) for name, (x, y) in self.entity_pos.items()),
               tuple(self.sector_totals),
               frozenset(self.visible_layers), self.rotation, self.by_meaning, self.dark, id(self.data.sectors))
        if key == getattr(self, "_labels_for", None):
            for group in getattr(self, "labelled_sectors", ()):  # a few memories more or fewer shown
                text = f"{group_label(group)} · {self.sector_totals.get(group, 0):,}"
                if self.sector_labels[group].textItem.toPlainText() != text:
                    self.sector_labels[group].setText(text)
            return
        self._labels_for = key
        taken: list[QRectF] = []
        # An entity's label goes outward from its diamond (the room outside the map), else
        # under, above or beside it; over no other diamond where it can help it, since it would
        # hide it: in a crowded map the most mentioned are labelled even so, on a backing.
        vb = self.plot.getViewBox()
        (x0, x1), _ = vb.viewRange()
        units = LABEL_CLEARANCE_PX * (x1 - x0) / max(self.plot.viewport().width(), 1)
        diamonds, spots = {}, {}
        for (name, (x, y)), size in zip(self.entity_pos.items(), self._entity_sizes, strict=True):
            at = self.plot.mapFromScene(vb.mapViewToScene(QPointF(x, y)))
            half = 0.3 * size
            diamonds[name] = QRectF(at.x() - half, at.y() - half, 2 * half, 2 * half)
            r = math.hypot(x, y) or 1.0
            c, s_ = x / r, y / r
            outward = (min(max(0.5 - c, 0.0), 1.0), min(max(0.5 + s_, 0.0), 1.0))  # the side facing the centre
            spots[name] = [(x + c * units, y + s_ * units, outward), (x, y, (0.5, -0.55)), (x, y, (0.5, 1.55)),
                           (x + units, y, (0.0, 0.5)), (x - units, y, (1.0, 0.5))]
        # One label per sector (by meaning, a topic has no sector), with how many of its
        # memories are shown, biggest first, at its middle near the rim (where the weakest
        # few are), else a little further in: a place of its own, the same on every redraw
        # of the same memories, over no diamond.
        totals = {} if self.by_meaning else self.sector_totals
        groups = sorted(totals, key=lambda g: (-totals[g], g))[:SECTOR_LABELS_MAX]
        sector_text = {g: f"{group_label(g)} · {totals[g]:,}" for g in groups}
        rim = self._outer_ring() - SECTOR_LABEL_INSET
        sector_spots = {}
        for group in groups:
            start, width = self.data.sectors[group]
            angle = start - width / 2 + self.rotation
            # at its middle, else a little further in, else (a wide sector) to either side
            turns = (0.0, 0.25 * width, -0.25 * width) if width > 0.5 else (0.0,)
            sector_spots[group] = [(r * math.cos(angle + t), r * math.sin(angle + t), (0.5, 0.5))
                                   for t in turns for r in (rim, rim - 0.3, rim - 0.6, rim - 0.9)]
        self.labelled_sectors = self._place(self.sector_labels, sector_text, {}, taken, (0.5, 0.5), 4.5,
                                            fill=self._sector_fill, spots=sector_spots, font=self._sector_font,
                                            soft=diamonds, must=set(groups[:SECTORS_ALWAYS]))
        # A ring's name on its circle, at the top unless a sector's label is there: then
        # further round, where there is room.
        ring_spots = {name: [(ring_outer(name) * math.cos(a), ring_outer(name) * math.sin(a), (0.5, 0.5))
                             for a in RING_LABEL_ANGLES] for name in reversed(self.ring_labels)}  # outermost first
        self._place(self.ring_labels, {name: name for name in ring_spots}, {}, taken, (0.5, 0.5), 9,
                    spots=ring_spots)
        names = sorted(self.entity_pos, key=lambda n: (-self.entity_weight.get(n, 0), n))[:LABELS_MAX * 3]
        self.labelled_entities = self._place(self.entity_labels, {n: n for n in names}, self.entity_pos, taken,
                                             (0.5, -0.55), 8, limit=LABELS_MAX, spots=spots, soft=diamonds,
                                             must=set(names[:ENTITY_LABELS_ALWAYS]) if self.dense else None,
                                             fill=self._label_fill)

    def _place(self, pool: dict, texts: dict, positions: dict, taken: list[QRectF], anchor, z: float,
               limit: int | None = None, fill=None, other_anchor=None, spots: dict | None = None,
               soft: dict | None = None, must: set | None = None, font=None) -> set:
        """Show ``pool``'s labels for ``texts`` (in order) where they overlap nothing in
        ``taken`` and no ``soft`` mark but their own (at ``positions`` with ``anchor``, else
        ``other_anchor``, or at the first free of their ``spots``: (x, y, anchor) each);
        one in ``must`` may cover a soft mark when nothing else is free. Hide the others.
        Returns the keys shown."""
        view = self.plot.viewport().rect()
        shown = set()
        for key, text in texts.items():
            if limit is not None and len(shown) >= limit:
                break
            label = pool.get(key)
            if label is None:
                label = pool[key] = pg.TextItem(text, color=self.colours["label"], anchor=anchor, fill=fill)
                if font is not None:
                    label.setFont(font)
                label.setZValue(z)
                label.hide()
                self.plot.addItem(label)
            elif label.textItem.toPlainText() != text:
                label.setText(text)
            if spots is not None:
                candidates = spots[key]
            else:
                x, y = positions[key]
                candidates = [(x, y, at) for at in ((anchor, other_anchor) if other_anchor else (anchor,))]
            mine = soft.get(key) if soft else None
            others = [r for r in soft.values() if r is not mine] if soft else []
            chosen = None
            for avoid in (others, []) if must and key in must else (others,):
                for x, y, at in candidates:
                    rect = self._label_rect(label, x, y, at)
                    if view.contains(rect.toRect()) and not any(rect.intersects(r) for r in taken) \
                            and not any(rect.intersects(r) for r in avoid):
                        chosen = (x, y, at, rect)
                        break
                if chosen:
                    break
            if chosen is None:
                continue
            x, y, at, rect = chosen
            taken.append(rect)
            shown.add(key)
            label.setAnchor(at)
            label.setPos(x, y)
            label.show()
        for key, label in pool.items():
            if key not in shown:
                label.hide()
        return shown

    def _label_rect(self, label: pg.TextItem, x: float, y: float, anchor) -> QRectF:
        """Where ``label`` is drawn at (x, y) with ``anchor``, in the plot's pixels, with a
        margin: worked out from the view, not from the label, which settles when painted."""
        at = self.plot.mapFromScene(self.plot.getViewBox().mapViewToScene(QPointF(x, y)))
        size = label.textItem.boundingRect().size()  # in pixels: labels do not scale with the view
        return QRectF(at.x() - size.width() * anchor[0], at.y() - size.height() * anchor[1],
                      size.width(), size.height()).adjusted(-2, -2, 2, 2)

    def _place_view_buttons(self) -> None:
        self.view_buttons.adjustSize()
        self.view_buttons.move(self.plot.viewport().width() - self.view_buttons.width() - 6, 6)

    def fit_view(self) -> None:
        """Show everything drawn (the shown dots, the entities and their labels' room),
        as large as the pane allows."""
        xs, ys = self._visible_xy
        ex = [p[0] for p in getattr(self, "entity_pos", {}).values()]
        ey = [p[1] for p in getattr(self, "entity_pos", {}).values()]
        if not len(xs) and not ex:
            x0 = y0 = -VIEW_RADIUS
            x1 = y1 = VIEW_RADIUS
        else:
            allx, ally = np.concatenate([xs, ex]), np.concatenate([ys, ey])
            x0, x1, y0, y1 = allx.min(), allx.max(), ally.min(), ally.max()
            margin = 0.35  # an entity's label hangs under its diamond; a ring label sits on its ring
            x0, x1, y0, y1 = x0 - margin, x1 + margin, y0 - margin, y1 + margin
        self.plot.getViewBox().setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0.02)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.plot.viewport() and event.type() == QEvent.Type.Resize:
            self._place_view_buttons()
        if watched is self.plot.viewport() and event.type() == QEvent.Type.ToolTip:
            # Qt asks for a tooltip once the pointer rests; the scene's answer (no item of
            # its own has one) would hide ours: answer with the dot or diamond under it.
            text = self._tooltip_at(event.pos())
            if text:
                QToolTip.showText(event.globalPos(), text, self.plot)
            else:
                QToolTip.hideText()
            return True
        if watched is self.plot.viewport() and event.type() == QEvent.Type.MouseButtonDblClick \
                and event.button() == Qt.MouseButton.LeftButton:
            scene_pos = self.plot.mapToScene(event.position().toPoint())
            if not len(self.scatter.pointsAt(self.scatter.mapFromScene(scene_pos))):
                self.fit_view()
                return True
        return super().eventFilter(watched, event)

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

    def _draw_hits(self, pos=None) -> None:
        """The search's hits shown, the best biggest."""
        pos = pos or self._positions
        shown = [mid for mid in self.search_hits if mid in self.search_matches]
        sizes = [26.0 - 8.0 * rank / max(len(shown) - 1, 1) for rank in range(len(shown))]
        xs, ys = [pos[m][0] for m in shown], [pos[m][1] for m in shown]
        self.hit_shadow.setData(xs, ys, size=sizes)
        self.hit_marks.setData(xs, ys, size=sizes, data=shown)

    def _draw_selection(self, pos=None) -> None:
        """Ring the selected memory and draw its lines to its entities' diamonds."""
        pos = pos or self._positions
        mid = self.session.selected_id
        i = self.dot_index.get(mid) if mid else None
        if i is not None and i < len(self._mask) and self._mask[i]:
            x, y = pos[mid]
            self.selection_ring.setData([x], [y])
            ends = [self.entity_pos[name] for name in self.dots[i].entities if name in getattr(self, "entity_pos", {})]
            self.link_curve.setData(np.array([v for e in ends for v in (x, e[0])], dtype=float),
                                    np.array([v for e in ends for v in (y, e[1])], dtype=float))
        else:
            self.selection_ring.setData([], [])
            self.link_curve.setData([], [])

    # -- colour groups ------------------------------------------------------------------
    def colour_codes(self) -> np.ndarray:
        """Each dot's colour, as an index into ``palette``: its kind's, or its colour
        group's (the first that finds it)."""
        groups = (tuple(self.group_queries), tuple(id(h) for h in self.group_hits))
        if self._codes is None or self._codes[0] is not self.data or self._codes[1] != groups:
            codes = self.data.kinds.astype(np.int64).copy()
            for g in reversed(range(len(self.group_queries))):
                found = self.group_mask(g)
                if found is not None:
                    codes[found] = len(KINDS) + g
            self._codes = (self.data, groups, codes)
        return self._codes[2]

    def group_mask(self, g: int) -> np.ndarray | None:
        """The dots colour group ``g`` finds (None: an empty row, or its search not back)."""
        query = self.group_queries[g]
        if not query:
            return None
        mask = field_matches(self.data, query)
        if mask is not None:
            return mask
        hits = self.group_hits[g]
        if hits is None:
            return None
        index = self.data.index
        mask = np.zeros(len(self.data.ids), dtype=bool)
        mask[[index[mid] for mid in hits if mid in index]] = True
        return mask

    def open_colour_groups(self):
        from .colour_groups import ColourGroupsDialog

        if self.colour_dialog is None:
            self.colour_dialog = ColourGroupsDialog(self.group_queries, self)
            self.colour_dialog.applied.connect(self.set_colour_groups)
        self.colour_dialog.show()
        self.colour_dialog.raise_()
        return self.colour_dialog

    def set_colour_groups(self, queries: list[str]) -> None:
        """Colour what each query finds (see colour_groups); a query by meaning is searched
        for off the GUI thread, as the search box's is."""
        from ..background import Job

        queries = [q.strip() for q in queries][:GROUPS_MAX]
        while queries and not queries[-1]:
            queries.pop()
        for job in self._group_jobs.values():
            job.cancel()
        self._group_jobs = {}
        self.group_queries = queries
        self.group_hits = [None] * len(queries)
        store = self.session.store
        for g, query in enumerate(queries):
            if not query or field_matches(self.data, query) is not None or store is None:
                continue

            def search(worker, query=query):
                hits = worker.recall(query, k=GROUP_K, scope=worker.scopes(), trust=None)
                return standing_out({h.id: h.relevance for h in hits})

            job = Job(store, "Colouring", search, writes=False, share_embedder=True, parent=self)
            job.finished.connect(lambda found, _read, g=g, j=job: self._group_found(g, j, found))
            self._group_jobs[g] = job
            job.start()
        self._shown = None
        self.redraw()

    def _group_found(self, g: int, job, found: list[str]) -> None:
        if self._group_jobs.get(g) is not job:
            return
        del self._group_jobs[g]
        self.group_hits[g] = set(found)
        self._shown = None
        self.redraw()

    def _show_groups_legend(self) -> None:
        if not self.group_queries:
            self.groups_legend.hide()
            return
        where = self._visible_index
        codes = self.colour_codes()[where]
        parts = []
        for g, query in enumerate(self.group_queries):
            if not query:
                continue
            searching = g in self._group_jobs
            n = "…" if searching else f"{int((codes == len(KINDS) + g).sum()):,}"
            parts.append(f"<span style='color:{GROUP_COLOURS[g]}'>●</span> {html.escape(query)} {n}")
        self.groups_legend.setText(" &nbsp;".join(parts))
        self.groups_legend.setVisible(bool(parts))

    # -- the neighbourhood of the selected memory ----------------------------------------
    def set_local(self, on: bool) -> None:
        """Show the selected memory's neighbourhood (on) or the whole map (off)."""
        if self.local_action.isChecked() != on:
            self.local_action.setChecked(on)  # calls back here
            return
        self.local_button.setText("Neighbourhood")
        self.views.setCurrentWidget(self.local if on else self.plot)
        self._show_local()
        self._update_detail()
        self._update_caption(len(self._visible_index))

    def _depth_changed(self, depth: int) -> None:
        self.local.set_depth(depth)
        self._show_local()

    def _show_local(self, keep_places: bool = False) -> None:
        if not self.local_button.isChecked():
            return
        self.local.set_hits(self.search_matches)
        self.local.show_of(self.session.selected_id, self.data, set(self.visible_ids), self._references(),
                           keep_places=keep_places)
        self._update_caption(len(self._visible_index))

    def _references(self) -> dict[str, list[str]]:
        """Each memory's references, both ways (worked out once per read of the memories)."""
        memories = self.session.memories()
        if getattr(self, "_references_of", (None,))[0] is not memories:
            both: dict[str, list[str]] = {}
            for m in memories:
                for other in m.references:
                    both.setdefault(m.id, []).append(other)
                    both.setdefault(other, []).append(m.id)
            self._references_of = (memories, both)
        return self._references_of[1]

    def _update_caption(self, visible: int) -> None:
        if self.local_button.isChecked():
            self.caption.setText(self.local.caption())
            return
        per_layer = np.bincount(self.data.layers, minlength=len(LAYERS)) if len(self.dots) else [0] * len(LAYERS)
        counts = {layer: int(per_layer[i]) for i, layer in enumerate(LAYERS)}
        text = f"{visible} of {len(self.dots)} memories shown · " + " · ".join(
            f"{k} {v}" for k, v in counts.items())
        days = self.session.preview_days
        if days:
            text = f"Previewing {days:g} days ahead (nothing is written) · " + text
        # what a search found first: the caption is cut at its end in a narrow window
        if self._search_job is not None or (self.search_text and self.search_text != self.searched):
            text = f"Searching “{self.search_text}”… · " + text
        elif self.searched:
            hidden = len(standing_out(self.search_hits)) - len(self.search_matches)
            text = (f"{len(self.search_matches)} found by meaning for “{self.searched}”"
                    + (f" ({hidden} more hidden by the filters)" if hidden else "") + " · " + text)
        if self.by_meaning:
            text += " · arranged by meaning" + (f" ({self.unembedded} without a vector, by topic)"
                                                if self.unembedded else "")
        self.caption.setText(text)

    def _animate(self) -> None:
        self._anim_step += 1
        t = min(1.0, self._anim_step / ANIMATION_STEPS)
        t = 1 - (1 - t) ** 3  # ease out
        xs, ys = self._x.copy(), self._y.copy()
        for mid, (x0, y0) in self._anim_from.items():
            i = self.dot_index.get(mid)
            if i is not None:
                xs[i] = x0 + (xs[i] - x0) * t
                ys[i] = y0 + (ys[i] - y0) * t
        self.redraw((xs, ys))
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
        """Search for ``text`` once typing pauses (at once when cleared)."""
        self.search_text = text.strip()
        if not self.search_text:
            self._search_timer.stop()
            self._show_hits("", [])
            return
        self._search_timer.start()
        self._update_caption(len(self._visible_index))

    def _run_search(self) -> None:
        """Recall for the search box's text off the GUI thread (the model and, at 100,000
        memories, the vectors load there the first time), as the owner, over every scope;
        a newer query replaces one still running."""
        from ..background import Job

        store, query = self.session.store, self.search_text
        if store is None or not query:
            return
        if self._search_job is not None:
            self._search_job.cancel()
        held = store.held_vectors  # the vectors the window's store holds: read, not read again

        def search(worker):
            worker.held_vectors = held
            hits = worker.recall(query, k=SEARCH_K, scope=worker.scopes(), trust=None)
            return [(h.id, h.relevance) for h in hits], worker.held_vectors

        job = Job(store, "Searching", search, writes=False, share_embedder=True, parent=self)
        job.finished.connect(lambda found, _read, j=job: self._search_done(j, query, found))
        job.failed.connect(lambda exc, j=job: self._search_done(j, query, None, exc))
        self._search_job = job
        job.start()
        self._update_caption(len(self._visible_index))

    def _search_done(self, job, query: str, found, error: Exception | None = None) -> None:
        if job is not self._search_job:
            return  # another query was asked for meanwhile
        self._search_job = None
        if found is None:
            from ..background import Cancelled

            if not isinstance(error, Cancelled):
                self.caption.setText(f"The search failed: {error}")
            return
        hits, held = found
        store = self.session.store
        if store is not None and held is not None and store.held_vectors is None:
            store.held_vectors = held  # the next search (and the preview's recall) need not read them
        self._show_hits(query, hits)

    def _show_hits(self, query: str, hits: list[tuple[str, float]]) -> None:
        self.searched = query
        self.search_hits = dict(hits)
        self.redraw()

    def select_best_hit(self) -> None:
        """Enter in the search box: select the best hit shown."""
        best = next((mid for mid in self.search_hits if mid in self.search_matches), None)
        if best is not None:
            self.session.select(best)

    def _scope_changed(self, _index: int) -> None:
        self.scope_filter = self.scope_box.currentData()
        self.redraw()

    def set_rotation(self, radians: float) -> None:
        self.rotation = radians % (2 * math.pi)
        self._rotate()
        self.redraw()

    # -- interaction -----------------------------------------------------------------
    def _clicked(self, _item, points, _ev=None) -> None:
        if len(points):
            self.session.select(points[0].data())

    def tooltip_for(self, memory_id: str) -> str:
        i = self.dot_index[memory_id]
        d = self.dots[i]
        excerpt = d.text if len(d.text) <= 160 else d.text[:159] + "…"
        entities = ", ".join(d.entities) or "none"
        # the day shown's layer and strength (a previewed day shares the dots of another)
        layer, strength = LAYERS[int(self.data.layers[i])], float(self.data.strengths[i])
        return (f"{excerpt}\n\n{d.kind} · {layer} · strength {strength:.2f} · importance {d.importance:.2f}\n"
                f"recalls {d.recalls} · scope {d.scope}\nentities: {entities}")

    def _tooltip_at(self, pos) -> str:
        """The tooltip of what is drawn at ``pos`` (the plot viewport's pixels): a memory's
        dot, else an entity's diamond, else nothing."""
        scene_pos = self.plot.mapToScene(pos)
        if self.scatter.isVisible():
            points = self.scatter.pointsAt(self.scatter.mapFromScene(scene_pos))
            if len(points) and points[0].data() in self.dot_index:
                return self.tooltip_for(points[0].data())
        points = self.entity_scatter.pointsAt(self.entity_scatter.mapFromScene(scene_pos))
        if len(points):
            return self.entity_tooltip(points[0].data())
        return ""

    def entity_tooltip(self, name: str) -> str:
        return f"{name}: mentioned in {len(self.entity_members.get(name, []))} memories"

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
            QToolTip.showText(self._global_pos(ev), self.entity_tooltip(name), self.plot)

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
        shown = set(self.visible_ids) if self.call_ids or self.arrivals else set()
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


def _bin(values: np.ndarray, bins: int, low: float, high: float) -> np.ndarray:
    """Each value's bin among ``bins`` equal ones from ``low`` to ``high`` (all inside),
    as numpy's histogram puts it: by arithmetic, then set right against the bin edges the
    way it rounds them; the last edge belongs to the last bin."""
    edges = np.linspace(low, high, bins + 1)
    index = ((values - low) * (bins / (high - low))).astype(np.intp)
    np.clip(index, 0, bins - 1, out=index)
    index -= values < edges[index]
    index += (values >= edges[index + 1]) & (index != bins - 1)
    return index


def cell_index(xs: np.ndarray, ys: np.ndarray, bins: tuple[int, int], ranges) -> np.ndarray:
    """Each point's cell among ``bins`` equal ones over ``ranges`` (row-major, x first), as
    ``np.histogram2d(xs, ys, bins, range=ranges)`` counts them for points all inside the
    ranges, without its binary search of every point among the edges."""
    (x0, x1), (y0, y1) = ranges
    nx, ny = bins
    return _bin(xs, nx, x0, x1) * ny + _bin(ys, ny, y0, y1)


def standing_out(hits: dict[str, float]) -> list[str]:
    """The hits a search lights, best first: those whose relevance stands out, at least a
    quarter of the best one's (a recall ranks every time, and past its real finds the
    relevance drops tenfold), the best three whatever it is."""
    best = max(hits.values(), default=0.0)
    return [mid for rank, (mid, relevance) in enumerate(hits.items())
            if rank < SEARCH_ALWAYS or relevance >= SEARCH_SHARE * best]


class DensityLegend(QLabel):
    """What the cells of a crowded map mean, under it."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("density_legend")
        self.most = 1
        self.setToolTip("Too many memories in view to draw each: every cell is drawn in its memories' commonest "
                        "kind, as opaque as they are strong on average. Zoom in to see dots.")
        self._show()

    def set_text_colour(self, colour: str) -> None:
        self.setStyleSheet(f"color: {colour};")

    def set_range(self, most: int) -> None:
        if most != self.most:
            self.most = most
            self._show()

    def _show(self) -> None:
        self.setText(f"cells of up to {self.most:,} · commonest kind · zoom in for dots")


__all__ = ["RadialMap", "Dot"]

