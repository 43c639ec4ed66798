"""OP_GROUP_SET_PARAMS and OP_GROUP_ADD through the real queue: Ganeti's merges and types."""

from twisted.trial.unittest import SynchronousTestCase

from tests.master.test_jobqueue import QueueTestCase


def group_op(op_id="OP_GROUP_SET_PARAMS", name="default", **params):
    return {"OP_ID": op_id, "group_name": name, **params}


class GroupParamsTest(QueueTestCase, SynchronousTestCase):
    @property
    def config(self):
        return self.daemon.config_writer.config

    def group(self, name="default"):
        return self.config.group_by_name(name)

    def result(self, jid):
        self.assertEqual(self.status(jid), "success", self.field(jid, "opresult"))
        return self.field(jid, "opresult")[0]

    def error(self, jid):
        """(class, message) of a failed job, after checking nothing changed."""
        self.assertEqual(self.status(jid), "error")
        result = self.field(jid, "opresult")[0]
        return result[0], result[1][0]

    def test_diskparams_are_coerced_merged_and_reset(self):
        result = self.result(self.submit(group_op(
            diskparams={"drbd": {"resync-rate": "100", "dynamic-resync": "true"}})))
        self.assertEqual(self.group().diskparams,
                         {"drbd": {"resync-rate": 100, "dynamic-resync": True}})
        self.assertEqual(result, [["diskparams",
                                   "{'drbd': {'resync-rate': 100, 'dynamic-resync': True}}"]])
        self.result(self.submit(group_op(diskparams={"drbd": {"c-plan-ahead": "5"},
                                                     "plain": {"stripes": 2}})))
        self.assertEqual(self.group().diskparams,
                         {"drbd": {"resync-rate": 100, "dynamic-resync": True,
                                   "c-plan-ahead": 5}, "plain": {"stripes": 2}})
        self.result(self.submit(group_op(diskparams={"drbd": {"resync-rate": "default"}})))
        self.assertEqual(self.group().diskparams["drbd"],
                         {"dynamic-resync": True, "c-plan-ahead": 5})

    def test_ndparams(self):
        result = self.result(self.submit(group_op(ndparams={"ssh_port": "2222"})))
        self.assertEqual(self.group().ndparams, {"ssh_port": 2222})
        self.assertEqual(result, [["ndparams", "{'ssh_port': 2222}"]])
        self.result(self.submit(group_op(ndparams={"spindle_count": 3,
                                                   "ssh_port": "default"})))
        self.assertEqual(self.group().ndparams, {"spindle_count": 3})

    def test_refusals_change_nothing(self):
        before = self.config.serial_no
        cases = [
            ({"diskparams": {"drbd": {"resync-rate": "abc"}}}, "TypeEnforcementError",
             "'resync-rate' (value abc) is not a valid integer"),
            ({"ndparams": {"spindles": 1}}, "TypeEnforcementError",
             "Unknown parameter 'spindles'"),
            ({"diskparams": {"drbd": {"pool": "x"}}}, "OpPrereqError",
             "While verify diskparams options: Provided option keys not supported: "
             "drbd/pool"),
            ({"diskparams": {"rbd": {"access": "x"}}}, "OpPrereqError",
             "Invalid value of 'rbd:access': 'x' (expected one of kernelspace, userspace)"),
            ({"ipolicy": {"std": {"cpu-count": 1}}}, "OpPrereqError",
             "std cannot appear in group instance specs"),
            ({"ipolicy": {"disk-templates": ["plain"]}}, "OpPrereqError",
             "The following disk templates are allowed by the ipolicy, but not enabled on "
             "the cluster: plain"),
        ]
        for params, cls, message in cases:
            self.assertEqual(self.error(self.submit(group_op(alloc_policy="unallocable",
                                                             **params))),
                             (cls, message))
        self.assertEqual(self.config.serial_no, before)
        self.assertEqual(self.group().alloc_policy, "preferred")

    def test_ipolicy_set_and_drop(self):
        result = self.result(self.submit(group_op(ipolicy={"vcpu-ratio": "2"},
                                                  alloc_policy="last_resort")))
        self.assertEqual(result, [])  # Ganeti reports node and disk parameters only
        self.assertEqual(self.group().ipolicy, {"vcpu-ratio": 2.0})
        self.assertEqual(self.group().alloc_policy, "last_resort")
        self.result(self.submit(group_op(ipolicy={"vcpu-ratio": "default"})))
        self.assertEqual(self.group().ipolicy, {})

    def test_at_least_one_modification(self):
        self.assertEqual(self.error(self.submit(group_op())),
                         ("OpPrereqError", "Please pass at least one modification"))
        self.result(self.submit(group_op(diskparams={})))  # given, even if empty

    def test_add_coerces(self):
        self.result(self.submit(group_op("OP_GROUP_ADD", "rack2",
                                         ndparams={"ssh_port": "22"},
                                         diskparams={"plain": {"stripes": "4"}},
                                         ipolicy={"spindle-ratio": "8"})))
        group = self.group("rack2")
        self.assertEqual((group.ndparams, group.diskparams, group.ipolicy),
                         ({"ssh_port": 22}, {"plain": {"stripes": 4}},
                          {"spindle-ratio": 8.0}))
        # unlike modify, Ganeti's add takes a standard spec
        self.result(self.submit(group_op("OP_GROUP_ADD", "rack3",
                                         ipolicy={"std": {"cpu-count": "2"}})))
        self.assertEqual(self.group("rack3").ipolicy, {"std": {"cpu-count": 2}})
        cls, message = self.error(self.submit(group_op("OP_GROUP_ADD", "rack2")))
        self.assertTrue(message.startswith("Desired group name 'rack2' already exists as a "
                                           "node group (UUID: "), message)
