"""capture(): store arbitrary JSON content as a typed memory linked to its entities.

Follows the CaptureMemory conventions: an ``observation`` with subject/predicate/object
becomes a fact; ``tool_output``, ``event`` and ``agent_turn`` become events;
``working_state`` becomes an event tagged ``working`` with a one-day half-life. A
``proposed_type`` (semantic, episodic, working, competence, plan_graph, entity) asks for
a kind. The request's ``context`` and ``reason_to_remember`` are kept on the memory.
Entities come from the content's subject/object/who/tool/project/file keys and from any
key naming entities, as names or EntityPayload objects (canonical_name, aliases,
primary_type).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model.config import KINDS
from ..model.errors import ValidationError
from ..model.memory import (
    ENTITY_KINDS,
    MAX_NAME_CHARS,
    check_name,
    check_text,
    parse_time,
    readable_at,
    validate_fields,
)

if TYPE_CHECKING:
    from ..model.memory import Entity, Memory
    from ..store import MemoryStore

SOURCE_KINDS = ("observation", "tool_output", "event", "agent_turn", "working_state")
# The capture reference's memory types, as this store's kinds.
PROPOSED_TYPES = {"semantic": "fact", "episodic": "event", "working": "event", "competence": "skill",
                  "plan_graph": "skill", "entity": "fact"}
# Everything a capture request may hold; anything else is refused, so that a misspelt
# "sensitivty": "hyper" cannot store a secret as low sensitivity.
REQUEST_KEYS = ("content", "source", "source_kind", "context", "reason_to_remember", "proposed_type",
                "proposed_kind", "summary", "tags", "scope", "sensitivity", "timestamp", "importance", "allow_duplicate")
ENTITY_KEYS = {"subject": None, "object": None, "who": "person", "tool_name": "tool", "tool": "tool",
               "project": "project", "file": "file"}
# An EntityPayload's primary_type (free-form) as one of our entity kinds.
ENTITY_TYPES = {"person": "person", "user": "person", "group": "group", "team": "group", "organization": "group",
                "topic": "topic", "concept": "topic", "tool": "tool", "service": "tool", "library": "tool",
                "project": "project", "repository": "project", "file": "file", "place": "place",
                "location": "place"}


@dataclass
class CaptureResult:
    primary: Memory
    created_entities: list[Entity] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    conflicts: list = field(default_factory=list)  # likely conflicts with older memories (store.conflicts)
    created: bool = True  # False: a near-duplicate, the memory it repeats was reinforced instead
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The capture as every door gives it in JSON."""
        return {"id": self.primary.id, "kind": self.primary.kind, "text": self.primary.text,
                "memory": self.primary.to_dict(), "entities": list(self.primary.entities),
                "edges": len(self.edges), "conflicts": [c.reported() for c in self.conflicts],
                "created": self.created, "message": self.message}


def check_request_keys(keys: Any) -> None:
    """Refuse a capture option that does not exist, suggesting the one probably meant."""
    unknown = sorted(set(keys) - set(REQUEST_KEYS))
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, REQUEST_KEYS, 1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValidationError(name, f"is not a capture field{hint} Fields are {', '.join(REQUEST_KEYS)}")


def parse_capture_request(request: Any) -> tuple[Any, dict[str, Any]]:
    """(content, options) of a capture request object ``{"content": ..., ...}``."""
    if not isinstance(request, dict):
        raise ValidationError("request", f"must be a JSON object with 'content', got {type(request).__name__}")
    if "content" not in request:
        raise ValidationError("content", "is missing: a capture request needs the content to remember")
    check_request_keys(request)
    return request["content"], {k: v for k, v in request.items() if k != "content"}


def _text_for(content: Any, source_kind: str, summary: str) -> str:
    if summary:
        return summary
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if source_kind == "observation" and {"subject", "predicate", "object"} <= set(content):
            pred = str(content["predicate"]).replace("_", " ")
            return f"{content['subject']} {pred} {content['object']}"
        for key in ("text", "summary", "context_summary", "result", "message"):
            value = content.get(key)
            if isinstance(value, str) and value.strip():
                return value
        if "tool_name" in content or "tool" in content:
            tool = content.get("tool_name") or content.get("tool")
            return f"{tool}: {json.dumps(content.get('result', content), ensure_ascii=False, sort_keys=True)}"
        name = content.get("canonical_name")
        if isinstance(name, str) and name.strip():
            return name
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _entity_spec(value: Any, kind: str | None) -> dict[str, Any] | None:
    """An entity to link, from a name or an EntityPayload; None when it names nothing."""
    aliases: list[str] = []
    if isinstance(value, dict):
        name = value.get("name") or value.get("canonical_name")
        given = value.get("kind")
        primary = str(value.get("primary_type") or "").lower()
        kind = given if given in ENTITY_KINDS else ENTITY_TYPES.get(primary, kind)
        for alias in value.get("aliases") or []:
            alias = alias.get("value") if isinstance(alias, dict) else alias
            if isinstance(alias, str) and alias.strip():
                aliases.append(check_name(alias, "entities.aliases"))
    else:
        name = value
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        return None
    return {"name": check_text("entities", name).strip(), "kind": kind or "other", "aliases": aliases}


def _entity_mentions(content: Any, proposed_type: str | None) -> list[dict[str, Any]]:
    if proposed_type == "entity":
        spec = _entity_spec(content, None)
        if spec is None:
            raise ValidationError("content", "an entity capture needs an EntityPayload with a canonical_name")
        return [spec]
    found: list[dict[str, Any]] = []
    if isinstance(content, dict):
        for key, value in content.items():
            k = key.lower()
            if k in ENTITY_KEYS:
                found.append(_entity_spec(value, ENTITY_KEYS[k]))
            elif "entit" in k:
                for v in value if isinstance(value, list) else [value]:
                    found.append(_entity_spec(v, None))
    return [spec for spec in found if spec is not None]


def _kind_for(source_kind: str, proposed_type: str | None, proposed_kind: str | None) -> str:
    if proposed_type is not None and proposed_type not in PROPOSED_TYPES:
        raise ValidationError("proposed_type", f"must be one of {', '.join(PROPOSED_TYPES)}, got {proposed_type!r}")
    asked = {PROPOSED_TYPES.get(p, p) for p in (proposed_type, proposed_kind) if p is not None}
    if len(asked) > 1:
        raise ValidationError("proposed_type", f"{proposed_type!r} and proposed_kind {proposed_kind!r} disagree; "
                                               "give one of them")
    if asked:
        kind = asked.pop()
        if kind not in KINDS:
            raise ValidationError("proposed_kind", f"must be one of {', '.join(KINDS)} or a type "
                                                   f"({', '.join(PROPOSED_TYPES)}), got {kind!r}")
        return kind
    return "fact" if source_kind == "observation" else "event"


def _readable(store: MemoryStore, memory_id: str, scope: str, readable: tuple[str, ...]) -> bool:
    found = store.tables.memories("id = ?", (memory_id,), with_links=False)
    return bool(found) and found[0].scope in (scope, "global") and found[0].sensitivity in readable


def capture(store: MemoryStore, content: Any, *, source: str = "", source_kind: str = "event",
            context: Any = None, reason_to_remember: str = "", proposed_type: str | None = None,
            proposed_kind: str | None = None, summary: str = "", tags: list[str] | None = None,
            scope: str = "global", sensitivity: str = "low", timestamp: Any = None,
            importance: float | None = None, trust: str | None = None,
            allow_duplicate: bool = False) -> CaptureResult:
    """Capture ``content`` (any JSON-compatible value) as one memory, in one transaction.
    A writer at ``trust`` (an agent) links known entities and references memories only
    among what it may read (in ``scope`` or global); the owner (None) among all. A
    near-duplicate of a memory it may see reinforces that one instead (as remember does;
    ``created`` false, ``message`` says which), unless ``allow_duplicate``."""
    readable = readable_at(trust)
    if not isinstance(allow_duplicate, bool):
        raise ValidationError("allow_duplicate", f"must be true or false, got {allow_duplicate!r}")
    try:
        json.dumps(content, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError("content", f"must be JSON-compatible: {exc}") from None
    if content is None or content == "" or content == {} or content == []:
        raise ValidationError("content", "is empty; there is nothing to remember")
    if source_kind not in SOURCE_KINDS:
        raise ValidationError("source_kind", f"must be one of {', '.join(SOURCE_KINDS)}, got {source_kind!r}")
    if not isinstance(summary, str):
        raise ValidationError("summary", f"must be a string, got {type(summary).__name__}")
    check_text("summary", summary)
    kind = _kind_for(source_kind, proposed_type, proposed_kind)
    now = store.now() if timestamp is None else parse_time(timestamp, "timestamp")
    tags = list(tags or [])
    half_life = None
    if source_kind == "working_state" or proposed_type == "working":
        tags.append("working")
        half_life = store.config.decay.working_half_life_days
    text = _text_for(content, source_kind, summary)
    limit = store.config.limits.max_text_chars
    if len(text) > limit:
        # Cutting it would store a memory that says less than it seems to, silently.
        raise ValidationError("content" if not summary else "summary",
                              f"becomes a text of {len(text):,} characters; the limit is {limit}. "
                              "Pass a short summary to remember instead")
    if importance is None:
        importance = 0.7 if reason_to_remember else 0.5
    who = content.get("who", "") if isinstance(content, dict) and isinstance(content.get("who"), str) else ""
    fields = validate_fields(
        {"text": text, "kind": kind, "importance": importance, "tags": tags, "source": source,
         "source_kind": source_kind, "who": who, "scope": scope, "sensitivity": sensitivity, "context": context,
         "reason_to_remember": reason_to_remember}, store.config, partial=True)
    mentions = _entity_mentions(content, proposed_type)
    with store.tables.write():
        result = store.remember(**fields, now=now, half_life_days=half_life, dedupe=not allow_duplicate,
                                entities=mentions, trust=trust)
        created, edges = result.entities_created, result.edges
        mid = result.memory.id
        refs = content.get("references") if isinstance(content, dict) else None
        for ref in refs or []:
            if isinstance(ref, str) and (store.exists(ref) if trust is None
                                         else _readable(store, ref, result.memory.scope, readable)):
                store.tables.reference(mid, ref, now, edges)
        primary = store.get(mid)
    message = result.message if not result.created else f"captured {mid}"
    return CaptureResult(primary, created, edges, result.conflicts, result.created, message)
