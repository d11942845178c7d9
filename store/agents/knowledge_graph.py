"""The memory as the official MCP memory server's knowledge graph, for a caller with fixed
scopes and trust: what ``mnemoscope mcp --tools memory-server`` answers with the server's
own tools (create_entities, create_relations, add_observations, delete_entities,
delete_observations, delete_relations, read_graph, search_nodes, open_nodes).

The graph a caller sees is built from what it may see, and from nothing else:
- its entities are the entities of the caller's scopes and ``global``;
- an entity's observations are the texts of the memories that name it, of those scopes, at
  or below the caller's trust, oldest first (a memory naming two entities is an
  observation of both; a memory naming none is in no entity: recall finds it);
- an entity's type is the one it was given (an MCP memory import and these tools keep it
  on an ``entity_type`` edge), else the one an observation kept in its context, else its
  kind;
- its relations are the ``relation:<type>`` edges between those entities.

Writes go to the caller's first scope. An observation is a memory (a fact, linked to the
entity, at ``low`` or the caller's trust if lower), so it is recalled, fades and is seen in
the window like any other; deleting one forgets it (restorable), or, when the memory names
other entities too, only unlinks it from this one. Deleting an entity forgets its
observations the same way and removes the entity and every link to it (a memory the caller
cannot see keeps its text and fields; only its link to the deleted entity goes). An entity
or observation of a scope the caller may read but not write (``global``, unless it is one
of its scopes) is refused by name. Entity names are one entity whatever their case, as
everywhere in Mnemoscope; the server's own graph keeps ``Mara`` and ``mara`` apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model.edges import EDGE_COLUMNS, MENTIONED_IN, MENTIONS, RELATION, TYPE_PREFIX, TYPED
from ..model.errors import StoreError, ValidationError
from ..model.memory import (
    ENTITY_KINDS,
    SENSITIVITY_RANK,
    check_name,
    check_text,
    validate_fields,
    validate_scope,
)
from . import activity
from .capture import ENTITY_TYPES

if TYPE_CHECKING:
    from ..store import MemoryStore

CONTEXT_KEY = "mcp_memory"  # as the MCP memory import keeps an observation's entity and its type
MAX_RELATION_CHARS = 100


class NotInGraph(StoreError):
    """An entity the caller named is not in the graph it sees (the server's own words)."""


def kind_of(entity_type: str) -> str:
    low = entity_type.strip().lower()
    return low if low in ENTITY_KINDS else ENTITY_TYPES.get(low, "other")


@dataclass
class Node:
    id: str
    name: str
    kind: str
    scope: str
    entity_type: str | None = None  # kept by an observation
    observations: list[tuple[str, str, str]] = field(default_factory=list)  # (memory id, text, scope)

    def shown(self) -> dict[str, Any]:
        return {"name": self.name, "entityType": self.entity_type or self.kind,
                "observations": [text for _mid, text, _scope in self.observations]}


class Graph:
    """What a caller with ``scopes`` (the first is where it writes) and ``trust`` sees."""

    def __init__(self, store: MemoryStore, scopes: tuple[str, ...] | list[str], trust: str) -> None:
        if trust not in SENSITIVITY_RANK:
            raise ValidationError("trust", f"must be one of {', '.join(SENSITIVITY_RANK)}, got {trust!r}")
        self.store = store
        self.writable = tuple(dict.fromkeys(validate_scope(s) for s in scopes))
        self.readable = tuple(dict.fromkeys([*self.writable, "global"]))
        self.trust = trust
        self.levels = tuple(s for s, rank in SENSITIVITY_RANK.items() if rank <= SENSITIVITY_RANK[trust])

    # -- reading ---------------------------------------------------------------------------------
    def _nodes(self, names: list[str] | None = None) -> list[Node]:
        """The entities the caller sees (of ``names`` only, when given), in the order they
        were made, each with its observations."""
        ph = ",".join("?" * len(self.readable))
        nodes: dict[str, Node] = {}
        for eid, name, kind, scope in self.store.conn.execute(
                f"SELECT id, name, kind, scope FROM entities WHERE scope IN ({ph}) ORDER BY created_at, rowid",
                self.readable):
            if names is None or name.lower() in names:
                nodes[eid] = Node(eid, name, kind, scope)
        if not nodes:
            return []
        for eid, etype in entity_types(self.store).items():
            if eid in nodes:
                nodes[eid].entity_type = etype
        lph = ",".join("?" * len(self.levels))
        rows = self.store.conn.execute(
            f"SELECT x.dst, m.id, m.text, m.scope, m.context FROM edges x JOIN memories m ON m.id = x.src "
            f"WHERE x.edge = '{MENTIONS}' AND m.scope IN ({ph}) AND m.sensitivity IN ({lph}) "
            f"ORDER BY m.created_at, m.rowid", (*self.readable, *self.levels))
        for eid, mid, text, scope, ctx in rows:
            node = nodes.get(eid)
            if node is None:
                continue
            node.observations.append((mid, text, scope))
            if node.entity_type is None and ctx and CONTEXT_KEY in ctx:
                kept = _kept_type(ctx, node.name)
                if kept is not None:
                    node.entity_type = kept
        return list(nodes.values())

    def _relations(self, nodes: list[Node]) -> list[tuple[str, str, str]]:
        """(from id, type, to id) between the caller's entities, oldest first."""
        ids = {n.id for n in nodes}
        return [(a, edge[len(RELATION):], b) for a, edge, b in self.store.conn.execute(
            f"SELECT src, edge, dst FROM edges WHERE {self.store.tables.sql.like('edge')} ORDER BY created_at, rowid",
            (RELATION + "%",)) if a in ids and b in ids]

    def _answer(self, shown: list[Node], every: list[Node], endpoints: str = "any") -> dict[str, Any]:
        names = {n.id: n.name for n in every}
        chosen = {n.id for n in shown}
        rels = [(a, t, b) for a, t, b in self._relations(every)
                if endpoints == "all" or a in chosen or b in chosen]
        return {"entities": [n.shown() for n in shown],
                "relations": [{"from": names[a], "to": names[b], "relationType": t} for a, t, b in rels]}

    def read(self) -> dict[str, Any]:
        """Every entity the caller sees, with its observations and relations."""
        with self.store.tables.reading():
            nodes = self._nodes()
            return self._answer(nodes, nodes, "all")

    def search(self, query: str) -> dict[str, Any]:
        """Entities whose name, type or an observation holds ``query`` (ignoring case), and
        the relations with one of them at either end."""
        low = query.lower()
        with self.store.tables.reading():
            nodes = self._nodes()
            found = [n for n in nodes if low in n.name.lower() or low in (n.entity_type or n.kind).lower()
                     or any(low in text.lower() for _m, text, _s in n.observations)]
            return self._answer(found, nodes)

    def open(self, names: list[str]) -> dict[str, Any]:
        """The entities called one of ``names``, and the relations with one of them at either end."""
        wanted = set(names)
        with self.store.tables.reading():
            nodes = self._nodes()
            return self._answer([n for n in nodes if n.name in wanted], nodes)

    # -- writing ---------------------------------------------------------------------------------
    def _find(self, nodes: list[Node], name: str) -> Node | None:
        """The caller's entity called ``name``: that spelling first, then any case (this
        server's scope first, then its others, then global)."""
        order = {s: i for i, s in enumerate(self.readable)}
        same = [n for n in nodes if n.name == name] or [n for n in nodes if n.name.lower() == name.lower()]
        return min(same, key=lambda n: order.get(n.scope, len(order)), default=None)

    def _sensitivity(self) -> str:
        return "low" if SENSITIVITY_RANK["low"] <= SENSITIVITY_RANK[self.trust] else self.trust

    def _observe(self, node: Node, text: str, entity_type: str | None) -> str:
        """A new observation of ``node``: a memory in the caller's scope, linked to it."""
        result = self.store.remember(
            text, kind="fact", scope=self.writable[0], sensitivity=self._sensitivity(), dedupe=False,
            trust=self.trust, source="mcp memory tools",
            context={CONTEXT_KEY: {"entity": node.name, "entityType": entity_type or node.entity_type or node.kind}})
        mid = result.memory.id
        # Linked to this entity alone (remember links the entities a text names too: the
        # server's observation belongs to one).
        self.store.conn.execute(f"DELETE FROM edges WHERE (src = ? AND edge = '{MENTIONS}') OR "
                                f"(dst = ? AND edge = '{MENTIONED_IN}')", (mid, mid))
        self.store.tables.edge_pair(mid, MENTIONS, node.id, MENTIONED_IN, self.store.now(), [])
        node.observations.append((mid, text, self.writable[0]))
        return mid

    def create_entities(self, entities: list[dict[str, Any]]) -> dict[str, Any]:
        """Make each entity the graph does not have yet (by name), with its observations;
        the answer lists those it made, as given."""
        checked = [(check_name(e["name"], "name"), _type(e["entityType"]),
                    [_text(self.store, o, "observations") for o in e.get("observations") or []]) for e in entities]
        ids: list[str] = []
        with self.store.tables.write():
            nodes = self._nodes()
            before = {n.name for n in nodes}
            made = [e for e, (name, _t, _o) in zip(entities, checked) if name not in before]
            for name, etype, observations in checked:
                if name in before:
                    continue
                node = self._find(nodes, name) if any(n.name.lower() == name.lower() for n in nodes) else None
                if node is None or node.scope not in self.writable:
                    entity = self.store.add_entity(name, kind_of(etype), self.writable[0])
                    node = Node(entity.id, entity.name, entity.kind, entity.scope, etype)
                    nodes.append(node)
                    keep_type(self.store, entity.id, etype)
                for text in dict.fromkeys(observations):
                    if text not in {t for _m, t, _s in node.observations}:
                        ids.append(self._observe(node, text, etype))
        return {"entities": [_entity_answer(e) for e in made], "memory_ids": ids}

    def create_relations(self, relations: list[dict[str, Any]]) -> dict[str, Any]:
        """Add each relation the graph does not have yet (an end that is no entity yet
        becomes one, of kind other); the answer lists those it added."""
        checked = [(check_name(r["from"], "from"), _relation(r["relationType"]), check_name(r["to"], "to"))
                   for r in relations]
        added = []
        with self.store.tables.write():
            nodes = self._nodes()
            have = {(a, t, b) for a, t, b in self._relations(nodes)}
            now = self.store.now()
            for rel, (src, rtype, dst) in zip(relations, checked):
                ends = []
                for name in (src, dst):
                    node = self._find(nodes, name)
                    if node is None:
                        entity = self.store.add_entity(name, "other", self.writable[0])
                        node = Node(entity.id, entity.name, entity.kind, entity.scope)
                        nodes.append(node)
                    ends.append(node.id)
                edge = (ends[0], rtype, ends[1])
                if edge in have:
                    continue
                have.add(edge)
                self.store.conn.execute("INSERT INTO edges (src, edge, dst, created_at) VALUES (?,?,?,?)",
                                        (ends[0], RELATION + rtype, ends[1], now))
                added.append({"from": rel["from"], "to": rel["to"], "relationType": rel["relationType"]})
        return {"relations": added, "memory_ids": []}

    def add_observations(self, observations: list[dict[str, Any]]) -> dict[str, Any]:
        """Add to each named entity the observations it does not have yet; an entity the
        graph does not have refuses the whole call (nothing is written)."""
        checked = [(check_name(o["entityName"], "entityName"), [_text(self.store, c, "contents") for c in o["contents"]])
                   for o in observations]
        results, ids = [], []
        with self.store.tables.write():
            nodes = self._nodes()
            found = []
            for name, contents in checked:
                node = self._find(nodes, name)
                if node is None:
                    raise NotInGraph(f"Entity with name {name} not found")
                found.append((node, contents))
            for (node, contents), obs in zip(found, observations):
                had = {t for _m, t, _s in node.observations}
                new = [c for c in contents if c not in had]
                for text in dict.fromkeys(new):
                    ids.append(self._observe(node, text, None))
                results.append({"entityName": obs["entityName"], "addedObservations": new})
        return {"results": results, "memory_ids": ids}

    def _writable(self, node: Node, what: str) -> None:
        if node.scope not in self.writable:
            raise StoreError(f"{what} is in scope {node.scope!r}, which this server may read but not change; it "
                             f"changes {', '.join(self.writable)}")

    def _let_go(self, node: Node, mid: str, client: str) -> None:
        """The memory ``mid`` is no longer an observation of ``node``: forgotten
        (restorable) when it names no other entity, else unlinked from this one."""
        others = self.store.conn.execute(f"SELECT count(*) FROM edges WHERE src = ? AND edge = '{MENTIONS}' "
                                         "AND dst != ?", (mid, node.id)).fetchone()[0]
        if others:
            self.store.conn.execute(f"DELETE FROM edges WHERE (src = ? AND edge = '{MENTIONS}' AND dst = ?) OR "
                                    f"(src = ? AND edge = '{MENTIONED_IN}' AND dst = ?)", (mid, node.id, node.id, mid))
        else:
            activity.forget(self.store, mid, client=client)

    def delete_entities(self, names: list[str], client: str = "") -> dict[str, Any]:
        """Delete the named entities (names the graph does not have are passed over), their
        observations and every relation they are in."""
        ids = []
        with self.store.tables.write():
            nodes = self._nodes()
            doomed = [n for n in (self._find(nodes, name) for name in dict.fromkeys(names)) if n is not None]
            for node in doomed:
                self._writable(node, f"entity {node.name!r}")
                for mid, _text, scope in node.observations:
                    self._writable(Node(mid, node.name, node.kind, scope), f"an observation of {node.name!r}")
            for node in doomed:
                for mid, _text, _scope in node.observations:
                    self._let_go(node, mid, client)
                    ids.append(mid)
                self.store.conn.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (node.id, node.id))
                self.store.conn.execute("DELETE FROM entities WHERE id = ?", (node.id,))
        return {"success": True, "message": "Entities deleted successfully", "memory_ids": ids}

    def delete_observations(self, deletions: list[dict[str, Any]], client: str = "") -> dict[str, Any]:
        """Take each given observation from its entity (an entity or text the graph does
        not have is passed over)."""
        ids = []
        with self.store.tables.write():
            nodes = self._nodes()
            chosen = []
            for d in deletions:
                node = self._find(nodes, d["entityName"])
                if node is None:
                    continue
                texts = set(d["observations"])
                for mid, text, scope in node.observations:
                    if text in texts:
                        self._writable(Node(mid, node.name, node.kind, scope), f"observation {text[:60]!r}")
                        chosen.append((node, mid))
            for node, mid in {(n.id, m): (n, m) for n, m in chosen}.values():
                self._let_go(node, mid, client)
                ids.append(mid)
        return {"success": True, "message": "Observations deleted successfully", "memory_ids": ids}

    def delete_relations(self, relations: list[dict[str, Any]]) -> dict[str, Any]:
        """Delete each given relation the graph has."""
        with self.store.tables.write():
            nodes = self._nodes()
            for rel in relations:
                src, dst = self._find(nodes, rel["from"]), self._find(nodes, rel["to"])
                if src is None or dst is None or src.name != rel["from"] or dst.name != rel["to"]:
                    continue
                self.store.conn.execute("DELETE FROM edges WHERE src = ? AND edge = ? AND dst = ?",
                                        (src.id, RELATION + rel["relationType"], dst.id))
        return {"success": True, "message": "Relations deleted successfully", "memory_ids": []}


def entity_types(store: MemoryStore) -> dict[str, str]:
    """Entity id -> the free-form type a source gave it (an MCP memory entity's
    entityType), where one was kept."""
    return {src: dst[len(TYPE_PREFIX):] for src, dst in store.conn.execute(
        f"SELECT src, dst FROM edges WHERE edge = '{TYPED}'")}


def keep_type(store: MemoryStore, entity_id: str, entity_type: str, now: float | None = None) -> None:
    """Keep the type a source gave an entity (its first: one given later is left out),
    inside the caller's transaction."""
    if entity_type and store.conn.execute(f"SELECT 1 FROM edges WHERE src = ? AND edge = '{TYPED}'",
                                          (entity_id,)).fetchone() is None:
        store.conn.execute(store.tables.sql.insert_if_absent("edges", EDGE_COLUMNS),
                           (entity_id, TYPED, TYPE_PREFIX + entity_type, store.now() if now is None else now))


def _kept_type(ctx: str, name: str) -> str | None:
    try:
        kept = json.loads(ctx).get(CONTEXT_KEY)
    except (ValueError, AttributeError):
        return None
    if isinstance(kept, dict) and isinstance(kept.get("entityType"), str) and \
            str(kept.get("entity", "")).lower() == name.lower():
        return kept["entityType"]
    return None


def _text(store: MemoryStore, value: Any, name: str) -> str:
    """An observation's text, checked as a memory's text is (before anything is written)."""
    try:
        return validate_fields({"text": value}, store.config, partial=True)["text"]
    except ValidationError as exc:
        raise ValidationError(name, str(exc).split(": ", 1)[-1]) from None


def _type(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 100:
        raise ValidationError("entityType", "must be a string of at most 100 characters")
    return check_text("entityType", value)


def _relation(value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError("relationType", "must be a string")
    rel = check_text("relationType", value).strip()
    if not rel or len(rel) > MAX_RELATION_CHARS or any(ord(ch) < 32 for ch in rel):
        raise ValidationError("relationType", f"must be 1 to {MAX_RELATION_CHARS} printable characters")
    return rel


def _entity_answer(entity: dict[str, Any]) -> dict[str, Any]:
    return {"name": entity["name"], "entityType": entity["entityType"], "observations": list(entity.get("observations")
                                                                                          or [])}
