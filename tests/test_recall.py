import pytest

from store import ValidationError

NOW = "2026-11-19T12:00:00Z"


def test_recall_explains_each_part_of_the_score(demo_store):
    hits = demo_store.recall("What does Mara hate being called?", explain=True, now=NOW)
    top = hits[0]
    assert top.id == "mem-001"
    assert set(top.why) == {"semantic", "keyword", "importance", "recency", "graph", "neighbor"}
    w = demo_store.config.weights
    expected = (w.semantic * top.why["semantic"] + w.keyword * top.why["keyword"] + w.importance *
                top.why["importance"] + w.recency * top.why["recency"] + w.graph * top.why["graph"])
    assert top.score == pytest.approx(expected, abs=0.005)


def test_chinese_keywords_match_by_bigrams(demo_store):
    assert demo_store.recall("玛拉讨厌什么称呼", now=NOW)[0].id == "mem-022"
    assert demo_store.recall("谁是中文老师", now=NOW)[0].id == "mem-021"


def test_scope_isolation_is_a_hard_rule(demo_store):
    garden = demo_store.recall("garden club seeds basil", k=20, scope="group:garden-club", now=NOW)
    assert garden and {h.scope for h in garden} <= {"group:garden-club", "global"}
    assert any(h.scope == "group:garden-club" for h in garden)
    other = demo_store.recall("garden club seeds basil", k=20, scope="group:chess", now=NOW)
    assert all(h.scope == "global" for h in other)
    plain = demo_store.recall("bank account manager refinancing", k=20, now=NOW)
    assert all(h.scope == "global" for h in plain)


def test_trust_hides_above_and_redacts_one_level_above(demo_store):
    q = "asthma inhaler climbing"
    high = demo_store.recall(q, k=10, scope="private:mara", trust="high", now=NOW)
    asthma = [h for h in high if h.id == "mem-016"]
    assert asthma and asthma[0].redacted and asthma[0].text is None
    hyper = demo_store.recall(q, k=10, scope="private:mara", trust="hyper", now=NOW)
    assert [h for h in hyper if h.id == "mem-016"][0].text.startswith("Mara was diagnosed")
    low = demo_store.recall(q, k=10, scope="private:mara", trust="low", now=NOW)
    assert all(h.id != "mem-016" for h in low)
    with pytest.raises(ValidationError, match="trust"):
        demo_store.recall(q, trust="top-secret")


def test_unknown_sensitivity_is_denied(demo_store):
    demo_store.conn.execute("UPDATE memories SET sensitivity = 'weird' WHERE id = 'mem-006'")
    assert all(h.id != "mem-006" for h in demo_store.recall("peanut allergy", trust="hyper", now=NOW))


def test_archived_memories_are_never_recalled(demo_store):
    assert demo_store.get("mem-061").layer == "archived"
    assert all(h.id != "mem-061" for h in demo_store.recall("Rust meetup in Lisbon Axum", k=20, now=NOW))


def test_recall_changes_nothing_unless_reinforced(demo_store):
    before = demo_store.get("mem-006")
    demo_store.recall("peanut allergy", now=NOW)
    assert demo_store.get("mem-006") == before
    demo_store.recall("peanut allergy", k=1, now=NOW, reinforce=True)
    after = demo_store.get("mem-006")
    assert after.recall_count == before.recall_count + 1 and after.last_recalled_at > before.last_recalled_at


def test_irrelevant_queries_return_nothing(demo_store):
    assert demo_store.recall("capital of Mongolia", now=NOW) == []
    assert demo_store.recall("", now=NOW) == []


def test_graph_neighbour_fallback_finds_linked_memories(store):
    store.remember("Theo studies architecture in Porto.", entities=["Theo"], importance=0.9)
    store.remember("He visited last spring and loved the food.", entities=["Theo"], importance=0.9)
    hits = store.recall("What does Theo study?", k=5, explain=True)
    assert hits[0].text.startswith("Theo studies")
    neighbour = [h for h in hits if h.why["neighbor"]]
    assert neighbour and neighbour[0].text.startswith("He visited")
