"""The fault matrix of a drbd migration's mirror steps: each step × {the node call fails,
the node stops answering (for 5 s of the clock)} ends with the instance running on
exactly one node, the config naming it, and the mirror connected, in sync and
single-master with the other node secondary -- no cleanup run by anyone -- and the next
migration works."""

from __future__ import annotations

from tests.master.drbd_cases import DrbdCase

SOURCE, TARGET = "node1.test", "node2.test"
#: The mirror's node calls of a migration: (call, side, how many of these calls on that
#: node pass before the one that meets the fault), in the order they run.
STEPS = (
    ("blockdev_find", "target", 0),          # consistency of the target
    ("blockdev_close", "target", 0),         # demote the target
    ("drbd_disconnect_net", "source", 0), ("drbd_disconnect_net", "target", 0),
    ("drbd_attach_net", "source", 0), ("drbd_attach_net", "target", 0),  # dual-master
    ("drbd_wait_sync", "source", 0), ("drbd_wait_sync", "target", 0),
    ("blockdev_open", "source", 0), ("blockdev_open", "target", 0),
    # after the move: the old primary closed, single-master again
    ("blockdev_close", "source", 0),
    ("drbd_wait_sync", "source", 1), ("drbd_wait_sync", "target", 1),
    ("drbd_disconnect_net", "source", 1), ("drbd_disconnect_net", "target", 1),
    ("drbd_attach_net", "source", 1), ("drbd_attach_net", "target", 1),
    ("drbd_wait_sync", "source", 2), ("drbd_wait_sync", "target", 2),
)


class DrbdFaultMatrixTest(DrbdCase):
    def _one(self, call, side, skip, fault):
        node = SOURCE if side == "source" else TARGET
        case = (call, side, skip, fault)
        self.net.faults[(node, call)] = fault
        if skip:
            self.net.skip[(node, call)] = skip
        before = len(self.net.contacted)
        status, result, log = self.run_logged(self.migrate())
        self.net.faults.clear()
        self.net.skip.clear()
        self.assertIn((node, call), self.net.contacted[before:], case)  # the fault was met
        self.assertEqual(status, "error", (case, result))
        self.net.down.clear()
        self.assertEqual(len(self.where()), 1, (case, log))
        self.assert_consistent()
        self.assert_mirror_healthy()
        # no cleanup: the next migration works from where the instance is
        status, result, log = self.run_logged(self.migrate())
        self.assertEqual(status, "success", (case, result, log))
        self.assert_consistent()
        self.assert_mirror_healthy()
        if self.primary() != SOURCE:
            self.run_ok(self.migrate())
        self.assertEqual(self.primary(), SOURCE)

    def test_every_mirror_step_failing_or_its_node_stopping(self):
        self.make_drbd()
        for call, side, skip in STEPS:
            for fault in ("fail", "down"):
                self._one(call, side, skip, fault)

    def test_messages_are_ganetis(self):
        self.make_drbd()
        cases = [
            ((TARGET, "blockdev_close"), "Cannot close instance disks on node node2.test: "
             "injected failure of blockdev_close"),
            ((SOURCE, "drbd_disconnect_net"), "Cannot disconnect disks node node1.test: "
             "injected failure of drbd_disconnect_net"),
            ((SOURCE, "drbd_attach_net"), "Cannot change disks config on node node1.test: "
             "injected failure of drbd_attach_net"),
            ((SOURCE, "drbd_wait_sync"), "Cannot resync disks on node node1.test: "
             "injected failure of drbd_wait_sync"),
            ((TARGET, "blockdev_open"), "Cannot open instance disks on node node2.test: "
             "injected failure of blockdev_open"),
        ]
        for fault, message in cases:
            self.net.faults = {fault: "fail"}
            cls, msg, _code = self.run_error(self.migrate())
            self.assertEqual((cls, msg), ("OpExecError", message))
            self.assert_consistent()
            self.assertEqual(self.primary(), SOURCE)
            self.assert_mirror_healthy()

    def test_a_node_that_never_comes_back_leaves_a_warning(self):
        self.make_drbd()
        self.net.down_for = None
        self.net.faults[(TARGET, "blockdev_open")] = "down"
        status, result, log = self.run_logged(self.migrate())
        self.assertEqual(status, "error", result)
        warning = (" - WARNING: Migration failed and I can't reconnect the drives, please "
                   "try to recover the instance manually; error 'Cannot close instance "
                   "disks on node node2.test: ")
        self.assertTrue(any(line.startswith(warning) for line in log), log)
        self.assertEqual(self.where(), [SOURCE])
        self.assertEqual(self.primary(), SOURCE)
