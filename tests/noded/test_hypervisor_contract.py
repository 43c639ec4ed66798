"""One set of assertions over every hypervisor (:class:`ganeti.noded.hypervisors.base.Hypervisor`):
start, stop, reboot, balloon, info, list, node info, verify and the migration steps.

The fake hypervisor runs them directly (its file work inline); kvm runs them on
libvirt's in-process ``test:///default`` driver (no QEMU), whose refusal of
peer-to-peer migration makes its migration end ``failed`` with the instance still
running on the source.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.noded.backend.context import inline_runner
from ganeti.noded.hypervisors.base import (
    NODE_MEMORY_KEYS,
    Hypervisor,
    HypervisorError,
    InstanceInfo,
)
from ganeti.noded.hypervisors.fake import FakeHypervisor
from tests.noded.test_kvm import LibvirtTestCase, unique
from tests.noded.test_kvm import instance as kvm_instance
from tests.noded.virthelpers import settle

HOST = {"MemTotal": 4096, "MemFree": 2000, "Buffers": 24, "Cached": 200}
_fake_names = itertools.count(1)


class HypervisorContract:
    """The assertions; a subclass says how to make the hypervisor and run its calls."""

    hv: Hypervisor
    #: How a migration to an unreachable peer ends here.
    migration_outcome: str

    # --- supplied by each implementation ------------------------------------------
    def call(self, coro: Any) -> Any:
        raise NotImplementedError

    def pump(self) -> None:
        """Let time or the libvirt thread move on (a migration in progress)."""
        raise NotImplementedError

    def new_instance(self) -> dict[str, Any]:
        raise NotImplementedError

    # --- helpers ------------------------------------------------------------------
    def fails(self, coro: Any) -> str:
        d = defer.ensureDeferred(coro)
        try:
            self.call(d)
        except HypervisorError as err:
            return str(err)
        raise AssertionError("no HypervisorError")  # pragma: no cover

    def started(self) -> tuple[dict[str, Any], str]:
        inst = self.new_instance()
        self.call(self.hv.start(inst, [], False, None))
        return inst, inst["name"]

    # --- the contract -------------------------------------------------------------
    def test_start_list_info_stop(self) -> None:
        inst = self.new_instance()
        name = inst["name"]
        self.assertIsNone(self.call(self.hv.instance_info(name)))
        self.call(self.hv.start(inst, [], False, None))
        info = self.call(self.hv.instance_info(name))
        self.assertIsInstance(info, InstanceInfo)
        be = inst["beparams"]
        self.assertEqual((info.name, info.vcpus, info.state), (name, be["vcpus"],
                                                               c.HV_STATE_RUNNING))
        self.assertTrue(be["minmem"] <= info.memory <= be["maxmem"], info)
        self.assertIn(name, self.call(self.hv.list_instances()))
        everyone = {i.name: i for i in self.call(self.hv.all_instances_info())}
        self.assertEqual(everyone[name][:5], info[:5])  # all but the cpu time
        self.assertIn(name, self.fails(self.hv.start(inst, [], False, None)))  # runs already
        self.call(self.hv.stop(name, 10))
        self.assertIsNone(self.call(self.hv.instance_info(name)))
        self.assertNotIn(name, self.call(self.hv.list_instances()))

    def test_forced_stop(self) -> None:
        _, name = self.started()
        self.call(self.hv.stop(name, 0, force=True))
        self.assertIsNone(self.call(self.hv.instance_info(name)))

    def test_soft_reboot_keeps_the_machine(self) -> None:
        _, name = self.started()
        self.call(self.hv.balloon(name, 64))
        self.call(self.hv.reboot(name))
        self.assertEqual(self.call(self.hv.instance_info(name)).memory, 64)

    def test_balloon_needs_a_running_instance(self) -> None:
        inst = self.new_instance()
        self.assertIn("not running", self.fails(self.hv.balloon(inst["name"], 64)))

    def test_node_info_and_verify(self) -> None:
        info = self.call(self.hv.node_info())
        for key in NODE_MEMORY_KEYS:
            self.assertIsInstance(info[key], int, key)
            self.assertGreaterEqual(info[key], 0, key)
        self.assertIsNone(self.call(self.hv.verify()))

    def test_migration_info_needs_a_running_instance(self) -> None:
        inst = self.new_instance()
        self.assertIn("not running", self.fails(self.hv.migration_info(inst)))
        self.assertIn("not running",
                      self.fails(self.hv.migrate_instance("c", inst, "192.0.2.1", True)))

    def test_accept_refuses_an_instance_running_here(self) -> None:
        inst, _ = self.started()
        self.assertEqual(self.fails(self.hv.accept_instance(inst, "", "192.0.2.1")),
                         "Can't accept instance, already running")

    def test_status_without_a_migration_fails(self) -> None:
        inst, _ = self.started()
        self.assertIn("no migration", self.fails(self.hv.migration_status(inst)))

    def wait_migration(self, inst: dict[str, Any]) -> Any:
        for _ in range(200):
            status = self.call(self.hv.migration_status(inst))
            self.assertIn(status.status, c.HV_MIGRATION_VALID_STATUSES)
            if status.status != c.HV_MIGRATION_ACTIVE:
                return status
            self.pump()
        raise AssertionError("the migration never ended")  # pragma: no cover

    def test_migration_steps_on_the_source(self) -> None:
        inst, name = self.started()
        info = self.call(self.hv.migration_info(inst))
        self.assertIsInstance(info, str)
        self.call(self.hv.migrate_instance("cluster", inst, "192.0.2.1", True))
        status = self.wait_migration(inst)
        self.assertEqual(status.status, self.migration_outcome)
        success = status.status == c.HV_MIGRATION_COMPLETED
        self.call(self.hv.finalize_migration_source(inst, success, True))
        running = self.call(self.hv.instance_info(name)) is not None
        self.assertEqual(running, not success)  # gone only where it went
        self.assertIn("no migration", self.fails(self.hv.migration_status(inst)))

    def test_an_aborted_migration_keeps_the_instance_on_the_source(self) -> None:
        inst, name = self.started()
        self.call(self.hv.migrate_instance("cluster", inst, "192.0.2.1", False))
        self.wait_migration(inst)
        self.call(self.hv.finalize_migration_source(inst, False, False))
        self.assertIsNotNone(self.call(self.hv.instance_info(name)))

    def test_a_failed_migration_leaves_nothing_on_the_destination(self) -> None:
        inst = self.new_instance()
        self.call(self.hv.accept_instance(inst, "", "192.0.2.1"))
        self.call(self.hv.finalize_migration_dst(inst, "", False))
        self.assertIsNone(self.call(self.hv.instance_info(inst["name"])))


class FakeContractTest(HypervisorContract, SynchronousTestCase):
    migration_outcome = c.HV_MIGRATION_COMPLETED

    def setUp(self) -> None:
        self.clock = Clock()
        self.hv = FakeHypervisor(os.path.abspath(self.mktemp()), inline_runner, self.clock,
                                 meminfo=lambda: HOST, migration_rate=50.0)

    def call(self, coro: Any) -> Any:
        d = defer.ensureDeferred(coro) if not isinstance(coro, defer.Deferred) else coro
        results: list[Any] = []
        d.addBoth(results.append)
        self.assertTrue(results, "the fake hypervisor's calls end at once")
        if isinstance(results[0], Failure):
            results[0].raiseException()
        return results[0]

    def pump(self) -> None:
        self.clock.advance(1)

    def new_instance(self) -> dict[str, Any]:
        return {"name": f"inst{next(_fake_names)}.example.com", "hypervisor": c.HT_FAKE,
                "hvparams": {}, "osparams": {},
                "beparams": {"maxmem": 128, "minmem": 64, "vcpus": 2}}


class KvmContractTest(HypervisorContract, LibvirtTestCase):
    migration_outcome = c.HV_MIGRATION_FAILED

    def setUp(self) -> None:
        super().setUp()
        self.hv = self.kvm

    def call(self, coro: Any) -> Any:
        return settle(self.reactor, coro)

    def pump(self) -> None:
        f, args = self.reactor.calls.get(timeout=20)
        f(*args)

    def new_instance(self) -> dict[str, Any]:
        return kvm_instance(unique())

    def test_a_failed_migration_names_libvirt(self) -> None:
        inst, _ = self.started()
        self.call(self.hv.migrate_instance("cluster", inst, "192.0.2.1", True))
        self.wait_migration(inst)
        error = self.kvm.migrations.outgoing[inst["name"]].error
        self.assertIn("p2p migration is not supported", str(error))

    def test_finalizing_an_instance_that_did_not_arrive_fails(self) -> None:
        inst = self.new_instance()
        self.call(self.hv.accept_instance(inst, "", "192.0.2.1"))
        self.assertIn("does not run on this node",
                      self.fails(self.hv.finalize_migration_dst(inst, "", True)))
