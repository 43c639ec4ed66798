"""node_leave_cluster: the node forgets its cluster, then its daemon stops.

Removed (when present): ``config.data``, every ``ssconf_*`` file, everything
in the job queue directory except the ``lock`` file (the archive included),
``rapi.pem``, the RAPI users file, ``hmac.key``, ``cluster-domain-secret``,
``known_hosts``, ``ganeti_pub_keys`` and, last, ``server.pem``.  If anything
cannot be removed the call fails, ``server.pem`` is kept and the daemon keeps
running, so that the master can repeat the call.  On success the answer is
the list of removed paths (wire paths; a directory counts once) and the
daemon is stopped :data:`SHUTDOWN_DELAY` seconds later, after the reply has
gone out.
"""

from __future__ import annotations

import os
import shutil

from twisted.internet import defer
from twisted.logger import Logger

from ganeti.core import fileutil, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.backend.jobqueue import LOCK_NAME
from ganeti.noded.backend.ssconf import ssconf_files

SHUTDOWN_DELAY = 0.5

log = Logger()


def _queue_entries(paths: Paths) -> list[str]:
    try:
        return sorted(e.path for e in os.scandir(paths.queue_dir) if e.name != LOCK_NAME)
    except FileNotFoundError:
        return []


def cluster_files(paths: Paths) -> list[str]:
    """What leaving removes, in order, except ``server.pem`` (blocking: lists dirs)."""
    return ([paths.config_file] + [path for _, path in ssconf_files(paths)]
            + _queue_entries(paths)
            + [paths.rapi_pem, paths.rapi_users, paths.hmac_key, paths.cluster_domain_secret,
               paths.known_hosts, paths.ssh_pub_keys])


def _remove(path: str) -> bool:
    """Remove a file or a whole directory; False if it did not exist."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def leave(paths: Paths) -> list[str]:
    """Remove the cluster's files (blocking); the removed paths as wire paths."""
    removed: list[str] = []
    failed: list[str] = []
    for path in cluster_files(paths) + [paths.server_pem]:
        if path == paths.server_pem and failed:
            break
        try:
            if _remove(path):
                removed.append(path)
        except OSError as err:
            failed.append(f"{rpcdefs.to_wire_path(paths.root, path)}: "
                          f"{err.strerror or err}")
    for directory in (paths.queue_dir, paths.data_dir):
        if os.path.isdir(directory):
            fileutil.fsync_dir(directory)
    if failed:
        raise RPCFail("node_leave_cluster: cannot remove " + "; ".join(failed)
                      + " (server.pem kept; repeat the call once this is fixed)")
    return [rpcdefs.to_wire_path(paths.root, p) for p in removed]


def node_leave_cluster(ctx: NodeContext) -> defer.Deferred[list[str]]:
    """Remove the cluster's files in the thread pool, answer, then stop the daemon."""
    def stop_later(removed: list[str]) -> list[str]:
        if ctx.shutdown is None:
            log.warn("Left the cluster ({count} paths removed); no shutdown action, "
                     "so the daemon keeps running", count=len(removed))
        else:
            log.info("Left the cluster ({count} paths removed); stopping in {delay} s",
                     count=len(removed), delay=SHUTDOWN_DELAY)
            ctx.clock.callLater(SHUTDOWN_DELAY, ctx.shutdown)
        return removed
    d: defer.Deferred[list[str]] = ctx.run(leave, ctx.paths)
    return d.addCallback(stop_later)
