"""The model capability map: context window and prompt caching per model.

The map is a JSON resource (``resources/capabilities.json``) with two keys,
``capabilities`` (model → ``{"prompt_caching": bool}``) and ``context_caps``
(model → tokens). ``MNEMOSCOPE_CAPABILITY_MAP`` points at a replacement file.

Lookups forgive the spellings people use: case, a missing provider prefix
(``gpt-4o`` → ``openai/gpt-4o``) and a date suffix (``-2024-08-06``, ``-20240620``,
``@20250514``). An unknown model gets no context cap and no caching, and is warned
about once.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from importlib import resources

log = logging.getLogger(__name__)

ENV_VAR = "MNEMOSCOPE_CAPABILITY_MAP"
_DATE_SUFFIX = re.compile(r"(?:[-@]\d{4}-\d{2}-\d{2}|[-@]\d{8})$")


class CapabilityMapError(ValueError):
    """The capability map file is missing keys or is not valid JSON."""


@dataclass(frozen=True)
class ModelCapabilities:
    model_id: str  # the canonical id in the map, or the normalised input when unknown
    known: bool
    context_cap: int | None
    prompt_caching: bool


class CapabilityMap:
    def __init__(self, data: dict, source: str = "<dict>") -> None:
        if not isinstance(data, dict) or not isinstance(data.get("capabilities"), dict) or not isinstance(
            data.get("context_caps"), dict
        ):
            raise CapabilityMapError(
                f"capability map {source} must be a JSON object with 'capabilities' and 'context_caps' objects"
            )
        self.source = source
        self._caching: dict[str, bool] = {}
        self._caps: dict[str, int] = {}
        for key, value in data["capabilities"].items():
            if not isinstance(value, dict):
                raise CapabilityMapError(f"capability map {source}: capabilities[{key!r}] must be an object")
            self._caching[key.lower()] = bool(value.get("prompt_caching", False))
        for key, value in data["context_caps"].items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise CapabilityMapError(
                    f"capability map {source}: context_caps[{key!r}] must be a positive integer, got {value!r}"
                )
            self._caps[key.lower()] = value
        self._bare: dict[str, str] = {}
        for key in set(self._caching) | set(self._caps):
            bare = key.split("/", 1)[1] if "/" in key else key
            self._bare.setdefault(bare, key)
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_path(cls, path: str) -> CapabilityMap:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except OSError as exc:
            raise CapabilityMapError(f"cannot read capability map {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise CapabilityMapError(f"capability map {path} is not valid JSON: {exc}") from exc
        return cls(data, source=path)

    @classmethod
    def bundled(cls) -> CapabilityMap:
        text = resources.files("resources").joinpath("capabilities.json").read_text(encoding="utf-8")
        return cls(json.loads(text), source="bundled capabilities.json")

    @property
    def model_ids(self) -> list[str]:
        return sorted(set(self._caching) | set(self._caps))

    def _canonical(self, model_id: str) -> str | None:
        mid = model_id.strip().lower()
        candidates = [mid]
        stripped = _DATE_SUFFIX.sub("", mid)
        if stripped != mid:
            candidates.append(stripped)
        for cand in candidates:
            if cand in self._caching or cand in self._caps:
                return cand
            bare = cand.split("/", 1)[1] if "/" in cand else cand
            if bare in self._bare and ("/" not in cand or self._bare[bare] == cand):
                return self._bare[bare]
        return None

    def lookup(self, model_id: str | None) -> ModelCapabilities:
        if not model_id:
            return ModelCapabilities("", False, None, False)
        canon = self._canonical(model_id)
        if canon is None:
            norm = model_id.strip().lower()
            with self._lock:
                if norm not in self._warned:
                    self._warned.add(norm)
                    log.warning(
                        "model %r is not in the capability map (%s): no context cap, no prompt caching",
                        model_id,
                        self.source,
                    )
            return ModelCapabilities(norm, False, None, False)
        return ModelCapabilities(canon, True, self._caps.get(canon), self._caching.get(canon, False))


_active: tuple[str | None, CapabilityMap] | None = None
_active_lock = threading.Lock()


def capability_map() -> CapabilityMap:
    """The map in force: the file named by MNEMOSCOPE_CAPABILITY_MAP, else the bundled one."""
    global _active
    path = os.environ.get(ENV_VAR) or None
    current = _active
    if current is not None and current[0] == path:
        return current[1]
    with _active_lock:
        cmap = CapabilityMap.from_path(path) if path else CapabilityMap.bundled()
        _active = (path, cmap)
        return cmap


def model_capabilities(model_id: str | None) -> ModelCapabilities:
    return capability_map().lookup(model_id)


def get_context_cap_for_model(model_id: str | None) -> int | None:
    """The model's context window in tokens, or None when the model is unknown."""
    return model_capabilities(model_id).context_cap


def has_prompt_caching(model_id: str | None) -> bool:
    """True when the model's provider caches prompt prefixes."""
    return model_capabilities(model_id).prompt_caching
