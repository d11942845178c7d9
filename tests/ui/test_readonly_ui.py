"""The inspector on a database it may not write: a plain read-only mode, and nothing written."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytest.importorskip("PySide6")

from mnemoscope.store import MemoryStore  # noqa: E402
from mnemoscope.store.agents import activity  # noqa: E402
from mnemoscope.store.files.demo import load_demo  # noqa: E402
from support.helpers import changes, fingerprint, unwritten  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRET = "Mara's locker code is 4417; write to mara.okafor@example.com"


@pytest.fixture(autouse=True)
def _settings(qt_settings):
    """Every test here keeps its Qt settings in its own temporary folder."""


def fill(path):
    """The demo memories, one a privacy finding, one in conflict, one forgotten by an agent."""
    with MemoryStore(path) as s:
        load_demo(s)
        s.remember(SECRET, memory_id="leaky", sensitivity="low")
        s.remember("Mara moved to Porto in March.", memory_id="moved")
        activity.forget(s, "mem-006", client="agent")
        activity.record(s, client="agent", door="mcp", tool="forget", args={"memory_id": "mem-006"},
                        memory_ids=["mem-006"])


def write_controls(w):
    """Every control in the window that would write to the open database."""
    privacy, conflicts = w.owner.privacy, w.owner.conflicts
    return {
        "tick": w.tick_action, "save": w.save_action, "delete": w.delete_action, "import": w.import_action,
        "advance": w.advance_button, "advance a day (Ctrl+D)": w.advance_actions[0], "restore snapshot": w.owner.restore_action,
        "editor new": w.editor.new_button, "editor save": w.editor.save_button,
        "editor delete": w.editor.delete_button,
        "activity restore": w.activity.restore_button, "forgotten restore": w.activity.restore_forgotten_button,
        "raise sensitivity": privacy.raise_button, "redact": privacy.redact_button,
        "supersede": conflicts.supersede_button, "merge": conflicts.merge_button, "keep both": conflicts.keep_button,
    }


READS = ("export", "time travel", "backup", "mirror", "privacy check", "conflict scan")


def read_controls(w):
    """Controls that only read the database (or write elsewhere): they keep working."""
    return dict(zip(READS, (w.export_action, w.preview_slider, w.owner.backup_action, w.owner.mirror_action,
                            w.owner.privacy.check_button, w.owner.conflicts.scan_button), strict=True))


def pick_everything(w):
    """Select what would enable the record-bound write buttons: a memory, a call, a
    forgotten memory, a conflict, a privacy finding (left in front)."""
    for view in (w.owner.conflicts, w.owner.privacy):
        w.owner.show_view(view)
        view.refresh()
        view.view.selectRow(0)
    w.activity.view.selectRow(0)
    w.activity.forgotten_list.setCurrentRow(0)
    w.session.select("mem-001")


@pytest.fixture
def ro_window(qtbot, tmp_path):
    from mnemoscope.ui.main_window import MainWindow

    path = str(tmp_path / "memories.db")
    fill(path)
    w = MainWindow()
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    assert w.open_path(path, read_only=True)
    # after opening: SQLite puts an empty -wal and its -shm beside a WAL file any reader
    # opens in a folder it may write (in one it may not, there are none: see below)
    before = fingerprint(path)
    yield w, path, before
    w.close()
    w.session.close()
    w.deleteLater()


def test_read_only_mode_disables_every_write_and_says_so(ro_window, tmp_path):
    w, path, _ = ro_window
    assert w.session.store.read_only and not w.session.writable
    assert "read-only" in w.windowTitle()
    assert w.read_only_badge.isVisible() and w.read_only_badge.text() == "read-only"
    pick_everything(w)
    # the selections took: a writable store would enable these now
    assert w.editor.memory_id == "mem-001" and w.activity.current_entry() is not None
    assert w.owner.privacy.selected() is not None and w.owner.conflicts.selected() is not None
    assert w.activity.forgotten_list.currentItem() is not None
    enabled = [name for name, control in write_controls(w).items() if control.isEnabled()]
    assert enabled == []
    assert all(control.isEnabled() for control in read_controls(w).values())
    # the editor shows the memory but cannot be edited; it says why
    assert w.editor.text.toPlainText() == w.session.store.get("mem-001").text
    assert w.editor.text.isReadOnly() and w.editor.who.isReadOnly() and not w.editor.kind.isEnabled()
    assert "read-only" in w.editor.status.text()
    w.grab().save(str(tmp_path / "read_only.png"))


def test_write_paths_refuse_quietly_and_the_file_is_untouched(ro_window, qtbot):
    w, path, before = ro_window
    w.session.select("mem-001")
    assert not w.editor.save()
    w.editor.delete()
    w.advance(30)
    w.import_jsonl('{"id": "x1", "text": "sneaked in"}\n')
    assert not w.activity.restore(w.activity.forgotten[0])
    w.owner.privacy.refresh()
    w.owner.privacy.view.selectRow(0)
    w.owner.privacy.redact_button.click()  # disabled: nothing happens
    assert w.session.undo_stack.count() == 0
    store = w.session.store
    assert store.exists("mem-001") and not store.exists("x1") and not store.exists("mem-006")
    assert SECRET in store.get("leaky").text
    # reading keeps working: time travel, the prompt preview
    w.preview_slider.setValue(200)
    assert w.session.preview_days == 200
    w.preview_slider.setValue(0)
    w.preview.user_message.setPlainText("What does Mara drink?")
    w.preview.recompile()
    assert w.preview.result is not None
    w.session.close()
    assert changes(before, fingerprint(path)) == []  # nothing reached the file
    assert not os.path.exists(path + "-wal") or os.path.getsize(path + "-wal") == 0


def test_opening_a_writable_file_after_a_read_only_one_enables_writes_again(ro_window, tmp_path, qtbot):
    w, path, _ = ro_window
    other = str(tmp_path / "other.db")
    fill(other)
    assert w.open_path(other)
    assert "read-only" not in w.windowTitle() and not w.read_only_badge.isVisible()
    pick_everything(w)
    assert [name for name, control in write_controls(w).items() if not control.isEnabled()] == []
    assert not w.editor.text.isReadOnly() and w.editor.kind.isEnabled()


# -- a file the user really may not write ----------------------------------------------------

SCRIPT = """
import json, sys
from mnemoscope.ui.launch import build_window, create_app
sys.path[:0] = [{here!r}, {tests!r}]
from test_readonly_ui import pick_everything, read_controls, write_controls

app, dark = create_app()
w = build_window({path!r}, dark)
w.resize(1400, 860)
w.show()
app.processEvents()
pick_everything(w)
app.processEvents()
w.grab().save({png!r})
print(json.dumps({{
    "title": w.windowTitle(), "badge": w.read_only_badge.isVisible(),
    "read_only": w.session.store.read_only, "memories": len(w.session.memories()),
    "errors": getattr(w, "last_error", ""),
    "enabled_writes": [n for n, c in write_controls(w).items() if c.isEnabled()],
    "enabled_reads": [n for n, c in read_controls(w).items() if c.isEnabled()],
}}))
w.session.close()
"""


@pytest.mark.gui  # the window is built in the child
def test_the_real_entry_point_on_an_unwritable_folder(tmp_path):
    """As a user who may not write the file or its folder (root ignores permissions, so
    the window runs as 'nobody' there), the inspector opens it read-only, shows it, and
    writes nothing: no -wal or -shm beside it, no traceback."""
    folder = tempfile.mkdtemp(prefix="mnemo-ro-ui-")
    out = tempfile.mkdtemp(prefix="mnemo-ro-ui-out-")
    os.chmod(out, 0o777)
    path = os.path.join(folder, "memories.db")
    fill(path)
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    try:
        with unwritten(path):
            png = os.path.join(out, "read_only_window.png")
            code = textwrap.dedent(SCRIPT.format(root=ROOT, tests=os.path.join(ROOT, "tests"),
                                                 here=os.path.dirname(os.path.abspath(__file__)), path=path, png=png))
            cmd = [sys.executable, "-c", code]
            env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=out, MNEMOSCOPE_HOME=os.path.join(out, "home"),
                       XDG_CONFIG_HOME=os.path.join(out, "config"), MNEMOSCOPE_THEME="light")
            if os.geteuid() == 0:
                if not shutil.which("setpriv"):
                    pytest.skip("running as root without setpriv: permissions cannot be tested")
                cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
            result = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=120, env=env)
            assert result.returncode == 0, result.stderr
            assert "Traceback" not in result.stderr
            shown = json.loads(result.stdout.strip().splitlines()[-1])
            assert shown["read_only"] and shown["badge"] and "read-only" in shown["title"]
            assert shown["memories"] > 10 and shown["errors"] == ""
            assert shown["enabled_writes"] == []
            assert shown["enabled_reads"] == list(READS)
            assert os.path.getsize(png) > 10_000
            shutil.copy(png, tmp_path / "read_only_window.png")
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)
        shutil.rmtree(out)
