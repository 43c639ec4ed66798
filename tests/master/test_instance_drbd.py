"""The drbd template's master helpers (ganeti/master/lu/instance_drbd.py) without nodes:
the disks' layout and reservations, the space they need, the wait for their sync on
a scripted primary (the job-log lines, the polling on the clock, the retries), the
status tuples and what verify makes of a degraded disk."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.core import storagetypes as st
from ganeti.core.errors import OpPrereqError, RemoteError, ReservationError
from ganeti.core.objects import Instance, Node
from ganeti.core.textutil import format_seconds
from ganeti.master.config.reservations import ReservationManager
from ganeti.master.lu import instance_drbd as drbd
from ganeti.rpc.client import RpcResult
from tests.fakes.configs import small_config


class ScriptedRpc:
    """A primary that answers ``blockdev_getmirrorstatus`` (and the other calls) from a
    script: each answer is a payload list, or an exception text for a failed call."""

    def __init__(self, answers: dict[str, list[Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, list[Any]]] = []

    def _answer(self, node: str, name: str, args: list[Any]) -> RpcResult:
        self.calls.append((node, name, args))
        script = self.answers[name]
        answer = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(answer, str):
            return RpcResult(node, False, fail_msg=answer, call=name)
        return RpcResult(node, True, payload=answer, call=name)

    def call_one(self, node: Node, name: str, args: list[Any]) -> defer.Deferred[RpcResult]:
        return defer.succeed(self._answer(node.name, name, args))

    def call(self, targets: list[Any], name: str, args: list[Any]
             ) -> defer.Deferred[dict[str, RpcResult]]:
        return defer.succeed({t.name: self._answer(t.name, name, args) for t in targets})


class FakeLU:
    def __init__(self, cfg: Any, rpc: Any = None, owner: str = "job-1") -> None:
        self.messages: list[str] = []
        self.clock = Clock()
        self.ctx = SimpleNamespace(
            rpc=lambda: rpc, reservations=ReservationManager(), owner=owner, clock=self.clock,
            feedback=lambda kind, text: self.messages.append(text),
            config=SimpleNamespace(config=cfg))


def two_nodes() -> tuple[Any, Node, Node]:
    cfg = small_config()
    cfg.cluster.volume_group_name = "xenvg"
    cfg.cluster.enabled_disk_templates = ["drbd", "plain"]
    first = next(iter(cfg.nodes.values()))
    second = first.clone()
    second.uuid, second.name = "node-2-uuid", "node2.test"
    second.primary_ip = second.secondary_ip = "127.0.1.2"
    cfg.nodes[second.uuid] = second
    return cfg, first, second


def status(percent: float | None = None, eta: int | None = None, degraded: bool = False,
           ldisk: int = st.LDS_OKAY) -> dict[str, Any]:
    return {"dev_path": "/dev/drbd0", "major": 147, "minor": 0, "sync_percent": percent,
            "estimated_time": eta, "is_degraded": degraded, "ldisk_status": ldisk}


class GenerateTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.cfg, self.p, self.s = two_nodes()
        self.lu = FakeLU(self.cfg)

    def test_layout_is_ganetis(self) -> None:
        disks = drbd.generate_drbd_disks(self.lu, self.cfg, self.p.uuid, self.s.uuid,
                                         [{"size": 1024, "name": "root"},
                                          {"size": 512, "mode": "ro", "vg": "othervg",
                                           "metavg": "metavg"}], base_index=1)
        first, second = disks
        self.assertEqual([d.iv_name for d in disks], ["disk/1", "disk/2"])
        self.assertEqual((first.dev_type, first.size, first.name, first.mode),
                         ("drbd", 1024, "root", "rw"))
        self.assertEqual(second.mode, "ro")
        pnode, snode, port, pminor, sminor, secret = first.logical_id
        self.assertEqual((pnode, snode), (self.p.uuid, self.s.uuid))
        self.assertEqual(first.nodes, [self.p.uuid, self.s.uuid])
        self.assertEqual(port, c.FIRST_DRBD_PORT)  # the first free port above the highest
        self.assertEqual(second.logical_id[2], c.FIRST_DRBD_PORT + 1)
        self.assertEqual((pminor, sminor), (0, 0))
        self.assertEqual(second.logical_id[3:5], [1, 1])  # the next minor on each node
        self.assertRegex(secret, r"^[0-9a-f]{40}$")
        self.assertNotEqual(secret, second.logical_id[5])
        data, meta = first.children
        self.assertEqual((data.dev_type, data.size, meta.dev_type, meta.size),
                         ("plain", 1024, "plain", c.DRBD_META_SIZE))
        self.assertEqual(data.logical_id[0], "xenvg")
        self.assertTrue(data.logical_id[1].endswith(".disk1_data"))
        self.assertEqual(meta.logical_id, ["xenvg",
                                           data.logical_id[1][:-len("_data")] + "_meta"])
        self.assertEqual([ch.logical_id[0] for ch in second.children], ["othervg", "metavg"])
        self.assertTrue(second.children[0].logical_id[1].endswith(".disk2_data"))
        for disk in disks + first.children + second.children:  # the config needs these
            self.assertEqual((disk.serial_no, disk.ctime), (1, 0.0))

    def test_resources_are_reserved_for_the_job(self) -> None:
        disk, = drbd.generate_drbd_disks(self.lu, self.cfg, self.p.uuid, self.s.uuid,
                                         [{"size": 1}])
        res = self.lu.ctx.reservations
        _p, _s, port, pminor, sminor, _secret = disk.logical_id
        self.assertRaises(ReservationError, res.reserve_port, "job-2", self.cfg, port)
        self.assertRaises(ReservationError, res.reserve_drbd_minor, "job-2", self.cfg,
                          self.p.uuid, pminor)
        self.assertRaises(ReservationError, res.reserve_drbd_minor, "job-2", self.cfg,
                          self.s.uuid, sminor)
        for child in disk.children:
            self.assertRaises(ReservationError, res.reserve_lv, "job-2", self.cfg,
                              "/".join(child.logical_id))
        # another job gets the next ones; once the first job ends they are free again
        other = FakeLU(self.cfg, owner="job-2")
        other.ctx.reservations = res
        disk2, = drbd.generate_drbd_disks(other, self.cfg, self.p.uuid, self.s.uuid,
                                          [{"size": 1}])
        self.assertEqual(disk2.logical_id[2:5], [port + 1, pminor + 1, sminor + 1])
        res.release("job-1")
        res.reserve_port("job-3", self.cfg, port)
        res.reserve_drbd_minor("job-3", self.cfg, self.p.uuid, pminor)

    def test_port_and_metavg_come_from_the_config(self) -> None:
        self.cfg.cluster.tcpudp_port_pool = [12000]
        self.cfg.cluster.diskparams["drbd"]["metavg"] = "fastvg"
        disk, = drbd.generate_drbd_disks(self.lu, self.cfg, self.p.uuid, self.s.uuid,
                                         [{"size": 1}])
        self.assertEqual(disk.logical_id[2], 12000)
        self.assertEqual(disk.children[1].logical_id[0], "fastvg")
        drbd.commit_ports(self.cfg, [disk])
        self.assertEqual(self.cfg.cluster.tcpudp_port_pool, [])
        self.assertEqual(self.cfg.cluster.highest_used_port, 12000)

    def test_refusals(self) -> None:
        err = self.assertRaises(OpPrereqError, drbd.generate_drbd_disks, self.lu, self.cfg,
                                self.p.uuid, self.p.uuid, [{"size": 1}])
        self.assertEqual(err.args, ("The secondary node cannot be the primary node",
                                    "wrong_state"))
        self.cfg.cluster.volume_group_name = None
        err = self.assertRaises(OpPrereqError, drbd.generate_drbd_disks, self.lu, self.cfg,
                                self.p.uuid, self.s.uuid, [{"size": 1}])
        self.assertEqual(err.args[1], "wrong_state")

    def test_space_per_volume_group(self) -> None:
        specs = [{"size": 1024}, {"size": 512, "vg": "othervg"}, {"size": 256}]
        self.assertEqual(drbd.size_per_vg("drbd", specs, "xenvg"),
                         {"xenvg": 1024 + 256 + 2 * 128, "othervg": 512 + 128})
        self.assertEqual(drbd.size_per_vg("plain", specs, "xenvg"),
                         {"xenvg": 1280, "othervg": 512})
        self.assertEqual(drbd.size_per_vg("file", specs, "xenvg"), {})


class WaitForSyncTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.cfg, self.p, self.s = two_nodes()
        self.lu = FakeLU(self.cfg)
        self.disks = drbd.generate_drbd_disks(self.lu, self.cfg, self.p.uuid, self.s.uuid,
                                              [{"size": 64}, {"size": 64}])
        for d in self.disks:
            self.cfg.disks[d.uuid] = d
        self.inst = Instance(uuid="i-1", name="inst1.test", primary_node=self.p.uuid,
                             hypervisor="fake", disks=[d.uuid for d in self.disks],
                             disk_template="drbd")

    def wait(self, answers: list[Any], **kw: Any) -> tuple[Any, ScriptedRpc]:
        rpc = ScriptedRpc({"blockdev_getmirrorstatus": answers})
        self.lu.ctx.rpc = lambda: rpc
        d = defer.Deferred.fromCoroutine(drbd.wait_for_sync(self.lu, self.cfg, self.inst,
                                                            **kw))
        box: list[Any] = []
        d.addBoth(box.append)
        for _ in range(200):
            if box:
                break
            self.lu.clock.advance(1)
        return box[0], rpc

    def test_polls_until_in_sync(self) -> None:
        result, rpc = self.wait([[status(40.5, 65), status()], [status(90.0), status()],
                                 [status(), status()]])
        self.assertIs(result, True)
        self.assertEqual(self.lu.messages, [
            " - INFO: Waiting for instance inst1.test to sync disks",
            " - INFO: - device disk/0: 40.50% done, 1m 5s remaining (estimated)",
            " - INFO: - device disk/0: 90.00% done, no time estimate",
            " - INFO: Instance inst1.test's disks are in sync"])
        self.assertEqual([(n, call) for n, call, _ in rpc.calls],
                         [(self.p.name, "blockdev_getmirrorstatus")] * 3)
        self.assertEqual(len(rpc.calls[0][2][0]), 2)  # every mirrored disk, at once
        self.assertGreaterEqual(self.lu.clock.seconds(), 65)  # slept the estimate

    def test_degraded_without_sync_is_retried_then_reported(self) -> None:
        result, rpc = self.wait([[status(degraded=True, ldisk=st.LDS_FAULTY), status()]])
        self.assertIs(result, False)
        self.assertEqual(len(rpc.calls), 11)  # Ganeti's ten more looks, a second apart
        self.assertIn(" - INFO: Instance inst1.test's disks are in sync", self.lu.messages)

    def test_a_transient_degradation_heals(self) -> None:
        result, _rpc = self.wait([[status(degraded=True), status()], [status(), status()]])
        self.assertIs(result, True)

    def test_oneshot_looks_once(self) -> None:
        result, rpc = self.wait([[status(10.0, 5), status()]], oneshot=True)
        self.assertIs(result, True)  # still syncing is fine
        self.assertEqual(len(rpc.calls), 1)
        self.assertNotIn(" - INFO: Waiting for instance inst1.test to sync disks",
                         self.lu.messages)

    def test_a_silent_primary_is_given_up(self) -> None:
        result, rpc = self.wait(["connection refused"])
        self.assertIsInstance(result.value, RemoteError)
        self.assertEqual(str(result.value), f"Can't contact node {self.p.name} for mirror "
                                            "data, aborting.")
        self.assertEqual(len(rpc.calls), 10)
        self.assertIn(f" - WARNING: Can't get any data from node {self.p.name}: connection "
                      "refused", self.lu.messages)

    def test_nothing_mirrored_nothing_asked(self) -> None:
        self.inst.disks = []
        result, rpc = self.wait([[]])
        self.assertIs(result, True)
        self.assertEqual(rpc.calls, [])


class StatusTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.cfg, self.p, self.s = two_nodes()
        self.lu = FakeLU(self.cfg)
        self.disk, = drbd.generate_drbd_disks(self.lu, self.cfg, self.p.uuid, self.s.uuid,
                                              [{"size": 64}])
        self.cfg.disks[self.disk.uuid] = self.disk
        self.inst = Instance(uuid="i-1", name="inst1.test", primary_node=self.p.uuid,
                             hypervisor="fake", disks=[self.disk.uuid], disk_template="drbd",
                             disks_active=True)

    def test_drbd_info_follows_the_primary(self) -> None:
        port = self.disk.logical_id[2]
        self.assertEqual(drbd.drbd_info(self.cfg, self.inst, self.disk), {
            "primary_node": self.p.name, "primary_minor": 0,
            "secondary_node": "node2.test", "secondary_minor": 0, "port": port})
        self.disk.logical_id[4] = 3
        self.inst.primary_node = self.s.uuid  # after a failover
        self.assertEqual(drbd.drbd_info(self.cfg, self.inst, self.disk), {
            "primary_node": "node2.test", "primary_minor": 3,
            "secondary_node": self.p.name, "secondary_minor": 0, "port": port})
        self.assertEqual(drbd.status_tuple(status(12.5, 3, True, st.LDS_SYNC)),
                         ["/dev/drbd0", 147, 0, 12.5, 3, True, st.LDS_SYNC])
        self.assertIsNone(drbd.status_tuple(None))

    def findings(self, answers: list[Any]) -> list[tuple[bool, str]]:
        """What verify finds when the nodes (in name order) answer ``answers``."""
        rpc = ScriptedRpc({"blockdev_getmirrorstatus_multi": answers})
        self.lu.ctx.rpc = lambda: rpc
        return self.successResultOf(defer.Deferred.fromCoroutine(
            drbd.degraded_disks(self.lu, self.cfg, self.inst)))

    def test_verify_findings(self) -> None:
        ok = [True, status()]
        self.assertEqual(self.findings([[ok]]), [])
        self.assertEqual(self.findings([[[True, status(degraded=True, ldisk=st.LDS_FAULTY)]],
                                        [[True, status(degraded=True)]]]), [
            (True, f"disk/0 on {self.p.name} is degraded; local disk state is 'faulty'"),
            (False, "disk/0 on node2.test is degraded; local disk state is 'ok'")])
        self.assertEqual(self.findings([[ok], [[False, "Can't find device drbd0"]]]), [
            (True, "couldn't retrieve status for disk/0 on node2.test: Can't find device "
                   "drbd0")])
        self.assertEqual(self.findings([[ok], "connection refused"]), [
            (True, "couldn't retrieve status for disk/0 on node2.test: connection refused")])
        self.inst.disks_active = False  # Ganeti looks only at active disks
        self.assertEqual(self.findings(["connection refused"]), [])

    def test_format_seconds(self) -> None:
        self.assertEqual([format_seconds(s) for s in (0, 5, 65, 3600, 200000)],
                         ["0s", "5s", "1m 5s", "1h 0m 0s", "2d 7h 33m 20s"])
