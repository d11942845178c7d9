"""What the owner decides about two conflicting memories: supersede, merge, keep both."""

from __future__ import annotations

from mnemoscope.store.curation import resolving

from ..session import StoreSession
from .base import StoreCommand


class SupersedeCommand(StoreCommand):
    """``newer`` replaces ``older``: the older memory is archived (store.conflicts.supersede)."""

    def __init__(self, session: StoreSession, newer: str, older: str) -> None:
        super().__init__(session, "Supersede memory")
        self.newer, self.older = newer, older
        self.result = None

    def apply(self) -> None:
        self.result = resolving.supersede(self.session.store, self.newer, self.older)
        self.session.notify({self.newer, self.older})

    def revert(self) -> None:
        resolving.undo_supersede(self.session.store, self.result)
        self.session.notify({self.newer, self.older})


class MergeCommand(StoreCommand):
    """Two conflicting memories become one (store.conflicts.merge): one store operation,
    one undo step; undo puts back only what the merge changed."""

    def __init__(self, session: StoreSession, newer: str, older: str, text: str) -> None:
        super().__init__(session, "Merge memories")
        self.newer, self.older, self.text = newer, older, text
        self.result: resolving.MergeResult | None = None

    def apply(self) -> None:
        self.result = resolving.merge(self.session.store, self.newer, self.older, self.text)
        self.session.notify({self.newer, self.older})

    def revert(self) -> None:
        resolving.undo_merge(self.session.store, self.result)
        self.session.notify({self.newer, self.older})


class KeepBothCommand(StoreCommand):
    """Two memories that seemed to conflict both stay: the pair is no longer flagged."""

    def __init__(self, session: StoreSession, a: str, b: str) -> None:
        super().__init__(session, "Keep both memories")
        self.a, self.b = a, b
        self.edges: list[tuple[str, str, str]] = []

    def apply(self) -> None:
        self.edges = resolving.keep_both(self.session.store, self.a, self.b)
        self.session.notify({self.a, self.b})

    def revert(self) -> None:
        resolving.remove_edges(self.session.store, self.edges)
        self.session.notify({self.a, self.b})
