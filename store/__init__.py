"""The decay store: an agent's long-term memory in a file or on a server that fades,
recalls, links and imports. Plain Python (networkx for ``graph()``); no Qt."""

from .backends.targets import on_server, shown
from .model.config import KINDS, StoreConfig
from .model.errors import (
    ConfigError,
    DatabaseRefused,
    ImportRefused,
    ListenerLost,
    NotFound,
    StoreError,
    Unavailable,
    ValidationError,
)
from .model.memory import LAYERS, SENSITIVITIES, Entity, Memory
from .model.results import DeletedMemory, RememberResult, TickReport, UpdateResult
from .store import MemoryStore

__all__ = [
    "KINDS", "LAYERS", "SENSITIVITIES", "ConfigError", "DatabaseRefused", "ImportRefused", "ListenerLost", "DeletedMemory", "Entity", "Memory",
    "MemoryStore", "NotFound", "RememberResult", "StoreConfig", "StoreError", "TickReport", "Unavailable", "UpdateResult",
    "ValidationError", "on_server", "shown",
]
