"""The hypervisor table: names to classes, what a node serves, no ``isinstance`` on a
hypervisor class outside its package; and a fake-hypervisor migration between two
virtual nodes, through their node calls."""

from __future__ import annotations

import ast
import os

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.noded.backend.context import inline_runner
from ganeti.noded.hypervisors import registry
from ganeti.noded.hypervisors.base import Hypervisor, HypervisorError, NodeEnv
from ganeti.noded.hypervisors.fake import FakeHypervisor
from tests.noded.helpers import MemoryNode, node_paths

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HV_PACKAGE = os.path.join(ROOT, "ganeti", "noded", "hypervisors")
REASON = [["gnt:client:gnt-instance", "test", 1700000000000000000]]
CHECKS = ("isinstance", "issubclass")


def hypervisor_class_names() -> set[str]:
    names = {Hypervisor.__name__}
    for cls in registry.HYPERVISORS.values():
        names.update(k.__name__ for k in cls.__mro__ if issubclass(k, Hypervisor))
    return names


def class_checks(source: str, classes: set[str]) -> list[int]:
    """The lines of ``source`` that test an object against one of ``classes``
    (``isinstance``/``issubclass``, or ``type(x) is``/``==``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in CHECKS and len(node.args) == 2:
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if named & classes:
                lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) \
                and isinstance(node.left.func, ast.Name) and node.left.func.id == "type":
            named = {n.id for c_ in node.comparators for n in ast.walk(c_)
                     if isinstance(n, ast.Name)}
            if named & classes:
                lines.append(node.lineno)
    return lines


def class_checks_outside(package: str, classes: set[str]) -> list[str]:
    """``path:line`` of every class check on ``classes`` in ganeti/ outside ``package``."""
    found = []
    for base, _, files in os.walk(os.path.join(ROOT, "ganeti")):
        if os.path.commonpath([base, package]) == package:
            continue
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as f:
                    found += [f"{os.path.relpath(path, ROOT)}:{line}"
                              for line in class_checks(f.read(), classes)]
    return found


class TableTest(SynchronousTestCase):
    def env(self) -> NodeEnv:
        return NodeEnv(os.path.abspath(self.mktemp()), Clock(), inline_runner)

    def test_names_are_ganetis(self) -> None:
        self.assertEqual(set(registry.HYPERVISORS), {c.HT_FAKE, c.HT_KVM})
        for name, cls in registry.HYPERVISORS.items():
            self.assertTrue(issubclass(cls, Hypervisor))
            self.assertEqual(cls.name, name)
            self.assertEqual(cls.__abstractmethods__, frozenset(), name)

    def test_a_node_without_libvirt_serves_fake_only(self) -> None:
        hvs = registry.NodeHypervisors(self.env())
        self.assertEqual([hv.name for hv in hvs.served()], [c.HT_FAKE])
        self.assertIsNone(hvs.kvm)
        self.assertIsNone(hvs.serial_console("inst1"))
        for name, message in (
                (c.HT_KVM, "Hypervisor kvm is not available on this node: the node daemon "
                           "has no libvirt connection"),
                (c.HT_XEN_PVM, "Hypervisor xen-pvm is not available on this node"),
                ("vmware", "Unknown hypervisor type 'vmware'"),
                (None, "Unknown hypervisor type None")):
            with self.assertRaises(HypervisorError) as err:
                hvs.get(name)
            self.assertEqual(str(err.exception), message)

    def test_options_reach_the_constructor(self) -> None:
        env = NodeEnv(os.path.abspath(self.mktemp()), Clock(), inline_runner,
                      options={c.HT_FAKE: {"migration_rate": 8.0}})
        fake = registry.NodeHypervisors(env).get(c.HT_FAKE)
        self.assertEqual(fake.migration_rate, 8.0)

    def test_no_class_checks_on_hypervisors_outside_their_package(self) -> None:
        classes = hypervisor_class_names()
        self.assertIn("KvmHypervisor", classes)
        # the check finds what it is meant to find
        self.assertEqual(class_checks("if isinstance(hv, KvmHypervisor):\n    pass\n",
                                      classes), [1])
        self.assertEqual(class_checks("ok = type(hv) is kvm.KvmHypervisor\n", classes), [])
        self.assertEqual(class_checks("ok = type(hv) is FakeHypervisor\n", classes), [1])
        self.assertEqual(class_checks("isinstance(x, dict)\n", classes), [])
        found = class_checks_outside(HV_PACKAGE, classes)
        self.assertEqual(found, [])


def fake_instance(name: str = "web1.example.com") -> dict:
    return {"name": name, "hypervisor": c.HT_FAKE, "hvparams": {}, "osparams": {},
            "beparams": {"maxmem": 256, "minmem": 128, "vcpus": 2}}


class TwoNodeMigrationTest(SynchronousTestCase):
    """Two virtual nodes, each with its own root: the instance's state moves from the
    source's RUN_DIR to the destination's through Ganeti's migration calls."""

    def setUp(self) -> None:
        self.src = MemoryNode(node_paths(self, "node1.example.com"))
        self.dst = MemoryNode(node_paths(self, "node2.example.com"))

    def ok(self, node: MemoryNode, call: str, args: list) -> object:
        status, reply = node.put(call, args)
        self.assertEqual((status, reply[0]), (200, True), (call, reply))
        return reply[1]

    def fails(self, node: MemoryNode, call: str, args: list) -> str:
        status, reply = node.put(call, args)
        self.assertEqual(reply[0], False, (call, reply))
        return reply[1]

    def running(self, node: MemoryNode) -> list:
        return self.ok(node, "instance_list", [[c.HT_FAKE], {c.HT_FAKE: {}}])

    def test_the_instance_moves(self) -> None:
        inst = fake_instance()
        self.ok(self.src, "instance_start", [inst, False, REASON])
        self.ok(self.src, "instance_balloon_memory", [inst, 200])
        info = self.ok(self.src, "migration_info", [inst])
        self.ok(self.dst, "accept_instance", [inst, info, "127.0.0.2"])
        self.ok(self.src, "instance_migrate", ["cluster", inst, "127.0.0.2", True])
        status = self.ok(self.src, "instance_get_migration_status", [inst])
        self.assertEqual(status, {"status": "completed", "transferred_ram": 200 << 20,
                                  "total_ram": 200 << 20})
        self.assertEqual(self.running(self.src), [inst["name"]])  # until finalized
        self.ok(self.src, "instance_finalize_migration_src", [inst, True, True])
        self.ok(self.dst, "instance_finalize_migration_dst", [inst, info, True])
        self.assertEqual(self.running(self.src), [])
        self.assertEqual(self.running(self.dst), [inst["name"]])
        self.assertEqual(self.ok(self.dst, "instance_info", [inst["name"], c.HT_FAKE, {}]),
                         {"memory": 200, "vcpus": 2, "state": 0, "time": 0.0})
        for node in (self.src, self.dst):  # no migration records left
            root = os.path.join(node.ctx.paths.run_dir, "fake-hypervisor")
            for kind in (".incoming", ".outgoing"):
                self.assertEqual(os.listdir(os.path.join(root, kind))
                                 if os.path.isdir(os.path.join(root, kind)) else [], [])

    def test_an_aborted_migration_leaves_it_on_the_source(self) -> None:
        inst = fake_instance()
        self.ok(self.src, "instance_start", [inst, False, REASON])
        info = self.ok(self.src, "migration_info", [inst])
        self.ok(self.dst, "accept_instance", [inst, info, "127.0.0.2"])
        self.ok(self.src, "instance_migrate", ["cluster", inst, "127.0.0.2", False])
        self.ok(self.src, "instance_finalize_migration_src", [inst, False, False])
        self.ok(self.dst, "instance_finalize_migration_dst", [inst, info, False])
        self.assertEqual(self.running(self.src), [inst["name"]])
        self.assertEqual(self.running(self.dst), [])

    def test_ganetis_messages(self) -> None:
        inst = fake_instance()
        self.assertEqual(self.fails(self.src, "migration_info", [inst]),
                         "Failed to fetch migration information: instance web1.example.com "
                         "is not running")
        self.ok(self.dst, "instance_start", [inst, False, REASON])
        self.assertEqual(self.fails(self.dst, "accept_instance", [inst, "", "127.0.0.2"]),
                         "Failed to accept instance: Can't accept instance, already running")
        self.assertEqual(self.fails(self.dst, "instance_get_migration_status", [inst]),
                         "Failed to get migration status: no migration of instance "
                         "web1.example.com is in progress on this node")
        status, reply = self.src.put("instance_migrate", ["cluster", inst, "", True])
        self.assertEqual((status, reply[0]), (400, False))  # the call table refuses it


class MigrationProgressTest(SynchronousTestCase):
    def test_status_reports_progress_until_completed(self) -> None:
        clock = Clock()
        src = FakeHypervisor(os.path.abspath(self.mktemp()), inline_runner, clock,
                             migration_rate=64.0)
        inst = fake_instance()
        inst["beparams"]["minmem"] = 256

        def run(coro):
            return self.successResultOf(defer.ensureDeferred(coro))

        run(src.start(inst, [], False, None))
        run(src.migrate_instance("cluster", inst, "127.0.0.2", True))
        seen = []
        for _ in range(5):
            status = run(src.migration_status(inst))
            seen.append((status.status, status.transferred_ram))
            clock.advance(1)
        self.assertEqual(seen, [("active", 0), ("active", 64 << 20), ("active", 128 << 20),
                                ("active", 192 << 20), ("completed", 256 << 20)])
        error = self.failureResultOf(defer.ensureDeferred(
            src.migrate_instance("cluster", inst, "127.0.0.3", True)), HypervisorError)
        self.assertIn("already in progress", str(error.value))
