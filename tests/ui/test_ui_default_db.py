"""One default database for the window and the doors, and File › Open Recent as a real list."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from support.helpers import closing_window  # noqa: E402

pytestmark = pytest.mark.usefixtures("qt_settings")


def _recent(window) -> list[str]:
    return [a.text() for a in window.recent_menu.actions()]


def _start(qtbot, db=None):
    from mnemoscope.ui.launch import build_window

    window = build_window(db, dark=False)
    qtbot.addWidget(window)
    return window


START = """
import sys
from PySide6.QtCore import QSettings
QSettings.setDefaultFormat(QSettings.Format.IniFormat)
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[1])
from mnemoscope.ui.launch import build_window, create_app
app, dark = create_app()
window = build_window(sys.argv[3] if len(sys.argv) > 3 else None, dark)
print(window.session.store.path)
print("\\n".join(a.text() for a in window.recent_menu.actions()))
window.close()
"""


def test_open_recent_stays_a_list_of_paths(tmp_path):
    """Start, quit, start on another file, quit, start (each a process of its own, as a
    person does): Recent lists both files. A one-item list read back from the settings
    file is a string, and it was taken apart letter by letter: "/", "t", "m", "p"…"""
    from mnemoscope.store.files.demo import default_db_path

    env = dict(os.environ, MNEMOSCOPE_EMBEDDER="hash")

    def start(*db: str) -> list[str]:
        run = subprocess.run([sys.executable, "-c", START, str(tmp_path / "settings"), "-", *db],
                             capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        return run.stdout.splitlines()

    demo = os.path.abspath(default_db_path())
    assert start() == [demo, demo]
    other = str(tmp_path / "other.db")
    assert start(other) == [other, other, demo]
    assert start() == [other, other, demo]


def test_a_recent_list_saved_as_one_string_still_reads(qtbot, tmp_path):
    from mnemoscope.ui.preferences import settings

    one = str(tmp_path / "one.db")
    MemoryStore(one).close()
    settings().setValue("recent", one)  # what an older version or a hand-edited file may hold
    window = _start(qtbot, str(tmp_path / "two.db"))
    assert _recent(window) == [str(tmp_path / "two.db"), one]
    window.close()


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mnemoscope", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_the_window_and_the_doors_use_the_same_default_database(qtbot, tmp_path):
    """After the window opens another file, every door started without --db uses it, and
    both say so."""
    other = str(tmp_path / "other.db")
    with MemoryStore(other) as s:
        s.remember("Mara keeps bees on the balcony.", kind="fact")
    window = _start(qtbot, other)
    assert window.session.store.path == other
    assert "agents' default" in window.status_default.text()
    assert "mnemoscope mcp" in window.status_default.toolTip()
    env = dict(os.environ, MNEMOSCOPE_EMBEDDER="hash")
    stats = _cli("stats", "--json", env=env)
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert data["path"] == other and data["default_database"]["why"].startswith("the one the inspector last opened")
    text = _cli("stats", env=env).stdout
    assert other in text and "the one the inspector last opened" in text
    # the MCP door, started as README says (no --db): it says which database on stderr and serves it
    mcp = subprocess.run([sys.executable, "-m", "mnemoscope", "mcp"], input="", capture_output=True, text=True,
                         env=env, timeout=120)
    assert f"memory database: {other}" in mcp.stderr and "the one the inspector last opened" in mcp.stderr
    window.close()


def test_a_default_that_is_gone_falls_back_to_the_demo_and_says_so(qtbot, tmp_path):
    from mnemoscope.default_database import default_database, remember_opened
    from mnemoscope.store.files.demo import default_db_path

    gone = str(tmp_path / "gone.db")
    MemoryStore(gone).close()
    remember_opened(gone)
    assert default_database().path == gone
    os.remove(gone)
    chosen = default_database()
    assert chosen.path == default_db_path() and chosen.demo
    assert gone in chosen.why


def test_the_record_is_not_written_through_a_link(tmp_path):
    from mnemoscope.default_database import RECORD, remember_opened
    from mnemoscope.store import StoreError
    from mnemoscope.store.files.demo import default_db_path

    folder = os.path.dirname(default_db_path())
    os.makedirs(folder, exist_ok=True)
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    os.symlink(target, os.path.join(folder, RECORD))
    with pytest.raises(StoreError, match="link"):
        remember_opened(str(tmp_path / "x.db"))
    assert target.read_text() == "keep me"


def test_an_in_memory_or_temporary_window_store_is_not_the_default(qtbot, tmp_path):
    from mnemoscope.default_database import default_database
    from mnemoscope.ui.main_window import MainWindow

    with closing_window(MainWindow(MemoryStore(":memory:"))):
        assert default_database().demo


def test_a_postgresql_memory_can_be_the_default(pg_url, qtbot):
    """The window on a PostgreSQL memory makes it the doors' default (its URL as the store
    shows it, never with a password)."""
    from mnemoscope.default_database import default_database
    from mnemoscope.store.backends.targets import redact

    window = _start(qtbot, pg_url)
    assert window.session.store.path == redact(pg_url)
    chosen = default_database()
    assert chosen.path == redact(pg_url) and not chosen.demo
    assert window.status_default.text() == "· agents' default"
    window.close()


def test_a_server_given_db_says_nothing_on_stderr(tmp_path):
    """With --db the caller named the database; MCP clients (and the frozen app's smoke
    test) take any line on standard error as trouble."""
    db = str(tmp_path / "named.db")
    MemoryStore(db).close()
    env = dict(os.environ, MNEMOSCOPE_EMBEDDER="hash", MNEMOSCOPE_HOME=str(tmp_path / "home"))
    mcp = subprocess.run([sys.executable, "-m", "mnemoscope", "mcp", "--db", db], input="", capture_output=True,
                         text=True, env=env, timeout=120)
    assert mcp.returncode == 0, mcp.stderr
    assert mcp.stderr == ""
