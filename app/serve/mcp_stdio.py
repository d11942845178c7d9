"""MCP over stdio, where every request gets an answer.

The SDK's stdio transport hands a line it cannot read as a JSON-RPC message (a lone
surrogate, ``"method": 5``, ``params`` as a list, nesting too deep) to the session as an
exception, and the session answers nothing: a client waiting for that request's id hangs.
Here each line is read first; one the SDK would refuse (or that could crash a later
step, see :mod:`mnemoscope.store.json_input`) is answered with a JSON-RPC error (the
request's id when it can be read, else null, as JSON-RPC 2.0 says), logged when it was a
tool call, and not passed on. A notification (no id) gets no answer, as JSON-RPC says.
"""

from __future__ import annotations

import json
import re
import sys
import time
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mnemoscope.store import json_input

from .operations import Operations

# The tokens that matter for finding a request's id without parsing it: a string (a key
# when a colon follows) and runs of brackets that open or close nesting.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?|[{\[]+|[}\]]+')
_ID_VALUE = re.compile(r'\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*[,}]')


def refusal(line: str) -> dict[str, Any] | None:
    """The JSON-RPC error answering ``line``, or None when the SDK may take it (or when it
    is a notification or a response, which get no answer)."""
    if not line.strip():
        return None
    try:
        message = json_input.loads(line)
    except json_input.BadJson as exc:
        if str(exc).startswith("not valid JSON"):
            return _error(None, types.PARSE_ERROR, f"Parse error: {exc}")
        return _error(_echoable(_unparsed_id(line)), types.INVALID_REQUEST, f"Invalid request: the message {exc}")
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except Exception:  # noqa: BLE001 (pydantic's ValidationError, or anything the SDK would choke on)
        pass
    else:
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None if isinstance(message, dict) else _error(None, types.INVALID_REQUEST,
                                                              "Invalid request: a message must be a JSON object")
    return _error(_echoable(message.get("id")), types.INVALID_REQUEST, f"Invalid request: {_what_is_wrong(message)}")


def _unparsed_id(line: str) -> Any:
    """The id of a request that is JSON but could not be read whole (too deep, a number too
    long, a lone surrogate), so that its answer still names it: the top-level object's "id",
    wherever it stands (the TypeScript SDK writes it last, after the params); None when
    there is none."""
    depth = 0
    for token in _TOKEN.finditer(line):
        text = token.group()
        if text[0] in "{[":
            depth += len(text)
        elif text[0] in "}]":
            depth -= len(text)
        elif depth == 1 and token.group(1) and text.startswith('"id"'):
            found = _ID_VALUE.match(line, token.end())
            return json.loads(found.group(1)) if found else None
    return None


def _what_is_wrong(message: dict[str, Any]) -> str:
    if message.get("jsonrpc") != "2.0":
        return f'"jsonrpc" must be "2.0", got {message.get("jsonrpc")!r}'
    if not isinstance(message["method"], str):
        return f"method must be a string naming the method, got {type(message['method']).__name__}"
    if "params" in message and not isinstance(message["params"], dict):
        return f"params must be an object of named parameters, got {type(message['params']).__name__}"
    ident = message["id"]
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return f"id must be a string or an integer, got {type(ident).__name__}"
    return "not a JSON-RPC 2.0 request"


def _echoable(ident: Any) -> str | int | None:
    if isinstance(ident, str):
        try:
            ident.encode("utf-8")
        except UnicodeEncodeError:
            return None  # not text: it cannot be sent back
        return ident
    return ident if isinstance(ident, int) and not isinstance(ident, bool) else None


def _error(ident: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def called_tool(line: str) -> str | None:
    """The tool a refused line asked for, when it is readable at all (for the log)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    params = message.get("params") if isinstance(message, dict) else None
    if message.get("method") == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
        name = params["name"]
        return name if name in Operations.TOOLS else None
    return None


class _Out:
    """The SDK's stdout, shared with the answers written here: one line at a time."""

    def __init__(self, stream: anyio.AsyncFile[str], answered: Any = None) -> None:
        self.stream = stream
        self.lock = anyio.Lock()
        self.answered = answered  # the id of the initialize answered before the SDK loaded

    async def write(self, text: str) -> None:
        if self.answered is not None and self._answers_initialize(text):
            self.answered = None  # the client has this answer already (see .handshake)
            return
        async with self.lock:
            await self.stream.write(text)

    def _answers_initialize(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except ValueError:
            return False
        return isinstance(message, dict) and message.get("id") == self.answered and "result" in message

    async def flush(self) -> None:
        async with self.lock:
            await self.stream.flush()

    async def line(self, message: dict[str, Any]) -> None:
        async with self.lock:
            await self.stream.write(json.dumps(message, ensure_ascii=True) + "\n")
            await self.stream.flush()


class _In:
    """The SDK's stdin: the lines it can read pass; the others are answered here."""

    def __init__(self, stream: anyio.AsyncFile[str], out: _Out, ops: Operations, first: str = "") -> None:
        self.stream = stream
        self.out = out
        self.ops = ops
        self.first = first  # a line read before the SDK was loaded

    def __aiter__(self):
        return self._lines()

    async def _read(self):
        if self.first:
            yield self.first
        async for line in self.stream:
            yield line

    async def _lines(self):
        async for line in self._read():
            started = time.perf_counter()
            answer = refusal(line)
            if answer is None:
                yield line
                continue
            tool = called_tool(line)
            if tool is not None:
                self.ops.log(tool, {}, started, error=answer["error"]["message"], caller={"door": "mcp"})
            await self.out.line(answer)


async def serve(server: MCPServer, ops: Operations, first: bytes = b"", answered: Any = None) -> None:
    """Run ``server`` over this process's stdin and stdout until the client closes them.
    ``first`` is a line read from stdin already; ``answered`` the id of the initialize
    request in it when that was answered already (:mod:`.handshake`)."""
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    out = _Out(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8")), answered)
    lowlevel = server._lowlevel_server  # noqa: SLF001 (MCPServer.run_stdio_async does just this)
    async with stdio_server(stdin=_In(stdin, out, ops, first.decode("utf-8", "replace")), stdout=out) as (read_stream, write_stream):  # type: ignore[arg-type]
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
