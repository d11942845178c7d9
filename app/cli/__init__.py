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

# Each module registers its commands on ``cli``.
from . import (  # noqa: F401
    compile_commands,
    connect_commands,
    import_commands,
    meaning_commands,
    owner_commands,
    serve_commands,
    store_commands,
)
from .group import Failure, cli, db_option, emit_json, json_option, open_store


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


__all__ = ["cli", "main", "Failure", "open_store", "db_option", "json_option", "emit_json"]
