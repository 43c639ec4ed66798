"""Durable file operations: atomic replace, directory creation, secrets; and
Ganeti's rule for what names a URL rather than a file (:func:`is_url`).

Every file operation here blocks; reactor code calls it through a thread pool.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
from collections.abc import Iterable

#: Ganeti's ``utils.io.URL_RE``: a source that starts like this is a URL, else a path.
URL_RE = re.compile(r"(https?|ftps?)://")


def is_url(source: str) -> bool:
    """Whether ``source`` names a URL (Ganeti's ``IsUrl``: the scheme prefix only)."""
    return URL_RE.match(source) is not None


def fsync_dir(path: str) -> None:
    """Flush a directory entry (after a rename or create) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes | str, mode: int = 0o600, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file.

    The data goes to a temporary file in the same directory, which is
    fsynced, renamed over the target, and then the directory is fsynced:
    a crash at any moment leaves either the complete old or the complete
    new file.  ``durable=False`` skips the fsyncs (for tests of speed only).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp{os.getpid()}"
                                  f"-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)  # umask may have narrowed the mode given to open
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(directory)


def read_file(path: str) -> bytes:
    """The whole content of a file."""
    with open(path, "rb") as f:
        return f.read()


def ensure_dirs(dirs: Iterable[tuple[str, int]]) -> None:
    """Create directories (with parents) and set their modes."""
    for path, mode in dirs:
        try:
            os.makedirs(path, mode)
        except OSError as err:
            if err.errno != errno.EEXIST or not os.path.isdir(path):
                raise
        os.chmod(path, mode)


def generate_secret(nbytes: int = 20) -> str:
    """A random secret as lower-case hex, the form Ganeti uses for its keys."""
    return secrets.token_hex(nbytes)


def remove_file(path: str) -> None:
    """Remove a file; a missing file is not an error."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
