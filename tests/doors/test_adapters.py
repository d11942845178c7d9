"""The framework adapters, driven the way the frameworks drive them: LangMem's own memory
tools (manage and search) on our LangGraph store, LangGraph's store API sync and async,
and a LangChain retriever in a chain."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("langgraph.store.base", reason="the langgraph extra is not installed")
langmem = pytest.importorskip("langmem", reason="langmem is not installed")

from langgraph.store.base import BaseStore  # noqa: E402
from mnemoscope.adapters.langgraph import MnemoscopeStore, memory_id, scope_of  # noqa: E402
from mnemoscope.store.agents import activity  # noqa: E402

NS = ("memories", "ana")
CONFIG = {"configurable": {"langgraph_user_id": "ana"}}


@pytest.fixture
def lg(store):
    return MnemoscopeStore(store)


def test_langmem_tools_work_unchanged_on_our_store(lg, store):
    manage = langmem.create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=lg)
    search = langmem.create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=lg)
    created = manage.invoke({"content": "Ana is allergic to peanuts", "action": "create"}, config=CONFIG)
    key = created.removeprefix("created memory ")
    manage.invoke({"content": "Ana prefers green tea in the morning", "action": "create"}, config=CONFIG)
    found = json.loads(search.invoke({"query": "peanut allergy"}, config=CONFIG))
    assert found[0]["key"] == key and found[0]["value"] == {"content": "Ana is allergic to peanuts"}
    assert found[0]["namespace"] == list(NS) and found[0]["score"] > 0
    manage.invoke({"content": "Ana is allergic to peanuts and sesame", "action": "update", "id": key}, config=CONFIG)
    memory = store.get(memory_id(scope_of(NS), key))
    assert memory.text == "Ana is allergic to peanuts and sesame" and memory.scope == "langgraph:memories.ana"
    assert store.count() == 2  # an update is the same memory, not a copy
    manage.invoke({"action": "delete", "id": key}, config=CONFIG)
    assert store.count() == 1
    # the inspector sees the framework's calls under its own name
    log = activity.recent(store, 20)
    assert {e.client for e in log} == {"langgraph"} and {e.door for e in log} == {"python"}
    assert [e.tool for e in reversed(log)] == ["put", "put", "search", "put", "delete"]


def test_store_api_get_search_filter_paging_and_namespaces(lg, store):
    assert isinstance(lg, BaseStore)
    for i in range(5):
        lg.put(NS, f"k{i}", {"content": f"note {i} about tea", "rank": i, "meta": {"lang": "sv" if i % 2 else "en"}})
    lg.put(("memories", "bo"), "k0", {"content": "Bo drinks coffee"})
    lg.put(("other",), "x", {"content": "tea elsewhere"})
    item = lg.get(NS, "k3")
    assert item.value["rank"] == 3 and item.key == "k3" and item.namespace == NS
    assert lg.get(NS, "missing") is None
    assert [i.key for i in lg.search(NS, filter={"rank": {"$gte": 3}})] == ["k4", "k3"]
    assert [i.key for i in lg.search(NS, filter={"meta": {"lang": "sv"}})] == ["k3", "k1"]
    assert [i.key for i in lg.search(NS, limit=2, offset=1)] == ["k3", "k2"]
    hits = lg.search(("memories",), query="coffee")
    assert hits[0].namespace == ("memories", "bo") and hits[0].score > 0
    assert all(h.namespace[0] == "memories" for h in lg.search(("memories",), query="tea", limit=50))
    assert lg.list_namespaces() == [("memories", "ana"), ("memories", "bo"), ("other",)]
    assert lg.list_namespaces(prefix=("memories",), max_depth=1) == [("memories",)]
    assert lg.list_namespaces(suffix=("bo",)) == [("memories", "bo")]
    lg.put(NS, "quiet", {"content": "tea but not searchable"}, index=False)
    found = lg.search(NS, query="searchable tea", limit=50)  # (last, unscored, as in LangGraph's stores)
    assert (found[-1].key, found[-1].score) == ("quiet", None) and all(i.score is not None for i in found[:-1])
    assert "quiet" in [i.key for i in lg.search(NS, limit=50)]
    lg.delete(NS, "k0")
    assert lg.get(NS, "k0") is None


def test_async_batch_and_methods(lg):
    async def run():
        await lg.aput(NS, "a", {"content": "async note on oolong"})
        got = await lg.aget(NS, "a")
        found = await lg.asearch(NS, query="oolong")
        spaces = await lg.alist_namespaces()
        await lg.adelete(NS, "a")
        return got, found, spaces, await lg.aget(NS, "a")

    got, found, spaces, gone = asyncio.run(run())
    assert got.value == {"content": "async note on oolong"} and found[0].key == "a"
    assert spaces == [NS] and gone is None


def test_trust_hides_memories_above_it(lg, store):
    lg.put(NS, "secret", {"content": "Ana's bank PIN is 4711"})
    store.update(memory_id(scope_of(NS), "secret"), sensitivity="hyper")
    assert lg.get(NS, "secret") is None
    assert lg.search(NS, query="bank PIN") == [] and lg.search(NS) == []
    # a put of the hidden key answers as for an empty one, and never writes to the hidden memory
    assert lg.put(NS, "secret", {"content": "not the PIN"}) is None
    assert lg.get(NS, "secret").value == {"content": "not the PIN"}
    assert store.get(memory_id(scope_of(NS), "secret")).text == "Ana's bank PIN is 4711"


def test_a_value_too_large_is_refused_clearly(lg, store):
    with pytest.raises(Exception, match="value: of 'big' is too large to keep"):
        lg.put(NS, "big", {"content": "x", "blob": "y" * 30_000})
    assert store.count() == 0


def test_langchain_retriever_returns_documents_with_id_and_explanation(store):
    pytest.importorskip("langchain_core")
    from langchain_core.runnables import RunnableLambda
    from mnemoscope.adapters.langchain import MnemoscopeRetriever

    store.remember("Mara is allergic to peanuts", who="Mara", scope="group:team")
    store.remember("Mara's PIN is 1234", scope="group:team", sensitivity="hyper")
    store.remember("Bo likes coffee", scope="private:bo")
    retriever = MnemoscopeRetriever(store=store, scope="group:team", trust="medium", k=3)
    chain = retriever | RunnableLambda(lambda docs: [(d.page_content, d.metadata) for d in docs])
    docs = chain.invoke("what is Mara allergic to, and her PIN")
    assert [text for text, _ in docs] == ["Mara is allergic to peanuts"]
    meta = docs[0][1]
    assert meta["id"].startswith("m-") and meta["score"] > 0 and set(meta["why"]) >= {"keyword", "meaning"} \
        and 0 <= meta["relevance"] <= 1 and meta["score"] == pytest.approx(sum(meta["parts"].values()), abs=0.001)
    assert store.get(meta["id"]).recall_count == 1
    # another private scope is not visible: recall ranks what the caller may see, never Bo's
    assert [d.page_content for d in retriever.invoke("coffee")] == ["Mara is allergic to peanuts"]
    log = activity.recent(store, 5)
    assert [(e.client, e.tool, e.scope) for e in log][:2] == [("langchain", "recall", "group:team")] * 2


def test_readme_example_runs(capsys):
    import os

    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), os.pardir, "docs", "agents.md"), encoding="utf-8") as fh:
        readme = fh.read()
    block = readme.split("## Frameworks: LangGraph", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    exec(compile(block, "docs/agents.md", "exec"), {})
    out = capsys.readouterr().out
    assert "{'content': 'Ana drinks green tea every morning'}" in out and "lg-" in out and "keyword" in out


@pytest.mark.sqlite_only("counts commits with sqlite3's set_trace_callback")
def test_a_retriever_call_and_its_log_entry_are_one_commit_and_a_failure_is_still_logged(store):
    # Its second commit (the log entry's own transaction) was most of what the retriever
    # added to a recall (tests/perf/adapter_bench.py).
    pytest.importorskip("langchain_core")
    from mnemoscope.adapters.langchain import MnemoscopeRetriever

    store.remember("Mara is allergic to peanuts", scope="group:team")
    retriever = MnemoscopeRetriever(store=store, scope="group:team", k=3)
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        docs = retriever.invoke("what is Mara allergic to")
    finally:
        store.conn.set_trace_callback(None)
    assert [d.page_content for d in docs] == ["Mara is allergic to peanuts"]
    assert sum(s.strip().upper() == "COMMIT" for s in statements) == 1
    assert store.get(docs[0].metadata["id"]).recall_count == 1
    entry = activity.recent(store, 1)[0]
    assert (entry.client, entry.tool, entry.ok, entry.memory_ids) == ("langchain", "recall", True, (docs[0].id,))

    def broken(*args, **kwargs):
        raise RuntimeError("the embedder fell over")

    store.recall = broken  # a recall that fails: its entry is written all the same, marked failed
    with pytest.raises(RuntimeError):
        retriever.invoke("Mara")
    entry = activity.recent(store, 1)[0]
    assert (entry.client, entry.ok) == ("langchain", False) and "the embedder fell over" in entry.error
