"""What every node-call handler gets: :class:`NodeContext`, :class:`RPCFail` and the
blocking-work runners."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from twisted.internet import defer, threads
from twisted.internet.interfaces import IReactorProcess, IReactorTime
from twisted.python.threadpool import ThreadPool

from ganeti.core import constants
from ganeti.core.paths import Paths
from ganeti.noded.hypervisors.base import NodeEnv
from ganeti.noded.hypervisors.registry import NodeHypervisors
from ganeti.noded.instevents import InstanceEvents
from ganeti.noded.osoutput import OsRuns
from ganeti.noded.procs import ChildProcesses

if TYPE_CHECKING:
    from ganeti.noded.bdev.drbdnet import MirrorNet
    from ganeti.noded.hypervisors.kvm import KvmHypervisor

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
    #: starts programs (``spawnProcess``: the hook scripts); None where none may run
    processes: IReactorProcess | None = None
    #: the external programs of all calls, ended when the daemon stops; made from
    #: ``processes`` unless given
    children: ChildProcesses | None = None
    #: the output of OS script runs, for ``os_output`` (one per daemon)
    os_runs: OsRuns = field(default_factory=OsRuns)
    #: the kvm hypervisor (its libvirt connection); None where libvirt is not used.
    #: Given alone, it joins ``hypervisors``; else it is the one ``hypervisors`` serves
    #: (for the block device calls, which tell its guests about grown disks)
    kvm: KvmHypervisor | None = None
    #: the instance lifecycle events of the node (``instance_events``); made from
    #: ``clock`` unless given
    events: InstanceEvents | None = None
    #: the hypervisors of the node (:mod:`ganeti.noded.hypervisors.registry`); made
    #: from the table unless given (without a libvirt connection: no kvm)
    hypervisors: NodeHypervisors | None = None
    #: the listeners and handshakes of the node's mirrored (drbd) disks, one per
    #: daemon (:mod:`ganeti.noded.bdev.drbdnet`); made without a network unless given
    mirrors: MirrorNet | None = None

    def __post_init__(self) -> None:
        if self.mirrors is None:
            from ganeti.noded.bdev.drbdnet import MirrorNet
            object.__setattr__(self, "mirrors",
                               MirrorNet(self.paths.run_dir, self.clock, self.run, None))
        if self.children is None and self.processes is not None:
            object.__setattr__(self, "children", ChildProcesses(self.processes, self.clock))
        if self.events is None:
            object.__setattr__(self, "events", InstanceEvents(self.clock))
        if self.hypervisors is None:
            env = NodeEnv(self.paths.run_dir, self.clock, self.run, self.events)
            made = {constants.HT_KVM: self.kvm} if self.kvm is not None else None
            object.__setattr__(self, "hypervisors", NodeHypervisors(env, made=made))
        elif self.kvm is None:  # the daemon's: made by the table
            object.__setattr__(self, "kvm", self.hypervisors.kvm)

    def hypervisor_table(self) -> NodeHypervisors:
        """The node's hypervisors (always made by ``__post_init__``)."""
        assert self.hypervisors is not None
        return self.hypervisors


Handler = Callable[..., Any]
