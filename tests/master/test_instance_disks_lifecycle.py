"""Instance disks through the instance units and the disk helpers, on a master whose
node RPC reaches in-process node daemons: plain volumes (the fake ``lvm``) and file
disks (real files below the node's root) are created, grown, activated, moved with
a rename and removed, and nothing is left behind."""

from __future__ import annotations

import os
from typing import Any

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.bdev import lvm
from tests.fakes.fakelvm import FakeLvm, enable_lvm
from tests.fakes.nodes import master_with_nodes

FS = "/srv/ganeti/file-storage"


@pytest.mark.subprocess
class DisksLifecycleTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.lvm = FakeLvm.install(self, vgs={"xenvg": {"size": 8192, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.master, self.net = master_with_nodes(self, 1)
        enable_lvm(self.master, ["plain", "file", "diskless"])

        def policy(cfg):
            cfg.cluster.ipolicy["disk-templates"] = ["plain", "file", "diskless"]
        self.assertIsNone(self.master.run_until(self.master.daemon.config_writer.update(policy)))
        self.root = self.net.paths("node1.test").root

    def run_ok(self, op: dict[str, Any]) -> Any:
        status, results, log = self.master.finish(self.master.submit(op))
        self.assertEqual(status, "success", (op["OP_ID"], results, log))
        return results[0]

    def create(self, name: str, template: str) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
                     "disks": [{"size": 1024}, {"size": 2048}], "nics": [{}],
                     "pnode": "node1.test", "os_type": "busybox+default",
                     "disk_template": template, "hypervisor": "fake", "no_install": True,
                     "name_check": False, "ip_check": False, "start": False})

    def disks(self, name: str) -> list[Any]:
        cfg = self.master.config
        inst = cfg.instance_by_name(name)
        return [cfg.disks[u] for u in inst.disks]

    def lifecycle(self, name: str) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_GROW_DISK", "instance_name": name, "disk": 0,
                     "amount": 128})
        self.assertEqual([d.size for d in self.disks(name)], [1152, 2048])
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": name})
        self.run_ok({"OP_ID": "OP_INSTANCE_SHUTDOWN", "instance_name": name})
        devices = self.run_ok({"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS", "instance_name": name})
        self.assertEqual([d[:2] for d in devices],
                         [["node1.test", "disk/0"], ["node1.test", "disk/1"]])
        self.run_ok({"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS", "instance_name": name})
        self.run_ok({"OP_ID": "OP_INSTANCE_RENAME", "instance_name": name,
                     "new_name": "r" + name, "name_check": False, "ip_check": False})
        self.run_ok({"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": "r" + name})

    def test_plain(self):
        self.create("web1.test", "plain")
        volumes = self.lvm.state["lvs"]
        self.assertEqual(sorted(volumes), sorted(f"xenvg/{d.logical_id[1]}"
                                                 for d in self.disks("web1.test")))
        self.assertEqual(sorted(v["size"] for v in volumes.values()), [1024, 2048])
        self.lifecycle("web1.test")
        self.assertEqual(self.lvm.state["lvs"], {})

    def test_file(self):
        self.create("web2.test", "file")
        paths = [d.logical_id[1] for d in self.disks("web2.test")]
        self.assertEqual({os.path.dirname(p) for p in paths}, {f"{FS}/web2.test"})
        self.assertEqual([os.path.getsize(self.root + p) for p in paths],
                         [1024 << 20, 2048 << 20])
        self.lifecycle("web2.test")
        self.assertEqual(os.listdir(self.root + FS), [])

    def test_group_verify_disks_finds_missing_volumes(self):
        self.create("web3.test", "plain")
        group = next(iter(self.master.config.nodegroups.values())).name
        verify = {"OP_ID": "OP_GROUP_VERIFY_DISKS", "group_name": group}
        self.assertEqual(self.run_ok(verify), [{}, [], {}])  # disks not active: not checked
        state = self.lvm.state
        gone = sorted(state["lvs"])[0]
        del state["lvs"][gone]
        self.lvm.state = state
        self.assertEqual(self.run_ok(verify), [{}, [], {}])
        # only the missing disk: recreating one that exists fails, as in Ganeti
        missing = [i for i, d in enumerate(self.disks("web3.test"))
                   if f"xenvg/{d.logical_id[1]}" == gone]
        self.run_ok({"OP_ID": "OP_INSTANCE_RECREATE_DISKS", "instance_name": "web3.test",
                     "disks": missing})
        self.run_ok({"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS", "instance_name": "web3.test"})
        self.assertEqual(self.run_ok(verify), [{}, [], {}])
        state = self.lvm.state
        gone = sorted(state["lvs"])[0]
        del state["lvs"][gone]  # a volume vanished behind the cluster's back
        self.lvm.state = state
        node = self.master.config.node_by_name("node1.test").uuid
        self.assertEqual(self.run_ok(verify), [{}, [], {"web3.test": [[node, gone]]}])
