"""The node's export calls: list, info, remove, chunked read and write, finalize
(atomic: a staging directory renamed at the end), abort, and the OS export and
import scripts run for one disk with the dump as their standard output and
input (real child processes, a tiny OS definition)."""

from __future__ import annotations

import base64
import os

import pytest
from twisted.internet import reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase, TestCase

from ganeti.core import exportinfo
from ganeti.core.rpcdefs.exports import is_name, is_staging
from ganeti.noded.backend import exports
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.bdev import lvm
from ganeti.noded.procs import ChildProcesses
from tests.noded.helpers import node_paths
from tests.noded.test_osdefs import instance, make_os, wait_for

CONFIG = exportinfo.build_config(
    name="inst1.example.com", source="node-uuid-1", os_name="testos+default", timestamp=1,
    beparams={"maxmem": 128, "minmem": 64, "vcpus": 1}, hvparams={}, osparams={},
    osparams_private={}, disk_template="file", hypervisor="fake", tags=[], nics=[],
    disks=[exportinfo.ExportDisk("disk/0", "disk-uuid-0", 1024, "root")])


class FileCallsTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.paths = node_paths(self)
        self.ctx = NodeContext(paths=self.paths, clock=Clock(), run=inline_runner)

    def ok(self, d):
        return self.successResultOf(d)

    def fails(self, f, *args) -> str:
        try:
            d = f(self.ctx, *args)
        except RPCFail as err:
            return str(err)
        return str(self.failureResultOf(d, RPCFail).value)

    def test_write_read_finalize_list_info_remove(self):
        self.assertEqual(self.ok(exports.export_list(self.ctx)), [])  # no directory yet
        staging = ".x-1234"
        for offset, chunk in ((0, b"abc"), (3, b"defg")):
            self.ok(exports.export_write(self.ctx, staging, "disk-uuid-0", offset,
                                         base64.b64encode(chunk).decode()))
        # a chunk that does not follow the end, and data that is not base64
        self.assertIn("does not follow", self.fails(exports.export_write, staging,
                                                    "disk-uuid-0", 2, "eHl6"))
        self.assertIn("base64", self.fails(exports.export_write, staging, "d", 0, "***"))
        self.assertEqual(self.ok(exports.export_list(self.ctx)), [])  # staging is hidden
        dump = f"{staging}/disk-uuid-0"
        self.assertEqual(base64.b64decode(self.ok(exports.export_read(self.ctx, dump, 2, 3))),
                         b"cde")
        self.assertEqual(self.ok(exports.export_read(self.ctx, dump, 7, 10)), "")
        self.assertIn("Invalid export configuration",
                      self.fails(exports.export_finalize, staging, "inst1", "junk"))
        self.ok(exports.export_finalize(self.ctx, staging, "inst1.example.com", CONFIG))
        self.assertEqual(self.ok(exports.export_list(self.ctx)), ["inst1.example.com"])
        directory = os.path.join(self.paths.export_dir, "inst1.example.com")
        self.assertEqual(sorted(os.listdir(directory)), ["config.ini", "disk-uuid-0"])
        self.assertEqual(os.stat(os.path.join(directory, "config.ini")).st_mode & 0o777, 0o600)
        info = self.ok(exports.export_info(self.ctx, "inst1.example.com"))
        self.assertEqual(info["instance"]["disk0_dump"], "disk-uuid-0")
        # Ganeti's full path of the export, or this node's own
        for path in ("/srv/ganeti/export/inst1.example.com", directory):
            self.assertEqual(self.ok(exports.export_info(self.ctx, path)), info)
        self.assertIn("export directory only",
                      self.fails(exports.export_info, "/etc/inst1.example.com"))
        # a second export of the name replaces the first
        self.ok(exports.export_write(self.ctx, ".x-5678", "disk-uuid-9", 0, ""))
        self.ok(exports.export_finalize(self.ctx, ".x-5678", "inst1.example.com", CONFIG))
        self.assertEqual(sorted(os.listdir(directory)), ["config.ini", "disk-uuid-9"])
        self.assertEqual(sorted(os.listdir(self.paths.export_dir)), ["inst1.example.com"])
        self.ok(exports.export_remove(self.ctx, "inst1.example.com"))
        self.assertEqual(self.ok(exports.export_list(self.ctx)), [])
        self.assertIn("does not exist", self.fails(exports.export_remove, "inst1.example.com"))

    def test_missing_or_corrupt_info(self):
        self.assertIn("Cannot read", self.fails(exports.export_info, "nothing"))
        directory = os.path.join(self.paths.export_dir, "bad")
        os.makedirs(directory)
        with open(os.path.join(directory, "config.ini"), "w") as f:
            f.write("[export]\nversion = 0\n")
        self.assertIn("required fields", self.fails(exports.export_info, "bad"))
        self.assertIn("Invalid export name", self.fails(exports.export_info, ".."))

    def test_abort_removes_staging(self):
        self.ok(exports.export_write(self.ctx, ".x-1", "f", 0, "eA=="))
        self.ok(exports.export_abort(self.ctx, ".x-1"))
        self.ok(exports.export_abort(self.ctx, ".x-1"))  # nothing left: no error
        self.assertEqual(os.listdir(self.paths.export_dir), [])

    def test_names(self):
        self.assertTrue(is_name("inst1.example.com"))
        for bad in ("", ".", "..", ".x-1", "a/b", "a\0", 5):
            self.assertFalse(is_name(bad), bad)
        self.assertTrue(is_staging(".x-0f3c-11"))
        self.assertFalse(is_staging("x-1"))


@pytest.mark.subprocess
class ScriptTest(TestCase):
    timeout = 60

    def setUp(self) -> None:
        self.paths = node_paths(self)
        top = self.paths.os_search_path[0]
        os.makedirs(top)
        make_os(top, "testos", scripts={
            "export": 'echo "exporting $EXPORT_INDEX" >&2\ncat "$EXPORT_DISK_PATH"\n',
            "import": '[ "$IMPORT_INDEX" = 0 ] || exit 3\ncat > "$IMPORT_DISK_PATH"\n'})
        self.clock = Clock()
        self.children = ChildProcesses(reactor, self.clock, grace=5.0)
        self.ctx = NodeContext(paths=self.paths, clock=self.clock, run=inline_runner,
                               children=self.children)
        # volumes have their device-mapper path here; without: tests/noded/test_lvloops.py
        self.patch(lvm, "dm_available", lambda: True)
        self.disk = os.path.join(self.paths.root, "srv", "disk0")
        os.makedirs(os.path.dirname(self.disk), exist_ok=True)
        self.addCleanup(self._reap)
        with open(self.disk, "wb") as f:
            f.write(b"the disk's data")

    def inst(self) -> dict:
        return instance(disk_file="/srv/disk0")

    async def test_export_dump_then_import(self):
        size = await exports.export_dump(self.ctx, self.inst(), 0, ".x-1", 0)
        self.assertEqual(size, len(b"the disk's data"))
        dump = os.path.join(self.paths.export_dir, ".x-1", "disk-uuid-0")
        with open(dump, "rb") as f:
            self.assertEqual(f.read(), b"the disk's data")
        logs = os.listdir(self.paths.os_log_dir)
        self.assertEqual(len(logs), 1)
        self.assertTrue(logs[0].startswith("export-testos+default-inst1.example.com-0-"))
        with open(os.path.join(self.paths.os_log_dir, logs[0])) as f:
            self.assertIn("exporting 0", f.read())  # standard error, not the dump
        with open(self.disk, "wb") as f:
            f.write(b"")
        await exports.instance_import_disk(self.ctx, self.inst(), 0, ".x-1/disk-uuid-0", 0)
        with open(self.disk, "rb") as f:
            self.assertEqual(f.read(), b"the disk's data")

    async def test_failures_name_the_disk(self):
        with self.assertRaises(RPCFail) as cm:
            await exports.instance_import_disk(self.ctx, self.inst(), 0, ".x-1/nothing", 0)
        self.assertIn("does not exist", str(cm.exception))
        with self.assertRaises(RPCFail) as cm:
            await exports.export_dump(self.ctx, self.inst(), 5, ".x-1", 0)
        self.assertIn("has no disk 5", str(cm.exception))
        dump = os.path.join(self.paths.export_dir, ".x-2", "disk-uuid-0")
        os.makedirs(os.path.dirname(dump))
        with open(dump, "wb") as f:
            f.write(b"x")
        inst = self.inst()
        inst["disks_info"][1]["uuid"] = "disk-uuid-1"
        with self.assertRaises(RPCFail) as cm:
            await exports.instance_import_disk(self.ctx, inst, 1, ".x-2/disk-uuid-0", 0)
        self.assertIn("OS import script failed for disk 1", str(cm.exception))

    async def _reap(self) -> None:
        for pid in list(self.children.running):
            self.children.kill(pid, 9)
        await wait_for(lambda: not self.children.running, "children to be reaped")
