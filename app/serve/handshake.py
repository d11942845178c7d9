"""MCP's ``initialize`` answered before the SDK is imported.

Importing the MCP SDK (hundreds of pydantic models) takes most of a second or more, and a
client waits for the handshake before anything else: ``mnemoscope mcp`` reads the first
line itself and, when it is a well-formed ``initialize`` request, answers it at once with
what the SDK's server would answer (the same capabilities, server info and instructions,
and the same choice of protocol version: tests/doors/test_mcp_handshake.py compares the two).
The line is then handed to the SDK as usual, and the SDK's own answer to that id is
dropped (:mod:`.mcp_stdio`). Anything else on the first line goes to the SDK untouched.

No MCP import here: this module must stay light.
"""

from __future__ import annotations

import json
from typing import Any

from .. import __version__

# The SDK's HANDSHAKE_PROTOCOL_VERSIONS (mcp_types.version), oldest first: a client asking
# for one of them gets it, any other gets the newest.
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
SERVER_NAME = "mnemoscope"
SERVER_TITLE = "Mnemoscope memory"
INSTRUCTIONS = (
    "Mnemoscope is the user's long-term memory. Call brief once at the start of a conversation; call recall "
    "before answering anything that may depend on what you were told before; call remember when you learn "
    "something durable (one self-contained sentence: a preference, a fact about a person, a decision, a "
    "lesson). Use update to correct a memory and forget when the user asks you to forget something. Memories "
    "fade unless they are used; the user watches and edits them in the Mnemoscope inspector."
)
# Without Mnemoscope's own tools (``--tools memory-server``), the MCP memory server's alone.
MEMORY_SERVER = "memory-server"
TOOL_SETS = ("mnemoscope", MEMORY_SERVER)
GRAPH_INSTRUCTIONS = (
    "This knowledge graph (entities, their observations, relations between them) is kept in Mnemoscope, the "
    "user's long-term memory: observations fade unless they are used, and the user watches and edits them in "
    "the Mnemoscope inspector."
)


def instructions(tool_sets: tuple[str, ...] = ("mnemoscope",)) -> str:
    """What the server tells a client, for the tools it serves."""
    return INSTRUCTIONS if "mnemoscope" in tool_sets else GRAPH_INSTRUCTIONS


CAPABILITIES = {"prompts": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}


def early_answer(line: bytes, tool_sets: tuple[str, ...] = ("mnemoscope",)) -> tuple[Any, bytes] | None:
    """(the request's id, the answer's line) when ``line`` is an ``initialize`` request
    this module can answer as the SDK would (serving ``tool_sets``); else None."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    ident, params = message.get("id"), message.get("params")
    if isinstance(ident, bool) or not isinstance(ident, (int, str)) or not isinstance(params, dict):
        return None
    info, version = params.get("clientInfo"), params.get("protocolVersion")
    if not (isinstance(version, str) and isinstance(params.get("capabilities"), dict) and isinstance(info, dict)
            and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
        return None  # the SDK says what is wrong with it
    result = {"capabilities": CAPABILITIES, "instructions": instructions(tool_sets),
              "protocolVersion": version if version in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1],
              "serverInfo": {"name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__}}
    answer = {"jsonrpc": "2.0", "id": ident, "result": result}
    return ident, (json.dumps(answer, ensure_ascii=True, separators=(",", ":")) + "\n").encode()
