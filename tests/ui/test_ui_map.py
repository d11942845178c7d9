"""The memory map, driven like a person would: dots, entities, labels, search, zoom, a crowded store."""


import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from PySide6.QtCore import QStandardPaths, Qt  # noqa: E402
from support.helpers import resize, settle  # noqa: E402

QStandardPaths.setTestModeEnabled(True)

# every test here keeps its Qt settings in its own temporary folder
pytestmark = pytest.mark.usefixtures("qt_settings")


def test_window_shows_one_dot_per_visible_memory(window):
    store = window.session.store
    not_archived = [m.id for m in store.list() if m.layer != "archived"]
    assert sorted(window.map.visible_ids) == sorted(not_archived)
    assert len(window.map.scatter.data) == len(not_archived)
    assert "archived 4" in window.map.caption.text() or "archived" in window.map.caption.text()
    assert window.table.model.rowCount() == store.count()
    entities_shown = set(window.map.entity_names)
    assert "Mara" in entities_shown and "Lighthouse" in entities_shown


def test_clicking_a_dot_selects_the_row_and_fills_the_editor(window, qtbot):
    target = "mem-011"
    pos = window.map.screen_pos_of(target)
    qtbot.mouseClick(window.map.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.waitUntil(lambda: window.session.selected_id is not None)
    selected = window.session.selected_id
    memory = window.session.store.get(selected)
    assert window.editor.text.toPlainText() == memory.text
    rows = window.table.view.selectionModel().selectedRows()
    assert len(rows) == 1 and window.table.proxy.data(rows[0], Qt.ItemDataRole.UserRole + 2) == selected
    # and the other way round: picking a row selects the dot
    index = window.table.proxy.index(3, 0)
    window.table.view.setCurrentIndex(index)
    row_id = window.table.proxy.data(index, Qt.ItemDataRole.UserRole + 2)
    assert window.session.selected_id == row_id
    assert window.map.selection_ring.data["x"].size == (1 if row_id in window.map.visible_ids else 0)


def test_legend_click_hides_a_kind(window, qtbot):
    events = [m.id for m in window.session.store.list(kind="event") if m.layer != "archived"]
    assert set(events) <= set(window.map.visible_ids)
    qtbot.mouseClick(window.map.legend_buttons["event"], Qt.MouseButton.LeftButton)
    assert not set(events) & set(window.map.visible_ids)
    qtbot.mouseClick(window.map.legend_buttons["event"], Qt.MouseButton.LeftButton)
    assert set(events) <= set(window.map.visible_ids)


def _search(window, qtbot, text):
    m = window.map
    m.search_box.clear()
    qtbot.keyClicks(m.search_box, text)
    qtbot.waitUntil(lambda: m.searched == text.strip(), timeout=20000)
    return m


def test_the_map_search_finds_by_meaning_and_lights_the_hits(window, qtbot):
    """Issue 34: the map's search was a substring filter. It finds what a memory means,
    as recall does (words and meaning), off the GUI thread, and lights the hits."""
    from mnemoscope.ui.panes.memory_map import SEARCH_K

    store = window.session.store
    query = "what food would make Mara ill"
    m = _search(window, qtbot, query)
    hits = store.recall(query, k=SEARCH_K, scope=store.scopes(), trust=None)
    assert list(m.search_hits) == [h.id for h in hits]
    allergy = next(x.id for x in store.list() if "allergic to peanuts" in x.text)
    assert allergy in m.search_matches  # found by what it means: no word of the query in it
    # the hits that stand out are lit, not every one of the 40 recall ranks
    best = hits[0].relevance
    lit = [h.id for i, h in enumerate(hits) if i < 3 or h.relevance >= 0.25 * best]
    assert m.search_matches == set(lit) & set(m.visible_ids) and len(lit) < len(hits) // 2
    expected = lit
    assert "found by meaning" in m.caption.text()
    # the hits are drawn over everything else, the best biggest
    xs, _ys = m.hit_marks.getData()
    assert len(xs) == len(m.search_matches)
    # Enter picks the best hit shown
    qtbot.keyClick(m.search_box, Qt.Key.Key_Return)
    assert window.session.selected_id == next(h for h in expected if h in m.search_matches)


def test_a_name_typed_in_the_map_search_finds_its_memories(window, qtbot):
    m = _search(window, qtbot, "Lighthouse")
    store = window.session.store
    mentions = {x.id for x in store.list() if x.layer != "archived" and "Lighthouse" in x.entities}
    assert mentions and mentions <= m.search_matches | (mentions - set(m.visible_ids))
    m.search_box.clear()
    qtbot.waitUntil(lambda: not m.search_matches)
    xs, _ys = m.hit_marks.getData()
    assert xs is None or len(xs) == 0
    assert "found by meaning" not in m.caption.text()


def test_hovering_an_entity_highlights_its_lines(window):
    window.map.highlight_entity("Theo")
    xs, _ = window.map.highlight_curve.getData()
    theo = [m for m in window.session.store.list() if "Theo" in m.entities and m.layer != "archived"]
    assert len(xs) == 2 * len(theo)


def test_tooltip_describes_the_memory(window):
    tip = window.map.tooltip_for("mem-006")
    for part in ("peanuts", "fact", "strength", "importance", "recalls", "scope", "entities: Mara"):
        assert part in tip


def test_ctrl_f_goes_to_the_map_search(window, qtbot):
    window.activateWindow()
    qtbot.keyClick(window.table.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.map.search_box.hasFocus()


def view_radius(window):
    (x0, x1), (y0, y1) = window.map.plot.getViewBox().viewRange()
    return min(x1 - x0, y1 - y0) / 2


def test_fit_view_brings_the_whole_map_back(window, qtbot):
    vb = window.map.plot.getViewBox()
    full = view_radius(window)
    for way_home in ("key", "button", "double-click"):
        vb.scaleBy((0.2, 0.2))
        vb.translateBy(x=2.0, y=1.0)
        assert view_radius(window) < full / 2
        if way_home == "key":
            window.activateWindow()
            window.map.plot.setFocus()
            qtbot.keyClick(window.map.plot, Qt.Key.Key_Home)
        elif way_home == "button":
            qtbot.mouseClick(window.map.fit_button, Qt.MouseButton.LeftButton)
        else:
            corner = window.map.plot.viewport().rect().topLeft() + window.map.plot.viewport().rect().center() / 8
            qtbot.mouseDClick(window.map.plot.viewport(), Qt.MouseButton.LeftButton, pos=corner)
        assert abs(view_radius(window) - full) < 0.2, way_home


def test_ring_labels_are_drawn_above_the_dots(window, qtbot):
    resize(qtbot, window, 1920, 1050)  # room for all three; a smaller map drops the one that would overlap
    for label in window.map.ring_labels.values():
        assert label.zValue() > window.map.scatter.zValue() and label.isVisible()


def test_entity_labels_never_overlap_and_the_most_mentioned_come_first(window, qtbot):
    m = window.map
    settle(qtbot, window)  # the docks take their sizes, and the labels their places in them
    m.plot.grab()  # as painted: a label settles its anchor when drawn
    labels = [m.entity_labels[n] for n in m.labelled_entities]
    rects = [label.sceneBoundingRect() for label in labels] + \
        [label.sceneBoundingRect() for label in m.ring_labels.values() if label.isVisible()]
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert not a.intersects(b)
    most = max(m.entity_weight, key=m.entity_weight.get)
    assert most in m.labelled_entities
    unlabelled = set(m.entity_pos) - m.labelled_entities
    assert all(not m.entity_labels[n].isVisible() for n in unlabelled if n in m.entity_labels)
    from PySide6.QtCore import QPointF

    centres = {n: m.plot.getViewBox().mapViewToScene(QPointF(*p)) for n, p in m.entity_pos.items()}
    for name in m.labelled_entities:  # no label hides a diamond, its own or another's
        rect = m.entity_labels[name].sceneBoundingRect()
        assert not any(rect.contains(c) for c in centres.values()), (name, [n for n, c in centres.items() if rect.contains(c)], m.entity_labels[name].anchor)


def test_adding_a_memory_moves_other_entities_a_little_at_most(window, demo_db, qtbot):
    import math

    before = dict(window.map.entity_pos)
    with MemoryStore(demo_db) as agent:
        agent.remember("Zoe started a pottery class.", kind="event", topic="pottery", entities=["Zoe"])
    qtbot.waitUntil(lambda: "Zoe" in window.map.entity_pos, timeout=3000)
    qtbot.waitUntil(lambda: not window.map._anim_timer.isActive(), timeout=3000)
    after = window.map.entity_pos

    def angle(p):
        return math.atan2(p[1], p[0])

    zoe = angle(after["Zoe"])

    def beside(n):  # the newcomer's id picks its place: it may land right beside another one
        return abs((angle(before[n]) - zoe + math.pi) % (2 * math.pi) - math.pi) < 0.5

    # The sectors are sized by what they hold: one memory more among n moves the others
    # round by at most a 1/n turn; one beside it moves over to make room, by no more than
    # a few diamonds' width.
    from mnemoscope.ui.panes.memory_map import ENTITY_GAP

    share = 2 * math.pi / len(window.map.dots)
    for n in before:
        moved = abs((angle(after[n]) - angle(before[n]) + math.pi) % (2 * math.pi) - math.pi)
        assert moved <= share + (3 * ENTITY_GAP if beside(n) else 0.02), (n, moved)


def test_map_tooltips_are_ours_not_pyqtgraphs(window, qtbot):
    m = window.map
    settle(qtbot, window)  # the docks take their sizes: the map's pixels move until then
    assert m.scatter.opts["tip"] is None and m.entity_scatter.opts["tip"] is None
    x, y = m.entity_pos["Mara"]
    from PySide6.QtCore import QPointF

    at = m.plot.mapFromScene(m.plot.getViewBox().mapViewToScene(QPointF(x, y)))
    qtbot.mouseMove(m.plot.viewport(), at)
    qtbot.waitUntil(lambda: m.hover_entity == "Mara")  # its lines light up, our tooltip is shown
    assert "data=" not in m.entity_scatter.toolTip() and "x:" not in m.entity_scatter.toolTip()


@pytest.fixture
def crowded_window(qtbot, qt_settings, tmp_path):
    """The window on 4,000 memories in 8 topics, more than the map draws as dots."""
    import json

    from mnemoscope.ui.main_window import MainWindow

    path = str(tmp_path / "crowded.db")
    lines = [json.dumps({"id": f"c{i:05d}", "text": f"note {i} about topic {i % 8}", "kind": "fact",
                         "topic": f"t{i % 8}", "importance": 0.5, "recall_count": 6}) for i in range(4000)]
    with MemoryStore(path) as s:
        s.import_jsonl("\n".join(lines))
    w = MainWindow(MemoryStore(path))
    w.resize(1366, 738)
    w.show()
    qtbot.waitExposed(w)
    settle(qtbot, w)  # the docks take their first sizes
    yield w
    w.close()
    w.session.close()
    w.deleteLater()


def test_a_crowded_map_shows_labelled_density_that_resolves_into_dots(crowded_window):
    m = crowded_window.map
    assert m.dense and m.density.isVisible() and not m.scatter.isVisible()
    texts = [m.sector_labels[c].textItem.toPlainText() for c in m.labelled_sectors]
    assert texts and all(" · " in t for t in texts)
    assert sum(m.sector_totals.values()) == 4000
    for group in m.labelled_sectors:  # one label per sector, counting all its rings
        assert f"{group.split(':', 1)[1]} · {m.sector_totals[group]:,}" in texts
    m.plot.getViewBox().setRange(xRange=(0.2, 0.8), yRange=(0.2, 0.8), padding=0)
    assert not m.dense and m.scatter.isVisible() and not m.density.isVisible()
    m.fit_view()
    assert m.dense


def test_the_demo_map_uses_the_disc(window, qtbot):
    """Issue 34: the demo's memories were a small cluster in the middle quarter."""
    import math

    from mnemoscope.map_layout import ring_outer
    from support.helpers import settle

    settle(qtbot, window)
    m = window.map
    xs, ys = m._visible_xy
    radii = sorted(math.hypot(x, y) for x, y in zip(xs, ys))
    outer = ring_outer("edge")
    assert radii[len(radii) // 2] >= 0.4 * outer  # half of them out beyond 40% of the disc
    assert radii[-1] >= 0.8 * outer
    angles = sorted(math.atan2(y, x) % (2 * math.pi) for x, y in zip(xs, ys))
    widest = max(b - a for a, b in zip(angles, [*angles[1:], angles[0] + 2 * math.pi]))
    assert widest < math.radians(35)  # all round, no empty half


def test_lines_join_an_entity_to_its_memories_only_when_hovered_or_selected(window, qtbot):
    """Issue 34: a fan of pale lines from every entity to every memory crossed the disc."""
    from support.helpers import settle

    settle(qtbot, window)
    m = window.map
    window.session.select(None)
    def drawn(curve):
        xs = curve.getData()[0]
        return 0 if xs is None else len(xs)

    assert drawn(m.link_curve) == 0 and drawn(m.highlight_curve) == 0
    picked = next(d for d in m.dots if len(d.entities) >= 2 and d.id in set(m.visible_ids))
    window.session.select(picked.id)
    ends = [e for e in picked.entities if e in m.entity_pos]
    assert drawn(m.link_curve) == 2 * len(ends) > 0
    m.highlight_entity("Mara")
    assert drawn(m.highlight_curve) > 0
    m.highlight_entity(None)
    assert drawn(m.highlight_curve) == 0


def test_every_sector_of_the_demo_is_labelled_once_with_what_it_shows(window, qtbot):
    from support.helpers import settle

    settle(qtbot, window)
    m = window.map
    texts = {m.sector_labels[k].textItem.toPlainText() for k in m.labelled_sectors}
    assert "work · " + str(m.sector_totals["topic:work"]) in texts
    assert len(texts) == len(m.labelled_sectors) >= 10


def test_the_neighbourhood_of_the_selected_memory_to_a_depth(window, qtbot):
    """Issue 34: a local graph (Obsidian's is the model): the selected memory, what shares
    an entity with it or references it, to depth 1-3, the links drawn; a click moves to
    another memory's neighbourhood."""
    from support.helpers import settle

    settle(qtbot, window)
    m = window.map
    store = window.session.store
    quill = next(x for x in store.list() if x.text.startswith("Quill is the name"))
    window.session.select(quill.id)
    window.map.local_action.trigger()
    assert m.views.currentWidget() is m.local and m.depth_box.isVisible()
    g = m.local.graph
    assert g.centre == quill.id and g.memories[0] == quill.id
    for mid in g.memories[1:]:
        assert set(store.get(mid).entities) & set(quill.entities) or quill.id in store.get(mid).references
    assert set(quill.entities) <= set(g.entities)
    drawn = [curve.getData()[0] for curve in (m.local.mentions, m.local.hub_links)]
    assert sum(0 if xs is None else len(xs) for xs in drawn) == 2 * len(g.mentions) > 0  # every link drawn
    assert "neighbouring memories" in m.caption.text()
    one = len(g.memories)
    m.depth_box.setValue(2)
    assert len(m.local.graph.memories) > one and max(m.local.graph.depth_of.values()) == 2
    # a click on a neighbour: its neighbourhood
    other = m.local.graph.memories[1]
    qtbot.mouseClick(m.local.plot.viewport(), Qt.MouseButton.LeftButton, pos=m.local.node_at(1))
    assert window.session.selected_id == other and m.local.graph.centre == other
    window.map.local_action.trigger()
    assert m.views.currentWidget() is m.plot and not m.depth_box.isVisible()


def test_a_neighbourhood_node_can_be_dragged_and_stays(window, qtbot):
    from PySide6.QtCore import QPoint
    from support.helpers import settle

    settle(qtbot, window)
    m = window.map
    mara = next(x for x in window.session.store.list() if "Mara" in x.entities and len(x.entities) >= 2)
    window.session.select(mara.id)
    m.set_local(True)
    settle(qtbot, window)
    local = m.local
    node = 2
    start = local.node_at(node)
    end = start + QPoint(60, 45)
    viewport = local.plot.viewport()
    qtbot.mousePress(viewport, Qt.MouseButton.LeftButton, pos=start)
    for step in range(1, 6):
        qtbot.mouseMove(viewport, start + (end - start) * step / 5)
        qtbot.wait(10)
    qtbot.mouseRelease(viewport, Qt.MouseButton.LeftButton, pos=end)
    settle(qtbot, window)
    at = local.node_at(node)
    assert abs(at.x() - end.x()) <= 3 and abs(at.y() - end.y()) <= 3  # where it was let go
    assert node in local.pinned
    assert window.session.selected_id == mara.id  # a drag is not a click


def test_colour_groups_colour_what_each_query_finds(window, qtbot):
    """Issue 34: colour groups by query (Obsidian's graph has them): a field names every
    memory that has it; words are looked for by meaning; the first group wins."""
    from mnemoscope.store import KINDS
    from mnemoscope.ui.panes.colour_groups import GROUP_COLOURS
    from support.helpers import settle

    settle(qtbot, window)
    m = window.map
    store = window.session.store
    dialog = m.open_colour_groups()
    dialog.edits[0].setText("topic:work")
    dialog.edits[1].setText("entity:lighthouse")
    dialog.edits[2].setText("food Mara cannot eat")
    dialog.apply()
    qtbot.waitUntil(lambda: m.group_hits[2] is not None, timeout=20000)
    codes = m.colour_codes()
    memories = {x.id: x for x in store.list()}
    for mid, i in m.dot_index.items():
        x = memories[mid]
        if x.topic == "work":
            assert codes[i] == len(KINDS)
        elif "Lighthouse" in x.entities:
            assert codes[i] == len(KINDS) + 1
    allergy = next(x.id for x in memories.values() if "allergic to peanuts" in x.text)
    assert codes[m.dot_index[allergy]] == len(KINDS) + 2
    # the dots are drawn so, and the legend says how many each group colours
    brush = {p.data(): p.brush().color().name() for p in m.scatter.points()}
    assert brush[allergy] == GROUP_COLOURS[2].lower()
    assert "topic:work" in m.groups_legend.text() and m.groups_legend.isVisible()
    # the neighbourhood takes the same colours
    window.session.select(allergy)
    m.set_local(True)
    assert m.local.nodes.points()[0].brush().color().name() == GROUP_COLOURS[2].lower()
    m.set_local(False)
    dialog.clear()
    assert m.group_queries == [] and not m.groups_legend.isVisible()
    assert (m.colour_codes() == m.data.kinds).all()
    dialog.close()
