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

    from .store_cli import add_store_commands

    add_store_commands(sub)
    return parser


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
