"""``connect CLIENT``: add this installation as an MCP server to Claude Desktop, Claude
Code, Cursor, VS Code, Codex, Gemini CLI, Windsurf or Cline (see mnemoscope.connect)."""

from __future__ import annotations

import click
from mnemoscope.store import SENSITIVITIES

from ..connect import CLIENTS, SERVER_NAME, WORKSPACE_FILES, config_text, connect
from ..serve.handshake import TOOL_SETS
from .group import Failure, chosen_db, cli, db_option, emit_json, json_option


@cli.command("connect")
@db_option
@click.argument("client", type=click.Choice(list(CLIENTS)))
@click.option("--scope", "scopes", multiple=True, metavar="SCOPE",
              help="a scope the agent may read and write (repeatable; default: global)")
@click.option("--trust", type=click.Choice(SENSITIVITIES), default="medium", show_default=True,
              help="the highest sensitivity the agent may read or write")
@click.option("--tools", "tool_sets", multiple=True, type=click.Choice(TOOL_SETS),
              help="the MCP tools the server gives (repeatable; default: mnemoscope's own): memory-server for an "
              "agent written for the MCP memory server")
@click.option("--print", "show", is_flag=True, help="show the entry and the file it goes in; write nothing")
@click.option("--remove", is_flag=True, help=f"take the '{SERVER_NAME}' server out of the client's configuration")
@click.option("--config", "config_file", metavar="FILE", help="the client's configuration file (default: where "
              "the client keeps it on this system)")
@click.option("--workspace", metavar="FOLDER", help=f"{', '.join(WORKSPACE_FILES)}: write the project's own "
              "configuration in FOLDER (.vscode/mcp.json, .mcp.json, .cursor/mcp.json, .gemini/settings.json)")
@json_option
def connect_command(client: str, scopes: tuple[str, ...], trust: str, tool_sets: tuple[str, ...], show: bool,
                    remove: bool, config_file: str | None, workspace: str | None, as_json: bool) -> None:
    """Connect an MCP client: write the server entry that runs 'mnemoscope mcp' on this
    database into the client's configuration file (merged with what is there; the old
    file kept as .bak; nothing changes if it is already there)."""
    from mnemoscope.store import shown

    db = chosen_db()
    if shown(db) != db:  # a URL with its password in it
        raise Failure(f"{shown(db)}: give the password through PGPASSWORD or ~/.pgpass, not in the URL: the "
                      "URL is written into the client's configuration; nothing was written")
    where = {"workspace": workspace} if workspace else {}
    result = connect(client, db, scopes=scopes, trust=trust, remove=remove, dry_run=show, path=config_file,
                     tools=tool_sets, **where)
    if as_json:
        emit_json({"client": client, "path": result.path, "entry": result.entry, "changed": result.changed,
                   "removed": result.removed, "backup": result.backup, "written": result.changed and not show})
    elif show:
        click.echo(f"# {result.path}")
        click.echo(config_text(client, result.entry))
    else:
        click.echo(result.message())
