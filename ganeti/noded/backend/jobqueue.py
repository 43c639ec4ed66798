"""jobqueue_update, jobqueue_rename, jobqueue_purge: the master's queue replicated here.

Names are relative to the queue directory and must be ``job-<n>``, ``serial``
or ``archive/<d>/job-<n>``.  Ganeti sends absolute paths: those are accepted
too when they lie in the queue directory (as on a node without
GANETI_ROOTDIR) and reduce to one of these names.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from twisted.internet import defer

from ganeti.core import fileutil, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext, RPCFail

# Matched whole (fullmatch): "$" would also accept a name ending in a newline.
_NAME_RE = re.compile(r"job-[0-9]+|serial|archive/[0-9]+/job-[0-9]+")
FILE_MODE = 0o600
LOCK_NAME = "lock"


def queue_path(paths: Paths, name: str) -> str:
    """The local path of a queue file name; RPCFail if the name is not allowed."""
    wire_queue = rpcdefs.to_wire_path(paths.root, paths.queue_dir) + "/"
    if name.startswith(wire_queue):
        name = name[len(wire_queue):]
    if not _NAME_RE.fullmatch(name):
        raise RPCFail(f"invalid job queue file name {name!r}")
    return os.path.join(paths.queue_dir, name)


def _ensure_parent(path: str) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)


def _update(path: str, data: bytes) -> None:
    _ensure_parent(path)
    fileutil.atomic_write(path, data, mode=FILE_MODE)


def update(ctx: NodeContext, file_name: str, content: Any) -> defer.Deferred[None]:
    """Write one queue file atomically."""
    path = queue_path(ctx.paths, file_name)
    try:
        data = rpcdefs.decode_content(content)
    except rpcdefs.RpcArgumentError as err:
        raise RPCFail(f"jobqueue_update: {err}") from None
    return ctx.run(_update, path, data)


def _rename(pairs: list[tuple[str, str]]) -> None:
    dirs = set()
    for old, new in pairs:
        _ensure_parent(new)
        os.rename(old, new)
        dirs.update({os.path.dirname(old), os.path.dirname(new)})
    for d in sorted(dirs):
        fileutil.fsync_dir(d)


def rename(ctx: NodeContext, renames: list[list[str]]) -> defer.Deferred[None]:
    """Rename queue files (all names are checked before anything moves)."""
    pairs = [(queue_path(ctx.paths, old), queue_path(ctx.paths, new)) for old, new in renames]
    return ctx.run(_rename, pairs)


def _purge(paths: Paths) -> None:
    if not os.path.isdir(paths.queue_dir):
        return
    for entry in os.scandir(paths.queue_dir):
        if entry.name == LOCK_NAME:
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.path == paths.queue_archive_dir:
                for sub in os.scandir(entry.path):
                    if sub.is_dir(follow_symlinks=False):
                        shutil.rmtree(sub.path)
                    else:
                        os.unlink(sub.path)
            continue
        os.unlink(entry.path)
    fileutil.fsync_dir(paths.queue_dir)


def purge(ctx: NodeContext) -> defer.Deferred[None]:
    """Remove every queue file and the archive's contents; the lock file stays."""
    return ctx.run(_purge, ctx.paths)


def _update_many(paths: Paths, updates: list[tuple[str, bytes]],
                 renames: list[tuple[str, str]]) -> None:
    dirs = set()
    for path, data in updates:
        _ensure_parent(path)
        fileutil.atomic_write(path, data, mode=FILE_MODE, durable=False)
        dirs.add(os.path.dirname(path))
    for old, new in renames:
        _ensure_parent(new)
        try:
            os.rename(old, new)
        except FileNotFoundError:
            continue  # never received (the node joined later): nothing to move
        dirs.update({os.path.dirname(old), os.path.dirname(new)})
    for d in sorted(dirs):
        fileutil.fsync_dir(d)


def update_many(ctx: NodeContext, updates: list[list[Any]],
                renames: list[list[str]]) -> defer.Deferred[None]:
    """One replication pass: write the files, then rename (all names checked first)."""
    try:
        files = [(queue_path(ctx.paths, name), rpcdefs.decode_content(content))
                 for name, content in updates]
    except rpcdefs.RpcArgumentError as err:
        raise RPCFail(f"jobqueue_update_many: {err}") from None
    pairs = [(queue_path(ctx.paths, old), queue_path(ctx.paths, new)) for old, new in renames]
    return ctx.run(_update_many, ctx.paths, files, pairs)
