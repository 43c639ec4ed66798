"""Disk template conversion (OP_INSTANCE_SET_PARAMS ``disk_template``) through the job
queue, on a master whose node RPC reaches an in-process node daemon: real file
disks below the node's root (their bytes compared before and after), volumes
through the fake ``lvm``; refusals and a failing copy change nothing."""

from __future__ import annotations

import os
from typing import Any

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.bdev import convert, lvm
from tests.fakes.fakelvm import FakeLvm, enable_lvm
from tests.fakes.nodes import master_with_nodes

FS = "/srv/ganeti/file-storage"
SHARED = "/srv/ganeti/shared-file-storage"
MIB = 1024 * 1024
TEMPLATES = ["plain", "file", "sharedfile", "diskless"]


@pytest.mark.subprocess
class ConvertTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.lvm = FakeLvm.install(self, vgs={"xenvg": {"size": 64, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.master, self.net = master_with_nodes(self, 1)
        enable_lvm(self.master, TEMPLATES)

        def policy(cfg):  # small disks: their bytes are read and compared
            cfg.cluster.ipolicy["disk-templates"] = list(TEMPLATES)
            for minmax in cfg.cluster.ipolicy["minmax"]:
                minmax["min"]["disk-size"] = 1
        self.change_config(policy)
        self.root = self.net.paths("node1.test").root
        self.create("conv1.test", "file")
        self.pattern = os.urandom(4096)
        self.write_pattern(self.paths("conv1.test")[0])

    # -- helpers ---------------------------------------------------------------------

    def change_config(self, fn: Any) -> None:
        self.assertIsNone(self.master.run_until(self.master.daemon.config_writer.update(fn)))

    def run_job(self, op: dict[str, Any]) -> tuple[str, Any, list[str]]:
        status, results, log = self.master.finish(self.master.submit(op))
        return status, results[0], log

    def run_ok(self, op: dict[str, Any]) -> tuple[Any, list[str]]:
        status, result, log = self.run_job(op)
        self.assertEqual(status, "success", (op, result, log))
        return result, log

    def create(self, name: str, template: str) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
                     "disks": [{"size": 4, "name": "root"}, {"size": 8}] if template !=
                     "diskless" else [], "nics": [{}], "pnode": "node1.test",
                     "os_type": "busybox+default", "disk_template": template,
                     "hypervisor": "fake", "no_install": True, "name_check": False,
                     "ip_check": False, "start": False})

    def convert(self, template: str, name: str = "conv1.test", **extra: Any
                ) -> dict[str, Any]:
        return {"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": name,
                "disk_template": template, **extra}

    def disks(self, name: str = "conv1.test") -> list[Any]:
        cfg = self.master.config
        return [cfg.disks[u] for u in cfg.instance_by_name(name).disks]

    def paths(self, name: str = "conv1.test") -> list[str]:
        return [self.root + d.logical_id[1] for d in self.disks(name)]

    def write_pattern(self, path: str) -> None:
        with open(path, "r+b") as f:
            f.write(self.pattern)
            f.seek(3 * MIB)
            f.write(self.pattern)

    def read_pattern(self, path: str) -> tuple[bytes, bytes]:
        with open(path, "rb") as f:
            head = f.read(len(self.pattern))
            f.seek(3 * MIB)
            return head, f.read(len(self.pattern))

    def files_below(self, base: str) -> list[str]:
        out = []
        for dirpath, _dirs, names in os.walk(self.root + base):
            out.extend(os.path.join(dirpath, n)[len(self.root):] for n in names)
        return sorted(out)

    def snapshot(self) -> Any:
        cfg = self.master.config
        inst = cfg.instance_by_name("conv1.test")
        return (inst.to_dict(), sorted(d.to_dict().items().__repr__() for d in self.disks()),
                self.files_below(FS), self.files_below(SHARED), sorted(self.lvm.state["lvs"]))

    def refused(self, op: dict[str, Any], text: str, code: str) -> None:
        before = self.snapshot()
        status, result, _log = self.run_job(op)
        self.assertEqual(status, "error", result)
        cls, args = result
        self.assertEqual(cls, "OpPrereqError", args)
        self.assertIn(text, args[0])
        self.assertEqual(args[1], code)
        self.assertEqual(self.snapshot(), before)

    # -- conversions -----------------------------------------------------------------

    def test_file_to_sharedfile_and_back_keeps_the_data(self):
        old = self.disks()
        result, log = self.run_ok(self.convert("sharedfile"))
        self.assertEqual(result, [["disk_template", "sharedfile"]])
        new = self.disks()
        self.assertEqual([d.dev_type for d in new], ["sharedfile", "sharedfile"])
        self.assertEqual([d.size for d in new], [4, 8])
        self.assertEqual([d.name for d in new], ["root", None])
        self.assertEqual([d.iv_name for d in new], ["disk/0", "disk/1"])
        self.assertEqual([d.nodes for d in new], [[], []])
        self.assertTrue(all(d.logical_id[1].startswith(f"{SHARED}/conv1.test/") for d in new))
        self.assertFalse({d.uuid for d in old} & set(self.master.config.disks))
        inst = self.master.config.instance_by_name("conv1.test")
        self.assertEqual(inst.disk_template, "sharedfile")
        self.assertEqual(self.read_pattern(self.paths()[0]), (self.pattern, self.pattern))
        self.assertEqual([os.path.getsize(p) for p in self.paths()], [4 * MIB, 8 * MIB])
        self.assertEqual(self.files_below(FS), [])
        self.assertFalse(os.path.exists(self.root + FS + "/conv1.test"))
        for text in ("Converting disk template from 'file' to 'sharedfile'",
                     "Creating new empty disks of type 'sharedfile'...",
                     " - copying data from disk 0 (file), size 4M",
                     " - copying data from disk 1 (file), size 8M",
                     "Removing old block devices of type 'file'..."):
            self.assertIn(text, log)
        self.run_ok(self.convert("file"))
        self.assertEqual([d.dev_type for d in self.disks()], ["file", "file"])
        self.assertEqual(self.read_pattern(self.paths()[0]), (self.pattern, self.pattern))
        self.assertEqual(self.files_below(SHARED), [])

    def test_file_storage_dir_of_the_op(self):
        self.run_ok(self.convert("sharedfile", file_storage_dir="sub"))
        self.assertTrue(all(d.logical_id[1].startswith(f"{SHARED}/sub/conv1.test/")
                            for d in self.disks()))
        self.assertEqual(self.read_pattern(self.paths()[0]), (self.pattern, self.pattern))

    def test_file_to_plain_and_back(self):
        devices: dict[str, str] = {}
        real = convert.device_path

        async def device_path(ctx, disk):  # a file stands in for each volume's device
            if disk["dev_type"] != "plain":
                return await real(ctx, disk)
            path = devices.setdefault(disk["logical_id"][1],
                                      os.path.join(self.root, disk["logical_id"][1]))
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.truncate(disk["size"] * MIB)
            return path
        self.patch(convert, "device_path", device_path)
        self.run_ok(self.convert("plain"))
        disks = self.disks()
        self.assertEqual([d.dev_type for d in disks], ["plain", "plain"])
        self.assertEqual(sorted(self.lvm.state["lvs"]),
                         sorted(f"xenvg/{d.logical_id[1]}" for d in disks))
        self.assertEqual(self.read_pattern(devices[disks[0].logical_id[1]]),
                         (self.pattern, self.pattern))
        self.assertEqual(self.files_below(FS), [])
        self.run_ok(self.convert("file"))
        self.assertEqual(self.lvm.state["lvs"], {})
        self.assertEqual(self.read_pattern(self.paths()[0]), (self.pattern, self.pattern))

    def test_a_failing_copy_leaves_the_instance_as_it_was(self):
        self.patch(convert, "dd_program", lambda: "/bin/false")
        before = self.snapshot()
        status, result, log = self.run_job(self.convert("sharedfile"))
        self.assertEqual(status, "error")
        self.assertEqual(result[0], "OpExecError")
        self.assertIn("Error while converting the instance's template", result[1][0])
        self.assertIn("Some disks failed to copy", log)
        self.assertIn("Newly created disks removed successfully", log)
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.files_below(SHARED), [])
        self.assertFalse(os.path.exists(self.root + SHARED + "/conv1.test"))
        self.assertEqual(self.read_pattern(self.paths()[0]), (self.pattern, self.pattern))

    def test_volumes_without_a_device_fail_cleanly(self):
        # without device-mapper a new volume has no device to copy into
        before = self.snapshot()
        status, result, _log = self.run_job(self.convert("plain"))
        self.assertEqual((status, result[0]), ("error", "OpExecError"))
        self.assertIn("/dev/xenvg/", result[1][0])
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.lvm.state["lvs"], {})

    def test_dry_run_changes_nothing(self):
        before = self.snapshot()
        self.run_ok(self.convert("sharedfile", dry_run=True))
        self.assertEqual(self.snapshot(), before)

    # -- refusals --------------------------------------------------------------------

    def test_refusals_change_nothing(self):
        self.refused(self.convert("file"), "Instance already has disk template file",
                     "wrong_input")
        self.refused(self.convert("blockdev"),
                     "Conversion to the 'blockdev' disk template is not supported",
                     "wrong_input")
        self.refused(self.convert("diskless"),
                     "Conversion to the 'diskless' disk template is not supported",
                     "wrong_input")
        self.refused(self.convert("rbd"), "Disk template 'rbd' is not enabled for this "
                     "cluster (enabled templates: plain, file, sharedfile, diskless)",
                     "wrong_state")
        self.refused(self.convert("drbd", remote_node="node1.test"),
                     "Conversion from the 'file' to the 'drbd' disk template is not "
                     "supported yet (plain <-> drbd only)",
                     "wrong_input")
        self.refused(self.convert("sharedfile", disks=[["add", {"size": 4}]]),
                     "Disk template conversion and other disk changes not supported at "
                     "the same time", "wrong_input")
        self.refused(self.convert("sharedfile", file_storage_dir="../x"),
                     "may not contain '..'", "wrong_input")

    def test_not_enough_space_in_the_volume_group(self):
        state = self.lvm.state
        state["vgs"]["xenvg"]["size"] = 8
        self.lvm.state = state
        self.refused(self.convert("plain"), "Not enough disk space on target node "
                     "node1.test vg xenvg: required 12 MiB, available 8 MiB",
                     "insufficient_resources")

    def test_running_and_offline_instances_are_refused(self):
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "conv1.test"})
        self.refused(self.convert("sharedfile"), "Instance 'conv1.test' is marked to be up, "
                     "cannot change disk template", "wrong_state")

        def mark_down(cfg):  # the config says down, the node says running
            cfg.instance_by_name("conv1.test").admin_state = "down"
        self.change_config(mark_down)
        self.refused(self.convert("sharedfile"), "Instance conv1.test is running, cannot "
                     "change disk template", "wrong_state")

    def test_cluster_settings_are_checked(self):
        def no_shared_dir(cfg):
            cfg.cluster.shared_file_storage_dir = ""
        self.change_config(no_shared_dir)
        self.refused(self.convert("sharedfile"), "Cluster file storage dir for 'sharedfile' "
                     "storage type not defined", "wrong_state")

        def no_vg(cfg):
            cfg.cluster.volume_group_name = ""
        self.change_config(no_vg)
        self.refused(self.convert("plain"), "Disk template conversions to lvm-based "
                     "instances are not supported by the cluster", "wrong_state")

        def policy(cfg):
            cfg.cluster.ipolicy["disk-templates"] = ["file", "plain"]
        self.change_config(policy)
        self.change_config(lambda cfg: setattr(cfg.cluster, "shared_file_storage_dir",
                                               SHARED))
        self.refused(self.convert("sharedfile"), "Disk template 'sharedfile' in not allowed "
                     "(allowed templates: file, plain)", "wrong_state")

    def test_diskless_instances_cannot_be_converted(self):
        self.create("nodisk.test", "diskless")
        status, result, _log = self.run_job(self.convert("file", name="nodisk.test"))
        self.assertEqual(status, "error")
        self.assertEqual(result[1][:2], ["Conversion from the 'diskless' disk template is "
                                         "not supported", "wrong_input"])

    def test_exclusive_storage_allows_only_plain(self):
        def exclusive(cfg):
            for group in cfg.nodegroups.values():
                group.ndparams["exclusive_storage"] = True
        self.change_config(exclusive)
        self.refused(self.convert("sharedfile"), "Cannot convert disk template from file to "
                     "sharedfile when exclusive storage is enabled", "wrong_state")

    def test_a_secondary_node_is_ignored_with_a_warning(self):
        _result, log = self.run_ok(self.convert("sharedfile", remote_node="node1.test"))
        self.assertIn("Warning: Changing the disk template to a non-mirrored one, the "
                      "secondary node will be ignored", log)
        self.assertEqual([d.nodes for d in self.disks()], [[], []])

    def test_other_changes_of_the_same_opcode_apply_too(self):
        result, _log = self.run_ok(self.convert("sharedfile", beparams={"vcpus": 2}))
        self.assertIn(["disk_template", "sharedfile"], result)
        inst = self.master.config.instance_by_name("conv1.test")
        self.assertEqual((inst.disk_template, inst.beparams.get("vcpus")), ("sharedfile", 2))
