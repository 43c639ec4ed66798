"""The node-local implementations of the RPC calls, one module per domain.

Each handler takes a :class:`NodeContext` and the call's checked arguments and
returns a value or a Deferred.  Raising :class:`RPCFail` answers
``[false, message]``; arguments the handler itself finds invalid (a queue file
name, a file outside the upload list) also raise RPCFail, because the table's
shape check has already passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, threads
from twisted.internet.interfaces import IReactorTime
from twisted.python.threadpool import ThreadPool

from ganeti.core.paths import Paths

Runner = Callable[..., "defer.Deferred[Any]"]


class RPCFail(Exception):
    """A call failed in an expected way; the message goes to the master."""


def thread_runner(reactor: Any, pool: ThreadPool) -> Runner:
    """Run blocking functions in ``pool``, results delivered in the reactor thread."""
    def run(f: Callable[..., Any], *args: Any) -> defer.Deferred[Any]:
        return threads.deferToThreadPool(reactor, pool, f, *args)
    return run


def inline_runner(f: Callable[..., Any], *args: Any) -> defer.Deferred[Any]:
    """Run blocking functions at once (tests only)."""
    return defer.maybeDeferred(f, *args)


@dataclass(frozen=True)
class NodeContext:
    """What handlers may use: the node's paths, a clock and the blocking-work runner.

    ``shutdown`` stops the daemon (``node_leave_cluster`` schedules it on
    ``clock``); None where there is no daemon to stop.  ``manage_confd``:
    start and stop ganeti-confd with the node's role (``confd_role``).
    """

    paths: Paths
    clock: IReactorTime
    run: Runner
    shutdown: Callable[[], object] | None = None
    manage_confd: bool = False


Handler = Callable[..., Any]


def handlers() -> dict[str, Handler]:
    """Every implemented call, by name."""
    from ganeti.noded.backend import (
        cluster,
        delay,
        files,
        info,
        jobqueue,
        oob,
        roles,
        ssconf,
        verify,
        watcher,
    )
    return {
        "version": info.version,
        "node_info": info.node_info,
        "node_verify": verify.node_verify,
        "node_leave_cluster": cluster.node_leave_cluster,
        "upload_file": files.upload_file,
        "write_ssconf_files": ssconf.write_ssconf_files,
        "jobqueue_update": jobqueue.update,
        "jobqueue_rename": jobqueue.rename,
        "jobqueue_update_many": jobqueue.update_many,
        "jobqueue_purge": jobqueue.purge,
        "test_delay": delay.test_delay,
        "set_watcher_pause": watcher.set_watcher_pause,
        "run_oob": oob.run_oob,
        "node_demote_from_mc": roles.node_demote_from_mc,
    }
