"""The operations agents call, once for every door (MCP server, HTTP API).

Each method is one store or compiler operation with JSON in and JSON out. Its
signature is the tool's input schema (types, enums, bounds) for the MCP server and the
HTTP API alike, and its docstring is what a model reads to decide when to call it.

Scope and trust belong to whoever started the server, not to the model: a call may name
one of the server's scopes (the first is the default) and never sees a memory above the
server's trust. A memory outside them does not exist as far as the caller can tell: no
answer, count, duplicate check or log line depends on it, and no call writes to it. A
call checks everything it was given before it writes anything. Every call, refused ones
included, is recorded in the activity log, at the sensitivity of what it holds.
"""

# No ``from __future__ import annotations``: the MCP SDK and pydantic read these
# signatures at run time.

import contextvars
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mnemoscope.store import KINDS, SENSITIVITIES, MemoryStore
from mnemoscope.store.agents import activity as activity_log
from mnemoscope.store.agents import conversations
from mnemoscope.store.agents.capture import PROPOSED_TYPES, SOURCE_KINDS
from mnemoscope.store.agents.conversations import MAX_CONVERSATION_ID_CHARS
from mnemoscope.store.meaning.catch_up import CatchUp
from mnemoscope.store.model.config import Limits
from mnemoscope.store.model.errors import NotFound, StoreError, ValidationError
from mnemoscope.store.model.memory import (
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_REASON_CHARS,
    MAX_SCOPE_CHARS,
    MAX_TAG_CHARS,
    SENSITIVITY_RANK,
    validate_scope,
)
from mnemoscope.store.recall.ranking import reinforce_hits
from pydantic import Field

from ..bridge import DEFAULT_K, DEFAULT_RULES, PreviewRequest, compile_items, memory_items
from ..compiler.capabilities import DEFAULT_MAX_TOKENS, DEFAULT_MODEL

# The schemas' bounds are the store's (store/model/memory.py, the default store/model/config.py), so a
# call is refused at the door exactly where the store would refuse it.
LIMITS = Limits()
MAX_TEXT = LIMITS.max_text_chars
MAX_ENTITIES = 32  # a call's entities: this door's own bound, the store sets none

Kind = Literal[KINDS]  # type: ignore[valid-type]
Sensitivity = Literal[SENSITIVITIES]  # type: ignore[valid-type]
MemoryId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, description="a memory id, e.g. from recall")]
ScopeArg = Annotated[str | None, Field(max_length=MAX_SCOPE_CHARS, description="one of this server's scopes; "
                                       "omit for its default scope")]
ConversationId = Annotated[str, Field(min_length=1, max_length=MAX_CONVERSATION_ID_CHARS)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
Short = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
Tags = Annotated[list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]], Field(max_length=LIMITS.max_tags)]
Names = Annotated[list[Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]],
                  Field(max_length=MAX_ENTITIES)]

AGENT_HIDDEN = ("base", "ref_time", "ticked_at", "half_life_days")  # a memory's decay internals
TICK_WITHHELD = ("layers",)  # of a tick's answer (see tick)

# Who is calling: set by the door around each call (the MCP client's name from its
# ``initialize``, the HTTP User-Agent), read when the call is logged.
CALLER: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("mnemoscope_caller", default=None)


# What "any JSON" is in a JSON Schema: an empty schema says nothing, and the MCP
# Inspector's --strict warns about it. Validation stays the store's own (capture's).
JSON_TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]


class ScopeRefused(StoreError):
    """The call named a scope this server may not read or write."""


class Operations:
    """The agents' operations over one store, with the scopes and trust fixed here."""

    TOOLS = ("remember", "recall", "brief", "tick", "stats", "update", "forget", "capture", "compile_prompt",
             "resolve_citations")
    # The tool sets an MCP server gives (--tools): Mnemoscope's own, the MCP memory server's.
    tool_sets: tuple[str, ...] = ("mnemoscope",)

    def __init__(self, store: MemoryStore, *, scopes: list[str] | tuple[str, ...] = ("global",),
                 trust: str = "medium", client: str = "unknown", door: str = "mcp") -> None:
        if not scopes:
            raise ValidationError("scope", "a server needs at least one scope")
        self.store = store
        self.scopes = tuple(dict.fromkeys(validate_scope(s) for s in scopes))
        if trust not in SENSITIVITY_RANK:
            raise ValidationError("trust", f"must be one of {', '.join(SENSITIVITIES)}, got {trust!r}")
        self.trust = trust
        self.context = conversations.context_of(self.scopes, trust)  # whose conversations are whose
        self.client = client
        self.door = door
        # The recall vectors an import left to the background, made once agents have written
        # (every call is logged: a write); None when there is nothing it could do.
        self.catch_up = CatchUp.for_store(store)

    def close(self) -> None:
        """Stop the background work (after the batch in hand; what is done stays)."""
        if self.catch_up is not None:
            self.catch_up.stop()

    # -- the rules every call follows -------------------------------------------------------
    def _scope(self, scope: str | None) -> str:
        if scope is None or scope == "":
            return self.scopes[0]
        scope = validate_scope(scope)  # the store's spelling of it, so look-alikes compare equal
        if scope not in self.scopes:
            raise ScopeRefused(f"scope {scope!r} is not open to this server; it may use "
                               f"{', '.join(self.scopes)}")
        return scope

    def _visible(self, memory_id: str, *, write: bool = False):
        """The memory if this server may see it (and, with ``write``, change it): a
        memory outside its scopes or above its trust answers exactly as a missing one."""
        allowed = self.scopes if write else (*self.scopes, "global")
        return self.store.get_visible(memory_id, allowed, self.trust)

    def _may_see(self, memory_id: str) -> bool:
        try:
            self._visible(memory_id)
        except NotFound:
            return False
        return True

    def _shown(self, memory) -> dict[str, Any]:
        """A memory as a caller at this trust may see it."""
        data = memory.to_dict()
        if SENSITIVITY_RANK[memory.sensitivity] > SENSITIVITY_RANK[self.trust]:
            return {"id": memory.id, "kind": memory.kind, "layer": memory.layer, "redacted": True}
        for key in AGENT_HIDDEN:
            data.pop(key, None)
        return data

    def _answer(self, result: Any, memory) -> dict[str, Any]:
        """A result's JSON as every door gives it, with its memory as this caller may see it
        and the id the call is logged with."""
        return {**result.to_dict(), "memory": self._shown(memory), "memory_ids": [memory.id]}

    def _check_sensitivity(self, sensitivity: str) -> None:
        if SENSITIVITY_RANK[sensitivity] > SENSITIVITY_RANK[self.trust]:
            raise ValidationError("sensitivity", f"{sensitivity!r} is above this server's trust ({self.trust}); "
                                  "it may write only what it may read")

    def call(self, tool: str, fn: Callable[..., dict[str, Any]], args: dict[str, Any]) -> dict[str, Any]:
        """Run one operation, timed and logged, refused or not."""
        caller = CALLER.get() or {}
        try:
            with activity_log.logged(self.store, **self._entry(tool, args, caller)) as ids:
                result = fn(**args)
                ids.extend(result.get("memory_ids", []))
        finally:
            caller["logged"] = True
            if self.catch_up is not None:
                self.catch_up.wake()
        return result

    def log(self, tool: str, args: dict[str, Any], started: float, *, result: dict[str, Any] | None = None,
            error: BaseException | str | None = None, caller: dict[str, Any] | None = None) -> None:
        """Record one call in the activity log (``caller``: who, when not the current one)."""
        caller = caller if caller is not None else (CALLER.get() or {})
        activity_log.record_call(self.store, started=started, memory_ids=(result or {}).get("memory_ids", []),
                                 error=error, **self._entry(tool, args, caller))
        caller["logged"] = True
        if self.catch_up is not None:
            self.catch_up.wake()

    def _entry(self, tool: str, args: dict[str, Any], caller: dict[str, Any]) -> dict[str, Any]:
        """Who called what, for the activity log."""
        scope = args.get("scope") or (self.scopes[0] if tool not in ("tick", "stats") else "")
        return {"client": caller.get("client") or self.client, "door": caller.get("door") or self.door,
                "tool": tool, "scope": str(scope), "trust": self.trust, "args": _loggable(args)}

    # -- the tools ----------------------------------------------------------------------------
    def remember(
        self,
        text: Annotated[Text, Field(description="one durable sentence worth knowing next week, in the user's "
                                    "language, e.g. 'Mara is allergic to peanuts.'")],
        kind: Annotated[Kind, Field(description="fact: stable facts about people and things; lesson: a "
                                    "principle learned; skill: how to do something; reflection: a feeling or "
                                    "judgement; event: something that happened once")] = "fact",
        importance: Annotated[float, Field(ge=0, le=1, description="0 trivia … 1 must never be forgotten; "
                                           "0.5 when unsure")] = 0.5,
        who: Annotated[Short, Field(description="the person it is about, if any")] = "",
        topic: Annotated[Short, Field(description="a short topic, e.g. 'health', 'work'")] = "",
        scope: ScopeArg = None,
        sensitivity: Annotated[Sensitivity, Field(description="public < low < medium < high < hyper; health, "
                                                 "money and secrets are high or hyper")] = "low",
        tags: Annotated[Tags, Field(description="a few keywords")] = [],  # noqa: B006 (pydantic copies)
        entities: Annotated[Names, Field(description="people, groups, tools or projects it mentions")] = [],  # noqa: B006
        allow_duplicate: Annotated[bool, Field(description="store it even if a memory already says the same "
                                               "(by default that one is reinforced instead)")] = False,
    ) -> dict[str, Any]:
        """Store one thing worth remembering about the user or the work.

        Use it when you learn something durable: a preference, a fact about a person, a
        decision, a lesson from a mistake. Write one self-contained sentence; don't store
        chit-chat, guesses or what is already remembered (a near-duplicate reinforces the
        existing memory instead of adding a copy, and the result says so)."""
        self._check_sensitivity(sensitivity)
        result = self.store.remember(text, kind=kind, importance=importance, who=who, topic=topic,
                                     scope=self._scope(scope), sensitivity=sensitivity, tags=tags,
                                     entities=entities, dedupe=not allow_duplicate, trust=self.trust)
        return self._answer(result, result.memory)

    def recall(
        self,
        query: Annotated[str, Field(min_length=1, max_length=2000, description="what you need to know, in "
                                    "plain words")],
        k: Annotated[int, Field(ge=1, le=50, description="how many memories at most")] = 5,
        scope: ScopeArg = None,
        explain: Annotated[bool, Field(description="also return why each memory scored as it did")] = False,
        min_relevance: Annotated[float | None, Field(ge=0, le=1, description=(
            "leave out memories whose relevance (the measured chance that such a hit answers, 0-1) is "
            "below this; by default none are left out"))] = None,
    ) -> dict[str, Any]:
        """Find the memories most relevant to a question, best first.

        Call it before answering anything that may depend on what you were told earlier
        (names, preferences, past decisions). You always get the best matches there are;
        each has a relevance from 0 to 1 (how often a hit like it answered, measured):
        judge by it, or pass min_relevance. Each memory you get back counts as used:
        memories recalled often become habits and fade slowly. When they cannot be
        counted (a full disk) you still get them, with reinforced false. A note says
        when recall could not use meaning (then it found them by words)."""
        hits = self.store.recall(query, k=k, scope=self._scope(scope), trust=self.trust, explain=explain,
                                 min_relevance=min_relevance)
        skipped = reinforce_hits(self.store, hits)
        answer: dict[str, Any] = {"hits": [h.to_dict() for h in hits], "reinforced": not skipped}
        if hits.note:
            answer["note"] = hits.note
        if skipped:
            answer["reinforcement"] = f"the reinforcement was skipped: {skipped}"
        answer["memory_ids"] = [h.id for h in hits]
        return answer

    def brief(
        self,
        limit: Annotated[int, Field(ge=1, le=50, description="how many facts")] = 5,
        scope: ScopeArg = None,
    ) -> dict[str, Any]:
        """The wake-up brief: the strongest, most important facts and lessons, as a few
        lines. Read it once at the start of a conversation."""
        text = self.store.brief(limit=limit, scope=self._scope(scope), trust=self.trust)
        return {"brief": text}

    def tick(self) -> dict[str, Any]:
        """Run the forgetting clock: every memory's strength and layer are brought up to
        now (habit, fading, edge, archived). Cheap; call it once a day or so."""
        # A tick runs over every memory; the answer counts only those this server may see,
        # and not the counts per layer: over the whole store they would speak of scopes this
        # server may not see, and counting over its own would scan every memory per tick.
        report = self.store.tick().only(self._may_see)
        return {k: v for k, v in report.to_dict().items() if k not in TICK_WITHHELD}

    def stats(self) -> dict[str, Any]:
        """How much is remembered in this server's scopes: counts per layer and kind."""
        stats = self.store.stats(scopes=(*self.scopes, "global"), trust=self.trust)
        return {k: stats[k] for k in ("memories", "layers", "kinds", "scopes", "clock_offset_days")}

    def update(
        self,
        memory_id: MemoryId,
        text: Annotated[Text | None, Field(description="the corrected sentence")] = None,
        kind: Kind | None = None,
        importance: Annotated[float | None, Field(ge=0, le=1)] = None,
        who: Short | None = None,
        topic: Short | None = None,
        scope: ScopeArg = None,
        sensitivity: Sensitivity | None = None,
        tags: Tags | None = None,
        pinned: Annotated[bool | None, Field(description="pinned memories never fade")] = None,
    ) -> dict[str, Any]:
        """Correct a memory that is wrong or out of date (give only the fields that
        change). Prefer this to remembering a contradicting sentence."""
        self._visible(memory_id, write=True)
        changes = {k: v for k, v in {"text": text, "kind": kind, "importance": importance, "who": who,
                                      "topic": topic, "sensitivity": sensitivity, "tags": tags,
                                      "pinned": pinned}.items() if v is not None}
        if scope is not None:
            changes["scope"] = self._scope(scope)
        if sensitivity is not None:
            self._check_sensitivity(sensitivity)
        if not changes:
            raise ValidationError("update", "give at least one field to change")
        result = self.store.update(memory_id, **changes)
        return self._answer(result, result.after)

    def forget(self, memory_id: MemoryId) -> dict[str, Any]:
        """Forget a memory that is wrong, harmful or that the user asked you to forget.
        The memory's owner can still restore it from the Mnemoscope inspector."""
        self._visible(memory_id, write=True)
        caller = CALLER.get() or {}
        deleted = activity_log.forget(self.store, memory_id, client=caller.get("client") or self.client)
        return {**deleted.to_dict(), "memory_ids": [memory_id]}

    def capture(
        self,
        content: Annotated[Any, Field(description="any JSON: a sentence, a tool's output, an "
                                      "observation {subject, predicate, object}, a working state",
                                      json_schema_extra={"type": JSON_TYPES[:-1]})],
        source_kind: Literal[SOURCE_KINDS] = "event",  # type: ignore[valid-type]
        source: Short = "",
        context: Annotated[Any, Field(description="what was going on (any JSON), kept with the memory",
                                      json_schema_extra={"type": JSON_TYPES})] = None,
        reason_to_remember: Annotated[str, Field(max_length=MAX_REASON_CHARS, description="why this is worth keeping")] = "",
        summary: Annotated[str, Field(max_length=MAX_TEXT, description="one sentence to store instead of "
                                      "the raw content")] = "",
        proposed_type: Annotated[Literal[tuple(PROPOSED_TYPES)] | None,  # type: ignore[valid-type]
                                 Field(description="the kind of memory it should become")] = None,
        proposed_kind: Kind | None = None,
        tags: Tags = [],  # noqa: B006
        scope: ScopeArg = None,
        sensitivity: Sensitivity = "low",
        allow_duplicate: Annotated[bool, Field(description="store it even if a memory already says the same "
                                               "(by default that one is reinforced instead)")] = False,
    ) -> dict[str, Any]:
        """Capture raw material (a tool result, an observation, an event) as a memory,
        with the entities it names linked (a near-duplicate reinforces the memory it
        repeats: created is false). Use remember for a sentence you wrote yourself."""
        self._check_sensitivity(sensitivity)
        kwargs: dict[str, Any] = {"source_kind": source_kind, "source": source,
                                  "reason_to_remember": reason_to_remember, "summary": summary, "tags": tags,
                                  "scope": self._scope(scope), "sensitivity": sensitivity,
                                  "allow_duplicate": allow_duplicate}
        optional = {"context": context, "proposed_type": proposed_type, "proposed_kind": proposed_kind}
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        result = self.store.capture(content, trust=self.trust, **kwargs)
        return self._answer(result, result.primary)

    def compile_prompt(
        self,
        user_message: Annotated[str, Field(min_length=1, max_length=100_000)],
        model: Annotated[str, Field(max_length=200, description=f"e.g. {DEFAULT_MODEL}, "
                                    "anthropic/claude-sonnet-4-5")] = DEFAULT_MODEL,
        max_tokens: Annotated[int, Field(ge=64, le=2_000_000, description="the prompt's token budget")] = (
            DEFAULT_MAX_TOKENS),
        k: Annotated[int, Field(ge=1, le=200, description="memories to recall")] = DEFAULT_K,
        scope: ScopeArg = None,
        rules: Annotated[str | None, Field(max_length=100_000, description="system rules; a short "
                                           "assistant persona when omitted")] = None,
        history: Annotated[list[dict[str, Any]], Field(max_length=500, description="earlier messages, "
                                                        "[{role, content}]")] = [],  # noqa: B006
        placement: Literal["end", "system"] = "end",
        conversation_id: Annotated[ConversationId | None, Field(description="keep the citation map "
                                                     "under this id for resolve_citations")] = None,
    ) -> dict[str, Any]:
        """Build the prompt to send for a user message: recall the relevant memories and
        compile them with the rules, history and message within a token budget. Memories
        are tagged [Mem:N]; give a conversation_id to resolve those citations later."""
        if conversation_id is not None:
            conversations.check_conversation_id(conversation_id)
        request = PreviewRequest(user_message=user_message, history=list(history), model_id=model,
                                 max_tokens=max_tokens, placement=placement,
                                 rules=DEFAULT_RULES if rules is None else rules, k=k, scope=self._scope(scope),
                                 trust=self.trust)
        hits = self.store.recall(user_message, k=k, scope=request.scope, trust=self.trust, explain=True)
        try:
            result = compile_items(request, memory_items(hits))
        except (TypeError, ValueError) as exc:  # the compiler's word on the history, rules or model
            message = str(exc).replace("conversation_messages", "history")
            raise ValidationError("history" if "history" in message else "compile_prompt", message) from None
        kept = list(result.ref_map.values())
        out: dict[str, Any] = {"messages": result.messages, "ref_map": result.ref_map,
                               "summary": _summary(result.metadata), "memory_ids": kept}
        # Everything was checked: what went into the prompt was used, and its map is kept, at once.
        why = {h.id: {"score": h.score, **h.why} for h in hits if not h.redacted}  # kept for provenance
        turn = conversations.prompt_used(self.store, result.ref_map, conversation_id, model=model,
                                         query=user_message, context=self.context, why=why)
        if turn is not None:
            out.update(conversation_id=turn.conversation_id, turn=turn.turn)
        return out

    def resolve_citations(
        self,
        answer: Annotated[str, Field(max_length=200_000, description="the model's answer with [Mem:N] tags")],
        conversation_id: ConversationId,
        turn: Annotated[int | None, Field(ge=1, description="which compile_prompt turn; the latest when "
                                          "omitted")] = None,
    ) -> dict[str, Any]:
        """Say which memory each [Mem:N] in an answer stands for (from the prompt that
        compile_prompt built under conversation_id)."""
        resolved = conversations.resolve(self.store, answer, conversation_id, turn, context=self.context)
        visible = []
        for item in resolved:
            if item["status"] == "ok":
                try:
                    item["text"] = self._visible(item["memory_id"]).text
                except NotFound:
                    item["status"] = "missing"
            visible.append(item)
        return {"citations": visible, "memory_ids": [c["memory_id"] for c in visible if c["memory_id"]]}

    def bound(self, tool: str) -> Callable[..., dict[str, Any]]:
        if tool not in self.TOOLS:
            raise NotFound("tool", tool)
        return getattr(self, tool)


def _summary(md: dict[str, Any]) -> dict[str, Any]:
    keys = ("token_count", "tokens_budget", "billed_input_tokens", "memories_offered", "memories_kept",
            "tokens_trimmed", "tokenizer", "model_id", "cacheable_prefix_tokens")
    return {k: md[k] for k in keys if k in md}


def _loggable(args: dict[str, Any]) -> dict[str, Any]:
    """What of a call's arguments goes into the log summary: no history, rules or answers."""
    return {k: v for k, v in args.items() if k not in ("history", "rules", "answer", "content") or
            isinstance(v, str) and len(v) < 80}
