"""``mnemoscope mcp``: the store as an MCP server, on the official MCP Python SDK.

Every tool is one method of :class:`~mnemoscope.serve.operations.Operations`; the SDK builds
each tool's input schema from that method's signature and checks every call against it.
Each declares an output schema (an object) and answers with ``structuredContent`` (the
answer as an object) beside the same answer as JSON text, for clients before 2025-06-18.
A call the store refuses comes back as a tool error (``isError``) with the store's
message; the server keeps running and writes nothing for it but its line in the
activity log.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mnemoscope.store.model.errors import StoreError
from pydantic import ValidationError as PydanticValidationError

from .. import __version__
from .handshake import MEMORY_SERVER, SERVER_NAME, SERVER_TITLE, instructions
from .operations import CALLER, Operations

READ_ONLY = {"brief", "stats", "resolve_citations"}
DESTRUCTIVE = {"forget", "update"}


def _client_of(ctx: Any, fallback: str) -> str:
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    if info is None:
        return fallback
    version = getattr(info, "version", "")
    return f"{info.name} {version}".strip() if info.name else fallback


class CallerMiddleware:
    """Tells the operations who is calling, and logs the calls that the SDK refused
    before they reached an operation (arguments that do not fit the schema)."""

    def __init__(self, ops: Operations, tools: dict[str, Callable[..., Any]] | None = None) -> None:
        self.ops = ops
        tools = tools if tools is not None else {name: ops.bound(name) for name in Operations.TOOLS}
        self.known = {name: set(inspect.signature(fn).parameters) for name, fn in tools.items()}

    async def __call__(self, ctx: Any, call_next: Callable) -> Any:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = dict(ctx.params or {})
        tool, args = str(params.get("name", "?")), dict(params.get("arguments") or {})
        caller = {"client": _client_of(ctx, self.ops.client), "door": "mcp", "logged": False}
        token = CALLER.set(caller)
        started = time.perf_counter()
        unknown = sorted(set(args) - self.known.get(tool, set(args)))
        if unknown:  # the SDK would drop them silently: a misspelt "sensitivty" must not pass as "low"
            names = ", ".join(name if len(name) <= 64 else name[:60] + "…" for name in unknown)
            message = (f"Error executing tool {tool}: unknown argument(s) {names}; "
                       f"{tool} takes {', '.join(sorted(self.known[tool])) or 'no arguments'}")
            self.ops.log(tool, args, started, error=message, caller=caller)
            CALLER.reset(token)
            return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)
        try:
            result = await call_next(ctx)
        except Exception as exc:
            if not caller["logged"]:
                self.ops.log(tool, args, started, error=exc, caller=caller)
            raise
        finally:
            CALLER.reset(token)
        if _is_error(result):
            text = _error_text(result)
            if not caller["logged"]:
                self.ops.log(tool, args, started, error=text, caller=caller)
        return result


def _is_error(result: Any) -> bool:
    if isinstance(result, dict):
        return bool(result.get("isError") or result.get("is_error"))
    return bool(getattr(result, "is_error", False))


def _error_text(result: Any) -> str:
    """The tool error's message, tidied (pydantic's documentation links and line breaks
    dropped) in the result the client gets as well as for the log."""
    content = result.get("content", []) if isinstance(result, dict) else getattr(result, "content", [])
    texts = []
    for c in content or []:
        text = c.get("text", "") if isinstance(c, dict) else getattr(c, "text", "")
        tidy = " ".join(line.strip() for line in text.splitlines()
                        if line.strip() and "errors.pydantic.dev" not in line)
        if tidy != text:
            if isinstance(c, dict):
                c["text"] = tidy
            else:
                c.text = tidy
        texts.append(tidy)
    return " ".join(t for t in texts if t) or "refused"


def _tool(ops: Operations, name: str) -> Callable[..., dict[str, Any]]:
    """The operation as an MCP tool: logged, with the store's refusals as tool errors."""
    method = ops.bound(name)

    @functools.wraps(method)
    def tool(**kwargs: Any) -> dict[str, Any]:
        try:
            return ops.call(name, method, kwargs)
        except (StoreError, PydanticValidationError) as exc:
            raise ToolError(str(exc)) from None

    tool.__doc__ = inspect.getdoc(method)  # the description a model reads, without the source's indentation
    return tool


def build_server(ops: Operations) -> MCPServer:
    """An MCP server whose tools are the operations over ``ops.store``: Mnemoscope's own,
    the MCP memory server's (:mod:`.memory_server`), or both, as ``ops.tool_sets`` says."""
    tools: dict[str, tuple[Callable[..., Any], ToolAnnotations]] = {}
    if "mnemoscope" in ops.tool_sets:
        for name in Operations.TOOLS:
            tools[name] = (_tool(ops, name), ToolAnnotations(
                readOnlyHint=name in READ_ONLY, destructiveHint=name in DESTRUCTIVE, idempotentHint=name in READ_ONLY,
                openWorldHint=False))
    if MEMORY_SERVER in ops.tool_sets:
        from . import memory_server

        graph_tools = memory_server.MemoryServerTools(ops)
        for name in memory_server.TOOLS:
            tools[name] = (memory_server.tool(graph_tools, name), memory_server.annotations(name))
    server = MCPServer(SERVER_NAME, title=SERVER_TITLE, version=__version__, instructions=instructions(ops.tool_sets),
                       log_level="WARNING", middleware=[CallerMiddleware(ops, {n: fn for n, (fn, _a) in tools.items()})])
    for name, (fn, hints) in tools.items():
        server.add_tool(fn, name=name, annotations=hints, structured_output=True)
    return server


def run_stdio(ops: Operations, first: bytes = b"", answered: Any = None) -> None:
    """Serve MCP over standard input and output until the client closes them, answering
    every request (see :mod:`.mcp_stdio`). ``first`` is a line already read from stdin,
    ``answered`` the id of the ``initialize`` it holds when that was answered already
    (:mod:`.handshake`)."""
    import anyio

    from .mcp_stdio import serve

    anyio.run(serve, build_server(ops), ops, first, answered)
