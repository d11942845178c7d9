"""The map's last arrangement by meaning, kept between sessions of the window.

A fresh fit of the meaning plane for one more memory moves the others little on the whole,
but a memory near the plane's centre can swing a quarter turn (measured on the demo: up
to 1.6 rad when one memory was added while the window was closed). So the window keeps
the angles it showed, per database file and model, in the user's data folder (never in the
database: looking does not write it), and the next session starts from them: a memory
added meanwhile sits beside its nearest neighbours and no other moves.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from mnemoscope.store.files.demo import default_db_path


def _file(db_path: str, model: str) -> str:
    key = hashlib.sha1(f"{os.path.realpath(db_path)}\n{model}".encode()).hexdigest()[:20]
    return os.path.join(os.path.dirname(default_db_path()), "map-by-meaning", key + ".npz")


def load(db_path: str, model: str) -> dict[str, float]:
    """The angles last shown for ``db_path``'s memories by ``model``'s vectors ({} if none
    or unreadable: the map then fits its plane afresh)."""
    if db_path == ":memory:":
        return {}
    try:
        with np.load(_file(db_path, model), allow_pickle=False) as saved:
            return dict(zip(saved["ids"].tolist(), saved["angles"].astype(float).tolist()))
    except (OSError, ValueError, KeyError):
        return {}


def save(db_path: str, model: str, angles: dict[str, float]) -> None:
    """Keep ``angles`` for the next session; a folder we may not write keeps nothing."""
    if db_path == ":memory:" or not angles:
        return
    path = _file(db_path, model)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = path + ".partial.npz"
        np.savez(partial, ids=np.array(list(angles), dtype=str), angles=np.array(list(angles.values())))
        os.replace(partial, path)
    except OSError:
        pass
