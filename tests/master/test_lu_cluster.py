"""OP_CLUSTER_SET_PARAMS through the real queue: Ganeti's merges, coercion and checks."""

from twisted.internet import defer
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from tests.master.test_jobqueue import QueueTestCase


def set_params(**params):
    op = {"OP_ID": "OP_CLUSTER_SET_PARAMS"}
    op.update(params)
    return op


class ClusterSetParamsTest(QueueTestCase, SynchronousTestCase):
    @property
    def cluster(self):
        return self.daemon.config_writer.config.cluster

    def assert_fails(self, needle, error="OpPrereqError", **params):
        """Refused at submission (opcode table) or by the logical unit; nothing changes."""
        before = self.daemon.config_writer.config.serial_no
        d = defer.Deferred.fromCoroutine(self.queue.submit([set_params(**params)]))
        if d.called and isinstance(d.result, Failure):
            err = self.failureResultOf(d, errors.OpPrereqError).value
            self.assertEqual(error, "OpPrereqError")
            message = err.args[0]
        else:
            jid = self.successResultOf(d)
            self.assertEqual(self.status(jid), "error", params)
            result = self.field(jid, "opresult")[0]
            self.assertEqual(result[0], error, result)
            message = result[1][0]
        self.assertIn(needle, message)
        self.assertEqual(self.daemon.config_writer.config.serial_no, before)  # unchanged
        return message

    def oplog(self, jid):
        return [entry[3] for entry in self.field(jid, "oplog")[0]]

    def test_simple_values_and_no_feedback(self):
        jid = self.submit(set_params(candidate_pool_size=3, max_running_jobs=7,
                                     max_tracked_jobs=9, default_iallocator=""))
        self.assertEqual(self.status(jid), "success")
        cl = self.cluster
        self.assertEqual((cl.candidate_pool_size, cl.max_running_jobs, cl.max_tracked_jobs,
                          cl.default_iallocator), (3, 7, 9, ""))
        self.assertEqual(self.oplog(jid), [])  # Ganeti prints nothing for these

    def test_max_running_jobs_takes_effect(self):
        self.submit(set_params(max_running_jobs=1))
        ids = [self.submit({"OP_ID": "OP_TEST_DELAY", "duration": 5}) for _ in range(2)]
        self.assertEqual([self.status(i) for i in ids], ["running", "queued"])

    def test_parameters_merge_and_coerce(self):
        self.submit(set_params(hvparams={"fake": {"migration_mode": "non-live"}},
                               beparams={"maxmem": "1G", "vcpus": "2",
                                         "auto_balance": "false"},
                               nicparams={"link": "br9"},
                               ndparams={"ssh_port": "2222", "cpu_speed": "1.5"},
                               diskparams={"plain": {"stripes": "2"},
                                           "drbd": {"resync-rate": "100"}}))
        cl = self.cluster
        self.assertEqual(cl.hvparams["fake"]["migration_mode"], "non-live")
        be = cl.beparams["default"]
        self.assertEqual((be["maxmem"], be["vcpus"], be["auto_balance"]), (1024, 2, False))
        self.assertEqual(be["minmem"], 128)  # kept
        self.assertEqual(cl.nicparams["default"]["link"], "br9")
        self.assertEqual(cl.nicparams["default"]["mode"], "bridged")  # kept
        self.assertEqual((cl.ndparams["ssh_port"], cl.ndparams["cpu_speed"]), (2222, 1.5))
        self.assertEqual(cl.diskparams["plain"]["stripes"], 2)
        self.assertEqual(cl.diskparams["drbd"]["resync-rate"], 100)
        self.assertEqual(cl.diskparams["drbd"]["c-plan-ahead"], 20)  # kept

    def test_sizes_round_up_to_four_mib(self):
        self.submit(set_params(beparams={"memory": "130"}))  # old name: both values
        be = self.cluster.beparams["default"]
        self.assertEqual((be["maxmem"], be["minmem"]), (132, 132))

    def test_drbd_change_warns_as_ganeti(self):
        jid = self.submit(set_params(diskparams={"drbd": {"resync-rate": 100}}))
        log = self.oplog(jid)
        self.assertEqual(len(log), 3)
        self.assertTrue(log[0].startswith(" - WARNING: Changing DRBD parameters"))

    def test_uid_pool_order(self):
        self.submit(set_params(uid_pool=[[1000, 1009]]))
        self.submit(set_params(add_uids=[[3000, 3005], [2000, 2000]]))
        self.assertEqual(self.cluster.uid_pool, [[1000, 1009], [2000, 2000], [3000, 3005]])
        self.submit(set_params(remove_uids=[[2000, 2000]]))
        self.assertEqual(self.cluster.uid_pool, [[1000, 1009], [3000, 3005]])
        # add, then remove, then set: the set pool wins
        self.submit(set_params(uid_pool=[[5000, 5001]], add_uids=[[6000, 6000]]))
        self.assertEqual(self.cluster.uid_pool, [[5000, 5001]])
        # removal is checked against the pool before uid_pool replaces it
        self.assert_fails("not found in the current user-id pool: [7000, 7000]",
                          uid_pool=[[7000, 7000]], remove_uids=[[7000, 7000]])
        self.submit(set_params(add_uids=[[8000, 8000]], remove_uids=[[8000, 8000]]))
        self.assertEqual(self.cluster.uid_pool, [[5000, 5001]])

    def test_bad_uid_ranges_fail_the_job(self):
        """As Ganeti's: the job is accepted and fails, wrong_input, changing nothing."""
        for needle, params in [
                ("Lower user-id range boundary value (10) is larger than higher boundary "
                 "value (5)", {"uid_pool": [[10, 5]]}),
                (f"Higher user-id boundary value ({2**32}) is larger than UIDPOOL_UID_MAX "
                 f"({2**32 - 1}).", {"add_uids": [[1000, 2**32]]}),
                ("Lower user-id range boundary value (-1) is smaller than UIDPOOL_UID_MIN "
                 "(0).", {"remove_uids": [[-1, 6]]})]:
            jid = self.successResultOf(defer.Deferred.fromCoroutine(
                self.queue.submit([set_params(**params)])))
            self.assertEqual(self.status(jid), "error", params)
            self.assertEqual(self.field(jid, "opresult")[0],
                             ["OpPrereqError", [needle, "wrong_input"]])
            self.assert_fails(needle, **params)  # and nothing changed

    def test_ipolicy_std_merges(self):
        self.submit(set_params(ipolicy={"std": {"memory-size": "256"}}))
        std = self.cluster.ipolicy["std"]
        self.assertEqual(std["memory-size"], 256)
        self.assertEqual(std["cpu-count"], 1)  # kept
        self.assertEqual(len(std), 6)

    def test_ipolicy_other_keys(self):
        self.submit(set_params(ipolicy={"vcpu-ratio": "2.5", "disk-templates": ["file"]}))
        self.assertEqual(self.cluster.ipolicy["vcpu-ratio"], 2.5)
        self.assertEqual(self.cluster.ipolicy["disk-templates"], ["file"])
        bounds = [{"min": {"memory-size": 64, "cpu-count": 1, "disk-count": 1,
                           "disk-size": 512, "nic-count": 1, "spindle-use": 1},
                   "max": {"memory-size": "1024", "cpu-count": 4, "disk-count": 4,
                           "disk-size": 2048, "nic-count": 4, "spindle-use": 4}}]
        self.submit(set_params(ipolicy={"minmax": bounds}))
        self.assertEqual(self.cluster.ipolicy["minmax"][0]["max"]["memory-size"], 1024)

    def test_ipolicy_refusals(self):
        self.assert_fails("Invalid key in new ipolicy: bogus", ipolicy={"bogus": 1})
        self.assert_fails("Can't unset ipolicy attribute 'vcpu-ratio'",
                          ipolicy={"vcpu-ratio": "default"})
        self.assert_fails("Invalid value for attribute 'spindle-ratio'",
                          ipolicy={"spindle-ratio": "lots"})
        self.assert_fails("Invalid std specifications", ipolicy={"std": {"cpu-count": 99}})
        self.assert_fails("Missing instance specs parameters for min",
                          ipolicy={"minmax": [{"min": {"cpu-count": 1}, "max": {}}]})
        self.assert_fails("not enabled on the cluster: plain",
                          ipolicy={"disk-templates": ["plain"]})
        self.assert_fails("is not a valid integer", "TypeEnforcementError",
                          ipolicy={"std": {"cpu-count": "two"}})

    def test_bad_values_change_nothing(self):
        self.assert_fails("Unknown parameter 'bogus'", "TypeEnforcementError",
                          hvparams={"fake": {"bogus": 1}})
        self.assert_fails("Parameter 'acpi' is not supported", "HypervisorError",
                          hvparams={"fake": {"acpi": True}})
        self.assert_fails("vmware", hvparams={"vmware": {}})
        self.assert_fails("Invalid NIC mode 'tunnel'", "ConfigurationError",
                          nicparams={"mode": "tunnel"})
        self.assert_fails("'auto_balance' (value no) is not a valid boolean",
                          "TypeEnforcementError", beparams={"auto_balance": "no"})
        self.assert_fails("Provided option keys not supported: drbd/pool",
                          diskparams={"drbd": {"pool": "x"}})
        # a good change together with a bad one: neither happens
        self.assert_fails("'vcpus' (value many) is not a valid integer",
                          "TypeEnforcementError", candidate_pool_size=4,
                          beparams={"vcpus": "many"})
        self.assertEqual(self.cluster.candidate_pool_size, 10)

    def test_new_parameters(self):
        jid = self.submit(set_params(mac_prefix="AA:BB:0C", reserved_lvs=["xenvg/root"],
                                     compression_tools=["gzip", "lzop"],
                                     prealloc_wipe_disks=True, maintain_node_health=True,
                                     default_iallocator_params={"x": "1"},
                                     modify_etc_hosts=False, enabled_user_shutdown=True,
                                     install_image="/srv/img", zeroing_image="/srv/zero",
                                     hidden_os=[["add", "lenny"]],
                                     blacklisted_os=[["remove", "etch"]]))
        self.assertEqual(self.status(jid), "success")
        cl = self.cluster
        self.assertEqual(cl.mac_prefix, "aa:bb:0c")
        self.assertEqual(cl.reserved_lvs, ["xenvg/root"])
        self.assertEqual(cl.compression_tools, ["gzip", "lzop"])
        self.assertTrue(cl.prealloc_wipe_disks and cl.maintain_node_health)
        self.assertEqual(cl.default_iallocator_params, {"x": "1"})
        self.assertFalse(cl.modify_etc_hosts)
        self.assertTrue(cl.enabled_user_shutdown)
        self.assertEqual((cl.install_image, cl.hidden_os), ("/srv/img", ["lenny"]))
        self.assertEqual(self.oplog(jid), ["OS etch not found in blacklisted OS list, ignoring"])

    def test_new_parameter_refusals(self):
        self.assert_fails("Invalid MAC address prefix 'aa:bb'", mac_prefix="aa:bb")
        self.assert_fails("the gzip utility must be present", compression_tools=["lzop"])
        self.assert_fails("illegal characters", compression_tools=["gzip", "x;y"])
        self.assert_fails("absolute path or a URL", install_image="relative/img")
        self.assert_fails("not supported yet", instance_communication_network="net1")
        self.assert_fails("Invalid default iallocator script 'no-such-allocator' specified",
                          default_iallocator="no-such-allocator")
        self.assert_fails("Invalid default iallocator script '../x' specified",
                          default_iallocator="../x")

    def test_nothing_to_change_is_a_no_op(self):
        jid = self.submit(set_params(hvparams={}, beparams={}, hv_state={}))
        self.assertEqual(self.status(jid), "success")

    def test_dry_run(self):
        jid = self.submit(set_params(candidate_pool_size=2, dry_run=True))
        self.assertEqual(self.status(jid), "success")
        self.assertEqual(self.cluster.candidate_pool_size, 10)
