"""Citation maps kept per conversation, so ``[Mem:N]`` in a model's answer can be
resolved after the prompt that defined them is gone.

Each ``compile_prompt`` call by an agent stores its ``ref_map`` (``"1" → memory id``)
as the next turn of its conversation. Resolving looks at the newest turn unless one is
named. The maps are small; they are kept for ``activity.keep_days`` and pruned with the
activity log.

A conversation belongs to the trust context that made it (``context``: a door's scopes
and trust, see :func:`context_of`): another context never reads or extends it, and its
id there is as unknown as one never used. Maps made with no context (the owner's, and
those kept before contexts were recorded) belong to no door.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..backends import SchemaBehind
from ..model.errors import NotFound, ValidationError

if TYPE_CHECKING:
    from ..store import MemoryStore

MAX_CONVERSATION_ID_CHARS = 128
CONVERSATION_RE = re.compile(rf"^[\w.:@-]{{1,{MAX_CONVERSATION_ID_CHARS}}}$")
# The twin of app/compiler/layout.py's CITATION (the pattern the compiler writes): the
# store sits below the compiler and may not import it (DESIGN.md, tests/house/test_layers.py),
# and a test keeps the two equal.
CITATION_RE = re.compile(r"\[Mem:(\d+)\]")


@dataclass(frozen=True)
class Turn:
    conversation_id: str
    turn: int
    at: float
    model: str
    query: str
    ref_map: dict[str, str]
    # Why recall put each cited memory in the prompt (memory id → its score and the parts
    # of it), when the door kept it; {} for a turn kept before.
    why: dict[str, dict] = field(default_factory=dict)
    context: str = ""


def context_of(scopes: list[str] | tuple[str, ...], trust: str) -> str:
    """The trust context a door's calls run in, as stored with its conversations."""
    return f"{trust}|{','.join(sorted(set(scopes)))}"


def check_conversation_id(value: object) -> str:
    if not isinstance(value, str) or not CONVERSATION_RE.match(value):
        raise ValidationError("conversation_id", f"must be 1–{MAX_CONVERSATION_ID_CHARS} letters, digits or . : @ _ - "
                              f"(no spaces), got {value!r}")
    return value


def save_turn(store: MemoryStore, conversation_id: str, ref_map: dict[str, str], *, model: str = "",
              query: str = "", context: str = "", why: dict[str, dict] | None = None) -> Turn:
    """Store ``ref_map`` as the next turn of ``conversation_id`` in ``context``, with
    ``why`` recall put each of its memories there."""
    why = {mid: why[mid] for mid in ref_map.values() if why and mid in why}
    conversation_id = check_conversation_id(conversation_id)
    at = store.now()
    with store.tables.write():
        last = store.conn.execute("SELECT max(turn) FROM conversations WHERE context = ? AND conversation_id = ?",
                                  (context, conversation_id)).fetchone()[0]
        turn = (last or 0) + 1
        store.conn.execute("INSERT INTO conversations (context, conversation_id, turn, at, model, query, ref_map, "
                           "why) VALUES (?,?,?,?,?,?,?,?)",
                           (context, conversation_id, turn, at, model, query[:500], json.dumps(ref_map),
                            json.dumps(why)))
    return Turn(conversation_id, turn, at, model, query, dict(ref_map), why, context)


def prompt_used(store: MemoryStore, ref_map: dict[str, str], conversation_id: str | None = None, *,
                model: str = "", query: str = "", context: str = "", why: dict[str, dict] | None = None
                ) -> Turn | None:
    """What went into a compiled prompt was used: each memory of ``ref_map`` counts one
    recall (one forgotten since is skipped), and with ``conversation_id`` the map is kept
    as that conversation's next turn, all in one transaction."""
    if conversation_id is not None:
        check_conversation_id(conversation_id)
    with store.tables.write():
        for memory_id in ref_map.values():
            store.tables.reinforce(memory_id, store.now())  # False for a memory deleted since
        if conversation_id is None:
            return None
        return save_turn(store, conversation_id, ref_map, model=model, query=query, context=context, why=why)


def get_turn(store: MemoryStore, conversation_id: str, turn: int | None = None, *, context: str = "") -> Turn:
    """A stored turn of ``context`` (the newest when ``turn`` is None)."""
    conversation_id = check_conversation_id(conversation_id)
    sql = ("SELECT conversation_id, turn, at, model, query, ref_map FROM conversations "
           "WHERE context = ? AND conversation_id = ?")
    params: list = [context, conversation_id]
    if turn is not None:
        sql += " AND turn = ?"
        params.append(int(turn))
    with store.tables.reading():
        try:
            row = store.conn.execute(sql + " ORDER BY turn DESC LIMIT 1", params).fetchone()
        except SchemaBehind:
            row = None
    if row is None:
        what = f"{conversation_id!r} turn {turn}" if turn is not None else repr(conversation_id)
        raise NotFound("conversation", what.strip("'"))
    return Turn(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]))


def conversation_ids(store: MemoryStore, limit: int = 200, *, context: str = "") -> list[str]:
    with store.tables.reading():
        try:
            return [r[0] for r in store.conn.execute(
                "SELECT conversation_id FROM conversations WHERE context = ? GROUP BY conversation_id "
                "ORDER BY max(at) DESC LIMIT ?", (context, limit))]
        except SchemaBehind:
            return []


def cited(answer: str, ref_map: dict[str, str]) -> list[tuple[str, str | None]]:
    """Each ``[Mem:N]`` of ``answer`` once, in the order it first appears: its N as written,
    and the memory id the turn's citation map gives it (None: it was not in the prompt).
    What :func:`resolve` and store/agents/provenance.py's ``resolve_answer`` both read an answer by."""
    return [(n, ref_map.get(n)) for n in dict.fromkeys(m.group(1) for m in CITATION_RE.finditer(answer))]


def resolve(store: MemoryStore, answer: str, conversation_id: str, turn: int | None = None, *,
            context: str = "") -> list[dict]:
    """Each ``[Mem:N]`` in ``answer``, once, in order: the memory id it stands for and
    whether that memory still exists (``ok``), was not in the prompt (``unknown``), or was
    forgotten since (``missing``)."""
    stored = get_turn(store, conversation_id, turn, context=context)
    return [{"citation": f"[Mem:{n}]", "memory_id": memory_id,
             "status": "unknown" if memory_id is None else "ok" if store.exists(memory_id) else "missing",
             "turn": stored.turn}
            for n, memory_id in cited(answer, stored.ref_map)]
