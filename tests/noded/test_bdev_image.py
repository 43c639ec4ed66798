"""``blockdev_image`` on the node: an OS image (a file on the node or a URL) written
onto a disk's device, with Ganeti's checks (real files in a temporary node root; a
URL served by an HTTP server on loopback that the test starts)."""

import http.server
import os
import threading

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import fileutil
from tests.noded.helpers import MemoryNode, node_paths
from tests.noded.test_bdev_files import NodeCalls, file_disk

DIR = "/srv/ganeti/file-storage"
MIB = 1024 * 1024


class ImageServer(http.server.BaseHTTPRequestHandler):
    """Serves ``/img/<n>``: n MiB and a few bytes of a recognisable pattern."""

    @staticmethod
    def size(mib: int) -> int:
        return mib * MIB + 3

    @classmethod
    def body(cls, mib: int) -> bytes:
        return (b"IMG!" * (cls.size(mib) // 4 + 1))[:cls.size(mib)]

    @classmethod
    def start(cls, case) -> str:
        """Serve on a free loopback port until ``case`` ends; the base URL."""
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), cls)
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        case.addCleanup(thread.join)
        case.addCleanup(server.server_close)
        case.addCleanup(server.shutdown)
        return f"http://127.0.0.1:{server.server_address[1]}"

    def do_GET(self):
        if not self.path.startswith("/img/"):
            self.send_error(404, "no such image")
            return
        body = self.body(int(self.path.rsplit("/", 1)[1]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.subprocess
class ImageTest(NodeCalls, SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        with open(os.path.join(self.paths.conf_dir, "file-storage-paths"), "w") as f:
            f.write(f"{DIR}\n")
        self.node = MemoryNode(self.paths)
        self.root = self.paths.root
        self.disk = file_disk(DIR + "/i/a.file.disk0", size=4)
        self.ok("file_storage_dir_create", [DIR + "/i"])
        self.ok("blockdev_create", [self.disk, 4, "i", True, "", False])
        self.device = self.root + self.disk["logical_id"][1]
        with open(self.device, "r+b") as f:  # old data the image must overwrite
            f.write(b"\xff" * 4 * MIB)

    def local_image(self, data):
        path = os.path.join(self.mktemp() + ".img")
        with open(path, "wb") as f:
            f.write(data)
        return os.path.abspath(path)

    def serve(self):
        return ImageServer.start(self)

    def content(self):
        with open(self.device, "rb") as f:
            return f.read()

    def test_a_local_file_is_written_from_the_start_without_truncating(self):
        path = self.local_image(b"boot" * 1000)
        self.assertIsNone(self.ok("blockdev_image", [self.disk, path, 4]))
        data = self.content()
        self.assertEqual(len(data), 4 * MIB)
        self.assertEqual(data[:4000], b"boot" * 1000)
        self.assertEqual(data[4000:], b"\xff" * (4 * MIB - 4000))

    def test_a_url_is_downloaded_onto_the_device(self):
        base = self.serve()
        self.assertIsNone(self.ok("blockdev_image", [self.disk, base + "/img/1", 4]))
        data = self.content()
        self.assertEqual(data[:MIB + 3], ImageServer.body(1))
        self.assertEqual(data[MIB + 3:], b"\xff" * (3 * MIB - 3))

    def test_an_image_bigger_than_the_size_fails(self):
        base = self.serve()
        self.assertIn("Disk image larger than the disk",
                      self.fails("blockdev_image", [self.disk, base + "/img/4", 4]))
        path = self.local_image(b"x" * (5 * MIB))
        # dd writes at most size MiB of a local file, as Ganeti's dump does
        self.ok("blockdev_image", [self.disk, path, 4])
        self.assertEqual(self.content(), b"x" * 4 * MIB)

    def test_download_failures_are_reported(self):
        base = self.serve()
        msg = self.fails("blockdev_image", [self.disk, base + "/missing", 4])
        self.assertIn(f"Could not download '{base}/missing': HTTP 404", msg)
        # nothing listens on this port any more: the connection is refused
        server = http.server.HTTPServer(("127.0.0.1", 0), ImageServer)
        port = server.server_address[1]
        server.server_close()
        msg = self.fails("blockdev_image", [self.disk, f"http://127.0.0.1:{port}/img/1", 4])
        self.assertIn(f"Could not download 'http://127.0.0.1:{port}/img/1'", msg)
        self.assertIn("ftps URLs are not supported",
                      self.fails("blockdev_image", [self.disk, "ftps://127.0.0.1/x", 4]))
        self.assertEqual(self.content(), b"\xff" * 4 * MIB)

    def test_ganetis_checks_in_order(self):
        self.assertIn("Image '/no/such/image' not found",
                      self.fails("blockdev_image", [self.disk, "/no/such/image", 4]))
        path = self.local_image(b"data")
        self.assertIn("Image size is bigger than device size",
                      self.fails("blockdev_image", [self.disk, path, 5]))
        self.assertIn("Negative size", self.fails("blockdev_image", [self.disk, path, -1]))
        missing = dict(self.disk, logical_id=["loop", DIR + "/i/gone.disk0"])
        self.assertIn("Cannot image device disk/0: device not found",
                      self.fails("blockdev_image", [missing, path, 4]))
        diskless = dict(self.disk, dev_type="diskless", logical_id=None)
        self.assertIn("Cannot image device disk/0: device not found",
                      self.fails("blockdev_image", [diskless, path, 4]))
        self.assertEqual(self.content(), b"\xff" * 4 * MIB)

    def test_bad_arguments_are_refused_before_any_work(self):
        self.assertEqual(self.node.put("blockdev_image", [self.disk, "", 4]),
                         (400, [False, "bad request: blockdev_image: argument image must be "
                                       'a URL or a path, got ""']))
        status, body = self.node.put("blockdev_image", [self.disk, "/x", "4"])
        self.assertEqual((status, body[0]), (400, False))
        self.assertIn("argument size must be a size in MiB", body[1])

    def test_url_rule_is_ganetis(self):
        for url in ("http://h/x", "https://h/x", "ftp://h/x", "ftps://h/x"):
            self.assertTrue(fileutil.is_url(url), url)
        for path in ("/srv/x.img", "file:///x", "HTTP://h", "x http://h"):
            self.assertFalse(fileutil.is_url(path), path)
