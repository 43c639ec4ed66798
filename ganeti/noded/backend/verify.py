"""node_verify: facts the master collects from every node and compares.

``checks`` names what to report (each key optional; the call table refuses
unknown keys and wrong shapes):

- ``"version": true``: ``[PROTOCOL_VERSION, RELEASE_VERSION]``
- ``"filelist": [path, ...]``: ``{path: sha1 hex digest, or null}``; null when
  the file is missing or not a regular file.  Paths travel as wire paths.
- ``"hostname": true``: this node's name
- ``"time": true``: this node's clock, in seconds since the epoch
- ``"ssconf": true``: ``{key: content}`` of every ``ssconf_<key>`` file

- ``"nodesetup": true``: ``[problem, ...]`` of this machine (procfs, sysfs)
- ``"client_cert": true``: ``[null, digest]`` of the node certificate
  (``server.pem``) when it is good, else ``[level, message]``
- ``"hvinfo": true``: ``{"memory_free": MiB, "memory_total": MiB}``
- ``"userscripts": [path, ...]``: those that are not executable files
- ``"oob_paths": [path, ...]``: per path null or what is wrong with it
- ``"file_storage_path"``/``"shared_file_storage_path": path``: present only
  when the directory is unusable: why
- ``"accepted_storage_paths": true``: the forbidden paths among those
  listed in ``CONF_DIR/file-storage-paths``
- ``"node_net_test": [[name, ip, port], ...]``: ``{name: message}`` of the
  nodes whose node daemon port this node cannot connect to
- ``"lvlist": vg``: the logical volumes of that volume group as ``lv_list``
  answers them (``{"vg/lv": [size, inactive, online]}``), or why they cannot be
  listed (a string), as Ganeti's NV_LVLIST
- ``"vglist": null``: the node's volume groups and their sizes in MiB, as
  ``vg_list`` answers them; ``{}`` if they cannot be listed (Ganeti's NV_VGLIST)
- ``"file_storage_files": [dir, ...]``: ``{dir: [path, ...]}``, the regular
  files directly in each directory and in its subdirectories (a file disk is
  ``<dir>/<instance>/<file>``), at most :data:`MAX_STORAGE_FILES` per
  directory; ``{dir: message}`` if it cannot be read (ours, for the orphan
  file check)

A node that holds ``ssconf_cluster_name`` refuses to answer for another
cluster.  Everything that touches the disk or the network runs in the
thread pool.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from typing import Any

from twisted.internet import defer

from ganeti.core import constants, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend import nodechecks
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.backend.ssconf import ssconf_files
from ganeti.noded.bdev import lvm
from ganeti.noded.bdev.base import BlockDeviceError

CHUNK = 1024 * 1024
#: Files listed per file storage directory at most (the orphan file check).
MAX_STORAGE_FILES = 10000
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP)


def check_cluster_name(paths: Paths, cluster_name: str) -> None:
    """RPCFail if this node's ``ssconf_cluster_name`` names another cluster (blocking)."""
    try:
        with open(paths.ssconf_file("cluster_name"), encoding="utf-8") as f:
            ours = f.read().strip()
    except FileNotFoundError:
        return
    if ours and ours != cluster_name:
        raise RPCFail(f"node_verify: this node belongs to cluster {ours!r}, "
                      f"not to {cluster_name!r}")


def hash_file(path: str) -> str | None:
    """SHA-1 hex digest of a regular file; None if missing or not a regular file."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno in _ABSENT:
            return None
        raise RPCFail(f"node_verify: cannot read {path}: {err.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha1(usedforsecurity=False)
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
    except OSError as err:
        raise RPCFail(f"node_verify: cannot read {path}: {err.strerror}") from None
    finally:
        os.close(fd)
    return digest.hexdigest()


def read_ssconf(paths: Paths) -> dict[str, str]:
    """``{key: file content}`` of every ssconf file (blocking)."""
    out: dict[str, str] = {}
    for key, path in ssconf_files(paths):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                out[key] = f.read()
        except FileNotFoundError:
            continue  # removed since the directory was listed
    return out


def collect(paths: Paths, checks: dict[str, Any], cluster_name: str,
            now: float = 0.0) -> dict[str, Any]:
    """The blocking part of node_verify (``now``: the node's clock, for certificates)."""
    check_cluster_name(paths, cluster_name)
    result: dict[str, Any] = {}
    if checks.get("version"):
        result["version"] = [constants.PROTOCOL_VERSION, constants.RELEASE_VERSION]
    if "filelist" in checks:
        result["filelist"] = {p: hash_file(rpcdefs.from_wire_path(paths.root, p))
                              for p in checks["filelist"]}
    if checks.get("ssconf"):
        result["ssconf"] = read_ssconf(paths)
    if "file_storage_files" in checks:
        result["file_storage_files"] = {d: storage_files(paths, d)
                                        for d in checks["file_storage_files"]}
    nodechecks.collect_more(paths, checks, result, now)
    return result


def storage_files(paths: Paths, wire_dir: str) -> list[str] | str:
    """The regular files in a file storage directory and its subdirectories, as wire
    paths, sorted; a missing directory has none; why if it cannot be read
    (blocking)."""
    top = rpcdefs.from_wire_path(paths.root, wire_dir)
    found: list[str] = []
    try:
        with os.scandir(top) as entries:
            subdirs = []
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    found.append(entry.path)
        for sub in sorted(subdirs):
            if len(found) >= MAX_STORAGE_FILES:
                break
            with os.scandir(sub) as entries:
                found.extend(e.path for e in entries if e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return sorted(rpcdefs.to_wire_path(paths.root, f) for f in found)
    except OSError as err:
        return f"cannot list {wire_dir}: {err.strerror}"
    return sorted(rpcdefs.to_wire_path(paths.root, f) for f in found[:MAX_STORAGE_FILES])


async def volume_list(ctx: NodeContext, vg_name: str) -> dict[str, Any] | str:
    """Ganeti's NV_LVLIST: the volumes of ``vg_name``, or why they cannot be listed."""
    try:
        return await lvm.volume_list(ctx, [vg_name])
    except BlockDeviceError as err:
        return f"Failed to list logical volumes: {err}"


async def _node_verify(ctx: NodeContext, checks: dict[str, Any],
                       cluster_name: str) -> dict[str, Any]:
    result: dict[str, Any] = await ctx.run(collect, ctx.paths, checks, cluster_name,
                                           ctx.clock.seconds())
    if checks.get("hostname"):
        result["hostname"] = ctx.paths.hostname
    if checks.get("time"):
        result["time"] = ctx.clock.seconds()
    if "lvlist" in checks:
        result["lvlist"] = await volume_list(ctx, checks["lvlist"])
    if "vglist" in checks:
        try:
            result["vglist"] = await lvm.vg_sizes(ctx)
        except BlockDeviceError:
            result["vglist"] = {}
    return result


def node_verify(ctx: NodeContext, checks: dict[str, Any],
                cluster_name: str) -> defer.Deferred[dict[str, Any]]:
    """Answer the checks asked for; files are read in the thread pool, the volumes
    listed through the node's child processes."""
    return defer.Deferred.fromCoroutine(_node_verify(ctx, checks, cluster_name))
