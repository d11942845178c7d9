"""The ``gui`` marker is on every test that builds Qt widgets, so ``-m "not gui"`` is a run
without a display; an unknown marker is an error (``--strict-markers``)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def collected(*args):
    result = subprocess.run([sys.executable, "-m", "pytest", "-c", os.path.join(ROOT, "pyproject.toml"),
                             "--collect-only", "-q", *args], cwd=ROOT, capture_output=True, text=True, timeout=180)
    return result.returncode, result.stdout + result.stderr


def test_not_gui_leaves_out_every_window_test_and_keeps_the_rest():
    _, out = collected("-m", "not gui", "tests/ui/test_ui_map.py", "tests/ui/test_owner_ui.py", "tests/store/test_store.py",
                       "tests/ui/test_readonly_ui.py")
    ran = {line.split("::")[0] for line in out.splitlines() if "::" in line}
    assert ran == {"tests/store/test_store.py"}, out[-2000:]


def test_an_unknown_marker_is_an_error(tmp_path):
    (tmp_path / "test_typo.py").write_text("import pytest\n\n\n@pytest.mark.giu\ndef test_x():\n    pass\n")
    code, out = collected(str(tmp_path))
    assert code != 0 and "'giu' not found in `markers`" in out
