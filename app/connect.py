"""Connect an MCP client to this installation: write (or take out) the ``mcpServers``
entry that starts ``mnemoscope mcp`` in the client's configuration file (Codex's is TOML:
its other tables and comments are kept, by tomlkit).

One function serves the command line (``mnemoscope connect``) and the window (Help ›
Connect an agent…). The file is merged, never replaced: other servers and other keys
stay as they are; the previous file is kept as ``<file>.bak``; writing the same entry
again changes nothing. A file that is not strict JSON is never rewritten: one with
comments or trailing commas (which VS Code and Cursor accept) is refused with the entry
to paste by hand, so nothing the person wrote is lost.

Nothing is written through a link: not the file, not its ``.bak``, not the folder holding
them (a repository can ship ``.vscode`` or ``.vscode/mcp.json.bak`` as a link to
``~/.bashrc``). What is not a plain file (a FIFO given as ``--config``) is refused before
it is opened, so nothing waits on it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemoscope.store.files.safe_folder import Changed, LinkRefused, SafeFolder
from mnemoscope.store.model.errors import StoreError, ValidationError
from mnemoscope.store.model.memory import SENSITIVITIES, validate_scope

SERVER_NAME = "mnemoscope"
TRIES = 5  # reads of a file the client keeps writing before connect gives up
# client -> (label, key holding the servers, whether entries carry "type": "stdio")
CLIENTS: dict[str, tuple[str, str, bool]] = {
    "claude-desktop": ("Claude Desktop", "mcpServers", False),
    "claude-code": ("Claude Code", "mcpServers", True),
    "cursor": ("Cursor", "mcpServers", False),
    "vscode": ("VS Code", "servers", True),
    "codex": ("Codex", "mcp_servers", False),
    "gemini": ("Gemini CLI", "mcpServers", False),
    "windsurf": ("Windsurf", "mcpServers", False),
    "cline": ("Cline", "mcpServers", False),
}
TOML_CLIENTS = frozenset({"codex"})  # ~/.codex/config.toml: [mcp_servers.NAME]
# Clients with a configuration of a project's own, in its folder (--workspace).
WORKSPACE_FILES = {"vscode": (".vscode", "mcp.json"), "claude-code": (".mcp.json",),
                   "cursor": (".cursor", "mcp.json"), "gemini": (".gemini", "settings.json")}
# Cline keeps its servers in its VS Code extension's storage.
CLINE_FILE = ("globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")


class ConnectError(StoreError):
    """The configuration file cannot be changed safely; nothing was written."""


@dataclass
class ConnectResult:
    client: str
    path: str
    entry: dict[str, Any]
    changed: bool
    removed: bool = False
    backup: str | None = None

    def message(self) -> str:
        label = CLIENTS[self.client][0]
        if self.removed:
            return (f"removed '{SERVER_NAME}' from {self.path}; restart {label}" if self.changed
                    else f"{self.path} has no '{SERVER_NAME}' server; nothing to remove")
        if not self.changed:
            return f"{label} is already connected ({self.path}); nothing changed"
        return f"connected {label}: wrote '{SERVER_NAME}' to {self.path}; restart {label} to use it"


def config_path(client: str, *, home: str | None = None, platform: str | None = None,
                env: dict[str, str] | None = None, workspace: str | None = None) -> str:
    """The configuration file ``client`` reads on ``platform`` (sys.platform's names):
    its user-wide file, or with ``workspace`` that project's own (VS Code, Claude Code,
    Cursor, Gemini CLI). Each client's own override of its folder is honoured:
    CLAUDE_CONFIG_DIR (Claude Code), CODEX_HOME (Codex), XDG_CONFIG_HOME and APPDATA."""
    if client not in CLIENTS:
        raise ConnectError(f"unknown client {client!r}; choose one of {', '.join(CLIENTS)}")
    platform = platform or sys.platform
    env = os.environ if env is None else env
    home = home or os.path.expanduser("~")
    win = platform.startswith("win")
    appdata = env.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
    join = _join(win)
    if workspace:
        if client not in WORKSPACE_FILES:
            raise ConnectError(f"--workspace is for {', '.join(WORKSPACE_FILES)}; {CLIENTS[client][0]} keeps one "
                               "configuration for the user")
        return join(workspace, *WORKSPACE_FILES[client])
    if client == "claude-code":
        return join(env["CLAUDE_CONFIG_DIR"], ".claude.json") if env.get("CLAUDE_CONFIG_DIR") else join(
            home, ".claude.json")
    if client == "codex":
        return join(env.get("CODEX_HOME") or join(home, ".codex"), "config.toml")
    if client == "gemini":
        return join(home, ".gemini", "settings.json")
    if client == "windsurf":
        return join(home, ".codeium", "windsurf", "mcp_config.json")
    if client == "cursor":
        return join(home, ".cursor", "mcp.json")
    folder = {"claude-desktop": "Claude", "vscode": join("Code", "User"), "cline": join("Code", "User")}[client]
    name = {"claude-desktop": "claude_desktop_config.json", "cline": join(*CLINE_FILE)}.get(client, "mcp.json")
    if win:
        return join(appdata, folder, name)
    if platform == "darwin":
        return join(home, "Library", "Application Support", folder, name)
    config = env.get("XDG_CONFIG_HOME") or join(home, ".config")
    return join(config, folder, name)


def _join(win: bool):
    import ntpath
    import posixpath

    return ntpath.join if win else posixpath.join


def program() -> list[str]:
    """The command that starts this installation's command line, by absolute path: the
    frozen app's console program, else the ``mnemoscope`` script beside this Python,
    else this Python running the package."""
    exe = ".exe" if sys.platform.startswith("win") else ""
    if getattr(sys, "frozen", False):
        here = os.path.dirname(os.path.abspath(sys.executable))
        return [os.path.join(here, "mnemoscope-cli" + exe)]
    folder = os.path.dirname(os.path.abspath(sys.executable))
    for candidate in (os.path.join(folder, "mnemoscope" + exe), os.path.join(folder, "Scripts", "mnemoscope" + exe)):
        if os.path.isfile(candidate):
            return [candidate]
    found = shutil.which("mnemoscope")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "mnemoscope"]


def entry(client: str, db: str, scopes: list[str] | tuple[str, ...] = (), trust: str = "medium",
          command: list[str] | None = None, tools: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The server entry for ``client``: this program, ``mcp``, the database, scopes and
    trust, and the tool sets it gives when not only Mnemoscope's own (``--tools``)."""
    command = command or program()
    args = [*command[1:], "mcp", "--db", os.path.abspath(db)]
    for scope in scopes:
        args += ["--scope", scope]
    args += ["--trust", trust]
    if tuple(tools) not in ((), ("mnemoscope",)):
        for name in dict.fromkeys(tools):
            args += ["--tools", name]
    out: dict[str, Any] = {"type": "stdio"} if CLIENTS[client][2] else {}
    out.update({"command": command[0], "args": args})
    return out


def config_text(client: str, new: dict[str, Any]) -> str:
    """The entry as it stands in ``client``'s file (to show, or to paste by hand)."""
    if client in TOML_CLIENTS:
        import tomlkit

        doc = tomlkit.document()
        doc.add(CLIENTS[client][1], tomlkit.table(is_super_table=True))
        doc[CLIENTS[client][1]][SERVER_NAME] = new  # type: ignore[index]
        return tomlkit.dumps(doc).strip()
    return json.dumps({CLIENTS[client][1]: {SERVER_NAME: new}}, indent=2)


_COMMENT_OR_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|(//[^\n]*|/\*.*?\*/|,\s*[}\]])', re.S)


class _KeyTwice(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) < len(pairs):
        twice = next(k for i, (k, _) in enumerate(pairs) if any(k == other for other, _ in pairs[:i]))
        raise _KeyTwice(f"it has the key {twice!r} twice in one object, and a rewrite would keep only the last")
    return out


def _folder(path: str) -> SafeFolder:
    """The folder holding ``path``, opened without following a link (made when missing)."""
    try:
        return SafeFolder(Path(os.path.dirname(path) or "."))
    except LinkRefused as exc:
        target = os.path.realpath(exc.path)
        raise ConnectError(f"{exc.path} is a link to {target}; nothing was written. If that is the client's folder, "
                           f"run again with --config {os.path.join(target, os.path.basename(path))}") from None
    except OSError as exc:
        raise ConnectError(f"cannot make {os.path.dirname(path)}: {exc.strerror or exc}; nothing was written") from None


def _plain_or_missing(folder: SafeFolder, name: str, *, backup: bool = False) -> os.stat_result | None:
    """The file ``name`` in ``folder`` when it is a plain file; None when there is none;
    refused when it is a link (replacing one with a file would leave the file it points
    to behind; writing through it could change a file that is not the client's) or
    anything else (a FIFO would hold the reader until someone writes to it)."""
    path = folder.path / name
    kind = folder.kind(name)
    if kind == "link" and backup:  # where the old file is kept: never a file to write the entry into
        raise ConnectError(f"{path} is a link to {os.path.realpath(path)}; nothing was written. Mnemoscope keeps "
                           "the old configuration there: remove the link (what it points to stays as it is)")
    if kind == "link":
        target = os.path.realpath(path)
        raise ConnectError(f"{path} is a link to {target}; nothing was written. If that is the client's file, "
                           f"run again with --config {target}")
    if kind == "other":
        raise ConnectError(f"{path} is not a plain file; nothing was written")
    return folder.lstat(name) if kind == "file" else None


def _read(folder: SafeFolder, name: str, snippet: str) -> tuple[dict[str, Any], str | None]:
    """(the parsed file, its text) — ({}, None) when there is none yet."""
    path = folder.path / name
    if _plain_or_missing(folder, name) is None:
        return {}, None
    try:
        text = (folder.read(name) or b"").decode("utf-8")
    except (OSError, UnicodeDecodeError, StoreError) as exc:
        raise ConnectError(f"cannot read {path}: {exc}; nothing was written") from None
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise ConnectError(f"{path} was left as it is: it is nested too deep to read back. Add this under the "
                           f"servers in it by hand:\n{snippet}") from None
    except ValueError as exc:
        tolerated = any(m.group(1) for m in _COMMENT_OR_TRAILING_COMMA.finditer(text))
        why = ("it has comments or trailing commas, which the client accepts but Mnemoscope would lose by "
               "rewriting it" if tolerated else str(exc) if isinstance(exc, _KeyTwice)
               else f"it is not valid JSON ({exc})")
        raise ConnectError(f"{path} was left as it is: {why}. Add this under the servers in it by hand:\n"
                           f"{snippet}") from None
    if not isinstance(data, dict):
        raise ConnectError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was written")
    return data, text


def _read_toml(folder: SafeFolder, name: str, snippet: str) -> tuple[Any, str | None]:
    """(the parsed TOML document, its text), comments and layout kept (tomlkit)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    path = folder.path / name
    if _plain_or_missing(folder, name) is None:
        return tomlkit.document(), None
    try:
        text = (folder.read(name) or b"").decode("utf-8")
    except (OSError, UnicodeDecodeError, StoreError) as exc:
        raise ConnectError(f"cannot read {path}: {exc}; nothing was written") from None
    try:
        doc = tomlkit.parse(text)
    except (TOMLKitError, RecursionError, ValueError) as exc:
        raise ConnectError(f"{path} was left as it is: it is not valid TOML ({exc}). Add this to it by hand:\n"
                           f"{snippet}") from None
    return doc, text


def _check_entry(scopes: list[str] | tuple[str, ...], trust: str) -> list[str]:
    """The scopes as the server will read them; a scope or trust it would refuse is refused
    here, before a client is given an entry that cannot start."""
    try:
        checked = [validate_scope(scope, "--scope") for scope in scopes]
    except ValidationError as exc:
        raise ConnectError(f"{exc}; nothing was written") from None
    if trust not in SENSITIVITIES:
        raise ConnectError(f"--trust must be one of {', '.join(SENSITIVITIES)}, got {trust!r}; nothing was written")
    return checked


def _write(folder: SafeFolder, name: str, out: bytes, text: str | None, snippet: str) -> str | None:
    """Write ``out`` as ``name`` in ``folder``, keeping what was there (``text``) as
    ``name.bak``, each written whole beside and renamed over (never through a link), with
    the file's own permissions (a client's file can hold other servers' tokens). The
    backup's path, or None when there was no file."""
    path = folder.path / name
    st = _plain_or_missing(folder, name) if text is not None else None
    if st is not None and (not os.access(path, os.W_OK) or not st.st_mode & 0o222):
        raise ConnectError(f"{path} is read-only; nothing was written. Make it writable, or add this under the "
                           f"servers in it by hand:\n{snippet}")
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o600
    backup = None
    try:
        if text is not None:
            _plain_or_missing(folder, name + ".bak", backup=True)
            folder.write(name + ".bak", text.encode("utf-8"), mode=mode)
            backup = str(path) + ".bak"
        # only over what was read: a client that wrote the file since keeps what it wrote
        folder.write(name, out, mode=mode, expected=None if text is None else text.encode("utf-8"))
    except LinkRefused as exc:  # swapped for a link after the check
        raise ConnectError(f"{exc}; nothing was written") from None
    except OSError as exc:
        raise ConnectError(f"cannot write {path}: {exc.strerror or exc}") from None
    return backup


def connect(client: str, db: str, *, scopes: list[str] | tuple[str, ...] = (), trust: str = "medium",
            remove: bool = False, dry_run: bool = False, path: str | None = None,
            command: list[str] | None = None, tools: list[str] | tuple[str, ...] = (), **where: Any) -> ConnectResult:
    """Write (or with ``remove`` take out) the entry in ``client``'s configuration file;
    with ``dry_run`` only say what would be written. ``where``: see :func:`config_path`."""
    path = path or config_path(client, **where)
    if not os.path.basename(path) or os.path.basename(path) in (".", ".."):
        raise ConnectError(f"{path} names a folder; give the configuration file itself; nothing was written")
    key = CLIENTS[client][1]
    new = entry(client, db, _check_entry(scopes, trust), trust, command, tools)
    snippet = config_text(client, new)
    if dry_run and not os.path.lexists(os.path.dirname(path) or "."):
        return ConnectResult(client, path, new, not remove, removed=remove)  # nothing there, nothing made
    with _folder(path) as folder, folder.locked():  # another connect waits for this one
        for _ in range(TRIES):
            try:
                return _connect(client, path, folder, key, new, snippet, remove, dry_run)
            except Changed:  # the client wrote the file meanwhile: read it again, with what it wrote
                continue
    raise ConnectError(f"{path} changed each of {TRIES} times Mnemoscope read it (the client is writing it); "
                       "nothing was written. Try again, or add this under the servers in it by hand:\n"
                       f"{snippet}")


def _connect(client: str, path: str, folder: SafeFolder, key: str, new: dict[str, Any], snippet: str,
             remove: bool, dry_run: bool) -> ConnectResult:
    name = os.path.basename(path)
    toml = client in TOML_CLIENTS
    data, text = (_read_toml if toml else _read)(folder, name, snippet)
    servers = data.get(key, {})
    if not isinstance(servers, dict):
        kind = f"a TOML {type(servers).__name__}, not a table" if toml else f"a JSON {type(servers).__name__}, not an object"
        raise ConnectError(f"{path}: '{key}' is {kind} of servers; nothing was written")
    mine = servers.get(SERVER_NAME)
    if remove and SERVER_NAME not in servers:
        return ConnectResult(client, path, new, False, removed=True)
    if not remove and (mine.unwrap() if hasattr(mine, "unwrap") else mine) == new:
        return ConnectResult(client, path, new, False)
    if dry_run:
        return ConnectResult(client, path, new, True, removed=remove)
    if toml:
        out = _toml_out(data, key, new, remove, path, snippet)
        return ConnectResult(client, path, new, True, removed=remove, backup=_write(folder, name, out, text, snippet))
    servers = {k: v for k, v in servers.items() if k != SERVER_NAME} if remove else {**servers, SERVER_NAME: new}
    updated = {**data, key: servers}
    try:  # before any file is touched: what cannot be written back as it was read stops here
        out = (json.dumps(updated, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    except (ValueError, RecursionError) as exc:  # NaN or 1e400 (read as inf), a lone surrogate
        raise ConnectError(f"{path} was left as it is: it holds a value Mnemoscope cannot write back as JSON "
                           f"({exc}). Add this under the servers in it by hand:\n{snippet}") from None
    backup = _write(folder, name, out, text, snippet)
    return ConnectResult(client, path, new, True, removed=remove, backup=backup)


def _toml_out(doc: Any, key: str, new: dict[str, Any], remove: bool, path: str, snippet: str) -> bytes:
    """The document with the entry written (or taken out) in its ``[key]`` table (or its
    inline table: then the entry is one too), the rest (other tables, comments, layout) as
    it was; refused when tomlkit would not write it back so."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    before = doc.unwrap()
    try:
        if key not in doc:
            doc.add(key, tomlkit.table(is_super_table=True))
        if remove:
            del doc[key][SERVER_NAME]
        else:
            inline = isinstance(doc[key], tomlkit.items.InlineTable)
            table = tomlkit.inline_table() if inline else tomlkit.table()
            table.update(new)
            if not inline:
                table.add(tomlkit.nl())
            doc[key][SERVER_NAME] = table
        out = tomlkit.dumps(doc)
        back = tomlkit.parse(out).unwrap()
    except (TOMLKitError, ValueError, KeyError, TypeError) as exc:
        back, out = exc, ""
    expected = {**before, key: {**{k: v for k, v in before.get(key, {}).items() if k != SERVER_NAME},
                                **({} if remove else {SERVER_NAME: new})}}
    if back != expected:  # read back, it must say what was there and the entry
        raise ConnectError(f"{path} was left as it is: Mnemoscope could not write it back as it was with the entry "
                           f"(its TOML library would change it). Add this to it by hand:\n{snippet}")
    return out.encode("utf-8")
