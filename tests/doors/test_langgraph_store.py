"""MnemoscopeStore against the cases of LangGraph's own store tests (the in-memory store's
libs/checkpoint/tests/test_store.py and the SQLite store's libs/checkpoint-sqlite/tests/
test_store.py, written here as our own), on both engines; then what a caller of another
trust must not learn through it (issue #32 item 11). What still differs from LangGraph's
stores, case by case, is listed in docs/agents.md (Frameworks)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph.store.base", reason="the langgraph extra is not installed")

from langgraph.store.base import (  # noqa: E402
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from mnemoscope.adapters.langgraph import MnemoscopeStore, memory_id, scope_of  # noqa: E402

pytestmark = [pytest.mark.timeout(300)]


@pytest.fixture
def lg(store):
    return MnemoscopeStore(store)


# -- batches ---------------------------------------------------------------------------------------
def test_batch_keeps_the_order_of_its_operations(lg):
    lg.put(("test", "foo"), "key1", {"data": "value1"})
    lg.put(("test", "bar"), "key2", {"data": "value2"})
    results = lg.batch([
        GetOp(("test", "foo"), "key1"),
        PutOp(("test", "bar"), "key2", {"data": "value2"}),
        SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(("test",), "key3"),
    ])
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[0].namespace == ("test", "foo") and results[1] is None
    assert [(i.key, i.value) for i in results[2]] == [("key1", {"data": "value1"})]
    assert {("test", "foo"), ("test", "bar")} <= set(results[3]) and results[4] is None
    again = lg.batch([SearchOp(("test",), None, 5, 0), GetOp(("test", "bar"), "key2"),
                      ListNamespacesOp(None, None, 5, 0), PutOp(("test",), "key3", {"data": "value3"}),
                      GetOp(("test", "foo"), "key1")])
    assert len(again[0]) >= 2 and again[1].value == {"data": "value2"} and again[3] is None
    assert again[4].key == "key1" and lg.get(("test",), "key3").value == {"data": "value3"}


def test_batch_gets_puts_and_deletes(lg):
    assert lg.batch([PutOp(("test",), "key1", {"data": "value1"}), PutOp(("test",), "key2", {"data": "value2"}),
                     PutOp(("test",), "key3", None)]) == [None, None, None]
    got = lg.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "key3")])
    assert [g.key if g else None for g in got] == ["key1", "key2", None]


def test_batch_searches(lg):
    for ns, key, value in [(("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
                           (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
                           (("test", "baz"), "key3", {"data": "value3", "tag": "b"})]:
        lg.put(ns, key, value)
    tagged, two, foo = lg.batch([SearchOp(("test",), {"tag": "a"}, 10, 0), SearchOp(("test",), None, 2, 0),
                                 SearchOp(("test", "foo"), None, 10, 0)])
    assert len(tagged) == 2 and all(i.value["tag"] == "a" for i in tagged)
    assert len(two) == 2 and [i.namespace for i in foo] == [("test", "foo")]


def test_batch_lists_namespaces(lg):
    data = [("test", "documents", "public"), ("test", "documents", "private"), ("test", "images", "public"),
            ("prod", "documents", "public")]
    for ns in data:
        lg.put(ns, "k", {"content": "doc"})
    every, shallow, public = lg.batch([
        ListNamespacesOp(None, None, 10, 0), ListNamespacesOp(None, 2, 10, 0),
        ListNamespacesOp((MatchCondition("suffix", ("public",)),), None, 10, 0)])
    assert len(every) == 4 and all(len(ns) <= 2 for ns in shallow) and all(ns[-1] == "public" for ns in public)


# -- the store's API --------------------------------------------------------------------------------
def test_basic_operations(lg):
    ns = ("test", "documents")
    lg.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = lg.get(ns, "doc1")
    assert (item.namespace, item.key, item.value) == (ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    lg.put(ns, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    assert lg.get(ns, "doc1").value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert lg.get(("test", "other_documents"), "doc1") is None
    lg.delete(ns, "doc1")
    assert lg.get(ns, "doc1") is None


def test_search_by_namespace_filter_and_page(lg):
    for ns, key, value in [(("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
                           (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
                           (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]})]:
        lg.put(ns, key, value)
    assert len(lg.search(("test",))) == 3
    assert {i.namespace for i in lg.search(("test", "docs"))} == {("test", "docs")}
    assert {i.key for i in lg.search(("test",), filter={"author": "Alice"})} == {"doc1", "img1"}
    assert len(lg.search(("test",), limit=2)) == 2 and len(lg.search(("test",), offset=2)) == 1


def test_list_namespaces_by_prefix_suffix_wildcard_depth_and_page(lg):
    spaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
              ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"), ("admin", "users", "789")]
    for i, ns in enumerate(spaces):
        lg.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert sorted(lg.list_namespaces(prefix=("a", "b"))) == sorted(spaces[:4])
    assert sorted(lg.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(lg.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(lg.list_namespaces(prefix=("a", "b"), max_depth=3)) == [("a", "b", "c"), ("a", "b", "d"),
                                                                           ("a", "b", "f")]
    assert lg.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert lg.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(lg.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(lg.list_namespaces(suffix=("*", "f"))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert lg.list_namespaces(prefix=("nonexistent",)) == []
    assert lg.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert sorted(lg.list_namespaces(max_depth=2)) == [("a", "b"), ("a", "c"), ("admin", "users"), ("b", "a"),
                                                       ("users", "123"), ("users", "456")]
    assert lg.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pages_in_order_and_an_empty_store_has_none(lg):
    assert lg.list_namespaces() == []
    for i in range(20):
        lg.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    assert lg.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [("namespace", f"sub_{i:02d}")
                                                                             for i in range(5, 10)]
    assert lg.list_namespaces(prefix=("namespace",), limit=5, offset=15) == [("namespace", f"sub_{i:02d}")
                                                                              for i in range(15, 20)]


def test_namespaces_are_checked_as_langgraph_checks_them(lg):
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            lg.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(lg.aput(bad, "foo", doc))
    lg.put(("foo", "langgraph", "foo"), "bar", doc)
    assert lg.get(("foo", "langgraph", "foo"), "bar").value == doc
    assert lg.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    lg.delete(("foo", "langgraph", "foo"), "bar")
    assert lg.get(("foo", "langgraph", "foo"), "bar") is None
    # past the public put, as LangGraph's own batch allows: a first label "langgraph"
    lg.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert lg.get(("langgraph", "foo"), "bar").value == doc and lg.search(("langgraph", "foo"))[0].value == doc


def test_a_dotted_label_never_reads_or_overwrites_another_namespace(lg):
    """('memories.ana',) was the scope of ('memories', 'ana'): a batch get read its item and
    a batch put overwrote it. Every operation now refuses a label LangGraph refuses."""
    lg.put(("memories", "ana"), "k", {"content": "Ana's own"})
    for op in [GetOp(("memories.ana",), "k"), PutOp(("memories.ana",), "k", {"content": "overwritten"}),
               PutOp(("memories.ana",), "k", None), SearchOp(("memories.ana",), None, 10, 0),
               GetOp((), "k"), GetOp(("",), "k"), PutOp(("",), "k", {"v": 1}), SearchOp(("",), None, 10, 0),
               PutOp(("ok", 5), "k", {"v": 1})]:
        with pytest.raises(InvalidNamespaceError):
            lg.batch([op])
    assert lg.get(("memories", "ana"), "k").value == {"content": "Ana's own"}


# -- filters ------------------------------------------------------------------------------------------
def test_a_filter_key_outside_what_langgraph_allows_is_refused(lg):
    lg.put(("docs",), "public", {"access": "public", "data": "public info"})
    lg.put(("docs",), "private", {"access": "private", "data": "secret", "password": "123"})
    assert [i.key for i in lg.search(("docs",), filter={"access": "public"})] == ["public"]
    with pytest.raises(ValueError, match="Invalid filter key"):
        lg.search(("docs",), filter={"access') = 'public' OR '1'='1' OR json_extract(value, '$.": "dummy"})


def test_filter_values_are_only_values(lg):
    lg.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    lg.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    for value in ["public' OR '1'='1", "public'; --", "public' UNION SELECT * FROM store --",
                  "public\x00' OR '1'='1", "''''", "public' OR 'א'='א"]:
        assert lg.search(("docs",), filter={"access": value}) == []
    lg.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    assert [i.key for i in lg.search(("docs",), filter={"title": "O'Brien's Document"})] == ["doc4"]


def test_numeric_and_boolean_filters(lg):
    for key, price in [("item1", 10), ("item2", 20), ("item3", 30)]:
        lg.put(("items",), key, {"price": price})
    assert {i.key for i in lg.search(("items",), filter={"price": {"$gt": 15}})} == {"item2", "item3"}
    assert len(lg.search(("items",), filter={"price": {"$lt": float("inf")}})) == 3
    assert len(lg.search(("items",), filter={"price": {"$gt": float("-inf")}})) == 3
    assert lg.search(("items",), filter={"price": {"$eq": float("nan")}}) == []
    assert len(lg.search(("items",), filter={"price": {"$lt": 10 ** 100}})) == 3
    lg.put(("items",), "item4", {"price": -10})
    assert [i.key for i in lg.search(("items",), filter={"price": {"$lt": 0}})] == ["item4"]
    for key, active in [("flag1", True), ("flag2", False), ("flag3", True)]:
        lg.put(("flags",), key, {"active": active})
    assert {i.key for i in lg.search(("flags",), filter={"active": True})} == {"flag1", "flag3"}
    assert [i.key for i in lg.search(("flags",), filter={"active": False})] == ["flag2"]


def test_dotted_filter_keys_reach_into_nested_values(lg):
    lg.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    lg.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    assert [i.key for i in lg.search(("docs",), filter={"access-level": "public"})] == ["hyphen"]
    assert [i.key for i in lg.search(("docs",), filter={"user.access-level": "nested"})] == ["hyphen"]
    assert [i.key for i in lg.search(("docs",), filter={"123abc": "ok"})] == ["digit"]
    assert [i.key for i in lg.search(("docs",), filter={"user.123abc": "ok2"})] == ["digit"]
    # PostgreSQL's store reads a dotted key as one key of the value: that is found too
    lg.put(("docs",), "literal", {"user.access-level": "flat"})
    assert [i.key for i in lg.search(("docs",), filter={"user.access-level": "flat"})] == ["literal"]


# -- namespaces as prefixes ---------------------------------------------------------------------------
def _found(lg, prefix):
    return {item.namespace for item in lg.search(prefix, limit=100)}


def test_a_prefix_stops_at_a_label_boundary_and_an_empty_one_is_everything(lg):
    for ns in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",), ("foobar", "baz"), ("foo2",)]:
        lg.put(ns, "k", {"v": 1})
    assert _found(lg, ("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert _found(lg, ("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert _found(lg, ("foo2",)) == {("foo2",)} and _found(lg, ("fo",)) == set()
    assert len(_found(lg, ())) == 6
    assert set(lg.list_namespaces(prefix=["foo"], limit=100)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}


def test_labels_are_literal_and_case_sensitive(lg):
    pairs = [("star*", "starX"), ("q?m", "qXm"), ("br[ack]et", "brXacXket"), ("user_1", "userX1"), ("a%b", "axxb"),
             ("plus+", "plusX"), ("Foo", "foo")]
    for label, decoy in pairs:
        lg.put((label,), "k", {"v": 1})
        lg.put((decoy,), "k", {"v": 1})
        lg.put((label, "child"), "k", {"v": 1})
    for label, _decoy in pairs:
        assert set(lg.list_namespaces(prefix=[label], limit=100)) == {(label,), (label, "child")}
        assert _found(lg, (label,)) == {(label,), (label, "child")}
        assert set(lg.list_namespaces(prefix=[label, "child"], limit=100)) == {(label, "child")}


def test_suffixes_and_wildcards_align_to_labels(lg):
    for ns in [("uid", "users", "alice"), ("uid", "users", "malice"), ("uid", "a", "b", "alice"),
               ("users", "alice\n")]:
        lg.put(ns, "k", {"v": 1})
    assert set(lg.list_namespaces(suffix=["alice"], limit=100)) == {("uid", "users", "alice"),
                                                                     ("uid", "a", "b", "alice")}
    assert set(lg.list_namespaces(prefix=["uid", "*", "alice"], limit=100)) == {("uid", "users", "alice")}
    assert lg.get(("users", "alice\n"), "k") is not None and lg.get(("users", "alice"), "k") is None


def test_search_by_query_in_any_script(lg):
    texts = {"1": "这是中文", "2": "これは日本語です", "3": "이건 한국어야", "4": "Это русский", "5": "यह रूसी है"}
    for key, text in texts.items():
        lg.put(("user_123", "memories"), key, {"text": text}, index=["text"])
    for key, text in texts.items():
        assert lg.search(("user_123", "memories"), query=text)[0].key == key


# -- searches by query (LangGraph's vector cases, by what they check besides the exact cosines) ----------
def test_a_query_with_a_filter_ranks_the_item_it_names_first(lg):
    for key, value in [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
                       ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
                       ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
                       ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]:
        lg.put(("test",), key, value)
    assert [i.key for i in lg.search(("test",), query="apple", filter={"color": "red"})] == ["doc1", "doc2"]
    assert [i.key for i in lg.search(("test",), query="car", filter={"color": "red"})] == ["doc2", "doc1"]
    assert lg.search(("test",), query="blue car", filter={"score": {"$gt": 3.2}})[0].key == "doc4"
    assert [i.key for i in lg.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})] \
        == ["doc3"]


def test_pages_of_a_query_are_best_first_and_do_not_overlap(lg):
    for i in range(5):
        lg.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    first, second = lg.search(("test",), query="test", limit=2), lg.search(("test",), query="test", limit=2, offset=2)
    assert not {i.key for i in first} & {i.key for i in second}
    every = lg.search(("test",), query="test", limit=10)
    assert len(every) == 5 and [i.key for i in every[:4]] == [i.key for i in first + second]
    scores = [i.score for i in every]
    assert scores == sorted(scores, reverse=True) and all(0 <= x <= 1 for x in scores)


def test_an_update_changes_what_a_query_finds_and_an_unindexed_item_has_no_score(lg):
    lg.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    lg.put(("test",), "doc2", {"text": "something about dogs"})
    lg.put(("test",), "doc3", {"text": "text about birds"})
    before = lg.search(("test",), query="Zany Xerxes")
    assert before[0].key == "doc1"
    lg.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next(i.score for i in lg.search(("test",), query="Zany Xerxes") if i.key == "doc1")
    assert after < before[0].score
    lg.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert "doc4" not in [i.key for i in lg.search(("test",), query="new text about dogs", limit=3)]
    every = lg.search(("test",), query="new text about dogs")
    assert [(i.key, i.score) for i in every][-1] == ("doc4", None) and len(every) == 4


def test_the_fields_a_store_or_a_put_names_are_what_a_query_reads(store):
    lg = MnemoscopeStore(store, index_fields=["key17"])
    lg.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}, index=["key0", "key1"])
    lg.put(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}, index=["key1", "key3"])
    for query, first in (("aaa", "doc3"), ("ggg", "doc4")):
        found = lg.search(("test",), query=query)
        assert found[0].key == first and found[0].score > found[1].score
    best = lg.search(("test",), query="aaa")[0].score
    assert all(i.score < best for i in lg.search(("test",), query="ccc"))  # key2 is in no index


def test_queries_of_any_shape_find_the_item(lg):
    lg.put(("test",), "doc1", {"text": "test document"})
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert [i.key for i in lg.search(("test",), query=query)] == ["doc1"], query


def test_filter_values_that_look_like_sql_are_only_values(lg):
    lg.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    lg.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    for value in ("public' OR '1'='1", "public'; --", "public' UNION SELECT * FROM store --", "public\x00' OR '1'='1",
                  "''''", "public' OR 'א'='א"):
        assert lg.search(("docs",), filter={"access": value}) == [], value
    lg.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    assert [i.key for i in lg.search(("docs",), filter={"title": "O'Brien's Document"})] == ["doc4"]
    with pytest.raises(ValueError, match="Invalid filter key"):
        lg.search(("docs",), filter={"access') = 'public' OR '1'='1' OR json_extract(value, '$.": "x"})


def test_concurrent_async_calls_through_langgraphs_batching(store):
    from langgraph.store.base.batch import AsyncBatchedBaseStore

    class Batched(AsyncBatchedBaseStore):
        def __init__(self) -> None:
            super().__init__()
            self.inner = MnemoscopeStore(store)

        def batch(self, ops):
            return self.inner.batch(ops)

        async def abatch(self, ops):
            return await self.inner.abatch(ops)

    async def main():
        b = Batched()
        await asyncio.gather(b.aput(("test",), "same", {"value": "same"}),
                             b.aput(("test",), "different", {"value": "different"}))
        got = await asyncio.gather(b.aget(("test",), "same"), b.aget(("test",), "same"), b.aget(("test",), "different"))
        await asyncio.gather(b.aput(("test",), "key", {"value": 1}), b.aput(("test",), "key", {"value": 2}))
        found = await asyncio.gather(b.asearch(("test",), filter={"value": 2}), b.asearch(("test",), query="same"))
        return got, (await b.aget(("test",), "key")).value, found

    got, last, found = asyncio.run(main())
    assert got[0] == got[1] and got[0].value == {"value": "same"} and got[2].value == {"value": "different"}
    assert last == {"value": 2} and [i.key for i in found[0]] == ["key"] and found[1][0].key == "same"


# -- what another trust must not learn (#32 item 11) ---------------------------------------------------
def test_answers_do_not_depend_on_items_the_caller_may_not_see(store):
    high = MnemoscopeStore(store, trust="high", sensitivity="high")
    low = MnemoscopeStore(store, trust="low")
    high.put(("secret", "ana"), "door", {"content": "the door code is 4921"})
    high.put(("shared",), "k", {"content": "Ana's hidden note"})
    assert low.list_namespaces() == [] and low.search(()) == []
    # a put and a delete of a hidden key answer as those of an empty one, and never touch it
    assert low.put(("shared",), "k", {"content": "low's own note"}) is None
    assert low.get(("shared",), "k").value == {"content": "low's own note"}
    assert [i.value for i in low.search(("shared",))] == [{"content": "low's own note"}]
    assert low.delete(("shared",), "k") is None and low.get(("shared",), "k") is None
    assert high.get(("shared",), "k").value == {"content": "Ana's hidden note"}
    assert low.list_namespaces() == []


def test_search_returns_the_namespaces_matches_and_reinforces_only_them(lg, store):
    for i in range(8):
        store.remember(f"Ana drinks green tea every morning, note {i}", scope="global", dedupe=False)
    lg.put(("memories", "ana"), "tea", {"content": "Ana drinks green tea"})
    for limit in range(1, 6):
        found = lg.search(("memories", "ana"), query="green tea", limit=limit)
        assert [i.key for i in found] == ["tea"], limit
        assert found[0].score is not None
    assert {m.recall_count for m in store.list() if m.scope == "global"} == {0}
    assert store.get(memory_id(scope_of(("memories", "ana")), "tea")).recall_count == 5


def test_a_prefix_given_as_a_list_is_read_as_langgraph_reads_it(lg):
    """LangGraph's own store tests search with ["test"]: it was refused as not a tuple."""
    lg.put(("test", "docs"), "k", {"content": "a list prefix"})
    assert [i.key for i in lg.search(["test"])] == ["k"]
    assert [i.key for i in lg.search(["test", "docs"], query="list prefix")] == ["k"]
    with pytest.raises(InvalidNamespaceError, match="NUL"):
        lg.put(("test", "a\x00b"), "k", {"v": 1})
