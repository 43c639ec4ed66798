"""write_ssconf_files: replace ssconf_<key> files with the master's values."""

from __future__ import annotations

import os
import re

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


def _write_all(paths: Paths, values: dict[str, str]) -> None:
    for key, value in sorted(values.items()):
        fileutil.atomic_write(paths.ssconf_file(key), ssconfmod.file_content(value),
                              mode=ssconfmod.FILE_MODE)


def write_ssconf_files(ctx: NodeContext, values: dict[str, str]) -> defer.Deferred[None]:
    """Write every file given (keys were checked by the call table: ``[a-z0-9_-]+``)."""
    return ctx.run(_write_all, ctx.paths, values).addCallback(
        lambda result: confd_role.after(ctx, result))
