"""OP_NODE_ADD with ``readd``: Ganeti's LUNodeAdd re-add path on a whole master daemon
with node daemons in process.

What a re-add keeps (UUID, group, capabilities unless given), what it resets (offline,
drained, the candidate role decided again, node parameters: the given ones or none),
what it refuses (the master, a group, an unknown node, another secondary IP,
vm_capable false on a node with instances) and what it sends (config and ssconf; a
node that is not a candidate drops its old config copy).
"""

from __future__ import annotations

from ganeti.core.errors import ECODE_EXISTS, ECODE_INVAL, ECODE_NOENT, ECODE_STATE
from tests.fakes.nodes import sha1_of, ssconf_of
from tests.master.test_nodes import MASTER, NodesTestCase


class NodeReaddTest(NodesTestCase):
    pool_size = 3

    def setUp(self) -> None:
        super().setUp()
        for k in (2, 3, 4):
            self.add(k)
        # pool 3: master, node2, node3 are candidates; node4 regular

    def readd(self, k: int, **params):
        status, results, log = self.run_job({"OP_ID": "OP_NODE_ADD", "readd": True,
                                             "node_name": f"node{k}.test", **params})
        self.assertEqual(status, "success", f"{results} {log}")
        return log

    def test_readd_resets_flags_keeps_identity_and_decides_the_role_again(self):
        node3 = self.node("node3.test")
        uuid, group, ctime = node3.uuid, node3.group, node3.ctime
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                 "ndparams": {"spindle_count": 4}})
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                 "master_capable": False, "auto_promote": True})
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test", "offline": True})
        self.assertTrue(self.node("node4.test").master_candidate)  # took node3's place
        log = self.readd(3)
        self.assertEqual([m for m in log if "INFO" in m],
                         [" - INFO: Readding a node, the offline/drained flags were reset"])
        node3 = self.node("node3.test")
        self.assertEqual((node3.uuid, node3.group, node3.ctime), (uuid, group, ctime))
        self.assertEqual((node3.offline, node3.drained, node3.powered), (False, False, True))
        self.assertFalse(node3.master_capable)  # kept: not given
        self.assertFalse(node3.master_candidate)
        self.assertEqual(node3.ndparams, {})  # none given: none kept (Ganeti's)
        self.assertEqual(len(self.config.nodes), 4)
        self.assertEqual(sorted(next(iter(self.config.nodegroups.values())).members),
                         sorted(self.config.nodes))
        # back online: it has ssconf again, and no config (not a candidate)
        paths = self.net.paths("node3.test")
        self.assertEqual(ssconf_of(paths), ssconf_of(self.master.paths))
        self.assertIsNone(sha1_of(paths.config_file))

    def test_readd_as_candidate_and_with_new_parameters(self):
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test", "offline": True,
                 "auto_promote": True})
        self.assertTrue(self.node("node4.test").master_candidate)
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 4})
        log = self.readd(2, vm_capable=False, ndparams={"spindle_count": 2})
        self.assertEqual([m for m in log if "INFO" in m],
                         [" - INFO: Readding a node, the offline/drained flags were reset",
                          " - INFO: Node will be a master candidate"])
        node2 = self.node("node2.test")
        self.assertTrue(node2.master_candidate)
        self.assertFalse(node2.vm_capable)
        self.assertEqual(node2.ndparams, {"spindle_count": 2})
        self.assert_replicated()
        self.assertEqual(sha1_of(self.net.paths("node2.test").config_file),
                         sha1_of(self.master.paths.config_file))

    def test_a_candidate_readded_without_room_drops_its_config(self):
        # node2 is a candidate and holds the config; the pool shrinks below the count.
        paths = self.net.paths("node2.test")
        self.assertIsNotNone(sha1_of(paths.config_file))
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 1})
        self.readd(2)
        self.assertFalse(self.node("node2.test").master_candidate)
        self.assertIsNone(sha1_of(paths.config_file))  # node_demote_from_mc ran there

    def test_refusals_change_nothing(self):
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": MASTER, "readd": True},
                   ECODE_STATE, "Cannot readd the master node")
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node3.test", "readd": True,
                    "group": "default"}, ECODE_INVAL,
                   "Cannot pass a node group when a node is being readded")
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node9.test", "readd": True,
                    "primary_ip": "127.0.1.9"}, ECODE_NOENT,
                   "Node node9.test is not in the configuration")
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node3.test",
                    "primary_ip": "127.0.1.3"}, ECODE_EXISTS,
                   "Node node3.test is already in the configuration")
        self.fails({"OP_ID": "OP_NODE_ADD", "node_name": "node3.test", "readd": True,
                    "secondary_ip": "127.0.2.3"}, ECODE_INVAL,
                   "Readded node doesn't have the same IP address configuration as before")
