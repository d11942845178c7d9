"""Topic shift: does the current user message change the subject of the conversation?

The current message is compared with the centroid of the recent user messages; a cosine
distance above the threshold (0.35, as in the compiler reference) is a shift. The
threshold comes from ``MNEMOSCOPE_ATTENTION_SHIFT_COSINE_THRESHOLD`` or the reference's
``LOD_ATTENTION_SHIFT_COSINE_THRESHOLD``. The compiler embeds nothing itself: the caller
passes an ``embed(list[str]) -> array`` callable (the store's embedder, through the
bridge) or its own vectors.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

ATTENTION_SHIFT_THRESHOLD = 0.35
THRESHOLD_ENV = "MNEMOSCOPE_ATTENTION_SHIFT_COSINE_THRESHOLD"
THRESHOLD_ENV_ALIASES = (THRESHOLD_ENV, "LOD_ATTENTION_SHIFT_COSINE_THRESHOLD")  # the reference's name too
RECENT_USER_MESSAGES = 5  # how far back "recent" reaches: the subject of the last few turns

Embed = Callable[[list[str]], Any]


class EmbeddingError(ValueError):
    """Vectors that cannot be compared: wrong shape, mismatched dimensions, zeros, nan."""


@dataclass(frozen=True, slots=True)
class AttentionShift:
    """One measurement: ``distance`` is the cosine distance (0 same direction, 2 opposite)
    of the current message from the centroid of ``compared`` recent user messages."""

    shifted: bool
    distance: float
    threshold: float
    compared: int

    def to_dict(self) -> dict[str, Any]:
        return {"shifted": self.shifted, "distance": self.distance, "threshold": self.threshold,
                "recent_messages": self.compared}


def attention_shift_threshold() -> float:
    """The cosine distance that counts as a shift: the environment's, else 0.35."""
    name, raw = next(((n, os.environ[n]) for n in THRESHOLD_ENV_ALIASES if os.environ.get(n, "").strip()),
                     (THRESHOLD_ENV, None))
    if raw is None:
        return ATTENTION_SHIFT_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a cosine distance between 0 and 2, got {raw!r}") from None
    return check_threshold(value, name)


def check_threshold(value: Any, name: str = "threshold") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or not 0.0 <= value <= 2.0:
        raise ValueError(f"{name} must be a cosine distance between 0 and 2, got {value!r}")
    return float(value)


def as_matrix(vectors: Any, what: str, rows: int | None = None) -> np.ndarray:
    """``vectors`` as a float64 matrix with finite, non-zero rows, or an error naming ``what``."""
    if isinstance(vectors, (str, bytes)) or vectors is None:
        raise TypeError(f"{what} must be an array of vectors, got {type(vectors).__name__}")
    try:
        m = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an array of numbers of one length each") from None
    if m.ndim == 1 and rows == 1:
        m = m[None, :]
    if m.ndim != 2:
        raise EmbeddingError(f"{what} must be a 2-D array (one row per text), got {m.ndim}-D")
    if rows is not None and m.shape[0] != rows:
        raise EmbeddingError(f"{what} has {m.shape[0]} rows for {rows} texts")
    if m.shape[1] == 0:
        raise EmbeddingError(f"{what} has vectors of dimension 0")
    if not np.isfinite(m).all():
        raise EmbeddingError(f"{what} contains nan or infinity")
    zero = np.flatnonzero(~np.any(m, axis=1))
    if zero.size:
        raise EmbeddingError(f"{what} row {int(zero[0])} is a zero vector: it has no direction to compare")
    return m


def embed_texts(embed: Embed, texts: Sequence[str], what: str) -> np.ndarray:
    """``embed(texts)`` checked: one finite, non-zero row per text."""
    if not callable(embed):
        raise TypeError(f"embed must be a callable list[str] -> array, got {type(embed).__name__}")
    return as_matrix(embed(list(texts)), f"the embeddings of {what}", rows=len(texts))


def measure_attention_shift_with_embeddings(recent: Any, current: Any,
                                            threshold: float | None = None) -> AttentionShift | None:
    """The shift of ``current`` (one vector) from the centroid of ``recent`` (one row per
    recent user message); None when there are no recent messages to compare with."""
    limit = attention_shift_threshold() if threshold is None else check_threshold(threshold)
    cur = as_matrix(current, "the current message's vector", rows=1)[0]
    if recent is None or (hasattr(recent, "__len__") and len(recent) == 0):
        return None
    past = as_matrix(recent, "the recent messages' vectors")
    if past.shape[1] != cur.shape[0]:
        raise EmbeddingError(f"the recent messages' vectors have dimension {past.shape[1]} and the current "
                             f"message's {cur.shape[0]}: they come from different embedders")
    centroid = (past / np.linalg.norm(past, axis=1, keepdims=True)).mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    # Recent messages that cancel out share no subject: anything is as far as orthogonal.
    cosine = 0.0 if norm < 1e-9 else float(centroid @ cur) / (norm * float(np.linalg.norm(cur)))
    distance = round(1.0 - max(-1.0, min(1.0, cosine)), 6)
    return AttentionShift(distance > limit, distance, limit, past.shape[0])


def compute_attention_shift_with_embeddings(recent: Any, current: Any, threshold: float | None = None) -> bool:
    """True when ``current``'s vector is further than the threshold (cosine distance)
    from the centroid of the ``recent`` vectors; False with nothing to compare with."""
    shift = measure_attention_shift_with_embeddings(recent, current, threshold)
    return bool(shift and shift.shifted)


def measure_attention_shift(recent_messages: Sequence[str], current_message: str, *, embed: Embed,
                            threshold: float | None = None,
                            window: int = RECENT_USER_MESSAGES) -> AttentionShift | None:
    """As :func:`measure_attention_shift_with_embeddings`, embedding the last ``window``
    of ``recent_messages`` and ``current_message`` with ``embed`` in one batch."""
    if isinstance(recent_messages, str) or not isinstance(recent_messages, Sequence):
        raise TypeError(f"recent_messages must be a list of str, got {type(recent_messages).__name__}")
    if not isinstance(current_message, str):
        raise TypeError(f"current_message must be a str, got {type(current_message).__name__}")
    bad = next((m for m in recent_messages if not isinstance(m, str)), None)
    if bad is not None:
        raise TypeError(f"recent_messages must be a list of str, found a {type(bad).__name__}")
    recent = [m for m in recent_messages if m.strip()][-window:] if window > 0 else []
    if not recent or not current_message.strip():
        if threshold is not None:
            check_threshold(threshold)
        return None
    vectors = embed_texts(embed, [*recent, current_message], "the messages")
    return measure_attention_shift_with_embeddings(vectors[:-1], vectors[-1], threshold)


def compute_attention_shift(recent_messages: Sequence[str], current_message: str, *, embed: Embed,
                            threshold: float | None = None, window: int = RECENT_USER_MESSAGES) -> bool:
    """True when ``current_message`` changes the subject of ``recent_messages`` (the
    recent user messages, oldest first), by ``embed``'s vectors."""
    shift = measure_attention_shift(recent_messages, current_message, embed=embed, threshold=threshold,
                                    window=window)
    return bool(shift and shift.shifted)


def user_texts(history: Sequence[dict[str, Any]]) -> list[str]:
    """The text of each user message in a validated history, oldest first."""
    out = []
    for m in history:
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p["text"] for p in content if isinstance(p.get("text"), str))
        if isinstance(content, str) and content.strip():
            out.append(content)
    return out
