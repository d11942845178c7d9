"""LangGraph's ``BaseStore`` over a Mnemoscope store, so LangGraph agents and LangMem's
memory tools keep their memory here, where a person can see it fade and edit it.

- A namespace is a scope: ``("memories", "ana")`` is ``langgraph:memories.ana`` (each
  label percent-encoded; LangGraph forbids periods in labels, so the mapping is exact).
- An item is one memory (a fact) with id ``lg-`` + a hash of scope and key; its value is
  kept whole in the memory's context (``{"langgraph": {"namespace", "key", "value"}}``)
  and its text is what a search reads: the fields ``index`` names (LangGraph's paths),
  else the value's ``content`` when it is a string (LangMem's shape), else the value as
  JSON, cut to the store's longest memory. ``index=False`` keeps an item out of queries.
- ``search(query=…)`` is the store's recall over the namespaces under the prefix (an
  agent's search is real use: what it returns is reinforced); without a query, items
  newest first. ``filter`` compares top-level value fields as LangGraph's own stores do
  (equality, nested objects, ``$eq $ne $gt $gte $lt $lte``); ``limit``/``offset`` page.
- Every operation is logged in the activity log as client ``langgraph`` (door ``python``).
- No TTL (``supports_ttl`` is False, as LangGraph's contract allows): memories fade by
  the store's own clock instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path
from mnemoscope.store import MemoryStore, NotFound
from mnemoscope.store.errors import ValidationError
from mnemoscope.store.model import SENSITIVITY_RANK
from mnemoscope.store.recall import MAX_K

from .calls import logged

PREFIX = "langgraph:"
CLIENT = "langgraph"
CONTEXT_KEY = "langgraph"
UNINDEXED = "langgraph:unindexed"


def scope_of(namespace: tuple[str, ...]) -> str:
    scope = PREFIX + ".".join(quote(label, safe="") for label in namespace)
    if len(scope) > 128:
        raise InvalidNamespaceError(f"namespace {namespace} is too long for a Mnemoscope scope "
                                    f"({len(scope)} characters encoded; at most 128)")
    return scope


def namespace_of(scope: str) -> tuple[str, ...]:
    return tuple(unquote(label) for label in scope[len(PREFIX):].split("."))


def memory_id(scope: str, key: str) -> str:
    return "lg-" + hashlib.sha1(f"{scope}\x1f{key}".encode()).hexdigest()[:20]


def _time(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics for one field."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(matches(a, b) for a, b in zip(value, wanted)))
    return value == wanted


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return value == arg
    if op == "$ne":
        return value != arg
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(arg)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


class MnemoscopeStore(BaseStore):
    """A LangGraph store whose items are memories in ``store``, read at ``trust``."""

    supports_ttl = False

    def __init__(self, store: MemoryStore, *, trust: str = "medium", sensitivity: str = "low",
                 index_fields: list[str] | None = None, client: str = CLIENT) -> None:
        if trust not in SENSITIVITY_RANK or sensitivity not in SENSITIVITY_RANK:
            raise ValidationError("trust", f"trust and sensitivity must be among {', '.join(SENSITIVITY_RANK)}")
        if SENSITIVITY_RANK[sensitivity] > SENSITIVITY_RANK[trust]:
            raise ValidationError("sensitivity", "must not be above trust: the store may write only what it may read")
        self.store = store
        self.trust = trust
        self.sensitivity = sensitivity
        self.index_fields = index_fields
        self.client = client

    # -- the two methods LangGraph asks for ----------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                results.append(self._put(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The store serialises its connection with a lock; a thread keeps the event loop free.
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations ----------------------------------------------------------------------------
    def _visible(self, sensitivity: str) -> bool:
        return SENSITIVITY_RANK[sensitivity] <= SENSITIVITY_RANK[self.trust]

    def _item(self, row: dict[str, Any], cls: type = Item, score: float | None = None) -> Item | None:
        ctx = row["context"]
        ctx = json.loads(ctx) if isinstance(ctx, str) else ctx
        origin = ctx.get(CONTEXT_KEY) if isinstance(ctx, dict) else None
        if not isinstance(origin, dict) or not isinstance(origin.get("key"), str) \
                or not isinstance(origin.get("namespace"), list):
            return None  # a memory of the scope that no LangGraph put wrote (another door's): not an item
        kwargs = {"value": origin.get("value") or {}, "key": origin["key"], "namespace": tuple(origin["namespace"]),
                  "created_at": _time(row["created_at"]), "updated_at": _time(row["updated_at"])}
        return SearchItem(**kwargs, score=score) if cls is SearchItem else Item(**kwargs)

    def _get(self, op: GetOp) -> Item | None:
        scope = scope_of(op.namespace)
        mid = memory_id(scope, op.key)
        with logged(self.store, self.client, "get", scope, self.trust, {"namespace": list(op.namespace),
                                                                        "key": op.key}) as ids:
            try:
                memory = self.store.get(mid)
            except NotFound:
                return None
            if not self._visible(memory.sensitivity):
                return None
            ids.append(mid)
            return self._item({"context": memory.context, "created_at": memory.created_at,
                               "updated_at": memory.updated_at})

    def _text(self, value: dict[str, Any], index: Any) -> str:
        fields = index if isinstance(index, list) else self.index_fields
        if fields:
            texts = [t for path in fields for t in get_text_at_path(value, path)]
        elif isinstance(value.get("content"), str):
            texts = [value["content"]]
        else:
            texts = [json.dumps(value.get("content", value), ensure_ascii=False, sort_keys=True)]
        text = "\n".join(t for t in texts if t and t.strip()) or json.dumps(value, ensure_ascii=False)
        return text[: self.store.config.limits.max_text_chars]

    def _put(self, op: PutOp) -> None:
        scope = scope_of(op.namespace)
        mid = memory_id(scope, op.key)
        tool = "delete" if op.value is None else "put"
        args = {"namespace": list(op.namespace), "key": op.key} | ({} if op.value is None else {"value": op.value})
        with logged(self.store, self.client, tool, scope, self.trust, args) as ids:
            exists = self.store.exists(mid)
            if exists and not self._visible(self.store.get(mid).sensitivity):
                raise NotFound("item", f"{op.namespace}/{op.key}")  # a hidden memory is never written to
            if op.value is None:
                if exists:
                    self.store.delete(mid)
                    ids.append(mid)
                return None
            if not isinstance(op.value, dict):
                raise ValidationError("value", f"must be a dict, got {type(op.value).__name__}")
            context = {CONTEXT_KEY: {"namespace": list(op.namespace), "key": op.key, "value": op.value}}
            text = self._text(op.value, op.index)
            tags = [UNINDEXED] if op.index is False else []
            try:
                if exists:
                    self.store.update(mid, text=text, context=context, tags=tags)
                else:
                    self.store.remember(text, memory_id=mid, scope=scope, dedupe=False, context=context, tags=tags,
                                        sensitivity=self.sensitivity, source=self.client, source_kind="tool_output")
            except ValidationError as exc:
                if exc.field == "context":
                    raise ValidationError("value", f"of {op.key!r} is too large to keep: {exc}") from None
                raise
            ids.append(mid)
            return None

    def _scopes_under(self, prefix: tuple[str, ...]) -> list[str]:
        """The scopes of the namespaces under ``prefix``: a range of the scope index."""
        if prefix:
            base = scope_of(prefix)
            sql, params = "scope = ? OR (scope > ? AND scope < ?)", (base, base + ".", base + "/")  # '/' follows '.'
        else:
            sql, params = "scope > ? AND scope < ?", (PREFIX, PREFIX[:-1] + ";")  # ';' follows ':'
        with self.store.tables.reading():
            return [r[0] for r in self.store.conn.execute(f"SELECT DISTINCT scope FROM memories WHERE {sql}", params)]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        scopes = self._scopes_under(op.namespace_prefix)
        args = {"namespace_prefix": list(op.namespace_prefix), "query": op.query, "filter": op.filter,
                "limit": op.limit, "offset": op.offset}
        with logged(self.store, self.client, "search", scope_of(op.namespace_prefix) if op.namespace_prefix else PREFIX,
                    self.trust, args) as ids:
            if not scopes or op.limit <= 0:
                return []
            wanted = op.offset + op.limit
            found: list[SearchItem] = []
            if op.query:
                # A filter or global memories (which recall also returns) thin the hits: ask for more then.
                k = min(MAX_K, wanted if not op.filter else max(50, wanted * 4))
                hits = self.store.recall(op.query, k=k, scope=scopes, trust=self.trust, reinforce=True)
                scoped = set(scopes)
                hits = [h for h in hits if h.scope in scoped and not h.redacted]
                rows = self._rows([h.id for h in hits])
                for hit in hits:
                    row = rows.get(hit.id)
                    if row is None or UNINDEXED in json.loads(row["tags"] or "[]"):
                        continue
                    item = self._item(row, SearchItem, hit.score)
                    if item is not None and self._passes(item, op.filter):
                        found.append(item)
                        if len(found) >= wanted:
                            break
            else:
                marks = ",".join("?" * len(scopes))
                for row in self.store.tables.rows(
                        f"SELECT id, context, created_at, updated_at, sensitivity, tags FROM memories WHERE scope IN "
                        f"({marks}) ORDER BY updated_at DESC, id", scopes):
                    if not self._visible(row["sensitivity"]):
                        continue
                    item = self._item(row, SearchItem)
                    if item is not None and self._passes(item, op.filter):
                        found.append(item)
                        if len(found) >= wanted:
                            break
            page = found[op.offset:wanted]
            ids.extend(memory_id(scope_of(i.namespace), i.key) for i in page)
            return page

    def _rows(self, mids: list[str]) -> dict[str, dict[str, Any]]:
        if not mids:
            return {}
        marks = ",".join("?" * len(mids))
        return {r["id"]: r for r in self.store.tables.rows(
            f"SELECT id, context, created_at, updated_at, tags FROM memories WHERE id IN ({marks})", mids)}

    @staticmethod
    def _passes(item: Item, wanted: dict[str, Any] | None) -> bool:
        return not wanted or all(matches(item.value.get(k), v) for k, v in wanted.items())

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        args = {"match_conditions": [[c.match_type, list(c.path)] for c in op.match_conditions or ()],
                "max_depth": op.max_depth, "limit": op.limit, "offset": op.offset}
        with logged(self.store, self.client, "list_namespaces", PREFIX, self.trust, args):
            names = {namespace_of(s) for s in self._scopes_under(())}
            names = {n for n in names if all(_namespace_matches(c, n) for c in op.match_conditions or ())}
            if op.max_depth is not None:
                names = {n[: op.max_depth] for n in names}
            return sorted(names)[op.offset: op.offset + op.limit]
