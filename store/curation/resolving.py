"""What the owner decides about two conflicting memories (store/curation/conflicts.py finds
them): the newer supersedes the older, the two are merged into one, or both are kept;
each in one transaction, with its undo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..model.edges import KEPT, SUPERSEDED_BY, SUPERSEDES
from ..model.errors import NotFound, ValidationError
from ..schema.tables import DECAY_STATE, TOUCHED

if TYPE_CHECKING:
    from ..model.memory import Memory
    from ..model.results import UpdateResult
    from ..store import MemoryStore


@dataclass
class SupersedeResult:
    newer: str
    before: Memory      # the older memory before it was archived, for undo
    after: Memory
    edges: list[tuple[str, str, str]] = field(default_factory=list)


def _check_pair(store: MemoryStore, a: str, b: str) -> None:
    if a == b:
        raise ValidationError("older", "a memory cannot conflict with itself")
    for m in (a, b):
        if not store.exists(m):
            raise NotFound("memory", m)


def supersede(store: MemoryStore, newer_id: str, older_id: str) -> SupersedeResult:
    """``newer_id`` replaces ``older_id``: a ``supersedes`` edge and its inverse, and the
    older memory archived (out of recall). Undo with :func:`undo_supersede`."""
    with store.tables.write():
        _check_pair(store, newer_id, older_id)
        before = store.get(older_id)
        edges: list[tuple[str, str, str]] = []
        store.tables.edge_pair(newer_id, SUPERSEDES, older_id, SUPERSEDED_BY, store.now(), edges)
        store.tables.refresh_state(older_id)  # archived, and never due for a tick while superseded
        return SupersedeResult(newer_id, before, store.get(older_id), edges)


def undo_supersede(store: MemoryStore, result: SupersedeResult) -> Memory:
    """Take back :func:`supersede`: the edges go and the older memory's layer is as it was;
    anything else changed since (an agent's edit) stays."""
    with store.tables.write():
        remove_edges(store, result.edges)
        return store.restore_state(result.before, DECAY_STATE)


@dataclass
class MergeResult:
    """What :func:`merge` did: the newer memory's edit and the older one superseded."""

    edit: UpdateResult
    superseded: SupersedeResult

    @property
    def newer(self) -> str:
        return self.superseded.newer


def merge(store: MemoryStore, newer_id: str, older_id: str, text: str) -> MergeResult:
    """Two conflicting memories become one, in one transaction: ``newer_id`` takes ``text``
    (a person's edit) and supersedes ``older_id``. If either memory is gone, or the text is
    refused, nothing is written. Undo with :func:`undo_merge`."""
    with store.tables.write():
        _check_pair(store, newer_id, older_id)
        edit = store.update(newer_id, text=text)
        return MergeResult(edit, supersede(store, newer_id, older_id))


def undo_merge(store: MemoryStore, result: MergeResult) -> None:
    """Take back :func:`merge` in one transaction: the newer memory's text (and what the
    edit touched) and the older memory's layer as they were; other changes stay."""
    with store.tables.write():
        undo_supersede(store, result.superseded)
        store.restore_state(result.edit.before, ("text", *TOUCHED))


def keep_both(store: MemoryStore, a: str, b: str) -> list[tuple[str, str, str]]:
    """The person keeps both ``a`` and ``b``: a ``kept_with`` edge each way, and the pair is
    no longer reported as a conflict. Returns the edges written (undo: :func:`remove_edges`)."""
    with store.tables.write():
        _check_pair(store, a, b)
        edges: list[tuple[str, str, str]] = []
        store.tables.edge_pair(a, KEPT, b, KEPT, store.now(), edges)
        return edges


def remove_edges(store: MemoryStore, edges: list[tuple[str, str, str]]) -> None:
    """Delete ``edges`` (as :func:`supersede` or :func:`keep_both` returned them)."""
    with store.tables.write():
        store.conn.executemany("DELETE FROM edges WHERE src = ? AND edge = ? AND dst = ?", edges)
