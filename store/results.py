"""What the store's whole operations return: what changed, so that a caller (the
inspector's undo stack, a door's JSON answer) can show and reverse it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import Entity, Memory


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


@dataclass
class UpdateResult:
    before: Memory
    after: Memory


@dataclass
class DeletedMemory:
    """Everything :meth:`MemoryStore.restore` needs to put a deleted memory back."""

    row: dict[str, Any]
    edges: list[tuple[str, str, str, float | None]]
    recall_events: list[float]
    entities_removed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.row["id"]


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


def transition_label(before: str, after: str) -> str:
    return f"→ {after}" if after == "archived" else f"{before} → {after}"
