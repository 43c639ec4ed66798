"""The config journal: ``config.data.journal``, the changes since the checkpoint.

``config.data`` is the complete checkpoint; the journal beside it holds one
record per committed batch of changes (see :func:`ganeti.core.configtext.record`),
appended and flushed (``fdatasync``) before the batch is acknowledged.  A
reader gets the current config as the checkpoint plus every record whose
serial is above the checkpoint's (:func:`ganeti.core.config.load_file` does
this).

Each record is one line: ``<length> <crc32 hex> <payload>\\n``.  An append
writes the whole line or raises, and a failed append truncates the file back
to where it was, so a record that was not acknowledged leaves nothing
behind.  A crash can still cut the last line short; :func:`read` skips a
torn *last* line (the batch it held was never acknowledged) and refuses
anything else that does not check (a damaged committed record is an error,
never skipped).  Every function here blocks: run them in a thread pool.
"""

from __future__ import annotations

import os
import zlib

from ganeti.core import fileutil
from ganeti.core.errors import ConfigurationError

SUFFIX = ".journal"


def journal_path(config_path: str) -> str:
    """The journal of the config at ``config_path``."""
    return config_path + SUFFIX


def encode(payload: str) -> bytes:
    """One journal line for ``payload``."""
    data = payload.encode("utf-8")
    return b"%d %08x " % (len(data), zlib.crc32(data)) + data + b"\n"


def append(path: str, payload: str, durable: bool = True) -> None:
    """Append one record, flushed to disk; on any failure the file is as before."""
    line = encode(payload)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    try:
        size = os.fstat(fd).st_size
        try:
            written = 0
            while written < len(line):
                n = os.write(fd, line[written:])
                if n <= 0:
                    raise OSError("short write to the config journal")
                written += n
            if durable:
                os.fdatasync(fd)
        except BaseException:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def read(path: str) -> tuple[list[str], bool]:
    """The payloads in the journal (none if it does not exist), and whether a torn
    last line was skipped.  Raises ConfigurationError for a damaged record."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [], False
    except OSError as err:
        raise ConfigurationError(f"cannot read {path}: {err.strerror}") from err
    payloads: list[str] = []
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        line = data[pos:] if end < 0 else data[pos:end]
        last = end < 0 or end + 1 >= len(data)
        payload = _decode(line)
        if payload is None:
            if last:
                return payloads, True
            raise ConfigurationError(f"{path}: damaged record at offset {pos}; "
                                     "the config cannot be recovered automatically")
        payloads.append(payload)
        pos = len(data) if end < 0 else end + 1
        if end < 0:  # a complete-looking record without its newline is torn too
            payloads.pop()
            return payloads, True
    return payloads, False


def _decode(line: bytes) -> str | None:
    try:
        length, crc, data = line.split(b" ", 2)
        if len(data) != int(length) or zlib.crc32(data) != int(crc, 16):
            return None
        return data.decode("utf-8")
    except ValueError:
        return None


def rewrite(path: str, payloads: list[str], durable: bool = True) -> None:
    """Replace the journal by these records (atomically); no records: remove it."""
    if not payloads:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        if durable:
            fileutil.fsync_dir(os.path.dirname(path) or ".")
        return
    fileutil.atomic_write(path, b"".join(encode(p) for p in payloads), 0o640, durable)
