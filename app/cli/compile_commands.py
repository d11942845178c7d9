"""The compiler's commands: ``compile``, ``quote`` and ``preview``."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

import click

from ..bridge import DEFAULT_K
from ..compiler import PROFILES, ContextCompiler, MemoryItem, get_profile, quote_for
from ..compiler.capabilities import DEFAULT_MAX_TOKENS, DEFAULT_MODEL
from ..compiler.providers import FORMATS, render
from ..compiler.types import TIER_BY_NAME, TIER_NAMES
from .group import cli, db_option, emit_json, json_option, open_store

REQUEST_COMPILE_FIELDS = (
    "conversation_messages", "last_assistant_turn", "agent_persona_prompt", "dynamic_directives",
    "middle_extras", "use_prompt_caching_split",
)
REQUEST_COMPILER_FIELDS = ("max_tokens", "model_id", "core_content", "memory_placement",
                           "include_interrupt_instruction", "trim_history", "reserve_output_tokens")


class Price(click.ParamType):
    """A price per 1,000 input tokens: a finite number, not negative."""

    name = "price"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            price = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(price) or price < 0:
            self.fail(f"{value!r} must be a finite number >= 0", param, ctx)
        return price


def parse_memory_flag(spec: str) -> MemoryItem:
    """``id|tier|content``: tier is 1/2/3 or procedural/semantic/episodic."""
    parts = spec.split("|", 2)
    if len(parts) != 3:
        raise click.BadParameter(f"{spec!r}: expected id|tier|content, e.g. 'pref-1|2|User likes tea.'",
                                 param_hint="--memory")
    rid, tier_raw, content = parts
    tier_raw = tier_raw.strip().lower()
    if tier_raw in TIER_BY_NAME:
        tier = TIER_BY_NAME[tier_raw]
    elif tier_raw.isdigit() and int(tier_raw) in TIER_NAMES:
        tier = int(tier_raw)
    else:
        raise click.BadParameter(f"{spec!r}: tier must be 1, 2, 3 or procedural/semantic/episodic",
                                 param_hint="--memory")
    return MemoryItem(id=rid.strip(), content=content, memory_type=TIER_NAMES[tier], priority=tier)


def memory_from_json(obj: Any, where: str) -> MemoryItem:
    if not isinstance(obj, dict):
        raise click.ClickException(f"{where} must be an object with id and content")
    unknown = set(obj) - {"id", "content", "memory_type", "priority", "score", "kind", "tier"}
    if unknown:
        raise click.ClickException(f"{where} has unknown fields: {', '.join(sorted(unknown))}")
    priority = obj.get("priority", obj.get("tier"))
    memory_type = obj.get("memory_type") or (TIER_NAMES.get(priority) if priority in TIER_NAMES else "semantic")
    return MemoryItem(id=obj.get("id"), content=obj.get("content"), memory_type=memory_type, priority=priority,
                      score=obj.get("score"), kind=obj.get("kind"))


def load_json_file(path: str, what: str) -> Any:
    """The JSON in ``path`` (``-``: standard input); a clear failure when unreadable."""
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise click.ClickException(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"{what} {path} is not valid JSON: {exc}") from None


def compile_options(fn: Callable) -> Callable:
    options = [
        click.option("--request", metavar="FILE", help="JSON request: compile() fields plus max_tokens, model_id, "
                     "core_content, memory_placement; '-' reads standard input"),
        click.option("--memory", "memory_specs", multiple=True, metavar="ID|TIER|CONTENT",
                     help="a memory to offer (repeatable); tier 1/2/3 or procedural/semantic/episodic"),
        click.option("--user-message", help="the current user turn"),
        click.option("--max-tokens", type=int, help="hard token budget (default 8192)"),
        click.option("--model", help=f"model id for tokenizer, context cap and caching, e.g. {DEFAULT_MODEL}"),
        click.option("--system", help="system rules (core content)"),
        click.option("--history", metavar="FILE", help="JSON list of prior messages (role, content)"),
        click.option("--placement", type=click.Choice(["end", "system"]), help="where memories go (default end)"),
        click.option("--profile", type=click.Choice(list(PROFILES)),
                     help="a preset of the options above ('mnemoscope profile explain NAME'); flags win"),
        click.option("--reserve-output-tokens", type=click.IntRange(min=0), metavar="N",
                     help="tokens of the model's window kept free for the reply (default from the capability map)"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def build_request(opts: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[MemoryItem], str]:
    """Merge a request file with flags (flags win): compiler kwargs, compile kwargs,
    memories and the user message."""
    compiler_kw: dict[str, Any] = {}
    compile_kw: dict[str, Any] = {}
    memories: list[MemoryItem] = []
    user_message = None
    if opts["request"]:
        req = load_json_file(opts["request"], "request file")
        if not isinstance(req, dict):
            raise click.ClickException(f"request file {opts['request']} must hold a JSON object")
        known = set(REQUEST_COMPILE_FIELDS) | set(REQUEST_COMPILER_FIELDS) | {"memories", "user_message"}
        unknown = set(req) - known
        if unknown:
            raise click.ClickException(f"request file {opts['request']}: unknown fields "
                                       f"{', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        compiler_kw.update({k: req[k] for k in REQUEST_COMPILER_FIELDS if k in req})
        compile_kw.update({k: req[k] for k in REQUEST_COMPILE_FIELDS if k in req})
        if "middle_extras" in compile_kw:
            compile_kw["middle_extras"] = [tuple(x) if isinstance(x, list) else x for x in compile_kw["middle_extras"]]
        raw_memories = req.get("memories", [])
        if not isinstance(raw_memories, list):
            raise click.ClickException("request field 'memories' must be a list")
        memories = [memory_from_json(m, f"memories[{i}]") for i, m in enumerate(raw_memories)]
        user_message = req.get("user_message")
    memories += [parse_memory_flag(s) for s in opts["memory_specs"]]
    if opts["user_message"] is not None:
        user_message = opts["user_message"]
    if user_message is None:
        raise click.UsageError("a user message is needed: --user-message TEXT or 'user_message' in --request")
    if opts["max_tokens"] is not None:
        compiler_kw["max_tokens"] = opts["max_tokens"]
    compiler_kw.setdefault("max_tokens", 8192)
    if opts["model"]:
        compiler_kw["model_id"] = opts["model"]
    if opts["system"] is not None:
        compiler_kw["core_content"] = opts["system"]
    if opts["placement"]:
        compiler_kw["memory_placement"] = opts["placement"]
    if opts["reserve_output_tokens"] is not None:
        compiler_kw["reserve_output_tokens"] = opts["reserve_output_tokens"]
    if opts["history"]:
        compile_kw["conversation_messages"] = load_json_file(opts["history"], "history file")
    return compiler_kw, compile_kw, memories, user_message


def _compile(opts: dict[str, Any]):
    compiler_kw, compile_kw, memories, user_message = build_request(opts)
    if opts["profile"]:
        compiler = ContextCompiler.from_profile(opts["profile"], **compiler_kw)
    else:
        compiler = ContextCompiler(**compiler_kw)
    result = compiler.compile(memories, user_message, **compile_kw)
    md = result.metadata
    if md["budget_exceeded"]:
        click.echo(f"warning: the budget of {md['tokens_budget']:,} tokens cannot hold the rules and the current "
                   f"turn{' and the history' if md['history_messages_offered'] else ''}; no memories were "
                   "included and the prompt is over budget", err=True)
    return compiler, result


format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
                             help="text (readable), openai (messages), anthropic (request), json (everything)")


@cli.command("compile")
@compile_options
@format_option
@json_option
def compile_command(fmt: str, as_json: bool, **opts: Any) -> None:
    """Compile a prompt from memories and a user message, and print it.

    Takes a JSON request file or flags; --json is the same as --format json."""
    compiler, result = _compile(opts)
    click.echo(render(result, "json" if as_json else fmt, compiler.model_id))


@cli.command("quote")
@compile_options
@click.option("--price-per-1k-input-tokens", "price", type=Price(), required=True, metavar="P",
              help="your provider's price in USD per 1,000 input tokens")
@json_option
def quote_command(price: float, as_json: bool, **opts: Any) -> None:
    """Compile a prompt and quote its input-side cost."""
    _compiler, result = _compile(opts)
    quote = quote_for(result, price)
    if as_json:
        emit_json({
            "total_tokens": quote.total_tokens, "billed_tokens": quote.billed_tokens,
            "price_per_1k_input_tokens": quote.price_per_1k_input_tokens,
            "estimated_cost_usd": quote.estimated_cost_usd, "trimming_strategies": quote.trimming_strategies,
        })
        return
    md = result.metadata
    click.echo(f"prompt tokens   {quote.total_tokens} of {md['tokens_budget']} budget "
               f"({md['tokenizer']}{'' if md['token_count_exact'] else ', approximate'})")
    click.echo(f"billed tokens   {quote.billed_tokens} (with {md['message_overhead_tokens']} chat-format tokens)")
    click.echo(f"memories kept   {md['memories_kept']} of {md['memories_offered']}")
    click.echo(f"estimated cost  ${quote.estimated_cost_usd:.6f} at ${quote.price_per_1k_input_tokens}/1k input")
    click.echo(f"trimming        {', '.join(quote.trimming_strategies) or 'none'}")


@cli.command("preview")
@db_option
@click.option("--user-message", required=True, help="the current user turn (drives recall)")
@click.option("--history", metavar="FILE", help="JSON list of prior messages (role, content)")
@click.option("--model", default=DEFAULT_MODEL, show_default=True, help="model id")
@click.option("--max-tokens", type=click.IntRange(min=1), default=DEFAULT_MAX_TOKENS, show_default=True,
              help="token budget")
@click.option("--placement", type=click.Choice(["end", "system"]), default="end", show_default=True)
@click.option("--system", help="system rules (default: a short assistant persona)")
@click.option("-k", type=click.IntRange(1, 1000), default=DEFAULT_K, show_default=True, help="memories to recall")
@click.option("--scope", default="global", show_default=True, help="scope to compile for")
@click.option("--trust", default="medium", show_default=True, help="maximum sensitivity to compile for")
@click.option("--in-days", "in_days", type=click.FloatRange(0, 36500), default=None, metavar="DAYS",
              help="the prompt as of DAYS ahead (memories fade, some are archived); what leaves and enters "
                   "it against today goes to standard error (with --json: under 'future')")
@format_option
@json_option
def preview_command(user_message: str, history: str | None, model: str, max_tokens: int, placement: str,
                    system: str | None, k: int, scope: str, trust: str, in_days: float | None, fmt: str,
                    as_json: bool) -> None:
    """Recall from a database and print the prompt the agent would send.

    Recalls memories for the user message (without writing) and compiles the prompt the
    inspector's preview shows; prints what its copy buttons copy. With --in-days, the
    prompt of that later day (nothing is written or reinforced either)."""
    from ..bridge import DEFAULT_RULES, PreviewRequest, preview
    from ..prompt_future import day_words, prompt_future

    request = PreviewRequest(user_message=user_message,
                             history=load_json_file(history, "history file") if history else [],
                             model_id=model, max_tokens=max_tokens, placement=placement,
                             rules=DEFAULT_RULES if system is None else system, k=k, scope=scope, trust=trust)
    with open_store() as store:
        if in_days is None:
            click.echo(render(preview(store, request).result, "json" if as_json else fmt, request.model_id))
            return
        future = prompt_future(store, request, in_days)
    if as_json:
        prompt = json.loads(render(future.then.result, "json", request.model_id))
        click.echo(json.dumps({**prompt, "future": future.to_dict()}, ensure_ascii=False, indent=2))
        return
    click.echo(render(future.then.result, fmt, request.model_id))
    for line in future.sentences() or [f"{day_words(in_days)} the prompt carries the same memories."]:
        click.echo(line, err=True)
    click.echo(f"tokens {future.tokens_now:,} today, {future.tokens_then:,} then", err=True)


@cli.group("profile")
def profile_group() -> None:
    """Profiles: named presets of the compiler's options (minimal, coding, conversational)."""


@profile_group.command("explain")
@click.argument("name", type=click.Choice(list(PROFILES)))
@click.option("--model", help="model id, to show options that depend on its window")
def profile_explain(name: str, model: str | None) -> None:
    """Say which options a profile sets, and why."""
    click.echo(get_profile(name).explain(model))
