"""A Letta agent file (``.af``, JSON).

Two shapes are read, as Letta's schemas define them: the current one (``agents``,
``blocks``, ``tools``, … at the top, each agent naming its ``block_ids``) and the first
one (one agent at the top with its ``core_memory`` blocks). Archival passages are read
from ``passages`` (top level or an agent's: ``text``, ``created_at``, ``updated_at``,
``tags``), as Letta's passage schema has them. A file whose JSON is one string holding
the agent file's JSON (as some of letta-ai/agent-file's examples are) is read inside.

- Scopes: each agent's memory goes in a scope of its own, ``agent:NAME`` (spaces as
  ``-``), so that two agents' ``human`` and ``persona`` blocks never mix; what several
  agents share goes in the import's scope (``global`` unless ``--scope`` names one), which
  each of them sees. With ``--scope``, everything goes there.
- Each core memory block becomes one memory, pinned (core memory is always in the
  agent's context, so it must not fade), however many agents share it: text = the
  block's value, topic = its label, tags ``letta``, ``core_memory`` and the label. The
  agents become entities (kind ``tool``). Whose it is follows its label: a ``persona``
  block is the agent's own (kind ``skill``, who = the agent, linked to it), a ``human``
  or ``user`` block is about the user (a fact linked to no agent), any other block is
  the agent's working memory (a fact linked to each agent that shares it). A block
  longer than a memory may be is split at line breaks into parts, and the report counts
  them. An empty block is listed as left out.
- Messages (Letta's recall memory): each user and assistant message with text becomes a
  memory (an event) in its agent's scope, in the order and at the time it was written,
  all of one agent's conversation one episode (the same source, ``letta:FILE#AGENT``), so
  that recall brings the turns next to a hit. System prompts, tool calls and results and
  the model's reasoning are not memory: the report counts them.
- Each archival passage becomes one memory (a fact) with its own times and tags.
- Times: a block's ``created_at``/``updated_at`` where the file has them, else the
  agent's, else the file's ``created_at``, else the import's ``now``.
- Tools, the system prompt, model settings, groups, files and sources are not memories:
  the report lists each kind with its count.
- Importing the file again (:mod:`.sync`): a block is known by its label and the agents
  sharing it (then by its id), a message and a passage by their ids.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ..model.errors import ValidationError
from ..model.memory import parse_time, validate_scope
from .plan import ImportPlan, check_name
from .source import parse_json, read_text

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .formats import Sniff

FORMAT = "letta"
NOT_MEMORY = ("tools", "tool_rules", "groups", "files", "sources", "mcp_servers", "files_agents",
              "tool_exec_environment_variables")
PERSONA = re.compile(r"persona", re.IGNORECASE)
USER = re.compile(r"(^|[/_\s-])(human|user)($|[/_\s-])", re.IGNORECASE)


def looks_like(obj: Any) -> bool:
    return isinstance(obj, dict) and (("agents" in obj and "blocks" in obj) or "core_memory" in obj)


def recognise(sniff: Sniff) -> bool:
    if sniff.is_dir:
        return False
    if sniff.doc is not None:
        return looks_like(sniff.doc)
    head = sniff.head
    return sniff.broken_document and ('"core_memory"' in head or ('"agents"' in head and '"blocks"' in head))


def agent_scope(name: str) -> str:
    """The scope of an agent's own memory: ``agent:NAME``, its spaces as ``-``."""
    return validate_scope("agent:" + re.sub(r"\s+", "-", name.strip()), "agent name")


def read(store: MemoryStore, path: str | os.PathLike, plan: ImportPlan, *, now: float | None = None) -> ImportPlan:
    try:
        doc = parse_json(read_text(path))
        if isinstance(doc, str):  # the agent file's JSON inside a JSON string
            doc = parse_json(doc)
            plan.place("file of JSON inside a JSON string -> read inside")
    except ValueError as exc:
        plan.error(1, str(exc))
        return plan
    if not looks_like(doc):
        plan.error(1, "is not a Letta agent file (no 'agents' and 'blocks', nor 'core_memory')" + _hint(doc))
        return plan
    at = store.tables.now(now)
    file_time = _when(plan, doc, "created_at", "created_at", at)
    if "core_memory" in doc:
        agents, blocks = [doc], {}
        for i, b in enumerate(doc.get("core_memory") or []):
            blocks[f"core_memory[{i}]"] = b
        for agent in agents:
            agent["block_ids"] = list(blocks)
    else:
        agents = doc.get("agents") or []
        blocks = {}
        first_at: dict[str, int] = {}
        for i, b in enumerate(doc.get("blocks") or []):
            if not isinstance(b, dict):
                plan.error(f"blocks[{i}]", "must be an object")
                continue
            bid = str(b.get("id") or f"blocks[{i}]")
            if bid in blocks:
                # One id is one block: the same block written twice is one memory; two
                # different blocks under one id cannot both be what agents name by it.
                j = first_at[bid]
                if _same_block(blocks[bid], b):
                    plan.leave_out(f"blocks[{i}]", f"block {bid!r}", f"the same block as blocks[{j}]; kept once")
                else:
                    plan.error(f"blocks[{i}]", f"has the id {bid!r} of blocks[{j}], with another label or value; "
                                               "give each block its own id")
                continue
            first_at[bid] = i
            blocks[bid] = b
    # Who uses each block, and each agent's scope and times.
    users: dict[str, list[str]] = {}
    named: list[tuple[int, dict[str, Any], str, str, float, float]] = []
    for n, agent in enumerate(agents):
        if not isinstance(agent, dict):
            plan.error(f"agents[{n}]", "must be an object")
            continue
        where = f"agents[{n}]" if "agents" in doc else "agent"
        try:
            name = check_name(agent.get("name") or f"letta agent {n + 1}", f"{where}.name")
            scope = plan.scope if plan.scope_given else agent_scope(name)
        except ValidationError as exc:
            plan.error(where, str(exc))
            continue
        plan.entity(name, "tool")
        plan.place("agent -> entity (kind tool)")
        a_created = _when(plan, agent, "created_at", f"{where}.created_at", file_time)
        a_updated = _when(plan, agent, "updated_at", f"{where}.updated_at", a_created)
        named.append((n, agent, name, scope, a_created, a_updated))
        for bid in agent.get("block_ids") or []:
            if str(bid) not in blocks:
                plan.error(f"{where}.block_ids", f"names block {bid!r}, which the file does not have")
            elif name not in users.setdefault(str(bid), []):
                users[str(bid)].append(name)
    times = {name: (created, updated) for _n, _a, name, _s, created, updated in named}
    scopes = {name: scope for _n, _a, name, scope, _c, _u in named}
    for bid, block in blocks.items():
        sharing = users.get(bid, [])
        scope = scopes[sharing[0]] if len(sharing) == 1 else plan.scope
        created = min((times[a][0] for a in sharing), default=file_time)
        updated = max((times[a][1] for a in sharing), default=file_time)
        _block(store, plan, bid, block, sharing, scope, created, updated)
        if len(sharing) > 1:
            plan.place(f"block shared by {len(sharing)} agents -> one memory in scope {plan.scope}")
    for n, agent, name, scope, a_created, _a_updated in named:
        where = f"agents[{n}]" if "agents" in doc else "agent"
        _messages(store, plan, where, agent, name, scope, a_created)
        for i, passage in enumerate(agent.get("passages") or []):
            _passage(store, plan, f"{where}.passages[{i}]", passage, name, scope, a_created)
        for key in NOT_MEMORY:
            items = agent.get(key)
            if items:
                plan.leave_out(f"{where}.{key}", f"{len(items) if isinstance(items, list) else 1} {key}",
                               "not memory: the agent's configuration")
        if agent.get("system"):
            plan.leave_out(f"{where}.system", "the system prompt", "instructions, not memory")
    for i, passage in enumerate(doc.get("passages") or []):
        _passage(store, plan, f"passages[{i}]", passage, None, plan.scope, file_time)
    if "agents" in doc:
        for key in NOT_MEMORY:
            items = doc.get(key)
            if items:
                plan.leave_out(key, f"{len(items) if isinstance(items, list) else 1} {key}",
                               "not memory: the agents' tools, files or groups")
    return plan


def _same_block(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("label"), a.get("value")) == (b.get("label"), b.get("value"))


def _hint(doc: Any) -> str:
    if isinstance(doc, dict) and ("results" in doc or "memories" in doc):
        return "; this looks like a mem0 export: use --format mem0"
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "memory" in doc[0]:
        return "; this looks like a mem0 export: use --format mem0"
    return ""


def _when(plan: ImportPlan, obj: Any, key: str, where: str, fallback: float) -> float:
    value = obj.get(key) if isinstance(obj, dict) else None
    if value in (None, ""):
        return fallback
    try:
        return parse_time(value, where)
    except ValidationError as exc:
        plan.error(where, str(exc))
        return fallback


def _block(store: MemoryStore, plan: ImportPlan, bid: str, block: Any, agents: list[str], scope: str,
           created: float, updated: float) -> None:
    where = bid if bid.startswith(("blocks[", "core_memory[")) else f"block {bid}"
    if not isinstance(block, dict):
        plan.error(where, "must be an object")
        return
    value, label = block.get("value"), block.get("label") or ""
    if not isinstance(value, str) or not isinstance(label, str):
        plan.error(where, "needs a string 'value' and 'label'")
        return
    if not value.strip():
        plan.leave_out(where, f"block {label!r}", "empty: nothing to remember")
        return
    created = _when(plan, block, "created_at", f"{where}.created_at", created)
    updated = _when(plan, block, "updated_at", f"{where}.updated_at", max(created, updated))
    parts = _split(value.strip(), store.config.limits.max_text_chars)
    if len(parts) > 1:
        plan.place("block longer than a memory -> split at line breaks", len(parts) - 1)
    if PERSONA.search(label):  # the agent's own: who it is and how it behaves
        whose, kind, linked, who = "the agent's persona -> pinned memory (skill) of the agent", "skill", agents, \
            agents[0] if len(agents) == 1 else ""
    elif USER.search(label):  # about the user, whom no agent entity stands for
        whose, kind, linked, who = "block about the user -> pinned memory (fact)", "fact", [], ""
    else:
        whose, kind, linked, who = "the agent's working memory -> pinned memory (fact) of the agent", "fact", \
            agents, ""
    sharing = "\x1e".join(sorted(agents))
    for i, part in enumerate(parts):
        try:
            rec = plan.memory(store, f"block\x1f{label}\x1f{sharing}\x1f{i}", slot=f"block\x1f{bid}\x1f{i}",
                              scope=scope, text=part, created=created, updated=updated, entities=tuple(linked),
                              kind=kind, who=who[:200], topic=label[:200], pinned=True, importance=0.8,
                              tags=["letta", "core_memory", label[:64]] if label else ["letta", "core_memory"],
                              source=f"letta:{os.path.basename(plan.source)}",
                              context={"letta": {"block": label, "part": i + 1, "parts": len(parts),
                                                 "limit": block.get("limit"), "description": block.get("description"),
                                                 "agents": agents}})
        except ValidationError as exc:
            plan.error(where, str(exc))
            return
        if rec:
            plan.place(whose)


def _message_text(message: dict[str, Any]) -> tuple[str, int]:
    """A message's text (its text parts, joined) and how many other parts it had
    (reasoning, tool calls, images)."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip(), 0
    if not isinstance(content, list):
        text = message.get("text")
        return (text.strip() if isinstance(text, str) else ""), 0
    texts = [p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(
        p.get("text"), str) and p["text"].strip()]
    return "\n".join(t.strip() for t in texts), len(content) - len(texts)


def _messages(store: MemoryStore, plan: ImportPlan, where: str, agent: dict[str, Any], name: str, scope: str,
              fallback: float) -> None:
    """The agent's conversation, each user and assistant message with text a memory (an
    event), one episode: the same source, in the order written."""
    messages = agent.get("messages") or []
    if not isinstance(messages, list):
        plan.error(f"{where}.messages", "must be a list")
        return
    skipped: dict[str, int] = {}
    for i, message in enumerate(messages):
        at = f"{where}.messages[{i}]"
        if not isinstance(message, dict):
            plan.error(at, "must be an object")
            continue
        role = message.get("role")
        text, other = _message_text(message)
        if role not in ("user", "assistant"):
            skipped[f"{role} message(s)"] = skipped.get(f"{role} message(s)", 0) + 1
            continue
        if other:
            skipped["reasoning, tool call or other part(s) of a message"] = skipped.get(
                "reasoning, tool call or other part(s) of a message", 0) + other
        if not text:
            skipped[f"{role} message(s) without text"] = skipped.get(f"{role} message(s) without text", 0) + 1
            continue
        created = _when(plan, message, "created_at", f"{at}.created_at", fallback)
        parts = _split(text, store.config.limits.max_text_chars)
        mid = str(message.get("id") or i)
        for j, part in enumerate(parts):
            try:
                rec = plan.memory(store, f"message\x1f{name}\x1f{mid}\x1f{j}", scope=scope, text=part,
                                  created=created + j * 0.001, kind="event", importance=0.3,
                                  tags=["letta", "message", role], source=f"letta:{os.path.basename(plan.source)}#{name}"[:200],
                                  context={"letta": {"message": message.get("id"), "role": role, "agent": name,
                                                     **({"part": j + 1, "parts": len(parts)} if len(parts) > 1 else {})}})
            except ValidationError as exc:
                plan.error(at, str(exc))
                break
            if rec:
                plan.place(f"{role} message -> memory (event) of the agent's conversation")
    for what, n in skipped.items():
        plan.leave_out(f"{where}.messages", f"{n} {what}", "not what was said: instructions, tools or reasoning")


def _split(text: str, limit: int) -> list[str]:
    if len(text) <= limit:
        return [text]
    parts, current = [], ""
    for line in text.split("\n"):
        while len(line) > limit:
            if current:
                parts.append(current)
                current = ""
            parts.append(line[:limit])
            line = line[limit:]
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > limit:
            parts.append(current)
            current = line
        else:
            current = candidate
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _passage(store: MemoryStore, plan: ImportPlan, where: str, passage: Any, agent: str | None, scope: str,
             fallback: float) -> None:
    if not isinstance(passage, dict) or not isinstance(passage.get("text"), str):
        plan.error(where, "an archival passage needs a string 'text'")
        return
    created = _when(plan, passage, "created_at", f"{where}.created_at", fallback)
    updated = _when(plan, passage, "updated_at", f"{where}.updated_at", created)
    tags = passage.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        plan.error(f"{where}.tags", "must be a list of strings")
        return
    try:
        rec = plan.memory(store, f"passage\x1f{passage.get('id') or passage['text']}", scope=scope, text=passage["text"],
                          created=created, updated=updated, entities=(agent,) if agent else (), kind="fact",
                          tags=list(dict.fromkeys(["letta", "archival", *tags]))[: store.config.limits.max_tags],
                          source=f"letta:{os.path.basename(plan.source)}",
                          context={"letta": {"passage": passage.get("id"), "metadata": passage.get("metadata")}})
    except ValidationError as exc:
        plan.error(where, str(exc))
        return
    if rec:
        plan.place("archival passage -> memory (fact)")
    else:
        same = f"the same id {passage['id']!r}"[:100] if passage.get("id") else "the same text"
        plan.leave_out(where, "archival passage", f"an earlier passage has {same}; the first is kept")
