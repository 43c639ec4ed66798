"""write_ssconf_files: replace ssconf_<key> files with the master's values."""

from __future__ import annotations

import os
import re
import stat

from twisted.internet import defer

from ganeti.core import fileutil
from ganeti.core import ssconf as ssconfmod
from ganeti.core.paths import Paths
from ganeti.noded.backend import confd_role
from ganeti.noded.backend.context import NodeContext

SSCONF_PREFIX = "ssconf_"
#: Matched whole (fullmatch), so that ``ssconf_x\n`` is no ssconf file.
SSCONF_NAME_RE = re.compile(r"ssconf_[a-z0-9_-]+")


def ssconf_files(paths: Paths) -> list[tuple[str, str]]:
    """``(key, path)`` of every regular ssconf file in DATA_DIR, by key (blocking)."""
    try:
        entries = list(os.scandir(paths.data_dir))
    except FileNotFoundError:
        return []
    return sorted((e.name[len(SSCONF_PREFIX):], e.path) for e in entries
                  if SSCONF_NAME_RE.fullmatch(e.name) and e.is_file(follow_symlinks=False))


def _unchanged(path: str, content: bytes) -> bool:
    """Whether ``path`` is a regular file with ``content`` and the ssconf mode already."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            return (stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == ssconfmod.FILE_MODE
                    and st.st_size == len(content) and f.read() == content)
    except OSError:
        return False


def _write_all(paths: Paths, values: dict[str, str]) -> None:
    """Replace the files whose content differs (most keys keep their value across a
    config change: rewriting them all cost two fsyncs a file, each time)."""
    for key, value in sorted(values.items()):
        path = paths.ssconf_file(key)
        content = ssconfmod.file_content(value).encode("utf-8")
        if not _unchanged(path, content):
            fileutil.atomic_write(path, content, mode=ssconfmod.FILE_MODE)


def write_ssconf_files(ctx: NodeContext, values: dict[str, str]) -> defer.Deferred[None]:
    """Write every file given (keys were checked by the call table: ``[a-z0-9_-]+``)."""
    return ctx.run(_write_all, ctx.paths, values).addCallback(
        lambda result: confd_role.after(ctx, result))
