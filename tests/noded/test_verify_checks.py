"""node_verify's machine checks: setup, certificate, memory, scripts, OOB, storage, network."""

import datetime
import os
import socket

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import crypto, rpcdefs
from ganeti.noded.backend import nodechecks
from tests.noded.helpers import MemoryNode, node_paths

CLUSTER = "cluster.example.com"


def write(path, data, mode=0o600):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.chmod(path, mode)


class MachineChecksTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)
        self.now = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
        self.node.clock.advance(self.now.timestamp())

    def verify(self, checks):
        status, (ok, result) = self.node.put("node_verify", [checks, CLUSTER])
        self.assertEqual((status, ok), (200, True), result)
        return result

    def test_client_cert_digest_expiry_and_absence(self):
        pem = crypto.generate_self_signed(CLUSTER, now=self.now)
        write(self.paths.server_pem, pem, 0o440)
        self.assertEqual(self.verify({"client_cert": True})["client_cert"],
                         [None, crypto.certificate_digest(pem)])
        write(self.paths.server_pem, crypto.generate_self_signed(
            CLUSTER, validity_days=2, now=self.now), 0o440)
        level, msg = self.verify({"client_cert": True})["client_cert"]
        self.assertEqual(level, "ERROR")
        self.assertIn("Certificate expires in about", msg)
        os.unlink(self.paths.server_pem)
        level, msg = self.verify({"client_cert": True})["client_cert"]
        self.assertEqual(level, "ERROR")
        self.assertIn("does not exist", msg)

    def test_user_scripts_and_oob_paths(self):
        script = os.path.join(self.paths.root, "etc/ganeti/scripts/ok")
        write(script, "#!/bin/sh\n", 0o755)
        plain = os.path.join(self.paths.root, "etc/ganeti/scripts/plain")
        write(plain, "x", 0o644)
        wire_ok = rpcdefs.to_wire_path(self.paths.root, script)
        wire_plain = rpcdefs.to_wire_path(self.paths.root, plain)
        result = self.verify({"userscripts": [wire_ok, wire_plain, "/nonexistent/x"],
                              "oob_paths": [wire_ok, wire_plain, "/nonexistent/x"]})
        self.assertEqual(result["userscripts"], [wire_plain, "/nonexistent/x"])
        self.assertEqual(result["oob_paths"][0], None)
        self.assertEqual(result["oob_paths"][1],
                         f"out of band helper {wire_plain} is not executable")
        self.assertIn("error stating out of band helper", result["oob_paths"][2])

    def test_storage_paths(self):
        good = os.path.join(self.paths.root, "srv/ganeti/file-storage")
        os.makedirs(good)
        allowed = os.path.join(self.paths.conf_dir, "file-storage-paths")
        write(allowed, f"{good}\n/srv/ganeti\n")
        result = self.verify({"file_storage_path": good,
                              "shared_file_storage_path": "/srv/ganeti/missing"})
        self.assertNotIn("file_storage_path", result)  # usable: no key, as Ganeti
        self.assertEqual(result["shared_file_storage_path"],
                         "Path '/srv/ganeti/missing' is not existing or not a directory.")
        write(os.path.join(self.paths.conf_dir, "file-storage-paths"),
              "# allowed\n/srv/ganeti/file-storage\n/usr/lib/x\nrelative\n/etc\n")
        self.assertEqual(self.verify({"accepted_storage_paths": True})
                         ["accepted_storage_paths"], ["/etc", "/usr/lib/x", "relative"])

    def test_storage_paths_the_node_does_not_allow(self):
        # Ganeti's CheckFileStoragePath: a storage directory must be allowed by the
        # node's file-storage-paths (itself or below a listed one) before it is looked at.
        good = os.path.join(self.paths.root, "srv/ganeti/file-storage")
        os.makedirs(good)
        allowed = os.path.join(self.paths.conf_dir, "file-storage-paths")
        result = self.verify({"file_storage_path": good})
        self.assertEqual(result["file_storage_path"],
                         f"No paths are valid or path file '{allowed}' was not accessible.")
        write(allowed, "/srv/other\n")
        result = self.verify({"file_storage_path": good, "shared_file_storage_path": "/boot/"})
        self.assertEqual(result["file_storage_path"],
                         f"Path '{good}' is not acceptable for file storage")
        self.assertEqual(result["shared_file_storage_path"],
                         "Path '/boot/' uses a forbidden prefix")
        write(allowed, f"{os.path.dirname(good)}\n")  # below a listed directory: fine
        self.assertNotIn("file_storage_path", self.verify({"file_storage_path": good}))

    def test_memory_and_setup(self):
        result = self.verify({"hvinfo": True, "nodesetup": True})
        self.assertGreater(result["hvinfo"]["memory_total"], 0)
        self.assertIsInstance(result["nodesetup"], list)
        self.assertEqual(nodechecks.node_setup(proc=self.paths.root, sys_dir=self.paths.root),
                         [nodechecks.node_setup("/nonexistent", "/x")[0],
                          nodechecks.node_setup("/nonexistent", "/x")[1]])

    def test_net_test(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        self.addCleanup(listener.close)
        port = listener.getsockname()[1]
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        dead_port = closed.getsockname()[1]
        closed.close()
        result = self.verify({"node_net_test": [["up", "127.0.0.1", port],
                                                ["down", "127.0.0.1", dead_port]]})
        self.assertEqual(result["node_net_test"],
                         {"down": "failure using the primary interface(s)"})

    def test_bad_shapes_are_refused(self):
        for checks in ({"node_net_test": [["n", "1.2.3.4", 0]]},
                       {"userscripts": ["relative"]}, {"file_storage_path": 5},
                       {"client_cert": "yes"}):
            status, (ok, _) = self.node.put("node_verify", [checks, CLUSTER])
            self.assertFalse(ok, checks)
