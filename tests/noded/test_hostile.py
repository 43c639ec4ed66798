"""ganeti-noded against bodies nested too deep and names that only match in part
(issue 13, items 9 and 11)."""

import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import serializer
from ganeti.noded.backend import files, jobqueue
from tests.noded.helpers import MemoryNode, node_paths

#: Names that a ``re.match`` with ``$`` accepted, or that match only in part.
BAD_QUEUE_NAMES = ["job-77\n", "serial\n", "archive/1/job-2\n", "job-7\r", " job-7",
                   "job-7 ", "job-7x", "job-\u0661", "job-7/../serial", "job-7\x00",
                   "serial\nserial", "\nserial", "archive/1/job-2\nx", "lock", ""]


def listing(root):
    """Every path below ``root`` (relative), directories included."""
    out = set()
    for base, dirs, names in os.walk(root):
        for n in dirs + names:
            out.add(os.path.relpath(os.path.join(base, n), root))
    return out


class DeepBodyTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)

    def test_deep_body_is_a_400_with_a_message(self):
        for body in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
                     b"[" * 100_000):
            for call in ("version", "upload_file", "jobqueue_update_many", "node_verify"):
                status, reply = self.node.exchange("PUT", "/" + call, body)
                self.assertEqual(status, 400, call)
                self.assertEqual(reply[0], False)
                self.assertIn(f"{call}: the body is not acceptable JSON", reply[1])
                self.assertIn("JSON nested", reply[1])  # unbalanced: "nested too deeply"
        self.assertEqual(self.flushLoggedErrors(), [])

    def test_nesting_within_the_bound_reaches_the_argument_check(self):
        value = [["x"]]
        for _ in range(serializer.MAX_JSON_DEPTH - 3):
            value = [value]
        status, reply = self.node.put("write_ssconf_files", [{"k": "v"}, value])
        self.assertEqual(status, 400)
        self.assertIn("takes 1 argument(s)", reply[1])


class FullMatchTest(SynchronousTestCase):
    """Every name from the wire must match whole: nothing is written for a near miss."""

    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)
        self.before = listing(self.paths.root)

    def assertRefused(self, call, args, expected):
        status, reply = self.node.put(call, args)
        self.assertEqual(reply[0], False, (call, args))
        self.assertIn(expected, reply[1], (call, args))
        self.assertEqual(listing(self.paths.root), self.before, (call, args))
        return status

    def test_queue_names(self):
        queue = "/var/lib/ganeti/queue/"
        for name in BAD_QUEUE_NAMES + [queue + n for n in BAD_QUEUE_NAMES]:
            self.assertRefused("jobqueue_update", [name, "x"], "invalid job queue file name")
            self.assertRefused("jobqueue_update_many", [[[name, "x"]], []],
                               "invalid job queue file name")
            self.assertRefused("jobqueue_update_many", [[], [["job-1", name]]],
                               "invalid job queue file name")
            self.assertRefused("jobqueue_rename", [[["job-1", name]]],
                               "invalid job queue file name")
            self.assertRefused("jobqueue_rename", [[[name, "job-1"]]],
                               "invalid job queue file name")
        # the good names still work
        for name in ("job-77", "serial", "archive/0/job-3", queue + "job-78"):
            self.assertEqual(self.node.put("jobqueue_update", [name, "{}"]), (200, [True, None]))

    def test_queue_path_function(self):
        for name in BAD_QUEUE_NAMES:
            self.assertRaises(jobqueue.RPCFail, jobqueue.queue_path, self.paths, name)

    def test_ssconf_upload_names(self):
        for base in ("ssconf_evil\n", "ssconf_evil\r", "ssconf_\n", "ssconf_Evil",
                     "ssconf_evil x", "ssconf_evil\nssconf_x", "ssconf_"):
            path = "/var/lib/ganeti/" + base
            self.assertRefused("upload_file", [path, "x", 0o444, None, None, None, None],
                               "not")
            self.assertFalse(files.is_allowed(self.paths, os.path.join(self.paths.data_dir,
                                                                         base)))
        status, reply = self.node.put("upload_file", ["/var/lib/ganeti/ssconf_ok", "x",
                                                      0o444, None, None, None, None])
        self.assertEqual((status, reply), (200, [True, None]))

    def test_ssconf_keys(self):
        for key in ("evil\n", "evil\r", "\nevil", "evil x", "Evil", "", "../x", "a/b"):
            status = self.assertRefused("write_ssconf_files", [{key: "v"}],
                                        "argument values must be")
            self.assertEqual(status, 400)
        self.assertEqual(self.node.put("write_ssconf_files", [{"ok_key-1": "v"}]),
                         (200, [True, None]))
        with open(self.paths.ssconf_file("ok_key-1")) as f:
            self.assertEqual(f.read(), "v\n")

    def test_ssconf_listing_ignores_partial_names(self):
        from ganeti.noded.backend.ssconf import ssconf_files
        for name in ("ssconf_good", "ssconf_bad\n", "ssconf_Bad"):
            with open(os.path.join(self.paths.data_dir, name), "w") as f:
                f.write("x")
        self.assertEqual([k for k, _ in ssconf_files(self.paths)], ["good"])
