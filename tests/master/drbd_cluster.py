"""A master with three in-process node daemons for the drbd template's tests: each node
has its own fake ``lvm`` (volume group ``xenvg``, so both ends of a mirror use the
same volume names, as Ganeti's do) and the nodes' mirrors listen and connect over an
in-memory network on the master's fake clock (tests/fakes/looptcp.py)."""

from __future__ import annotations

import os
from typing import Any

from ganeti.core import constants as c
from ganeti.noded.bdev import lvm
from tests.fakes.allocators import InlineAllocators, builtin
from tests.fakes.configs import small_config
from tests.fakes.fakelvm import FakeLvm
from tests.fakes.looptcp import LoopTCP
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet
from tests.master.test_lu_instance import InstanceCase

NODES = ("node1.test", "node2.test", "node3.test")
VG_SIZE = 4096


class LvmPerNode(FakeNodeNet):
    """The fake node network where each node's ``lvm`` keeps its own volumes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lvms: dict[str, FakeLvm] = {}

    async def _one(self, target: Any, call: Any, args: list[Any]) -> Any:
        fake = self.lvms.get(target.name)
        if fake is not None:  # the node's programs see its own volume groups
            os.environ["FAKE_LVM_STATE"] = fake.state_file
        return await super()._one(target, call, args)


def drbd_op(name: str = "inst1.test", **params: Any) -> dict[str, Any]:
    """OP_INSTANCE_CREATE of a drbd instance on node1 (primary) and node2."""
    op = {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
          "disk_template": "drbd", "disks": [{"size": 256}], "nics": [{}],
          "pnode": "node1.test", "snode": "node2.test", "os_type": "busybox",
          "no_install": True, "start": False, "name_check": False, "ip_check": False,
          "beparams": {"maxmem": 128, "minmem": 128}, "ignore_ipolicy": True}
    op.update(params)
    return op


class DrbdCase(InstanceCase):
    """Three nodes in the cluster, drbd and plain enabled, ``xenvg`` on each node."""

    def setUp(self) -> None:
        tmp = self.mktemp()
        os.makedirs(tmp)
        cfg = small_config(enabled_hypervisors=[c.HT_FAKE], vg_name="xenvg",
                           enabled_disk_templates=[c.DT_DRBD8, c.DT_PLAIN, c.DT_DISKLESS])
        self.patch(lvm, "dm_available", lambda: False)
        self.lvms = {}
        for name in NODES:
            path = os.path.join(tmp, "lvm", name)
            os.makedirs(path)
            self.lvms[name] = FakeLvm.create(path, vgs={"xenvg": {"size": VG_SIZE,
                                                                  "pvs": ["/dev/sdb"]}})
        self.patch(os, "environ", self.lvms[NODES[0]].env())
        self.net = LvmPerNode(os.path.join(tmp, "nodes"), None)
        self.net.lvms = self.lvms
        self.allocators = InlineAllocators({"ganeti-place": builtin},
                                           search_path=("/usr/lib/ganeti/iallocators",))
        self.master = InProcessMaster(tmp, cfg=cfg, rpc=self.net, allocators=self.allocators)
        self.addCleanup(self.master.stop)
        self.tcp = self.net.tcp = LoopTCP(self.master.reactor)
        self.net.clock = self.master.reactor
        self.net.config = lambda: self.master.config
        self.net.add("node1.test", "127.0.1.1", paths=self.master.paths)
        self.join(2, 3)

    def run_logged(self, *ops: dict[str, Any]) -> tuple[str, Any, list[str]]:
        status, results, log = self.master.finish(self.master.submit(*ops))
        return status, results[-1], log

    def volumes(self, node: str) -> dict[str, Any]:
        """The node's logical volumes (``vg/lv`` -> its record)."""
        return self.lvms[node].state["lvs"]

    def disks(self, name: str = "inst1.test") -> list[Any]:
        cfg = self.config
        return [cfg.disks[u] for u in cfg.instance_by_name(name).disks]

    def node_call(self, node: str, call: str, args: list[Any]) -> Any:
        """A node call made straight to a node (as a test's hand on the machine)."""
        cfg = self.config
        target = cfg.node_by_name(node)
        return self.master.run_until(self.net.call_one(target, call, args))

    def find(self, node: str, name: str = "inst1.test", idx: int = 0) -> Any:
        """blockdev_find of an instance's disk on a node (its status dict or None)."""
        from ganeti.core.rpcdefs.disks import DiskArg
        inst = self.instance(name)
        result = self.node_call(node, "blockdev_find", [DiskArg(self.disks(name)[idx], inst)])
        self.assertTrue(result.success, result.fail_msg)
        return result.payload
