"""The ``file`` and ``sharedfile`` templates: a disk is a file in an allowed directory.

Which directories may hold disks is the node's own decision, as in Ganeti: the
administrator lists them, one absolute path a line, in
``CONF_DIR/file-storage-paths`` (Ganeti's ``file-storage-paths``; ``#``
comments and empty lines ignored).  A path is accepted only below (or, for a
storage directory, equal to) one of them and never under a system prefix
(``/bin``, ``/etc``, ``/dev``, ...).  With no such file no path is accepted.

Paths travel as on a node without ``GANETI_ROOTDIR``, or below a virtual node's
root (a virtual cluster's config names the master's directories): they are
checked as they come and used as their virtual path below this node's root, so
each node of a virtual cluster has its own files (:func:`virtual`).  The
functions block: :class:`FileDevice` (a disk's file) and the handlers run them
in the thread pool.
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Sequence
from typing import Any

from ganeti.core.paths import Paths
from ganeti.core.rpcdefs.wire import from_wire_path
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import BlockDevice

MIB = 1024 * 1024
#: Name of the file (in CONF_DIR) listing the directories file storage may use.
FILE_STORAGE_PATHS = "file-storage-paths"

_FORBIDDEN = frozenset(posixpath.normpath(p) for p in (
    "/boot", "/dev", "/etc", "/home", "/proc", "/root", "/sys",
    *(f"{prefix}/{sub}" for prefix in ("", "/usr", "/usr/local")
      for sub in ("bin", "lib", "lib32", "lib64", "sbin"))))


def allowed_paths_file(paths: Paths) -> str:
    """The node's list of allowed file storage paths."""
    return os.path.join(paths.conf_dir, FILE_STORAGE_PATHS)


def load_allowed(paths: Paths) -> list[str]:
    """The allowed file storage paths (empty if the file cannot be read)."""
    try:
        with open(allowed_paths_file(paths), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#") and posixpath.isabs(line):
            out.append(posixpath.normpath(line))
    return out


def _below(base: str, path: str) -> bool:
    return path.startswith(base.rstrip("/") + "/")


def virtual(root: str, path: str) -> str:
    """``path`` as on a node without ``GANETI_ROOTDIR`` (Ganeti's virtual path): on a
    virtual node a path below its root or below a sibling node's root (a virtual
    cluster's nodes have sibling roots, and its config names directories below the
    master's) loses that root; any other path is already virtual."""
    if not root:
        return path
    if _below(root, path):
        return path[len(root):]
    parent = posixpath.dirname(root)
    if _below(parent, path):
        rest = path[len(parent) + 1:].partition("/")[2]
        return "/" + rest
    return path


def acceptable(path: str, allowed: list[str], root: str = "",
               exact_match_ok: bool = False) -> str:
    """``path`` normalised if it lies below one of ``allowed`` (or is one, with
    ``exact_match_ok``) and, as a virtual path, not under a system prefix; else
    BlockDeviceError (Ganeti's ``CheckFileStoragePathAcceptance`` wording)."""
    if not isinstance(path, str) or not posixpath.isabs(path) or "\0" in path:
        raise BlockDeviceError(f"File storage path must be absolute, got '{path}'")
    norm = posixpath.normpath(path)
    system = virtual(root, norm)
    if system in _FORBIDDEN or any(_below(p, system) for p in _FORBIDDEN):
        raise BlockDeviceError(f"Path '{path}' uses a forbidden prefix")
    for base in allowed:
        if (exact_match_ok and base == norm) or _below(base, norm):
            return norm
    raise BlockDeviceError(f"Path '{path}' is not acceptable for file storage")


def check_acceptable(paths: Paths, path: str, exact_match_ok: bool = False) -> str:
    """:func:`acceptable` against the node's ``file-storage-paths``; nothing is
    acceptable without that file."""
    allowed = load_allowed(paths)
    if not allowed:
        raise BlockDeviceError(f"No paths are valid or path file "
                               f"'{allowed_paths_file(paths)}' was not accessible.")
    return acceptable(path, allowed, paths.root, exact_match_ok)


def local(paths: Paths, wire_path: str) -> str:
    """A checked wire path as it is on this node: its virtual path below the node's
    root (see :func:`virtual`)."""
    return from_wire_path(paths.root, virtual(paths.root, wire_path))


def file_path(paths: Paths, disk: dict[str, Any]) -> tuple[str, str]:
    """(wire path, local path) of a file disk, checked."""
    lid = disk.get("logical_id")
    if not isinstance(lid, list) or len(lid) != 2 or not isinstance(lid[1], str):
        raise BlockDeviceError(f"Invalid file disk logical id {lid!r}")
    wire = check_acceptable(paths, lid[1])
    return wire, local(paths, wire)


def _create(paths: Paths, disk: dict[str, Any], size: int) -> None:
    """Create the file of ``size`` MiB (sparse); it must not exist yet."""
    wire, path = file_path(paths, disk)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as err:
        raise BlockDeviceError(f"{wire}: can't create: {err.strerror}") from None
    try:
        os.ftruncate(fd, size * MIB)
    except OSError as err:
        os.close(fd)
        os.unlink(path)
        raise BlockDeviceError(f"{wire}: can't create: {err.strerror}") from None
    os.close(fd)


def _remove(paths: Paths, disk: dict[str, Any]) -> None:
    """Remove the file; nothing if it is gone already."""
    wire, path = file_path(paths, disk)
    try:
        os.remove(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise BlockDeviceError(f"{wire}: can't remove: {err.strerror}") from None


def _exists(paths: Paths, disk: dict[str, Any]) -> bool:
    """Whether the file exists."""
    return os.path.isfile(file_path(paths, disk)[1])


def _grow(paths: Paths, disk: dict[str, Any], amount: int, dryrun: bool,
          backingstore: bool) -> None:
    """Grow the file by ``amount`` MiB (sparse)."""
    wire, path = file_path(paths, disk)
    if not os.path.isfile(path):
        raise BlockDeviceError(f"{wire}: No such file")
    if dryrun or not backingstore:
        return
    try:
        size = os.stat(path).st_size
        os.truncate(path, size + amount * MIB)
    except OSError as err:
        raise BlockDeviceError(f"{wire}: can't grow: {err.strerror}") from None


def _rename(paths: Paths, disk: dict[str, Any], new_id: list[Any]) -> None:
    """Move the file to ``new_id[1]`` (also an acceptable path)."""
    wire, path = file_path(paths, disk)
    if len(new_id) != 2 or not isinstance(new_id[1], str):
        raise BlockDeviceError(f"Invalid new logical id {new_id!r}")
    new_wire = check_acceptable(paths, new_id[1])
    if not os.path.isfile(path):
        raise BlockDeviceError(f"{wire}: No such file")
    try:
        os.rename(path, local(paths, new_wire))
    except OSError as err:
        raise BlockDeviceError(f"{wire}: can't rename to {new_wire}: {err.strerror}") from None


def _dimensions(paths: Paths, disk: dict[str, Any]) -> list[Any] | None:
    """[size in bytes, None] of the file, None if it does not exist."""
    _, path = file_path(paths, disk)
    try:
        return [os.stat(path).st_size, None]
    except OSError:
        return None


class FileDevice(BlockDevice):
    """A ``file`` or ``sharedfile`` disk: the file ``logical_id[1]`` (Ganeti's
    FileStorage).  Its path is checked against the node's allowed paths by every
    operation; the file work runs in the node's thread pool."""

    sparse = True

    @classmethod
    async def create(cls, ctx: NodeContext, disk: dict[str, Any],
                     children: Sequence[BlockDevice | None], size: int,
                     info: str) -> BlockDevice:
        """Create the file, sparse; it must not exist yet."""
        dev = cls(ctx, disk, children)
        await ctx.run(_create, ctx.paths, disk, size)
        dev.dev_path, dev.attached = str(disk["logical_id"][1]), True
        return dev

    async def attach(self) -> bool:
        """Whether the file exists; its path is ``logical_id[1]``."""
        self.attached = bool(await self.ctx.run(_exists, self.ctx.paths, self.disk))
        self.dev_path = str(self.logical_id[1]) if self.attached else None
        return self.attached

    async def assemble(self) -> None:
        """Nothing to activate: the file must exist."""
        if not await self.attach():
            raise BlockDeviceError(f"{self.logical_id[1]}: No such file")

    async def remove(self) -> None:
        """Remove the file (nothing if it is gone)."""
        await self.ctx.run(_remove, self.ctx.paths, self.disk)
        self.attached, self.dev_path = False, None

    async def grow(self, amount: int, dryrun: bool, backingstore: bool) -> None:
        """Grow the file (sparse) unless it is a dry run or not the backing store."""
        await self.ctx.run(_grow, self.ctx.paths, self.disk, amount, dryrun, backingstore)

    async def rename(self, new_id: list[Any]) -> None:
        """Move the file to ``new_id[1]``, an acceptable path too."""
        await self.ctx.run(_rename, self.ctx.paths, self.disk, new_id)
        self.logical_id = list(new_id)
        self.dev_path = str(new_id[1])

    async def dimensions(self) -> list[Any] | None:
        """[size in bytes, None] of the file."""
        dims: list[Any] | None = await self.ctx.run(_dimensions, self.ctx.paths, self.disk)
        return dims

    @classmethod
    def static_path(cls, dev_type: str, logical_id: Sequence[str]) -> str:
        """The file, ``logical_id[1]`` (absolute)."""
        path = str(logical_id[1])
        if not path.startswith("/"):
            raise ValueError(f"{dev_type} disk path {path!r} is not absolute")
        return path

    @classmethod
    def local_path_of(cls, paths: Paths, wire_path: str) -> str:
        """The file below the node's root (see :func:`local`)."""
        return local(paths, wire_path)


# -- file storage directories --------------------------------------------------------------

def dir_create(paths: Paths, wire_dir: str) -> None:
    """Create a file storage directory (mode 0750) if it does not exist."""
    wire = check_acceptable(paths, wire_dir, exact_match_ok=True)
    path = local(paths, wire)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise BlockDeviceError(f"Specified storage dir '{wire}' is not a directory")
        return
    try:
        os.makedirs(path, 0o750)
    except OSError as err:
        raise BlockDeviceError(f"Cannot create file storage directory '{wire}': "
                               f"{err.strerror}") from None


def dir_remove(paths: Paths, wire_dir: str) -> None:
    """Remove a file storage directory if it is empty (fails if it is not)."""
    wire = check_acceptable(paths, wire_dir, exact_match_ok=True)
    path = local(paths, wire)
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise BlockDeviceError(f"Specified Storage directory '{wire}' is not a directory")
    try:
        os.rmdir(path)
    except OSError as err:
        raise BlockDeviceError(f"Cannot remove file storage directory '{wire}': "
                               f"{err.strerror}") from None


def dir_rename(paths: Paths, old_dir: str, new_dir: str) -> None:
    """Rename a file storage directory (Ganeti's rules: nothing to do if only the new
    one exists; an error if both do)."""
    old_wire = check_acceptable(paths, old_dir, exact_match_ok=True)
    new_wire = check_acceptable(paths, new_dir, exact_match_ok=True)
    old, new = local(paths, old_wire), local(paths, new_wire)
    if os.path.exists(new):
        if os.path.exists(old):
            raise BlockDeviceError(f"Cannot rename '{old_wire}' to '{new_wire}': both "
                                   "locations exist")
        return
    if not os.path.isdir(old):
        raise BlockDeviceError(f"Specified storage dir '{old_wire}' is not a directory")
    try:
        os.rename(old, new)
    except OSError as err:
        raise BlockDeviceError(f"Cannot rename '{old_wire}' to '{new_wire}': "
                               f"{err.strerror}") from None


def space(paths: Paths, wire_dir: str) -> tuple[int, int, int]:
    """(size, used, free) MiB of a storage directory: its file system's size and free
    space, the size of what the directory holds."""
    path = local(paths, wire_dir)
    try:
        st = os.statvfs(path)
    except OSError as err:
        raise BlockDeviceError(f"Failed to retrieve file system information about path: "
                               f"{wire_dir} - {err.strerror}") from None
    size = st.f_frsize * st.f_blocks // MIB
    free = st.f_frsize * st.f_bavail // MIB
    used = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                used += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError as err:
                if err.errno != errno.ENOENT:
                    raise
    return size, used // MIB, free
