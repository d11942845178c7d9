"""What the store's whole operations return: what changed, so that a caller (the
inspector's undo stack, a door's JSON answer) can show and reverse it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .memory import EDITABLE, Entity, Memory


@dataclass
class RememberResult:
    memory: Memory
    created: bool
    message: str
    similarity: float | None = None
    before: Memory | None = None  # the reinforced memory before, when not created
    entities_created: list[Entity] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    conflicts: list = field(default_factory=list)  # likely conflicts with older memories (store.conflicts)
    duplicate_by: str = ""  # when not created: "text" (by characters) or "meaning" (by vectors)

    def to_dict(self) -> dict[str, Any]:
        """The result as every door gives it in JSON (a server shows the memory as its
        caller may see it)."""
        return {"id": self.memory.id, "created": self.created, "message": self.message,
                "memory": self.memory.to_dict(), "conflicts": [c.reported() for c in self.conflicts]}


@dataclass
class UpdateResult:
    before: Memory
    after: Memory

    @property
    def changed(self) -> list[str]:
        """The fields whose value the update changed."""
        return [f for f in sorted(EDITABLE) if getattr(self.before, f) != getattr(self.after, f)]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.after.id, "changed": self.changed, "memory": self.after.to_dict()}


@dataclass
class DeletedMemory:
    """Everything :meth:`MemoryStore.restore` needs to put a deleted memory back."""

    row: dict[str, Any]
    edges: list[tuple[str, str, str, float | None]]
    recall_events: list[float]
    entities_removed: list[dict[str, Any]] = field(default_factory=list)
    vector: tuple[bytes, str | None] | None = None  # the stored vector and whose it was
    recall_vector: tuple[bytes, str | None] | None = None  # likewise its recall vector (store/meaning/vectors.py)

    @property
    def id(self) -> str:
        return self.row["id"]

    def to_dict(self) -> dict[str, Any]:
        """A forgotten memory as every door reports it (``restore`` brings it back)."""
        return {"forgotten": self.id, "text": self.row["text"], "restorable": True}


@dataclass
class TickReport:
    tick_id: int | None
    now: float
    transitions: list[tuple[str, str, str]]
    counts: dict[str, int]
    layer_counts: dict[str, int]
    changed: int
    offset_before: float = 0.0
    offset_after: float = 0.0

    def summary(self) -> str:
        if not self.counts:
            return "no memory changed layer"
        return ", ".join(f"{n} {label}" for label, n in sorted(self.counts.items(), key=lambda kv: -kv[1]))

    def to_dict(self) -> dict[str, Any]:
        """The tick as every door gives it in JSON: memories per transition and per layer."""
        return {"tick_id": self.tick_id, "summary": self.summary(), "changed": self.changed,
                "layers": self.layer_counts, "transitions": self.counts}

    def only(self, keep: Callable[[str], bool]) -> TickReport:
        """The report as told to someone who may see only the memories ``keep`` accepts: their
        transitions and counts (the layer totals left out)."""
        seen = [t for t in self.transitions if keep(t[0])]
        counts: dict[str, int] = {}
        for _, before, after in seen:
            counts[transition_label(before, after)] = counts.get(transition_label(before, after), 0) + 1
        return replace(self, transitions=seen, counts=counts, layer_counts={}, changed=len(seen))


def transition_label(before: str, after: str) -> str:
    return f"→ {after}" if after == "archived" else f"{before} → {after}"
