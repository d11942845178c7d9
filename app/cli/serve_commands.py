"""The agents' doors: ``mcp`` (an MCP server over stdio) and ``serve`` (the HTTP API,
with MCP's streamable-HTTP transport at ``/mcp``)."""

from __future__ import annotations

import os
from collections.abc import Callable

import click
from mnemoscope.store import SENSITIVITIES

from ..serve.handshake import TOOL_SETS
from .group import cli, db_option, open_store, say_which_db

TOKEN_ENV = "MNEMOSCOPE_TOKEN"


def door_options(fn: Callable) -> Callable:
    options = [
        click.option("--scope", "scopes", multiple=True, metavar="SCOPE",
                     help="a scope this server may read and write (repeatable; the first is the default). "
                          "Reading always includes global. Default: global"),
        click.option("--trust", type=click.Choice(SENSITIVITIES), default="medium", show_default=True,
                     help="the highest sensitivity this server may read or write"),
        click.option("--client-name", metavar="NAME",
                     help="who the calls are from in the activity log when the client does not say"),
        click.option("--tools", "tool_sets", multiple=True, type=click.Choice(TOOL_SETS),
                     help="the MCP tools to give (repeatable): mnemoscope (remember, recall, …; the default), "
                          "memory-server (the MCP memory server's create_entities, read_graph, …, over this "
                          "memory)"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _operations(store, scopes: tuple[str, ...], trust: str, client: str, door: str,
                tool_sets: tuple[str, ...] = ()):
    from ..serve.operations import Operations

    ops = Operations(store, scopes=scopes or ("global",), trust=trust, client=client, door=door)
    ops.tool_sets = tuple(dict.fromkeys(tool_sets)) or ("mnemoscope",)
    return ops


@cli.command("mcp")
@db_option
@door_options
def mcp_command(scopes: tuple[str, ...], trust: str, client_name: str | None, tool_sets: tuple[str, ...]) -> None:
    """Serve the memory to an agent as an MCP server over stdio.

    Tools: remember, recall, brief, tick, stats, update, forget, capture,
    compile_prompt, resolve_citations; with --tools memory-server, the MCP memory
    server's own (create_entities, add_observations, read_graph, …), so an agent written
    for that server works unchanged. Add it to Claude Desktop or any MCP client as the
    command 'mnemoscope mcp' (see docs/agents.md); open Mnemoscope to watch what it does."""
    import sys

    from ..serve.handshake import early_answer

    say_which_db("mcp")
    with open_store() as store:
        # The handshake is answered before the SDK is imported (it takes a second or more).
        first = sys.stdin.buffer.readline()
        early = early_answer(first, tool_sets or ("mnemoscope",))
        if early is not None:
            sys.stdout.buffer.write(early[1])
            sys.stdout.buffer.flush()
        from ..serve.mcp_server import run_stdio

        ops = _operations(store, scopes, trust, client_name or "mcp client", "mcp", tool_sets)
        try:
            run_stdio(ops, first, early[0] if early is not None else None)
        finally:
            ops.close()


@cli.command("serve")
@db_option
@door_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to bind; anything but loopback needs a bearer token")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--token", metavar="TOKEN", help=f"bearer token every request must carry (or set {TOKEN_ENV})")
def serve_command(scopes: tuple[str, ...], trust: str, client_name: str | None, tool_sets: tuple[str, ...],
                  host: str, port: int, token: str | None) -> None:
    """Serve the memory over HTTP: a JSON API and MCP's streamable HTTP at /mcp.

    Endpoints: GET /health, GET /brief, GET /stats, POST /recall, /remember, /update,
    /forget, /capture, /compile, /resolve_citations, /tick; MCP at /mcp. Binds
    127.0.0.1 unless told otherwise; binding any other address requires a token."""
    from ..serve.http_api import is_loopback, run_http

    token = token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host) and not token:
        raise click.UsageError(f"binding {host} exposes the memory beyond this machine; give --token TOKEN "
                               f"(or set {TOKEN_ENV}) so that every request must carry it", ctx=None)
    if token is not None and len(token) < 16:
        raise click.BadParameter("use at least 16 characters", param_hint="--token")
    say_which_db("serve")
    with open_store() as store:
        ops = _operations(store, scopes, trust, client_name or "http client", "http", tool_sets)
        try:
            run_http(ops, host=host, port=port, token=token)
        finally:
            ops.close()
