"""OP_CLUSTER_SET_PARAMS through the real queue: changes, checks, nothing half-done."""

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

    def assert_fails(self, needle, **params):
        """Refused at submission (opcode table) or by the logical unit; nothing changes."""
        before = self.daemon.config_writer.config.serial_no
        d = defer.Deferred.fromCoroutine(self.queue.submit([set_params(**params)]))
        if d.called and isinstance(d.result, Failure):
            err = self.failureResultOf(d, errors.OpPrereqError).value
            message = err.args[0]
        else:
            jid = self.successResultOf(d)
            self.assertEqual(self.status(jid), "error", params)
            result = self.field(jid, "opresult")[0]
            self.assertEqual(result[0], "OpPrereqError")
            message = result[1][0]
        self.assertIn(needle, message)
        self.assertEqual(self.daemon.config_writer.config.serial_no, before)  # unchanged

    def test_simple_values(self):
        jid = self.submit(set_params(candidate_pool_size=3, max_running_jobs=7,
                                     max_tracked_jobs=9, default_iallocator="hail"))
        self.assertEqual(self.status(jid), "success")
        cl = self.cluster
        self.assertEqual((cl.candidate_pool_size, cl.max_running_jobs, cl.max_tracked_jobs,
                          cl.default_iallocator), (3, 7, 9, "hail"))
        log = [entry[3] for entry in self.field(jid, "oplog")[0]]
        self.assertIn("Changed candidate_pool_size to 3", log)

    def test_max_running_jobs_takes_effect(self):
        self.submit(set_params(max_running_jobs=1))
        ids = [self.submit({"OP_ID": "OP_TEST_DELAY", "duration": 5}) for _ in range(2)]
        self.assertEqual([self.status(i) for i in ids], ["running", "queued"])

    def test_parameter_defaults(self):
        self.submit(set_params(hvparams={"fake": {"migration_mode": "non-live"}},
                               beparams={"maxmem": "1G", "vcpus": 2},
                               nicparams={"link": "br9"},
                               diskparams={"plain": {"stripes": 2}}))
        cl = self.cluster
        self.assertEqual(cl.hvparams["fake"]["migration_mode"], "non-live")
        self.assertEqual(cl.beparams["default"]["maxmem"], 1024)
        self.assertEqual(cl.beparams["default"]["vcpus"], 2)
        self.assertEqual(cl.nicparams["default"]["link"], "br9")
        self.assertEqual(cl.diskparams["plain"]["stripes"], 2)

    def test_uid_pool(self):
        self.submit(set_params(uid_pool=[[1000, 1009]]))
        self.submit(set_params(add_uids=[[2000, 2000], [3000, 3005]]))
        self.assertEqual(self.cluster.uid_pool, [[1000, 1009], [2000, 2000], [3000, 3005]])
        self.submit(set_params(remove_uids=[[2000, 2000]]))
        self.assertEqual(self.cluster.uid_pool, [[1000, 1009], [3000, 3005]])
        self.assert_fails("not in the pool", remove_uids=[[5, 5]])
        self.assert_fails("lower bound is greater", uid_pool=[[10, 5]])

    def test_ipolicy(self):
        self.submit(set_params(ipolicy={"vcpu-ratio": 2.5, "disk-templates": ["file"]}))
        self.assertEqual(self.cluster.ipolicy["vcpu-ratio"], 2.5)
        self.assertEqual(self.cluster.ipolicy["disk-templates"], ["file"])
        self.assert_fails("Unknown instance policy key", ipolicy={"bogus": 1})
        self.assert_fails("positive number", ipolicy={"spindle-ratio": 0})
        self.assert_fails("outside every min/max range", ipolicy={"std": {"cpu-count": 99}})

    def test_bad_values_change_nothing(self):
        self.assert_fails("unknown parameter 'bogus'", hvparams={"fake": {"bogus": 1}})
        self.assert_fails("vmware", hvparams={"vmware": {}})
        self.assert_fails("minmem is greater", beparams={"minmem": 4096})
        self.assert_fails("invalid NIC mode", nicparams={"mode": "tunnel"})
        self.assert_fails("at least one of the parameters")
        # a good change together with a bad one: neither happens
        self.assert_fails("must be an integer", candidate_pool_size=4,
                          beparams={"vcpus": "many"})
        self.assertEqual(self.cluster.candidate_pool_size, 10)

    def test_dry_run(self):
        jid = self.submit(set_params(candidate_pool_size=2, dry_run=True))
        self.assertEqual(self.status(jid), "success")
        self.assertEqual(self.cluster.candidate_pool_size, 10)
