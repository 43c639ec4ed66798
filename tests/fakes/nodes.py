"""Node daemons in process: the real noded call handlers, one root directory per node.

:class:`FakeNodeNet` implements the master's node RPC interface
(``call(nodes, call_name, args, timeout)``, and ``call_one`` on top of it)
without TLS or sockets: each call is checked against the call table and run
by the real noded handler against the target node's own root, so files the
master distributes really appear under that node's directories.  Nodes can be "down" (the call fails
as a refused connection would); every contacted node is recorded, so tests
can check that offline nodes are never contacted.

Each node has one mirror network (its drbd listeners, as one noded has) that
listens and connects for real on the node's address (the reactor that runs the
test, unless ``tcp`` is given), so two in-process nodes' mirrors really
connect; :meth:`FakeNodeNet.stop_node` and :meth:`~FakeNodeNet.start_node` stop
and restart a node daemon (its listeners closed, then re-opened from its
records), :meth:`~FakeNodeNet.close` closes them all (a test's cleanup).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from ganeti.core import rpcdefs
from ganeti.core.constants import DEFAULT_FILE_STORAGE_DIR, DEFAULT_SHARED_FILE_STORAGE_DIR
from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.backend.registry import handlers
from ganeti.noded.bdev.drbdnet import MirrorNet
from ganeti.noded.osoutput import OsRuns
from ganeti.rpc.client import OFFLINE_MSG, NodeTarget, RpcResult
from ganeti.rpc.noderpc import OneNodeCalls


class FakeNodeNet(OneNodeCalls):
    """Nodes by IP address, each with its own root, answering with noded's handlers."""

    def __init__(self, tmpdir: str, clock: Any) -> None:
        self.tmpdir = os.path.abspath(tmpdir)
        self.clock = clock
        self.nodes: dict[str, Paths] = {}  # ip -> paths
        self.down: set[str] = set()  # names of nodes whose daemon does not answer
        self.contacted: list[tuple[str, str]] = []  # (node name, call)
        self.handlers = handlers()
        self.stopped: list[str] = []
        self.setup_problems: dict[str, list[str]] = {}  # node_verify's nodesetup answers
        #: the config the calls' master-side encoders fill from, as the real client's
        #: ``config`` source (None: encoders see no config)
        self.config: Callable[[], Any] | None = None
        #: each node daemon's OS script output (kept across calls, as in a daemon)
        self.os_runs: dict[str, OsRuns] = {}
        #: what the nodes start programs with (None: they cannot; a test may give a
        #: stand-in for ChildProcesses that plays the programs on the clock)
        self.children: Any = None
        #: each node daemon's mirror network (made at its first call)
        self.mirrors: dict[str, MirrorNet] = {}
        #: the reactor the mirrors listen and connect with (None: the global one)
        self.tcp: Any = None

    def add(self, name: str, ip: str, paths: Paths | None = None) -> Paths:
        """A node answering at ``ip`` (its root under tmpdir unless ``paths`` is given),
        whose ``file-storage-paths`` allow the default file storage directories."""
        if paths is None:
            root = os.path.join(self.tmpdir, name)
            os.makedirs(root, exist_ok=True)
            paths = Paths.for_node(root, name)
        for d in (paths.data_dir, paths.queue_dir, paths.conf_dir):
            os.makedirs(d, exist_ok=True)
        allowed = os.path.join(paths.conf_dir, "file-storage-paths")
        if not os.path.exists(allowed):  # as an administrator prepares a node
            with open(allowed, "w", encoding="utf-8") as f:
                f.write(f"{DEFAULT_FILE_STORAGE_DIR}\n{DEFAULT_SHARED_FILE_STORAGE_DIR}\n")
        self.nodes[ip] = paths
        return paths

    def paths(self, name: str) -> Paths:
        """The paths of the node called ``name``."""
        return next(p for p in self.nodes.values() if p.hostname == name)

    def mirror_net(self, name: str) -> MirrorNet:
        """The mirror network of the node daemon of ``name``."""
        net = self.mirrors.get(name)
        if net is None:
            tcp = self.tcp
            if tcp is None:
                from twisted.internet import reactor as tcp
            net = self.mirrors[name] = MirrorNet(self.paths(name).run_dir, self.clock,
                                                 inline_runner, tcp)
        return net

    def stop_node(self, name: str) -> defer.Deferred[Any]:
        """The node daemon of ``name`` stops: it answers no call, its mirror
        listeners are closed (its records stay)."""
        self.down.add(name)
        net = self.mirrors.pop(name, None)
        return net.stop() if net is not None else defer.succeed(None)

    def start_node(self, name: str) -> defer.Deferred[None]:
        """The node daemon of ``name`` starts again: it listens for the mirrors its
        records say are connected."""
        self.down.discard(name)
        return self.mirror_net(name).start()

    def close(self) -> defer.Deferred[Any]:
        """Close every node's mirror listeners (the end of a test)."""
        nets, self.mirrors = list(self.mirrors.values()), {}
        return defer.gatherResults([n.stop() for n in nets], consumeErrors=True)

    def _context(self, paths: Paths) -> NodeContext:
        return NodeContext(paths=paths, clock=self.clock, run=inline_runner,
                           shutdown=lambda: self.stopped.append(paths.hostname),
                           os_runs=self.os_runs.setdefault(paths.hostname, OsRuns()),
                           children=self.children,
                           mirrors=self.mirror_net(paths.hostname))

    async def _one(self, target: NodeTarget, call: rpcdefs.RpcCall, args: list[Any]
                   ) -> RpcResult:
        if target.offline:
            return RpcResult(target.name, False, fail_msg=OFFLINE_MSG, offline=True,
                             call=call.name)
        self.contacted.append((target.name, call.name))
        paths = self.nodes.get(target.ip)
        if paths is None or target.name in self.down or paths.hostname in self.down:
            return RpcResult(target.name, False, call=call.name,
                             fail_msg=f"{call.name} on {target.name}: connection refused")
        try:
            value = await defer.maybeDeferred(self.handlers[call.name], self._context(paths),
                                              *call.check_args(list(args)))
        except RPCFail as err:
            return RpcResult(target.name, False, fail_msg=str(err), call=call.name)
        if call.name == "node_leave_cluster":
            self.down.add(paths.hostname)
        if call.name == "node_verify" and isinstance(value, dict):
            value = self._machine_view(paths.hostname, list(args)[0], value)
        try:  # the call's result decoder, as the real client applies it
            value = call.decode_payload(value)
        except rpcdefs.RpcReplyError as err:
            return RpcResult(target.name, False, fail_msg=str(err), call=call.name)
        return RpcResult(target.name, True, payload=value, call=call.name)

    def _machine_view(self, name: str, checks: dict[str, Any],
                      value: dict[str, Any]) -> dict[str, Any]:
        """node_verify's machine checks as this fake network sees them: the setup
        problems in ``setup_problems``, daemon ports reachable unless a node is down."""
        if "nodesetup" in value:
            value["nodesetup"] = list(self.setup_problems.get(name, []))
        if "node_net_test" in value:
            value["node_net_test"] = {
                n: "failure using the primary interface(s)"
                for n, ip, _ in checks["node_net_test"]
                if n in self.down or ip not in self.nodes}
        return value

    def call(self, nodes: Any, call_name: str, args: Any = (),
             timeout: float | None = None) -> defer.Deferred[dict[str, RpcResult]]:
        """The RpcClient interface."""
        call = rpcdefs.get_call(call_name)
        config = self.config() if self.config is not None else None
        targets = [n if isinstance(n, NodeTarget) else NodeTarget(*n) for n in nodes]
        shared = call.encode_args(list(args), rpcdefs.EncodeContext(config))
        call.check_args(shared)

        def wire(t: NodeTarget) -> list[Any]:
            if not call.per_node:
                return shared
            return call.encode_args(list(args), rpcdefs.EncodeContext(config, t.name))
        ds = [defer.Deferred.fromCoroutine(self._one(t, call, wire(t))) for t in targets]
        # consumeErrors: a cancelled call (the LU cancelled) leaves no unhandled error
        return defer.gatherResults(ds, consumeErrors=True).addCallback(
            lambda rs: {r.node: r for r in rs})

    def wipe(self, name: str) -> None:
        """Remove a node's files (a fresh machine)."""
        shutil.rmtree(self.paths(name).root, ignore_errors=True)


def master_with_nodes(case: Any, nodes: int = 2) -> tuple[Any, FakeNodeNet]:
    """A whole master daemon on a fake clock (tests/fakes/masterd.py) whose node RPC
    reaches in-process node daemons: node1.test is the master at 127.0.1.1, and
    node2.test .. node<nodes>.test are machines ready to be added at 127.0.1.k.
    The master is stopped when ``case`` (a trial test case) cleans up."""
    from tests.fakes.masterd import InProcessMaster

    tmp = case.mktemp()
    os.makedirs(tmp)
    net = FakeNodeNet(os.path.join(tmp, "nodes"), None)
    master = InProcessMaster(tmp, rpc=net)
    case.addCleanup(master.stop)
    case.addCleanup(net.close)
    net.clock = master.reactor
    net.config = lambda: master.config
    net.add("node1.test", "127.0.1.1", paths=master.paths)
    for k in range(2, nodes + 1):
        net.add(f"node{k}.test", f"127.0.1.{k}")
    return master, net


def sha1_of(path: str) -> str | None:
    """SHA-1 of a file's content, None if it does not exist."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha1(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def ssconf_of(paths: Paths) -> dict[str, bytes]:
    """Every ssconf file of a node, by file name."""
    out = {}
    for name in sorted(os.listdir(paths.data_dir)):
        if name.startswith("ssconf_"):
            with open(os.path.join(paths.data_dir, name), "rb") as f:
                out[name] = f.read()
    return out
