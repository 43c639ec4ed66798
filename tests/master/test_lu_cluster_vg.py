"""The cluster's volume group (``vg_name`` of OP_CLUSTER_SET_PARAMS) through the real
queue and in-process node daemons, as Ganeti's LUClusterSetParams checks it: a
name given while lvm-based templates are enabled must be a volume group of at
least MIN_VG_SIZE MiB on every vm_capable node (``vg_list``); "" disables lvm
storage unless an lvm-based template is enabled or a disk uses one; enabling
plain needs a volume group.  A refusal changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors as c
from ganeti.core.params_cluster import MIN_VG_SIZE, check_vg_size
from ganeti.noded.backend.context import RPCFail
from ganeti.noded.bdev import lvm
from tests.fakes.fakelvm import FakeLvm, enable_lvm
from tests.fakes.nodes import master_with_nodes

BIG = MIN_VG_SIZE + 1024
WITH_DRBD = ["plain", "drbd", "file", "diskless"]


def modify(**params: Any) -> dict[str, Any]:
    return {"OP_ID": "OP_CLUSTER_SET_PARAMS", **params}


class VgCase(SynchronousTestCase):
    """node1 (master), node2 and node3 in the cluster; each node's ``vg_list`` answer
    comes from ``self.vgs`` (a test changes it per node)."""

    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, 3)
        for k in (2, 3):
            self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                         "primary_ip": f"127.0.1.{k}"})
        self.vgs: dict[str, dict[str, int] | None] = {
            f"node{k}.test": {"xenvg": BIG, "fastvg": BIG} for k in (1, 2, 3)}
        self.net.handlers["vg_list"] = self.vg_list
        self.net.contacted.clear()

    def vg_list(self, ctx: Any) -> dict[str, int]:
        vgs = self.vgs[ctx.paths.hostname]
        if vgs is None:
            raise RPCFail("Failed to list volume groups: lvm not found")
        return dict(vgs)

    @property
    def cluster(self) -> Any:
        return self.master.config.cluster

    def change(self, fn: Any) -> None:
        self.assertIsNone(self.master.run_until(self.master.daemon.config_writer.update(fn)))

    def run_ok(self, op: dict[str, Any]) -> list[str]:
        status, results, log = self.master.finish(self.master.submit(op))
        self.assertEqual(status, "success", (results, log))
        return log

    def refused(self, op: dict[str, Any], needle: str, code: str) -> str:
        serial = self.master.config.serial_no
        status, results, _log = self.master.finish(self.master.submit(op))
        self.assertEqual(status, "error", results)
        cls, args = results[-1]
        self.assertEqual((cls, args[1]), ("OpPrereqError", code), args)
        self.assertIn(needle, args[0])
        self.assertEqual(self.master.config.serial_no, serial)  # nothing changed
        return str(args[0])

    def asked(self) -> list[str]:
        return sorted(n for n, call in self.net.contacted if call == "vg_list")


class SetVgTest(VgCase):
    def setUp(self) -> None:
        super().setUp()
        enable_lvm(self.master, ["plain", "file", "diskless"], vg="xenvg")

    def test_a_volume_group_every_node_has(self) -> None:
        log = self.run_ok(modify(vg_name="fastvg"))
        self.assertEqual(self.cluster.volume_group_name, "fastvg")
        self.assertEqual(self.asked(), ["node1.test", "node2.test", "node3.test"])
        self.assertEqual(log, [])

    def test_missing_on_one_node(self) -> None:
        del self.vgs["node2.test"]["fastvg"]
        self.refused(modify(vg_name="fastvg"),
                     "Error on node 'node2.test': volume group 'fastvg' missing",
                     c.ECODE_ENVIRON)
        self.assertEqual(self.cluster.volume_group_name, "xenvg")

    def test_too_small(self) -> None:
        self.vgs["node3.test"]["fastvg"] = 1024
        message = self.refused(modify(vg_name="fastvg", candidate_pool_size=2),
                               "Error on node 'node3.test'", c.ECODE_ENVIRON)
        self.assertEqual(message, "Error on node 'node3.test': volume group 'fastvg' too "
                                  f"small ({MIN_VG_SIZE} MiB required, 1024 MiB found)")
        self.assertEqual((self.cluster.volume_group_name, self.cluster.candidate_pool_size),
                         ("xenvg", 10))

    def test_nodes_that_do_not_answer_are_skipped_with_a_warning(self) -> None:
        self.vgs["node2.test"] = None
        def offline(cfg: Any) -> None:
            node = cfg.node_by_name("node3.test")
            node.master_candidate, node.offline = False, True
        self.change(offline)
        log = self.run_ok(modify(vg_name="fastvg"))
        self.assertEqual(self.cluster.volume_group_name, "fastvg")
        warnings = [line for line in log if "Error while gathering data" in line]
        self.assertEqual(len(warnings), 2, log)
        self.assertIn("node node2.test (ignoring node): Failed to list volume groups: lvm "
                      "not found", warnings[0])
        self.assertIn("node node3.test (ignoring node)", warnings[1])
        self.assertNotIn(("node3.test", "vg_list"), self.net.contacted)  # offline

    def test_nodes_that_are_not_vm_capable_are_not_asked(self) -> None:
        self.change(lambda cfg: setattr(cfg.node_by_name("node3.test"), "vm_capable", False))
        del self.vgs["node3.test"]["fastvg"]
        self.run_ok(modify(vg_name="fastvg"))
        self.assertEqual(self.asked(), ["node1.test", "node2.test"])

    def test_same_name_changes_nothing(self) -> None:
        log = self.run_ok(modify(vg_name="xenvg"))
        self.assertIn("Cluster LVM configuration already in desired state, not changing", log)
        self.assertEqual(self.cluster.volume_group_name, "xenvg")

    def test_dry_run_checks_but_changes_nothing(self) -> None:
        serial = self.master.config.serial_no
        self.run_ok(modify(vg_name="fastvg", dry_run=True))
        self.assertEqual((self.cluster.volume_group_name, self.master.config.serial_no),
                         ("xenvg", serial))
        self.assertEqual(len(self.asked()), 3)
        del self.vgs["node1.test"]["fastvg"]
        self.refused(modify(vg_name="fastvg", dry_run=True), "volume group 'fastvg' missing",
                     c.ECODE_ENVIRON)

    def test_disabling_while_plain_is_enabled(self) -> None:
        self.refused(modify(vg_name=""), "Cannot unset volume group if lvm-based disk "
                     "templates are or get enabled.", c.ECODE_INVAL)
        self.refused(modify(vg_name="", enabled_disk_templates=["diskless", "file", "plain"]),
                     "Cannot unset volume group", c.ECODE_INVAL)
        self.assertEqual(self.cluster.volume_group_name, "xenvg")
        self.assertEqual(self.asked(), [])

    def test_disabling_with_plain(self) -> None:
        self.run_ok(modify(vg_name="", enabled_disk_templates=["file", "diskless"]))
        self.assertIsNone(self.cluster.volume_group_name)
        self.assertEqual(self.cluster.enabled_disk_templates, ["file", "diskless"])
        self.assertEqual(self.asked(), [])

    def test_enabling_drbd_checks_the_helper_on_every_node(self) -> None:
        # Ganeti's _CheckDrbdHelper: the configured helper, asked of each vm_capable node
        self.change(lambda cfg: setattr(cfg.cluster, "drbd_usermode_helper", "/bin/true"))
        self.run_ok(modify(enabled_disk_templates=WITH_DRBD))
        self.assertEqual(self.cluster.enabled_disk_templates, WITH_DRBD)
        self.assertEqual(sorted(n for n, call in self.net.contacted if call == "drbd_helper"),
                         ["node1.test", "node2.test", "node3.test"])

    def test_drbd_helper_refusals(self) -> None:
        self.change(lambda cfg: setattr(cfg.cluster, "drbd_usermode_helper", None))
        self.refused(modify(enabled_disk_templates=WITH_DRBD),
                     "Cannot enable DRBD without a DRBD usermode helper set.", c.ECODE_STATE)
        # a helper the nodes do not report (the emulated module's is /bin/true)
        self.refused(modify(enabled_disk_templates=WITH_DRBD,
                            drbd_helper="/usr/sbin/drbd-helper"),
                     "Error on node 'node1.test': drbd helper is /bin/true", c.ECODE_ENVIRON)
        real = self.net.handlers["drbd_helper"]
        self.net.handlers["drbd_helper"] = self.no_helper
        self.refused(modify(enabled_disk_templates=WITH_DRBD, drbd_helper="/bin/true"),
                     "Error checking drbd helper on node 'node1.test': Can't read DRBD "
                     "usermode helper", c.ECODE_ENVIRON)
        self.net.handlers["drbd_helper"] = real
        self.run_ok(modify(enabled_disk_templates=WITH_DRBD, drbd_helper="/bin/true"))
        self.assertEqual(self.cluster.drbd_usermode_helper, "/bin/true")
        self.refused(modify(drbd_helper=""), "Cannot disable drbd helper while DRBD is "
                     "enabled.", c.ECODE_STATE)

    def no_helper(self, ctx: Any) -> str:
        raise RPCFail("Can't read DRBD usermode helper")

    def test_helper_without_drbd_is_set_with_a_note(self) -> None:
        log = self.run_ok(modify(drbd_helper="/bin/true"))
        self.assertIn("Note that you specified a drbd user helper, but did not enable the "
                      "drbd disk template.", log)
        self.assertEqual(self.cluster.drbd_usermode_helper, "/bin/true")
        log = self.run_ok(modify(drbd_helper="/bin/true"))
        self.assertIn("Cluster DRBD helper already in desired state, not changing", log)
        self.run_ok(modify(drbd_helper=""))  # drbd is not enabled: unset
        self.assertIsNone(self.cluster.drbd_usermode_helper)


class EnableLvmTest(VgCase):
    """A cluster without lvm (file and diskless, no volume group)."""

    def test_cluster_starts_without_a_volume_group(self) -> None:
        self.assertIsNone(self.cluster.volume_group_name)
        self.assertNotIn("plain", self.cluster.enabled_disk_templates)

    def test_enabling_plain_needs_a_volume_group(self) -> None:
        self.refused(modify(enabled_disk_templates=["diskless", "file", "plain"]),
                     "Please specify a volume group when enabling lvm-based "
                     "disk-templates.", c.ECODE_INVAL)

    def test_enabling_plain_with_a_volume_group(self) -> None:
        self.vgs["node2.test"] = {}
        self.refused(modify(enabled_disk_templates=["diskless", "file", "plain"], vg_name="xenvg"),
                     "Error on node 'node2.test': volume group 'xenvg' missing",
                     c.ECODE_ENVIRON)
        self.assertEqual(self.cluster.enabled_disk_templates, ["diskless", "file"])
        self.vgs["node2.test"] = {"xenvg": BIG}
        self.run_ok(modify(enabled_disk_templates=["diskless", "file", "plain"], vg_name="xenvg"))
        self.assertEqual(self.cluster.volume_group_name, "xenvg")
        self.assertEqual(self.cluster.enabled_disk_templates, ["diskless", "file", "plain"])

    def test_enabling_plain_checks_the_configured_volume_group(self) -> None:
        self.run_ok(modify(vg_name="fastvg"))  # lvm not enabled: no node check
        self.assertEqual((self.cluster.volume_group_name, self.asked()), ("fastvg", []))
        self.vgs["node3.test"]["fastvg"] = 100
        self.refused(modify(enabled_disk_templates=["diskless", "file", "plain"]),
                     "Error on node 'node3.test': volume group 'fastvg' too small",
                     c.ECODE_ENVIRON)
        self.vgs["node3.test"]["fastvg"] = MIN_VG_SIZE
        self.run_ok(modify(enabled_disk_templates=["diskless", "file", "plain"]))
        self.assertIn("plain", self.cluster.enabled_disk_templates)

    def test_disabling_when_nothing_uses_lvm(self) -> None:
        self.run_ok(modify(vg_name="xenvg"))
        self.run_ok(modify(vg_name=""))
        self.assertIsNone(self.cluster.volume_group_name)
        self.assertEqual(self.asked(), [])

    def test_bad_value_type(self) -> None:
        err = self.assertRaises(c.RequestError, self.master.submit, modify(vg_name=5))
        self.assertIn("Can't parse value for 'vg_name': expected a string", str(err))


@pytest.mark.subprocess
class PlainInstancesTest(SynchronousTestCase):
    """With the real ``vg_list`` handler on the fake lvm program."""

    def setUp(self) -> None:
        self.lvm = FakeLvm.install(self, vgs={"xenvg": {"size": BIG, "pvs": ["/dev/sdb"]},
                                              "tiny": {"size": 2048, "pvs": ["/dev/sdc"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.master, self.net = master_with_nodes(self, 1)
        enable_lvm(self.master, ["plain", "file", "diskless"])
        self.change(lambda cfg: cfg.cluster.ipolicy.__setitem__(
            "disk-templates", ["plain", "file", "diskless"]))

    def change(self, fn: Any) -> None:
        self.assertIsNone(self.master.run_until(self.master.daemon.config_writer.update(fn)))

    def finish(self, op: dict[str, Any]) -> tuple[str, list[Any]]:
        status, results, _log = self.master.finish(self.master.submit(op))
        return status, results

    def test_the_nodes_real_volume_groups(self) -> None:
        status, results = self.finish(modify(vg_name="tiny"))
        self.assertEqual(status, "error")
        self.assertEqual(results[-1][1], [
            "Error on node 'node1.test': volume group 'tiny' too small "
            f"({MIN_VG_SIZE} MiB required, 2048 MiB found)", c.ECODE_ENVIRON])
        self.assertEqual(self.finish(modify(vg_name="xenvg"))[0], "success")

    def test_disabling_while_plain_instances_exist(self) -> None:
        status, results = self.finish({
            "OP_ID": "OP_INSTANCE_CREATE", "instance_name": "web1.test", "mode": "create",
            "disks": [{"size": 1024}], "nics": [{}], "pnode": "node1.test",
            "os_type": "busybox+default", "disk_template": "plain", "hypervisor": "fake",
            "no_install": True, "name_check": False, "ip_check": False, "start": False})
        self.assertEqual(status, "success", results)
        # (a config whose plain template was switched off behind the master's back)
        self.change(lambda cfg: setattr(cfg.cluster, "enabled_disk_templates",
                                        ["file", "diskless"]))
        serial = self.master.config.serial_no
        status, results = self.finish(modify(vg_name=""))
        self.assertEqual(status, "error")
        self.assertEqual(results[-1][1], ["Cannot disable lvm storage while lvm-based "
                                          "instances exist", c.ECODE_INVAL])
        self.assertEqual((self.master.config.cluster.volume_group_name,
                          self.master.config.serial_no), ("xenvg", serial))


class CheckVgSizeTest(SynchronousTestCase):
    def test_ganeti_wording(self) -> None:
        vgs = {"xenvg": MIN_VG_SIZE, "small": 100.5}
        self.assertIsNone(check_vg_size(vgs, "xenvg"))
        self.assertEqual(check_vg_size(vgs, "nope"), "volume group 'nope' missing")
        self.assertEqual(check_vg_size(vgs, "small"),
                         "volume group 'small' too small (20480 MiB required, 100 MiB found)")
        self.assertEqual(MIN_VG_SIZE, 20480)
