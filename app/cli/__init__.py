"""The command line: ``mnemoscope`` (or ``python -m mnemoscope``), one click group.

Run bare, it opens the inspector window; every subcommand does headless work through
the same store and compiler functions the window and the agents' doors use.

Exit codes: 0 done, 1 the operation failed (a refused database, a bad value in a file,
nothing found), 2 the command line itself was wrong. A user's mistake is one line on
standard error, never a traceback.
"""

from __future__ import annotations

import os
import sys

import click

from .group import Failure, cli, db_option, emit_json, json_option, open_store

# Each module registers its commands on ``cli`` when it is imported, which happens when one
# of them is asked for (a start-up loads only what its command needs); tests/doors/test_cli.py
# checks this list against what the modules register.
COMMANDS = {
    "compile_commands": ["compile", "quote", "preview", "profile"],
    "connect_commands": ["connect"],
    "import_commands": ["import", "export"],
    "meaning_commands": ["reembed"],
    "owner_commands": ["copy", "backup", "restore-backup", "mirror", "privacy-check", "conflicts", "supersede",
                       "keep-both"],
    "serve_commands": ["mcp", "serve"],
    "store_commands": ["init", "demo", "remember", "recall", "update", "forget", "restore", "tick", "stats",
                       "brief", "capture", "activity", "eval"],
}
cli.lazy = {name: module for module, names in COMMANDS.items() for name in names}


def load_all() -> None:
    """Import every command's module (``cli.commands`` then holds them all)."""
    import importlib

    for module in COMMANDS:
        importlib.import_module(f"{__name__}.{module}")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (``sys.exit(main())`` in scripts)."""
    try:
        # Without standalone mode click returns what ctx.exit() was given, and raises the rest.
        code = cli.main(args=argv, prog_name="mnemoscope", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except BrokenPipeError:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - nothing more may be written to a closed pipe
        return 0
    return code if isinstance(code, int) else 0


__all__ = ["cli", "main", "load_all", "Failure", "open_store", "db_option", "json_option", "emit_json"]
