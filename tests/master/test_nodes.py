"""Nodes and groups on a whole master daemon, with node daemons in process (tests/fakes/nodes).

Covers node add/remove/modify with the candidate pool rules, replication of
config, ssconf and job files, node and group queries with live fields,
cluster verify and redist-conf, and bad input leaving the config unchanged.
"""

from __future__ import annotations

import os

from twisted.trial.unittest import TestCase

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_ENVIRON, ECODE_EXISTS, ECODE_NOENT, ECODE_STATE
from tests.fakes.configs import small_config
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet, sha1_of, ssconf_of

MASTER = "node1.test"
# This fake master has no certificates nor file storage directory: verify ignores
# those (tests/master/test_lu_verify.py verifies a cluster set up as init leaves it).
VERIFY_FAKE = {"OP_ID": "OP_CLUSTER_VERIFY",
               "ignore_errors": ["ECLUSTERCERT", "ECLUSTERCLIENTCERT",
                                 "ENODEFILESTORAGEPATHUNUSABLE"]}
# ... nor the other files init writes (server.pem, hmac.key, ...)
VERIFY_BARE = {**VERIFY_FAKE, "ignore_errors": [*VERIFY_FAKE["ignore_errors"],
                                                "ECLUSTERFILECHECK"]}


class NodesTestCase(TestCase):
    pool_size = 10
    extra_nodes = 3

    def setUp(self) -> None:
        tmp = self.mktemp()
        os.makedirs(tmp)
        self.net = FakeNodeNet(os.path.join(tmp, "nodes"), None)
        self.master = InProcessMaster(tmp, small_config(candidate_pool_size=self.pool_size),
                                      rpc=self.net)
        self.net.clock = self.master.reactor
        self.net.add(MASTER, "127.0.1.1", paths=self.master.paths)
        for k in range(2, 2 + self.extra_nodes):
            self.net.add(f"node{k}.test", f"127.0.1.{k}")
        self.client = self.master.client()
        self.addCleanup(self.master.stop)

    # --- helpers ---------------------------------------------------------------------

    def run_job(self, *ops):
        """Submit, wait; (status, [results], [log messages])."""
        return self.master.finish(self.master.submit(*ops))

    def ok(self, *ops):
        status, results, log = self.run_job(*ops)
        self.assertEqual(status, "success", f"{results} {log}")
        return results[-1]

    def fails(self, op, ecode: str | None = None, text: str = ""):
        serial = self.config.serial_no
        status, results, _ = self.run_job(op)
        self.assertEqual(status, "error")
        err = results[-1]
        if ecode is not None:
            self.assertEqual(err[1][1], ecode, err)
        self.assertIn(text, err[1][0])
        self.assertEqual(self.config.serial_no, serial, "a refused change changed the config")
        return err

    @property
    def config(self):
        return self.master.config

    def add(self, k: int, **params):
        return self.ok({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                        "primary_ip": f"127.0.1.{k}", **params})

    def node(self, name: str):
        return self.config.node_by_name(name)

    def assert_replicated(self) -> None:
        """Config equal on every candidate, ssconf equal on every online node."""
        cfg = self.config
        master_config = sha1_of(self.master.paths.config_file)
        master_ss = ssconf_of(self.master.paths)
        self.assertIn("ssconf_node_list", master_ss)
        for node in cfg.nodes.values():
            if node.name == MASTER or node.offline:
                continue
            paths = self.net.paths(node.name)
            if node.master_candidate:
                self.assertEqual(sha1_of(paths.config_file), master_config, node.name)
            self.assertEqual(ssconf_of(paths), master_ss, node.name)


class NodeAddTest(NodesTestCase):
    def test_add_nodes_replicates_config_andssconf_of(self):
        self.add(2)
        self.add(3, secondary_ip="127.0.2.3")
        cfg = self.config
        self.assertEqual(sorted(n.name for n in cfg.nodes.values()),
                         [MASTER, "node2.test", "node3.test"])
        node3 = self.node("node3.test")
        self.assertEqual(node3.secondary_ip, "127.0.2.3")
        self.assertTrue(node3.master_candidate)  # the pool (10) has room
        group = next(iter(cfg.nodegroups.values()))
        self.assertEqual(sorted(group.members), sorted(cfg.nodes))
        self.assert_replicated()
        with open(self.net.paths("node2.test").ssconf_file("node_list")) as f:
            self.assertEqual(f.read(), "node1.test\nnode2.test\nnode3.test\n")
        # locks for the new node exist, keyed by its UUID
        self.assertIn(node3.uuid, self.master.daemon.locks.names("node"))
        self.assertIn(node3.uuid, self.master.daemon.locks.names("node-res"))

    def test_bad_input_changes_nothing(self):
        self.add(2)
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node2.test",
                    "primary_ip": "127.0.1.9"}, ECODE_EXISTS, "already in the configuration")
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node3.test",
                    "primary_ip": "127.0.1.2"}, "resource_not_unique", "127.0.1.2")
        self.net.down.add("node3.test")
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node3.test",
                    "primary_ip": "127.0.1.3"}, ECODE_ENVIRON, "Cannot communicate")
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node4.test",
                    "primary_ip": "127.0.1.4", "group": "nosuchgroup"}, ECODE_NOENT,
                   "nosuchgroup")
        self.assertIsNone(self.node("node3.test"))
        self.assertIsNone(self.node("node4.test"))

    def test_pool_size_limits_self_promotion(self):
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 2})
        self.add(2)
        self.add(3)
        self.assertTrue(self.node("node2.test").master_candidate)
        self.assertFalse(self.node("node3.test").master_candidate)
        self.assert_replicated()
        # a regular node has ssconf but no config
        self.assertIsNone(sha1_of(self.net.paths("node3.test").config_file))
        # growing the pool promotes node3 and gives it the config
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 3})
        self.assertTrue(self.node("node3.test").master_candidate)
        self.assert_replicated()


class NodeRolesTest(NodesTestCase):
    pool_size = 3

    def setUp(self) -> None:
        super().setUp()
        for k in (2, 3, 4):
            self.add(k)
        # pool 3: master, node2, node3 are candidates; node4 regular
        self.assertEqual(sorted(n.name for n in self.config.nodes.values()
                                if n.master_candidate), [MASTER, "node2.test", "node3.test"])

    def test_master_cannot_go_offline(self):
        self.fails({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": MASTER, "offline": True},
                   "wrong_input", "master")

    def test_demotion_needs_auto_promote_then_promotes(self):
        self.fails({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                    "master_candidate": False}, ECODE_STATE, "auto promote")
        result = self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                          "offline": True, "auto_promote": True})
        # Ganeti's report: the role flags that changed, in (candidate, drained, offline)
        self.assertEqual(result, [["master_candidate", "False"], ["offline", "True"]])
        cfg = self.config
        self.assertTrue(self.node("node4.test").master_candidate)  # promoted
        self.assertFalse(self.node("node2.test").master_candidate)
        self.assertEqual(sum(n.master_candidate for n in cfg.nodes.values()), 3)
        self.assert_replicated()
        # the promoted node got the live job files
        queue4 = self.net.paths("node4.test").queue_dir
        self.assertTrue(any(name.startswith("job-") for name in os.listdir(queue4)))
        # the offline node is never contacted again
        self.net.contacted.clear()
        self.ok({"OP_ID": "OP_TEST_DELAY", "duration": 0.01})
        self.ok({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["x"]})
        self.assertNotIn("node2.test", [name for name, _ in self.net.contacted])
        self.assertTrue(self.net.contacted)

    def test_offline_node_with_unknown_name_and_uuid_addressing(self):
        self.fails({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "nosuch.test",
                    "drained": True}, ECODE_NOENT, "nosuch.test")
        uuid = self.node("node4.test").uuid
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_uuid": uuid, "drained": True})
        self.assertTrue(self.node("node4.test").drained)
        self.assertEqual(self.config.node_role(self.node("node4.test")), c.NR_DRAINED)

    def test_remove_node_promotes_and_node_forgets_cluster(self):
        paths = self.net.paths("node2.test")
        self.assertIsNotNone(sha1_of(paths.config_file))
        node2 = self.node("node2.test").uuid
        self.ok({"OP_ID": "OP_NODE_REMOVE", "node_name": "node2.test"})
        self.assertIsNone(self.node("node2.test"))
        self.assertTrue(self.node("node4.test").master_candidate)
        self.assertIsNone(sha1_of(paths.config_file))  # node_leave_cluster ran there
        self.assertFalse(os.path.exists(paths.ssconf_file("node_list")))
        self.assertNotIn(node2, self.master.daemon.locks.names("node"))
        self.assertNotIn(node2, self.master.daemon.locks.names("node-res"))
        self.assert_replicated()
        self.fails({"OP_ID": "OP_NODE_REMOVE", "node_name": MASTER}, "wrong_input",
                   "master")


class QueryTest(NodesTestCase):
    def test_query_nodes_live_fields(self):
        self.add(2)
        self.add(3)
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test", "offline": True})
        self.net.down.add("node2.test")
        fields = ["name", "role", "pip", "mtotal", "mfree", "dtotal", "dfree", "ctotal",
                  "cnos", "spfree", "group", "master_candidate", "nosuchfield", "bootid",
                  "mnode"]
        answer = self.client.call("Query", "node", fields, None)
        rows = {row[0][1]: row for row in answer["data"]}
        self.assertEqual(list(rows), [MASTER, "node2.test", "node3.test"])
        master = rows[MASTER]
        self.assertEqual(master[1], [c.RS_NORMAL, "M"])
        for i in range(3, 9):
            self.assertEqual(master[i][0], c.RS_NORMAL, fields[i])
            self.assertIsInstance(master[i][1], int)
        # no LVM template enabled: no lvm-pv report, so no spindle figures (as Ganeti)
        self.assertEqual(master[9], [c.RS_NODATA, None])
        self.assertGreater(master[3][1], 0)
        self.assertEqual(rows["node2.test"][3], [c.RS_NODATA, None])  # unreachable
        self.assertEqual(rows["node3.test"][3], [c.RS_OFFLINE, None])  # offline
        self.assertEqual(rows["node3.test"][1], [c.RS_NORMAL, "O"])
        self.assertEqual(master[10], [c.RS_NORMAL, "default"])
        self.assertEqual(master[12], [c.RS_UNKNOWN, None])
        self.assertEqual(master[13][0], c.RS_NORMAL)  # /proc's boot id
        self.assertRegex(master[13][1], r"^[0-9a-f-]{36}$")
        self.assertLessEqual(master[14][1], master[3][1])  # mnode <= mtotal
        self.assertEqual(answer["fields"][3]["kind"], c.QFT_UNIT)
        # old style, by name and by short name, and a filter
        self.assertEqual(self.client.call("QueryNodes", ["node2"], ["name", "pip"], False),
                         [["node2.test", "127.0.1.2"]])
        filtered = self.client.call("Query", "node", ["name"], ["=", "role", "O"])
        self.assertEqual(filtered["data"], [[[0, "node3.test"]]])
        fields_answer = self.client.call("QueryFields", "node", ["mtotal"])
        self.assertEqual(fields_answer["fields"][0]["title"], "MTotal")

    def test_groups(self):
        self.add(2)
        self.ok({"OP_ID": "OP_GROUP_ADD", "group_name": "rack2",
                 "alloc_policy": "last_resort"})
        self.fails({"OP_ID": "OP_GROUP_ADD", "group_name": "rack2"}, ECODE_EXISTS)
        self.ok({"OP_ID": "OP_GROUP_ASSIGN_NODES", "group_name": "rack2",
                 "nodes": ["node2.test"]})
        rows = self.client.call("QueryGroups", None, ["name", "node_cnt", "node_list",
                                                     "alloc_policy"], False)
        self.assertEqual(rows, [["default", 1, [MASTER], "preferred"],
                                ["rack2", 1, ["node2.test"], "last_resort"]])
        self.fails({"OP_ID": "OP_GROUP_REMOVE", "group_name": "rack2"}, ECODE_STATE,
                   "not empty")
        self.ok({"OP_ID": "OP_GROUP_RENAME", "group_name": "rack2", "new_name": "rack3"})
        self.assertEqual(self.node("node2.test").group,
                         self.config.group_by_name("rack3").uuid)
        self.ok({"OP_ID": "OP_GROUP_ASSIGN_NODES", "group_name": "default",
                 "nodes": ["node2.test"]})
        uuid = self.config.group_by_name("rack3").uuid
        self.ok({"OP_ID": "OP_GROUP_REMOVE", "group_name": uuid})
        self.assertEqual(len(self.config.nodegroups), 1)
        self.assert_replicated()
        # tags on nodes and groups
        self.ok({"OP_ID": "OP_TAGS_SET", "kind": "node", "name": "node2.test",
                 "tags": ["rack:a"]})
        self.ok({"OP_ID": "OP_TAGS_SET", "kind": "nodegroup", "name": "default",
                 "tags": ["g"]})
        self.assertEqual(self.client.call("QueryTags", "node", "node2.test"), ["rack:a"])


class ReplicationTest(NodesTestCase):
    def test_job_files_on_candidates_and_archived_there(self):
        self.add(2)
        paths = self.net.paths("node2.test")
        job_id = self.master.submit({"OP_ID": "OP_TEST_DELAY", "duration": 0.01})
        self.run_job({"OP_ID": "OP_TEST_DELAY", "duration": 0.01})
        job_file = os.path.join(paths.queue_dir, f"job-{job_id}")
        self.assertTrue(os.path.exists(job_file))
        with open(job_file) as f:
            self.assertIn('"status":"success"', f.read())
        self.assertTrue(self.client.call("ArchiveJob", job_id))
        self.master.run_until(self.master.daemon.store.wait_idle())
        self.master.run_until(self.master.daemon.replicator.jobs_idle())
        self.assertFalse(os.path.exists(job_file))
        self.assertTrue(os.path.exists(os.path.join(paths.queue_archive_dir, "0",
                                                    f"job-{job_id}")))

    def test_node_down_verify_then_redist(self):
        self.add(2)
        self.add(3)
        self.net.down.add("node3.test")
        # a change while node3 is down: other nodes go on, the job succeeds (1 of 2 failed)
        self.ok({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["while-down"]})
        self.assertNotEqual(sha1_of(self.net.paths("node3.test").config_file),
                            sha1_of(self.master.paths.config_file))
        status, results, log = self.run_job(VERIFY_BARE)
        self.assertEqual(status, "success")
        job_ids = [jid for ok, jid in results[0]["jobs"]]
        outcomes = [self.client.call("QueryJobs", [jid], ["status", "opresult", "oplog"])[0]
                    for jid in job_ids]
        messages = [e[3] for o in outcomes for entries in o[2] for e in entries]
        self.assertEqual([o[1] for o in outcomes], [[True], [False]], messages)
        self.assertTrue(any("node3.test" in m and "ERROR" in m for m in messages), messages)
        # back up: redist-conf brings it up to date, verify is clean
        self.net.down.clear()
        self.ok({"OP_ID": "OP_CLUSTER_REDIST_CONF"})
        self.assert_replicated()
        _, results, _ = self.run_job(VERIFY_BARE)
        outcomes = [self.client.call("QueryJobs", [jid], ["opresult", "oplog"])[0]
                    for ok, jid in results[0]["jobs"]]
        self.assertEqual([o[0] for o in outcomes], [[True], [True]], outcomes)

    def test_majority_of_candidates_failing_fails_the_job(self):
        self.add(2)
        self.add(3)
        self.net.down.update({"node2.test", "node3.test"})
        status, results, _ = self.run_job({"OP_ID": "OP_TAGS_SET", "kind": "cluster",
                                           "tags": ["x"]})
        self.assertEqual(status, "error")
        self.assertIn("redist-conf", results[-1][1][0])
        self.assertEqual(self.config.cluster.tags, ["x"])  # committed on the master

    def test_delay_on_nodes(self):
        self.add(2)
        self.ok({"OP_ID": "OP_TEST_DELAY", "duration": 0.5, "on_nodes": ["node2.test"]})
        self.assertIn(("node2.test", "test_delay"), self.net.contacted)
        self.net.down.add("node2.test")
        status, results, _ = self.run_job({"OP_ID": "OP_TEST_DELAY", "duration": 0.01,
                                           "on_nodes": ["node2.test"]})
        self.assertEqual(status, "error")
        self.assertIn("node2.test", results[-1][1][0])


class RedistFilesTest(NodesTestCase):
    def test_redist_pushes_ancillary_and_listed_files_to_every_node(self):
        from ganeti.noded.backend.files import extra_allowed_path
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 2})
        self.add(2)
        self.add(3)  # regular: gets the ancillary files too, as in Ganeti
        mpaths = self.master.paths
        with open(mpaths.rapi_pem, "w") as f:
            f.write("rapi certificate\n")
        extra = os.path.join(mpaths.root, "etc", "site-file")
        os.makedirs(os.path.dirname(extra), exist_ok=True)
        with open(extra, "w") as f:
            f.write("site data\n")
        os.makedirs(mpaths.conf_dir, exist_ok=True)
        with open(os.path.join(mpaths.conf_dir, "redistribute-files"), "w") as f:
            f.write("/etc/site-file\n")
        n2, n3 = self.net.paths("node2.test"), self.net.paths("node3.test")
        for paths in (n2, n3):  # each node's administrator allows the file
            with open(extra_allowed_path(paths), "w") as f:
                f.write("/etc/site-file\n")
        self.ok({"OP_ID": "OP_CLUSTER_REDIST_CONF"})
        self.assertEqual(sha1_of(n2.rapi_pem), sha1_of(mpaths.rapi_pem))
        self.assertEqual(sha1_of(os.path.join(n2.root, "etc", "site-file")), sha1_of(extra))
        self.assertEqual(sha1_of(n3.rapi_pem), sha1_of(mpaths.rapi_pem))
        self.assertEqual(sha1_of(os.path.join(n3.root, "etc", "site-file")), sha1_of(extra))
        self.assertIsNone(sha1_of(n3.config_file))  # config.data: candidates only
        # a node that does not allow the file refuses it: redist warns, verify reports it
        os.unlink(extra_allowed_path(n2))
        with open(extra, "w") as f:
            f.write("changed\n")
        status, _, log = self.run_job({"OP_ID": "OP_CLUSTER_REDIST_CONF"})
        self.assertEqual(status, "success")
        self.assertTrue(any("site-file" in m and "node2.test" in m for m in log), log)
        _, results, _ = self.run_job(VERIFY_FAKE)
        group_job = results[0]["jobs"][1][1]
        opresult, oplog = self.client.call("QueryJobs", [group_job], ["opresult", "oplog"])[0]
        self.assertEqual(opresult, [False])
        self.assertTrue(any("site-file" in e[3] and "different checksums" in e[3]
                            for e in oplog[0]))
