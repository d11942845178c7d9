"""A networkx view of the store: memories and entities as nodes, edges as stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

if TYPE_CHECKING:
    from ..store import MemoryStore


def build_graph(store: MemoryStore) -> nx.MultiDiGraph:
    """Nodes carry ``type`` ('memory' or 'entity') and their main fields; every stored
    edge (both directions) is an edge with ``edge`` set to its kind."""
    g = nx.MultiDiGraph()
    with store.tables.reading():
        for m in store.tables.memories(with_links=False):
            g.add_node(m.id, type="memory", kind=m.kind, layer=m.layer, strength=m.strength, topic=m.topic,
                       who=m.who)
        for eid, name, kind, scope in store.conn.execute("SELECT id, name, kind, scope FROM entities"):
            g.add_node(eid, type="entity", name=name, kind=kind, scope=scope)
        for src, edge, dst in store.conn.execute("SELECT src, edge, dst FROM edges"):
            if src in g and dst in g:
                g.add_edge(src, dst, key=edge, edge=edge)
    return g

