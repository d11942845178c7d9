"""The default database: the one the window and every door use when no ``--db`` is given.

It is the database the inspector last opened, so that an agent started as README says
(``mnemoscope mcp``, no ``--db``) writes where the person is looking; before the window
has opened any other, it is the demo database in the user data folder. The window writes
the choice into a one-line file beside the demo database (never through a link); the
doors read it and say which database they use and why. No Qt: the command line reads it
without loading the window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mnemoscope.store import on_server
from mnemoscope.store.files.demo import default_db_path
from mnemoscope.store.files.safe_folder import LinkRefused, SafeFolder
from mnemoscope.store.model.errors import StoreError

RECORD = "last-opened"  # the file, in the user data folder, naming the database the inspector last opened
LAST_OPENED = "the one the inspector last opened"
MAX_RECORD_BYTES = 64 * 1024  # a path or a URL is a few thousand characters at most


@dataclass(frozen=True)
class DefaultDatabase:
    path: str
    why: str    # how a person is told why this one: "the one the inspector last opened", …
    demo: bool  # the demo database in the user data folder

    def to_dict(self) -> dict:
        return {"path": self.path, "why": self.why, "demo": self.demo}


def _folder() -> Path:
    return Path(os.path.dirname(default_db_path()))


def _recorded() -> tuple[str | None, str]:
    """The database recorded, or None and why none: the record is read only when it is
    this user's own plain file of at most :data:`MAX_RECORD_BYTES` (someone else's, where the
    folder is shared, would choose where this user's agents write; a huge one held every
    door up while it was read)."""
    try:
        with SafeFolder(_folder(), create=False) as folder:
            data = folder.read(RECORD, most=MAX_RECORD_BYTES, own=True)
    except LinkRefused:
        return None, ""  # a link where the record goes: nothing recorded
    except StoreError as exc:
        return None, "" if not os.path.lexists(_folder() / RECORD) else str(exc)
    except OSError:  # no folder yet
        return None, ""
    if data is None:
        return None, ""
    text = data.decode("utf-8", "replace").strip()
    return (text.splitlines()[0] if text else None), ""


def default_database() -> DefaultDatabase:
    """The database a window or door opens without ``--db``, and why that one."""
    demo = default_db_path()
    last, refused = _recorded()
    if refused:
        return DefaultDatabase(demo, f"the demo database: the record of the one the inspector last opened was "
                                     f"not read ({refused})", True)
    if last is None or os.path.abspath(last) == os.path.abspath(demo) and not on_server(last):
        why = "the demo database (the inspector has not opened another)" if last is None else \
            f"the demo database, {LAST_OPENED}"
        return DefaultDatabase(demo, why, True)
    if on_server(last) or os.path.exists(last):
        return DefaultDatabase(last, LAST_OPENED, False)
    return DefaultDatabase(demo, f"the demo database: {LAST_OPENED}, {last}, is gone", True)


def remember_opened(path: str) -> None:
    """Make ``path`` (a file, or a ``postgresql://`` URL without its password) the default
    database of every door: the window calls this when it opens one. Written whole,
    beside the demo database, never through a link (a :class:`StoreError` says so)."""
    if path == ":memory:":
        return
    if not on_server(path):
        path = os.path.abspath(path)
    if "\n" in path or "\r" in path:
        raise StoreError(f"{path!r}: a database path with a line break cannot be the default database")
    with SafeFolder(_folder()) as folder:
        folder.write(RECORD, (path + "\n").encode("utf-8"))
