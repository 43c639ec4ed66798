"""The instance calls of noded on Ganeti's fake hypervisor, over the node's HTTP
interface: state files, Ganeti's answers, refusals."""

import json
import os

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import rpcdefs
from ganeti.core.objects import Instance
from ganeti.core.rpcdefs.encoders import InstanceArg
from ganeti.noded.backend.context import inline_runner
from ganeti.noded.hypervisors.base import HypervisorError, check_name
from ganeti.noded.hypervisors.fake import FakeHypervisor
from tests.fakes.configs import small_config
from tests.noded.helpers import MemoryNode, node_paths

REASON = [["gnt:client:gnt-instance", "test", 1700000000000000000]]


def instance(name="inst1.example.com", hypervisor="fake", maxmem=256, minmem=128, vcpus=2):
    return {"name": name, "hypervisor": hypervisor, "hvparams": {}, "osparams": {},
            "beparams": {"maxmem": maxmem, "minmem": minmem, "vcpus": vcpus}}


class FakeInstancesTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)
        self.state = os.path.join(self.paths.run_dir, "fake-hypervisor")

    def ok(self, name, args):
        status, reply = self.node.put(name, args)
        self.assertEqual((status, reply[0]), (200, True), reply)
        return reply[1]

    def fails(self, name, args):
        status, reply = self.node.put(name, args)
        self.assertEqual(reply[0], False, (status, reply))
        return reply[1]

    def running(self):
        return self.ok("instance_list", [["fake"], {"fake": {}}])

    def test_start_info_list_shutdown(self):
        self.assertEqual(self.running(), [])
        self.assertEqual(self.ok("instance_info", ["inst1.example.com", "fake", {}]), {})
        self.assertIsNone(self.ok("instance_start", [instance(), False, REASON]))
        self.assertEqual(self.running(), ["inst1.example.com"])
        # Ganeti's file: id, memory, vcpus
        with open(os.path.join(self.state, "inst1.example.com")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], "0")
        self.assertEqual(int(lines[2]), 2)
        memory = int(lines[1])
        self.assertTrue(128 <= memory <= 256, memory)
        self.assertEqual(self.ok("instance_info", ["inst1.example.com", "fake", {}]),
                         {"memory": memory, "vcpus": 2, "state": 0, "time": 0.0})
        self.assertEqual(self.ok("all_instances_info", [["fake"], {"fake": {}}]),
                         {"inst1.example.com": {"memory": memory, "vcpus": 2, "state": 0,
                                                "time": 0.0}})
        with open(os.path.join(self.paths.run_dir, "instance-reason",
                               "inst1.example.com")) as f:
            self.assertEqual(json.load(f), REASON)
        self.assertIsNone(self.ok("instance_shutdown", [instance(), 120, REASON]))
        self.assertEqual(self.running(), [])
        self.assertEqual(os.listdir(self.state), [])

    def test_start_twice_and_stop_twice_change_nothing(self):
        self.ok("instance_start", [instance(), False, REASON])
        self.ok("instance_balloon_memory", [instance(), 200])
        self.ok("instance_start", [instance(vcpus=4), False, REASON])  # already running
        self.assertEqual(self.ok("instance_info", ["inst1.example.com", "fake", {}])["vcpus"],
                         2)
        self.ok("instance_shutdown", [instance(), 0, REASON])
        self.ok("instance_shutdown", [instance(), 0, REASON])  # not running: nothing
        self.assertEqual(self.running(), [])

    def test_reboot(self):
        self.assertEqual(self.fails("instance_reboot", [instance(), "soft", 60, REASON]),
                         "Cannot reboot instance 'inst1.example.com' that is not running")
        self.ok("instance_start", [instance(), False, REASON])
        self.ok("instance_balloon_memory", [instance(), 100])
        self.ok("instance_reboot", [instance(), "soft", 60, REASON])
        self.assertEqual(self.ok("instance_info", ["inst1.example.com", "fake", {}])["memory"],
                         100)  # a soft reboot keeps the machine
        self.ok("instance_reboot", [instance(), "hard", 60, REASON])
        self.assertNotEqual(
            self.ok("instance_info", ["inst1.example.com", "fake", {}])["memory"], 100)
        self.assertEqual(self.running(), ["inst1.example.com"])

    def test_balloon(self):
        self.ok("instance_balloon_memory", [instance(), 100])  # not running: nothing
        self.assertEqual(self.running(), [])
        self.ok("instance_start", [instance(), False, REASON])
        self.ok("instance_balloon_memory", [instance(), 100])
        self.assertEqual(self.ok("instance_info", ["inst1.example.com", "fake", {}])["memory"],
                         100)

    def test_refusals(self):
        self.assertEqual(self.fails("instance_start", [instance(hypervisor="kvm"), False,
                                                       REASON]),
                         "Hypervisor kvm is not available on this node: the node daemon "
                         "has no libvirt connection")
        for bad in ("../evil", "a/b", ".hidden", "x\n", ""):
            status, reply = self.node.put("instance_start", [instance(name=bad), False, REASON])
            self.assertEqual(reply[0], False, bad)
            status, reply = self.node.put("instance_info", [bad, "fake", {}])
            self.assertEqual(reply[0], False, bad)
        status, reply = self.node.put("instance_reboot", [instance(), "full", 60, REASON])
        self.assertEqual(reply, [False, "Invalid reboot_type received: 'full'"])
        status, reply = self.node.put("instance_reboot", [instance(), "sideways", 60, REASON])
        self.assertEqual((status, reply[0]), (400, False))
        status, reply = self.node.put("instance_balloon_memory", [instance(), -5])
        self.assertEqual((status, reply[0]), (400, False))
        self.assertFalse(os.path.exists(os.path.join(self.paths.run_dir, "evil")))
        self.assertEqual(self.running(), [])


HOST = {"MemTotal": 4096, "MemFree": 1000, "Buffers": 24, "Cached": 200}


class FakeHypervisorTest(SynchronousTestCase):
    def setUp(self):
        self.hv = FakeHypervisor(os.path.abspath(self.mktemp()), inline_runner, Clock(),
                                 meminfo=lambda: HOST)

    def ok(self, coro):
        return self.successResultOf(defer.ensureDeferred(coro))

    def error(self, coro):
        return str(self.failureResultOf(defer.ensureDeferred(coro), HypervisorError).value)

    def test_names(self):
        for good in ("inst1", "inst1.example.com", "a-b_c.d"):
            self.assertEqual(check_name(good), good)
        for bad in ("", ".x", "../x", "a/b", "a\n", "a..b", None, 5, "x" * 300):
            self.assertRaises(HypervisorError, check_name, bad)

    def test_start_stop_errors(self):
        self.ok(self.hv.start(instance("i1", maxmem=128), [], False, None))
        self.assertEqual(self.error(self.hv.start(instance("i1"), [], False, None)),
                         "Failed to start instance i1: already running")
        self.ok(self.hv.stop("i1", 0))
        self.assertEqual(self.error(self.hv.stop("i1", 0)),
                         "Failed to stop instance i1: not running")
        self.assertEqual(self.ok(self.hv.list_instances()), [])

    def test_running_instances_use_node_memory(self):
        self.assertEqual(self.ok(self.hv.node_info()),
                         {"memory_total": 4096, "memory_free": 1224, "memory_dom0": 2872})
        self.ok(self.hv.start(instance("i1", maxmem=1000, minmem=1000), [], False, None))
        self.assertEqual(self.ok(self.hv.node_info())["memory_free"], 224)
        self.ok(self.hv.start(instance("i2", maxmem=1000, minmem=1000), [], False, None))
        self.assertEqual(self.ok(self.hv.node_info())["memory_free"], 0)

    def test_startup_memory_between_min_and_max(self):
        for name, minmem, maxmem, got in (("a", 64, 128, 128),  # fits: the maximum
                                          ("b", 512, 2048, 1224 - 128),  # what is free
                                          ("c", 2000, 4000, 2000)):  # never below the min
            self.ok(self.hv.start(instance(name, maxmem=maxmem, minmem=minmem), [], False,
                                  None))
            self.assertEqual(self.ok(self.hv.instance_info(name)).memory, got)


class FromTheMasterTest(SynchronousTestCase):
    """What the master encodes (filled parameters, the call's overrides) starts the
    instance as the node's handler reads it."""

    def test_start_with_a_temporary_memory_override(self):
        cfg = small_config()
        inst = Instance(uuid="i-1", name="inst1.example.com", hypervisor="fake",
                        primary_node=cfg.cluster.master_node, os="busybox",
                        beparams={"vcpus": 3})
        call = rpcdefs.get_call("instance_start")
        wire = call.encode_args([InstanceArg(inst, bep={"maxmem": 64, "minmem": 64}),
                                 False, REASON], rpcdefs.EncodeContext(cfg))
        node = MemoryNode(node_paths(self))
        status, reply = node.put("instance_start", wire)
        self.assertEqual(reply, [True, None])
        status, reply = node.put("instance_info", ["inst1.example.com", "fake", {}])
        self.assertEqual(reply[1], {"memory": 64, "vcpus": 3, "state": 0, "time": 0.0})
