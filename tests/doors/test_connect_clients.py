"""mnemoscope connect for Codex (TOML), Gemini CLI, Windsurf, Cline and Claude Code's
CLAUDE_CONFIG_DIR and project scope; and each checked against the real client where it
is installed (npm: @anthropic-ai/claude-code, @google/gemini-cli, @openai/codex list their
servers without logging in). The client tests skip, saying so, when the client is not
on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from mnemoscope.cli import main
from mnemoscope.connect import ConnectError, config_path, connect

H = "/home/ana"


def test_each_new_client_has_its_file_and_honours_its_own_override():
    assert config_path("claude-code", home=H, platform="linux", env={"CLAUDE_CONFIG_DIR": "/cfg/claude"}) == \
        "/cfg/claude/.claude.json"
    assert config_path("claude-code", home=H, platform="linux", env={}, workspace="/src/app") == "/src/app/.mcp.json"
    assert config_path("codex", home=H, platform="linux", env={}) == "/home/ana/.codex/config.toml"
    assert config_path("codex", home=H, platform="linux", env={"CODEX_HOME": "/cfg/codex"}) == "/cfg/codex/config.toml"
    assert config_path("codex", home="C:\\Users\\ana", platform="win32", env={}) == "C:\\Users\\ana\\.codex\\config.toml"
    assert config_path("gemini", home=H, platform="linux", env={}) == "/home/ana/.gemini/settings.json"
    assert config_path("gemini", home=H, platform="linux", env={}, workspace="/src/app") == \
        "/src/app/.gemini/settings.json"
    assert config_path("windsurf", home=H, platform="darwin", env={}) == "/home/ana/.codeium/windsurf/mcp_config.json"
    assert config_path("cline", home=H, platform="linux", env={}) == \
        "/home/ana/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
    assert config_path("cline", home="/Users/ana", platform="darwin", env={}) == (
        "/Users/ana/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
        "cline_mcp_settings.json")
    assert config_path("cursor", home=H, platform="linux", env={}, workspace="/src/app") == "/src/app/.cursor/mcp.json"
    with pytest.raises(ConnectError, match="--workspace is for"):
        config_path("windsurf", home=H, platform="linux", env={}, workspace="/src/app")


CODEX = """# my Codex settings
model = "o3"  # the one I like

[mcp_servers.other]
command = "npx"
args = ["-y", "other-server"]  # keep this

[profiles.fast]
model = "gpt-5"
"""


def test_codex_toml_keeps_the_users_tables_and_comments_and_comes_back_whole(tmp_path, capsys):
    path = tmp_path / "config.toml"
    path.write_text(CODEX, encoding="utf-8")
    db = str(tmp_path / "m.db")
    result = connect("codex", db, scopes=["group:team"], trust="low", path=str(path))
    assert result.changed and result.backup == str(path) + ".bak"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(CODEX.split("[profiles")[0].rstrip()) and "# keep this" in text and "[profiles.fast]" in text
    import tomllib

    parsed = tomllib.loads(text)
    assert parsed["model"] == "o3" and parsed["profiles"] == {"fast": {"model": "gpt-5"}}
    mine = parsed["mcp_servers"]["mnemoscope"]
    assert mine["args"][-7:] == ["mcp", "--db", db, "--scope", "group:team", "--trust", "low"]
    assert not connect("codex", db, scopes=["group:team"], trust="low", path=str(path)).changed
    assert connect("codex", db, remove=True, path=str(path)).changed
    assert tomllib.loads(path.read_text(encoding="utf-8")) == tomllib.loads(CODEX)
    assert main(["--db", db, "connect", "codex", "--print", "--config", str(path)]) == 0
    assert "[mcp_servers.mnemoscope]" in capsys.readouterr().out


def test_a_broken_codex_file_is_left_as_it_is_with_the_entry_to_paste(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('model = "o3"\n[mcp_servers\n', encoding="utf-8")
    with pytest.raises(ConnectError, match=r"(?s)not valid TOML.*\[mcp_servers\.mnemoscope\]") as err:
        connect("codex", str(tmp_path / "m.db"), path=str(path))
    assert "nothing" in str(err.value) or "left as it is" in str(err.value)
    assert path.read_text(encoding="utf-8") == 'model = "o3"\n[mcp_servers\n'
    path.write_text('mcp_servers = "no"\n', encoding="utf-8")
    with pytest.raises(ConnectError, match="not a table of servers"):
        connect("codex", str(tmp_path / "m.db"), path=str(path))


@pytest.mark.parametrize("client", ["gemini", "windsurf", "cline"])
def test_the_json_clients_get_an_mcp_servers_entry_beside_what_is_there(tmp_path, monkeypatch, client):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    path = config_path(client)
    os.makedirs(os.path.dirname(path))
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"theme": "dark", "mcpServers": {"other": {"command": "x"}}}, fh)
    assert main(["--db", str(tmp_path / "m.db"), "connect", client]) == 0
    with open(path, encoding="utf-8") as fh:
        written = json.load(fh)
    assert written["theme"] == "dark" and written["mcpServers"]["other"] == {"command": "x"}
    assert written["mcpServers"]["mnemoscope"]["args"][-3:] == [str(tmp_path / "m.db"), "--trust", "medium"]


# -- the real clients ------------------------------------------------------------------------
def _client(name):
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (npm i -g {CLIS[name]}); the entry's shape is tested above")
    return found


CLIS = {"claude": "@anthropic-ai/claude-code", "gemini": "@google/gemini-cli", "codex": "@openai/codex"}


@pytest.fixture
def world(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "init"]) == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "GEMINI", "XDG_CONFIG"))}
    return home, db, {**env, "HOME": str(home), "NO_COLOR": "1"}


def _run(cli, args, env, cwd):
    done = subprocess.run([cli, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_claude_code_lists_and_reaches_the_server_in_claude_config_dir_and_the_project(world, tmp_path, monkeypatch):
    cli = _client("claude")
    home, db, env = world
    env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "claude-config")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", env["CLAUDE_CONFIG_DIR"])
    assert main(["--db", db, "connect", "claude-code"]) == 0
    assert os.path.isfile(tmp_path / "claude-config" / ".claude.json") and not (home / ".claude.json").exists()
    listed = _run(cli, ["mcp", "list"], env, str(home))
    assert "mnemoscope:" in listed and db in listed and "Connected" in listed, listed  # it started the server
    repo = tmp_path / "repo"
    repo.mkdir()
    assert main(["--db", db, "connect", "claude-code", "--workspace", str(repo)]) == 0
    env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "another")  # only the project's .mcp.json names it now
    got = _run(cli, ["mcp", "get", "mnemoscope"], env, str(repo))
    assert "-s project" in got and db in got, got


def test_gemini_cli_lists_the_server(world):
    cli = _client("gemini")
    home, db, env = world
    assert main(["--db", db, "connect", "gemini", "--config", str(home / ".gemini" / "settings.json")]) == 0
    listed = _run(cli, ["mcp", "list"], env, str(home))
    assert "mnemoscope:" in listed and db in listed and "(stdio)" in listed, listed


def test_codex_lists_the_server_and_keeps_the_users_file(world):
    cli = _client("codex")
    home, db, env = world
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(CODEX, encoding="utf-8")
    assert main(["--db", db, "connect", "codex", "--config", str(home / ".codex" / "config.toml")]) == 0
    listed = _run(cli, ["mcp", "list"], env, str(home))
    assert "mnemoscope" in listed and db in listed and "other" in listed and "enabled" in listed, listed


def test_codex_servers_written_as_an_inline_table_take_the_entry(tmp_path):
    """`mcp_servers = { git = { command = "git-mcp" } }` is TOML Codex reads; connect failed
    with tomlkit's "Inline tables cannot contain a table", naming no file."""
    import tomllib

    path = tmp_path / "config.toml"
    path.write_text('model = "o3"\nmcp_servers = { git = { command = "git-mcp" } }\n', encoding="utf-8")
    db = str(tmp_path / "m.db")
    assert connect("codex", db, path=str(path)).changed
    parsed = tomllib.loads(path.read_text(encoding="utf-8"))
    assert parsed["model"] == "o3" and parsed["mcp_servers"]["git"] == {"command": "git-mcp"}
    assert parsed["mcp_servers"]["mnemoscope"]["args"][-2:] == ["--trust", "medium"]
    assert not connect("codex", db, path=str(path)).changed
    assert connect("codex", db, remove=True, path=str(path)).changed
    assert tomllib.loads(path.read_text(encoding="utf-8"))["mcp_servers"] == {"git": {"command": "git-mcp"}}


def test_a_codex_file_tomlkit_cannot_write_back_is_left_with_its_path_and_the_entry(tmp_path):
    path = tmp_path / "config.toml"
    text = "mcp_servers.git.command = 'git-mcp'\nmodel = 'o3'\n"  # dotted keys: tomlkit writes them back wrong
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConnectError) as refused:
        connect("codex", str(tmp_path / "m.db"), path=str(path))
    assert str(path) in str(refused.value) and "[mcp_servers.mnemoscope]" in str(refused.value)
    assert path.read_text(encoding="utf-8") == text
