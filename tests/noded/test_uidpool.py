"""The user-id pool on a node: hand-out, skipping used uids, release, exhaustion; and
the instance start/stop path that takes and gives back a uid for security_model=pool."""

import os
import random

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import ssconf
from ganeti.noded import uidpool
from ganeti.noded.backend import instances as backend
from tests.noded.helpers import MemoryNode, node_paths

REASON = [["gnt:client:gnt-instance", "test", 1700000000000000000]]
BASE = 3_900_000_000  # uids no process of this machine runs with


def fake_proc(testcase, uids_by_pid):
    """A /proc with one status file per process, real/effective/saved/fs uids."""
    root = os.path.abspath(testcase.mktemp())
    os.makedirs(os.path.join(root, "self"))
    for pid, uid in uids_by_pid.items():
        os.makedirs(os.path.join(root, str(pid)))
        with open(os.path.join(root, str(pid), "status"), "w") as f:
            f.write(f"Name:\tqemu\nPid:\t{pid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    return root


class RequestTest(SynchronousTestCase):
    def setUp(self):
        self.dir = os.path.join(os.path.abspath(self.mktemp()), "uid-pool")
        self.proc = fake_proc(self, {})

    def request(self, uids, proc=None, rng=None):
        return uidpool.request_unused_uid(self.dir, uids, proc or self.proc, rng)

    def test_two_requests_never_get_the_same_uid(self):
        pool = range(BASE, BASE + 3)
        first = self.request(pool)
        second = self.request(pool)  # the first still holds its lock
        self.assertNotEqual(first.uid, second.uid)
        first.claim("inst1")
        second.claim("inst2")
        third = self.request(pool)
        self.assertEqual({first.uid, second.uid, third.uid}, set(pool))
        third.claim("inst3")
        with open(os.path.join(self.dir, str(first.uid))) as f:
            self.assertEqual(f.read(), "inst1\n")
        # all three claimed: exhausted
        err = self.assertRaises(uidpool.UidPoolError, self.request, pool)
        self.assertIn("Failed to find an unused user-id", str(err))

    def test_uid_with_a_running_process_is_skipped(self):
        pool = [BASE, BASE + 1]
        proc = fake_proc(self, {100: BASE, 200: 0})
        for seed in range(5):  # whatever the random order
            got = self.request(pool, proc, random.Random(seed))
            self.assertEqual(got.uid, BASE + 1)
            got.unlock()
            uidpool.release_uid(self.dir, got.uid)
        self.assertTrue(uidpool.uid_in_use(BASE, proc))
        self.assertFalse(uidpool.uid_in_use(BASE + 1, proc))

    def test_the_real_proc_sees_this_process(self):
        self.assertTrue(uidpool.uid_in_use(os.getuid()))
        got = uidpool.request_unused_uid(self.dir, [os.getuid(), BASE])
        self.assertEqual(got.uid, BASE)
        got.unlock()
        self.assertRaises(uidpool.UidPoolError, uidpool.request_unused_uid, self.dir,
                          [os.getuid()])

    def test_release_frees_the_uid(self):
        got = self.request([BASE])
        got.claim("inst1")
        self.assertRaises(uidpool.UidPoolError, self.request, [BASE])
        uidpool.release_uid(self.dir, BASE)
        self.assertFalse(os.path.exists(os.path.join(self.dir, str(BASE))))
        self.assertEqual(self.request([BASE]).uid, BASE)
        uidpool.release_uid(self.dir, BASE + 7)  # releasing a free uid is fine

    def test_an_abandoned_lock_file_is_reused(self):
        os.makedirs(self.dir)
        open(os.path.join(self.dir, str(BASE)), "w").close()  # no owner: a dead request
        self.assertEqual(self.request([BASE]).uid, BASE)

    def test_empty_pool(self):
        err = self.assertRaises(uidpool.UidPoolError, self.request, [])
        self.assertIn("The user-id pool is empty", str(err))

    def test_exec_with_unused_uid(self):
        seen = []
        result = uidpool.exec_with_unused_uid(lambda uid, x: seen.append(uid) or x * 2,
                                              [BASE], self.dir, "inst1", 21,
                                              proc_root=self.proc)
        self.assertEqual((result, seen), (42, [BASE]))
        self.assertRaises(uidpool.UidPoolError, self.request, [BASE])  # claimed

        def boom(uid):
            raise RuntimeError("start failed")

        uidpool.release_uid(self.dir, BASE)
        self.assertRaises(RuntimeError, uidpool.exec_with_unused_uid, boom, [BASE],
                          self.dir, "inst2", proc_root=self.proc)
        self.assertFalse(os.path.exists(os.path.join(self.dir, str(BASE))))  # given back

    def test_pool_from_ssconf(self):
        paths = node_paths(self)
        self.assertEqual(uidpool.pool_uids(paths), set())  # no ssconf: no pool
        with open(paths.ssconf_file("uid_pool"), "w") as f:
            f.write(ssconf.file_content(f"{BASE}-{BASE + 2}\n{BASE + 9}"))
        self.assertEqual(uidpool.pool_uids(paths), {BASE, BASE + 1, BASE + 2, BASE + 9})
        self.assertEqual(uidpool.lock_dir(paths), os.path.join(paths.run_dir, "uid-pool"))


def instance(name, security_model="pool"):
    return {"name": name, "hypervisor": "fake", "osparams": {},
            "hvparams": {"migration_mode": "live", "security_model": security_model,
                         "security_domain": ""},
            "beparams": {"maxmem": 128, "minmem": 128, "vcpus": 1}}


class StartStopTest(SynchronousTestCase):
    """A kvm-like hvparams dict through the node's generic start/stop path (the fake
    hypervisor does the starting)."""

    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)
        self.lock_dir = uidpool.lock_dir(self.paths)

    def set_pool(self, text):
        with open(self.paths.ssconf_file("uid_pool"), "w") as f:
            f.write(ssconf.file_content(text))

    def put(self, name, args):
        status, reply = self.node.put(name, args)
        self.assertEqual(status, 200, reply)
        return reply

    def uid_of(self, name):
        return backend.instance_uid(self.node.ctx, name)

    def test_start_takes_a_uid_and_stop_gives_it_back(self):
        self.set_pool(f"{BASE}-{BASE + 1}")
        self.assertEqual(self.put("instance_start", [instance("a1"), False, REASON]),
                         [True, None])
        self.assertEqual(self.put("instance_start", [instance("a2"), False, REASON]),
                         [True, None])
        uids = {self.uid_of("a1"), self.uid_of("a2")}
        self.assertEqual(uids, {BASE, BASE + 1})
        self.assertEqual(sorted(os.listdir(self.lock_dir)), sorted(str(u) for u in uids))
        # exhausted: a third start fails and starts nothing
        ok, message = self.put("instance_start", [instance("a3"), False, REASON])
        self.assertFalse(ok)
        self.assertIn("Could not start instance a3: security model 'pool'", message)
        self.assertIn("Failed to find an unused user-id", message)
        self.assertEqual(self.put("instance_list", [["fake"], {}])[1], ["a1", "a2"])
        self.assertIsNone(self.uid_of("a3"))
        # stop: the uid is free again, and a start gets it
        freed = self.uid_of("a1")
        self.assertEqual(self.put("instance_shutdown", [instance("a1"), 10, REASON]),
                         [True, None])
        self.assertIsNone(self.uid_of("a1"))
        self.assertNotIn(str(freed), os.listdir(self.lock_dir))
        self.put("instance_start", [instance("a3"), False, REASON])
        self.assertEqual(self.uid_of("a3"), freed)
        # a hard reboot keeps the instance in the pool
        self.put("instance_reboot", [instance("a3"), "hard", 10, REASON])
        self.assertIsNotNone(self.uid_of("a3"))

    def test_empty_pool_fails_the_start(self):
        ok, message = self.put("instance_start", [instance("a1"), False, REASON])
        self.assertFalse(ok)
        self.assertIn("The user-id pool is empty", message)
        self.assertEqual(self.put("instance_list", [["fake"], {}])[1], [])

    def test_other_security_models_take_no_uid(self):
        self.set_pool(str(BASE))
        self.put("instance_start", [instance("a1", "none"), False, REASON])
        self.assertIsNone(self.uid_of("a1"))
        self.assertFalse(os.path.exists(self.lock_dir) and os.listdir(self.lock_dir))

    def test_a_crashed_instance_gives_its_uid_back(self):
        self.set_pool(str(BASE))
        self.put("instance_start", [instance("a1"), False, REASON])
        self.assertEqual(self.uid_of("a1"), BASE)
        # the instance dies behind the node's back
        os.unlink(os.path.join(self.paths.run_dir, "fake-hypervisor", "a1"))
        self.assertEqual(self.put("instance_shutdown", [instance("a1"), 10, REASON]),
                         [True, None])
        self.assertIsNone(self.uid_of("a1"))
        self.assertEqual(os.listdir(self.lock_dir), [])
        # and a start after a crash reuses the record's uid cleanly
        self.put("instance_start", [instance("a1"), False, REASON])
        os.unlink(os.path.join(self.paths.run_dir, "fake-hypervisor", "a1"))
        self.assertEqual(self.put("instance_start", [instance("a1"), False, REASON]),
                         [True, None])
        self.assertEqual(self.uid_of("a1"), BASE)
