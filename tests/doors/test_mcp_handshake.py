"""``mnemoscope mcp`` answers ``initialize`` before it loads the MCP SDK (app/serve/handshake.py):
the early answer must be the one the SDK's server gives, and the session must go on as usual."""

from __future__ import annotations

import pytest
from mnemoscope.serve import handshake
from mnemoscope.store import MemoryStore
from test_attack_mcp import RawStdio

VERSIONS = ["2024-11-05", "2025-11-25", "2026-07-28", "1999-01-01"]


def _init(version, ident=1):
    return {"jsonrpc": "2.0", "id": ident, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_the_versions_answered_early_are_the_sdks():
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    assert handshake.HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
def test_the_early_answer_is_the_sdks_and_the_session_goes_on(db_path, version):
    with MemoryStore(db_path) as s:
        s.remember("Mara likes green tea.")
    early = RawStdio(db_path)
    sdk = RawStdio(db_path)
    try:
        early.send(_init(version))
        # A ping first: the first line is not an initialize, so the SDK answers the handshake itself.
        sdk.send({"jsonrpc": "2.0", "id": 0, "method": "ping"})
        assert sdk.answer()["id"] == 0
        sdk.send(_init(version))
        theirs = sdk.answer()
        ours = early.answer()
        assert ours == theirs and "result" in ours
        early.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        early.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "recall", "arguments": {"query": "what does Mara drink"}}})
        answer = early.answer()  # the SDK's own answer to id 1 is not sent a second time
        assert answer["id"] == 2 and "green tea" in answer["result"]["content"][0]["text"]
    finally:
        early.close()
        sdk.close()


@pytest.mark.parametrize("line", [b"not json", b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}',
                                  b'{"jsonrpc": "2.0", "id": true, "method": "initialize", "params": {}}',
                                  b'{"jsonrpc": "2.0", "method": "tools/list", "id": 3}'])
def test_a_first_line_that_is_not_a_well_formed_initialize_is_left_to_the_sdk(line):
    assert handshake.early_answer(line) is None
