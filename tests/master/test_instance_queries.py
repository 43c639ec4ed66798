"""Instance queries on the master: Query("instance") and QueryInstances, config and
live fields, as Ganeti's luxid answers them."""

import copy
import json
import os

from twisted.internet import defer
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core import configdraft
from ganeti.core import constants as c
from ganeti.core.errors import ECODE_NOENT, OpExecError, OpPrereqError
from ganeti.core.objects import NIC, Disk, Instance
from ganeti.master.config.nodes import target
from ganeti.master.query import instancequeries as iq
from ganeti.rpc.result import RpcResult
from tests.fakes.configs import DATA_DIR

with open(os.path.join(DATA_DIR, "instance-query-luxid-3.0.json"), encoding="utf-8") as _f:
    GOLDEN = json.load(_f)

N1 = "d9c5fcaa-301e-4c35-b970-90228ee7e76d"   # luxid1.reads.test (the master)
N2 = "7a000000-0000-4000-8000-000000000900"   # luxid2.reads.test
RUNNING = {"memory": 512, "vcpus": 2, "state": iq.HV_STATE_RUNNING, "time": 1.5}
STOPPED = {"memory": 0, "vcpus": 2, "state": iq.HV_STATE_SHUTDOWN, "time": 0}


def config():
    return configmod.parse(copy.deepcopy(GOLDEN["config"]))


class Nodes:
    """A live collector: fixed answers per node UUID, recording who was asked."""

    def __init__(self, answers=None):
        self.answers = answers or {}
        self.asked: list[list[str]] = []
        self.hvparams: list[dict] = []

    def __call__(self, nodes, hvparams):
        self.asked.append(sorted(n.name for n in nodes))
        self.hvparams.append(hvparams)
        return defer.succeed({n.uuid: self.answers.get(n.uuid) for n in nodes})


class QueryCase(SynchronousTestCase):
    def setUp(self):
        self.cfg = config()
        self.nodes = Nodes()

    @property
    def queries(self):
        # These tests change the config in place, which masterd never does (a change
        # replaces committed objects): each query gets a fresh static cell cache.
        return iq.InstanceQueries(lambda: self.cfg, self.nodes)

    def inst(self, name):
        return self.cfg.instance_by_name(name)

    def query(self, fields, qfilter=None):
        return self.successResultOf(defer.ensureDeferred(
            self.queries.query_instance(fields, qfilter)))

    def rows(self, fields, qfilter=None):
        """name -> [[status, value], ...] of the other fields."""
        answer = self.query(["name", *fields], qfilter)
        return {row[0][1]: row[1:] for row in answer["data"]}

    def values(self, fields, qfilter=None):
        return {name: [v for _s, v in row] for name, row in self.rows(fields, qfilter).items()}


class GoldenTest(QueryCase):
    def test_every_field_as_ganeti_luxid(self):
        """Every field of every instance equals the real luxid 3.0's answer on the same
        config (no node daemon answering: live fields have no data)."""
        answer = self.query(GOLDEN["fields"])
        self.assertEqual([f["name"] for f in answer["fields"]], GOLDEN["fields"])
        ours = json.loads(json.dumps(answer["data"]))
        self.assertEqual(len(ours), len(GOLDEN["data"]))
        for row, real in zip(ours, GOLDEN["data"], strict=True):
            for name, mine, theirs in zip(GOLDEN["fields"], row, real, strict=True):
                self.assertEqual(mine, theirs, f"{row[0]}: {name}")

    def test_old_style_equals_query(self):
        fields = ["name", "pnode", "snodes", "disk.sizes", "nic.macs", "be/memory", "status"]
        rows = self.successResultOf(defer.ensureDeferred(
            self.queries.query_instances(None, fields, False)))
        self.assertEqual(rows, [[v for _s, v in row] for row in self.query(fields)["data"]])


class StatusTest(QueryCase):
    def status(self, name):
        return self.values(["status", "oper_state", "oper_ram", "oper_vcpus"])[name]

    def test_running_and_stopped(self):
        self.inst("plain1.reads.test").admin_state = c.ADMINST_UP
        self.nodes.answers = {N1: {"plain1.reads.test": RUNNING, "diskless1.reads.test": RUNNING}}
        got = self.values(["status", "oper_state", "oper_ram", "oper_vcpus"])
        self.assertEqual(got["plain1.reads.test"], ["running", True, 512, 2])
        self.assertEqual(got["diskless1.reads.test"], ["ERROR_up", True, 512, 2])
        self.assertEqual(got["drbd1.reads.test"], ["ERROR_down", False, None, None])
        self.assertEqual(got["file1.reads.test"], ["ADMIN_offline", False, None, None])
        rows = self.rows(["oper_ram"])
        self.assertEqual(rows["drbd1.reads.test"], [[c.RS_UNAVAIL, None]])

    def test_admin_down(self):
        self.nodes.answers = {N1: {}}
        self.assertEqual(self.status("plain1.reads.test"), ["ADMIN_down", False, None, None])

    def test_user_down(self):
        self.nodes.answers = {N1: {"drbd1.reads.test": STOPPED}}
        self.assertEqual(self.status("drbd1.reads.test")[0], "ERROR_down")
        self.cfg.cluster.enabled_user_shutdown = True
        self.assertEqual(self.status("drbd1.reads.test")[0], "USER_down")
        plain = self.inst("plain1.reads.test")
        plain.admin_state_source = c.USER_SOURCE
        self.assertEqual(self.status("plain1.reads.test")[0], "USER_down")
        self.cfg.cluster.enabled_user_shutdown = False
        self.assertEqual(self.status("plain1.reads.test")[0], "ADMIN_down")

    def test_kvm_user_down_needs_its_parameter(self):
        self.cfg.cluster.enabled_user_shutdown = True
        drbd = self.inst("drbd1.reads.test")
        drbd.hypervisor = c.HT_KVM
        self.nodes.answers = {N1: {"drbd1.reads.test": STOPPED}}
        self.assertEqual(self.status("drbd1.reads.test")[0], "ERROR_down")
        drbd.hvparams = {"user_shutdown": True}
        self.assertEqual(self.status("drbd1.reads.test")[0], "USER_down")

    def test_wrong_node(self):
        # plain1 runs on luxid2, the primary of another instance asked in the same query
        self.inst("diskless1.reads.test").primary_node = N2
        self.nodes.answers = {N1: {}, N2: {"plain1.reads.test": RUNNING}}
        self.assertEqual(self.status("plain1.reads.test"), ["ERROR_wrongnode", True, 512, 2])

    def test_node_down(self):
        self.nodes.answers = {}  # the node did not answer
        got = self.rows(["status", "oper_state", "oper_ram", "console"])["drbd1.reads.test"]
        self.assertEqual(got, [[0, "ERROR_nodedown"], [c.RS_NODATA, None],
                               [c.RS_NODATA, None], [c.RS_NODATA, None]])

    def test_node_offline_is_not_asked(self):
        self.cfg.nodes[N1].offline = True
        got = self.rows(["status", "oper_state", "oper_ram", "console"])["drbd1.reads.test"]
        self.assertEqual(got, [[0, "ERROR_nodeoffline"], [c.RS_NODATA, None],
                               [c.RS_OFFLINE, None], [c.RS_OFFLINE, None]])
        self.assertEqual(self.nodes.asked, [])

    def test_console_of_the_fake_hypervisor(self):
        self.nodes.answers = {N1: {}}
        self.assertEqual(self.values(["console"])["plain1.reads.test"], [
            {"instance": "plain1.reads.test", "kind": "msg",
             "message": "Console not available for fake hypervisor"}])


class LiveCallTest(QueryCase):
    def test_not_asked_for_config_fields(self):
        self.query(["name", "os", "pnode", "disk.sizes"], ["=", "admin_state", "up"])
        self.assertEqual(self.nodes.asked, [])

    def test_asked_once_of_the_primary_nodes(self):
        self.inst("plain1.reads.test").primary_node = N2
        self.query(["name", "status"])
        self.assertEqual(self.nodes.asked, [["luxid1.reads.test", "luxid2.reads.test"]])
        self.assertEqual(self.nodes.hvparams, [{"fake": {"migration_mode": "live"}}])

    def test_config_filter_applies_before_asking(self):
        self.inst("plain1.reads.test").primary_node = N2
        got = self.values(["oper_state"], ["=", "name", "plain1.reads.test"])
        self.assertEqual(list(got), ["plain1.reads.test"])
        self.assertEqual(self.nodes.asked, [["luxid2.reads.test"]])
        self.nodes.asked.clear()
        self.values(["status"], ["=", "disk_template", "file"])
        self.assertEqual(self.nodes.asked, [["luxid1.reads.test"]])

    def test_nobody_asked_when_the_filter_matches_nothing(self):
        self.assertEqual(self.query(["status"], ["=", "os", "nothing"])["data"], [])
        self.assertEqual(self.nodes.asked, [])

    def test_live_filter(self):
        self.nodes.answers = {N1: {"drbd1.reads.test": RUNNING}}
        got = self.values(["oper_ram"], ["=", "status", "running"])
        self.assertEqual(got, {"drbd1.reads.test": [512]})


class NamesTest(QueryCase):
    def test_named_in_order_given_with_short_names(self):
        got = self.query(["name"], ["|", ["=", "name", "plain1"],
                                    ["=", "name", "diskless1.reads.test"]])
        self.assertEqual([r[0][1] for r in got["data"]],
                         ["plain1.reads.test", "diskless1.reads.test"])

    def test_unknown_name(self):
        d = defer.ensureDeferred(self.queries.query_instance(["name"], ["=", "name", "nope"]))
        err = self.failureResultOf(d, OpPrereqError).value
        self.assertEqual(err.args, ("Instance name nope not found", ECODE_NOENT))
        d = defer.ensureDeferred(self.queries.query_instances(["nope"], ["name"], False))
        self.assertEqual(self.failureResultOf(d, OpPrereqError).value.args[1], ECODE_NOENT)

    def test_old_style_refuses_unknown_fields(self):
        d = defer.ensureDeferred(self.queries.query_instances(None, ["name", "bogus"], False))
        self.assertIn("bogus", str(self.failureResultOf(d, OpPrereqError).value))

    def test_old_style_refuses_bad_names(self):
        d = defer.ensureDeferred(self.queries.query_instances("plain1", ["name"], False))
        self.failureResultOf(d, OpPrereqError)

    def test_unknown_selected_field_is_reported_not_refused(self):
        answer = self.query(["name", "bogus"])
        self.assertEqual(answer["fields"][1]["kind"], c.QFT_UNKNOWN)
        self.assertEqual(answer["data"][0][1], [c.RS_UNKNOWN, None])

    def test_nice_order(self):
        for i in (10, 2, 1):
            inst = copy.deepcopy(self.inst("diskless1.reads.test"))
            inst.uuid, inst.name = f"uuid-{i}", f"web{i}.reads.test"
            self.cfg.instances[inst.uuid] = inst
        names = [r[0][1] for r in self.query(["name"])["data"]]
        self.assertEqual(names[-3:], ["web1.reads.test", "web2.reads.test", "web10.reads.test"])


class ConfigFieldsTest(QueryCase):
    def test_disks(self):
        got = self.values(["disk_template", "disk_usage", "disk.count", "disk.sizes",
                           "disk.size/1", "sda_size", "sdb_size"])
        self.assertEqual(got["drbd1.reads.test"], ["drbd", 2048 + 128, 1, [2048], None, 2048,
                                                   None])
        self.assertEqual(got["file1.reads.test"], ["file", 768, 2, [256, 512], 512, 256, 512])
        self.assertEqual(got["diskless1.reads.test"], ["diskless", 0, 0, [], None, None, None])

    def test_mixed_and_missing_disks(self):
        file1 = self.inst("file1.reads.test")
        self.cfg.disks[file1.disks[1]].dev_type = c.DT_PLAIN
        self.assertEqual(self.values(["disk_template"])["file1.reads.test"], ["mixed"])
        file1.disks.append("no-such-disk")
        rows = self.rows(["disk_template", "disk.sizes", "disk_usage", "disk.size/0"])
        self.assertEqual([s for s, _v in rows["file1.reads.test"]], [c.RS_NODATA] * 4)

    def test_nics(self):
        got = self.values(["nic.count", "nic.modes", "nic.links", "nic.bridges", "nic.vlans",
                           "nic.networks.names", "nic.mode/1", "nic.bridge/1", "ip", "mac",
                           "nic_link"])
        self.assertEqual(got["drbd1.reads.test"], [
            2, ["bridged", "routed"], [c.DEFAULT_BRIDGE, "rt1"], [c.DEFAULT_BRIDGE, None],
            [None, None], [None, None], "routed", None, None, "aa:00:00:00:00:02",
            c.DEFAULT_BRIDGE])
        self.assertEqual(got["plain1.reads.test"][5], ["backend"])

    def test_openvswitch_vlan(self):
        drbd = self.inst("drbd1.reads.test")
        drbd.nics = [NIC(uuid="n1", mac="aa:00:00:00:00:09",
                         nicparams={"mode": "openvswitch", "link": "sw0", "vlan": ".100"})]
        got = self.values(["nic.vlans", "nic.vlan/0", "nic.bridges", "nic.bridge/0"])
        self.assertEqual(got["drbd1.reads.test"], [[".100"], ".100", [None], None])

    def test_nodes_and_groups(self):
        got = self.values(["pnode", "pnode.group", "snodes", "snodes.group",
                           "snodes.group.uuid"])
        group = self.cfg.nodes[N2].group
        self.assertEqual(got["drbd1.reads.test"], ["luxid1.reads.test", "default",
                                                   ["luxid2.reads.test"], ["default"], [group]])
        self.assertEqual(got["plain1.reads.test"][2:], [[], [], []])

    def test_parameters(self):
        plain = self.inst("plain1.reads.test")
        plain.hvparams = {}
        self.cfg.cluster.beparams["default"] = {"maxmem": 256}
        got = self.values(["be/maxmem", "be/memory", "vcpus", "be/minmem", "custom_beparams",
                           "hv/acpi"])
        self.assertEqual(got["plain1.reads.test"][:5], [512, 512, 2, 128,
                                                        {"maxmem": 512, "vcpus": 2}])
        self.assertEqual(got["drbd1.reads.test"][:3], [256, 256, 1])
        self.assertEqual(self.rows(["hv/acpi"])["plain1.reads.test"], [[c.RS_UNAVAIL, None]])
        plain.hypervisor = c.HT_KVM
        self.assertEqual(self.values(["hv/acpi"])["plain1.reads.test"], [True])

    def test_global_hv_parameters_left_out(self):
        plain = self.inst("plain1.reads.test")
        plain.hypervisor = c.HT_KVM
        hv = self.values(["hvparams"])["plain1.reads.test"][0]
        self.assertNotIn("migration_port", hv)
        self.assertIn("kernel_args", hv)

    def test_forthcoming_tags_and_ports(self):
        drbd = self.inst("drbd1.reads.test")
        drbd.forthcoming = True
        drbd.tags = ["b", "a"]
        got = self.values(["forthcoming", "tags", "network_port"])
        self.assertEqual(got["drbd1.reads.test"], [True, ["a", "b"], 11001])
        self.assertEqual(self.rows(["network_port"])["plain1.reads.test"],
                         [[c.RS_UNAVAIL, None]])

    def test_sorted_list_is_kept_with_the_config(self):
        first = iq.sorted_instances(self.cfg)
        self.assertIs(iq.sorted_instances(self.cfg), first)
        new = Instance(uuid="u-new", name="aaa.reads.test", primary_node=N1,
                       hypervisor=c.HT_FAKE)
        self.cfg.instances[new.uuid] = new
        self.assertEqual(iq.sorted_instances(self.cfg)[0].name, "aaa.reads.test")

    def test_secondary_nodes_in_disk_order(self):
        plain = self.inst("plain1.reads.test")
        extra = Disk(uuid="d-x", dev_type=c.DT_PLAIN, logical_id=["xenvg", "x"], size=1,
                     nodes=[N2, N1])
        self.cfg.disks[extra.uuid] = extra
        plain.disks.append(extra.uuid)
        self.assertEqual(iq.secondary_nodes(self.cfg, plain), [N2])


class RpcCollectorTest(SynchronousTestCase):
    """The collector masterd uses: all_instances_info through the node RPC client."""

    def test_asks_with_the_hypervisors_and_keeps_only_answers(self):
        cfg = config()
        calls = []

        class Client:
            def call(self, nodes, name, args):
                calls.append(([n.name for n in nodes], name, args))
                return defer.succeed({
                    "luxid1.reads.test": RpcResult("luxid1.reads.test", True,
                                                   {"x": RUNNING}),
                    "luxid2.reads.test": RpcResult("luxid2.reads.test", False,
                                                   fail_msg="connection refused")})

        collect = iq.rpc_live_collector(lambda: Client(), target)
        nodes = [cfg.nodes[N1], cfg.nodes[N2]]
        got = self.successResultOf(defer.ensureDeferred(
            collect(nodes, {"fake": {"migration_mode": "live"}})))
        self.assertEqual(got, {N1: {"x": RUNNING}, N2: None})
        self.assertEqual(calls, [(["luxid1.reads.test", "luxid2.reads.test"],
                                  "all_instances_info",
                                  [["fake"], {"fake": {"migration_mode": "live"}}])])

    def test_no_certificate_means_no_answers(self):
        def rpc():
            raise OpExecError("no certificate")
        collect = iq.rpc_live_collector(rpc, target)
        cfg = config()
        self.assertEqual(self.successResultOf(defer.ensureDeferred(
            collect([cfg.nodes[N1]], {}))), {})


class StaticCellsTest(SynchronousTestCase):
    """Config-derived cells are reused while their committed objects are the same."""

    def setUp(self):
        self.cfg = config()
        self.nodes = Nodes()
        self.queries = iq.InstanceQueries(lambda: self.cfg, self.nodes)

    def commit(self, change):
        """The next committed config, as the config writer makes it (copy-on-write)."""
        draft = configdraft.Draft(self.cfg)
        change(draft)
        self.cfg, _delta = configdraft.finish(draft)

    def old_style(self, fields):
        return self.successResultOf(defer.ensureDeferred(
            self.queries.query_instances(None, fields, False)))

    def fresh(self, fields):
        return self.successResultOf(defer.ensureDeferred(
            iq.InstanceQueries(lambda: self.cfg, self.nodes).query_instances(None, fields,
                                                                             False)))

    def cache(self, kind, fields):
        return self.queries._static[(kind, tuple(fields))]

    def test_unchanged_instances_hit_changed_ones_recompute(self):
        fields = ["name", "pnode", "disk.sizes", "beparams", "nic.networks.names", "status",
                  "oper_ram"]
        first = self.old_style(fields)
        cache = self.cache("old", fields)
        self.assertEqual((cache.hits, cache.misses), (0, len(first)))
        self.assertEqual(self.old_style(fields), first)
        self.assertEqual(cache.hits, len(first))

        def grow(cfg):
            inst = cfg.instance_by_name("plain1.reads.test")
            cfg.disks[inst.disks[0]].size += 1024

        def rename_node(cfg):
            node = cfg.nodes[cfg.instance_by_name("drbd1.reads.test").primary_node]
            node.name = "renamed.reads.test"

        for change in (grow, rename_node):
            self.commit(change)
            self.assertEqual(self.old_style(fields), self.fresh(fields))
        cache.hits = cache.misses = 0
        self.commit(lambda cfg: setattr(cfg.instance_by_name("plain1.reads.test"),
                                        "admin_state", c.ADMINST_UP))
        self.assertEqual(self.old_style(fields), self.fresh(fields))
        self.assertEqual((cache.hits, cache.misses), (len(first) - 1, 1))

    def test_cluster_defaults_change_every_row(self):
        fields = ["name", "beparams", "hvparams"]
        self.old_style(fields)
        self.commit(lambda cfg: cfg.cluster.beparams["default"].update(vcpus=7))
        got = self.old_style(fields)
        self.assertEqual(got, self.fresh(fields))
        self.assertIn(7, [row[1]["vcpus"] for row in got])

    def test_live_cells_are_always_asked(self):
        fields = ["name", "oper_state"]
        self.old_style(fields)
        asked = len(self.nodes.asked)
        self.old_style(fields)
        self.assertEqual(len(self.nodes.asked), asked + 1)
        node = self.cfg.instance_by_name("plain1.reads.test").primary_node
        self.nodes.answers[node] = {"plain1.reads.test": {"memory": 128, "state": 0}}
        got = {row[0]: row[1] for row in self.old_style(fields)}
        self.assertIs(got["plain1.reads.test"], True)
        self.assertEqual(self.old_style(fields), self.fresh(fields))

    def test_query_rows_and_removed_instances(self):
        fields = ["name", "disk_template", "snodes"]
        first = self.successResultOf(defer.ensureDeferred(
            self.queries.query_instance(fields, None)))["data"]
        gone = self.cfg.instance_by_name("plain1.reads.test").uuid

        def remove(cfg):
            del cfg.instances[gone]
        self.commit(remove)
        second = self.successResultOf(defer.ensureDeferred(
            self.queries.query_instance(fields, None)))["data"]
        self.assertEqual(len(second), len(first) - 1)
        self.assertNotIn("plain1.reads.test", [row[0][1] for row in second])

    def test_field_lists_are_bounded(self):
        for k in range(iq.STATIC_CACHE_LISTS + 3):
            self.old_style(["name"] + ["uuid"] * k)
        self.assertEqual(len(self.queries._static), iq.STATIC_CACHE_LISTS)

