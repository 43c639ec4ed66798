"""RAPI instance resources against a real master daemon on a fake clock, with in-process
node daemons running Ganeti's fake hypervisor (node1.test the master, node2.test added)."""

from __future__ import annotations

from ganeti.core import constants as c
from ganeti.noded.hypervisors import fake
from ganeti.rapi import errors as http
from ganeti.rapi.resources import instances
from ganeti.rapi.resources.instances import I_FIELDS
from tests.fakes.instances import add_instance
from tests.fakes.rapi import RapiTestCase

#: What htools read of each instance (src/Ganeti/HTools/Backend/Rapi.hs).
HTOOLS_INSTANCE_FIELDS = ("name", "disk_usage", "disk.sizes", "disk.spindles", "beparams",
                          "oper_ram", "pnode", "snodes", "status", "tags", "disk_template")


class InstancesCase(RapiTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.add_node()

        def change(cfg):
            add_instance(cfg, "web1.test", "node1.test", c.DT_FILE, (1024, 512),
                         beparams={"maxmem": 512, "vcpus": 2}, tags=["www"])
            add_instance(cfg, "web2.test", "node2.test", admin_state=c.ADMINST_DOWN, nics=2)
            add_instance(cfg, "db10.test", "node1.test", c.DT_PLAIN, (2048,),
                         admin_state=c.ADMINST_UP)
        self.master.run_until(self.master.daemon.config_writer.update(change))
        fake.mark_running(self.master.paths.run_dir, "web1.test", 512, 2)
        self.luxi.calls.clear()


class ReadTest(InstancesCase):
    def test_list(self):
        self.assertEqual(self.get("/2/instances"), [
            {"id": "db10.test", "uri": "/2/instances/db10.test"},
            {"id": "web1.test", "uri": "/2/instances/web1.test"},
            {"id": "web2.test", "uri": "/2/instances/web2.test"}])
        self.assertEqual(self.luxi.calls, [("QueryInstances", ([], ["name"], False))])

    def test_bulk(self):
        found = {i["name"]: i for i in self.get("/2/instances", "bulk=1")}
        self.assertEqual(sorted(found), ["db10.test", "web1.test", "web2.test"])
        for inst in found.values():
            self.assertEqual(list(inst), list(I_FIELDS))
            for name in HTOOLS_INSTANCE_FIELDS:
                self.assertIn(name, inst)
            self.assertEqual(inst["beparams"]["memory"], inst["beparams"]["maxmem"])
        web1, web2, db10 = found["web1.test"], found["web2.test"], found["db10.test"]
        self.assertEqual((web1["status"], web1["oper_state"], web1["oper_ram"],
                          web1["oper_vcpus"]), ("running", True, 512, 2))
        self.assertEqual((web1["disk_template"], web1["disk.sizes"], web1["disk_usage"]),
                         ("file", [1024, 512], 1536))
        self.assertEqual(web1["beparams"]["maxmem"], 512)
        self.assertEqual(web1["tags"], ["www"])
        self.assertEqual((web2["status"], web2["oper_state"], web2["oper_ram"]),
                         ("ADMIN_down", False, None))
        self.assertEqual(web2["pnode"], "node2.test")
        self.assertEqual(self.luxi.calls[-1][0], "QueryInstancesBulk")
        # the memory key is the bulk answer's own: the master's shared rows keep none
        plain = self.luxi.master.run_until(self.luxi.call("QueryInstances", [], ["beparams"],
                                                          False))
        self.assertNotIn("memory", plain[0][0])
        self.assertEqual(self.get("/2/instances", "bulk=1"), list(found.values()))
        self.assertEqual(len(web2["nic.macs"]), 2)
        self.assertEqual(web2["nic.modes"], ["bridged", "bridged"])
        self.assertEqual(db10["status"], "ERROR_down")
        self.assertEqual(db10["snodes"], [])

    def test_one(self):
        inst = self.get("/2/instances/web1.test", "lock=1")
        self.assertEqual(list(inst), list(I_FIELDS))
        self.assertEqual(inst["status"], "running")
        self.assertEqual(self.luxi.calls, [("QueryInstances", (["web1.test"], list(I_FIELDS),
                                                               True))])

    def test_unknown_is_404(self):
        err = self.refused(http.HttpNotFound, "GET", "/2/instances/nope.test")
        self.assertIn("nope.test", err.message)
        self.refused(http.HttpNotFound, "GET", "/2/instances/nope.test/tags")
        self.refused(http.HttpNotFound, "GET", "/2/instances/nope.test/console")
        self.refused(http.HttpBadRequest, "GET", "/2/instances", "bulk=yes")

    def test_tags(self):
        self.assertEqual(self.get("/2/instances/web1.test/tags"), ["www"])
        self.succeeds(self.call("PUT", "/2/instances/web1.test/tags", "tag=db&tag=prod"))
        self.assertEqual(self.get("/2/instances/web1.test/tags"), ["db", "prod", "www"])
        self.succeeds(self.call("DELETE", "/2/instances/web1.test/tags", "tag=www"))
        self.assertEqual(self.get("/2/instances/web1.test/tags"), ["db", "prod"])

    def test_console(self):
        self.assertEqual(self.get("/2/instances/web1.test/console"), {
            "instance": "web1.test", "kind": "msg",
            "message": "Console not available for fake hypervisor"})
        err = self.refused(http.HttpServiceUnavailable, "GET", "/2/instances/web2.test/console")
        self.assertEqual(err.message, "Instance console unavailable")

    def test_query_resource(self):
        answer = self.get("/2/query/instance", "fields=name,status,oper_ram")
        self.assertEqual([f["name"] for f in answer["fields"]], ["name", "status", "oper_ram"])
        self.assertEqual(answer["data"], [
            [[0, "db10.test"], [0, "ERROR_down"], [3, None]],
            [[0, "web1.test"], [0, "running"], [0, 512]],
            [[0, "web2.test"], [0, "ADMIN_down"], [3, None]]])
        answer = self.call("PUT", "/2/query/instance", "",
                           {"fields": ["name"], "qfilter": ["=", "status", "running"]})
        self.assertEqual(answer["data"], [[[0, "web1.test"]]])
        fields = self.get("/2/query/instance/fields", "fields=name,sda_size")["fields"]
        self.assertEqual([f["title"] for f in fields], ["Instance", "Disk/0"])


class WriteTest(InstancesCase):
    """Each write builds Ganeti's opcode; the job is submitted (its outcome belongs to the
    logical units, tested with them)."""

    def op(self, method, path, query="", body=None):
        job_id = self.call(method, path, query, body)
        self.assertIsInstance(job_id, int)
        return self.master.daemon.queue.jobs[job_id].ops

    @staticmethod
    def only_op(op):
        return op.input if hasattr(op, "input") else op

    def opcode(self, method, path, query="", body=None):
        (op,) = self.op(method, path, query, body)
        return self.only_op(op)

    def test_create(self):
        body = {"__version__": 1, "mode": "create", "name": "new1.test",
                "disk_template": "diskless", "disks": [], "nics": [{}], "os": "busybox",
                "pnode": "node1.test", "hvparams": {"usb_devices": "a b"}}
        op = self.opcode("POST", "/2/instances", "dry-run=1", body)
        self.assertEqual((op["OP_ID"], op["instance_name"], op["os_type"], op["dry_run"]),
                         ("OP_INSTANCE_CREATE", "new1.test", "busybox", True))
        self.assertEqual(op["hvparams"], {"usb_devices": "a,b"})
        self.assertIn("gnt:library:rlib2:instances", [r[0] for r in op["reason"]])

    def test_reservations(self):
        """Seed 004: a reservation needs no name; /create commits one by name."""
        op = self.opcode("POST", "/2/instances", "", {
            "__version__": 1, "forthcoming": True, "disk_template": "diskless",
            "beparams": {"maxmem": 256}, "iallocator": "no-such-allocator"})
        self.assertEqual((op["OP_ID"], op["forthcoming"], op["instance_name"], op["disks"]),
                         ("OP_INSTANCE_CREATE", True, None, None))
        op = self.opcode("POST", "/2/instances/web2.test/create", "dry-run=1",  # not reserved:
                         {"os": "busybox", "start": True})
        self.assertEqual((op["OP_ID"], op["commit"], op["instance_name"], op["os_type"],
                          op["start"], op["dry_run"]),
                         ("OP_INSTANCE_CREATE", True, "web2.test", "busybox", True, True))
        op = self.opcode("POST", "/2/instances/web2.test/create")  # no body at all
        self.assertEqual((op["commit"], op["instance_name"]), (True, "web2.test"))
        # a reservation without a name is reached by its UUID: the master resolves it
        # (the job's opcode then records the name it found, as Ganeti's units do)
        uuid = self.master.config.instance_by_name("web2.test").uuid
        op = self.opcode("PUT", f"/2/instances/{uuid}/modify", "", {"beparams": {"vcpus": 2}})
        self.assertEqual((op["OP_ID"], op["instance_name"], op["instance_uuid"]),
                         ("OP_INSTANCE_SET_PARAMS", "web2.test", uuid))
        self.assertEqual(self.get(f"/2/instances/{uuid}")["name"], "web2.test")  # as luxid
        op = self.opcode("PUT", f"/2/instances/{uuid}/rename", "", {"new_name": "w.test"})
        self.assertEqual((op["instance_name"], op["instance_uuid"], op["new_name"]),
                         ("web2.test", uuid, "w.test"))

    def test_create_needs_version_1(self):
        body = {"mode": "create", "name": "new1.test", "disk_template": "diskless",
                "disks": [], "nics": []}
        err = self.refused(http.HttpBadRequest, "POST", "/2/instances", "", body)
        self.assertEqual(err.message, "Instance creation request version 0 is no longer "
                                      "supported")
        err = self.refused(http.HttpBadRequest, "POST", "/2/instances", "",
                           dict(body, __version__=2))
        self.assertEqual(err.message, "Unsupported request data version 2")
        self.refused(http.HttpBadRequest, "POST", "/2/instances", "", [1])
        self.refused(http.HttpBadRequest, "POST", "/2/instances", "",
                     dict(body, __version__=1, disk_template="nonsense"))

    def test_remove(self):
        op = self.opcode("DELETE", "/2/instances/web2.test", "dry-run=1")
        self.assertEqual((op["OP_ID"], op["instance_name"], op["ignore_failures"],
                          op["dry_run"]), ("OP_INSTANCE_REMOVE", "web2.test", False, True))

    def test_start_stop_reboot(self):
        op = self.opcode("PUT", "/2/instances/web2.test/startup", "force=1&no_remember=1")
        self.assertEqual((op["OP_ID"], op["force"], op["no_remember"]),
                         ("OP_INSTANCE_STARTUP", True, True))
        self.refused(http.HttpBadRequest, "PUT", "/2/instances/web2.test/startup", "",
                     {"force": True})
        op = self.opcode("PUT", "/2/instances/web1.test/shutdown", "", {"timeout": 30})
        self.assertEqual((op["OP_ID"], op["timeout"], op["no_remember"]),
                         ("OP_INSTANCE_SHUTDOWN", 30, False))
        op = self.opcode("POST", "/2/instances/web1.test/reboot", "")
        self.assertEqual((op["OP_ID"], op["reboot_type"], op["ignore_secondaries"]),
                         ("OP_INSTANCE_REBOOT", "hard", False))
        op = self.opcode("POST", "/2/instances/web1.test/reboot",
                         "type=soft&ignore_secondaries=1", {"shutdown_timeout": 5})
        self.assertEqual((op["reboot_type"], op["ignore_secondaries"], op["shutdown_timeout"]),
                         ("soft", True, 5))
        self.refused(http.HttpBadRequest, "POST", "/2/instances/web1.test/reboot", "type=cold")
        self.refused(http.HttpBadRequest, "POST", "/2/instances/web1.test/reboot", "",
                     {"instance_name": "web2.test"})

    def test_reinstall(self):
        ops = self.op("POST", "/2/instances/web1.test/reinstall", "",
                      {"os": "busybox", "osparams": {"a": "b"}})
        self.assertEqual([o["OP_ID"] for o in map(self.only_op, ops)],
                         ["OP_INSTANCE_SHUTDOWN", "OP_INSTANCE_REINSTALL",
                          "OP_INSTANCE_STARTUP"])
        reinstall = self.only_op(ops[1])
        self.assertEqual((reinstall["os_type"], reinstall["osparams"]), ("busybox", {"a": "b"}))
        self.assertFalse(self.only_op(ops[2])["force"])
        ops = self.op("POST", "/2/instances/web1.test/reinstall", "", {"start": False})
        self.assertEqual(len(ops), 2)
        ops = self.op("POST", "/2/instances/web1.test/reinstall", "os=other&nostartup=1")
        self.assertEqual(len(ops), 2)
        self.assertEqual(self.only_op(ops[1])["os_type"], "other")
        err = self.refused(http.HttpBadRequest, "POST", "/2/instances/web1.test/reinstall",
                           "os=x", {"os": "y"})
        self.assertEqual(err.message, "Can't combine query and body parameters")
        self.refused(http.HttpBadRequest, "POST", "/2/instances/web1.test/reinstall", "",
                     {"start": "yes"})
        self.refused(http.HttpBadRequest, "POST", "/2/instances/web1.test/reinstall", "",
                     {"bogus": 1})

    def test_disks(self):
        op = self.opcode("PUT", "/2/instances/web1.test/activate-disks", "ignore_size=1")
        self.assertEqual((op["OP_ID"], op["ignore_size"]), ("OP_INSTANCE_ACTIVATE_DISKS", True))
        op = self.opcode("PUT", "/2/instances/web1.test/deactivate-disks", "force=1")
        self.assertEqual((op["OP_ID"], op["force"]), ("OP_INSTANCE_DEACTIVATE_DISKS", True))
        op = self.opcode("POST", "/2/instances/web1.test/recreate-disks", "", {"disks": [0]})
        self.assertEqual(op["OP_ID"], "OP_INSTANCE_RECREATE_DISKS")
        op = self.opcode("POST", "/2/instances/web1.test/disk/1/grow", "", {"amount": 1024})
        self.assertEqual((op["OP_ID"], op["disk"], op["amount"]),
                         ("OP_INSTANCE_GROW_DISK", 1, 1024))
        self.refused(http.HttpBadRequest, "POST", "/2/instances/web1.test/disk/1/grow", "",
                     {"amount": 1024, "disk": 0})
        self.refused(http.HttpBadRequest, "POST", "/2/instances/web1.test/disk/0/grow", "",
                     {"amount": "lots"})

    def test_rename_modify_info(self):
        op = self.opcode("PUT", "/2/instances/web1.test/rename", "", {"new_name": "w.test"})
        self.assertEqual((op["OP_ID"], op["new_name"]), ("OP_INSTANCE_RENAME", "w.test"))
        op = self.opcode("PUT", "/2/instances/web1.test/modify", "",
                         {"custom_beparams": {"vcpus": 4},
                          "hvparams": {"usb_devices": "x y"}})
        self.assertEqual((op["OP_ID"], op["beparams"], op["hvparams"]),
                         ("OP_INSTANCE_SET_PARAMS", {"vcpus": 4}, {"usb_devices": "x,y"}))
        op = self.opcode("PUT", "/2/instances/web1.test/modify", "",
                         {"disk_template": "sharedfile", "file_storage_dir": "sub"})
        self.assertEqual((op["disk_template"], op["file_storage_dir"]), ("sharedfile", "sub"))
        err = self.refused(http.HttpBadRequest, "PUT", "/2/instances/web1.test/modify", "",
                           {"custom_beparams": {}, "beparams": {}})
        self.assertIn("renamed", err.message)
        op = self.opcode("GET", "/2/instances/web1.test/info", "static=1")
        self.assertEqual((op["OP_ID"], op["instances"], op["static"]),
                         ("OP_INSTANCE_QUERY_DATA", ["web1.test"], True))


class RoutesTest(RapiTestCase):
    def test_every_route_declared_with_its_access(self):
        table = {route.pattern: route for route in instances.ROUTES}
        self.assertEqual(table["/2/instances/{instance_name}/console"].methods["GET"].access,
                         frozenset({"read", "write"}))
        for route in instances.ROUTES:
            for name, method in route.methods.items():
                if name != "GET":
                    self.assertEqual(method.access, frozenset({"write"}), route.pattern)
