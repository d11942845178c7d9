"""The model capability map: context window, prompt caching and output reserve per model.

The map is a JSON resource (``resources/capabilities.json``) with two keys,
``capabilities`` (model → ``{"prompt_caching": bool}``, optionally with
``"reserve_output_tokens"``, ``"input_price_per_1k"`` (US dollars) and, for Anthropic
models, the ``"api_id"`` Anthropic's API spells the model with) and ``context_caps`` (model → tokens).
``MNEMOSCOPE_CAPABILITY_MAP`` (or the reference's ``LLM_CAPABILITY_MAP_PATH``) points
at a replacement file.

Lookups forgive the spellings people use: case, a missing provider prefix
(``gpt-4o`` → ``openai/gpt-4o``), a date suffix (``-2024-08-06``, ``-20240620``,
``@20250514``) and dashes for dots between digits (``claude-sonnet-4-5`` →
``anthropic/claude-sonnet-4.5``). An unknown model gets no context cap and no caching,
and is warned about once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
from dataclasses import dataclass
from importlib import resources

log = logging.getLogger(__name__)

ENV_VAR = "MNEMOSCOPE_CAPABILITY_MAP"
ENV_VARS = (ENV_VAR, "LLM_CAPABILITY_MAP_PATH")  # ours first, then the reference's name
_DATE_SUFFIX = re.compile(r"(?:[-@]\d{4}-\d{2}-\d{2}|[-@]\d{8})$")
_DOT_BETWEEN_DIGITS = re.compile(r"(?<=\d)\.(?=\d)")
MAX_DEFAULT_RESERVE = 4096
# What a prompt is compiled for when the caller names nothing: the inspector's preview,
# ``mnemoscope preview`` and the agents' compile_prompt alike.
DEFAULT_MODEL = "openai/gpt-4o"
DEFAULT_MAX_TOKENS = 4096


def default_reserve(context_cap: int) -> int:
    """The output reserve of a model whose map entry names none: an eighth of its window,
    at most 4,096 tokens."""
    return min(MAX_DEFAULT_RESERVE, context_cap // 8)


def dashed(model_id: str) -> str:
    """``model_id`` with dashes for dots between digits (``claude-sonnet-4.5`` →
    ``claude-sonnet-4-5``), as Anthropic's API spells versions."""
    return _DOT_BETWEEN_DIGITS.sub("-", model_id)


def _key(model_id: str) -> str:
    return dashed(model_id.strip().lower())


class CapabilityMapError(ValueError):
    """The capability map file is missing keys or is not valid JSON."""


@dataclass(frozen=True)
class ModelCapabilities:
    model_id: str  # the canonical id in the map, or the normalised input when unknown
    known: bool
    context_cap: int | None
    prompt_caching: bool
    reserve_output_tokens: int | None = None  # tokens kept free in the window for the reply
    api_id: str | None = None  # how the provider's own API spells the model, when the map says
    input_price_per_1k: float | None = None  # list price of 1,000 input tokens in US dollars, when the map says


class CapabilityMap:
    def __init__(self, data: dict, source: str = "<dict>") -> None:
        if not isinstance(data, dict) or not isinstance(data.get("capabilities"), dict) or not isinstance(
            data.get("context_caps"), dict
        ):
            raise CapabilityMapError(
                f"capability map {source} must be a JSON object with 'capabilities' and 'context_caps' objects"
            )
        self.source = source
        self._ids: dict[str, str] = {}  # lookup key -> the id as the map spells it (lower case)
        self._entries: dict[str, dict] = {}
        self._caps: dict[str, int] = {}
        for key, value in data["capabilities"].items():
            where = f"capability map {source}: capabilities[{key!r}]"
            if not isinstance(value, dict):
                raise CapabilityMapError(f"{where} must be an object")
            reserve = value.get("reserve_output_tokens")
            if reserve is not None and (isinstance(reserve, bool) or not isinstance(reserve, int) or reserve < 0):
                raise CapabilityMapError(f"{where}.reserve_output_tokens must be a whole number >= 0, got {reserve!r}")
            api_id = value.get("api_id")
            if api_id is not None and not isinstance(api_id, str):
                raise CapabilityMapError(f"{where}.api_id must be a string, got {api_id!r}")
            price = value.get("input_price_per_1k")
            if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float))
                                      or not math.isfinite(price) or price < 0):
                raise CapabilityMapError(f"{where}.input_price_per_1k must be a number >= 0, got {price!r}")
            self._ids[_key(key)] = key.lower()
            self._entries[_key(key)] = value
        for key, value in data["context_caps"].items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise CapabilityMapError(
                    f"capability map {source}: context_caps[{key!r}] must be a positive integer, got {value!r}"
                )
            self._ids.setdefault(_key(key), key.lower())
            self._caps[_key(key)] = value
        self._bare: dict[str, str] = {}
        for key in self._ids:
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
        text = resources.files("mnemoscope.resources").joinpath("capabilities.json").read_text(encoding="utf-8")
        return cls(json.loads(text), source="bundled capabilities.json")

    @property
    def model_ids(self) -> list[str]:
        return sorted(self._ids.values())

    def _canonical(self, model_id: str) -> str | None:
        mid = _key(model_id)
        candidates = [mid]
        stripped = _DATE_SUFFIX.sub("", mid)
        if stripped != mid:
            candidates.append(stripped)
        for cand in candidates:
            if cand in self._ids:
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
        entry = self._entries.get(canon, {})
        cap = self._caps.get(canon)
        reserve = entry.get("reserve_output_tokens")
        if reserve is None and cap is not None:
            reserve = default_reserve(cap)
        price = entry.get("input_price_per_1k")
        return ModelCapabilities(self._ids[canon], True, cap, bool(entry.get("prompt_caching", False)), reserve,
                                 entry.get("api_id"), None if price is None else float(price))


_active: tuple[str | None, CapabilityMap] | None = None
_active_lock = threading.Lock()


def capability_map() -> CapabilityMap:
    """The map in force: the file named by MNEMOSCOPE_CAPABILITY_MAP (or
    LLM_CAPABILITY_MAP_PATH), else the bundled one."""
    global _active
    path = next((os.environ[name] for name in ENV_VARS if os.environ.get(name)), None)
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
