"""Cluster verify's orphan volumes (Ganeti's _VerifyOrphanVolumes) and our orphan
files, on a master whose node RPC reaches in-process node daemons with the fake
``lvm`` program: volumes of the cluster's volume group that no instance disk
owns and no ``reserved_lvs`` pattern matches whole are ENODEORPHANLV warnings;
a node whose LV data is missing, whose volume group is missing or smaller than
MIN_VG_SIZE is ENODELVM (the first skipped); files in the file
storage directory that no file disk owns are warnings too (ours)."""

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
class OrphansTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.lvm = FakeLvm.install(self, vgs={"xenvg": {"size": 20480, "pvs": ["/dev/sdb"]},
                                              "other": {"size": 1024, "pvs": ["/dev/sdc"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.master, self.net = master_with_nodes(self, 1)
        enable_lvm(self.master, ["plain", "file", "diskless"])
        self.change(lambda cfg: cfg.cluster.ipolicy.__setitem__(
            "disk-templates", ["plain", "file", "diskless"]))
        self.root = self.net.paths("node1.test").root
        for name, template in (("web1.test", "plain"), ("web2.test", "file")):
            self.run_ok({"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name,
                         "mode": "create", "disks": [{"size": 1024}], "nics": [{}],
                         "pnode": "node1.test", "os_type": "busybox+default",
                         "disk_template": template, "hypervisor": "fake",
                         "no_install": True, "name_check": False, "ip_check": False,
                         "start": False})

    def change(self, fn: Any) -> None:
        self.assertIsNone(self.master.run_until(self.master.daemon.config_writer.update(fn)))

    def run_ok(self, op: dict[str, Any]) -> Any:
        status, results, log = self.master.finish(self.master.submit(op))
        self.assertEqual(status, "success", (op["OP_ID"], results, log))
        return results[0], log

    def verify(self) -> tuple[bool, list[str]]:
        group = next(iter(self.master.config.nodegroups.values())).name
        result, log = self.run_ok({"OP_ID": "OP_CLUSTER_VERIFY_GROUP", "group_name": group,
                                   "error_codes": True, "skip_checks": ["nplusone_mem"]})
        return result, [line for line in log if "ENODEORPHANLV" in line or "ENODELVM" in line]

    def add_lv(self, name: str) -> None:
        state = self.lvm.state
        vg = name.split("/")[0]
        state["lvs"][name] = {"vg": vg, "size": 4, "pvs": [state["vgs"][vg]["pvs"][0]],
                              "tags": [], "active": False}
        self.lvm.state = state

    def test_volumes_of_instances_are_known(self):
        self.assertEqual(self.verify()[1], [])

    def test_unknown_volumes_are_warnings_unless_reserved(self):
        before, _ = self.verify()  # the in-process cluster has other findings
        for name in ("xenvg/stray", "xenvg/keep-me", "xenvg/stray2", "other/not-ours"):
            self.add_lv(name)
        # a reserved pattern matches the whole name: "xenvg/stra" reserves no "xenvg/stray"
        self.change(lambda cfg: setattr(cfg.cluster, "reserved_lvs",
                                        ["xenvg/keep-.*", "xenvg/stra", "[bad"]))
        ok, lines = self.verify()
        self.assertEqual(ok, before)  # warnings only
        self.assertEqual([line.split(" - ", 1)[-1] for line in lines], [
            "WARNING:ENODEORPHANLV:node:node1.test:volume xenvg/stray is unknown",
            "WARNING:ENODEORPHANLV:node:node1.test:volume xenvg/stray2 is unknown"])

    def test_volume_of_a_removed_instance_becomes_unknown(self):
        inst = self.master.config.instance_by_name("web1.test")
        [disk] = [self.master.config.disks[u] for u in inst.disks]
        volume = "/".join(disk.logical_id)

        def forget(cfg):
            del cfg.instances[inst.uuid]
            del cfg.disks[disk.uuid]
        self.change(forget)
        self.assertEqual(self.verify()[1], [
            f"  - WARNING:ENODEORPHANLV:node:node1.test:volume {volume} is unknown"])

    def test_missing_lv_data_is_enodelvm_and_skips_the_node(self):
        self.add_lv("xenvg/stray")
        self.lvm.fail("lvs", "  Volume group xenvg not found")
        lines = self.verify()[1]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("ERROR:ENODELVM:node:node1.test:LVM problem on node: Failed to list "
                      "logical volumes: ", lines[0])
        self.assertIn("Volume group xenvg not found", lines[0])

    def test_volume_group_missing_or_too_small_is_enodelvm(self):
        """Ganeti's NV_VGLIST: the cluster's group exists with MIN_VG_SIZE MiB at least."""
        def resize(size):
            state = self.lvm.state
            state["vgs"]["xenvg"]["size"] = size
            self.lvm.state = state
        resize(20479)
        self.assertEqual(self.verify()[1], [
            "  - ERROR:ENODELVM:node:node1.test:volume group 'xenvg' too small "
            "(20480 MiB required, 20479 MiB found)"])
        resize(20480)
        self.assertEqual(self.verify()[1], [])
        self.change(lambda cfg: setattr(cfg.cluster, "volume_group_name", "nosuch"))
        self.assertEqual(self.verify()[1][:1], [
            "  - ERROR:ENODELVM:node:node1.test:volume group 'nosuch' missing"])
        self.lvm.fail("vgs", "  broken")
        self.assertEqual(self.verify()[1][:1], [
            "  - ERROR:ENODELVM:node:node1.test:unable to check volume groups"])

    def test_no_volume_group_no_lvm_check(self):
        self.add_lv("xenvg/stray")
        self.lvm.fail("lvs", "must not be called")
        self.change(lambda cfg: setattr(cfg.cluster, "volume_group_name", None))
        self.assertEqual(self.verify()[1], [])

    def test_unknown_files_in_the_file_storage_directory(self):
        inst = self.master.config.instance_by_name("web2.test")
        [disk] = [self.master.config.disks[u] for u in inst.disks]
        self.assertTrue(os.path.exists(self.root + disk.logical_id[1]))
        before, _ = self.verify()
        for rel in ("web2.test/stray.img", "gone.test/disk0", "top-level"):
            path = os.path.join(self.root + FS, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x")
        ok, lines = self.verify()
        self.assertEqual(ok, before)
        self.assertEqual([line.split(" - ", 1)[-1] for line in lines], [
            f"WARNING:ENODEORPHANLV:node:node1.test:file {FS}/gone.test/disk0 is unknown",
            f"WARNING:ENODEORPHANLV:node:node1.test:file {FS}/top-level is unknown",
            f"WARNING:ENODEORPHANLV:node:node1.test:file {FS}/web2.test/stray.img is "
            "unknown"])
