"""Query("network"), QueryNetworks and OP_QUERY over networks: Ganeti's fields and values."""

from twisted.internet import defer

from ganeti.core import constants as c
from ganeti.core.queryfields.networks import NETWORK_FIELDS
from tests.fakes.masterd import InProcessMaster
from tests.master.test_lu_network import INST_UUID, NetworkLUTestCase, add_op, connect_op

ALL = ["name", "network", "gateway", "network6", "gateway6", "mac_prefix", "free_count",
       "reserved_count", "map", "external_reservations", "group_cnt", "group_list",
       "inst_cnt", "inst_list", "tags", "serial_no"]


class NetworkQueryTest(NetworkLUTestCase):
    def setUp(self):
        super().setUp()
        self.result(self.submit(add_op("net1", "10.1.0.0/28", gateway="10.1.0.1",
                                       tags=["t1"])))
        self.result(self.submit(add_op("net10", "10.10.0.0/30", mac_prefix="aa:00:01",
                                       network6="2001:db8::/64")))
        self.result(self.submit(add_op("net2", "10.2.0.0/29")))
        self.result(self.submit(connect_op("net1", conflicts_check=False, mode="routed",
                                           link="rt0")))
        self.result(self.submit(connect_op("net1", group="empty")))
        uuid = self.net("net1").uuid

        def use(cfg):
            cfg.instances[INST_UUID].nics[0].network = uuid
            cfg.instances[INST_UUID].serial_no += 1
        self.successResultOf(self.daemon.config_writer.update(use))

    def test_query_every_field(self):
        answer = self.query(c.QR_NETWORK, ALL, None)
        self.assertEqual([f["name"] for f in answer["fields"]], ALL)
        rows = [[value for _, value in row] for row in answer["data"]]
        self.assertEqual(rows[0], [
            "net1", "10.1.0.0/28", "10.1.0.1", None, None, None, 13, 3,
            "XX.............X", "10.1.0.0, 10.1.0.1, 10.1.0.15", 2,
            [["default", "routed", "rt0", ""], ["empty", "bridged", "br0", ""]],
            1, ["inst1.test"], ["t1"], 1])
        self.assertEqual([row[0] for row in rows], ["net1", "net2", "net10"])  # nice order
        self.assertEqual(rows[2][:10], ["net10", "10.10.0.0/30", None, "2001:db8::/64",
                                        None, "aa:00:01", 2, 2, "X..X",
                                        "10.10.0.0, 10.10.0.3"])
        statuses = [status for status, _ in answer["data"][2]]
        self.assertEqual(statuses[2], c.RS_UNAVAIL)  # no gateway
        self.assertEqual(statuses[0], c.RS_NORMAL)

    def test_named_and_filtered(self):
        answer = self.query(c.QR_NETWORK, ["name"], ["|", ["=", "name", "net2"],
                                                     ["=", "name", "net1"]])
        self.assertEqual([row[0][1] for row in answer["data"]], ["net2", "net1"])
        answer = self.query(c.QR_NETWORK, ["name"], [">", "group_cnt", 0])
        self.assertEqual([row[0][1] for row in answer["data"]], ["net1"])
        failure = self.failureResultOf(self._deferred_query(["=", "name", "nope"]))
        self.assertEqual(failure.value.args, ("Network name nope not found",
                                              "unknown_entity"))

    def _deferred_query(self, qfilter):
        return defer.Deferred.fromCoroutine(
            self.methods.query(c.QR_NETWORK, ["name"], qfilter))

    def test_old_style_and_fields(self):
        rows = self.methods.registry.implementations()["QueryNetworks"](
            ["net10", self.net("net2").uuid, "nope"], ["name", "free_count"], False)
        self.assertEqual(rows, [["net2", 6], ["net10", 2]])
        fields = self.methods.query_fields(c.QR_NETWORK, None)["fields"]
        self.assertEqual({f["name"]: f["title"] for f in fields},
                         {name: decl.title for name, decl in NETWORK_FIELDS.items()})


class OverLuxiTest(NetworkLUTestCase):
    def test_op_query_and_luxi(self):
        master = InProcessMaster(self.mktemp())
        self.addCleanup(master.stop)
        status, results, _ = master.finish(master.submit(add_op()))
        self.assertEqual(status, "success")
        client = master.client()
        self.assertEqual(client.call("QueryNetworks", [], ["name", "network"], False),
                         [["net1", "10.1.0.0/24"]])
        status, results, _ = master.finish(master.submit(
            {"OP_ID": "OP_QUERY", "what": "network", "fields": ["name", "reserved_count"]}))
        self.assertEqual(results[0]["data"], [[[0, "net1"], [0, 2]]])
