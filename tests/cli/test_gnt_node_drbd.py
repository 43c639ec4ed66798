"""gnt-node list-drbd: the node-drbd confd request and Ganeti's table, with the
candidates' answers injected (the confd server's side: tests/confd)."""

import io

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_node
from ganeti.confd import client
from ganeti.core import constants as c
from tests.confd.test_client import KEY, make_node

PEERS = ["10.251.0.1", "10.251.0.2"]
ROWS = [["node2.example.com", 1, "inst2.example.com", "disk/0", "secondary",
         "node1.example.com"],
        ["node2.example.com", 0, "inst1.example.com", "disk/0", "primary", "node3.example.com"],
        ["node2.example.com", 12, "inst1.example.com", "disk/1", "primary",
         "node3.example.com"]]


class ListDrbdTest(SynchronousTestCase):
    def setUp(self):
        self.paths = make_node(self, PEERS)
        self.calls = []
        self.replies = [client.ConfdReply(PEERS[0], 1814, 0, ROWS, 7)]
        self.patch(client, "query_blocking", self.query)

    def query(self, peers, key, req_type, q, **kwargs):
        self.calls.append((peers, key, req_type, q))
        return client.summarise(self.replies, len(peers), False)

    def gnt_node(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        code = gnt_node.main(list(argv), stdout=out, stderr=err, environ=self.paths.env())
        return code, out.getvalue(), err.getvalue()

    def test_table_sorted_as_ganeti(self):
        code, out, err = self.gnt_node("list-drbd", "node2.example.com")
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(self.calls, [(PEERS, KEY, c.CONFD_REQ_NODE_DRBD,
                                       "node2.example.com")])
        self.assertEqual(out.splitlines(), [
            # (the header's last column padded, as Ganeti's GenerateTable does)
            "Node              Minor Instance          Disk   Role      PeerNode         ",
            "node2.example.com     0 inst1.example.com disk/0 primary   node3.example.com",
            "node2.example.com     1 inst2.example.com disk/0 secondary node1.example.com",
            "node2.example.com    12 inst1.example.com disk/1 primary   node3.example.com"])

    def test_no_headers_and_separator(self):
        code, out, _ = self.gnt_node("list-drbd", "--no-headers", "--separator=|",
                                     "node2.example.com")
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines()[0],
                         "node2.example.com|0|inst1.example.com|disk/0|primary|"
                         "node3.example.com")
        self.assertEqual(len(out.splitlines()), 3)

    def test_unknown_node_is_confds_error_status(self):
        self.replies = [client.ConfdReply(PEERS[0], 1814, 2, 2, 7)]
        code, out, err = self.gnt_node("list-drbd", "nosuch.example.com")
        self.assertEqual((code, out), (1, ""))
        self.assertEqual(err, "Query gave non-ok status '2': 2\n")

    def test_no_answer_and_invalid_answer(self):
        self.replies = []
        code, _, err = self.gnt_node("list-drbd", "node2.example.com")
        self.assertEqual((code, err), (1, "Did not receive all expected confd replies\n"))
        self.replies = [client.ConfdReply(PEERS[0], 1814, 0, [["node2", "x"]], 7)]
        code, _, err = self.gnt_node("list-drbd", "node2.example.com")
        self.assertEqual(code, 1)
        self.assertTrue(err.startswith("Invalid response from server"), err)

    def test_one_node_is_required(self):
        code, _, err = self.gnt_node("list-drbd")
        self.assertEqual(code, 1)
        self.assertIn("NODE", err)
