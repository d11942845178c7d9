"""The command line: ``mnemoscope`` (or ``python -m app``).

Run bare, it opens the inspector window; subcommands do headless work.
"""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .compile_cli import FORMATS, UsageError, add_compile_arguments, run_compile, run_quote
from .compiler.capabilities import CapabilityMapError
from .compiler.tokenizers import TokenizerError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemoscope",
        description="Inspect an AI agent's long-term memory. Without a command, opens the inspector window.",
    )
    parser.add_argument("--version", action="version", version=f"mnemoscope {__version__}")
    parser.add_argument("--db", metavar="PATH", help="memory database (default: the demo database in the "
                        "user data directory, created on first start)")
    parser.add_argument("--selftest", action="store_true",
                        help="create a demo database in a temporary directory, recall, compile, render the "
                             "window offscreen, print a JSON report and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("compile", help="compile a prompt from memories and a user message",
                       description="Compile a prompt and print it. Takes a JSON request file or flags.")
    add_compile_arguments(p)
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (readable), openai (messages), anthropic (request), json (everything)")
    p.set_defaults(func=run_compile)

    p = sub.add_parser("quote", help="estimate the input cost of a compiled prompt",
                       description="Compile a prompt and quote its input-side cost.")
    add_compile_arguments(p)
    p.add_argument("--price-per-1k-input-tokens", type=float, required=True, metavar="P",
                   help="your provider's price in USD per 1,000 input tokens")
    p.add_argument("--json", action="store_true", help="print the quote as JSON")
    p.set_defaults(func=run_quote)

    p = sub.add_parser("preview", help="recall from a database and print the prompt the agent would send",
                       description="Recall memories for a user message (without writing) and compile the prompt "
                                   "the inspector's preview shows; prints what its copy buttons copy.")
    p.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS, help="memory database")
    p.add_argument("--user-message", required=True, help="the current user turn (drives recall)")
    p.add_argument("--history", metavar="FILE", help="JSON list of prior messages (role, content)")
    p.add_argument("--model", default="openai/gpt-4o", help="model id (default openai/gpt-4o)")
    p.add_argument("--max-tokens", type=int, default=4096, help="token budget (default 4096)")
    p.add_argument("--placement", choices=("end", "system"), default="end")
    p.add_argument("--system", help="system rules (default: a short assistant persona)")
    p.add_argument("-k", type=int, default=20, help="memories to recall (default 20)")
    p.add_argument("--scope", default="global", help="scope to compile for")
    p.add_argument("--trust", default="medium", help="maximum sensitivity to compile for")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.set_defaults(func=run_preview)

    from .store_cli import add_store_commands

    add_store_commands(sub)
    return parser


def run_preview(args: argparse.Namespace) -> int:
    from .bridge import DEFAULT_RULES, PreviewRequest, preview
    from .compile_cli import load_json_file, render
    from .store_cli import open_store

    history = load_json_file(args.history, "history file") if args.history else []
    request = PreviewRequest(user_message=args.user_message, history=history, model_id=args.model,
                             max_tokens=args.max_tokens, placement=args.placement,
                             rules=DEFAULT_RULES if args.system is None else args.system, k=args.k,
                             scope=args.scope, trust=args.trust)
    with open_store(args) as store:
        result = preview(store, request).result
    print(render(result, args.format, request.model_id))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.selftest:
        from .selftest import run_selftest

        return run_selftest()
    if args.command is None:
        from .ui.launch import run_gui

        return run_gui(args.db)
    from store.errors import StoreError

    try:
        return args.func(args)
    except (UsageError, StoreError, CapabilityMapError, TokenizerError, ValueError, TypeError) as exc:
        print(f"mnemoscope {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
