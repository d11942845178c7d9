"""LangChain's ``BaseRetriever`` over the store's recall.

``MnemoscopeRetriever(store=…, scope="global", trust="medium", k=5)`` returns the ``k``
memories most relevant to a query, visible from ``scope`` (and global) at ``trust``, as
Documents: ``page_content`` is the memory's text; ``metadata`` carries its ``id``, the
recall ``score`` and its explanation (``why``), and its kind, scope, layer, strength and
entities. A memory above the trust comes back from recall redacted and is left out here:
a Document has no way to say "something is here". Each call is an agent's use of what it
recalls, so the memories returned are reinforced, and the call is logged in the activity
log as client ``langchain`` (door ``python``), in the same transaction as the reinforcement.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from mnemoscope.store import MemoryStore
from mnemoscope.store.model.memory import SENSITIVITY_RANK, validate_scope
from pydantic import ConfigDict, Field, field_validator

from .calls import logged

CLIENT = "langchain"


class MnemoscopeRetriever(BaseRetriever):
    """Memories from a Mnemoscope store for a LangChain chain or agent."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MemoryStore
    scope: str = "global"
    trust: str = "medium"
    k: int = Field(default=5, ge=1, le=1000)
    reinforce: bool = True
    client: str = CLIENT
    # Leave out hits under this relevance (store/recall/relevance.py); None: the store's config (0).
    min_relevance: float | None = Field(default=None, ge=0, le=1)

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str) -> str:
        return validate_scope(value)

    @field_validator("trust")
    @classmethod
    def _trust(cls, value: str) -> str:
        if value not in SENSITIVITY_RANK:
            raise ValueError(f"trust must be one of {', '.join(SENSITIVITY_RANK)}, got {value!r}")
        return value

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        with logged(self.store, self.client, "recall", self.scope, self.trust, {"query": query, "k": self.k},
                    writes=self.reinforce) as ids:
            hits = self.store.recall(query, k=self.k, scope=self.scope, trust=self.trust, explain=True,
                                     reinforce=self.reinforce, min_relevance=self.min_relevance)
            docs = [Document(page_content=h.text, id=h.id,
                             metadata={"id": h.id, "score": h.score, "relevance": h.relevance, "parts": h.parts,
                                       "why": h.why, "kind": h.kind, "scope": h.scope,
                                       "layer": h.layer, "strength": h.strength, "importance": h.importance,
                                       "entities": list(h.entities)})
                    for h in hits if not h.redacted]
            ids.extend(d.metadata["id"] for d in docs)
            return docs
