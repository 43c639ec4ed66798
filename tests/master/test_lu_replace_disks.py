"""OP_INSTANCE_REPLACE_DISKS through the real queue and processor, with three in-process
nodes whose mirrors really connect (in memory) and volumes of their own (a fake lvm
per node): new volumes on the secondary or the primary (renamed into place, the old
ones removed, the config unchanged), a new secondary by name or by allocator (a new
minor, the old secondary's devices gone), the automatic mode, early release, a stopped
instance, Ganeti's step lines and refusals, and failed steps."""

from __future__ import annotations

from ganeti.core.rpcdefs.disks import DiskArg
from tests.fakes.allocators import answer
from tests.master.drbd_cases import VG, DrbdCase
from tests.master.test_lu_migration import elsewhere

PRIMARY, SECONDARY, OTHER = "node1.test", "node2.test", "node3.test"
STEPS = ("STEP 1/6 Check device existence", "STEP 2/6 Check peer consistency",
         "STEP 3/6 Allocate new storage", "STEP 4/6 Changing drbd configuration",
         "STEP 5/6 Sync devices", "STEP 6/6 Removing old storage")


def replace(mode, name="inst1.test", **params):
    return {"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": name, "mode": mode,
            **params}


class ReplaceCase(DrbdCase):
    programs = {"elsewhere": elsewhere, "third": lambda data: answer([OTHER])}

    def volumes(self, node):
        """The names of the logical volumes of ``node``'s volume group."""
        return sorted(key.split("/", 1)[1] for key in self.lvm[node].state["lvs"]
                      if key.startswith(VG + "/"))

    def lvm_commands(self, node):
        return [call[0] for call in self.lvm[node].calls]

    def children_names(self, name="inst1.test"):
        return sorted(ch.logical_id[1] for d in self.disks(name) for ch in d.children)


class ReplaceOnOneSideTest(ReplaceCase):
    def test_on_secondary(self):
        self.make_drbd()
        ids = [list(d.logical_id) for d in self.disks()]
        names = self.children_names()
        self.assertEqual(self.volumes(SECONDARY), names)
        status, result, log = self.run_logged(replace("replace_on_secondary"))
        self.assertEqual(status, "success", (result, log))
        for line in ("Replacing disk(s) 0 for instance 'inst1.test'",
                     "Current primary node: node1.test", "Current secondary node: node2.test",
                     *STEPS, " - INFO: Detaching disk/0 drbd from local storage",
                     " - INFO: Renaming the old LVs on the target node",
                     " - INFO: Renaming the new LVs on the target node",
                     " - INFO: Adding new mirror component on node2.test",
                     " - INFO: Remove logical volumes for disk/0"):
            self.assertIn(line, log)
        self.assertLess(log.index(STEPS[4]), log.index(STEPS[5]))
        # the new volumes carry the old names; the old ones (renamed away) are gone
        self.assertEqual(self.volumes(SECONDARY), names)
        self.assertEqual(self.volumes(PRIMARY), names)
        self.assertIn("lvrename", self.lvm_commands(SECONDARY))
        self.assertNotIn("lvrename", self.lvm_commands(PRIMARY))
        self.assertEqual([list(d.logical_id) for d in self.disks()], ids)  # config same
        self.assertEqual(self.children_names(), names)
        self.assertEqual(self.where(), [PRIMARY])
        self.assert_mirror_healthy()

    def test_on_primary_with_chosen_disks_and_early_release(self):
        self.make_drbd(sizes=(256, 256))
        names = self.children_names()
        status, result, log = self.run_logged(replace("replace_on_primary", disks=[1],
                                                      early_release=True))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("Replacing disk(s) 1 for instance 'inst1.test'", log)
        self.assertIn("STEP 5/6 Removing old storage", log)
        self.assertIn("STEP 6/6 Sync devices", log)
        self.assertLess(log.index("STEP 5/6 Removing old storage"),
                        log.index("STEP 6/6 Sync devices"))
        self.assertEqual(self.volumes(PRIMARY), names)
        self.assert_mirror_healthy()
        self.assertTrue(self.running("inst1.test", PRIMARY))

    def test_stopped_instance_disks_activated_for_the_job(self):
        self.make_drbd(start=False)
        status, result, log = self.run_logged(replace("replace_on_secondary"))
        self.assertEqual(status, "success", (result, log))
        self.assertFalse(self.instance().disks_active)
        self.assertEqual(self.status(SECONDARY), [None])  # deactivated again
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        self.assert_mirror_healthy()

    def test_degraded_peer_is_refused(self):
        self.make_drbd()
        self.disconnect(SECONDARY)
        cls, msg, _code = self.run_error(replace("replace_on_secondary"))
        self.assertEqual((cls, msg), ("OpExecError", "Node node1.test has degraded storage, "
                                      "unsafe to replace disks for instance inst1.test"))
        self.assertEqual(self.volumes(SECONDARY), self.children_names())

    def test_attach_failure_removes_the_new_volumes(self):
        self.make_drbd()
        names = self.children_names()
        self.net.faults[(SECONDARY, "blockdev_addchildren")] = "fail"
        cls, msg, _code = self.run_error(replace("replace_on_secondary"))
        self.assertEqual((cls, msg), ("OpExecError", "Can't add local storage to drbd: "
                                      "injected failure of blockdev_addchildren"))
        # the new volumes (renamed to the old names) were removed again; the old ones
        # stay renamed aside, as Ganeti leaves them
        leftovers = self.volumes(SECONDARY)
        self.assertEqual(len(leftovers), 2)
        self.assertTrue(all("_replaced-" in name for name in leftovers), leftovers)
        self.assertTrue(all(name.split("_replaced-")[0] in names for name in leftovers))


class NewSecondaryTest(ReplaceCase):
    def _check_moved(self, old_ids):
        disks = self.disks()
        p, o = self.node_uuid(PRIMARY), self.node_uuid(OTHER)
        for disk, old in zip(disks, old_ids, strict=True):
            self.assertEqual(disk.nodes, [p, o])
            self.assertEqual(disk.logical_id[:4], [p, o, old[2], old[3]])
            self.assertEqual(disk.logical_id[5], old[5])
        self.assertEqual(self.volumes(OTHER), self.children_names())
        self.assertEqual(self.volumes(SECONDARY), [])  # the old secondary's are removed
        self.assertEqual(self.where(), [PRIMARY])
        self.assert_mirror_healthy()

    def test_named_new_secondary(self):
        self.make_drbd()
        old_ids = [list(d.logical_id) for d in self.disks()]
        status, result, log = self.run_logged(replace("replace_new_secondary",
                                                      remote_node=OTHER))
        self.assertEqual(status, "success", (result, log))
        for line in (*STEPS, " - INFO: Adding new local storage on node3.test for disk/0",
                     " - INFO: activating a new drbd on node3.test for disk/0",
                     " - INFO: Shutting down drbd for disk/0 on old node",
                     " - INFO: Detaching primary drbds from the network (=> standalone)",
                     " - INFO: Updating instance configuration",
                     " - INFO: Attaching primary drbds to new secondary (standalone => "
                     "connected)"):
            self.assertIn(line, log)
        self._check_moved(old_ids)
        # the instance migrates to its new secondary
        self.run_ok(self.migrate())
        self.assertEqual(self.where(), [OTHER])
        self.assert_mirror_healthy()

    def test_new_secondary_by_allocator(self):
        self.make_drbd()
        old_ids = [list(d.logical_id) for d in self.disks()]
        status, result, log = self.run_logged(replace("replace_new_secondary",
                                                      iallocator="third"))
        self.assertEqual(status, "success", (result, log))
        self.assertIn(" - INFO: Selected new secondary for instance 'inst1.test': "
                      "node3.test", log)
        self._check_moved(old_ids)

    def test_attach_failure_message(self):
        self.make_drbd()
        self.net.faults[(PRIMARY, "drbd_attach_net")] = "fail"
        cls, msg, _code = self.run_error(replace("replace_new_secondary", remote_node=OTHER))
        self.assertEqual((cls, msg), (
            "OpExecError", "Can't attach drbd disks on node node1.test: injected failure of "
            "drbd_attach_net (please do a gnt-instance info inst1.test to see the status of "
            "disks)"))
        # the config names the new secondary (Ganeti's order); a second run of the
        # network attach (what activate-disks does) connects it
        self.assertEqual(self.disks()[0].nodes[1], self.node_uuid(OTHER))


class AutoTest(ReplaceCase):
    def test_nothing_faulty(self):
        self.make_drbd()
        status, result, log = self.run_logged(replace("replace_auto"))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("No disks need replacement for instance 'inst1.test'", log)

    def test_faulty_secondary_is_repaired(self):
        self.make_drbd()
        inst = self.instance()
        disk = self.disks()[0]
        # the secondary loses its local volumes (diskless: faulty)
        self.ok(SECONDARY, "blockdev_removechildren",
                [DiskArg(disk, inst), [DiskArg(ch, inst) for ch in disk.children]])
        status, result, log = self.run_logged(replace("replace_auto"))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("Replacing disk(s) 0 for instance 'inst1.test'", log)
        self.assertIn(" - INFO: Adding storage on node2.test for disk/0", log)
        self.assert_mirror_healthy()

    def test_disks_must_be_active(self):
        self.make_drbd(start=False)
        cls, msg, code = self.run_error(replace("replace_auto"))
        self.assertEqual((cls, msg, code), ("OpPrereqError", "Please run activate-disks on "
                                            "instance inst1.test first", "wrong_state"))


class RefusalTest(ReplaceCase):
    def test_refusals_are_ganetis(self):
        self.make_drbd()
        self.make("plain.test", start=False)  # a diskless instance: no secondary
        cases = [
            (replace("replace_new_secondary"), "When changing the secondary either an "
             "iallocator script must be used or the new node given", "wrong_input"),
            (replace("replace_new_secondary", remote_node=OTHER, iallocator="third"),
             "Do not specify both, iallocator and node", "wrong_input"),
            (replace("replace_on_primary", remote_node=OTHER), "The iallocator and new node "
             "options can only be used when changing the secondary node", "wrong_input"),
            (replace("replace_auto", iallocator="third"), "The iallocator and new node "
             "options can only be used when changing the secondary node", "wrong_input"),
            (replace("replace_new_secondary", remote_node=PRIMARY), "The specified node is "
             "the primary node of the instance", "wrong_input"),
            (replace("replace_new_secondary", remote_node=SECONDARY), "The specified node is "
             "already the secondary node of the instance", "wrong_input"),
            (replace("replace_auto", disks=[0]), "Cannot specify disks to be replaced",
             "wrong_input"),
            (replace("replace_on_primary", disks=[3]), "Invalid disk index: 3 (instace has "
             "disks 0 to 0", "wrong_input"),
            (replace("replace_on_secondary", "plain.test"), "The instance has a strange "
             "layout, expected one secondary but found 0", "internal_error"),
            (replace("replace_on_secondary", "nosuch.test"), "Instance 'nosuch.test' not "
             "known", "unknown_entity"),
        ]
        for op, message, code in cases:
            cls, msg, got = self.run_error(op)
            self.assertEqual((cls, msg, got), ("OpPrereqError", message, code), op)
        self.assert_mirror_healthy()

    def test_drained_and_offline_new_nodes(self):
        self.make_drbd()
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": OTHER, "drained": True})
        cls, msg, _code = self.run_error(replace("replace_new_secondary", remote_node=OTHER))
        self.assertEqual((cls, msg), ("OpPrereqError", "Can't use drained node node3.test"))


class HooksAndReservationsTest(ReplaceCase):
    def test_hooks_environment_and_nodes(self):
        from tests.master.test_hooks import RecordingHooks
        self.make_drbd()
        hooks = RecordingHooks()
        self.net.handlers["hooks_runner"] = hooks
        self.run_ok(replace("replace_new_secondary", remote_node=OTHER))
        env = hooks.env(PRIMARY, "mirrors-replace", "pre")
        self.assertEqual((env["GANETI_MODE"], env["GANETI_OLD_SECONDARY"],
                          env["GANETI_NEW_SECONDARY"], env["GANETI_INSTANCE_NAME"]),
                         ("replace_new_secondary", SECONDARY, OTHER, "inst1.test"))
        self.assertIsNotNone(hooks.env(OTHER, "mirrors-replace", "post"))

    def test_forthcoming_instance_changes_in_the_config_only(self):
        # (the built-in allocator's rules accept this reservation with node2 primary)
        self.run_ok({**self.create_drbd_op("f.test", SECONDARY, PRIMARY), "forthcoming": True})
        before = {n: self.volumes(n) for n in (PRIMARY, SECONDARY, OTHER)}
        status, result, log = self.run_logged(replace("replace_new_secondary", "f.test",
                                                      remote_node=OTHER))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("Instance fortcoming, will only update the configuration", log)
        disk = self.disks("f.test")[0]
        self.assertEqual(disk.nodes, [self.node_uuid(SECONDARY), self.node_uuid(OTHER)])
        self.assertEqual(disk.logical_id[1], self.node_uuid(OTHER))
        status, result, log = self.run_logged(replace("replace_on_primary", "f.test"))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("Instance forthcoming, not touching disks", log)
        self.assertEqual({n: self.volumes(n) for n in (PRIMARY, SECONDARY, OTHER)}, before)


class NodeEvacuationTest(ReplaceCase):
    def test_secondaries_of_a_node_get_a_new_secondary(self):
        # gnt-node evacuate -s -n: one replace-disks job per instance (the evacuation's)
        self.make_drbd("a.test", PRIMARY, SECONDARY)
        self.make_drbd("b.test", PRIMARY, SECONDARY, start=False)
        status, result, log = self.run_logged({
            "OP_ID": "OP_NODE_EVACUATE", "node_name": SECONDARY, "mode": "secondary-only",
            "remote_node": OTHER})
        self.assertEqual(status, "success", (result, log))
        self.assertEqual(len(result["jobs"]), 2)
        for ok, job_id in result["jobs"]:
            self.assertTrue(ok)
            job_status, results, job_log = self.master.finish(job_id)
            self.assertEqual(job_status, "success", (results, job_log))
        for name in ("a.test", "b.test"):
            self.assertEqual(self.disks(name)[0].nodes,
                             [self.node_uuid(PRIMARY), self.node_uuid(OTHER)])
        self.assertEqual(self.volumes(SECONDARY), [])
        self.assert_mirror_healthy("a.test")
        self.assertFalse(self.instance("b.test").disks_active)

    def test_the_built_in_allocator_places_secondaries_and_primaries(self):
        # gnt-node evacuate -s/-p -I ganeti-place on a cluster whose first template is
        # drbd: the allocator's input reports the volume groups (it once failed with
        # "didn't return space info for disk template 'drbd'")
        self.make_drbd("a.test", PRIMARY, SECONDARY)
        self.make_drbd("b.test", SECONDARY, PRIMARY, start=False)
        for mode in ("secondary-only", "primary-only"):
            status, result, log = self.run_logged({
                "OP_ID": "OP_NODE_EVACUATE", "node_name": SECONDARY, "mode": mode,
                "iallocator": "ganeti-place"})
            self.assertEqual(status, "success", (result, log))
            self.assertEqual(len(result["jobs"]), 1, result)
            for ok, job_id in result["jobs"]:
                self.assertTrue(ok)
                job_status, results, job_log = self.master.finish(job_id)
                self.assertEqual(job_status, "success", (results, job_log))
        # -s gave a.test a new secondary; -p failed b.test over to its secondary, so
        # the node evacuated is now b.test's secondary (as in Ganeti)
        self.assertEqual(self.disks("a.test")[0].nodes,
                         [self.node_uuid(PRIMARY), self.node_uuid(OTHER)])
        self.assertEqual(set(self.disks("b.test")[0].nodes),
                         {self.node_uuid(PRIMARY), self.node_uuid(SECONDARY)})
        self.assertEqual(self.instance("b.test").primary_node, self.node_uuid(PRIMARY))
        self.assert_mirror_healthy("a.test")
