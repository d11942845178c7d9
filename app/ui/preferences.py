"""Where the inspector keeps what it remembers between starts (window layout, recent
files, theme, the folder file dialogs open in)."""

from __future__ import annotations

import os

from PySide6.QtCore import QSettings


def settings() -> QSettings:
    """The user's settings in ``QSettings.defaultFormat()``: native normally; tests, the
    self-test and benchmarks switch to INI and point it at a folder of their own."""
    return QSettings(QSettings.defaultFormat(), QSettings.Scope.UserScope, "Mnemoscope", "Mnemoscope")


def start_in(name: str = "") -> str:
    """Where a file dialog opens: the folder of the last file or folder picked in any of the
    window's file dialogs (else the home folder), with ``name``, a suggested file name."""
    folder = settings().value("last_folder", "")
    if not isinstance(folder, str) or not folder or not os.path.isdir(folder):
        folder = os.path.expanduser("~")
    return os.path.join(folder, name) if name else folder


def picked(path: str) -> str:
    """Remember the folder of ``path``, a file or folder a person picked in a file dialog
    ("": picked nothing), for the next dialog; returns ``path``."""
    if path:
        folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        settings().setValue("last_folder", folder)
    return path
