"""Instance export and import through the real queue, the real processor and
in-process node daemons: OP_BACKUP_EXPORT writes Ganeti's config.ini and the
dumps on the target node (never a secret, never a partial export), OP_INSTANCE_CREATE
in import mode recreates an equal instance from it, a missing or corrupt export
is refused before anything is made, and the exports are listed and removed.

The OS scripts are played by a stand-in for the node's child processes: the
``export`` script "dumps" its disk file (``DUMP:`` + content), the ``import``
script writes a dump back onto its disk; both see the OS API environment the
node daemon gives them.
"""

from __future__ import annotations

import configparser
import os
from typing import Any

from twisted.internet import defer

from ganeti.core import constants as c
from ganeti.core import exportinfo
from ganeti.master.locking.manager import LEVEL_INSTANCE
from ganeti.noded.bdev.paths import device_path
from ganeti.noded.procs import ProcessOutcome
from tests.fakes.allocators import InlineAllocators, always
from tests.master.test_lu_instance import InstanceCase, create_op
from tests.noded.test_osdefs import make_os

SECRET = "tok-SECRET-12345"
PRIVATE = "hunter2-private"


class DiskScripts:
    """Stands in for a node's ChildProcesses: ``sh -c 'exec "$0" > "$1"' .../export
    FILE`` writes ``DUMP:`` and the disk's content to FILE; ``... < "$1"' .../import
    FILE`` writes FILE's content (without ``DUMP:``) onto the disk; anything else
    exits 0.  ``fail`` names a script that exits 1 instead."""

    def __init__(self) -> None:
        self.fail: str | None = None
        self.runs: list[tuple[str, dict[str, str]]] = []

    def run(self, argv: list[str], env: Any = None, timeout: Any = None, cwd: str = "/",
            stdin: Any = None, on_output: Any = None,
            merge_stderr: bool = False) -> defer.Deferred[ProcessOutcome]:
        script = os.path.basename(argv[3]) if len(argv) > 3 else os.path.basename(argv[0])
        self.runs.append((script, dict(env or {})))
        if script == self.fail:
            return defer.succeed(ProcessOutcome(tuple(argv), 1, None, b"", b""))
        if script == "export":
            with open(env["EXPORT_DISK_PATH"], "rb") as f:
                data = f.read().rstrip(b"\0")
            with open(argv[4], "wb") as f:
                f.write(b"DUMP:" + data)
        elif script == "import":
            with open(argv[4], "rb") as f:
                data = f.read()
            assert data.startswith(b"DUMP:"), data
            with open(env["IMPORT_DISK_PATH"], "r+b") as f:
                f.write(data[5:])
        return defer.succeed(ProcessOutcome(tuple(argv), 0, None, b"", b""))


class BackupCase(InstanceCase):
    def setUp(self) -> None:
        super().setUp()
        self.net.add("node2.test", "127.0.1.2")
        self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": "node2.test",
                     "primary_ip": "127.0.1.2"})
        for node in ("node1.test", "node2.test"):
            top = self.net.paths(node).os_search_path[0]
            os.makedirs(top, exist_ok=True)
            make_os(top, "dumpos", parameters="token a token\npw a password\n")
        self.scripts = DiskScripts()
        self.net.children = self.scripts

    def make_instance(self, name: str = "inst1.test", content: bytes = b"hello disk",
                      **params: Any) -> None:
        op = create_op(name, disk_template=c.DT_FILE, disks=[{"size": 4, "name": "root"}],
                       os_type="dumpos+default", tags=["web", "prod"], ignore_ipolicy=True,
                       osparams_private={"pw": PRIVATE}, osparams_secret={"token": SECRET})
        op.update(params)
        self.run_ok(op)
        with open(self.disk_file(name), "r+b") as f:
            f.write(content)

    def disk_file(self, name: str, idx: int = 0) -> str:
        inst = self.instance(name)
        disk = self.config.disks[inst.disks[idx]]
        node = self.config.nodes[inst.primary_node].name
        return device_path(disk.to_dict(), self.net.paths(node))

    def export_dir(self, node: str) -> str:
        return self.net.paths(node).export_dir

    def entries(self, node: str) -> list[str]:
        try:
            return sorted(os.listdir(self.export_dir(node)))
        except FileNotFoundError:
            return []

    def export(self, **params: Any) -> Any:
        op = {"OP_ID": "OP_BACKUP_EXPORT", "instance_name": "inst1.test",
              "target_node": "node2.test", "mode": "local"}
        op.update(params)
        return op


class ExportTest(BackupCase):
    def test_export_writes_ganeti_config_and_dumps_without_secrets(self):
        self.make_instance()
        result = self.run_ok(self.export())
        self.assertEqual(result, [True, [True]])
        self.assertEqual(self.entries("node2.test"), ["inst1.test"])
        self.assertEqual(self.entries("node1.test"), [])  # the staging dir is gone
        directory = os.path.join(self.export_dir("node2.test"), "inst1.test")
        inst = self.instance()
        disk = self.config.disks[inst.disks[0]]
        self.assertEqual(sorted(os.listdir(directory)), sorted(["config.ini", disk.uuid]))
        with open(os.path.join(directory, disk.uuid), "rb") as f:
            self.assertEqual(f.read(), b"DUMP:hello disk")
        with open(os.path.join(directory, "config.ini"), encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn(SECRET, text)
        cp = configparser.ConfigParser(interpolation=None)
        cp.read_string(text)
        self.assertEqual(cp.sections(), ["export", "instance", "hypervisor", "backend", "os",
                                         "os_private"])
        self.assertEqual(dict(cp.items("export")) | {"timestamp": "-"}, {
            "version": "0", "timestamp": "-", "source": inst.primary_node,
            "os": "dumpos+default", "compression": "none"})
        ins = dict(cp.items("instance"))
        self.assertEqual(ins["name"], "inst1.test")
        self.assertEqual((ins["maxmem"], ins["minmem"], ins["memory"]), ("128",) * 3)
        self.assertEqual(ins["disk_template"], "file")
        self.assertEqual(ins["hypervisor"], c.HT_FAKE)
        self.assertEqual(ins["tags"].split(), sorted(["web", "prod"]))
        self.assertEqual((ins["disk_count"], ins["disk0_ivname"], ins["disk0_dump"],
                          ins["disk0_size"], ins["disk0_name"]),
                         ("1", "disk/0", disk.uuid, "4", "root"))
        self.assertEqual((ins["nic_count"], ins["nic0_mac"]), ("1", inst.nics[0].mac))
        self.assertIn("nic0_mode", ins)
        self.assertEqual(cp.get("os_private", "pw"), PRIVATE)
        self.assertEqual(cp.get("backend", "maxmem"), "128")
        # the export script saw the OS API environment of its disk
        script, env = next(r for r in self.scripts.runs if r[0] == "export")
        self.assertEqual((env["EXPORT_INDEX"], env["EXPORT_DEVICE"]),
                         ("0", env["EXPORT_DISK_PATH"]))
        self.assertNotIn(SECRET, "".join(env.values()))

    def test_failed_export_leaves_no_partial_export(self):
        self.make_instance()
        self.scripts.fail = "export"
        cls, msg, _ = self.run_error(self.export())
        self.assertEqual(cls, "OpExecError")
        self.assertIn("Could not export disk/0", msg)
        self.assertEqual(self.entries("node1.test"), [])
        self.assertEqual(self.entries("node2.test"), [])
        self.assertIsNotNone(self.instance())

    def test_export_replaces_older_and_removes_exports_elsewhere(self):
        self.make_instance()
        self.run_ok(self.export(target_node="node1.test"))
        self.assertEqual(self.entries("node1.test"), ["inst1.test"])
        self.run_ok(self.export())
        self.assertEqual(self.entries("node1.test"), [])
        self.assertEqual(self.entries("node2.test"), ["inst1.test"])

    def test_running_instance_needs_long_sleep_and_is_restarted(self):
        self.make_instance()
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        cls, msg, _ = self.run_error(self.export())
        self.assertIn("--long-sleep", msg)
        cls, msg, _ = self.run_error(self.export(shutdown=False))
        self.assertIn("live export", msg)
        cls, msg, _ = self.run_error(self.export(shutdown=False, remove_instance=True))
        self.assertIn("without shutting it down", msg)
        self.assertEqual(self.entries("node2.test"), [])
        self.run_ok(self.export(long_sleep=True))
        self.assertTrue(self.running("inst1.test"))
        self.assertEqual(self.entries("node2.test"), ["inst1.test"])

    def test_refused_arguments(self):
        self.make_instance()
        for params, text in (({"mode": "remote"}, "not supported"),
                             ({"compress": "gzip"}, "Compression tool not allowed"),
                             ({"shutdown": False, "long_sleep": True}, "long sleep"),
                             ({"target_node": None}, "Target node must be specified")):
            cls, msg, code = self.run_error(self.export(**params))
            self.assertEqual(cls, "OpPrereqError", msg)
            self.assertIn(text, msg)

    def test_export_and_remove_instance(self):
        self.make_instance()
        self.run_ok(self.export(remove_instance=True))
        self.assertIsNone(self.instance())
        self.assertNotIn("inst1.test", self.master.daemon.locks.names(LEVEL_INSTANCE))
        self.assertEqual(self.entries("node2.test"), ["inst1.test"])


class ImportTest(BackupCase):
    def import_op(self, name: str = "inst2.test", **params: Any) -> dict[str, Any]:
        op = {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "import",
              "src_node": "node2.test", "src_path": "inst1.test", "pnode": "node1.test",
              "disk_template": c.DT_FILE, "disks": [], "nics": [], "start": False,
              "name_check": False, "ip_check": False, "ignore_ipolicy": True}
        op.update(params)
        return op

    def test_import_recreates_an_equal_instance(self):
        self.make_instance(content=b"root fs of inst1")
        self.run_ok(self.export())
        result = self.run_ok(self.import_op())
        self.assertEqual(result, ["node1.test"])
        old, new = self.instance("inst1.test"), self.instance("inst2.test")
        self.assertEqual(new.os, old.os)
        self.assertEqual(sorted(new.tags), sorted(old.tags))
        self.assertEqual(new.hypervisor, old.hypervisor)
        self.assertEqual((new.beparams["maxmem"], new.beparams["minmem"]), (128, 128))
        self.assertEqual(new.osparams_private, {"pw": PRIVATE})
        self.assertEqual([self.config.disks[d].size for d in new.disks], [4])
        self.assertEqual([self.config.disks[d].name for d in new.disks], ["root"])
        self.assertEqual(len(new.nics), 1)
        self.assertNotEqual(new.nics[0].mac, old.nics[0].mac)  # a new name, a new MAC
        with open(self.disk_file("inst2.test"), "rb") as f:
            self.assertEqual(f.read(16), b"root fs of inst1")
        self.assertEqual(self.entries("node1.test"), [])  # the copied dump is gone
        script, env = next(r for r in self.scripts.runs if r[0] == "import")
        self.assertEqual((env["IMPORT_INDEX"], env["INSTANCE_NAME"]), ("0", "inst2.test"))

    def test_import_with_an_allocator(self):
        allocators = InlineAllocators({"two": always(["node2.test"])})
        self.master.daemon.allocators = allocators
        self.make_instance(content=b"root fs of inst1")
        self.run_ok(self.export())
        status, results, log = self.master.finish(self.master.submit(
            self.import_op(pnode=None, iallocator="two")))
        self.assertEqual((status, results[-1]), ("success", ["node2.test"]), results)
        self.assertIn(" - INFO: Selected nodes for instance inst2.test via iallocator two: "
                      "node2.test", log)
        request = allocators.inputs("two")[0]["request"]
        self.assertEqual([d["size"] for d in request["disks"]], [4])  # from the export
        with open(self.disk_file("inst2.test"), "rb") as f:
            self.assertEqual(f.read(16), b"root fs of inst1")

    def test_import_finds_the_source_node(self):
        self.make_instance()
        self.run_ok(self.export())
        self.run_ok(self.import_op(src_node=None, nics=[{}]))
        self.assertIsNotNone(self.instance("inst2.test"))

    def test_import_of_missing_export_is_refused_and_makes_nothing(self):
        for params in ({}, {"src_node": None}):
            cls, msg, code = self.run_error(self.import_op(src_path="nothing", **params))
            self.assertEqual((cls, code), ("OpPrereqError", "wrong_input"), msg)
        self.assertIsNone(self.instance("inst2.test"))
        self.assertFalse(self.config.disks)
        self.assertNotIn("inst2.test", self.master.daemon.locks.names(LEVEL_INSTANCE))

    def test_import_of_corrupt_export_is_refused_and_makes_nothing(self):
        directory = os.path.join(self.export_dir("node2.test"), "broken")
        os.makedirs(directory)
        for text in ("not an ini file", "[export]\nversion = 0\n",
                     "[export]\nversion = 7\n[instance]\nname = x\n"):
            with open(os.path.join(directory, "config.ini"), "w") as f:
                f.write(text)
            cls, msg, code = self.run_error(self.import_op(src_path="broken"))
            self.assertEqual(cls, "OpPrereqError", msg)
        self.assertIsNone(self.instance("inst2.test"))
        self.assertFalse(self.config.disks)

    def test_failed_import_script_undoes_the_create(self):
        self.make_instance()
        self.run_ok(self.export())
        self.scripts.fail = "import"
        cls, msg, _ = self.run_error(self.import_op())
        self.assertEqual(cls, "OpExecError")
        self.assertIn("Could not import disk/0", msg)
        self.assertIsNone(self.instance("inst2.test"))
        self.assertEqual(len(self.config.disks), 1)  # inst1's only
        self.assertNotIn("inst2.test", self.master.daemon.locks.names(LEVEL_INSTANCE))
        self.assertEqual(self.entries("node1.test"), [])

    def test_absolute_path_needs_a_source_node(self):
        cls, msg, code = self.run_error(self.import_op(src_node=None,
                                                       src_path="/srv/ganeti/export/x"))
        self.assertIn("requires a source node", msg)


class ListRemoveTest(BackupCase):
    def test_query_and_remove(self):
        self.make_instance()
        self.run_ok(self.export())
        self.assertEqual(self.master.client().call("QueryExports", [], False),
                         {"node1.test": [], "node2.test": ["inst1.test"]})
        self.assertEqual(self.run_ok({"OP_ID": "OP_BACKUP_QUERY"}),
                         {"node1.test": [], "node2.test": ["inst1.test"]})
        answer = self.master.client().call("Query", "export", ["node", "export"], None)
        self.assertEqual(answer["data"], [[[0, "node2.test"], [0, "inst1.test"]]])
        self.net.down.add("node1.test")
        answer = self.master.client().call("Query", "export", ["node", "export"], None)
        self.assertEqual(answer["data"][0], [[0, "node1.test"], [c.RS_NODATA, None]])
        self.net.down.clear()
        self.run_ok({"OP_ID": "OP_BACKUP_REMOVE", "instance_name": "inst1.test"})
        self.assertEqual(self.entries("node2.test"), [])
        # a removed instance's export is removed by its name
        self.run_ok(self.export(remove_instance=True))
        self.run_ok({"OP_ID": "OP_BACKUP_REMOVE", "instance_name": "inst1.test"})
        self.assertEqual(self.entries("node2.test"), [])

    def test_prepare(self):
        self.make_instance()
        self.assertIsNone(self.run_ok({"OP_ID": "OP_BACKUP_PREPARE",
                                       "instance_name": "inst1.test", "mode": "local"}))
        cls, msg, _ = self.run_error({"OP_ID": "OP_BACKUP_PREPARE",
                                      "instance_name": "inst1.test", "mode": "remote"})
        self.assertEqual(cls, "OpPrereqError")


class ConfigRoundTripTest(BackupCase):
    def test_parse_what_build_wrote(self):
        text = exportinfo.build_config(
            name="a", source="u", os_name="dumpos", timestamp=5,
            beparams={"maxmem": 1, "minmem": 1, "vcpus": 1}, hvparams={"x": 1},
            osparams={}, osparams_private={}, disk_template="file", hypervisor="fake",
            tags=[], nics=[], disks=[])
        info = exportinfo.ExportInfo(exportinfo.parse_config(text))
        self.assertEqual((info.name, info.os, info.disks(), info.nics()),
                         ("a", "dumpos", [], []))
