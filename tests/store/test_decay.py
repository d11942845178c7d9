import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mnemoscope.store import MemoryStore, StoreError
from mnemoscope.store.forgetting.decay import DAY
from mnemoscope.store.schema.migrations import SCHEMA_VERSION

T0 = 1_790_000_000.0


def at(days):
    return T0 + days * DAY


def test_half_lives_by_kind(store):
    ids = {k: store.remember(f"a {k} memory", kind=k, now=T0).memory.id
           for k in ("fact", "lesson", "skill", "reflection", "event")}
    proj = store.project(at(21))
    assert proj[ids["event"]][0] == pytest.approx(0.5)
    assert store.project(at(60))[ids["reflection"]][0] == pytest.approx(0.5)
    assert store.project(at(365))[ids["fact"]][0] == pytest.approx(0.5)


def test_layers_edge_archived_habit_and_pinned(store):
    event = store.remember("one-off event", kind="event", now=T0).memory.id
    pinned = store.remember("pinned event", kind="event", pinned=True, now=T0).memory.id
    habit = store.remember("a habit fact", kind="fact", now=T0).memory.id
    for d in range(5):
        store.reinforce(habit, now=at(d + 1))
    proj = store.project(at(60))
    assert proj[event][1] == "edge" and proj[pinned] == (1.0, "fading") and proj[habit][1] == "habit"
    proj = store.project(at(410))
    assert proj[event][1] == "archived" and proj[pinned][1] == "fading" and proj[habit][1] == "archived"


def test_recalls_lengthen_the_half_life(store):
    a = store.remember("recalled often", kind="event", now=T0).memory.id
    b = store.remember("never recalled", kind="event", now=T0).memory.id
    store.reinforce(a, now=T0)
    store.reinforce(a, now=T0)
    proj = store.project(at(30))
    assert proj[a][0] == pytest.approx(0.5 ** (30 / (21 * 2.5))) and proj[a][0] > proj[b][0] * 1.5


def test_tick_writes_logs_and_undoes(store):
    ids = [store.remember(f"event {i}", kind="event", now=T0).memory.id for i in range(3)]
    report = store.tick(now=at(60))
    assert report.counts == {"fading → edge": 3} and report.layer_counts["edge"] == 3
    assert all(store.get(i).layer == "edge" for i in ids)
    log = store.conn.execute("SELECT from_layer, to_layer FROM tick_log WHERE tick_id = ?",
                             (report.tick_id,)).fetchall()
    assert log == [("fading", "edge")] * 3
    store.undo_tick(report.tick_id)
    assert all(store.get(i).layer == "fading" and store.get(i).strength == pytest.approx(1.0) for i in ids)
    with pytest.raises(StoreError, match="already undone"):
        store.undo_tick(report.tick_id)


def test_advance_and_tick_moves_the_clock_and_undo_restores_it(store):
    store.remember("event", kind="event")
    report = store.tick(advance_days=400)
    assert store.clock_offset == pytest.approx(400 * DAY)
    assert report.counts == {"→ archived": 1} and report.summary() == "1 → archived"
    store.undo_tick(report.tick_id)
    assert store.clock_offset == 0
    with pytest.raises(StoreError):
        store.advance(-1)


def test_project_writes_nothing(store, db_path):
    store.remember("event", kind="event", now=T0)
    before = store.conn.execute("SELECT strength, layer, ticked_at FROM memory_rows").fetchall()
    store.project(at(300))
    assert store.conn.execute("SELECT strength, layer, ticked_at FROM memory_rows").fetchall() == before


@settings(max_examples=25, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["fact", "lesson", "skill", "reflection", "event"]), min_size=1, max_size=6),
    recalls=st.lists(st.integers(0, 8), min_size=6, max_size=6),
    ages=st.lists(st.floats(0, 500), min_size=6, max_size=6),
    days=st.integers(1, 30),
)
def test_ticking_hourly_equals_ticking_once(kinds, recalls, ages, days):
    hourly = MemoryStore(":memory:")
    once = MemoryStore(":memory:")
    for i, kind in enumerate(kinds):
        for s in (hourly, once):
            mid = s.remember(f"memory {i} {kind}", kind=kind, now=at(-ages[i]), dedupe=False,
                             memory_id=f"m{i}").memory.id
            for r in range(recalls[i]):
                s.reinforce(mid, now=at(-ages[i] + r * 0.1))
    for h in range(1, days * 24 + 1):
        hourly.tick(now=T0 + h * 3600)
    once.tick(now=at(days))
    a = sorted((m.id, m.strength, m.layer) for m in hourly.list())
    b = sorted((m.id, m.strength, m.layer) for m in once.list())
    assert [(i, layer) for i, _, layer in a] == [(i, layer) for i, _, layer in b]
    for (_, sa, _), (_, sb, _) in zip(a, b):
        assert sa == pytest.approx(sb, rel=1e-12)


def test_demo_populates_every_layer(demo_store):
    layers = demo_store.stats()["layers"]
    assert all(layers[name] > 0 for name in ("habit", "fading", "edge", "archived")), layers


def test_whole_store_projection_matches_the_single_memory_function(demo_store):
    from mnemoscope.store.forgetting.decay import state_at

    now = demo_store.now() + 200 * DAY
    projected = demo_store.project(now)
    rows = demo_store.tables.rows("SELECT id, kind, recall_count, half_life_days, pinned, base, ref_time FROM memories")
    for row in rows:
        s, layer = state_at(row, now, demo_store.config.decay)
        assert projected[row["id"]][1] == layer
        assert projected[row["id"]][0] == pytest.approx(s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    specs=st.lists(st.tuples(st.sampled_from(["fact", "lesson", "skill", "reflection", "event"]),
                             st.integers(0, 8), st.floats(0, 600), st.booleans()), min_size=1, max_size=8),
    steps=st.lists(st.floats(0.01, 200), min_size=1, max_size=8),
)
def test_a_tick_that_writes_only_what_changed_agrees_with_the_full_projection(specs, steps):
    """Each memory knows when its layer will next change, and a tick reads only those whose
    moment has come: after every tick (and every undo) the layers and strengths must be
    exactly what working out every memory from scratch gives."""
    store = MemoryStore(":memory:")
    for i, (kind, recalls, age, pinned) in enumerate(specs):
        mid = store.remember(f"memory {i}", kind=kind, pinned=pinned, now=at(-age), dedupe=False,
                             memory_id=f"m{i}").memory.id
        for r in range(recalls):
            store.reinforce(mid, now=at(-age + r * 0.5))
    day = 0.0
    reports = []
    for step in steps:
        day += step
        reports.append(store.tick(now=at(day)))
        projected = store.project(at(day))
        for m in store.list():
            assert m.layer == projected[m.id][1], (m.id, day)
            assert m.strength == pytest.approx(projected[m.id][0], rel=1e-9)
    store.undo_tick(reports[-1].tick_id)
    before = day - steps[-1]
    if len(reports) > 1:
        projected = store.project(at(before))
        assert all(m.layer == projected[m.id][1] for m in store.list())
    again = store.tick(now=at(day))
    assert again.counts == reports[-1].counts


def test_other_decay_numbers_make_the_next_tick_look_at_every_memory(db_path):
    from mnemoscope.store import StoreConfig

    with MemoryStore(db_path) as store:
        mid = store.remember("a yearly fact", kind="fact", now=T0).memory.id
        store.tick(now=at(100))
        assert store.get(mid).layer == "fading"
    short = StoreConfig.from_dict({"decay": {"half_life_days": {"fact": 10}}})
    with MemoryStore(db_path, config=short) as store:
        report = store.tick(now=at(101))
        assert store.get(mid).layer == "edge" and report.counts == {"fading → edge": 1}


def test_a_tick_writes_only_the_memories_whose_layer_changes(store):
    for i in range(300):
        store.remember(f"fact number {i} about the garden", kind="fact", now=T0, dedupe=False)
    store.remember("a one-off event", kind="event", now=T0)
    before = store.conn.total_changes
    report = store.tick(now=at(60))  # only the event reaches the edge
    assert report.counts == {"fading → edge": 1} and report.changed == 1
    assert store.conn.total_changes - before < 20  # the moved memory, its log, the tick; not 301 rows
    assert all(m.strength == pytest.approx(0.5 ** (60 / 365)) for m in store.list(kind="fact"))


def test_strength_filters_and_the_graph_read_the_strength_as_of_the_last_tick(store):
    fact = store.remember("a fact about the lake house", kind="fact", now=T0).memory.id
    store.tick(now=at(365))  # the fact stays fading: the tick does not write it
    assert store.get(fact).strength == pytest.approx(0.5)
    assert store.list(min_strength=0.6) == [] and [m.id for m in store.list(min_strength=0.4)] == [fact]
    assert store.graph().nodes[fact]["strength"] == pytest.approx(0.5)


def test_a_memory_restored_after_a_while_takes_part_in_later_ticks(store):
    mid = store.remember("a one-off event", kind="event", now=T0).memory.id
    deleted = store.delete(mid)
    deleted.row.pop("next_change_at")  # as an older version kept it
    store.tick(now=at(60))
    store.restore(deleted)
    assert store.get(mid).layer == "edge"  # worked out as of the last tick
    store.tick(now=at(401))
    assert store.get(mid).layer == "archived"


def test_a_tick_reports_and_logs_its_transitions_in_the_order_they_came_due(store):
    # Stored first, due last: a tick that walks the table by rowid must not reorder them.
    kinds = ("fact", "reflection", "event")  # half-lives 365, 60 and 21 days: due last, second, first
    ids = [store.remember(f"a {kind} memory", kind=kind, now=T0).memory.id for kind in kinds]
    report = store.tick(now=at(3 * 365))
    assert [t[0] for t in report.transitions] == ids[::-1]
    log = store.conn.execute("SELECT memory_id FROM tick_log WHERE tick_id = ? ORDER BY rowid",
                             (report.tick_id,)).fetchall()
    assert [r[0] for r in log] == ids[::-1]


def _indexes_with(conn, column):
    names = [r[1] for table in ("memories", "memory_state") for r in conn.execute(f"PRAGMA index_list({table})")]
    return sorted(n for n in names if column in [c[2] for c in conn.execute(f"PRAGMA index_info({n})")])


@pytest.mark.sqlite_only("reads SQLite's index list (PRAGMA index_list)")
def test_a_tick_keeps_one_index_up_to_date_per_column_it_changes(store):
    # Every index a tick's UPDATE touches is pages written for each moved memory.
    assert _indexes_with(store.conn, "layer") == ["idx_memory_state_layer"]
    assert _indexes_with(store.conn, "next_change_at") == ["idx_memory_state_next_change_at"]
    assert _indexes_with(store.conn, "scope") == ["idx_memories_scope_sensitivity"]


def _as_schema_8(db_path):
    """Turn a database back into schema version 8: the decay state on the memories rows,
    with the indexes version 8 had, and no record of the memory_state migration."""
    import sqlite3

    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("DROP VIEW memory_rows")
        for column, kind in (("strength", "FLOAT NOT NULL DEFAULT 0"), ("layer", "TEXT NOT NULL DEFAULT ''"),
                             ("ticked_at", "FLOAT"), ("next_change_at", "FLOAT")):
            conn.execute(f"ALTER TABLE memories ADD COLUMN {column} {kind}")
            conn.execute(f"UPDATE memories SET {column} = "
                         f"(SELECT {column} FROM memory_state s WHERE s.rowid = memories.rowid)")
        conn.execute("DROP TABLE memory_state")
        conn.execute('CREATE INDEX "idx_memories_layer_scope" ON "memories" ("layer", "scope")')
        conn.execute('CREATE INDEX "idx_memories_next_change_at" ON "memories" ("next_change_at")')
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm009_memory_state'")
        conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    conn.close()


@pytest.mark.sqlite_only("builds an older SQLite schema by hand")
def test_a_store_from_before_the_layer_index_change_is_upgraded_with_the_same_answers(db_path):
    import sqlite3

    with MemoryStore(db_path) as s:
        for i, (kind, scope) in enumerate([("event", "global"), ("fact", "group:a"), ("event", "private:b"),
                                           ("reflection", "group:a")]):
            s.remember(f"memory {i} of kind {kind}", kind=kind, scope=scope, now=T0)
        s.tick(now=at(60))
        before = (s.stats(), s.stats(scopes=["group:a", "global"]), [m.id for m in s.list(layer="edge")],
                  [m.id for m in s.list(scope="group:a", layer="fading")], s.scopes())
    _as_schema_8(db_path)
    conn = sqlite3.connect(db_path)
    with conn:  # the indexes as an older version made them, and no record of the migration
        conn.execute("DROP INDEX idx_memories_layer_scope")
        conn.execute("DROP INDEX IF EXISTS idx_memories_scope")
        conn.execute('CREATE INDEX "idx_memories_scope_layer" ON "memories" ("scope", "layer")')
        conn.execute('CREATE INDEX "idx_memories_layer" ON "memories" ("layer")')
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm008_one_layer_index'")
        conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.close()
    with MemoryStore(db_path) as s:
        assert _indexes_with(s.conn, "layer") == ["idx_memory_state_layer"]
        after = (s.stats(), s.stats(scopes=["group:a", "global"]), [m.id for m in s.list(layer="edge")],
                 [m.id for m in s.list(scope="group:a", layer="fading")], s.scopes())
    for a, b in zip(before, after):
        if isinstance(a, dict):
            a, b = ({k: v for k, v in d.items() if k != "now"} for d in (a, b))
        assert a == b
    assert before[0]["layers"]["edge"] == 2 and before[1]["layers"] == {"habit": 0, "fading": 2, "edge": 1,
                                                                         "archived": 0}


def _answers(s):
    """What a user reads of a store: counts, lists with strengths, projections, recall, export."""
    stats = [{k: v for k, v in d.items() if k not in ("now", "path")} for d in (s.stats(), s.stats(scopes=["group:a"]))]
    listed = [(m.id, m.layer, m.strength) for m in s.list()]
    by_layer = {layer: [m.id for m in s.list(layer=layer)] for layer in ("habit", "fading", "edge", "archived")}
    return (stats, listed, by_layer, s.project(now=at(400)), [h.id for h in s.recall("memory kind", k=10,
                                                                                    now=at(120))],
            s.export_jsonl())


@pytest.mark.sqlite_only("builds an older SQLite schema by hand")
def test_a_store_at_schema_8_is_upgraded_in_place_with_the_same_answers(db_path, tmp_path):
    import shutil

    with MemoryStore(db_path) as s:
        ids = [s.remember(f"memory {i} of kind {kind}", kind=kind, scope=scope, now=T0).memory.id
               for i, (kind, scope) in enumerate([("event", "global"), ("fact", "group:a"), ("event", "private:b"),
                                                  ("reflection", "group:a"), ("lesson", "global")])]
        s.tick(now=at(30))
        s.reinforce(ids[1], now=at(31))
        s.pin(ids[3], now=at(32))
        gone = s.delete(ids[4])
        s.tick(now=at(90))
        before = _answers(s)
    copy = str(tmp_path / "current.db")
    shutil.copy(db_path, copy)
    _as_schema_8(db_path)
    with MemoryStore(db_path) as s:
        assert s.stats()["schema_version"] == SCHEMA_VERSION
        assert s.conn.execute("SELECT count(*) FROM memory_state").fetchone()[0] == 4
        assert _answers(s) == before
        upgraded = s.tick(now=at(200)), s.undo_tick(s.tick(now=at(300)).tick_id), s.restore(gone).id
        after = _answers(s)
    with MemoryStore(copy) as s:
        current = s.tick(now=at(200)), s.undo_tick(s.tick(now=at(300)).tick_id), s.restore(gone).id
        assert (current, _answers(s)) == (upgraded, after)


def test_rows_written_by_schema_8_keep_their_layer_and_strength_after_the_upgrade(tmp_path):
    import sqlite3

    from mnemoscope.store.schema.migrations import migrations
    from sqlite_utils import Database

    path = str(tmp_path / "v8.db")
    conn = sqlite3.connect(path)
    migrations.apply(Database(conn), stop_before="m009_memory_state")
    for mid, layer, strength, due in (("a", "edge", 0.1, at(500)), ("b", "archived", 0.05, None)):
        conn.execute("INSERT INTO memories (id, text, kind, importance, scope, sensitivity, created_at, updated_at, "
                     "ref_time, base, recall_count, pinned, strength, layer, ticked_at, next_change_at, terms) "
                     "VALUES (?, ?, 'event', 0.5, 'global', 'low', ?, ?, ?, 1, 0, 0, ?, ?, ?, ?, ?)",
                     (mid, f"memory {mid}", T0, T0, T0, strength, layer, at(10), due, f"memory {mid}"))
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('ticked_at', ?)", (repr(at(10)),))
    conn.commit()
    conn.close()
    with MemoryStore(path) as s:
        assert [(m.id, m.layer, m.strength, m.ticked_at) for m in s.list(layer="edge")] == [("a", "edge", 0.1, at(10))]
        assert [m.id for m in s.list(include_archived=False)] == ["a"]
        assert s.conn.execute("SELECT rowid, next_change_at FROM memory_state ORDER BY rowid").fetchall() == [
            (1, at(500)), (2, None)]


_MIX = [  # kind, recalls, age in days, pinned, own half-life
    ("event", 0, 0, False, None), ("event", 3, 10, False, None), ("reflection", 0, 5, False, None),
    ("fact", 6, 30, False, None), ("skill", 1, 200, False, None), ("lesson", 0, 0, True, None),
    ("event", 0, 2, False, 7.0), ("fact", 0, 390, False, None), ("reflection", 5, 1, False, None),
    ("event", 1, 40, False, None), ("lesson", 8, 100, False, 30.0), ("event", 0, 15, True, None),
]


def _mixed_store(store):
    for i, (kind, recalls, age, pinned, own) in enumerate(_MIX * 3):
        mid = store.remember(f"memory {i}", kind=kind, pinned=pinned, now=at(-age), dedupe=False,
                             memory_id=f"m{i:02d}", half_life_days=own).memory.id
        for r in range(recalls):
            store.reinforce(mid, now=at(-age + r * 0.5))


def _memory_states(store):
    """Every memory's stored decay state: strength, layer, tick time and next change."""
    return {r[0]: tuple(r[1:]) for r in store.conn.execute(
        "SELECT id, strength, layer, ticked_at, next_change_at FROM memory_rows")}


def test_undo_puts_back_exactly_the_states_and_next_changes_before_the_tick_and_redo_again(store):
    _mixed_store(store)
    store.tick(now=at(25))
    before = _memory_states(store)
    report = store.tick(now=at(170))
    after = _memory_states(store)
    assert report.changed >= 10 and after != before
    undone = store.undo_tick(report.tick_id)
    assert _memory_states(store) == before  # exactly: the same floats, the same NULLs
    assert undone.changed == report.changed and store.tables.last_tick() == at(25)
    assert undone.layer_counts == {layer: sum(1 for s in before.values() if s[1] == layer)
                                   for layer in undone.layer_counts}
    store.redo_tick(report.tick_id)
    assert _memory_states(store) == after


def test_undo_after_edits_takes_back_only_what_the_tick_changed(store):
    """A memory recalled or pinned between a tick and its undo keeps the state that recall or
    pin worked out (undo takes back the tick, not what an agent or a person did after it,
    STYLE.md); a memory deleted since stays deleted, one written since is untouched, and
    every other memory the tick changed gets back exactly what it had."""
    _mixed_store(store)
    store.tick(now=at(25))
    before = _memory_states(store)
    report = store.tick(now=at(170))
    moved = [t[0] for t in report.transitions]
    recalled, pinned, deleted = moved[0], moved[1], moved[2]
    store.reinforce(recalled, now=at(171))
    store.pin(pinned, now=at(171))
    store.delete(deleted)
    new = store.remember("written after the tick", kind="event", now=at(172), memory_id="new").memory.id
    after_edits = _memory_states(store)
    assert after_edits[recalled][2] == after_edits[pinned][2] == at(171)
    store.undo_tick(report.tick_id)
    states = _memory_states(store)
    assert deleted not in states and states[new] == after_edits[new]
    assert states[recalled] == after_edits[recalled] and states[pinned] == after_edits[pinned]
    assert states[pinned][3] is None  # pinned: it never changes layer
    assert {m: s for m, s in states.items() if m not in (recalled, pinned, new)} == \
        {m: s for m, s in before.items() if m not in (recalled, pinned, deleted)}
