"""mnemoscope connect: real configuration files in a temporary home, for each client."""

from __future__ import annotations

import json
import os
import time

import pytest
from mnemoscope.cli import main
from mnemoscope.connect import ConnectError, config_path, connect, entry, program


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def test_the_known_paths_per_platform():
    h = "/home/ana"
    assert config_path("claude-desktop", home=h, platform="linux", env={}) == "/home/ana/.config/Claude/claude_desktop_config.json"
    assert config_path("claude-desktop", home="/Users/ana", platform="darwin", env={}) == \
        "/Users/ana/Library/Application Support/Claude/claude_desktop_config.json"
    assert config_path("claude-desktop", home="C:\\Users\\ana", platform="win32",
                       env={"APPDATA": "C:\\Users\\ana\\AppData\\Roaming"}) == \
        "C:\\Users\\ana\\AppData\\Roaming\\Claude\\claude_desktop_config.json"
    assert config_path("vscode", home=h, platform="linux", env={}) == "/home/ana/.config/Code/User/mcp.json"
    assert config_path("vscode", home="/Users/ana", platform="darwin", env={}) == \
        "/Users/ana/Library/Application Support/Code/User/mcp.json"
    assert config_path("vscode", home=h, platform="linux", env={}, workspace="/src/app") == "/src/app/.vscode/mcp.json"
    assert config_path("cursor", home=h, platform="linux", env={}) == "/home/ana/.cursor/mcp.json"
    assert config_path("claude-code", home="C:\\Users\\ana", platform="win32", env={}) == "C:\\Users\\ana\\.claude.json"


def test_the_entry_runs_this_installation_by_absolute_path(tmp_path):
    command = program()
    assert os.path.isabs(command[0]) and os.path.exists(command[0])
    e = entry("claude-desktop", str(tmp_path / "m.db"), ["group:team"], "low")
    assert e["command"] == command[0]
    assert e["args"][-7:] == ["mcp", "--db", str(tmp_path / "m.db"), "--scope", "group:team", "--trust", "low"]
    assert entry("vscode", "m.db")["type"] == "stdio" and "type" not in e


def test_connect_merges_keeps_a_backup_and_is_idempotent(home, tmp_path, capsys):
    path = home / ".config" / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True)
    other = {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}},
             "globalShortcut": "Ctrl+Space"}
    path.write_text(json.dumps(other, indent=2), encoding="utf-8")
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "connect", "claude-desktop", "--scope", "private:ana", "--trust", "high"]) == 0
    assert "connected Claude Desktop" in capsys.readouterr().out
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["globalShortcut"] == "Ctrl+Space" and written["mcpServers"]["memory"] == other["mcpServers"]["memory"]
    mine = written["mcpServers"]["mnemoscope"]
    assert mine["args"][-7:] == ["mcp", "--db", db, "--scope", "private:ana", "--trust", "high"]
    assert json.loads((home / ".config" / "Claude" / "claude_desktop_config.json.bak").read_text()) == other
    before = path.read_bytes()
    assert main(["--db", db, "connect", "claude-desktop", "--scope", "private:ana", "--trust", "high"]) == 0
    assert "already connected" in capsys.readouterr().out and path.read_bytes() == before
    assert main(["--db", db, "connect", "claude-desktop", "--remove"]) == 0
    assert json.loads(path.read_text(encoding="utf-8")) == other


def test_print_shows_the_entry_and_writes_nothing(home, tmp_path, capsys):
    assert main(["--db", str(tmp_path / "m.db"), "connect", "cursor", "--print"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {home}/.cursor/mcp.json\n")
    assert json.loads(out.split("\n", 1)[1])["mcpServers"]["mnemoscope"]["args"][-3:] == [
        str(tmp_path / "m.db"), "--trust", "medium"]
    assert not (home / ".cursor").exists()


def test_each_client_gets_its_own_file_and_shape(home, tmp_path):
    db = str(tmp_path / "m.db")
    for client, rel, key in (("claude-code", ".claude.json", "mcpServers"), ("cursor", ".cursor/mcp.json", "mcpServers"),
                             ("vscode", ".config/Code/User/mcp.json", "servers")):
        result = connect(client, db)
        assert result.path == str(home / rel) and result.changed
        assert json.loads((home / rel).read_text())[key]["mnemoscope"]["command"] == program()[0]


def test_a_file_with_comments_or_trailing_commas_is_refused_and_left_alone(home, tmp_path, capsys):
    path = home / ".config" / "Code" / "User" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = '{\n  // my servers\n  "servers": {\n    "git": {"type": "stdio", "command": "git-mcp",},\n  },\n}\n'
    path.write_text(text, encoding="utf-8")
    assert main(["--db", str(tmp_path / "m.db"), "connect", "vscode"]) == 1
    err = capsys.readouterr().err
    assert "has comments or trailing commas" in err and '"mnemoscope": {' in err
    assert path.read_text(encoding="utf-8") == text and not (path.parent / "mcp.json.bak").exists()


def test_a_broken_file_is_never_overwritten(home, tmp_path):
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"a": ', encoding="utf-8")
    with pytest.raises(ConnectError, match="is not valid JSON"):
        connect("cursor", str(tmp_path / "m.db"))
    assert path.read_text(encoding="utf-8") == '{"mcpServers": {"a": '
    path.write_text('{"mcpServers": []}', encoding="utf-8")
    with pytest.raises(ConnectError, match="'mcpServers' is a JSON list"):
        connect("cursor", str(tmp_path / "m.db"))


def test_the_frozen_app_is_connected_through_its_console_program(monkeypatch, tmp_path):
    import sys

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "Mnemoscope" / "Mnemoscope"))
    assert program() == [str(tmp_path / "Mnemoscope" / "mnemoscope-cli")]
    assert entry("cursor", "m.db")["args"][:1] == ["mcp"]


def _untouched(folder):
    """Every file in ``folder`` with its bytes (links by target)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        p = folder / name
        out[name] = ("link", os.readlink(p)) if p.is_symlink() else p.read_bytes()
    return out


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_configuration_that_is_a_link_is_refused_with_its_target(tmp_path):
    """A dotfiles manager keeps ~/.claude.json as a link into its repository: replacing the
    link with a file would leave the repository's copy behind and the link gone."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_text('{"mcpServers": {"git": {"command": "git-mcp"}}}', encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(dotfiles / "claude.json", home / ".claude.json")
    before = _untouched(home), _untouched(dotfiles)
    with pytest.raises(ConnectError, match=r"is a link to .*claude\.json.*--config"):
        connect("claude-code", str(tmp_path / "m.db"), path=str(home / ".claude.json"))
    assert (_untouched(home), _untouched(dotfiles)) == before


def test_a_read_only_configuration_is_refused(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {}}', encoding="utf-8")
    path.chmod(0o444)
    with pytest.raises(ConnectError, match="read-only"):
        connect("cursor", str(tmp_path / "m.db"), path=str(path))
    assert _untouched(tmp_path) == {"mcp.json": b'{"mcpServers": {}}'}


@pytest.mark.parametrize("text", [
    '{"mcpServers": {"a": {"command": "a"}}, "mcpServers": {"b": {"command": "b"}}}',  # Python keeps the last
    '{"mcpServers": {}, "zoom": 1e400}',  # read as inf, written back as Infinity: not JSON
    '{"mcpServers": {}, "zoom": NaN}',
    '{"mcpServers": {}, "name": "\\ud800"}',  # a lone surrogate: cannot be written as UTF-8
])
def test_a_file_that_would_not_come_back_the_same_is_left_alone(tmp_path, text):
    path = tmp_path / "mcp.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConnectError, match="left as it is") as err:
        connect("cursor", str(tmp_path / "m.db"), path=str(path))
    assert '"mnemoscope": {' in str(err.value)
    assert _untouched(tmp_path) == {"mcp.json": text.encode()}


def test_concurrent_connects_leave_one_whole_file(tmp_path):
    """Eight connects at once (threads: each its own temporary file) end with a file that
    parses and holds one of them, and no temporary file left behind."""
    import threading

    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"git": {"command": "git-mcp"}}}', encoding="utf-8")
    errors = []

    def run(i):
        try:
            for _ in range(20):
                connect("cursor", str(tmp_path / f"m{i}.db"), path=str(path))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data["mcpServers"]) == {"git", "mnemoscope"}
    assert sorted(os.listdir(tmp_path)) == ["mcp.json", "mcp.json.bak"]


def _repo_with_vscode(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".vscode").mkdir(parents=True)
    (repo / ".vscode" / "mcp.json").write_text('{"servers": {"other": {"command": "x"}}}', encoding="utf-8")
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir(parents=True, exist_ok=True)
    bashrc.write_text("export PATH=$PATH:~/bin\n", encoding="utf-8")
    return repo, bashrc


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_backup_that_is_a_link_is_refused_and_its_target_untouched(tmp_path, capsys):
    """A repository shipping .vscode/mcp.json.bak -> ~/.bashrc got its JSON into ~/.bashrc
    (shutil.copy2 follows the link), exit 0; the next shell ran what it held."""
    repo, bashrc = _repo_with_vscode(tmp_path)
    os.symlink(bashrc, repo / ".vscode" / "mcp.json.bak")
    before = _untouched(repo / ".vscode")
    assert main(["--db", str(tmp_path / "m.db"), "connect", "vscode", "--workspace", str(repo)]) == 1
    err = capsys.readouterr().err
    assert "mcp.json.bak is a link" in err
    assert "--config" not in err, "the advice to write into where the backup link points"
    assert bashrc.read_text(encoding="utf-8") == "export PATH=$PATH:~/bin\n" and _untouched(repo / ".vscode") == before


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_vscode_folder_that_is_a_link_is_refused(tmp_path, capsys):
    repo, _ = _repo_with_vscode(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    os.rename(repo / ".vscode", elsewhere)
    os.symlink(elsewhere, repo / ".vscode")
    before = _untouched(elsewhere)
    assert main(["--db", str(tmp_path / "m.db"), "connect", "vscode", "--workspace", str(repo)]) == 1
    assert ".vscode is a link" in capsys.readouterr().err and _untouched(elsewhere) == before


def test_a_fifo_as_config_is_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "mcp.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert main(["--db", str(tmp_path / "m.db"), "connect", "cursor", "--config", str(fifo)]) == 1
    assert "not a plain file" in capsys.readouterr().err and time.monotonic() - started < 5


def test_a_configuration_nested_too_deep_is_a_sentence(tmp_path, capsys):
    path = tmp_path / "mcp.json"
    path.write_text('{"x": ' + "[" * 5000 + "]" * 5000 + "}", encoding="utf-8")
    before = path.read_bytes()
    assert main(["--db", str(tmp_path / "m.db"), "connect", "cursor", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "nested too deep" in err and "Traceback" not in err and path.read_bytes() == before


@pytest.mark.parametrize("scope", ["has space", "private:", "a\u202eb", ""])
def test_a_scope_the_server_would_refuse_is_refused_before_writing(tmp_path, capsys, scope):
    path = tmp_path / "mcp.json"
    assert main(["--db", str(tmp_path / "m.db"), "connect", "cursor", "--config", str(path), "--scope", scope]) == 1
    assert "--scope" in capsys.readouterr().err and not path.exists()


def test_the_backup_and_the_file_keep_the_files_permissions(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"other": {"command": "x", "env": {"TOKEN": "secret"}}}}', encoding="utf-8")
    os.chmod(path, 0o600)
    connect("cursor", str(tmp_path / "m.db"), path=str(path))
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert oct((tmp_path / "mcp.json.bak").stat().st_mode & 0o777) == oct(0o600)


@pytest.mark.parametrize("name", ["new/", ".", "sub/.."])
def test_a_config_that_names_a_folder_is_refused_and_nothing_is_made(tmp_path, name, capsys):
    target = f"{tmp_path}/{name}"
    assert main(["--db", str(tmp_path / "m.db"), "connect", "cursor", "--config", target]) == 1
    assert "names a folder" in capsys.readouterr().err and not (tmp_path / "new").exists()


def test_a_client_that_used_the_memory_server_gets_its_tools(home, tmp_path, capsys):
    """An agent written for @modelcontextprotocol/server-memory keeps its tools: the entry
    runs 'mnemoscope mcp --tools memory-server' (docs/agents.md)."""
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "connect", "cursor", "--tools", "memory-server", "--print", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entry"]["args"][-2:] == ["--tools", "memory-server"]
    both = entry("cursor", db, [], "medium", tools=("memory-server", "mnemoscope"))
    assert both["args"][-4:] == ["--tools", "memory-server", "--tools", "mnemoscope"]
    assert "--tools" not in entry("cursor", db)["args"]  # the default set is not written out


def test_two_clients_connected_at_once_to_one_file_keep_both_entries(tmp_path):
    """VS Code's "servers" and Claude Desktop's "mcpServers" written at once into one file:
    each read the file, added its entry and renamed its copy over it, and the one renamed
    last took the other's entry with it (190 of 200 tries, both said "connected")."""
    import threading

    for trial in range(30):
        path = tmp_path / f"both{trial}.json"
        path.write_text('{"theirs": 1}', encoding="utf-8")
        errors = []

        def run(client, path=path, errors=errors):
            try:
                connect(client, str(tmp_path / "m.db"), path=str(path))
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(c,)) for c in ("vscode", "claude-desktop")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["theirs"] == 1 and "mnemoscope" in data["servers"] and "mnemoscope" in data["mcpServers"], trial


def test_a_change_the_client_makes_while_connect_writes_is_kept(tmp_path, monkeypatch):
    """Claude Code rewrites ~/.claude.json as it runs: what it wrote between connect's read
    and connect's rename was lost. Connect sees the file changed and merges again."""
    import mnemoscope.connect as connecting

    path = tmp_path / ".claude.json"
    path.write_text('{"numStartups": 1}', encoding="utf-8")
    read = connecting._read
    calls = []

    def read_then_the_client_writes(folder, name, snippet):
        got = read(folder, name, snippet)
        if not calls:
            path.write_text('{"numStartups": 2, "projects": {"/src": {}}}', encoding="utf-8")
        calls.append(name)
        return got

    monkeypatch.setattr(connecting, "_read", read_then_the_client_writes)
    assert connect("claude-code", str(tmp_path / "m.db"), path=str(path)).changed
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["numStartups"] == 2 and data["projects"] == {"/src": {}} and "mnemoscope" in data["mcpServers"]
