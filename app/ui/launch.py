"""Starting the inspector: the application, error handling, and the first database."""

from __future__ import annotations

import ctypes
import logging
import os
import re
import shutil
import subprocess
import sys
import traceback

from mnemoscope.store import StoreError
from mnemoscope.store.files.demo import default_db_path, open_default

from ..default_database import default_database

log = logging.getLogger("mnemoscope")


def log_path() -> str:
    folder = os.path.dirname(default_db_path())
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "mnemoscope.log")


def install_excepthook(parent_getter) -> None:
    """Any unexpected exception is logged and shown in a dialog; the app keeps running."""
    from PySide6.QtWidgets import QMessageBox

    def hook(exc_type, exc, tb) -> None:
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("unexpected error:\n%s", text)
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        box = QMessageBox(QMessageBox.Icon.Critical, "Something went wrong",
                          f"{exc_type.__name__}: {exc}\n\nThe details are in {log_path()}.",
                          QMessageBox.StandardButton.Ok, parent_getter())
        box.setDetailedText(text)
        box.open()

    sys.excepthook = hook


SWITCH_INTERVAL_S = 0.0005  # how long a thread may keep the interpreter lock when another asks for it


def create_app(argv: list[str] | None = None):
    from PySide6.QtWidgets import QApplication

    from . import theme

    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    # Every call from Qt into Python (a slot, a timer, a paint of one of our items, a model's
    # rowCount) takes the interpreter lock; while a job's thread runs Python (an import's
    # embedding) each one waited up to the switch interval, 5 ms by default, and a repaint
    # makes dozens: 0.3 s gaps at the start of an import at 100,000 memories
    # (ui_bench.py --stalls: 303 / 332 ms at 5 ms, 145-186 at 1 ms, 37-89 at 0.5 ms; the
    # jobs took as long).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    # And a job's bulk embedding runs in worker processes from a smaller size than in a
    # command, so that it takes no interpreter lock here at all.
    from mnemoscope.store.meaning import embedding_workers

    embedding_workers.in_a_window()
    app.setApplicationName("Mnemoscope")
    app.setOrganizationName("Mnemoscope")
    from importlib import resources

    from PySide6.QtGui import QIcon, QPixmap

    icon = QPixmap()
    if icon.loadFromData(resources.files("mnemoscope.resources").joinpath("icon.png").read_bytes()):
        app.setWindowIcon(QIcon(icon))
    dark = theme.apply(app)
    return app, dark


def build_window(db_path: str | None, dark: bool):
    from mnemoscope.store import on_server

    from .main_window import MainWindow, settings

    window = MainWindow(dark=dark)
    if db_path is not None:
        window.open_path(db_path, create=True)
        return window
    # The default database, as every door finds it: the one this window last opened.
    chosen = default_database()
    if not chosen.demo and window.open_path(chosen.path):
        return window
    last = settings().value("last_db")  # where a version before the shared default kept it
    if chosen.demo and isinstance(last, str) and (os.path.exists(last) or on_server(last)) and window.open_path(last):
        return window
    try:
        window.set_store(open_default(chosen.path))
    except StoreError as exc:
        window.show_error("Cannot open the default database", str(exc))
    return window


def no_display_reason() -> str | None:
    """Why the window cannot open here, or None (Qt itself would abort with a core dump)."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return ("no display to open the window on (neither DISPLAY nor WAYLAND_DISPLAY is set). Use the "
            "command-line tools (mnemoscope --help), or QT_QPA_PLATFORM=offscreen mnemoscope --selftest.")


# The system libraries Qt's X11 plugin needs that a desktop may lack, by the file the loader
# looks for: (Debian/Ubuntu package, Fedora package). Qt itself names only the plugin when
# one is missing ("could not load the Qt platform plugin xcb"), and its hint names another.
XCB_PACKAGES = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
}
# What README's install line says, and this message, for a desktop without any of them.
XCB_APT = "libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxkbcommon-x11-0"


def _package(soname: str) -> tuple[str, str]:
    """Debian's and Fedora's package for a missing library; by Debian's naming rule (name
    and version: libxcb-shape.so.0 is libxcb-shape0) for one not listed, and the libxcb
    package on Fedora, which holds every libxcb-* that xcb-util does not."""
    if soname in XCB_PACKAGES:
        return XCB_PACKAGES[soname]
    m = re.fullmatch(r"(lib[\w+.-]+?)\.so\.(\d+)", soname)
    if not m:
        return soname, soname
    name, version = m.groups()
    debian = f"{name.lower()}{'-' if name[-1].isdigit() else ''}{version}"
    return debian, "libxcb" if name.startswith("libxcb-") else name


def _xcb_plugin() -> str | None:
    from PySide6.QtCore import QLibraryInfo  # QtCore needs no display

    path = os.path.join(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath), "platforms", "libqxcb.so")
    return path if os.path.exists(path) else None


def missing_libraries(plugin: str | None = None) -> list[str]:
    """The libraries the X11 platform plugin needs that this system's loader cannot find,
    [] when all are there or it cannot be told. Loading the plugin is the quick test (Qt
    loads it next anyway: nothing is loaded twice); only when that fails does ``ldd`` list
    every one missing (the loader names the first only), which takes ~0.1 s."""
    plugin = plugin or _xcb_plugin()
    if plugin is None:
        return []
    try:
        ctypes.CDLL(plugin)
        return []
    except OSError as exc:
        first = re.match(r"([^:\s]+\.so[.\d]*): cannot open shared object file", str(exc))
    ldd = shutil.which("ldd")
    if ldd is None:
        return [first.group(1)] if first else []
    try:
        out = subprocess.run([ldd, plugin], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = sorted({m.group(1) for m in re.finditer(r"^\s*(\S+)\s+=>\s+not found", out, re.MULTILINE)})
    return found or ([first.group(1)] if first else [])


def missing_libraries_reason(missing: list[str]) -> str | None:
    """What to install, on Debian/Ubuntu and on Fedora, for the ``missing`` libraries."""
    if not missing:
        return None
    debian = " ".join(dict.fromkeys(_package(s)[0] for s in missing))
    fedora = " ".join(dict.fromkeys(_package(s)[1] for s in missing))
    return (f"Qt cannot open a window on X11: these system libraries are missing: {', '.join(missing)}.\n"
            f"  Debian/Ubuntu: sudo apt-get install {debian}\n"
            f"  Fedora:        sudo dnf install {fedora}\n"
            f"(the command-line tools and `mnemoscope mcp` work without them)")


def uses_x11() -> bool:
    """Whether Qt will open its window through the X11 (xcb) plugin here."""
    if not sys.platform.startswith("linux"):
        return False
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.split(":", 1)[0] == "xcb"
    wayland = os.environ.get("WAYLAND_DISPLAY") and os.environ.get("XDG_SESSION_TYPE") == "wayland"
    return bool(os.environ.get("DISPLAY")) and not wayland


def run_gui(db_path: str | None = None) -> int:
    reason = no_display_reason() or (missing_libraries_reason(missing_libraries()) if uses_x11() else None)
    if reason:
        print(f"mnemoscope: {reason}", file=sys.stderr)
        return 2
    logging.basicConfig(filename=log_path(), level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app, dark = create_app()
    window = build_window(db_path, dark)
    install_excepthook(lambda: window)
    window.show()
    return app.exec()
