"""A folder whose files are read, written and removed without ever following a link.

A mirror or a backup folder may hold a symbolic link (or, on Windows, a junction) that
someone planted to point elsewhere: writing "into" it would write, and removing "from"
it would remove, the files of whatever it points at. :class:`SafeFolder` refuses every
entry that is a link. Where the platform has ``openat`` and friends (Linux, macOS, the
BSDs), the folder is opened once with ``O_NOFOLLOW`` and every operation is relative to
that open folder, so a link swapped in between a check and a write is refused by the
kernel too. Elsewhere (Windows) each path is checked with ``lstat`` just before use.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..model.errors import StoreError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks of folders
    fcntl = None  # type: ignore[assignment]

_REPARSE = getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400)
_AT = (hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
       and {os.open, os.stat, os.unlink, os.mkdir, os.rename} <= os.supports_dir_fd)


def is_link(st: os.stat_result) -> bool:
    """A symbolic link, or any Windows reparse point (a junction, a mount point)."""
    return stat.S_ISLNK(st.st_mode) or bool(getattr(st, "st_file_attributes", 0) & _REPARSE)


def lstat_or_none(path: str | os.PathLike) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


class LinkRefused(StoreError):
    """An entry that had to be a plain file or folder is a link."""

    def __init__(self, path: Path) -> None:
        try:
            target = f" (to {os.readlink(path)})"
        except OSError:
            target = ""
        super().__init__(f"{path} is a link{target}; Mnemoscope never writes or removes through a link. "
                         "Remove the link, or give the folder it points to itself")
        self.path = path


class Changed(StoreError):
    """A file changed between reading it and replacing it (another program wrote it)."""


_ANY = object()


class SafeFolder:
    """An existing or new folder, opened without following links."""

    def __init__(self, path: Path, *, create: bool = True, within: SafeFolder | None = None) -> None:
        self.path = path
        self._fd: int | None = within.open_folder(path.name, create=create) if within else self._open_root(create)

    def _open_root(self, create: bool) -> int | None:
        path = self.path
        st = lstat_or_none(path)
        if st is None and create:
            path.parent.mkdir(parents=True, exist_ok=True)  # above the folder, links are the person's own
            os.mkdir(path)
            st = os.lstat(path)
        self._check_dir(path, st)
        return self._open_dir(path, lambda flags: os.open(path, flags)) if _AT else None

    def open_folder(self, name: str, *, create: bool) -> int | None:
        """Check (and make, with ``create``) the folder ``name`` in this one; its open
        descriptor where the platform has openat, else None."""
        st = self.lstat(name)
        if st is None and create:
            if self._fd is not None:
                os.mkdir(name, dir_fd=self._fd)
            else:
                os.mkdir(self.path / name)
            st = self.lstat(name)
        self._check_dir(self.path / name, st)
        if self._fd is None:
            return None
        return self._open_dir(self.path / name, lambda flags: os.open(name, flags, dir_fd=self._fd))

    @staticmethod
    def _check_dir(path: Path, st: os.stat_result | None) -> None:
        if st is None:
            raise StoreError(f"{path} does not exist")
        if is_link(st):
            raise LinkRefused(path)
        if not stat.S_ISDIR(st.st_mode):
            raise StoreError(f"{path} is a file, not a folder")

    @staticmethod
    def _open_dir(path: Path, opener) -> int:
        try:
            return opener(os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:  # swapped for a link after the check
            if exc.errno in (getattr(os, "ELOOP", 40), getattr(os, "ENOTDIR", 20)):
                raise LinkRefused(path) from None
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SafeFolder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def sub(self, name: str, *, create: bool = True) -> SafeFolder:
        return SafeFolder(self.path / name, create=create, within=self)

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            if self._fd is not None:
                return os.stat(name, dir_fd=self._fd, follow_symlinks=False)
            return os.lstat(self.path / name)
        except FileNotFoundError:
            return None

    def kind(self, name: str) -> str:
        """'missing', 'file', 'link' or 'other' (a folder, a socket …)."""
        st = self.lstat(name)
        if st is None:
            return "missing"
        if is_link(st):
            return "link"
        return "file" if stat.S_ISREG(st.st_mode) else "other"

    def names(self) -> list[str]:
        if self._fd is not None:
            return sorted(os.listdir(self._fd))
        return sorted(os.listdir(self.path))

    def _open(self, name: str, flags: int, mode: int = 0o644) -> int:
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        try:
            if self._fd is not None:
                return os.open(name, flags, mode, dir_fd=self._fd)
            if self.kind(name) == "link":
                raise LinkRefused(self.path / name)
            return os.open(self.path / name, flags, mode)
        except OSError as exc:
            if exc.errno == getattr(os, "ELOOP", 40):
                raise LinkRefused(self.path / name) from None
            raise

    def read(self, name: str, *, most: int | None = None, own: bool = False) -> bytes | None:
        """The bytes of the plain file ``name``; None if there is none. With ``most``, a
        file longer than that is refused unread; with ``own``, one another user owns (where
        files have owners), as the file opened says."""
        try:
            fd = self._open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not hold it
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise StoreError(f"{self.path / name} is not a plain file")
            if own and hasattr(os, "geteuid") and st.st_uid != os.geteuid():
                raise StoreError(f"{self.path / name} belongs to another user (uid {st.st_uid})")
            data = fh.read() if most is None else fh.read(most + 1)
            if most is not None and len(data) > most:
                raise StoreError(f"{self.path / name} is {st.st_size:,} bytes, over the {most:,} it may be")
            return data

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this folder's lock (an advisory lock of the open folder, where there is one):
        another process of ours that reads, changes and replaces a file here waits its turn."""
        if self._fd is None or fcntl is None:
            yield
            return
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def write(self, name: str, data: bytes, *, mode: int = 0o644, expected: object = _ANY) -> None:
        """Replace ``name`` with ``data`` whole: written beside it, then renamed over it
        (a rename replaces a directory entry; it never writes through a link); a new file
        gets ``mode`` (less the umask). With ``expected`` (bytes, or None for no file), the
        file is replaced only while it still holds that: :class:`Changed` otherwise, and
        nothing is replaced (a program that wrote it since keeps what it wrote)."""
        if self.kind(name) == "link":
            raise LinkRefused(self.path / name)
        tmp = f".{secrets.token_hex(4)}.tmp"
        fd = self._open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if expected is not _ANY and self.read(name) != expected:
                raise Changed(f"{self.path / name} changed while it was being written (another program wrote it)")
            if self._fd is not None:
                os.replace(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
            else:
                if self.kind(name) == "link":
                    raise LinkRefused(self.path / name)
                os.replace(self.path / tmp, self.path / name)
        except BaseException:
            self.remove(tmp, missing_ok=True)
            raise

    def rename(self, name: str, new: str) -> None:
        """Rename the entry ``name`` (a folder of ours, or a plain file) to ``new`` in this
        folder; an empty folder ``new`` is replaced, anything else there refused."""
        if self.kind(new) == "link":
            raise LinkRefused(self.path / new)
        st = self.lstat(new)
        if st is not None and stat.S_ISDIR(st.st_mode):
            self.remove_folder(new)  # empty, or the OSError says it is not
        if self._fd is not None:
            os.rename(name, new, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        else:
            os.rename(self.path / name, self.path / new)

    def remove_folder(self, name: str) -> None:
        """Remove the empty folder ``name`` (a link is refused, never followed)."""
        if self.kind(name) == "link":
            raise LinkRefused(self.path / name)
        if self._fd is not None:
            os.rmdir(name, dir_fd=self._fd)
        else:
            os.rmdir(self.path / name)

    def remove_tree(self, name: str) -> None:
        """Remove the folder ``name`` and what it holds, following no link in it (a link
        inside is removed as an entry, never what it points to)."""
        with self.sub(name, create=False) as inner:
            for entry in inner.names():
                st = inner.lstat(entry)
                if st is not None and stat.S_ISDIR(st.st_mode) and not is_link(st):
                    inner.remove_tree(entry)
                else:
                    inner.unlink(entry)
        self.remove_folder(name)

    def unlink(self, name: str) -> None:
        """Remove the entry ``name``, whatever it is but a folder (a link goes, never what it
        points to)."""
        if self._fd is not None:
            os.unlink(name, dir_fd=self._fd)
        else:
            os.unlink(self.path / name)

    def remove(self, name: str, *, missing_ok: bool = False) -> None:
        """Remove the plain file ``name`` (a link is refused, never followed)."""
        kind = self.kind(name)
        if kind == "missing" and missing_ok:
            return
        if kind == "link":
            raise LinkRefused(self.path / name)
        if self._fd is not None:
            os.unlink(name, dir_fd=self._fd)
        else:
            os.unlink(self.path / name)
