"""The store's errors: each says what was wrong, with which input, and what to do."""

from __future__ import annotations


class StoreError(Exception):
    """The store refused an operation or a database file; nothing was written."""


class DatabaseRefused(StoreError):
    """A file the store will not open: not a database, corrupt, or from a newer Mnemoscope.

    ``reason`` is one of ``not_a_database``, ``corrupt``, ``newer_version``, ``unreadable``.
    """

    def __init__(self, path: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


class NotPlainFile(StoreError):
    """A path to read is not a plain file. ``what`` says what it is instead: ``a link``
    (where links are not followed), ``a folder``, ``a pipe``, ``a device`` or ``a socket``."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


class ValidationError(StoreError, ValueError):
    """A field of a memory, entity or request is invalid. ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class NotFound(StoreError, KeyError):
    """No memory (or entity) has that id."""

    def __init__(self, what: str, ident: str) -> None:
        super().__init__(f"no {what} with id {ident!r}")
        self.ident = ident

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class Unavailable(StoreError):
    """The database server cannot be reached (down, restarting, or the connection broke).
    The call was not done; a write in progress was rolled back. The next call reconnects.
    Only when the connection broke after the commit was sent can nobody tell whether the
    server committed it (``outcome_unknown``): the message says so rather than "not done"."""

    def __init__(self, where: str, why: str, *, outcome_unknown: bool = False) -> None:
        then = ("the connection broke while this write was being committed, so it may or may not have been "
                "saved: read it back before you retry it" if outcome_unknown
                else "this call was not done, retry in a few seconds")
        super().__init__(f"the memory at {where} is unreachable right now ({why}); {then}")
        self.where = where
        self.outcome_unknown = outcome_unknown


class ConfigError(StoreError, ValueError):
    """The TOML configuration is unreadable or holds an invalid value."""


class ImportRefused(StoreError):
    """An import found bad lines and wrote nothing. ``errors`` lists every one as
    (line number, reason); importing with ``partial=True`` takes the good lines, of which
    there are ``good`` (None: not counted; 0: a partial import would bring nothing)."""

    def __init__(self, source: str, errors: list[tuple[int, str]], good: int | None = None) -> None:
        shown = "\n".join(f"  line {n}: {why}" for n, why in errors[:MAX_LISTED])
        more = f"\n  … and {len(errors) - MAX_LISTED} more" if len(errors) > MAX_LISTED else ""
        if good == 0:
            said = f"{source}: {len(errors)} bad line(s) and no good line, so nothing was imported; fix them:"
        else:
            said = (f"{source}: {len(errors)} bad line(s), so nothing was imported; fix them, or import only "
                    "the good lines (partial import):")
        super().__init__(f"{said}\n{shown}{more}")
        self.errors = errors
        self.good = good


MAX_LISTED = 50  # bad lines named in the message; ``errors`` keeps them all


class ListenerLost(Exception):
    """The connection that hears other writers is gone (server restarted, network down):
    the listener's owner opens a new one (MemoryStore.watch)."""


def database_error(path: str, exc: BaseException) -> StoreError:
    """A sentence a user can act on for a database or OS error met while using ``path``."""
    if isinstance(exc, OSError):
        return StoreError(f"cannot use {path}: {exc.strerror or exc}")
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        return StoreError(f"{path} is read-only here; nothing was written. Copy it somewhere you may write "
                          "to change it")
    if "full" in low:
        return StoreError(f"the disk holding {path} is full (or the database reached its size limit); "
                          "nothing was written. Free some space and try again")
    if "locked" in low or "busy" in low:
        return StoreError(f"the database {path} is busy (another program is writing); try again: {text}")
    if "disk i/o" in low:
        return StoreError(f"reading or writing {path} failed at the disk (disk I/O error); check the drive "
                          "and try again. Nothing was half-written")
    if "malformed" in low or "not a database" in low:
        return StoreError(f"{path} is damaged ({text}); restore it from a backup")
    return StoreError(f"the database {path} failed ({text}); nothing was half-written")
