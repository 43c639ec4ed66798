"""The kvm hypervisor and its libvirt connection against libvirt's in-process
``test:///default`` driver: calls as Deferreds, lifecycle events, node calls,
failures that leave nothing behind.

The libvirt thread hands its answers to a reactor stub whose ``callFromThread``
queues them; :func:`settle` runs them until the Deferred under test fires
(blocking on the queue, never sleeping).  The test driver's state is shared by the
whole process, so every test uses its own domain names and removes them.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.noded.backend import instances, instdisks
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.hypervisors import domainxml as dx
from ganeti.noded.hypervisors.base import HypervisorError
from ganeti.noded.hypervisors.kvm import KvmHypervisor
from ganeti.noded.hypervisors.virt import (
    LibvirtUnavailable,
    VirtConnection,
    VirtError,
    default_uri,
)
from ganeti.noded.instevents import InstanceEvents
from tests.noded.helpers import loop_volume_group, node_paths
from tests.noded.virthelpers import ThreadReactor, settle

try:
    import libvirt
except ImportError:  # pragma: no cover - libvirt-python is in the venv
    libvirt = None

URI = "test:///default"
REASON = [["gnt:client:gnt-instance", "test", 1700000000000000000]]
_names = itertools.count(1)


def kvm_params(**over: Any) -> dict[str, Any]:
    hv = dict(c.HVC_DEFAULTS[c.HT_KVM])
    hv.update(kernel_path="/srv/guest/vmlinux", serial_console=True)
    hv.update(over)
    return hv


def instance(name: str, **hv: Any) -> dict[str, Any]:
    return {"name": name, "hypervisor": c.HT_KVM, "uuid": None, "hvparams": kvm_params(**hv),
            "beparams": {"maxmem": 128, "minmem": 64, "vcpus": 1}, "osparams": {},
            "nics": [], "disks_info": []}


def unique(prefix: str = "vm") -> str:
    return f"{prefix}{os.getpid()}-{next(_names)}.example.com"


class LibvirtTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        if libvirt is None:
            raise self.skipTest("libvirt-python is not installed")
        self.reactor = ThreadReactor()
        self.clock = Clock()
        self.events = InstanceEvents(self.clock)
        self.virt = VirtConnection(URI, self.reactor)
        self.paths = node_paths(self)
        self.kvm = KvmHypervisor(self.virt, self.paths.run_dir, self.clock, inline_runner,
                                 self.events, choose_accel=lambda *a: (dx.ACCEL_TCG, "test"))
        self.virt.start()
        self.addCleanup(self._stop)
        self.side = libvirt.open(URI)  # another client of the same driver
        self.addCleanup(self.side.close)

    def _stop(self) -> None:
        for name in list(self.kvm.known):
            try:
                self.side.lookupByName(name).destroy()
            except libvirt.libvirtError:
                pass
        settle(self.reactor, self.virt.stop())

    def wait_events(self, count: int) -> list[dict[str, Any]]:
        """The ring once it holds ``count`` events (they come from the libvirt thread)."""
        while len(self.events.answer(0)["events"]) < count:
            f, args = self.reactor.calls.get(timeout=20)
            f(*args)
        return self.events.answer(0)["events"]

    def spec(self, name: str, **hv: Any) -> dx.DomainSpec:
        return self.kvm.domain_spec(instance(name, **hv), [dx.DiskSpec("/srv/d0")], [],
                                    128, dx.ACCEL_TCG, None)


class VirtConnectionTest(LibvirtTestCase):
    def test_calls_run_in_the_libvirt_thread(self) -> None:
        import threading
        seen = settle(self.reactor, self.virt.call(
            lambda conn: (threading.current_thread().name, conn.getURI())))
        self.assertEqual(seen, ("libvirt", URI))

    def test_libvirt_errors_keep_their_message_and_code(self) -> None:
        with self.assertRaises(VirtError) as err:
            settle(self.reactor, self.virt.call(lambda conn: conn.lookupByName("no-such")))
        self.assertEqual(err.exception.code, libvirt.VIR_ERR_NO_DOMAIN)
        self.assertIn("not found", str(err.exception))

    def test_a_stopped_connection_refuses_calls(self) -> None:
        settle(self.reactor, self.virt.stop())
        with self.assertRaises(LibvirtUnavailable) as err:
            settle(self.reactor, self.virt.call(lambda conn: None))
        self.assertIn("libvirtd", str(err.exception))
        self.assertIn(URI, str(err.exception))


class UnavailableTest(SynchronousTestCase):
    def test_missing_libvirt_python_fails_calls_clearly(self) -> None:
        reactor = ThreadReactor()

        def loader() -> Any:
            raise ImportError("No module named 'libvirt'")

        virt = VirtConnection("qemu:///system", reactor, loader=loader)
        virt.start()
        try:
            with self.assertRaises(LibvirtUnavailable) as err:
                settle(reactor, virt.call(lambda conn: None))
            self.assertIn("libvirtd is not available at qemu:///system", str(err.exception))
            self.assertIn("libvirt-python", str(err.exception))
        finally:
            settle(reactor, virt.stop())

    def test_unreachable_libvirtd_is_a_clear_error(self) -> None:
        if libvirt is None:
            raise self.skipTest("libvirt-python is not installed")
        reactor = ThreadReactor()
        uri = "qemu+unix:///system?socket=/nonexistent/libvirt-sock"
        virt = VirtConnection(uri, reactor)
        virt.start()
        try:
            with self.assertRaises(LibvirtUnavailable) as err:
                settle(reactor, virt.call(lambda conn: None))
            self.assertIn(f"libvirtd is not available at {uri}", str(err.exception))
        finally:
            settle(reactor, virt.stop())

    def test_uri_from_the_environment(self) -> None:
        self.assertEqual(default_uri({}), "qemu:///system")
        self.assertEqual(default_uri({"GANETI_LIBVIRT_URI": "test:///default"}),
                         "test:///default")


class KvmHypervisorTest(LibvirtTestCase):
    def test_start_info_stop_and_events(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        info = settle(self.reactor, self.kvm.instance_info(name))
        self.assertEqual((info[0], info[2], info[3], info[4]), (name, 128, 1, 0))
        names = settle(self.reactor, self.kvm.list_instances())
        self.assertIn(name, names)
        self.assertNotIn("test", names)  # the driver's own domain is not an instance
        settle(self.reactor, self.kvm.stop(name, 30))
        self.assertIsNone(settle(self.reactor, self.kvm.instance_info(name)))
        events = self.wait_events(2)
        self.assertEqual([(e["instance"], e["event"]) for e in events],
                         [(name, "started"), (name, "stopped")])
        self.assertEqual(events[0]["hypervisor"], "kvm")

    def test_domain_carries_the_console_and_metadata(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        xml = settle(self.reactor, self.kvm.domain_xml(name))
        self.assertEqual(dx.read_metadata(xml), {"name": name, "hypervisor": "kvm"})
        self.assertIn(self.kvm.serial_socket(name), xml)
        self.assertTrue(os.path.exists(self.kvm.console_log(name)))

    def test_a_domain_destroyed_outside_is_a_crash(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        self.side.lookupByName(name).destroy()
        events = self.wait_events(2)
        self.assertEqual(events[1]["event"], "crashed")
        self.assertNotIn(name, self.kvm.known)

    def test_guest_power_off_is_a_shutdown(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        self.side.lookupByName(name).shutdown()
        self.assertEqual(self.wait_events(2)[1]["event"], "shutdown")

    def test_panic_is_reported_once(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        self.wait_events(1)
        self.kvm.handle_event(name, 8, 0)  # libvirt's CRASHED/PANICKED
        self.kvm.handle_event(name, 5, 2)  # then STOPPED/CRASHED
        self.assertEqual([e["event"] for e in self.wait_events(2)], ["started", "crashed"])

    def test_other_domains_make_no_events(self) -> None:
        self.kvm.handle_event("test", 5, 1)
        self.assertEqual(self.events.answer(0)["events"], [])

    def test_reattach_finds_running_domains(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        other = KvmHypervisor(self.virt, self.paths.run_dir, self.clock, inline_runner, None)
        settle(self.reactor, other.reattach())
        self.assertEqual(other.known[name]["name"], name)
        self.assertNotIn("test", other.known)
        self.virt.on_event = self.kvm.handle_event  # back to the one under test

    def test_a_reconnection_reports_guests_that_died_unseen(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        self.wait_events(1)
        settle(self.reactor, self.kvm.reattach())  # as after the first connection
        self.kvm.known["ghost.example.com"] = {"name": "ghost.example.com"}
        settle(self.reactor, self.kvm.reattach())  # libvirtd came back: ghost is gone
        events = self.events.answer(1)["events"]
        self.assertEqual([(e["instance"], e["event"]) for e in events],
                         [("ghost.example.com", "crashed")])
        self.assertIn(name, self.kvm.known)
        self.assertNotIn("ghost.example.com", self.kvm.known)

    def test_soft_reboot_balloon_and_hard_stop(self) -> None:
        name = unique()
        settle(self.reactor, self.kvm.start_domain(self.spec(name)))
        settle(self.reactor, self.kvm.reboot(name))
        settle(self.reactor, self.kvm.balloon(name, 64))
        self.assertEqual(settle(self.reactor, self.kvm.instance_info(name))[2], 64)
        settle(self.reactor, self.kvm.stop(name, 0, force=True))
        self.assertIsNone(settle(self.reactor, self.kvm.instance_info(name)))

    def test_a_failed_start_names_libvirt_and_leaves_nothing(self) -> None:
        # the driver's own running domain "test" has another UUID: createXML refuses
        with self.assertRaises(HypervisorError) as err:
            settle(self.reactor, self.kvm.start_domain(self.spec("test")))
        self.assertIn("Failed to start instance test: libvirt:", str(err.exception))
        self.assertNotIn("test", self.kvm.known)
        # another's domain of that name is never touched: neither by the clean-up
        # nor by a stop
        settle(self.reactor, self.kvm.stop("test", 0))
        self.assertTrue(self.side.lookupByName("test").isActive())

    def test_unsupported_parameter_fails_the_start(self) -> None:
        with self.assertRaises(HypervisorError) as err:
            settle(self.reactor, self.kvm.start_domain(self.spec(unique(), mem_path="/hugepages")))
        self.assertIn("'mem_path'", str(err.exception))


class KvmNodeCallsTest(LibvirtTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.ctx = NodeContext(paths=self.paths, clock=self.clock, run=inline_runner,
                               kvm=self.kvm, events=self.events)

    def call(self, f: Any, *args: Any) -> Any:
        return settle(self.reactor, defer.ensureDeferred(f(self.ctx, *args)))

    def test_start_list_info_reboot_shutdown(self) -> None:
        name = unique()
        inst = instance(name)
        self.assertEqual(self.call(instances.instance_info, name, "kvm", {}), {})
        self.call(instances.instance_start, inst, False, REASON)
        self.call(instances.instance_start, inst, False, REASON)  # runs: nothing
        self.assertIn(name, self.call(instances.instance_list, ["kvm"], {}))
        info = self.call(instances.all_instances_info, ["kvm", "fake"], {})[name]
        self.assertEqual((info["memory"], info["vcpus"], info["state"]), (128, 1, 0))
        self.call(instances.instance_reboot, inst, "hard", 10, REASON)
        self.call(instances.instance_reboot, inst, "soft", 10, REASON)
        self.call(instances.instance_shutdown, inst, 10, REASON)
        self.call(instances.instance_shutdown, inst, 10, REASON)  # not running: nothing
        self.assertEqual(self.call(instances.instance_info, name, "kvm", {}), {})
        with self.assertRaises(RPCFail):
            self.call(instances.instance_reboot, inst, "soft", 10, REASON)
        self.assertEqual([e["event"] for e in self.wait_events(4)],
                         ["started", "stopped", "started", "stopped"])
        answer = self.call(instances.instance_events, 2, 5)
        self.assertEqual([e["serial"] for e in answer["events"]], [3, 4])

    def test_failed_start_releases_the_pool_uid(self) -> None:
        os.makedirs(os.path.dirname(self.paths.ssconf_file("uid_pool")), exist_ok=True)
        with open(self.paths.ssconf_file("uid_pool"), "w") as f:
            f.write("64000-64001\n")
        with self.assertRaises(RPCFail) as err:
            self.call(instances.instance_start, instance("test", security_model="pool"),
                      False, REASON)
        self.assertIn("Hypervisor error: Failed to start instance test: libvirt:",
                      str(err.exception))
        self.assertIsNone(instances.instance_uid(self.ctx, "test"))
        # both uids are free again: two instances get them
        names = [unique(), unique()]
        for name in names:
            self.call(instances.instance_start, instance(name, security_model="pool"),
                      False, REASON)
        uids = {instances.instance_uid(self.ctx, n) for n in names}
        self.assertEqual(uids, {64000, 64001})
        for name in names:
            xml = settle(self.reactor, self.kvm.domain_xml(name))
            self.assertIn("+6400", xml)
            self.call(instances.instance_shutdown, instance(name), 10, REASON)
            self.assertIsNone(instances.instance_uid(self.ctx, name))

    def test_non_bridged_nics_are_refused(self) -> None:
        inst = instance(unique())
        inst["nics"] = [{"mac": "aa:00:00:00:00:01",
                         "nicparams": {"mode": "routed", "link": ""}}]
        with self.assertRaises(RPCFail) as err:
            self.call(instances.instance_start, inst, False, REASON)
        self.assertIn("NIC 0: mode 'routed'", str(err.exception))

    def test_no_connection_is_a_node_error(self) -> None:
        ctx = NodeContext(paths=self.paths, clock=self.clock, run=inline_runner)
        d = defer.ensureDeferred(instances.instance_start(ctx, instance("x.example.com"),
                                                          False, REASON))
        failure = self.failureResultOf(d, RPCFail)
        self.assertIn("Hypervisor kvm is not available on this node", str(failure.value))


@pytest.mark.subprocess
class VolumeRangeTest(SynchronousTestCase):
    """A plain disk without device-mapper: its byte range on the physical volume (a
    real volume group on a loop device; root only)."""

    def setUp(self) -> None:
        self.loop, self.vg = loop_volume_group(self, "gkvm", {"a.disk0": "8M",
                                                             "b.disk0": "12M"})
        self.ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner)

    def test_the_second_volume_starts_after_the_first(self) -> None:
        disk = {"dev_type": "plain", "logical_id": [self.vg, "b.disk0"], "mode": "rw"}
        d = defer.ensureDeferred(instdisks.volume_range(self.ctx, "i", 0, disk))
        spec = self.successResultOf(d)
        # 1 MiB of PV header, then a.disk0's two 4 MiB extents
        self.assertEqual((spec.path, spec.block, spec.offset, spec.size),
                         (self.loop, True, 9 << 20, 12 << 20))
        missing = {"dev_type": "plain", "logical_id": [self.vg, "nope"]}
        d = defer.ensureDeferred(instdisks.volume_range(self.ctx, "i", 1, missing))
        self.assertIn("disk 1: volume", str(self.failureResultOf(d, RPCFail).value))


class VanishingDomainTest(SynchronousTestCase):
    """A domain that disappears between two libvirt calls is "not running", never
    an error (the thread functions, on a fake connection)."""

    class Gone(Exception):
        def get_error_code(self) -> int:
            return 42  # VIR_ERR_NO_DOMAIN

    def conn(self) -> Any:
        gone = self.Gone

        class Dom:
            def XMLDesc(self, flags: int) -> str:
                return ("<domain><metadata><ganeti:instance xmlns:ganeti='"
                        f"{dx.METADATA_NS}' name='a' hypervisor='kvm'/></metadata></domain>")

            def __getattr__(self, name: str) -> Any:
                def vanished(*args: Any) -> Any:
                    raise gone("Domain not found")
                return vanished

        class Conn:
            def lookupByName(self, name: str) -> Any:
                return Dom()

            def listAllDomains(self, flags: int) -> list[Any]:
                return [Dom()]

        return Conn()

    def test_every_call_sees_it_gone(self) -> None:
        from ganeti.noded.hypervisors import kvmcalls as kvm
        conn = self.conn()
        self.assertIsNone(kvm.domain_info(conn, "a"))
        self.assertEqual(kvm.all_info(conn), [])
        self.assertFalse(kvm.shutdown(conn, "a"))
        self.assertFalse(kvm.destroy(conn, "a"))
        self.assertFalse(kvm.exists(conn, "a"))
        self.assertFalse(kvm.block_resize(conn, "a", "vda", 1))
        for fn, args in ((kvm.reboot, ()), (kvm.set_memory, (64,))):
            with self.assertRaises(HypervisorError) as err:
                fn(conn, "a", *args)
            self.assertIn("is not running", str(err.exception))
