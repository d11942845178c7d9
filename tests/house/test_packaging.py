"""The smoke test's client (packaging/agent_smoke.py) against the installed program: it
must pass a working server and fail one that writes to standard error, so that the
frozen bundle's check in CI means something."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DRIVER = ROOT / "packaging" / "agent_smoke.py"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("agent") / "memory.db"
    subprocess.run([sys.executable, "-m", "mnemoscope", "--db", str(db), "demo"], check=True, capture_output=True,
                   cwd=ROOT, timeout=120)
    return db


def drive(door: str, *program: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DRIVER), door, "--", *program, door, "--db", str(db)],
                          capture_output=True, text=True, cwd=ROOT, timeout=180)


def test_mcp_over_stdio_lists_the_ten_tools_and_recalls(demo_db):
    done = drive("mcp", sys.executable, "-m", "mnemoscope", db=demo_db)
    assert done.returncode == 0, done.stderr
    assert "10 tools listed" in done.stdout and "recall answered" in done.stdout


def test_serve_answers_health_on_a_free_port(demo_db):
    done = drive("serve", sys.executable, "-m", "mnemoscope", db=demo_db)
    assert done.returncode == 0, done.stderr
    assert "GET /health answered" in done.stdout


def test_a_server_that_writes_to_stderr_fails(demo_db):
    # -X importtime: Python itself writes a line to stderr for every import
    done = drive("mcp", sys.executable, "-X", "importtime", "-m", "mnemoscope", db=demo_db)
    assert done.returncode == 1
    assert "unexpected stderr from the MCP server" in done.stderr
