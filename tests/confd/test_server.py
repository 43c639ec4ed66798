"""ganeti-confd answers, datagram checks, replay window and config reload."""

import copy
import json
import os

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.python import usage
from twisted.trial.unittest import SynchronousTestCase

from ganeti.confd import protocol
from ganeti.confd.server import ConfdAnswerer, ConfdProtocol, RateLimitedLog, ReplayCache
from ganeti.confd.service import ConfdDaemon, ConfigWatcher, load_snapshot
from ganeti.confd.tap import Options, makeService
from ganeti.core import config
from ganeti.core import constants as gc
from ganeti.core.errors import GenericError
from ganeti.core.paths import Paths
from ganeti.core.ssconf import node_primary_ip as primary_ip
from tests.fakes.configs import reference_config_dict

KEY = b"confd-test-key"
NOW = 1700000000.0
N1, N2 = "n0000000-0000-4000-8000-000000000001", "n0000000-0000-4000-8000-000000000002"
N3, N4 = "n0000000-0000-4000-8000-000000000003", "n0000000-0000-4000-8000-000000000004"


def confd_config_dict():
    """The 3.1-shaped reference config plus an offline and a regular node and a
    second instance (plain disk, NIC on the default link)."""
    raw = copy.deepcopy(reference_config_dict())
    group = next(iter(raw["nodegroups"]))
    base = raw["nodes"][N2]
    for uuid, name, ip, offline in ((N3, "node3.example.test", "192.0.2.3", True),
                                    (N4, "node4.example.test", "192.0.2.4", False)):
        node = dict(copy.deepcopy(base), uuid=uuid, name=name, primary_ip=ip,
                    secondary_ip=ip, offline=offline, drained=False,
                    master_candidate=False, group=group, serial_no=9)
        raw["nodes"][uuid] = node
    inst = copy.deepcopy(next(iter(raw["instances"].values())))
    disk_uuid = "d0000000-0000-4000-8000-0000000000a2"
    inst.update(uuid="i0000000-0000-4000-8000-000000000002", name="db1.example.test",
                primary_node=N2, disks=[disk_uuid], serial_no=11)
    inst["nics"] = [{"uuid": "c1000000-0000-4000-8000-000000000002", "mac": "aa:00:00:11:22:44",
                     "ip": "192.0.2.60", "nicparams": {}}]
    raw["instances"][inst["uuid"]] = inst
    raw["disks"][disk_uuid] = {"uuid": disk_uuid, "dev_type": "plain",
                               "logical_id": ["xenvg", "db1.disk0"], "nodes": [N2],
                               "iv_name": "disk/0", "size": 2048, "mode": "rw",
                               "params": {}, "children": []}
    return raw


def answerer(raw=None):
    raw = raw or confd_config_dict()
    return ConfdAnswerer(config.parse(raw), raw)


def request(atype, query=None):
    return protocol.Request(type=atype, query=query, rsalt="r")


class AnswerTest(SynchronousTestCase):
    def setUp(self):
        self.a = answerer()
        self.serial = 7  # the cluster's serial_no in the reference config

    def ask(self, atype, query=None):
        return self.a.answer(request(atype, query))

    def test_ping(self):
        self.assertEqual(self.ask(gc.CONFD_REQ_PING), (0, 3010000, 0))

    def test_cluster_master(self):
        self.assertEqual(self.ask(gc.CONFD_REQ_CLUSTER_MASTER),
                         (0, "node1.example.test", self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_CLUSTER_MASTER, {"3": [0, 1, 2]}),
                         (0, ["node1.example.test", "192.0.2.254", "192.0.2.1"], self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_CLUSTER_MASTER, {"3": [2]}),
                         (0, ["192.0.2.1"], self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_CLUSTER_MASTER, {}), (0, [], self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_CLUSTER_MASTER, "x"), (1, 2, 0))
        self.assertEqual(self.ask(gc.CONFD_REQ_CLUSTER_MASTER, {"3": [7]}), (1, 2, 0))

    def test_node_role_precedence(self):
        expect = {"node1.example.test": gc.CONFD_NODE_ROLE_MASTER,
                  "node2.example.test": gc.CONFD_NODE_ROLE_DRAINED,
                  "node3.example.test": gc.CONFD_NODE_ROLE_OFFLINE,
                  "node4.example.test": gc.CONFD_NODE_ROLE_REGULAR}
        for name, role in expect.items():
            self.assertEqual(self.ask(gc.CONFD_REQ_NODE_ROLE_BYNAME, name),
                             (0, role, self.serial))
        raw = confd_config_dict()
        raw["nodes"][N4]["master_candidate"] = True
        raw["nodes"][N3]["master_candidate"] = True
        raw["nodes"][N3]["drained"] = True
        a = answerer(raw)
        self.assertEqual(a.answer(request(1, "node4.example.test"))[1],
                         gc.CONFD_NODE_ROLE_CANDIDATE)
        self.assertEqual(a.answer(request(1, "node3.example.test"))[1], gc.CONFD_NODE_ROLE_DRAINED)
        self.assertEqual(self.ask(gc.CONFD_REQ_NODE_ROLE_BYNAME, "nope"), (1, 0, 0))
        self.assertEqual(self.ask(gc.CONFD_REQ_NODE_ROLE_BYNAME, None), (1, 2, 0))

    def test_pip_lists(self):
        self.assertEqual(self.ask(gc.CONFD_REQ_NODE_PIP_LIST),
                         (0, ["192.0.2.4", "192.0.2.3", "192.0.2.2", "192.0.2.1"], self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_MC_PIP_LIST), (0, ["192.0.2.1"], self.serial))

    def test_instances_ips_list(self):
        self.assertEqual(self.ask(gc.CONFD_REQ_INSTANCES_IPS_LIST),
                         (0, ["192.0.2.60"], self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_INSTANCES_IPS_LIST, "br1"),
                         (0, ["192.0.2.50"], self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_INSTANCES_IPS_LIST, "none"), (0, [], self.serial))
        self.assertEqual(self.ask(gc.CONFD_REQ_INSTANCES_IPS_LIST, {"0": "x"}), (1, 2, 0))

    def test_node_pip_by_instance_ip(self):
        t = gc.CONFD_REQ_NODE_PIP_BY_INSTANCE_IP
        self.assertEqual(self.ask(t, {"1": "192.0.2.60"}), (0, "192.0.2.2", self.serial))
        self.assertEqual(self.ask(t, {"1": "192.0.2.50", "0": "br1"}),
                         (0, "192.0.2.1", self.serial))
        self.assertEqual(self.ask(t, {"1": "192.0.2.50"}), (1, 0, 0))  # wrong link
        self.assertEqual(self.ask(t, {"0": "br1", "2": ["192.0.2.50", "10.0.0.1"]}),
                         (0, [[0, "192.0.2.1", self.serial], [1, 0, 0]], self.serial))
        self.assertEqual(self.ask(t, "192.0.2.60"), (1, 2, 0))
        self.assertEqual(self.ask(t, None), (1, 2, 0))
        self.assertEqual(self.ask(t, {}), (1, 2, 0))

    def test_node_drbd(self):
        t = gc.CONFD_REQ_NODE_DRBD
        self.assertEqual(self.ask(t, "node1.example.test"),
                         (0, [["node1.example.test", 0, "web1.example.test", "disk/0", "primary",
                               "node2.example.test"]], 3))
        status, answer, _ = self.ask(t, "node2.example.test")
        self.assertEqual(answer, [["node2.example.test", 0, "web1.example.test", "disk/0",
                                   "secondary", "node1.example.test"]])
        self.assertEqual(self.ask(t, "node4.example.test"), (0, [], 9))
        self.assertEqual(self.ask(t, "nope"), (1, 0, 0))

    def test_node_instances(self):
        t = gc.CONFD_REQ_NODE_INSTANCES
        raw = confd_config_dict()
        web1 = raw["instances"]["i0000000-0000-4000-8000-000000000001"]
        self.assertEqual(self.ask(t, "node1.example.test"), (0, [[web1], []], 3))
        prim, sec = self.ask(t, "node2.example.test")[1]
        self.assertEqual(([i["name"] for i in prim], [i["name"] for i in sec]),
                         (["db1.example.test"], ["web1.example.test"]))
        self.assertEqual(self.ask(t, "nope"), (1, 0, 0))
        self.assertEqual(self.ask(t, {"1": 2}), (1, 2, 0))

    def test_instance_disks(self):
        t = gc.CONFD_REQ_INSTANCE_DISKS
        status, disks, serial = self.ask(t, "db1.example.test")
        self.assertEqual((status, serial), (0, 11))
        self.assertEqual([(d["dev_type"], d["size"], d["iv_name"]) for d in disks],
                         [("plain", 2048, "disk/0")])
        status, disks, serial = self.ask(t, "web1.example.test")
        self.assertEqual((status, serial, disks[0]["dev_type"]), (0, 4, "drbd"))
        self.assertEqual(self.ask(t, "nope"), (1, 0, 0))

    def test_config_query(self):
        t = gc.CONFD_REQ_CONFIG_QUERY
        self.assertEqual(self.ask(t, "/cluster/cluster_name"),
                         (0, "cluster.example.test", self.serial))
        self.assertEqual(self.ask(t, f"/nodes/{N2}/drained"), (0, True, self.serial))
        self.assertEqual(self.ask(t, "/instances/i0000000-0000-4000-8000-000000000002/nics/0/ip"),
                         (0, "192.0.2.60", self.serial))
        self.assertEqual(self.ask(t, "/version"), (0, 3010000, self.serial))
        for bad in ["/cluster/nope", "cluster", "/nodes/x", "/cluster/cluster_name/x",
                    "/instances/i0000000-0000-4000-8000-000000000002/nics/01",
                    "/instances/i0000000-0000-4000-8000-000000000002/nics/5"]:
            self.assertEqual(self.ask(t, bad), (1, 2, 0), bad)
        self.assertEqual(self.ask(t, None), (1, 2, 0))

    def test_json_pointer_escapes(self):
        raw = confd_config_dict()
        raw["cluster"]["hvparams"]["a/b~c"] = {"x": 1}
        a = answerer(raw)
        self.assertEqual(a.answer(request(10, "/cluster/hvparams/a~1b~0c/x"))[1], 1)

    def test_data_collectors(self):
        self.assertEqual(self.ask(gc.CONFD_REQ_DATA_COLLECTORS),
                         (0, {"cpu-avg-load": {"active": True, "interval": 5000000}}, self.serial))


class FakeTransport:
    def __init__(self):
        self.sent = []

    def write(self, data, addr):
        self.sent.append((data, addr))


class ProtocolTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.clock.advance(NOW)
        self.proto = ConfdProtocol(self.clock, KEY, answerer(), log_interval=60)
        self.transport = FakeTransport()
        self.proto.transport = self.transport
        self.addr = ("127.0.0.1", 40000)
        self.logged = []
        self.proto.drops.logger = self

    def info(self, fmt, **kw):
        self.logged.append(kw["reason"])

    def send(self, data):
        before = len(self.transport.sent)
        self.proto.datagramReceived(data, self.addr)
        return self.transport.sent[before:]

    def req(self, atype=0, query=None, rsalt="rs-1", now=NOW, key=KEY):
        return protocol.pack_request(key, atype, query, rsalt, now)

    def test_answer_signed_with_rsalt(self):
        (data, addr), = self.send(self.req(gc.CONFD_REQ_CLUSTER_MASTER, rsalt="abc"))
        self.assertEqual(addr, self.addr)
        msg, salt = protocol.unpack(KEY, data)
        self.assertEqual(salt, "abc")
        self.assertEqual(protocol.parse_reply(msg),
                         protocol.Reply(status=0, answer="node1.example.test", serial=7))

    def test_replay_dropped(self):
        data = self.req()
        self.assertEqual(len(self.send(data)), 1)
        self.assertEqual(self.send(data), [])
        self.clock.advance(299)
        self.assertEqual(self.send(data), [])
        self.assertEqual(self.logged, ["replayed request"] * 2)  # one per 60 s
        # Same request, a different salt (next second): a new request.
        self.assertEqual(len(self.send(self.req(now=NOW + 1))), 1)

    def test_replay_with_uppercase_hmac_dropped(self):
        data = self.req()
        env = json.loads(data[4:])
        env["hmac"] = env["hmac"].upper()
        self.assertEqual(len(self.send(data)), 1)
        self.assertEqual(self.send(b"plj0" + json.dumps(env).encode()), [])

    def test_clock_skew(self):
        self.assertEqual(self.send(self.req(now=NOW - 301)), [])
        self.assertEqual(self.send(self.req(now=NOW + 301)), [])
        self.assertEqual(len(self.send(self.req(now=NOW - 300))), 1)
        self.assertEqual(len(self.send(self.req(now=NOW + 300))), 1)
        self.assertEqual(self.logged, ["timestamp outside the allowed clock skew"])

    def test_drops(self):
        good = self.req()
        oversized = protocol.sign(KEY, protocol.dump_message(
            protocol.make_request(0, "x" * 70000, "r")), str(int(NOW)))
        bad_inner = protocol.sign(KEY, '{"protocol":1,"type":99,"rsalt":"r"}', str(int(NOW)))
        bad_salt = protocol.sign(KEY, protocol.dump_message(protocol.make_request(0, None, "r")),
                                 "not-a-time")
        for data in [oversized, b"xxxx" + good[4:], self.req(key=b"wrong"), b"plj0{",
                     bad_inner, bad_salt, b""]:
            self.assertEqual(self.send(data), [])
        self.assertEqual(self.proto.stats.answered, 0)
        self.assertEqual(self.logged, ["oversized", "wrong fourcc", "bad hmac",
                                       "envelope is not JSON", "bad request type 99",
                                       "salt is not a timestamp"])
        self.assertEqual(len(self.send(good)), 1)

    def test_just_under_limit_accepted(self):
        query = "x" * (gc.MAX_UDP_DATA_SIZE - 200)
        data = self.req(gc.CONFD_REQ_NODE_ROLE_BYNAME, query)
        self.assertLessEqual(len(data), gc.MAX_UDP_DATA_SIZE)
        (reply, _), = self.send(data)
        self.assertEqual(protocol.parse_reply(protocol.unpack(KEY, reply)[0]).answer, 0)

    def test_no_config_no_answer(self):
        self.proto.answerer = None
        self.assertEqual(self.send(self.req()), [])

    def test_huge_reply_becomes_error(self):
        raw = confd_config_dict()
        raw["cluster"]["hvparams"]["big"] = {"x": "y" * 70000}
        self.proto.answerer = answerer(raw)
        (reply, _), = self.send(self.req(gc.CONFD_REQ_CONFIG_QUERY, "/cluster/hvparams/big"))
        self.assertEqual(protocol.parse_reply(protocol.unpack(KEY, reply)[0]).status, 1)


class ReplayCacheTest(SynchronousTestCase):
    def test_window_and_cap(self):
        cache = ReplayCache(window=600, cap=3)
        self.assertTrue(cache.check_and_add("a", 0))
        self.assertFalse(cache.check_and_add("a", 599))
        self.assertTrue(cache.check_and_add("a", 600))
        for k in "bcd":
            self.assertTrue(cache.check_and_add(k, 601))
        self.assertEqual(len(cache), 3)
        self.assertTrue(cache.check_and_add("a", 602))  # the oldest was dropped
        cache.expire(10_000)
        self.assertEqual(len(cache), 0)


class RateLimitTest(SynchronousTestCase):
    def test_one_line_per_reason_per_interval(self):
        clock = Clock()
        lines = []

        class Log:
            def info(self, fmt, **kw):
                lines.append((kw["reason"], kw["suppressed"]))

        rl = RateLimitedLog(clock, Log(), interval=10)
        for _ in range(5):
            rl.drop("a", None)
        rl.drop("b", None)
        clock.advance(10)
        rl.drop("a", None)
        self.assertEqual(lines, [("a", 0), ("b", 0), ("a", 4)])


def write_node(tmp, raw, hostname="node1.example.test", key=KEY):
    paths = Paths.for_node(os.path.abspath(os.path.join(tmp, hostname)), hostname)
    os.makedirs(paths.data_dir, exist_ok=True)
    with open(paths.config_file, "w", encoding="utf-8") as f:
        json.dump(raw, f)
    with open(paths.hmac_key, "wb") as f:
        f.write(key)
    return paths


class WatcherTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = self.mktemp()
        self.paths = write_node(self.tmp, confd_config_dict())
        self.clock = Clock()
        self.clock.advance(NOW)
        self.proto = ConfdProtocol(self.clock)
        self.pending = []

        def run(func):
            d = defer.Deferred()
            self.pending.append((d, func))
            return d
        self.watcher = ConfigWatcher(self.paths, self.proto, self.clock, run=run)

    def finish_loads(self):
        while self.pending:
            d, func = self.pending.pop(0)
            try:
                d.callback(func())
            except Exception as err:
                d.errback(err)

    def test_initial_load_and_swap(self):
        self.watcher.startService()
        self.assertIsNone(self.proto.answerer)  # loading in the "thread"
        self.finish_loads()
        old = self.proto.answerer
        self.assertEqual(old.serial, 7)
        self.assertEqual(self.proto.key, KEY)
        raw = confd_config_dict()
        raw["cluster"]["serial_no"] = 8
        raw["cluster"]["cluster_name"] = "renamed.example.test"
        with open(self.paths.config_file, "w", encoding="utf-8") as f:
            json.dump(raw, f, indent=1)
        self.clock.advance(1)
        # While the new config loads, answers still come whole from the old one.
        self.assertIs(self.proto.answerer, old)
        self.assertEqual(len(self.pending), 1)
        self.clock.advance(1)  # a poll during the load starts no second load
        self.assertEqual(len(self.pending), 1)
        self.finish_loads()
        new = self.proto.answerer
        self.assertEqual((new.serial, new.raw["cluster"]["cluster_name"]),
                         (8, "renamed.example.test"))
        self.assertEqual(old.raw["cluster"]["cluster_name"], "cluster.example.test")
        self.clock.advance(1)  # unchanged: nothing loaded
        self.assertEqual(self.pending, [])
        self.watcher.stopService()

    def test_slow_loads_hold_off_the_next_reload(self):
        self.watcher.startService()
        self.finish_loads()

        def rewrite(serial):
            raw = confd_config_dict()
            raw["cluster"]["serial_no"] = serial
            with open(self.paths.config_file, "w", encoding="utf-8") as f:
                json.dump(raw, f, indent=serial % 3)

        rewrite(8)
        self.clock.advance(1)
        self.assertEqual(len(self.pending), 1)
        self.clock.advance(2)  # this load takes 2 s: the next waits 10 x 2 s
        self.finish_loads()
        self.assertEqual(self.proto.answerer.serial, 8)
        rewrite(9)
        self.clock.advance(19)
        self.assertEqual(self.pending, [])
        self.assertEqual(self.proto.answerer.serial, 8)
        self.clock.advance(1)
        self.assertEqual(len(self.pending), 1)
        self.finish_loads()  # instant load: no hold-off after it
        self.assertEqual(self.proto.answerer.serial, 9)
        rewrite(10)
        self.clock.advance(1)
        self.finish_loads()
        self.assertEqual(self.proto.answerer.serial, 10)
        self.watcher.stopService()

    def test_sighup_reload_ignores_the_holdoff(self):
        self.watcher.startService()
        self.clock.advance(5)  # a 5 s load
        self.finish_loads()
        raw = confd_config_dict()
        raw["cluster"]["serial_no"] = 8
        with open(self.paths.config_file, "w", encoding="utf-8") as f:
            json.dump(raw, f, indent=1)
        self.clock.advance(1)
        self.assertEqual(self.pending, [])
        self.watcher.force_check()
        self.finish_loads()
        self.assertEqual(self.proto.answerer.serial, 8)
        self.watcher.stopService()

    def test_broken_config_keeps_old(self):
        self.watcher.startService()
        self.finish_loads()
        old = self.proto.answerer
        with open(self.paths.config_file, "w", encoding="utf-8") as f:
            f.write("{broken")
        self.clock.advance(1)
        self.finish_loads()
        self.assertIs(self.proto.answerer, old)
        self.clock.advance(1)
        self.assertEqual(self.pending, [])  # logged once, not retried every second
        self.watcher.stopService()

    def test_demoted_node_stops_answering(self):
        self.watcher.startService()
        self.finish_loads()
        raw = confd_config_dict()
        raw["cluster"]["master_node"] = N2
        raw["nodes"][N1]["master_candidate"] = False
        with open(self.paths.config_file, "w", encoding="utf-8") as f:
            json.dump(raw, f, indent=2)
        self.clock.advance(1)
        self.finish_loads()
        self.assertIsNone(self.proto.answerer)
        self.watcher.stopService()

    def test_removed_config_stops_answering(self):
        self.watcher.startService()
        self.finish_loads()
        self.assertIsNotNone(self.proto.answerer)
        os.unlink(self.paths.config_file)
        self.clock.advance(1)
        self.finish_loads()
        self.assertIsNone(self.proto.answerer)
        self.watcher.stopService()

    def test_key_change_reloads(self):
        self.watcher.startService()
        self.finish_loads()
        with open(self.paths.hmac_key, "wb") as f:
            f.write(b"another-key-of-other-length\n")
        self.clock.advance(1)
        self.finish_loads()
        # The raw file contents are the key, trailing newline included (as in Ganeti).
        self.assertEqual(self.proto.key, b"another-key-of-other-length\n")
        self.watcher.stopService()


    def test_force_check_reloads_unchanged_files(self):
        """SIGHUP: re-read although (mtime, size, inode) look the same."""
        self.watcher.startService()
        self.addCleanup(self.watcher.stopService)
        self.finish_loads()
        self.assertEqual(self.watcher.loads, 1)
        self.clock.advance(1)
        self.assertEqual(self.pending, [])  # unchanged: a poll loads nothing
        self.watcher.force_check()
        self.finish_loads()
        self.assertEqual(self.watcher.loads, 2)


class FakeUDPPort:
    def stopListening(self):
        return None


class DaemonSighupTest(SynchronousTestCase):
    def test_hooks_reopen_the_log_and_reread_the_config(self):
        from twisted.internet.testing import MemoryReactorClock

        from ganeti.daemon import DaemonLog

        paths = write_node(self.mktemp(), confd_config_dict())
        reactor = MemoryReactorClock()
        ports = []
        reactor.listenUDP = lambda *args, **kwargs: ports.append(args) or FakeUDPPort()
        logdir = os.path.abspath(self.mktemp())
        os.makedirs(logdir)
        log_path = os.path.join(logdir, "conf-daemon.log")
        daemon_log = DaemonLog()
        daemon_log.add_file(log_path)
        installed = []
        daemon = ConfdDaemon(reactor, paths, ConfdProtocol(reactor), port=0, bind="127.0.0.1",
                             first=load_snapshot(paths), daemon_log=daemon_log,
                             install_signal=lambda h: installed.append(h) or (lambda: None))
        loads = []
        daemon.watcher.run = lambda func: loads.append(func) or defer.Deferred()
        daemon.startService()
        self.addCleanup(daemon.stopService)
        reactor.run()
        [handler] = installed
        self.assertEqual([name for name, _ in daemon.reloader.hooks],
                         ["reopen the log files", "re-read the config"])
        os.rename(log_path, log_path + ".1")
        handler()
        self.assertTrue(os.path.exists(log_path))
        self.assertEqual(len(loads), 1)  # config unchanged, yet read again


class TapTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = self.mktemp()

    def make(self, hostname, argv=()):
        paths = write_node(self.tmp, confd_config_dict(), hostname)
        env = paths.env()
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            opts = Options()
            opts.parseOptions(list(argv))
            return paths, makeService(opts)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_options(self):
        opts = Options()
        opts.parseOptions([])
        self.assertEqual((opts["port"], opts["bind"]), (1814, None))
        opts.parseOptions(["-b", "127.0.0.9", "-p", "1815"])
        self.assertEqual((opts["port"], opts["bind"]), (1815, "127.0.0.9"))
        self.assertRaises(usage.UsageError, Options().parseOptions, ["-p", "70000"])

    def test_candidate_serves(self):
        paths, svc = self.make("node1.example.test", ["-p", "0"])
        self.assertIsInstance(svc, ConfdDaemon)
        self.assertEqual(svc.protocol.answerer.serial, 7)
        self.assertEqual(svc.bind, "0.0.0.0")

    def test_non_candidate_refuses(self):
        err = self.assertRaises(SystemExit, self.make, "node4.example.test")
        self.assertIn("not a master candidate", str(err))
        err = self.assertRaises(SystemExit, self.make, "stranger.example.test")
        self.assertIn("not in the cluster config", str(err))

    def test_primary_ip_from_ssconf(self):
        paths = write_node(self.tmp, confd_config_dict())
        self.assertIsNone(primary_ip(paths))
        with open(paths.ssconf_file("node_primary_ips"), "w", encoding="utf-8") as f:
            f.write("node2.example.test 192.0.2.2\nnode1.example.test 192.0.2.1\n")
        self.assertEqual(primary_ip(paths), "192.0.2.1")

    def test_load_snapshot_errors(self):
        paths = write_node(self.tmp, confd_config_dict())
        os.unlink(paths.hmac_key)
        self.assertRaises(GenericError, load_snapshot, paths)


class ReceiveBufferTest(SynchronousTestCase):
    def test_the_listening_socket_gets_a_larger_receive_buffer(self):
        import socket

        from ganeti.confd import service

        class Port:
            def __init__(self):
                self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

            def getHandle(self):
                return self.sock

        port = Port()
        self.addCleanup(port.sock.close)
        before = port.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        service._enlarge_receive_buffer(port)
        after = port.sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        # Linux reports twice the granted size; the kernel may cap the request
        self.assertGreater(after, before)
