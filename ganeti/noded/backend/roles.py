"""node_demote_from_mc: a node that stops being a master candidate drops its config copy.

As Ganeti's ``DemoteFromMC``: refused on the node ssconf names as the master
and while a master daemon runs here; otherwise ``config.data`` is copied to
``config.data.backup-<time>.<random>`` beside it and removed, so the node
holds no stale copy of the cluster's configuration.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from twisted.internet import defer

from ganeti.core.paths import Paths
from ganeti.core.pidfile import running_pid
from ganeti.noded.backend.context import NodeContext, RPCFail


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def _masterd_running(paths: Paths) -> bool:
    return running_pid(paths.pid_file("ganeti-masterd")) is not None


def backup_file(path: str, now: float) -> str:
    """Copy ``path`` to ``<name>.backup-<YYYY-MM-DD_HH_MM_SS>.<random>``; the copy's path."""
    stamp = time.strftime("%Y-%m-%d_%H_%M_%S", time.localtime(now))
    fd, backup = tempfile.mkstemp(prefix=f"{os.path.basename(path)}.backup-{stamp}.",
                                  dir=os.path.dirname(path))
    with open(path, "rb") as src, os.fdopen(fd, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return backup


def demote(paths: Paths, now: float) -> None:
    """Back up and remove ``config.data`` (blocking: run in the thread pool)."""
    if _read(paths.ssconf_file("master_node")) == paths.hostname:
        raise RPCFail("ssconf status shows I'm the master node, will not demote")
    if _masterd_running(paths):
        raise RPCFail("The master daemon is running, will not demote")
    if os.path.isfile(paths.config_file):
        try:
            backup_file(paths.config_file, now)
        except OSError as err:
            raise RPCFail(f"Error while backing up cluster file: {err}") from None
    try:
        os.unlink(paths.config_file)
    except FileNotFoundError:
        pass
    except OSError as err:
        raise RPCFail(f"Cannot remove {paths.config_file}: {err}") from None


def node_demote_from_mc(ctx: NodeContext) -> defer.Deferred[None]:
    """Drop this node's copy of the configuration (it is no longer a master candidate)."""
    return ctx.run(demote, ctx.paths, ctx.clock.seconds())
