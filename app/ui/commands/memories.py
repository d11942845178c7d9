"""The memory editor's and the lists' commands: new, edit, delete, pin, and bringing a forgotten memory back."""

from __future__ import annotations

from typing import Any

from mnemoscope.store import DeletedMemory, Memory
from mnemoscope.store.agents import activity
from mnemoscope.store.agents.activity import Forgotten

from ..session import StoreSession
from .base import StoreCommand


class NewMemoryCommand(StoreCommand):
    """Remember a memory (a near-duplicate reinforces the existing one instead)."""

    def __init__(self, session: StoreSession, fields: dict[str, Any]) -> None:
        super().__init__(session, "New memory")
        self.fields = fields
        self.memory_id: str | None = None
        self.created = False
        self.before: Memory | None = None
        self.snapshot: DeletedMemory | None = None
        self.message = ""

    def apply(self) -> None:
        store = self.session.store
        if self.snapshot is not None:
            store.restore(self.snapshot)
        elif self.memory_id is None:
            result = store.remember(**self.fields)
            self.memory_id, self.created, self.message = result.memory.id, result.created, result.message
            self.before = result.before
            if not self.created:
                self.setText("Reinforce memory")
                by = "by meaning" if result.duplicate_by == "meaning" else "by its characters"
                self.message = (f"Reinforced memory {self.memory_id} (“{_short(result.memory.text)}”), which "
                                f"already says this ({by}, similarity {result.similarity:.2f}), instead of adding "
                                "a copy. Edit › Undo takes the reinforcement back.")
        else:  # redo of a reinforcement
            store.reinforce(self.memory_id)
        self.session.notify({self.memory_id})
        self.session.select(self.memory_id)

    def revert(self) -> None:
        store = self.session.store
        if self.created:
            self.snapshot = store.delete(self.memory_id)
            self.session.select(None)
        else:  # only what the reinforcement wrote: an agent's edit made since stays
            store.restore_state(self.before, store.REINFORCED)
        self.session.notify({self.memory_id})


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EditMemoryCommand(StoreCommand):
    """Change some fields; undo puts back those fields only, so whatever an agent did to
    the memory meanwhile (recalls, other fields) stays."""

    def __init__(self, session: StoreSession, memory_id: str, changes: dict[str, Any]) -> None:
        super().__init__(session, "Edit memory")
        self.memory_id = memory_id
        self.changes = changes
        self.before: dict[str, Any] | None = None

    def apply(self) -> None:
        result = self.session.store.update(self.memory_id, **self.changes)
        if self.before is None:
            self.before = {k: getattr(result.before, k) for k in self.changes}
        self.session.notify({self.memory_id})

    def revert(self) -> None:
        self.session.store.update(self.memory_id, **self.before)
        self.session.notify({self.memory_id})


class DeleteMemoryCommand(StoreCommand):
    def __init__(self, session: StoreSession, memory_id: str) -> None:
        super().__init__(session, "Delete memory")
        self.memory_id = memory_id
        self.snapshot: DeletedMemory | None = None

    def apply(self) -> None:
        self.snapshot = self.session.store.delete(self.memory_id)
        if self.session.selected_id == self.memory_id:
            self.session.select(None)
        self.session.notify({self.memory_id})

    def revert(self) -> None:
        self.session.store.restore(self.snapshot)
        self.session.notify({self.memory_id})
        self.session.select(self.memory_id)


class PinCommand(StoreCommand):
    """Pin a memory; undo puts back its pin and what pinning touched (its strength's start,
    so the days towards the archive count from where they were), nothing else."""

    def __init__(self, session: StoreSession, memory_id: str) -> None:
        super().__init__(session, "Pin memory")
        self.memory_id = memory_id
        self.before: Memory | None = None

    def apply(self) -> None:
        result = self.session.store.pin(self.memory_id)
        self.before = self.before or result.before
        self.session.notify({self.memory_id})

    def revert(self) -> None:
        store = self.session.store
        store.restore_state(self.before, ("pinned", *store.TOUCHED))
        self.session.notify({self.memory_id})


class RestoreForgottenCommand(StoreCommand):
    """Bring back a memory an agent forgot; undo forgets it again (restorable as before).
    Restored elsewhere meanwhile, or its id taken: ``error`` says so and no step is left."""

    def __init__(self, session: StoreSession, forgotten: Forgotten) -> None:
        super().__init__(session, "Restore forgotten memory")
        self.forgotten = forgotten

    def apply(self) -> None:
        activity.restore_forgotten(self.session.store, self.forgotten.memory_id)
        self.session.notify({self.forgotten.memory_id})
        self.session.select(self.forgotten.memory_id)

    def revert(self) -> None:
        activity.forget(self.session.store, self.forgotten.memory_id, client=self.forgotten.client)
        if self.session.selected_id == self.forgotten.memory_id:
            self.session.select(None)
        self.session.notify({self.forgotten.memory_id})
