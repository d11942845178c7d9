"""Answer provenance: from a ``[Mem:N]`` in a model's answer back to the memory it stands
for, why recall put that memory in the prompt, and the agent's call that fetched it; and
from a memory, the prompts that carried it.

It joins what the doors keep: the citation map and recall explanation of each
``compile_prompt`` made with a ``conversation_id`` (:mod:`.conversations`), and the
activity log's row of that call (:mod:`.activity`), which is the first successful
``compile_prompt`` of the same conversation and trust logged at or after the turn was
kept. For the person who owns the database (the inspector): every trust context's
conversations are read, unless ``context`` names one. Reading writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..backends import SchemaBehind
from ..model.errors import NotFound
from . import activity
from .activity import ActivityEntry
from .conversations import Turn, check_conversation_id, cited

if TYPE_CHECKING:
    from ..store import MemoryStore

TURN_COLUMNS = "conversation_id, turn, at, model, query, ref_map, why, context"


@dataclass(frozen=True)
class Citation:
    """One ``[Mem:N]`` of an answer, resolved."""

    n: int
    memory_id: str | None
    status: str                 # ok, unknown (not in that prompt), missing (forgotten since)
    text: str = ""
    why: dict = field(default_factory=dict)  # the recall explanation (score and its parts), if kept
    call: ActivityEntry | None = None        # the agent's call that compiled the prompt

    @property
    def citation(self) -> str:
        return f"[Mem:{self.n}]"


@dataclass(frozen=True)
class Carried:
    """A prompt an agent compiled that carried a memory, as ``[Mem:N]``."""

    turn: Turn
    n: int
    call: ActivityEntry | None


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    context: str
    turns: int
    last_at: float


def _turn(row: tuple) -> Turn:
    return Turn(row[0], row[1], row[2], row[3] or "", row[4] or "", json.loads(row[5]), json.loads(row[6] or "{}"),
                row[7] or "")


def _turn_rows(store: MemoryStore, where: str, params: list) -> list[tuple]:
    with store.tables.reading():
        for columns in (TURN_COLUMNS, TURN_COLUMNS.replace("why", "NULL")):  # schema 11 had no why
            try:
                return store.conn.execute(f"SELECT {columns} FROM conversations WHERE {where}", params).fetchall()
            except SchemaBehind:
                continue
    return []


def conversations(store: MemoryStore, limit: int = 200) -> list[Conversation]:
    """The conversations agents compiled prompts in, the latest first, of every context."""
    with store.tables.reading():
        try:
            rows = store.conn.execute(
                "SELECT conversation_id, context, count(*), max(at) FROM conversations "
                "GROUP BY context, conversation_id ORDER BY max(at) DESC LIMIT ?", (limit,)).fetchall()
        except SchemaBehind:
            return []
    return [Conversation(*r) for r in rows]


def turn_of(store: MemoryStore, conversation_id: str, turn: int | None = None, *,
            context: str | None = None) -> Turn:
    """A kept turn (the newest when ``turn`` is None) of ``context``, or of whichever
    context used the id last when ``context`` is None."""
    conversation_id = check_conversation_id(conversation_id)
    where, params = "conversation_id = ?", [conversation_id]
    if context is not None:
        where += " AND context = ?"
        params.append(context)
    if turn is not None:
        where += " AND turn = ?"
        params.append(int(turn))
    rows = _turn_rows(store, where + " ORDER BY at DESC, turn DESC LIMIT 1", params)
    if not rows:
        raise NotFound("conversation", conversation_id + (f" turn {turn}" if turn is not None else ""))
    return _turn(rows[0])


def call_of(store: MemoryStore, turn: Turn, *, trust: str = "hyper") -> ActivityEntry | None:
    """The activity log's row of the ``compile_prompt`` call that kept ``turn`` (None when
    the log has pruned it), read at ``trust``."""
    caller_trust = turn.context.split("|", 1)[0] if turn.context else None
    where = (f"tool = 'compile_prompt' AND ok = 1 AND at >= ? AND "
             f"{store.tables.sql.json_text('args', 'conversation_id')} = ?" + (" AND trust = ?" if caller_trust else ""))
    params: list = [turn.at, turn.conversation_id, *([caller_trust] if caller_trust else [])]
    found = activity.find(store, where, params, trust=trust, limit=1, oldest_first=True)
    return found[0] if found else None


def resolve_answer(store: MemoryStore, answer: str, conversation_id: str, turn: int | None = None, *,
                   context: str | None = None, trust: str = "hyper") -> tuple[Turn, list[Citation]]:
    """Each ``[Mem:N]`` in ``answer``, once, in order: its memory and text, why recall put it
    in the prompt, and the agent's call that compiled that prompt."""
    kept = turn_of(store, conversation_id, turn, context=context)
    call = call_of(store, kept, trust=trust)
    out: list[Citation] = []
    for n, memory_id in cited(answer, kept.ref_map):
        if memory_id is None:
            out.append(Citation(int(n), None, "unknown", call=call))
            continue
        try:
            text = store.get(memory_id).text
            status = "ok"
        except NotFound:
            text, status = "", "missing"
        out.append(Citation(int(n), memory_id, status, text, kept.why.get(memory_id, {}), call))
    return kept, out


def prompts_carrying(store: MemoryStore, memory_id: str, limit: int = 100, *,
                     trust: str = "hyper") -> list[Carried]:
    """The prompts agents compiled (with a ``conversation_id``) that carried ``memory_id``,
    newest first, each with its ``[Mem:N]`` and the call that compiled it."""
    needle = json.dumps(memory_id)  # as the map spells it: "mem-006"
    rows = _turn_rows(store, f"{store.tables.sql.holds('ref_map')} ORDER BY at DESC, turn DESC LIMIT ?",
                      [needle, int(limit) * 4])
    out = []
    for row in rows:
        turn = _turn(row)
        refs = [int(n) for n, mid in turn.ref_map.items() if mid == memory_id]
        if refs:
            out.append(Carried(turn, refs[0], call_of(store, turn, trust=trust)))
        if len(out) >= limit:
            break
    return out
