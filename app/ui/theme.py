"""Colours: a colour-blind-safe palette for the five kinds (Okabe–Ito), and light/dark
palettes: the user's choice (View › Theme, remembered), else the system's; the
MNEMOSCOPE_THEME environment variable overrides both."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from .preferences import settings

KIND_COLOURS = {
    "fact": "#0072B2",        # blue
    "lesson": "#E69F00",      # orange
    "skill": "#009E73",       # bluish green
    "reflection": "#CC79A7",  # reddish purple
    "event": "#D55E00",       # vermillion
}
ENTITY_COLOUR = "#56B4E9"     # sky blue
HIGHLIGHT = "#F0E442"         # yellow
HIGHLIGHT_EDGE = "#8a7d00"    # a dark yellow round a highlight, so it reads on a light background too
CALL_COLOUR = "#CC79A7"       # reddish purple: the memories of the agent call picked in the Activity dock
ARRIVAL_COLOUR = "#009E73"    # bluish green: the halo of a memory an agent just wrote
REFUSED_COLOUR = "#D55E00"    # vermillion: a refused agent call (reads on light and dark)
THEMES = ("system", "light", "dark")


def chosen() -> str:
    """The theme to use: MNEMOSCOPE_THEME, else the one picked in View › Theme, else system."""
    choice = os.environ.get("MNEMOSCOPE_THEME") or settings().value("theme", "system")
    return choice.lower() if isinstance(choice, str) and choice.lower() in THEMES else "system"


def choose(choice: str) -> None:
    """Remember the theme picked in View › Theme."""
    settings().setValue("theme", choice)


def is_dark(app: QApplication | None = None, choice: str | None = None) -> bool:
    choice = choice or chosen()
    if choice in ("dark", "light"):
        return choice == "dark"
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "colorScheme") and hints.colorScheme() == Qt.ColorScheme.Dark:
        return True
    app = app or QApplication.instance()
    # the style's own palette, not the application's, which may be our dark one
    return bool(app) and app.style().standardPalette().color(QPalette.ColorRole.Window).lightness() < 128


def apply(app: QApplication, choice: str | None = None) -> bool:
    """Use the Fusion style with a light or dark palette; returns True when dark."""
    app.setStyle("Fusion")
    dark = is_dark(app, choice)
    if dark:
        p = QPalette()
        base, text, window = QColor("#1e2126"), QColor("#e6e6e6"), QColor("#2a2d33")
        for role, colour in (
            (QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
            (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, QColor("#262a30")),
            (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, window),
            (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, QColor("#33373e")),
            (QPalette.ColorRole.ToolTipText, text), (QPalette.ColorRole.Highlight, QColor("#3d6fb6")),
            (QPalette.ColorRole.HighlightedText, QColor("#ffffff")), (QPalette.ColorRole.PlaceholderText,
                                                                     QColor("#8a8f98")),
        ):
            p.setColor(role, colour)
        p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#6b7079"))
        p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#6b7079"))
        app.setPalette(p)
    else:
        app.setPalette(app.style().standardPalette())
    return dark


def map_colours(dark: bool) -> dict[str, str]:
    if dark:
        return {"background": "#16181c", "ring": "#4a505a", "label": "#aab0ba", "line": "#56B4E955", "link": "#56B4E9cc",
                "text": "#e6e6e6"}
    return {"background": "#fbfbfa", "ring": "#c9ccd1", "label": "#5b6270", "line": "#0072B240", "link": "#0072B2b0",
            "text": "#222222"}
