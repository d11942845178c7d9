"""What an export wrote, and what its format could not carry: every export (the command
line prints it, ``--json`` gives it whole) says where each memory went and counts what
was left behind, so no memory is ever left out without a word."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NotCarried:
    """Something of ``count`` memories (or entities) that the format has no place for."""

    what: str
    count: int
    why: str

    def __str__(self) -> str:
        return f"{self.what}: {self.count:,} ({self.why})"


@dataclass
class ExportReport:
    format: str
    out: str | None
    memories: int = 0  # the memories the export was asked for
    written: int = 0  # ... and how many of them it wrote (each once)
    entities: int = 0
    relations: int = 0
    placed: dict[str, int] = field(default_factory=dict)  # "memory -> observation of its entity": count
    not_carried: list[NotCarried] = field(default_factory=list)
    data: str = ""  # what was written (a folder's export: its notes, one after another)

    def place(self, what: str, n: int = 1) -> None:
        self.placed[what] = self.placed.get(what, 0) + n

    def lose(self, what: str, count: int, why: str) -> None:
        if count:
            self.not_carried.append(NotCarried(what, count, why))

    def summary(self) -> str:
        where = f" to {self.out}" if self.out else ""
        text = (f"exported {self.written:,} of {self.memories:,} memories, {self.entities:,} entities and "
                f"{self.relations:,} relations as {self.format}{where}")
        if self.written < self.memories:
            text += f"; {self.memories - self.written:,} memories NOT written"
        return text

    def lines(self) -> list[str]:
        """The report as the command line prints it (on standard error)."""
        out = [self.summary()]
        out += [f"  {n:>7,}  {what}" for what, n in self.placed.items()]
        if self.not_carried:
            out.append(f"not carried by {self.format} (export --format jsonl keeps everything):")
            out += [f"  {x}" for x in self.not_carried]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "out": self.out, "memories": self.memories, "written": self.written,
                "entities": self.entities, "relations": self.relations, "placed": dict(self.placed),
                "summary": self.summary(),
                "not_carried": [{"what": x.what, "count": x.count, "why": x.why} for x in self.not_carried]}


@dataclass
class Snapshot:
    """What an export reads, in one read: the memories (rows of ``memory_rows``, oldest
    first), the entities each names (by name), every entity and every relation."""

    memories: list[dict[str, Any]]
    mentions: dict[str, list[str]]  # memory id -> entity ids, by name
    entities: dict[str, dict[str, Any]]  # entity id -> name, kind, scope, aliases, created_at, type (oldest first)
    relations: list[tuple[str, str, str]]  # (entity id, type, entity id)


def snapshot(store: Any, scope: str | None = None) -> Snapshot:
    import json

    from ..agents.knowledge_graph import entity_types
    from ..model.edges import MENTIONS, RELATION

    wanted = {m.id for m in store.list(scope=scope, with_links=False)}
    with store.tables.reading():
        rows = [r for r in store.tables.rows("SELECT * FROM memory_rows ORDER BY created_at, id") if r["id"] in wanted]
        types = entity_types(store)
        entities = {eid: {"name": name, "kind": kind, "scope": escope, "aliases": json.loads(aliases or "[]"),
                          "created_at": created, "type": types.get(eid, "")}
                    for eid, name, kind, escope, aliases, created in store.conn.execute(
                        "SELECT id, name, kind, scope, aliases, created_at FROM entities "
                        "ORDER BY created_at, rowid")}
        mentions: dict[str, list[str]] = {}
        for src, dst in store.conn.execute(f"SELECT src, dst FROM edges WHERE edge = '{MENTIONS}'"):
            if src in wanted and dst in entities:
                mentions.setdefault(src, []).append(dst)
        relations = [(a, edge[len(RELATION):], b) for a, edge, b in store.conn.execute(
            f"SELECT src, edge, dst FROM edges WHERE {store.tables.sql.like('edge')} ORDER BY created_at, rowid",
            (RELATION + "%",))
            if a in entities and b in entities]
    for ids in mentions.values():
        ids.sort(key=lambda e: (entities[e]["name"].lower(), entities[e]["name"]))
    return Snapshot(rows, mentions, entities, relations)
