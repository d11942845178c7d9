"""capture(): store arbitrary JSON content as a typed memory linked to its entities.

Follows the CaptureMemory conventions: an ``observation`` with subject/predicate/object
becomes a fact; ``tool_output``, ``event`` and ``agent_turn`` become events;
``working_state`` becomes an event tagged ``working`` with a one-day half-life.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import ValidationError
from .model import parse_time, validate_fields, validate_scope, validate_sensitivity

if TYPE_CHECKING:
    from .model import Memory
    from .store import Entity, MemoryStore

SOURCE_KINDS = ("observation", "tool_output", "event", "agent_turn", "working_state")
ENTITY_KEYS = {"subject": None, "object": None, "who": "person", "tool_name": "tool", "tool": "tool",
               "project": "project", "file": "file"}


@dataclass
class CaptureResult:
    primary: Memory
    created_entities: list[Entity] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    conflicts: list = field(default_factory=list)  # likely conflicts with older memories (store.conflicts)


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
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _entity_mentions(content: Any) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []

    def add(name: Any, kind: str | None) -> None:
        if isinstance(name, str) and name.strip() and len(name) <= 200:
            found.append({"name": name.strip(), "kind": kind or "other"})

    if isinstance(content, dict):
        for key, value in content.items():
            k = key.lower()
            if k in ENTITY_KEYS:
                add(value, ENTITY_KEYS[k])
            elif "entity" in k:
                if isinstance(value, list):
                    for v in value:
                        add(v.get("name") if isinstance(v, dict) else v,
                            v.get("kind") if isinstance(v, dict) else None)
                elif isinstance(value, dict):
                    add(value.get("name") or value.get("canonical_name"), value.get("kind"))
                else:
                    add(value, None)
    return found


def capture(store: MemoryStore, content: Any, *, source: str = "", source_kind: str = "event",
            context: Any = None, reason_to_remember: str = "", proposed_kind: str | None = None,
            summary: str = "", tags: list[str] | None = None, scope: str = "global", sensitivity: str = "low",
            timestamp: Any = None, importance: float | None = None) -> CaptureResult:
    """Capture ``content`` (any JSON-compatible value) as one memory, in one transaction."""
    try:
        json.dumps(content, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError("content", f"must be JSON-compatible: {exc}") from None
    if content is None or content == "" or content == {} or content == []:
        raise ValidationError("content", "is empty; there is nothing to remember")
    if source_kind not in SOURCE_KINDS:
        raise ValidationError("source_kind", f"must be one of {', '.join(SOURCE_KINDS)}, got {source_kind!r}")
    if context is not None:
        try:
            json.dumps(context, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError("context", f"must be JSON-compatible: {exc}") from None
    scope = validate_scope(scope)
    sensitivity = validate_sensitivity(sensitivity)
    now = store.now() if timestamp is None else parse_time(timestamp, "timestamp")
    if proposed_kind is not None:
        kind = {"semantic": "fact", "episodic": "event", "working": "event", "competence": "skill"}.get(
            proposed_kind, proposed_kind)
    elif source_kind == "observation":
        kind = "fact"
    else:
        kind = "event"
    tags = list(tags or [])
    half_life = None
    if source_kind == "working_state":
        tags.append("working")
        half_life = store.config.decay.working_half_life_days
    text = _text_for(content, source_kind, summary)
    if len(text) > store.config.limits.max_text_chars:
        text = text[: store.config.limits.max_text_chars - 1] + "…"
    if importance is None:
        importance = 0.7 if reason_to_remember else 0.5
    who = content.get("who", "") if isinstance(content, dict) and isinstance(content.get("who"), str) else ""
    validate_fields({"text": text, "kind": kind, "importance": importance, "tags": tags, "source": source,
                     "source_kind": source_kind, "who": who}, store.config, partial=True)
    mentions = _entity_mentions(content)
    with store._write():
        result = store.remember(text, kind=kind, importance=importance, who=who, scope=scope,
                                sensitivity=sensitivity, tags=tags, source=source, source_kind=source_kind,
                                now=now, half_life_days=half_life, dedupe=False, entities=mentions)
        created, edges = result.entities_created, result.edges
        mid = result.memory.id
        refs = content.get("references") if isinstance(content, dict) else None
        for ref in refs or []:
            if isinstance(ref, str) and store.exists(ref):
                store._reference(mid, ref, now, edges)
        primary = store.get(mid)
    return CaptureResult(primary, created, edges, result.conflicts)
