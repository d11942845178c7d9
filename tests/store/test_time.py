"""Time runs forward, and the tick history it leaves is bounded."""

import pytest
from mnemoscope.store import MemoryStore, StoreConfig, StoreError, ValidationError
from mnemoscope.store.forgetting.decay import DAY

T0 = 1_790_000_000.0


def at(days):
    return T0 + days * DAY


def test_a_tick_earlier_than_the_last_tick_is_refused(store):
    mid = store.remember("an old fact", kind="fact", now=T0).memory.id
    store.tick(now=at(500))
    assert store.get(mid).layer == "archived"
    with pytest.raises(ValidationError, match="now: .*before the last tick"):
        store.tick(now=at(10))
    assert store.get(mid).layer == "archived"
    store.tick(now=at(500))  # the same moment again is fine
    # Undoing the last tick gives its moment back.
    last = store.tick(now=at(501))
    store.undo_tick(last.tick_id)
    store.tick(now=at(500.5))


@pytest.mark.parametrize("days", [1e9, float("inf"), -1, True])
def test_advance_is_bounded(store, days):
    with pytest.raises(ValidationError, match="days"):
        store.advance(days)
    with pytest.raises(ValidationError, match="days"):
        store.tick(advance_days=days)


def test_advancing_past_year_9999_is_refused(store):
    for _ in range(79):
        store.advance(36500)
    with pytest.raises(ValidationError, match="9999"):
        store.advance(36500)


def test_only_the_last_n_ticks_stay_undoable(db_path):
    config = StoreConfig.from_dict({"limits": {"undoable_ticks": 3}})
    with MemoryStore(db_path, config=config) as store:
        for i in range(20):
            store.remember(f"event number {i} at the lake", kind="event", now=T0)
        reports = [store.tick(now=at(d)) for d in range(1, 11)]
        kept = store.conn.execute("SELECT id FROM ticks WHERE undo IS NOT NULL ORDER BY id").fetchall()
        assert [r[0] for r in kept] == [r.tick_id for r in reports[-3:]]
        with pytest.raises(StoreError, match="only the last 3 ticks"):
            store.undo_tick(reports[0].tick_id)
        for report in reversed(reports[-3:]):
            store.undo_tick(report.tick_id)
        assert store.conn.execute("SELECT count(*) FROM ticks").fetchone()[0] == 10  # the log stays


def test_undoable_ticks_comes_from_toml(tmp_path):
    path = tmp_path / "store.toml"
    path.write_text("[limits]\nundoable_ticks = 7\n")
    assert StoreConfig.load(str(path)).limits.undoable_ticks == 7
    path.write_text("[limits]\nundoable_ticks = 0\n")
    with pytest.raises(Exception, match="undoable_ticks"):
        StoreConfig.load(str(path))


def test_a_persons_edit_touches_the_memory_for_the_archive_rule(store):
    mid = store.remember("the boiler code is 4417", kind="fact", now=T0).memory.id
    store.tick(now=at(399))
    before = store.get(mid)
    store.update(mid, now=at(399), text="the boiler code is 4418")
    after = store.get(mid)
    assert after.strength == pytest.approx(before.strength)  # strength goes on from where it was
    assert after.recall_count == before.recall_count  # an edit is not a recall
    assert store.project(at(401))[mid][1] != "archived"
    assert store.project(at(399 + 400))[mid][1] == "archived"
