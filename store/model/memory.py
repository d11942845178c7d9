"""Memories as the store hands them out, and the rules their fields follow."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from . import json_input
from .columns import COLUMN, EDITABLE_COLUMNS, MEMORY_COLUMNS
from .config import KINDS, StoreConfig
from .errors import ValidationError

SENSITIVITIES = ("public", "low", "medium", "high", "hyper")
SENSITIVITY_RANK = {s: i for i, s in enumerate(SENSITIVITIES)}


def readable_at(trust: str | None) -> tuple[str, ...]:
    """The sensitivities a caller at ``trust`` may read (every one when None: the owner)."""
    if trust is None:
        return SENSITIVITIES
    if trust not in SENSITIVITY_RANK:
        raise ValidationError("trust", f"must be one of {', '.join(SENSITIVITIES)}, got {trust!r}")
    return SENSITIVITIES[:SENSITIVITY_RANK[trust] + 1]
LAYERS = ("habit", "fading", "edge", "archived")
ENTITY_KINDS = ("person", "group", "topic", "tool", "project", "file", "place", "other")
# How long a field may be, in characters: what the store refuses beyond, and the bound
# every door's input schema states (app/serve/operations.py reads these).
MAX_ID_CHARS = 128
MAX_SCOPE_CHARS = 128
MAX_NAME_CHARS = 200  # who, topic, source, an entity's name
MAX_TAG_CHARS = 64
# A scope is an opaque name ('global', 'group:7', 'private:ana', 'project-auth'), compared
# after NFKC normalisation, so that look-alike spellings of one name are one scope.
SCOPE_RE = re.compile(rf"^(?!(?:group|private):$)\S{{1,{MAX_SCOPE_CHARS}}}$")  # "group:" alone names no group
SCOPE_HELP = ("'global' or a name such as 'group:ID', 'private:ID' or 'project-auth' "
              f"(no spaces, at most {MAX_SCOPE_CHARS})")
# Format, control, private-use, surrogate and unassigned code points: invisible or
# meaningless in a name, and a way to make two scopes that look the same.
_INVISIBLE_CATEGORIES = frozenset(("Cf", "Cc", "Co", "Cs", "Cn"))

# Fields a caller may set on a memory (``remember``/``update``): the editable columns and its entities.
EDITABLE = (*EDITABLE_COLUMNS, "entities")
MAX_CONTEXT_CHARS = 20_000  # a capture's execution context, as JSON
# The key of a memory's context where an import keeps where the memory came from (its
# source, key, slot and digest: store/importers/sync.py): bookkeeping, not what the source said.
ORIGIN_KEY = "origin"
MAX_REASON_CHARS = COLUMN["reason_to_remember"].max_chars
# The editable columns of plain text (NULL read as ""), each checked alike (validate_fields).
_TEXT_FIELDS = tuple(c for c in MEMORY_COLUMNS if c.editable and c.export == "text")


@dataclass
class Entity:
    id: str
    name: str
    kind: str
    scope: str
    aliases: list[str]


@dataclass
class Memory:
    id: str
    text: str
    kind: str
    importance: float
    who: str
    topic: str
    scope: str
    sensitivity: str
    tags: list[str]
    source: str
    source_kind: str
    created_at: float
    updated_at: float
    ref_time: float
    base: float
    recall_count: int
    last_recalled_at: float | None
    pinned: bool
    half_life_days: float | None
    strength: float
    layer: str
    ticked_at: float | None
    entities: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    context: Any = None  # the execution context a capture came with (any JSON value)
    reason_to_remember: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# Times the store keeps: from the epoch to the end of year 9999, the range every export
# (ISO 8601 with a four-digit year) can write back.
EARLIEST = 0.0
LATEST = 253402300799.999  # 9999-12-31T23:59:59.999Z


def parse_time(value: Any, field_name: str) -> float:
    """Seconds since the epoch from a number, an ISO 8601 string or a datetime (ms
    precision), between 1970 and the end of 9999."""
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        ts = dt.timestamp()
    elif isinstance(value, bool):
        raise ValidationError(field_name, f"must be a time, got {value!r}")
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValidationError(field_name, f"must be a finite time, got {value!r}")
        ts = float(value)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(field_name, f"is not an ISO 8601 time: {value!r}") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        ts = dt.timestamp()
    else:
        raise ValidationError(field_name,
                              f"must be a time (ISO 8601 string or seconds), got {type(value).__name__}")
    if not EARLIEST <= ts <= LATEST:
        raise ValidationError(field_name, f"must be a time between 1970 and 9999, got {value!r}")
    return round(ts, 3)


def check_text(name: str, value: str) -> str:
    """Refuse what SQLite, JSON export or a later reader would choke on: a NUL, or a lone
    surrogate (half of a UTF-16 pair, which cannot be written as UTF-8)."""
    if "\x00" in value:
        raise ValidationError(name, "contains a NUL byte")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(name, f"contains a lone surrogate U+{ord(value[exc.start]):04X} at character "
                                    f"{exc.start + 1}; it is not a character and cannot be stored as UTF-8") from None
    return value


def validate_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS:
        raise ValidationError("id", f"must be a non-empty string of at most {MAX_ID_CHARS} characters, "
                                    f"got {value!r}")
    return check_text("id", value)


# What no name may hold, through any door (entity names and aliases, who, topic, tags;
# scopes refuse more, see validate_scope): C0 and C1 controls (tab, newline, U+0085 too),
# the line and paragraph separators U+2028 and U+2029 (str.splitlines breaks a line at
# every one of these, so a name could forge a line of a listing or a log), and the bidi
# marks, embeddings, overrides and isolates, which show a name in another order than it
# is spelt ('invoice\u202efdp.exe' reads 'invoiceexe.pdf'). Every other character a
# person can type is kept: '/', '\\', ':' and '..' are a name's own business, and the
# places that turn names into file names (the mirror) make those safe themselves.
NAME_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check_name(value: Any, field_name: str, *, limit: int = MAX_NAME_CHARS, allow_empty: bool = False) -> str:
    """A name as every door takes it (an entity's name or alias, who, topic, a tag): a
    string, stripped of surrounding spaces, at most ``limit`` characters, non-empty unless
    ``allow_empty`` (None is then ""), without a NUL, a lone surrogate or any character of
    :data:`NAME_FORBIDDEN`. Raises :class:`ValidationError` naming ``field_name`` and the
    character (as U+XXXX) that was refused; returns the stripped name."""
    if value is None and allow_empty:
        value = ""
    if not isinstance(value, str):
        raise ValidationError(field_name, f"must be a string, got {type(value).__name__}")
    name = check_text(field_name, value).strip()
    if not name and not allow_empty:
        raise ValidationError(field_name, "must not be empty")
    if len(name) > limit:
        raise ValidationError(field_name, f"is {len(name)} characters; the limit is {limit}")
    bad = NAME_FORBIDDEN.search(name)
    if bad:
        shown = name if len(name) <= 60 else name[:57] + "..."
        raise ValidationError(field_name, f"{shown!r} contains the control, line-separator or text-direction "
                                          f"character U+{ord(bad.group()):04X}; names may not hold one")
    return name


def _clean_str(name: str, value: Any, *, limit: int = MAX_NAME_CHARS, allow_empty: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ValidationError(name, f"must be a string, got {type(value).__name__}")
    value = check_text(name, value).strip()
    if not allow_empty and not value:
        raise ValidationError(name, "must not be empty")
    if len(value) > limit:
        raise ValidationError(name, f"is {len(value)} characters; the limit is {limit}")
    return value


def validate_context(value: Any) -> Any:
    """A capture's execution context: any JSON value (None for none), at most
    MAX_CONTEXT_CHARS as JSON, nested no deeper than an import reads (json_input.MAX_DEPTH),
    with no lone surrogate or NUL in it."""
    if value is None:
        return None
    try:
        json_input.check({"context": value}, surrogates=False)  # as it stands in an export's line
    except json_input.BadJson as exc:
        raise ValidationError("context", str(exc)) from None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError("context", f"must be JSON-compatible: {exc}") from None
    check_text("context", text)
    if len(text) > MAX_CONTEXT_CHARS:
        raise ValidationError("context", f"is {len(text):,} characters as JSON; the limit is {MAX_CONTEXT_CHARS:,}")
    return value


def validate_half_life(value: Any) -> float | None:
    """A memory's own half-life in days (None: its kind's)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValidationError("half_life_days", f"must be a positive number of days or null, got {value!r}")
    return float(value)


def validate_scope(value: Any, name: str = "scope") -> str:
    """The canonical (NFKC) form of a scope name; refuses invisible characters."""
    if value is None:
        return "global"
    if not isinstance(value, str):
        raise ValidationError(name, f"must be {SCOPE_HELP}, got {type(value).__name__}")
    scope = unicodedata.normalize("NFKC", value)
    invisible = [ch for ch in scope if unicodedata.category(ch) in _INVISIBLE_CATEGORIES]
    if invisible:
        codes = ", ".join(dict.fromkeys(f"U+{ord(ch):04X}" for ch in invisible))
        raise ValidationError(name, f"contains invisible character(s) {codes} in {value!r}; "
                                    "type the scope name again without them")
    if not SCOPE_RE.match(scope):
        raise ValidationError(name, f"must be {SCOPE_HELP}, got {value!r}")
    return scope


def validate_sensitivity(value: Any, name: str = "sensitivity") -> str:
    if value is None:
        return "low"
    if value not in SENSITIVITY_RANK:
        raise ValidationError(name, f"must be one of {', '.join(SENSITIVITIES)}, got {value!r}")
    return value


def validate_fields(values: dict[str, Any], config: StoreConfig, *, partial: bool = False) -> dict[str, Any]:
    """Check and normalise memory fields; raises :class:`ValidationError` naming the field."""
    out: dict[str, Any] = {}
    unknown = set(values) - set(EDITABLE)
    if unknown:
        raise ValidationError(sorted(unknown)[0], f"is not a memory field; fields are {', '.join(EDITABLE)}")
    if "text" in values or not partial:
        out["text"] = _clean_str("text", values.get("text"), limit=config.limits.max_text_chars, allow_empty=False)
    if "kind" in values or not partial:
        kind = values.get("kind", "fact")
        if kind not in KINDS:
            raise ValidationError("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
        out["kind"] = kind
    if "importance" in values or not partial:
        imp = values.get("importance", 0.5)
        if isinstance(imp, bool) or not isinstance(imp, (int, float)) or not math.isfinite(imp) or not 0 <= imp <= 1:
            raise ValidationError("importance", f"must be a number from 0 to 1, got {imp!r}")
        out["importance"] = float(imp)
    for column in _TEXT_FIELDS:
        if column.name in values or not partial:
            value, limit = values.get(column.name), column.max_chars or MAX_NAME_CHARS
            out[column.name] = check_name(value, column.name, limit=limit, allow_empty=True) if column.is_name \
                else _clean_str(column.name, value, limit=limit)
    if "scope" in values or not partial:
        out["scope"] = validate_scope(values.get("scope"))
    if "sensitivity" in values or not partial:
        out["sensitivity"] = validate_sensitivity(values.get("sensitivity"))
    if "tags" in values or not partial:
        tags = values.get("tags") or []
        if isinstance(tags, str) or not isinstance(tags, (list, tuple)):
            raise ValidationError("tags", f"must be a list of strings, got {type(tags).__name__}")
        if len(tags) > config.limits.max_tags:
            raise ValidationError("tags", f"has {len(tags)} tags; the limit is {config.limits.max_tags}")
        out["tags"] = list(dict.fromkeys(check_name(t, "tags", limit=MAX_TAG_CHARS) for t in tags))
    if "pinned" in values or not partial:
        pinned = values.get("pinned", False)
        if not isinstance(pinned, bool):
            raise ValidationError("pinned", f"must be true or false, got {pinned!r}")
        out["pinned"] = pinned
    if "context" in values or not partial:
        out["context"] = validate_context(values.get("context"))
    if "entities" in values:
        ents = values.get("entities") or []
        if isinstance(ents, str) or not isinstance(ents, (list, tuple)):
            raise ValidationError("entities", "must be a list of entity names")
        out["entities"] = list(dict.fromkeys(
            check_name(e if isinstance(e, str) else (e or {}).get("name"), "entities") for e in ents))
    return out
