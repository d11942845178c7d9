"""LangGraph's ``BaseStore`` over a Mnemoscope store, so LangGraph agents and LangMem's
memory tools keep their memory here, where a person can see it fade and edit it.

- A namespace is a scope: ``("memories", "ana")`` is ``langgraph:memories.ana`` (each
  label percent-encoded). Every operation checks its namespace as LangGraph's ``put``
  does (labels are non-empty strings without a period; only a search or a listing may
  name the empty namespace), so no two namespaces share a scope.
- An item is one memory (a fact) with id ``lg-`` + a hash of scope and key; its value is
  kept whole in the memory's context (``{"langgraph": {"namespace", "key", "value"}}``)
  and its text is what a search reads: the fields ``index`` names (LangGraph's paths),
  else the value's ``content`` when it is a string (LangMem's shape), else the value as
  JSON, cut to the store's longest memory. An item put with ``index=False`` comes after the
  others in a search by query, with no score, as in LangGraph's stores.
- ``search(query=…)`` is the store's recall over the namespaces under the prefix and
  nothing else (an agent's search is real use: what it returns, and only that, is
  reinforced); without a query, items last changed first. ``filter`` compares value
  fields as LangGraph's own stores do (equality, nested objects, ``$eq $ne $gt $gte $lt
  $lte``; a key of letters, digits, ``_``, ``-`` and ``.``, where ``a.b`` is the field
  ``b`` of ``a`` as the SQLite store reads it, or a field called ``a.b`` as the
  PostgreSQL store reads it); ``limit``/``offset`` page.
- Trust: what a caller may not read is not there for it. A namespace that holds only
  hidden items is not listed; a put to the key of a hidden item writes the caller's own
  item beside it (the hidden one is never written to), a delete leaves it alone, and
  both answer as for an empty key. A reader of both then sees the one changed last.
- Every operation is logged in the activity log as client ``langgraph`` (door ``python``).
- No TTL (``supports_ttl`` is False, as LangGraph's contract allows): memories fade by
  the store's own clock instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
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
from mnemoscope.store import Memory, MemoryStore
from mnemoscope.store.model.errors import ValidationError
from mnemoscope.store.model.memory import SENSITIVITY_RANK
from mnemoscope.store.recall.ranking import MAX_K

from .calls import logged

PREFIX = "langgraph:"
CLIENT = "langgraph"
CONTEXT_KEY = "langgraph"
UNINDEXED = "langgraph:unindexed"
# How many items one (namespace, key) can hold, one per caller that could not see the
# others (see the module's docstring): the first id, then versions beside it.
VERSIONS = 8
FILTER_KEY = re.compile(r"[a-zA-Z0-9_.-]+")
_MISSING = object()


def check_namespace(namespace: Any, *, empty_ok: bool = False) -> tuple[str, ...]:
    """``namespace`` as LangGraph's own ``put`` takes it (InvalidNamespaceError otherwise):
    a tuple (or list, as callers pass to ``search``) of non-empty string labels without a
    period or a NUL; empty only where ``empty_ok``."""
    if not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(f"namespace must be a tuple of strings, got {namespace!r}")
    namespace = tuple(namespace)
    if not namespace and not empty_ok:
        raise InvalidNamespaceError("namespace cannot be empty")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(f"namespace labels must be strings, got {label!r} in {namespace}")
        if not label:
            raise InvalidNamespaceError(f"namespace labels cannot be empty strings: {namespace}")
        if "." in label:
            raise InvalidNamespaceError(f"namespace labels cannot contain periods ('.'): {label!r} in {namespace}")
        if "\x00" in label:
            raise InvalidNamespaceError(f"namespace labels cannot contain NUL bytes: {label!r} in {namespace}")
    return namespace


def scope_of(namespace: tuple[str, ...]) -> str:
    scope = PREFIX + ".".join(quote(label, safe="") for label in namespace)
    if len(scope) > 128:
        raise InvalidNamespaceError(f"namespace {namespace} is too long for a Mnemoscope scope "
                                    f"({len(scope)} characters encoded; at most 128)")
    return scope


def namespace_of(scope: str) -> tuple[str, ...]:
    return tuple(unquote(label) for label in scope[len(PREFIX):].split("."))


def memory_id(scope: str, key: str, version: int = 0) -> str:
    """The id of the item ``key`` of ``scope`` (``version`` > 0: one beside it, written by a
    caller that could not see it)."""
    name = f"{scope}\x1f{key}" if not version else json.dumps([scope, key, version])
    return "lg-" + hashlib.sha1(name.encode()).hexdigest()[:20]


def _time(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics for one field."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if value is _MISSING:
        value = None  # as json_extract reads a field that is not there
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(matches(a, b) for a, b in zip(value, wanted)))
    return value == wanted


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op in ("$eq", "$ne"):
        same = matches(value, arg)
        return same if op == "$eq" else value is not _MISSING and not same
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if _number(value) and _number(arg):
            a, b = float(value), float(arg)
        elif isinstance(value, str) and isinstance(arg, str):
            a, b = value, arg
        else:
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")


def field_at(value: dict[str, Any], key: str) -> Any:
    """The value a filter key names: a field of that name (PostgreSQL's store), else the
    dotted path into nested objects (SQLite's store)."""
    if key in value:
        return value[key]
    current: Any = value
    for part in key.split("."):
        if not isinstance(current, dict) or part not in current:
            return _MISSING
        current = current[part]
    return current


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
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

    # -- items ---------------------------------------------------------------------------------
    def _visible(self, sensitivity: str) -> bool:
        return SENSITIVITY_RANK[sensitivity] <= SENSITIVITY_RANK[self.trust]

    @staticmethod
    def _origin(memory: Memory) -> dict[str, Any] | None:
        ctx = memory.context
        origin = ctx.get(CONTEXT_KEY) if isinstance(ctx, dict) else None
        if not isinstance(origin, dict) or not isinstance(origin.get("key"), str) \
                or not isinstance(origin.get("namespace"), list):
            return None  # a memory of the scope that no LangGraph put wrote (another door's): not an item
        return origin

    def _item(self, memory: Memory, cls: type = Item, score: float | None = None) -> Item | None:
        origin = self._origin(memory)
        if origin is None:
            return None
        kwargs = {"value": origin.get("value") or {}, "key": origin["key"], "namespace": tuple(origin["namespace"]),
                  "created_at": _time(memory.created_at), "updated_at": _time(memory.updated_at)}
        return SearchItem(**kwargs, score=score) if cls is SearchItem else Item(**kwargs)

    def _versions(self, scope: str, key: str) -> tuple[list[str], list[Memory]]:
        """The ids the item ``key`` of ``scope`` may have, and the stored memories among
        them that this caller may read, the one changed last first."""
        ids = [memory_id(scope, key, v) for v in range(VERSIONS)]
        found = self.store.get_many(ids)
        stored = {m.id for m in found}
        readable = sorted((m for m in found if self._visible(m.sensitivity) and self._origin(m) is not None),
                          key=lambda m: (-m.updated_at, ids.index(m.id)))
        return [i for i in ids if i not in stored], readable

    def _get(self, op: GetOp) -> Item | None:
        scope = scope_of(check_namespace(op.namespace))
        with logged(self.store, self.client, "get", scope, self.trust, {"namespace": list(op.namespace),
                                                                        "key": op.key}) as ids:
            _, readable = self._versions(scope, op.key)
            if not readable:
                return None
            ids.append(readable[0].id)
            return self._item(readable[0])

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
        scope = scope_of(check_namespace(op.namespace))
        tool = "delete" if op.value is None else "put"
        args = {"namespace": list(op.namespace), "key": op.key} | ({} if op.value is None else {"value": op.value})
        with logged(self.store, self.client, tool, scope, self.trust, args) as ids:
            free, readable = self._versions(scope, op.key)
            if op.value is None:  # what this caller may read goes; a hidden item is left alone
                for memory in readable:
                    self.store.delete(memory.id)
                    ids.append(memory.id)
                return None
            if not isinstance(op.value, dict):
                raise ValidationError("value", f"must be a dict, got {type(op.value).__name__}")
            context = {CONTEXT_KEY: {"namespace": list(op.namespace), "key": op.key, "value": op.value}}
            text = self._text(op.value, op.index)
            tags = [UNINDEXED] if op.index is False else []
            try:
                if readable:
                    mid = readable[0].id
                    self.store.update(mid, text=text, context=context, tags=tags)
                elif free:
                    mid = free[0]  # beside any hidden item of the key, never over it
                    # Its source is its own: the items of a namespace are no conversation, and
                    # recall takes memories of one source written within the hour for one
                    # (its neighbour signal lifted "red car" over "red apple" for "apple").
                    self.store.remember(text, memory_id=mid, scope=scope, dedupe=False, context=context, tags=tags,
                                        sensitivity=self.sensitivity, source=f"{self.client}:{mid}",
                                        source_kind="tool_output")
                else:
                    raise ValidationError("key", f"{op.key!r} of {op.namespace} holds {VERSIONS} items already")
            except ValidationError as exc:
                if exc.field == "context":
                    raise ValidationError("value", f"of {op.key!r} is too large to keep: {exc}") from None
                raise
            ids.append(mid)
            return None

    # -- search and listing ----------------------------------------------------------------------
    def _scopes_under(self, prefix: tuple[str, ...]) -> list[str]:
        """The scopes of the namespaces under ``prefix`` that hold a memory this caller may read."""
        if not prefix:
            return self.store.scopes(prefix=PREFIX, trust=self.trust)
        base = scope_of(prefix)
        return [s for s in self.store.scopes(prefix=base, trust=self.trust) if s == base or s.startswith(base + ".")]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = check_namespace(op.namespace_prefix, empty_ok=True)
        if op.filter:
            for key in op.filter:
                if not isinstance(key, str) or not FILTER_KEY.fullmatch(key):
                    raise ValueError(f"Invalid filter key: {key!r}. Filter keys must contain only letters, digits, "
                                     "underscores, dots and hyphens.")
        scopes = self._scopes_under(prefix)
        args = {"namespace_prefix": list(prefix), "query": op.query, "filter": op.filter, "limit": op.limit,
                "offset": op.offset}
        with logged(self.store, self.client, "search", scope_of(prefix) if prefix else PREFIX, self.trust, args,
                    writes=bool(op.query)) as ids:
            if not scopes or op.limit <= 0:
                return []
            wanted = op.offset + op.limit
            found = self._found_by_query(op, scopes, wanted) if op.query else self._newest(op, scopes, wanted)
            page = found[op.offset:wanted]
            page_ids = [memory_id for memory_id, _ in page]
            if op.query and page_ids:  # an agent's search is real use: what it returns is reinforced, and only that
                self.store.reinforce_each(page_ids)
            ids.extend(page_ids)
            return [item for _, item in page]

    def _keep(self, memory: Memory, op: SearchOp, seen: set, score: float | None = None) -> SearchItem | None:
        item = self._item(memory, SearchItem, score)
        if item is None or (item.namespace, item.key) in seen or not self._passes(item, op.filter):
            return None
        seen.add((item.namespace, item.key))  # a key written beside a hidden one: the one changed last
        return item

    def _found_by_query(self, op: SearchOp, scopes: list[str], wanted: int) -> list[tuple[str, SearchItem]]:
        k = min(MAX_K, max(10, wanted * 2))
        while True:
            hits = [h for h in self.store.recall(op.query, k=k, scope=scopes, trust=self.trust, with_global=False)
                    if not h.redacted]
            memories = {m.id: m for m in self.store.get_many([h.id for h in hits])}
            found: list[tuple[str, SearchItem]] = []
            seen: set = set()
            for hit in sorted(hits, key=lambda h: -(memories[h.id].updated_at if h.id in memories else 0)):
                memory = memories.get(hit.id)  # (the one changed last of a key's versions comes first)
                if memory is None:
                    continue
                # LangGraph's stores give a similarity in [0, 1]: the hit's relevance is ours; an
                # item put with index=False is found, as there, with no score, after the rest
                item = self._keep(memory, op, seen, None if UNINDEXED in memory.tags else hit.relevance)
                if item is not None:
                    found.append((memory.id, item))
            # Best first by the score LangGraph shows (the relevance: its stores sort by their
            # similarity, and a caller pages by it), recall's order between equals.
            order = {h.id: i for i, h in enumerate(hits)}
            found.sort(key=lambda pair: (pair[1].score is None, -(pair[1].score or 0.0), order[pair[0]]))
            if len(found) >= wanted or len(hits) < k or k >= MAX_K:
                return found
            k = min(MAX_K, k * 4)

    def _newest(self, op: SearchOp, scopes: list[str], wanted: int) -> list[tuple[str, SearchItem]]:
        limit = max(50, wanted * 2)
        while True:
            memories = self.store.list(scopes=scopes, trust=self.trust, newest="updated", limit=limit,
                                       with_links=False)
            seen: set = set()
            found = [(m.id, item) for m in memories if (item := self._keep(m, op, seen)) is not None]
            if len(found) >= wanted or len(memories) < limit:
                return found
            limit *= 4

    @staticmethod
    def _passes(item: Item, wanted: dict[str, Any] | None) -> bool:
        return not wanted or all(matches(field_at(item.value, k), v) for k, v in wanted.items())

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        args = {"match_conditions": [[c.match_type, list(c.path)] for c in op.match_conditions or ()],
                "max_depth": op.max_depth, "limit": op.limit, "offset": op.offset}
        with logged(self.store, self.client, "list_namespaces", PREFIX, self.trust, args):
            names = {namespace_of(s) for s in self._scopes_under(())}
            names = {n for n in names if all(_namespace_matches(c, n) for c in op.match_conditions or ())}
            if op.max_depth is not None:
                names = {n[: op.max_depth] for n in names}
            return sorted(names)[op.offset: op.offset + op.limit]
