"""The decay store: an agent's long-term memory in SQLite that fades, recalls, links and
imports. Plain Python (sqlite-utils; networkx for ``graph()``); no Qt."""

from .config import KINDS, StoreConfig
from .errors import (
    ConfigError,
    DatabaseRefused,
    ImportRefused,
    NotFound,
    StoreError,
    Unavailable,
    ValidationError,
)
from .model import LAYERS, SENSITIVITIES, Entity, Memory
from .results import DeletedMemory, RememberResult, TickReport, UpdateResult
from .store import MemoryStore

__all__ = [
    "KINDS", "LAYERS", "SENSITIVITIES", "ConfigError", "DatabaseRefused", "ImportRefused", "DeletedMemory", "Entity", "Memory",
    "MemoryStore", "NotFound", "RememberResult", "StoreConfig", "StoreError", "TickReport", "Unavailable", "UpdateResult",
    "ValidationError",
]
