"""upload_file: the master pushes a file from a fixed list; everything else is refused.

Allowed (paths as on a node without GANETI_ROOTDIR; the node adds its root):
``config.data``, ``ssconf_*``, ``rapi.pem``, ``rapi/users``,
``cluster-domain-secret`` and ``hmac.key`` in DATA_DIR, Ganeti's cluster VNC
password file ``CONF_DIR/vnc-cluster-password``, plus every absolute
path listed, one per line, in ``CONF_DIR/upload-allowed-files``.  That file is
kept by the administrator; it is not itself uploadable, so the master cannot
widen the list.
"""

from __future__ import annotations

import os
import re
from typing import Any

from twisted.internet import defer

from ganeti.core import fileutil, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend import confd_role, configstore
from ganeti.noded.backend.context import NodeContext, RPCFail

EXTRA_ALLOWED_FILE = "upload-allowed-files"
#: Ganeti's VNC_PASSWORD_FILE (in CONF_DIR): the usual cluster-wide vnc_password_file.
VNC_PASSWORD_FILE_NAME = "vnc-cluster-password"
# Matched whole (fullmatch): "$" would also accept ``ssconf_x\n``.
_SSCONF_RE = re.compile(r"ssconf_[a-z0-9_-]+")


def extra_allowed_path(paths: Paths) -> str:
    """The administrator's list of further uploadable paths."""
    return os.path.join(paths.conf_dir, EXTRA_ALLOWED_FILE)


def _extra_allowed(paths: Paths) -> set[str]:
    try:
        with open(extra_allowed_path(paths), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return set()
    return {rpcdefs.from_wire_path(paths.root, os.path.normpath(line.strip()))
            for line in lines if line.strip().startswith("/")}


def is_allowed(paths: Paths, local_path: str) -> bool:
    """Whether the master may write ``local_path`` (already mapped under the root)."""
    fixed = {paths.config_file, paths.rapi_pem, paths.rapi_users,
             paths.cluster_domain_secret, paths.hmac_key,
             os.path.join(paths.conf_dir, VNC_PASSWORD_FILE_NAME)}
    if local_path in fixed:
        return True
    if (os.path.dirname(local_path) == paths.data_dir
            and _SSCONF_RE.fullmatch(os.path.basename(local_path))):
        return True
    return local_path in _extra_allowed(paths)


def _upload(paths: Paths, file_name: str, data: bytes, mode: int,
            atime: float | None, mtime: float | None) -> None:
    if not os.path.isabs(file_name) or os.path.normpath(file_name) != file_name:
        raise RPCFail(f"upload_file: {file_name!r} is not a normalised absolute path")
    local = rpcdefs.from_wire_path(paths.root, file_name)
    if not is_allowed(paths, local):
        raise RPCFail(f"upload_file: {file_name} is not a file the master may upload")
    os.makedirs(os.path.dirname(local), mode=0o750, exist_ok=True)
    fileutil.atomic_write(local, data, mode=mode)
    if atime is not None or mtime is not None:
        a = atime if atime is not None else mtime
        m = mtime if mtime is not None else atime
        assert a is not None and m is not None
        os.utime(local, (a, m))


def upload_file(ctx: NodeContext, file_name: str, content: Any, mode: int, uid: Any,
                gid: Any, atime: float | None, mtime: float | None) -> defer.Deferred[None]:
    """Write one allowed file atomically in the thread pool (uid/gid: not yet applied)."""
    try:
        data = rpcdefs.decode_content(content)
    except rpcdefs.RpcArgumentError as err:
        raise RPCFail(f"upload_file: {err}") from None
    d = ctx.run(_upload, ctx.paths, file_name, data, mode, atime, mtime)
    if rpcdefs.from_wire_path(ctx.paths.root, file_name) == ctx.paths.config_file:
        d.addCallback(lambda result: configstore.after_upload(ctx, result))
    if rpcdefs.from_wire_path(ctx.paths.root, file_name) in (ctx.paths.config_file,
                                                             ctx.paths.hmac_key):
        d.addCallback(lambda result: confd_role.after(ctx, result))
    return d
