"""Where the official MCP memory server is installed (npm), and a real MCP client session
with it over stdio: the fixture script and the round-trip test drive it the same way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import Implementation

PACKAGE = "@modelcontextprotocol/server-memory"
VERSION = "2026.8.31"
INSTALL = f"npm install -g {PACKAGE}@{VERSION}"


def server_script() -> str | None:
    """The server's dist/index.js: $MCP_MEMORY_SERVER, else npm's global install."""
    env = os.environ.get("MCP_MEMORY_SERVER")
    if env:
        return env if os.path.exists(env) else None
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    try:
        root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    script = os.path.join(root, *PACKAGE.split("/"), "dist", "index.js")
    return script if os.path.exists(script) else None


def session(memory_file: str, body):
    """Run ``body(client)`` against the server keeping its graph in ``memory_file``."""
    script = server_script()
    if script is None:
        raise RuntimeError(f"the MCP memory server is not installed; {INSTALL}")
    params = StdioServerParameters(command=shutil.which("node"), args=[script],
                                   env={**os.environ, "MEMORY_FILE_PATH": os.path.abspath(memory_file)})

    async def main():
        async with Client(params, client_info=Implementation(name="mnemoscope-fixture", version="1.0")) as client:
            return await body(client)

    return anyio.run(main)


def result(call) -> object:
    """A tool call's answer: its JSON, or its text when the tool answers in words."""
    assert not call.is_error, call.content[0].text
    try:
        return json.loads(call.content[0].text)
    except ValueError:
        return call.content[0].text
