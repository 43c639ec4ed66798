"""Instance units held to Ganeti 3.0's rules where ours used to differ (issue 34):
``modify --online``/``--offline``, NICs and disks of a running instance without
hotplug, ``--new-primary``, ``reinstall`` with an ``os-image`` OS parameter,
``recreate-disks`` on other nodes and the export of a diskless instance.  Through
the real queue and processor and in-process node daemons (two nodes)."""

from __future__ import annotations

import os
from typing import Any

from ganeti.core import constants as c
from tests.master.test_lu_backup import BackupCase
from tests.master.test_lu_instance import create_op
from tests.noded.test_bdev_image import ImageServer
from tests.noded.test_osdefs import make_os

MODIFY = "OP_INSTANCE_SET_PARAMS"


class RulesCase(BackupCase):
    """Two nodes; ``inst1.test`` a stopped file instance with one 4 MiB disk (dumpos)
    on node1, ``inst2.test`` a stopped diskless one."""

    def setUp(self) -> None:
        super().setUp()
        self.make_instance()
        self.run_ok(create_op("inst2.test", os_type="dumpos+default"))

    def op(self, op_id: str, name: str = "inst1.test", **params: Any) -> dict[str, Any]:
        return {"OP_ID": op_id, "instance_name": name, **params}

    def start(self, name: str = "inst1.test") -> None:
        self.run_ok(self.op("OP_INSTANCE_STARTUP", name))

    def node_uuid(self, name: str) -> str:
        return self.config.node_by_name(name).uuid


class OnlineOfflineTest(RulesCase):
    def test_online_and_offline_need_only_a_stopped_instance(self):
        # Ganeti's INSTANCE_NOT_RUNNING either way: a no-op on a stopped instance
        self.assertEqual(self.run_ok(self.op(MODIFY, offline=False)),
                         [["admin_state", "down"]])
        self.assertEqual(self.instance().admin_state, c.ADMINST_DOWN)
        self.run_ok(self.op(MODIFY, offline=True))
        self.assertEqual(self.run_ok(self.op(MODIFY, offline=True)),
                         [["admin_state", "offline"]])
        self.run_ok(self.op(MODIFY, offline=False))
        self.start()
        self.assertEqual(self.run_error(self.op(MODIFY, offline=False)), (
            "OpPrereqError", "Instance 'inst1.test' is marked to be up, can't change to "
            "online (down) without being offline first", "wrong_state"))
        self.assertEqual(self.run_error(self.op(MODIFY, offline=True)), (
            "OpPrereqError", "Instance 'inst1.test' is marked to be up, can't change to "
            "offline without being down first", "wrong_state"))
        self.assertEqual(self.instance().admin_state, c.ADMINST_UP)


class OfflineShutdownTest(RulesCase):
    def test_a_forced_shutdown_keeps_an_offline_instance_offline(self):
        # Ganeti's QA TestInstanceStoppedModify: shutdown --force of an offline
        # instance must not mark it down, so that a start is still refused
        self.run_ok(self.op(MODIFY, offline=True))
        status, _results, log = self.master.finish(self.master.submit(
            self.op("OP_INSTANCE_SHUTDOWN", force=True)))
        self.assertEqual(status, "success")
        self.assertIn(" - WARNING: Ignoring offline instance check", log)
        self.assertEqual(self.instance().admin_state, c.ADMINST_OFFLINE)
        self.assertEqual(self.run_error(self.op("OP_INSTANCE_STARTUP")), (
            "OpPrereqError", "Instance 'inst1.test' is marked to be offline, can't use "
            "instance from outside up, down states", "wrong_state"))
        self.run_ok(self.op(MODIFY, offline=False))
        self.start()


class RunningInstanceDevicesTest(RulesCase):
    def test_a_new_disk_with_spindles_needs_exclusive_storage(self):
        # Ganeti's QA TestInstanceModifyDisks: --disk add:size=1G,spindles=1 must fail
        op = self.op(MODIFY, disks=[["add", {"size": 8, "spindles": 1}]], ignore_ipolicy=True)
        self.assertEqual(self.run_error(op), (
            "OpPrereqError", "Spindles in instance disks cannot be specified when exclusive "
            "storage is not active", "wrong_input"))
        self.assertEqual(len(self.instance().disks), 1)

    def test_nics_and_a_new_disk_without_hotplug(self):
        self.start()
        result = self.run_ok(self.op(MODIFY, nics=[["add", {}]], ignore_ipolicy=True))
        self.assertEqual(len(result), 1)
        self.assertRegex(result[0][1], r"^add:mac=[0-9a-f:]{17},ip=None,mode=bridged,"
                                       r"link=[^,]*,network=None$")
        self.assertEqual(result[0][0], "nic.1")
        self.assertEqual(self.run_ok(self.op(MODIFY, nics=[["remove", {}]], ignore_ipolicy=True)),
                         [["NIC/1", "remove"]])
        add = self.op(MODIFY, disks=[["add", {"size": 8}]], ignore_ipolicy=True)
        self.assertEqual(self.run_ok(add), [["disk/1", "add:size=8,mode=rw"]])
        self.assertEqual(len(self.instance().disks), 2)
        self.assertTrue(os.path.exists(self.disk_file("inst1.test", 1)))
        self.assertTrue(self.running("inst1.test"))

    def test_a_disk_is_removed_only_from_a_stopped_instance(self):
        self.run_ok(self.op(MODIFY, disks=[["add", {"size": 8}]], ignore_ipolicy=True))
        self.start()
        remove = self.op(MODIFY, disks=[["remove", {}]], ignore_ipolicy=True)
        self.assertEqual(self.run_error(remove), (
            "OpPrereqError", "Instance 'inst1.test' is marked to be up, can't remove volume "
            "from a running instance without using hotplug", "wrong_state"))
        self.assertEqual(len(self.instance().disks), 2)
        self.run_ok(self.op("OP_INSTANCE_SHUTDOWN"))
        self.assertEqual(self.run_ok(self.op(MODIFY, disks=[["remove", {}]], ignore_ipolicy=True)),
                         [["disk/1", "remove"]])


class NewPrimaryTest(RulesCase):
    def test_a_stopped_instance_moves_its_primary(self):
        path = self.disk_file("inst1.test")
        self.assertEqual(self.run_ok(self.op(MODIFY, pnode="node2.test")), [])
        inst = self.instance()
        node2 = self.node_uuid("node2.test")
        self.assertEqual(inst.primary_node, node2)
        # the disk is where the instance is: no secondary node appears
        self.assertEqual([self.config.disks[d].nodes for d in inst.disks], [[node2]])
        data = self.run_ok({"OP_ID": "OP_INSTANCE_QUERY_DATA", "instances": ["inst1.test"],
                            "static": True})
        self.assertEqual((data["inst1.test"]["pnode"], data["inst1.test"]["snodes"]),
                         ("node2.test", []))
        self.assertTrue(os.path.exists(path))  # Ganeti leaves the files alone

    def test_refused_while_running_unless_forced(self):
        self.start()
        self.assertEqual(self.run_error(self.op(MODIFY, pnode="node2.test")), (
            "OpPrereqError", "Instance is still running on node1.test", "wrong_state"))
        self.assertEqual(self.instance().primary_node, self.node_uuid("node1.test"))
        self.assertEqual(self.run_error(self.op(MODIFY, pnode="nosuch.test"))[1:],
                         ("Node 'nosuch.test' not known", "unknown_entity"))


class ReinstallImageTest(RulesCase):
    def test_os_image_must_be_a_path_or_url_and_known_to_the_os(self):
        op = self.op("OP_INSTANCE_REINSTALL", osparams={"os-image": "NonExistantOsForQa"})
        self.assertEqual(self.run_error(op),
                         ("OpPrereqError", "OS image must be an absolute path or a URL", None))
        op["osparams"] = {"os-image": "http://NonExistantOsForQa"}
        self.assertEqual(self.run_error(op), (
            "OpExecError", "OS Parameters validation failed on node node1.test: The "
            "following parameters are not supported by the OS dumpos: os-image", None))
        self.assertNotIn("os-image", self.instance().osparams)
        self.run_ok(self.op("OP_INSTANCE_REINSTALL", osparams={"token": "x"}))

    def test_an_offline_instance_is_not_reinstalled(self):
        # Ganeti's INSTANCE_DOWN: stopped, and not marked offline
        self.run_ok(self.op(MODIFY, offline=True))
        self.assertEqual(self.run_error(self.op("OP_INSTANCE_REINSTALL")), (
            "OpPrereqError", "Instance 'inst1.test' is marked to be offline, cannot "
            "reinstall", "wrong_state"))
        self.run_ok(self.op(MODIFY, offline=False))
        self.run_ok(self.op("OP_INSTANCE_REINSTALL"))


class ImagingTest(RulesCase):
    """``os-image`` written onto disk 0 (Ganeti's ImageDisks), with an OS of API 10
    (no parameter list to check, as Debian's ganeti-os-noop), from an HTTP server
    on loopback."""

    def setUp(self) -> None:
        super().setUp()
        for node in ("node1.test", "node2.test"):
            make_os(self.net.paths(node).os_search_path[0], "imgos", api="10\n",
                    variants=None, parameters=None)
        self.run_ok(self.op(MODIFY, os_name="imgos", force_variant=True))
        self.base = ImageServer.start(self)

    def content(self, name: str = "inst1.test") -> bytes:
        with open(self.disk_file(name), "rb") as f:
            return f.read()

    def reinstall(self, **params: Any) -> Any:
        return self.op("OP_INSTANCE_REINSTALL", **params)

    def test_reinstall_writes_the_image_and_keeps_it_for_the_next_one(self):
        status, _res, log = self.master.finish(self.master.submit(
            self.reinstall(osparams={"os-image": self.base + "/img/1"})))
        self.assertEqual(status, "success")
        self.assertIn(f"Using OS image '{self.base}/img/1'", log)
        self.assertIn(" - INFO: Imaging disk '0' for instance 'inst1.test' on node "
                      "'node1.test'", log)
        self.assertEqual(self.content()[:ImageServer.size(1)], ImageServer.body(1))
        self.assertEqual(self.instance().osparams["os-image"], self.base + "/img/1")
        self.assertFalse(self.instance().disks_active)
        # a later reinstall without parameters writes the instance's image again
        with open(self.disk_file("inst1.test"), "r+b") as f:
            f.write(b"changed")
        self.run_ok(self.reinstall())
        self.assertEqual(self.content()[:ImageServer.size(1)], ImageServer.body(1))

    def test_a_missing_image_fails_and_changes_nothing(self):
        # Ganeti's QA TestInstanceReinstall: a URL that cannot be fetched must fail
        before = self.content()
        self.assertEqual(self.run_error(self.reinstall(osparams={
            "os-image": self.base + "/missing"})), (
            "OpExecError", "Could not image disk '0' for instance 'inst1.test' on node "
            f"'node1.test': Could not download '{self.base}/missing': HTTP 404 no such "
            "image", None))
        self.assertEqual(self.content(), before)
        self.assertNotIn("os-image", self.instance().osparams)
        self.assertFalse(self.instance().disks_active)
        # ... and the next reinstall with the OS scripts alone works (QA's next step)
        self.run_ok(self.reinstall())
        # an image bigger than the disk (4 MiB) is refused by the node
        self.assertIn("Disk image larger than the disk", self.run_error(self.reinstall(
            osparams={"os-image": self.base + "/img/4"}))[1])

    def test_create_with_an_image(self):
        op = create_op("inst3.test", disk_template=c.DT_FILE, disks=[{"size": 4}],
                       os_type="imgos", ignore_ipolicy=True, no_install=False,
                       osparams={"os-image": self.base + "/img/2"})
        status, _res, log = self.master.finish(self.master.submit(op))
        self.assertEqual(status, "success", log)
        self.assertIn("* imaging instance disks...", log)
        self.assertEqual(self.content("inst3.test")[:ImageServer.size(2)], ImageServer.body(2))

    def test_create_with_a_missing_image_removes_the_instance(self):
        op = create_op("inst3.test", disk_template=c.DT_FILE, disks=[{"size": 4}],
                       os_type="imgos", ignore_ipolicy=True, no_install=False,
                       osparams={"os-image": self.base + "/missing"})
        status, results, log = self.master.finish(self.master.submit(op))
        self.assertEqual(status, "error")
        self.assertEqual(results[-1][1][0], "There are some degraded disks for this instance")
        self.assertIn(" - WARNING: Imaging instance disks failed (Could not image disk '0' "
                      "for instance 'inst3.test' on node 'node1.test': Could not download "
                      f"'{self.base}/missing': HTTP 404 no such image)", log)
        self.assertIsNone(self.instance("inst3.test"))
        self.assertEqual(self.config.disks.keys(), {
            d for i in self.config.instances.values() for d in i.disks})
        op["osparams"] = {"os-image": "relative.img"}
        self.assertEqual(self.run_error(op), (
            "OpPrereqError", "OS image must be an absolute path or a URL", None))


class RecreateDisksTest(RulesCase):
    """Ganeti's QA TestRecreateDisks, on a file and a diskless instance."""

    RECREATE = "OP_INSTANCE_RECREATE_DISKS"

    def test_checks_and_recreating_on_another_node(self):
        path = self.disk_file("inst1.test")
        self.start()
        self.assertEqual(self.run_error(self.op(self.RECREATE, nodes=["node2.test"])), (
            "OpPrereqError", "Instance 'inst1.test' is marked to be up, cannot recreate "
            "disks", "wrong_state"))
        self.run_ok(self.op("OP_INSTANCE_SHUTDOWN"))
        # the disks exist: creating them fails, as in Ganeti
        cls, msg, _code = self.run_error(self.op(self.RECREATE))
        self.assertEqual(cls, "OpExecError")
        self.assertIn("Can't create block device disk/0 on node node1.test", msg)
        self.assertEqual(self.run_error(self.op(self.RECREATE, disks=[[0, {"spindles": 2}]])),
                         ("OpPrereqError", "Spindles in instance disks cannot be specified "
                          "when exclusive storage is not active", "wrong_input"))
        self.assertEqual(self.run_error(self.op(self.RECREATE,
                                                nodes=["node2.test", "node1.test"])),
                         ("OpPrereqError", "Instance inst1.test currently has 1 nodes, but 2 "
                          "replacement nodes were specified", "wrong_input"))
        self.assertEqual(self.run_error(self.op(self.RECREATE, nodes=["node2.test"],
                                                iallocator="hail"))[1],
                         "Do not specify both, iallocator and node")
        self.assertEqual(self.instance().primary_node, self.node_uuid("node1.test"))
        os.remove(path)  # QA destroys the disks first
        self.run_ok(self.op(self.RECREATE))
        self.assertTrue(os.path.exists(path))
        os.remove(path)
        status, _results, log = self.master.finish(self.master.submit(
            self.op(self.RECREATE, nodes=["node2.test"])))
        self.assertEqual(status, "success")
        self.assertIn(" - WARNING: Changing the instance's nodes, you will have to remove "
                      "any disks left on the older nodes manually", log)
        node2 = self.node_uuid("node2.test")
        inst = self.instance()
        self.assertEqual(inst.primary_node, node2)
        self.assertEqual(self.config.disks[inst.disks[0]].nodes, [node2])
        self.assertTrue(os.path.exists(self.disk_file("inst1.test")))
        self.assertFalse(os.path.exists(path))
        self.run_ok(self.op("OP_INSTANCE_ACTIVATE_DISKS"))
        self.run_ok(self.op("OP_INSTANCE_DEACTIVATE_DISKS"))
        os.remove(self.disk_file("inst1.test"))
        self.run_ok(self.op(self.RECREATE, nodes=["node1.test"], disks=[[0, {"size": 8}]]))
        self.assertEqual(self.instance().primary_node, self.node_uuid("node1.test"))
        self.assertEqual(os.path.getsize(path), 8 << 20)

    def test_diskless(self):
        for params in ({}, {"nodes": ["node2.test"]}):
            self.assertEqual(self.run_error(self.op(self.RECREATE, "inst2.test", **params)),
                             ("OpPrereqError", "Instance 'inst2.test' has no disks",
                              "wrong_input"))
        self.assertEqual(self.run_error(self.op(self.RECREATE, "inst2.test",
                                                nodes=["node2.test", "node1.test"]))[1],
                         "Instance inst2.test currently has 1 nodes, but 2 replacement "
                         "nodes were specified")


class ExportDisklessTest(RulesCase):
    """Ganeti 3.0 cannot finalize the export of a diskless instance: its node writes
    config.ini into the directory only disk transfers make."""

    def export(self, **params: Any) -> tuple[str, Any, list[str]]:
        op = self.op("OP_BACKUP_EXPORT", "inst2.test", target_node="node2.test", mode="local",
                     shutdown=True, **params)
        status, results, log = self.master.finish(self.master.submit(op))
        return status, results[0], log

    def test_a_stopped_instance(self):
        status, result, log = self.export()
        self.assertEqual((status, result), ("error", ["OpExecError", [
            "Export failed, errors in export finalization"]]))
        self.assertEqual(log[0], "Shutting down instance inst2.test")
        self.assertEqual(log[1:3], ["Activating disks for inst2.test",
                                    "Finalizing export on node2.test"])
        self.assertTrue(log[3].startswith(" - WARNING: Could not finalize export for "
                                          "instance inst2.test on node node2.test: "), log)
        self.assertEqual(log[4:], ["Deactivating disks for inst2.test"])
        self.assertEqual(self.run_ok({"OP_ID": "OP_BACKUP_QUERY", "nodes": []}),
                         {"node1.test": [], "node2.test": []})

    def test_a_running_instance_is_started_again_first(self):
        self.start("inst2.test")
        status, result, log = self.export()
        self.assertEqual(status, "error")
        self.assertEqual(log[:3], ["Shutting down instance inst2.test",
                                   "Starting instance inst2.test",
                                   "Finalizing export on node2.test"])
        self.assertEqual(len(log), 4)
        self.assertTrue(self.running("inst2.test"))
        # removing the instance after the export: the export fails first, the instance
        # stays (stopped)
        status, result, log = self.export(remove_instance=True)
        self.assertEqual(result, ["OpExecError", ["Export failed, errors in export "
                                                  "finalization"]])
        self.assertIsNotNone(self.instance("inst2.test"))
        self.assertFalse(self.running("inst2.test"))
