"""ganeti-noded's HTTP resource in memory: every call, methods, bodies, validation."""

import json
import os
import stat

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants, rpcdefs
from ganeti.noded.backend import files, info
from ganeti.noded.hypervisors import fake
from tests.noded.helpers import MemoryNode, node_paths


class ServerTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)

    def test_version(self):
        self.assertEqual(self.node.put("version", []), (200, [True, constants.PROTOCOL_VERSION]))

    def test_node_info(self):
        status, (ok, result) = self.node.put("node_info", [])
        self.assertEqual((status, ok), (200, True))
        for key in ("memory_total", "memory_free", "cpu_total", "cpu_sockets", "cpu_nodes",
                    "disk_total", "disk_free"):
            self.assertIsInstance(result[key], int, key)
        self.assertEqual(result["cpu_total"], os.cpu_count())
        self.assertGreater(result["memory_total"], 0)
        self.assertEqual(result["storage_dir"], "/var/lib/ganeti")

    def test_node_info_memory_as_ganeti(self):
        """Free memory is MemFree+Buffers+Cached less the fake hypervisor's running
        instances, dom0's is Active (Ganeti's GetLinuxNodeInfo and fake GetNodeInfo)."""
        proc = os.path.join(self.paths.root, "fakeproc")
        os.makedirs(proc)
        with open(os.path.join(proc, "meminfo"), "w") as f:
            f.write("MemTotal: 8388608 kB\nMemFree: 4194304 kB\nBuffers: 1048576 kB\n"
                    "Cached: 1048576 kB\nActive: 921600 kB\n")
        got = info.collect_node_info(self.paths, proc=proc)
        self.assertEqual((got["memory_total"], got["memory_free"], got["memory_dom0"]),
                         (8192, 6144, 900))
        fake.mark_running(self.paths.run_dir, "inst1.example.com", 512, 1)
        fake.mark_running(self.paths.run_dir, "inst2.example.com", 128, 2)
        got = info.collect_node_info(self.paths, proc=proc)
        self.assertEqual((got["memory_free"], got["memory_dom0"]), (6144 - 640, 900))
        with open(os.path.join(proc, "meminfo"), "w") as f:
            f.write("MemTotal: 8388608 kB\nMemFree: 524288 kB\n")  # no Active: total-free
        got = info.collect_node_info(self.paths, proc=proc)
        self.assertEqual((got["memory_free"], got["memory_dom0"]), (0, 7680))

    def test_meminfo_parse(self):
        mem = info.parse_meminfo("MemTotal:  2048 kB\nMemFree: 1024 kB\nHugePages_Total: 0\n")
        self.assertEqual(mem, {"MemTotal": 2048, "MemFree": 1024, "HugePages_Total": 0})

    def test_bad_method(self):
        for method in ("GET", "POST", "DELETE"):
            status, body = self.node.exchange(method, "/version")
            self.assertEqual(status, 405)
            self.assertEqual(body[0], False)
            self.assertEqual(self.node.last_headers[b"allow"], b"PUT")

    def test_unknown_call(self):
        status, body = self.node.put("nonexistent", [])
        self.assertEqual(status, 404)
        self.assertFalse(body[0])

    def test_bad_bodies(self):
        for body in (b"not json", b"{}", b"\xff\xfe", b"[1, 2]"):
            status, reply = self.node.exchange("PUT", "/version", body)
            self.assertEqual(status, 400, body)
            self.assertFalse(reply[0])
        status, reply = self.node.put("test_delay", ["soon"])
        self.assertEqual(status, 400)
        self.assertIn("duration", reply[1])

    def test_body_limit(self):
        node = MemoryNode(self.paths, max_body=1024)
        status, reply = node.put("write_ssconf_files", [{"cluster_name": "x" * 5000}])
        self.assertEqual(status, 413)
        self.assertFalse(os.path.exists(self.paths.ssconf_file("cluster_name")))

    def test_delay_uses_clock(self):
        status, _ = self.node.put("test_delay", [5])
        self.assertIsNone(status)  # not answered before the clock moves
        self.assertEqual(self.node.put("test_delay", [5], advance=5), (200, [True, None]))

    def test_write_ssconf(self):
        self.assertEqual(self.node.put("write_ssconf_files",
                                       [{"master_node": "n1", "offline_nodes": ""}]),
                         (200, [True, None]))
        with open(self.paths.ssconf_file("master_node")) as f:
            self.assertEqual(f.read(), "n1\n")
        self.assertEqual(os.path.getsize(self.paths.ssconf_file("offline_nodes")), 0)

    def test_write_ssconf_replaces_only_what_differs(self):
        values = {"master_node": "n1", "cluster_name": "c", "offline_nodes": ""}
        self.assertEqual(self.node.put("write_ssconf_files", [values]), (200, [True, None]))
        inode = {k: os.stat(self.paths.ssconf_file(k)).st_ino for k in values}
        os.chmod(self.paths.ssconf_file("cluster_name"), 0o600)  # a wrong mode is mended
        values["master_node"] = "n2"
        self.assertEqual(self.node.put("write_ssconf_files", [values]), (200, [True, None]))
        after = {k: os.stat(self.paths.ssconf_file(k)).st_ino for k in values}
        self.assertEqual(after["offline_nodes"], inode["offline_nodes"])  # left alone
        self.assertNotEqual(after["master_node"], inode["master_node"])
        self.assertNotEqual(after["cluster_name"], inode["cluster_name"])
        with open(self.paths.ssconf_file("master_node")) as f:
            self.assertEqual(f.read(), "n2\n")
        self.assertEqual(os.stat(self.paths.ssconf_file("cluster_name")).st_mode & 0o777,
                         0o444)


class UploadTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)

    def upload(self, name, content, mode=0o640, atime=None, mtime=None):
        return self.node.put("upload_file", [name, content, mode, None, None, atime, mtime])

    def test_allowed_files(self):
        for local in (self.paths.config_file, self.paths.ssconf_file("cluster_name"),
                      self.paths.rapi_users, self.paths.hmac_key, self.paths.rapi_pem,
                      self.paths.cluster_domain_secret):
            wire = rpcdefs.to_wire_path(self.paths.root, local)
            self.assertEqual(self.upload(wire, "data", mtime=1000), (200, [True, None]), wire)
            with open(local) as f:
                self.assertEqual(f.read(), "data")
            self.assertEqual(stat.S_IMODE(os.stat(local).st_mode), 0o640)
            self.assertEqual(os.stat(local).st_mtime, 1000)

    def test_compressed_content(self):
        content = rpcdefs.encode_content(b"\x00binary\xff", compress=True)
        self.assertEqual(self.upload("/var/lib/ganeti/config.data", content)[1][0], True)
        with open(self.paths.config_file, "rb") as f:
            self.assertEqual(f.read(), b"\x00binary\xff")

    def test_refused(self):
        for name in ("/etc/passwd", "/var/lib/ganeti/server.pem", "/var/lib/ganeti/../x",
                     "var/lib/ganeti/config.data", "/var/lib/ganeti/queue/job-1",
                     "/etc/ganeti/" + files.EXTRA_ALLOWED_FILE):
            status, reply = self.upload(name, "x")
            self.assertEqual(status, 200)
            self.assertFalse(reply[0], name)
        self.assertFalse(os.path.exists(self.paths.root + "/etc/passwd"))

    def test_extra_allowed_list(self):
        with open(files.extra_allowed_path(self.paths), "w") as f:
            f.write("/etc/hosts\n# comment\n")
        self.assertEqual(self.upload("/etc/hosts", "127.0.0.1 x\n"), (200, [True, None]))
        self.assertTrue(os.path.exists(self.paths.root + "/etc/hosts"))


class JobQueueTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)

    def q(self, *parts):
        return os.path.join(self.paths.queue_dir, *parts)

    def test_update_names(self):
        for name in ("job-1", "serial", "archive/0/job-7", "/var/lib/ganeti/queue/job-2"):
            self.assertEqual(self.node.put("jobqueue_update", [name, "{}"]), (200, [True, None]))
        self.assertTrue(os.path.exists(self.q("archive", "0", "job-7")))
        self.assertTrue(os.path.exists(self.q("job-2")))
        for name in ("../config.data", "job-x", "lock", "archive/job-1", "job-1/../serial",
                     "/var/lib/ganeti/config.data", "/var/lib/ganeti/queue/../x"):
            status, reply = self.node.put("jobqueue_update", [name, "{}"])
            self.assertEqual((status, reply[0]), (200, False), name)
            self.assertIn("invalid job queue file name", reply[1])
        self.assertFalse(os.path.exists(self.paths.data_dir + "/x"))

    def test_rename_and_purge(self):
        self.node.put("jobqueue_update", ["job-3", json.dumps({"id": 3})])
        self.node.put("jobqueue_update", ["serial", "3"])
        open(self.q("lock"), "w").close()
        self.assertEqual(self.node.put("jobqueue_rename", [[["job-3", "archive/0/job-3"]]]),
                         (200, [True, None]))
        self.assertFalse(os.path.exists(self.q("job-3")))
        self.assertTrue(os.path.exists(self.q("archive", "0", "job-3")))
        status, reply = self.node.put("jobqueue_rename", [[["serial", "../x"]]])
        self.assertFalse(reply[0])
        self.assertTrue(os.path.exists(self.q("serial")))
        self.assertEqual(self.node.put("jobqueue_purge", []), (200, [True, None]))
        self.assertEqual(sorted(os.listdir(self.paths.queue_dir)), ["archive", "lock"])
        self.assertEqual(os.listdir(self.q("archive")), [])

    def test_rename_missing_file_fails_cleanly(self):
        status, reply = self.node.put("jobqueue_rename", [[["job-9", "archive/0/job-9"]]])
        self.assertEqual((status, reply[0]), (200, False))
        self.flushLoggedErrors(FileNotFoundError)
