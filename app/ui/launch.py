"""Starting the inspector: the application, error handling, and the first database."""

from __future__ import annotations

import logging
import os
import sys
import traceback

from mnemoscope.store import StoreError
from mnemoscope.store.demo import default_db_path, open_default

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
    from mnemoscope.store import embedding_workers

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
    from mnemoscope.store.backend import is_url

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
    if chosen.demo and isinstance(last, str) and (os.path.exists(last) or is_url(last)) and window.open_path(last):
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


def run_gui(db_path: str | None = None) -> int:
    reason = no_display_reason()
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
