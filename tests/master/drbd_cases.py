"""A cluster of three in-process nodes with mirrored (drbd) instances, for the tests of
drbd migration, failover and replace-disks.

Each node has its own volume group ``xenvg`` (its own fake ``lvm`` state, so both
sides of a mirror use the same volume names, as Ganeti's do), and the nodes' mirrors
listen and connect over an in-memory network on the master's clock
(:class:`~tests.fakes.looptcp.LoopTCP`); :meth:`DrbdCase.make_drbd` creates drbd
instances.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any

from ganeti.core import constants as c
from ganeti.core import storagetypes
from ganeti.core.objects import Disk, Instance
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.noded.bdev import drbdstate, lvm
from ganeti.noded.bdev.base import Outcome
from ganeti.rpc.client import NodeTarget
from tests.fakes import fakelvm
from tests.fakes.fakelvm import FakeLvm
from tests.fakes.looptcp import LoopTCP
from tests.master.test_lu_instance import create_op
from tests.master.test_lu_migration import NODES, MigrationCase

VG = "xenvg"
VG_SIZE = 65536


#: The fake lvm's program, run in this process (a hundred programs started per
#: migration would take most of a test's time).
_LVM = compile(fakelvm._SCRIPT.replace('os.environ["FAKE_LVM_STATE"]', "STATE_FILE")
               .replace("sys.argv[1:]", "ARGV"), "fakelvm", "exec")


def _run_lvm(state_file: str, args: tuple[str, ...]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            exec(_LVM, {"STATE_FILE": state_file, "ARGV": list(args), "__name__": "lvm"})
        except SystemExit as exit_:
            code = exit_.code or 0
    if code == 0:
        return Outcome(True, out.getvalue(), err.getvalue())
    return Outcome(False, out.getvalue(), err.getvalue(), f"exited with exit code {code}")


def per_node_lvm(case: Any, names: tuple[str, ...]) -> dict[str, FakeLvm]:
    """A fake ``lvm`` (and volume group ``xenvg``) of its own for each node, run in
    process."""
    fakes = {}
    for name in names:
        directory = os.path.abspath(case.mktemp())
        os.makedirs(directory)
        fakes[name] = FakeLvm.create(directory, {VG: {"size": VG_SIZE, "pvs": ["/dev/sdb"]}})

    async def node_lvm(ctx: Any, *args: str) -> Outcome:
        return _run_lvm(fakes[ctx.paths.hostname].state_file, args)
    case.patch(lvm, "lvm", node_lvm)
    case.patch(lvm, "dm_available", lambda: False)
    case.patch(os, "environ", fakes[names[0]].env())
    return fakes


class DrbdCase(MigrationCase):
    """:class:`MigrationCase` (faults, allocators, fake hypervisor) with drbd."""

    def setUp(self) -> None:
        super().setUp()
        self.lvm = per_node_lvm(self, NODES)
        self.tcp = LoopTCP(self.master.reactor)
        self.master.run_until(self.net.close())  # (made with the global reactor)
        self.net.tcp = self.tcp
        self.addCleanup(self.net.close)

        def enable(cfg: Any) -> None:
            cfg.cluster.volume_group_name = VG
            cfg.cluster.enabled_disk_templates = [
                c.DT_DRBD8, c.DT_PLAIN, c.DT_DISKLESS, c.DT_SHARED_FILE, c.DT_FILE]
            cfg.cluster.ipolicy["disk-templates"] = list(cfg.cluster.enabled_disk_templates)
        self.update(enable)

    def update(self, change: Any) -> None:
        failure = self.master.run_until(self.master.daemon.config_writer.update(change))
        if failure is not None:
            failure.raiseException()

    def node_uuid(self, name: str) -> str:
        return self.config.node_by_name(name).uuid

    def call(self, node: str, name: str, args: list[Any]) -> Any:
        """A node call's result (run to its end on the master's clock)."""
        n = self.config.node_by_name(node)
        d = self.net.call_one(NodeTarget(n.name, n.primary_ip, False), name, args)
        result = self.master.run_until(d)
        return result

    # -- making drbd instances --------------------------------------------------------

    @staticmethod
    def create_drbd_op(name: str, pnode: str = "node1.test", snode: str = "node2.test",
                       sizes: tuple[int, ...] = (1024,)) -> dict[str, Any]:
        return create_op(name, disk_template=c.DT_DRBD8, pnode=pnode, snode=snode,
                         disks=[{"size": size} for size in sizes], ignore_ipolicy=True)

    def make_drbd(self, name: str = "inst1.test", pnode: str = "node1.test",
                  snode: str = "node2.test", sizes: tuple[int, ...] = (1024,),
                  start: bool = True) -> Instance:
        """A drbd instance created on ``pnode`` and ``snode`` (OP_INSTANCE_CREATE, which
        waits for the sync), started, or with ``start`` false its disks deactivated."""
        self.run_ok(self.create_drbd_op(name, pnode, snode, sizes))
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP" if start
                     else "OP_INSTANCE_DEACTIVATE_DISKS", "instance_name": name})
        return self.instance(name)

    def on_nodes(self, nodes: tuple[str, ...], name: str, args: list[Any]) -> list[Any]:
        """A call on several nodes at once (as the master's multi-node calls); each
        node's payload (a failure fails the test)."""
        from twisted.internet import defer
        targets = [self.config.node_by_name(n) for n in nodes]
        ds = [self.net.call_one(NodeTarget(n.name, n.primary_ip, False), name, args)
              for n in targets]
        results = self.master.run_until(defer.gatherResults(ds))
        for node, result in zip(nodes, results, strict=True):
            self.assertTrue(result.success, (node, name, result.fail_msg))
        return [r.payload for r in results]

    def disconnect(self, node: str, name: str = "inst1.test") -> None:
        """The instance's disks on ``node`` lose their network (both sides degraded)."""
        inst = self.instance(name)
        self.ok(node, "drbd_disconnect_net", [[DiskArg(d, inst) for d in self.disks(name)]])

    def ok(self, node: str, name: str, args: list[Any]) -> Any:
        result = self.call(node, name, args)
        self.assertTrue(result.success, (node, name, result.fail_msg))
        return result.payload

    # -- looking at the mirror -----------------------------------------------------------

    def disks(self, name: str = "inst1.test") -> list[Disk]:
        inst = self.instance(name)
        return [self.config.disks[u] for u in inst.disks]

    def status(self, node: str, name: str = "inst1.test") -> list[Any]:
        """``blockdev_find`` of each disk on ``node`` (None: not there)."""
        inst = self.instance(name)
        return [self.ok(node, "blockdev_find", [DiskArg(d, inst)]) for d in self.disks(name)]

    def assert_mirror_healthy(self, name: str = "inst1.test") -> None:
        """Both nodes have every disk, connected and in sync (not degraded, local disk
        okay), and the node that does not run the instance is not its primary."""
        inst = self.instance(name)
        for node_uuid in self.disks(name)[0].nodes:
            node = self.config.nodes[node_uuid].name
            for status in self.status(node, name):
                self.assertIsNotNone(status, node)
                self.assertFalse(status["is_degraded"], (node, status))
                self.assertEqual(status["ldisk_status"], storagetypes.LDS_OKAY, node)
        secondary = [u for u in self.disks(name)[0].nodes if u != inst.primary_node]
        self.assertEqual(len(secondary), 1)
        for disk in self.disks(name):
            self.assertEqual(self.role(self.config.nodes[secondary[0]].name, disk),
                             drbdstate.SECONDARY)

    def role(self, node: str, disk: Disk) -> str | None:
        """The device's role on ``node`` as the node's record says it."""
        minor = disk.logical_id[3] if disk.logical_id[0] == self.node_uuid(node) \
            else disk.logical_id[4]
        state = drbdstate.load(self.net.paths(node).run_dir, minor)
        return None if state is None else state.role
