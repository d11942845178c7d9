"""The README's screenshots, taken from the real window so that they stay current.

Run (from the repository):
    python packaging/screenshots.py [--out docs/images] [--size 1600x1000] [--big DB] [--only NAME ...]
                                    [--screen]

Each shot is the real main window on a fresh home (its own settings and data folder),
driven as a person would: the demo memories with a message typed into the prompt preview
and a memory picked (``window.png``), the preview's Why tab for that message
(``preview.png``, the pane alone), and the map of a 100,000-memory database
(``map-100k.png``, the map pane alone, with ``--big DB``: tests/perf/lived_memory.py builds
one). Without a display it renders
offscreen; ``--screen`` (under X, e.g. Xvfb with a window manager) also saves what the
screen shows, title bar and all (``NAME-screen.png``, with ImageMagick's ``import``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MESSAGE = "What should I cook for Mara tonight?"
SHOTS = ("window", "preview", "map-100k")


def _settle(app, seconds: float = 0.6) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def _wait(app, ready, timeout: float = 600.0) -> None:
    end = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > end:
            raise SystemExit("the window did not get there in time")
        app.processEvents()
        time.sleep(0.05)


def _save(window, app, out: Path, name: str, screen: bool, part=None) -> None:
    """``window`` (or ``part`` of it) as ``out/NAME.png``."""
    _settle(app)
    path = out / f"{name}.png"
    if not (part or window).grab().save(str(path)):
        raise SystemExit(f"cannot write {path}")
    print(f"wrote {path}")
    if screen and shutil.which("import") and os.environ.get("DISPLAY"):
        subprocess.run(["import", "-window", "root", str(out / f"{name}-screen.png")], check=True)
        print(f"wrote {out / f'{name}-screen.png'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"))
    parser.add_argument("--size", default="1600x1000")
    parser.add_argument("--big", metavar="DB", help="a 100,000-memory database for map-100k.png")
    parser.add_argument("--only", nargs="*", choices=SHOTS)
    parser.add_argument("--screen", action="store_true", help="also save the whole screen (under X)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    width, height = (int(v) for v in args.size.lower().split("x"))
    wanted = set(args.only or SHOTS) - (set() if args.big else {"map-100k"})
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    home = tempfile.mkdtemp(prefix="mnemoscope-shots-")
    os.environ["MNEMOSCOPE_HOME"] = os.path.join(home, "data")
    os.environ.setdefault("MNEMOSCOPE_THEME", "light")

    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, os.path.join(home, "settings"))
    from mnemoscope.store import MemoryStore
    from mnemoscope.store.files.demo import open_default
    from mnemoscope.ui import heap
    from mnemoscope.ui.launch import create_app
    from mnemoscope.ui.main_window import MainWindow

    app, dark = create_app()

    def window_on(store) -> MainWindow:
        window = MainWindow(store, dark=dark)
        window.resize(width, height)
        window.show()
        _settle(app, 1.0)
        return window

    if wanted & {"window", "preview"}:
        window = window_on(open_default())
        pv = window.preview
        pv.user_message.setPlainText(MESSAGE)
        _wait(app, lambda: pv.result is not None)
        hit = pv.hits[1].id if len(pv.hits) > 1 else None
        window.session.select(hit)
        if "window" in wanted:
            _save(window, app, out, "window", args.screen)
        if "preview" in wanted:  # the preview pane alone, its Why tab: what each memory scored and why
            pv.tabs.setCurrentWidget(pv.why_pane)
            _save(window, app, out, "preview", args.screen, part=window.preview_dock)
        window.close()
    if "map-100k" in wanted:
        window = window_on(MemoryStore(args.big, read_only=True))
        _wait(app, lambda: not heap.running() and len(window.map.dots) > 0 and window.session.job is None)
        window.map.fit_view()
        _save(window, app, out, "map-100k", args.screen, part=window.map)  # the map pane alone
        window.close()
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
