"""Every command of the ``mnemoscope`` group is in the documentation (README.md and
docs/), every option is explained there or by its ``--help`` (which docs/cli.md points to),
the documentation's command-line examples run, and the README stays a front door."""

import io
import json
import os
import re
import shlex
from pathlib import Path

import click
import click.testing
import pytest
from mnemoscope.cli import cli, main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as _fh:
    FRONT = _fh.read()
# README.md and every page of docs/: where a command or an option may be explained.
README = "\n\n".join([FRONT] + [p.read_text(encoding="utf-8") for p in sorted(Path(ROOT, "docs").glob("*.md"))])
PARAGRAPHS = re.split(r"\n\s*\n", README)


def commands():
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def written_out(command):
    """The README shows a command as it is typed: ``mnemoscope [--db X] NAME``."""
    return re.compile(rf"mnemoscope(?:\s+--db\s+\S+)?\s+{re.escape(command)}(?![\w-])")


def names(command):
    """A paragraph is about a command that it writes out or names in backticks."""
    return re.compile(rf"{written_out(command).pattern}|`{re.escape(command)}[` ]")


def options(command):
    return [(opt, param) for param in command.params if isinstance(param, click.Option) for opt in param.opts]


def test_every_command_appears_in_the_readme():
    assert [name for name in commands() if not written_out(name).search(README)] == []


def test_the_readme_points_to_help():
    assert "mnemoscope COMMAND --help" in README


@pytest.mark.parametrize("name", list(commands()))
def test_every_option_is_in_the_readme_or_explained_by_its_help(name):
    command = commands()[name]
    assert command.help, f"{name} has no help text"
    said = [p for p in PARAGRAPHS if names(name).search(p)]
    shown = click.testing.CliRunner().invoke(cli, [name, "--help"], terminal_width=100).output
    unexplained = []
    for opt, param in options(command):
        if opt in ("-h", "--help"):
            continue
        in_readme = any(re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", p) for p in said)
        helped = bool(param.help) and opt in shown and " ".join(param.help.split()[:3]) in " ".join(shown.split())
        if not (in_readme or helped):
            unexplained.append(opt)
    assert unexplained == [], f"mnemoscope {name}: say what {', '.join(unexplained)} do in README.md or in its help"


def test_the_groups_own_options_are_in_the_readme():
    missing = [opt for opt, _ in options(cli) if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", README)]
    assert missing == []


def shell_lines(section):
    """The commands of the first ``sh`` block under a README heading, continuations joined."""
    block = README.split(f"## {section}\n", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def run(line, monkeypatch, capsys):
    """Run a README line (``mnemoscope ...``, or ``echo JSON | mnemoscope ...``) in this process."""
    stdin = ""
    if " | " in line:
        echo, line = line.split(" | ", 1)
        [word, stdin] = shlex.split(echo)
        assert word == "echo"
    argv = shlex.split(line, comments=True)
    assert argv[0] == "mnemoscope", line
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(argv[1:])
    out, err = capsys.readouterr()
    assert code == 0, f"{line}\n{out}{err}"
    return out


def test_the_readmes_store_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for line in shell_lines("The decay store"):  # mara.db: the demo memories
        run(line, monkeypatch, capsys)
    said = [run(line, monkeypatch, capsys) for line in shell_lines("Memories from the command line")]
    assert said[0].startswith("ready: notes.db (0 memories)")
    assert said[1].startswith("remembered ") and said[2].startswith("captured ")
    assert "Mara is allergic to peanuts." in said[3]
    assert said[5].strip() == "2 imported, 1 entity made"  # the export carries Mara's entity
    assert said[6].startswith("updated mem-006") and said[8].startswith("restored mem-011")
    habits = [json.loads(line) for line in said[9].splitlines()]
    assert habits and {(m["kind"], m["scope"]) for m in habits} == {("fact", "global")}


def test_the_readme_is_a_front_door():
    """At most ~150 lines; its first two commands install and start the inspector, then
    install and run the tests (.ci/run runs the second); every page it links to exists."""
    assert len(FRONT.splitlines()) <= 150
    blocks = re.findall(r"```sh\n(.*?)```", FRONT, re.S)
    assert "pip install . && .venv/bin/mnemoscope" in blocks[0]
    assert 'pip install ".[test]" && .venv/bin/python -m pytest' in blocks[2]  # blocks[1]: Linux's libraries
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.(?:md|png))\)", FRONT):
        assert os.path.isfile(os.path.join(ROOT, link)), link


def test_the_readmes_first_session_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    lines = shell_lines("A first session")
    assert lines[-1].split("#")[0].split() == ["mnemoscope", "--db", "notes.db"]  # the window: not run here
    said = [run(line, monkeypatch, capsys) for line in lines[:-1]]
    assert said[0].startswith("remembered ") and "Mara is allergic to peanuts." in said[1]
    assert "Mara is allergic to peanuts." in said[3]
