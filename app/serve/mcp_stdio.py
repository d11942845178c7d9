"""MCP over stdio, where every request gets an answer.

The SDK's stdio transport hands a line it cannot read as a JSON-RPC message (a lone
surrogate, ``"method": 5``, ``params`` as a list, nesting too deep) to the session as an
exception, and the session answers nothing: a client waiting for that request's id hangs.
Here each line is read first; one the SDK would refuse (or that could crash a later
step, see :mod:`mnemoscope.store.model.json_input`) is answered with a JSON-RPC error (the
request's id when it can be read, else null, as JSON-RPC 2.0 says), logged when it was a
tool call, and not passed on. A notification (no id) gets no answer, as JSON-RPC says.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mnemoscope.store.model import json_input

from .handshake import HANDSHAKE_PROTOCOL_VERSIONS
from .operations import Operations

# The MCP memory server's tools (memory_server.TOOLS; that module loads the SDK's types).
GRAPH_TOOLS = ("create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations",
               "delete_relations", "read_graph", "search_nodes", "open_nodes")

# The tokens that matter for finding a request's id without parsing it: a string (a key
# when a colon follows) and runs of brackets that open or close nesting.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?|[{\[]+|[}\]]+')
_ID_VALUE = re.compile(r'\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*[,}]')


def refusal(line: str, *, batches: bool = False) -> dict[str, Any] | None:
    """The JSON-RPC error answering ``line``, or None when the SDK may take it (or when it
    is a notification or a response, which get no answer). ``batches``: whether an array
    is read as a batch (then the caller splits it; see :func:`refusal_of`)."""
    if not line.strip():
        return None
    try:
        message = json_input.loads(line)
    except json_input.BadJson as exc:
        if str(exc).startswith("not valid JSON"):
            return _error(None, types.PARSE_ERROR, f"Parse error: {exc}")
        return _error(_echoable(_unparsed_id(line)), types.INVALID_REQUEST, f"Invalid request: the message {exc}")
    if batches and isinstance(message, list) and message:
        if len(message) > MAX_BATCH:
            return _error(None, types.INVALID_REQUEST, f"Invalid request: a batch of {len(message)} messages; "
                          f"send at most {MAX_BATCH} in one")
        return None
    return refusal_of(message)


def refusal_of(message: Any) -> dict[str, Any] | None:
    """The JSON-RPC error answering one message already parsed, or None (see :func:`refusal`).

    JSON that is not an object (``5``, ``"str"``, ``null``, ``[]``, a batch where batches are
    not read) is an invalid request with a null id, as JSON-RPC 2.0 says. An id that MCP does
    not allow (an object, an array, a fraction, true, null) cannot be echoed either: its
    request is answered with a null id too, not passed on (the SDK would take it for a
    notification and answer nothing). A tools/call whose name or arguments have the wrong
    type is refused as invalid params (-32602): the SDK answered it with code 0 and a
    Python message."""
    if not isinstance(message, dict):
        if isinstance(message, list):
            what = ("an empty array" if not message else
                    "a batch (an array of messages), which MCP does not take from protocol 2025-06-18 on: "
                    "send each message on its own")
            return _error(None, types.INVALID_REQUEST, f"Invalid request: a message must be a JSON object, not {what}")
        return _error(None, types.INVALID_REQUEST,
                      f"Invalid request: a message must be a JSON object, got {_kind(message)}")
    if "method" not in message:
        if "id" in message and "result" not in message and "error" not in message:
            return _error(_echoable(message["id"]), types.INVALID_REQUEST,
                          "Invalid request: a request needs a method (a string naming it)")
        return None  # a response to the server's own request: the SDK reads it
    if "id" in message:
        ident = message["id"]
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            return _error(None, types.INVALID_REQUEST,
                          f"Invalid request: id must be a string or an integer, got {_kind(ident)}")
        params = message.get("params")
        if message["method"] == "tools/call" and isinstance(params, dict):
            if not isinstance(params.get("name"), str):
                return _error(_echoable(ident), types.INVALID_PARAMS,
                              f"Invalid params: name must be a string naming the tool, got {_kind(params.get('name'))}")
            if params.get("arguments") is not None and not isinstance(params["arguments"], dict):
                return _error(_echoable(ident), types.INVALID_PARAMS,
                              "Invalid params: arguments must be an object of named arguments "
                              f"(for example {{\"query\": \"tea\"}}), got {_kind(params['arguments'])}")
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except Exception:  # noqa: BLE001 (pydantic's ValidationError, or anything the SDK would choke on)
        pass
    else:
        return None
    if "id" not in message:
        return None  # a notification gets no answer, even when it is wrong
    return _error(_echoable(message.get("id")), types.INVALID_REQUEST, f"Invalid request: {_what_is_wrong(message)}")


def _kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    names = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a fraction"}
    return next((name for kind, name in names.items() if isinstance(value, kind)), type(value).__name__)


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
    if not isinstance(message, dict):
        return None
    params = message.get("params")
    if message.get("method") == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
        name = params["name"]
        return name if name in Operations.TOOLS or name in GRAPH_TOOLS else None
    return None


# The one protocol version whose clients may send a batch (an array of messages):
# 2025-03-26 said a server MUST read them; 2025-06-18 took batches out of MCP again.
BATCH_PROTOCOL = "2025-03-26"


# A batch's messages are answered together; more than this many in one is refused whole
# (each is a task of the SDK's at once).
MAX_BATCH = 1000


class _Batch:
    """One batch being answered: the answers so far and the ids still to come from the SDK
    (id -> how many times: a batch may repeat one)."""

    def __init__(self, answers: list[dict[str, Any]], awaited: list[Any]) -> None:
        self.answers = answers
        self.awaited = Counter(awaited)
        self.left = len(awaited)


class _Out:
    """The SDK's stdout, shared with the answers written here: one line at a time. The
    SDK's answers to a batch's requests are held back and written together, as one array."""

    def __init__(self, stream: anyio.AsyncFile[str], answered: Any = None) -> None:
        self.stream = stream
        self.lock = anyio.Lock()
        self.answered = answered  # the id of the initialize answered before the SDK loaded
        self.batches: list[_Batch] = []

    async def write(self, text: str) -> None:
        if self.answered is not None and self._answers_initialize(text):
            self.answered = None  # the client has this answer already (see .handshake)
            return
        if self.batches and await self._held(text):
            return
        async with self.lock:
            await self.stream.write(text)

    async def batch(self, answers: list[dict[str, Any]], awaited: list[Any]) -> None:
        """Answer a batch with ``answers`` and the SDK's answers to the ids ``awaited``
        (JSON-RPC 2.0: one array, in any order; nothing when nothing in it wants an answer)."""
        if awaited:
            self.batches.append(_Batch(answers, awaited))
        elif answers:
            await self.line(answers)

    async def _held(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message or ("result" not in message
                                                                     and "error" not in message):
            return False
        ident = message.get("id")
        if not isinstance(ident, (str, int)):
            return False
        for batch in self.batches:
            if batch.awaited[ident] > 0:
                batch.awaited[ident] -= 1
                batch.left -= 1
                batch.answers.append(message)
                if not batch.left:
                    self.batches.remove(batch)
                    await self.line(batch.answers)
                return True
        return False

    def _answers_initialize(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except ValueError:
            return False
        return isinstance(message, dict) and message.get("id") == self.answered and "result" in message

    async def flush(self) -> None:
        async with self.lock:
            await self.stream.flush()

    async def line(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        async with self.lock:
            await self.stream.write(json.dumps(message, ensure_ascii=True) + "\n")
            await self.stream.flush()


class _In:
    """The SDK's stdin: the lines it can read pass; the others are answered here. A batch,
    when the protocol in use has them, is split into its messages (see :class:`_Out`)."""

    def __init__(self, stream: anyio.AsyncFile[str], out: _Out, ops: Operations, first: str = "") -> None:
        self.stream = stream
        self.out = out
        self.ops = ops
        self.first = first  # a line read before the SDK was loaded
        self.protocol = ""  # the version the client's initialize will get

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
            answer = refusal(line, batches=self.protocol == BATCH_PROTOCOL)
            if answer is None:
                if line.lstrip().startswith("["):
                    for message in await self._split(json_input.loads(line), started):
                        yield message
                    continue
                self._note_protocol(line)
                yield line
                continue
            self._log(line, answer, started)
            await self.out.line(answer)

    async def _split(self, messages: list[Any], started: float) -> list[str]:
        """The lines of a batch's messages the SDK may take; the others answered in the batch."""
        answers, awaited, passed = [], [], []
        for message in messages:
            answer = refusal_of(message)
            line = json.dumps(message, ensure_ascii=True)
            if answer is not None:
                answers.append(answer)
                self._log(line, answer, started)
                continue
            if isinstance(message, dict) and "method" in message and "id" in message:
                awaited.append(message["id"])
            passed.append(line)
        await self.out.batch(answers, awaited)
        return passed

    def _log(self, line: str, answer: dict[str, Any], started: float) -> None:
        tool = called_tool(line)
        if tool is not None:
            self.ops.log(tool, {}, started, error=answer["error"]["message"], caller={"door": "mcp"})

    def _note_protocol(self, line: str) -> None:
        if '"initialize"' not in line:
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return
        if isinstance(message, dict) and message.get("method") == "initialize" and isinstance(
                message.get("params"), dict):
            asked = message["params"].get("protocolVersion")
            self.protocol = asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]


async def serve(server: MCPServer, ops: Operations, first: bytes = b"", answered: Any = None) -> None:
    """Run ``server`` over this process's stdin and stdout until the client closes them.
    ``first`` is a line read from stdin already; ``answered`` the id of the initialize
    request in it when that was answered already (:mod:`.handshake`)."""
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    out = _Out(anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8")), answered)
    lowlevel = server._lowlevel_server  # noqa: SLF001 (MCPServer.run_stdio_async does just this)
    async with stdio_server(stdin=_In(stdin, out, ops, first.decode("utf-8", "replace")), stdout=out) as (read_stream, write_stream):  # type: ignore[arg-type]
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
