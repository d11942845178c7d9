"""Where the inspector keeps what it remembers between starts (window layout, recent
files, theme)."""

from __future__ import annotations

from PySide6.QtCore import QSettings


def settings() -> QSettings:
    """The user's settings in ``QSettings.defaultFormat()``: native normally; tests, the
    self-test and benchmarks switch to INI and point it at a folder of their own."""
    return QSettings(QSettings.defaultFormat(), QSettings.Scope.UserScope, "Mnemoscope", "Mnemoscope")
