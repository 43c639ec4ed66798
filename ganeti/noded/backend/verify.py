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

CHUNK = 1024 * 1024
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
    nodechecks.collect_more(paths, checks, result, now)
    return result


def node_verify(ctx: NodeContext, checks: dict[str, Any],
                cluster_name: str) -> defer.Deferred[dict[str, Any]]:
    """Answer the checks asked for; files are read in the thread pool."""
    def add_local(result: dict[str, Any]) -> dict[str, Any]:
        if checks.get("hostname"):
            result["hostname"] = ctx.paths.hostname
        if checks.get("time"):
            result["time"] = ctx.clock.seconds()
        return result
    d: defer.Deferred[dict[str, Any]] = ctx.run(collect, ctx.paths, checks, cluster_name,
                                                ctx.clock.seconds())
    return d.addCallback(add_local)
