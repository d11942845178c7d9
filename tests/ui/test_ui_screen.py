"""Under a real window manager (openbox on Xvfb), not only offscreen: on a first start the
whole window, title bar and status bar, is on a 1366×768 and a 1920×1080 screen, and so it
is when a layout saved on the big screen is opened on the small one."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("PySide6")

pytestmark = pytest.mark.skipif(not (shutil.which("Xvfb") and shutil.which("openbox")),
                                reason="needs Xvfb and openbox")

CHILD = r"""
import json, sys
from PySide6.QtCore import QSettings, QTimer
QSettings.setDefaultFormat(QSettings.Format.IniFormat)
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[2])
from mnemoscope.store import MemoryStore
from mnemoscope.ui.launch import create_app
from mnemoscope.ui.main_window import MainWindow
app, dark = create_app()
w = MainWindow(MemoryStore(sys.argv[1]), dark=dark)
w.show()
def report():
    room, frame, bar = w.screen().availableGeometry(), w.frameGeometry(), w.statusBar()
    bottom = bar.mapToGlobal(bar.rect().bottomLeft()).y()
    print(json.dumps({"room": room.getRect(), "frame": frame.getRect(), "bar_bottom": bottom,
                      "framed": frame.height() > w.geometry().height(), "preview": w.preview_dock.width(),
                      "preview_needs": w.preview.minimumSizeHint().width()}))
    w.close()  # as a person quits: the layout is saved for the next start
    app.quit()
QTimer.singleShot(2500, report)
app.exec()
"""


def _free_display() -> int:
    for n in range(60, 99):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return n
    pytest.skip("no free X display number")


def _shown_on_screen(size, db, settings) -> dict:
    """Start the window on an Xvfb screen of ``size`` under openbox; what it reported."""
    n = _free_display()
    env = dict(os.environ, DISPLAY=f":{n}", QT_QPA_PLATFORM="xcb")
    xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", f"{size[0]}x{size[1]}x24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wm = None
    try:
        for _ in range(50):
            if os.path.exists(f"/tmp/.X11-unix/X{n}"):
                break
            time.sleep(0.1)
        wm = subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        out = subprocess.run([sys.executable, "-c", CHILD, db, str(settings)], env=env,
                             capture_output=True, text=True, timeout=60)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        for proc in (wm, xvfb):
            if proc is not None:
                proc.terminate()
                proc.wait(5)


def _assert_on_the_screen(shown: dict) -> None:
    x, y, w, h = shown["room"]
    fx, fy, fw, fh = shown["frame"]
    assert shown["framed"]  # the window manager put a title bar on it
    assert fx >= x and fy >= y and fx + fw <= x + w and fy + fh <= y + h
    assert shown["bar_bottom"] < y + h


@pytest.mark.gui
@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_a_fresh_start_fits_the_screen_under_a_window_manager(demo_db, tmp_path, size):
    shown = _shown_on_screen(size, demo_db, tmp_path / "settings")
    _assert_on_the_screen(shown)
    # and uses it: 1600x960 left a 1920x1080 screen's edges black
    assert shown["frame"][2] >= 0.9 * size[0] and shown["frame"][3] >= 0.85 * size[1], shown["frame"]


@pytest.mark.gui
def test_a_layout_saved_on_a_big_screen_fits_a_small_one(demo_db, tmp_path):
    big = _shown_on_screen((1920, 1080), demo_db, tmp_path / "settings")
    assert big["frame"][3] > 768  # saved taller than the small screen
    small = _shown_on_screen((1366, 768), demo_db, tmp_path / "settings")
    _assert_on_the_screen(small)  # the status bar fell below the screen
    assert small["preview"] >= small["preview_needs"]  # the prompt preview's form is not squeezed
