"""Files the store reads and writes itself (imports, exports, mirrors): plain files only,
read without waiting on a pipe or a device, written whole or not at all, never through a
link."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import BinaryIO

from ..model.errors import NotPlainFile, StoreError


def open_plain(path: str | os.PathLike, *, follow: bool = True) -> BinaryIO:
    """``path`` open for reading bytes, when it is a plain file; else :class:`NotPlainFile`
    (OSError when it cannot be opened). Nothing waits: the open is non-blocking (a FIFO
    waits for a writer, a device never ends) and what is not a plain file is refused before
    a byte is read. With ``follow=False`` a symbolic link is refused, by the kernel too
    (O_NOFOLLOW), so a link swapped in after the check is not read either."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise NotPlainFile(f"{path} is a link", "a link")
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:
            raise NotPlainFile(f"{path} is a link", "a link") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = ("a folder" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device")
        raise NotPlainFile(f"{path} is {what}, not a plain file", what)
    return os.fdopen(fd, "rb")


def write_whole(path: str | os.PathLike, data: bytes) -> None:
    """Put ``data`` at ``path`` whole or not at all, never through a link: written to a new
    file beside it (created exclusively, without following a link, so a link planted under
    any name there is never written through), flushed to the disk, then renamed over
    ``path``. A ``path`` that is a link, a folder or anything but a plain file is refused.
    A full disk or a kill midway leaves ``path`` as it was (the new file is removed; after
    a kill, a hidden ``.NAME.*.tmp`` may stay beside it). An existing file keeps its
    permissions. Raises :class:`StoreError` saying what was wrong."""
    import secrets

    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    if not os.path.isdir(folder):  # a link above the file is the person's own: followed
        raise StoreError(f"cannot write {path}: the folder {folder} does not exist")
    at = hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY) if at else None
    nofollow = getattr(os, "O_NOFOLLOW", 0)

    def where(n: str) -> str:
        return n if dir_fd is not None else os.path.join(folder, n)

    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    made = False
    try:
        try:
            st = os.stat(where(name), dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise StoreError(f"cannot write {path}: it is a link; Mnemoscope never writes through a link "
                             "(remove it, or name the file it points to)")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise StoreError(f"cannot write {path}: it is {'a folder' if stat.S_ISDIR(st.st_mode) else 'not a plain file'}")
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o644
        fd = os.open(where(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow | getattr(os, "O_BINARY", 0),
                     mode, dir_fd=dir_fd)
        made = True
        with os.fdopen(fd, "wb") as fh:
            if st is not None and hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)  # the umask does not take an existing file's bits away
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(where(tmp), where(name), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        made = False
        if dir_fd is not None:
            os.fsync(dir_fd)  # the rename itself survives a power cut
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if made:
            with contextlib.suppress(OSError):
                os.unlink(where(tmp), dir_fd=dir_fd)
        if dir_fd is not None:
            os.close(dir_fd)
