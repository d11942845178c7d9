"""The compiler's command-line half: ``mnemoscope compile`` and ``mnemoscope quote``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .compiler import ContextCompiler, MemoryItem, quote_for
from .compiler.providers import render
from .compiler.types import TIER_BY_NAME, TIER_NAMES

__all__ = ["render"]  # moved to app.compiler.providers; re-exported for the command line

FORMATS = ("text", "openai", "anthropic", "json")
REQUEST_COMPILE_FIELDS = (
    "conversation_messages", "last_assistant_turn", "agent_persona_prompt", "dynamic_directives",
    "middle_extras", "use_prompt_caching_split",
)
REQUEST_COMPILER_FIELDS = ("max_tokens", "model_id", "core_content", "memory_placement",
                           "include_interrupt_instruction", "trim_history")


class UsageError(ValueError):
    """Bad command-line input; the message says which flag and why."""


def parse_memory_flag(spec: str) -> MemoryItem:
    """``id|tier|content``: tier is 1/2/3 or procedural/semantic/episodic."""
    parts = spec.split("|", 2)
    if len(parts) != 3:
        raise UsageError(f"--memory {spec!r}: expected id|tier|content, e.g. 'pref-1|2|User likes tea.'")
    rid, tier_raw, content = parts
    tier_raw = tier_raw.strip().lower()
    if tier_raw in TIER_BY_NAME:
        tier = TIER_BY_NAME[tier_raw]
    elif tier_raw.isdigit() and int(tier_raw) in TIER_NAMES:
        tier = int(tier_raw)
    else:
        raise UsageError(f"--memory {spec!r}: tier must be 1, 2, 3 or procedural/semantic/episodic")
    return MemoryItem(id=rid.strip(), content=content, memory_type=TIER_NAMES[tier], priority=tier)


def memory_from_json(obj: Any, where: str) -> MemoryItem:
    if not isinstance(obj, dict):
        raise UsageError(f"{where} must be an object with id and content")
    unknown = set(obj) - {"id", "content", "memory_type", "priority", "score", "kind", "tier"}
    if unknown:
        raise UsageError(f"{where} has unknown fields: {', '.join(sorted(unknown))}")
    priority = obj.get("priority", obj.get("tier"))
    memory_type = obj.get("memory_type") or (TIER_NAMES.get(priority) if priority in TIER_NAMES else "semantic")
    return MemoryItem(id=obj.get("id"), content=obj.get("content"), memory_type=memory_type, priority=priority,
                      score=obj.get("score"), kind=obj.get("kind"))


def load_json_file(path: str, what: str) -> Any:
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what} {path} is not valid JSON: {exc}") from None


def add_compile_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--request", metavar="FILE", help="JSON request: compile() fields plus max_tokens, model_id, "
                   "core_content, memory_placement; '-' reads standard input")
    p.add_argument("--memory", action="append", default=[], metavar="ID|TIER|CONTENT",
                   help="a memory to offer (repeatable); tier 1/2/3 or procedural/semantic/episodic")
    p.add_argument("--user-message", help="the current user turn")
    p.add_argument("--max-tokens", type=int, help="hard token budget (default 8192)")
    p.add_argument("--model", help="model id for tokenizer, context cap and caching, e.g. openai/gpt-4o")
    p.add_argument("--system", help="system rules (core content)")
    p.add_argument("--history", metavar="FILE", help="JSON list of prior messages (role, content)")
    p.add_argument("--placement", choices=("end", "system"), help="where memories go (default end)")


def build_request(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any], list[MemoryItem], str]:
    """Merge a request file with flags (flags win): compiler kwargs, compile kwargs,
    memories and the user message."""
    compiler_kw: dict[str, Any] = {}
    compile_kw: dict[str, Any] = {}
    memories: list[MemoryItem] = []
    user_message = None
    if args.request:
        req = load_json_file(args.request, "request file")
        if not isinstance(req, dict):
            raise UsageError(f"request file {args.request} must hold a JSON object")
        known = set(REQUEST_COMPILE_FIELDS) | set(REQUEST_COMPILER_FIELDS) | {"memories", "user_message"}
        unknown = set(req) - known
        if unknown:
            raise UsageError(f"request file {args.request}: unknown fields {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(sorted(known))}")
        for key in REQUEST_COMPILER_FIELDS:
            if key in req:
                compiler_kw[key] = req[key]
        for key in REQUEST_COMPILE_FIELDS:
            if key in req:
                compile_kw[key] = req[key]
        if "middle_extras" in compile_kw:
            compile_kw["middle_extras"] = [tuple(x) if isinstance(x, list) else x for x in compile_kw["middle_extras"]]
        raw_memories = req.get("memories", [])
        if not isinstance(raw_memories, list):
            raise UsageError("request field 'memories' must be a list")
        memories = [memory_from_json(m, f"memories[{i}]") for i, m in enumerate(raw_memories)]
        user_message = req.get("user_message")
    memories += [parse_memory_flag(s) for s in args.memory]
    if args.user_message is not None:
        user_message = args.user_message
    if user_message is None:
        raise UsageError("a user message is needed: --user-message TEXT or 'user_message' in --request")
    if args.max_tokens is not None:
        compiler_kw["max_tokens"] = args.max_tokens
    compiler_kw.setdefault("max_tokens", 8192)
    if args.model:
        compiler_kw["model_id"] = args.model
    if args.system is not None:
        compiler_kw["core_content"] = args.system
    if args.placement:
        compiler_kw["memory_placement"] = args.placement
    if args.history:
        compile_kw["conversation_messages"] = load_json_file(args.history, "history file")
    return compiler_kw, compile_kw, memories, user_message


def run_compile(args: argparse.Namespace) -> int:
    compiler_kw, compile_kw, memories, user_message = build_request(args)
    compiler = ContextCompiler(**compiler_kw)
    result = compiler.compile(memories, user_message, **compile_kw)
    print(render(result, args.format, compiler.model_id))
    return 0


def run_quote(args: argparse.Namespace) -> int:
    compiler_kw, compile_kw, memories, user_message = build_request(args)
    if args.price_per_1k_input_tokens < 0:
        raise UsageError("--price-per-1k-input-tokens must not be negative")
    compiler = ContextCompiler(**compiler_kw)
    quote = quote_for(compiler.compile(memories, user_message, **compile_kw), args.price_per_1k_input_tokens)
    if args.json:
        print(json.dumps({
            "total_tokens": quote.total_tokens, "billed_tokens": quote.billed_tokens,
            "price_per_1k_input_tokens": quote.price_per_1k_input_tokens,
            "estimated_cost_usd": quote.estimated_cost_usd, "trimming_strategies": quote.trimming_strategies,
        }, indent=2))
    else:
        md = quote.compile_result.metadata
        print(f"prompt tokens   {quote.total_tokens} of {md['tokens_budget']} budget "
              f"({md['tokenizer']}{'' if md['token_count_exact'] else ', approximate'})")
        print(f"billed tokens   {quote.billed_tokens} (with {md['message_overhead_tokens']} chat-format tokens)")
        print(f"memories kept   {md['memories_kept']} of {md['memories_offered']}")
        print(f"estimated cost  ${quote.estimated_cost_usd:.6f} at ${quote.price_per_1k_input_tokens}/1k input")
        print(f"trimming        {', '.join(quote.trimming_strategies) or 'none'}")
    return 0
