"""Instance units through the real queue, the real processor and in-process node
daemons (the fake hypervisor): create, start, stop, reboot, rename, modify, remove,
and what a refused or failed step leaves behind (nothing)."""

from __future__ import annotations

import inspect
import os
import socket

from twisted.internet import defer
from twisted.trial.unittest import TestCase

from ganeti.core import constants as c
from ganeti.master.locking.manager import LEVEL_INSTANCE
from ganeti.master.lu.hostnames import SystemResolver
from tests.fakes.configs import small_config
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet
from tests.fakes.resolver import HostsResolver


def create_op(name="inst1.test", **params):
    op = {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
          "disk_template": "diskless", "disks": [], "nics": [{}], "pnode": "node1.test",
          "os_type": "busybox", "no_install": True, "start": False, "name_check": False,
          "ip_check": False, "beparams": {"maxmem": 128, "minmem": 128}}
    op.update(params)
    return op


class InstanceCase(TestCase):
    def setUp(self):
        tmp = self.mktemp()
        os.makedirs(tmp)
        cfg = small_config(enabled_hypervisors=[c.HT_FAKE],
                           enabled_disk_templates=[c.DT_DISKLESS, c.DT_FILE, c.DT_PLAIN])
        self.net = FakeNodeNet(os.path.join(tmp, "nodes"), None)
        self.master = InProcessMaster(tmp, cfg=cfg, rpc=self.net)
        self.addCleanup(self.master.stop)
        self.net.clock = self.master.reactor
        self.net.config = lambda: self.master.config
        self.net.add("node1.test", "127.0.1.1", paths=self.master.paths)

    @property
    def config(self):
        return self.master.config

    def join(self, *numbers):
        """Node daemons node<k>.test at 127.0.1.<k>, added to the cluster."""
        for k in numbers:
            self.net.add(f"node{k}.test", f"127.0.1.{k}")
            self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                         "primary_ip": f"127.0.1.{k}"})

    def run_ok(self, *ops):
        status, results, log = self.master.finish(self.master.submit(*ops))
        self.assertEqual(status, "success", results)
        return results[-1]

    def run_error(self, *ops):
        status, results, _log = self.master.finish(self.master.submit(*ops))
        self.assertEqual(status, "error", results)
        cls, args = results[-1]
        return cls, args[0], (args[1] if len(args) > 1 else None)

    def running(self, name, node="node1.test"):
        """The fake hypervisor's state file of an instance on a node."""
        run_dir = self.net.paths(node).run_dir
        return os.path.exists(os.path.join(run_dir, "fake-hypervisor", name))

    def instance(self, name="inst1.test"):
        return self.config.instance_by_name(name)


class CreateTest(InstanceCase):
    def test_create_diskless_without_install_does_not_start(self):
        result = self.run_ok(create_op(start=True, no_install=True))
        self.assertEqual(result, ["node1.test"])
        inst = self.instance()
        self.assertEqual(inst.admin_state, c.ADMINST_DOWN)  # no_install disables start
        self.assertFalse(self.running("inst1.test"))
        self.assertEqual(len(inst.nics), 1)
        self.assertTrue(inst.nics[0].mac.startswith(self.config.cluster.mac_prefix))
        self.assertEqual(inst.hypervisor, c.HT_FAKE)
        self.assertIn("inst1.test", self.master.daemon.locks.names(LEVEL_INSTANCE))

    def test_start_stop_reboot_remove(self):
        self.run_ok(create_op())
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        self.assertTrue(self.running("inst1.test"))
        self.assertEqual(self.instance().admin_state, c.ADMINST_UP)
        self.run_ok({"OP_ID": "OP_INSTANCE_REBOOT", "instance_name": "inst1.test",
                     "reboot_type": "hard"})
        self.assertTrue(self.running("inst1.test"))
        self.run_ok({"OP_ID": "OP_INSTANCE_REBOOT", "instance_name": "inst1.test",
                     "reboot_type": "full"})
        self.assertTrue(self.running("inst1.test"))
        self.run_ok({"OP_ID": "OP_INSTANCE_SHUTDOWN", "instance_name": "inst1.test"})
        self.assertFalse(self.running("inst1.test"))
        self.assertEqual(self.instance().admin_state, c.ADMINST_DOWN)
        self.run_ok({"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": "inst1.test"})
        self.assertIsNone(self.instance())
        self.assertNotIn("inst1.test", self.master.daemon.locks.names(LEVEL_INSTANCE))

    def test_remove_stops_a_running_instance(self):
        self.run_ok(create_op(), {"OP_ID": "OP_INSTANCE_STARTUP",
                                  "instance_name": "inst1.test"})
        self.assertTrue(self.running("inst1.test"))
        self.run_ok({"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": "inst1.test"})
        self.assertFalse(self.running("inst1.test"))

    def test_no_remember_keeps_the_admin_state(self):
        self.run_ok(create_op())
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test",
                     "no_remember": True})
        self.assertTrue(self.running("inst1.test"))
        self.assertEqual(self.instance().admin_state, c.ADMINST_DOWN)

    def test_duplicate_name_is_refused_and_changes_nothing(self):
        self.run_ok(create_op())
        serial = self.config.serial_no
        cls, msg, code = self.run_error(create_op())
        self.assertEqual((cls, code), ("OpPrereqError", "already_exists"))
        self.assertEqual(msg, "Instance 'inst1.test' is already in the cluster")
        self.assertEqual(self.config.serial_no, serial)

    def test_refusals_change_nothing(self):
        serial = self.config.serial_no
        cases = [
            (create_op(pnode="nosuch.test"), "unknown_entity", "Node 'nosuch.test' not known"),
            (create_op(disk_template="drbd", snode="node1.test"), None,
             "Disk template 'drbd' is not enabled in cluster. Enabled disk templates are: "
             "diskless,file,plain"),  # Ganeti 3.0's words (seen on the real cluster)
            (create_op(hypervisor="kvm"), "wrong_state",
             "Selected hypervisor (kvm) not enabled in the cluster (fake)"),
            (create_op(disks=[{"size": 100}]), "wrong_input",
             "Diskless instances cannot have disks"),
            (create_op(beparams={"maxmem": 128, "minmem": 256}), "wrong_input",
             "Minimum memory cannot be greater than maximum memory (256 > 128)"),
            (create_op(hvparams={"migration_port": 1}), "wrong_input",
             "The following hypervisor parameters are global and cannot be customized at "
             "instance level, please modify them at cluster level: migration_port"),
            (create_op(nics=[{"ip": "10.0.0.300"}]), "wrong_input",
             "Invalid IP address '10.0.0.300'"),
            (create_op(nics=[{"mode": "routed"}]), "wrong_input",
             "Routed nic mode requires an ip address if not attached to a network"),
            (create_op(nics=[{"mac": "aa:bb"}]), "wrong_input", "Invalid MAC address 'aa:bb'"),
            (create_op(name_check=False, ip_check=True), "wrong_input",
             "Cannot do IP address check without a name check"),
            (create_op(iallocator="hail"), "wrong_input",
             "Do not specify both, iallocator and node"),
            (create_op(no_install=False, os_type=None), "wrong_input",
             "No guest OS or OS image specified"),
            (create_op(instance_name="bad name"), "wrong_input",
             "Invalid instance name 'bad name'"),
        ]
        for op, code, message in cases:
            cls, msg, got = self.run_error(op)
            self.assertEqual((cls, got, msg), ("OpPrereqError", code, message))
        self.assertEqual(self.config.serial_no, serial)
        self.assertEqual(self.config.instances, {})
        self.assertEqual(self.master.daemon.locks.names(LEVEL_INSTANCE), [])

    def test_secret_os_parameters_are_never_stored(self):
        job = self.master.submit(create_op(osparams_secret={"password": "s3cret"},
                                           osparams_private={"key": "pr1vate"}))
        status, _results, log = self.master.finish(job)
        self.assertEqual(status, "success")
        (ops,) = self.master.client().call("QueryJobs", [job], ["ops"])[0]
        self.assertEqual(ops[0]["osparams_secret"], {"password": None})
        self.assertEqual(ops[0]["osparams_private"], {"key": None})
        for base, _dirs, files in os.walk(self.master.paths.queue_dir):
            for name in files:
                with open(os.path.join(base, name), "rb") as f:
                    data = f.read()
                self.assertNotIn(b"s3cret", data, name)
                self.assertNotIn(b"pr1vate", data, name)
        self.assertNotIn("s3cret", " ".join(map(str, log)))
        # the private (not secret) parameters are kept in the config, as Ganeti's
        self.assertEqual(self.instance().osparams_private, {"key": "pr1vate"})
        self.assertNotIn("password", self.instance().osparams)

    def test_policy_violation_is_refused(self):
        cls, msg, code = self.run_error(create_op(beparams={"maxmem": 1 << 20,
                                                            "minmem": 128}))
        self.assertEqual((cls, code), ("OpPrereqError", "wrong_input"))
        self.assertIn("violates policy: memory-size value 1048576 is not in range", msg)
        self.run_ok(create_op(beparams={"maxmem": 1 << 20, "minmem": 128},
                              ignore_ipolicy=True))


class ModifyTest(InstanceCase):
    def setUp(self):
        super().setUp()
        self.run_ok(create_op())

    def test_beparams_and_nics(self):
        result = self.run_ok({"OP_ID": "OP_INSTANCE_SET_PARAMS",
                              "instance_name": "inst1.test",
                              "beparams": {"maxmem": 256, "vcpus": 2},
                              "nics": [["add", -1, {"mac": "aa:00:00:11:22:33"}]]})
        self.assertIn(["be/maxmem", 256], result)
        self.assertIn(["be/vcpus", 2], result)
        inst = self.instance()
        self.assertEqual(inst.beparams["maxmem"], 256)
        self.assertEqual([n.mac for n in inst.nics][1], "aa:00:00:11:22:33")
        self.run_ok({"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "inst1.test",
                     "nics": [["remove", 0, {}]]})
        self.assertEqual([n.mac for n in self.instance().nics], ["aa:00:00:11:22:33"])

    def test_offline_and_online(self):
        self.run_ok({"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "inst1.test",
                     "offline": True})
        self.assertEqual(self.instance().admin_state, c.ADMINST_OFFLINE)
        cls, msg, code = self.run_error({"OP_ID": "OP_INSTANCE_STARTUP",
                                         "instance_name": "inst1.test"})
        self.assertEqual((cls, code), ("OpPrereqError", "wrong_state"))
        self.assertIn("is marked to be offline", msg)
        self.run_ok({"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "inst1.test",
                     "offline": False})
        self.assertEqual(self.instance().admin_state, c.ADMINST_DOWN)

    def test_no_change_is_refused(self):
        cls, msg, code = self.run_error({"OP_ID": "OP_INSTANCE_SET_PARAMS",
                                         "instance_name": "inst1.test"})
        self.assertEqual((cls, msg, code), ("OpPrereqError", "No changes submitted",
                                            "wrong_input"))

    def test_rename(self):
        new = self.run_ok({"OP_ID": "OP_INSTANCE_RENAME", "instance_name": "inst1.test",
                           "new_name": "inst2.test", "name_check": False, "ip_check": False})
        self.assertEqual(new, "inst2.test")
        self.assertIsNone(self.instance())
        self.assertIsNotNone(self.instance("inst2.test"))
        names = self.master.daemon.locks.names(LEVEL_INSTANCE)
        self.assertEqual(names, ["inst2.test"])
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst2.test"})
        self.assertTrue(self.running("inst2.test"))
        cls, msg, _ = self.run_error({"OP_ID": "OP_INSTANCE_RENAME",
                                      "instance_name": "inst2.test", "new_name": "inst3.test",
                                      "name_check": False, "ip_check": False})
        self.assertIn("is marked to be up, cannot rename", msg)

    def test_query_data(self):
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        data = self.run_ok({"OP_ID": "OP_INSTANCE_QUERY_DATA", "instances": ["inst1.test"]})
        info = data["inst1.test"]
        self.assertEqual((info["config_state"], info["run_state"], info["pnode"]),
                         ("up", "up", "node1.test"))
        self.assertEqual(info["be_actual"]["maxmem"], 128)
        static = self.run_ok({"OP_ID": "OP_INSTANCE_QUERY_DATA", "static": True})
        self.assertIsNone(static["inst1.test"]["run_state"])

    def test_short_names_are_expanded(self):
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1"})
        self.assertTrue(self.running("inst1.test"))
        data = self.run_ok({"OP_ID": "OP_INSTANCE_QUERY_DATA", "instances": ["inst1"]})
        self.assertEqual(list(data), ["inst1.test"])
        self.run_ok(create_op("inst1.other"))
        cls, msg, code = self.run_error({"OP_ID": "OP_INSTANCE_SHUTDOWN",
                                         "instance_name": "inst1"})
        self.assertEqual((msg, code), ("Instance 'inst1' not known", "unknown_entity"))

    def test_unknown_instance(self):
        for op_id in ("OP_INSTANCE_STARTUP", "OP_INSTANCE_REMOVE", "OP_INSTANCE_SHUTDOWN"):
            cls, msg, code = self.run_error({"OP_ID": op_id, "instance_name": "nosuch"})
            self.assertEqual((cls, msg, code), ("OpPrereqError", "Instance 'nosuch' not known",
                                                "unknown_entity"))


class WatcherRestartTest(InstanceCase):
    """masterd's watcher service starts an instance that should run and does not,
    gives up after Ganeti's five attempts, and forgets it once it runs again."""

    def setUp(self):
        super().setUp()
        self.run_ok(create_op(), {"OP_ID": "OP_INSTANCE_STARTUP",
                                  "instance_name": "inst1.test"})
        self.state_file = os.path.join(self.net.paths("node1.test").run_dir, "fake-hypervisor",
                                       "inst1.test")

    def watcher_round(self):
        watcher = self.master.daemon.watcher
        summary = self.master.run_until(defer.Deferred.fromCoroutine(watcher.run_once()))
        (group,) = summary["groups"].values()
        # let the submitted jobs run
        for job_id in sorted(self.master.daemon.queue.jobs):
            self.master.finish(job_id)
        return group.get("restarted", [])

    def test_a_crashed_instance_is_started_again(self):
        os.unlink(self.state_file)  # the instance died behind the cluster's back
        self.assertEqual(self.watcher_round(), ["inst1.test"])
        self.assertTrue(self.running("inst1.test"))
        self.assertEqual(self.watcher_round(), [])  # running: nothing to do

    def test_stopped_instances_are_left_alone(self):
        self.run_ok({"OP_ID": "OP_INSTANCE_SHUTDOWN", "instance_name": "inst1.test"})
        self.assertEqual(self.watcher_round(), [])
        self.assertFalse(self.running("inst1.test"))

    def test_gives_up_after_five_attempts(self):
        os.unlink(self.state_file)
        # every start fails on the node, as with a broken hypervisor
        from ganeti.noded.backend import instances as backend
        original = backend.instance_start

        async def failing(*args, **kwargs):
            from ganeti.noded.backend.context import RPCFail
            raise RPCFail("hypervisor refused to start the instance")
        self.net.handlers["instance_start"] = failing
        self.addCleanup(self.net.handlers.__setitem__, "instance_start", original)
        attempts = [self.watcher_round() for _ in range(7)]
        self.assertEqual(attempts, [["inst1.test"]] * 5 + [[], []])
        self.net.handlers["instance_start"] = original
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        self.assertEqual(self.watcher_round(), [])


class VerifyInstancesTest(InstanceCase):
    def verify(self):
        group = next(iter(self.config.nodegroups.values())).name
        status, results, log = self.master.finish(self.master.submit(
            {"OP_ID": "OP_CLUSTER_VERIFY_GROUP", "group_name": group, "error_codes": True,
             "skip_checks": ["nplusone_mem"]}))
        self.assertEqual(status, "success", results)
        return [line for line in log if "INSTANCE" in line]

    def test_instances_run_where_the_config_says(self):
        self.run_ok(create_op(), {"OP_ID": "OP_INSTANCE_STARTUP",
                                  "instance_name": "inst1.test"})
        self.assertEqual(self.verify(), [])
        run_dir = os.path.join(self.net.paths("node1.test").run_dir, "fake-hypervisor")
        os.unlink(os.path.join(run_dir, "inst1.test"))
        with open(os.path.join(run_dir, "stray.test"), "w") as f:
            f.write("0\n128\n1\n")
        lines = self.verify()
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("ERROR:EINSTANCEDOWN:instance:inst1.test:instance not running on its "
                      "primary node node1.test", lines[1])
        self.assertIn("ERROR:ENODEORPHANINSTANCE:node:node1.test:instance stray.test on node "
                      "node1.test should not exist", lines[0])


# /etc/hosts as Debian ships it, plus what Ganeti's QA (TestInstanceRenameAndBack) adds
# to map the new name to another host: the name then resolves to "localhost".
QA_HOSTS = ("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
            "127.0.1.50 inst1.test\n127.0.1.70 inst3.test inst3\n"
            "::1 meeeeh-not-exists inst2.test\n127.0.0.1 meeeeh-not-exists inst2.test\n")


class RenameTest(InstanceCase):
    """OP_INSTANCE_RENAME's name rules (Ganeti's LUInstanceRename, CheckHostnameSane)."""

    def setUp(self):
        super().setUp()
        self.run_ok(create_op())
        self.resolver = HostsResolver(QA_HOSTS, alive=("127.0.1.80",))
        self.master.daemon.resolver = self.resolver

    def rename(self, new, **params):
        return {"OP_ID": "OP_INSTANCE_RENAME", "instance_name": "inst1.test",
                "new_name": new, **params}

    def test_to_the_same_name_is_a_no_op(self):
        serial = self.instance().serial_no
        for check in (False, True):
            result = self.run_ok(self.rename("inst1.test", name_check=check, ip_check=check))
            self.assertEqual(result, "inst1.test")
        self.assertEqual(self.instance().serial_no, serial)
        self.assertEqual(self.master.daemon.locks.names(LEVEL_INSTANCE), ["inst1.test"])
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})

    def test_the_unit_records_the_instance_in_the_job_opcode(self):
        """Ganeti's _ExpandAndLockInstance sets instance_uuid and the full name in the
        opcode, which the job's ``ops`` echo shows, also when the job fails later."""
        uuid = self.instance().uuid
        job_id = self.master.submit({"OP_ID": "OP_INSTANCE_RENAME", "instance_name": "inst1",
                                     "new_name": "inst2.test", "ip_check": False})
        status, _results, _log = self.master.finish(job_id)
        self.assertEqual(status, "error")  # inst2.test resolves to another host
        (op,) = self.master.client().call("QueryJobs", [job_id], ["ops"])[0][0]
        self.assertEqual((op["instance_uuid"], op["instance_name"]), (uuid, "inst1.test"))

    def test_a_name_resolving_to_another_host_is_refused(self):
        serial = self.instance().serial_no
        cls, msg, code = self.run_error(self.rename("inst2.test", ip_check=False))
        self.assertEqual((cls, msg, code), (
            "OpPrereqError", "Resolved hostname 'localhost' does not look the same as "
            "given hostname 'inst2.test'", "wrong_input"))
        self.assertIsNotNone(self.instance())
        self.assertEqual(self.instance().serial_no, serial)
        # without the name check the name is taken as given
        self.assertEqual(self.run_ok(self.rename("inst2.test", name_check=False,
                                                 ip_check=False)), "inst2.test")

    def test_the_new_name_is_the_resolved_one(self):
        status, results, log = self.master.finish(self.master.submit(
            self.rename("inst3", ip_check=False)))
        self.assertEqual((status, results), ("success", ["inst3.test"]))
        self.assertIn(" - INFO: Resolved given name 'inst3' to 'inst3.test'",
                      log)
        self.assertIsNotNone(self.instance("inst3.test"))

    def test_unresolvable_name_and_address_in_use(self):
        cls, msg, code = self.run_error(self.rename("nosuch.test"))
        self.assertEqual((cls, msg, code), (
            "OpPrereqError", "The given name (nosuch.test) does not resolve: Name or "
            "service not known", "resolver_error"))
        self.resolver.lines.append(("127.0.1.80", ["inst4.test"]))
        cls, msg, code = self.run_error(self.rename("inst4.test"))
        self.assertEqual((cls, msg, code), (
            "OpPrereqError", "IP 127.0.1.80 of instance inst4.test already in use",
            "resource_not_unique"))
        self.assertEqual(self.resolver.calls[-1], ("tcp_ping", "127.0.1.80"))
        self.assertIsNotNone(self.instance())


class CreateNameCheckTest(InstanceCase):
    """OP_INSTANCE_CREATE's name check is Ganeti's CheckHostnameSane and TcpPing, as
    rename's: the instance takes the resolved name."""

    def setUp(self):
        super().setUp()
        self.resolver = HostsResolver(QA_HOSTS + "127.0.1.81 inst5.test inst5\n",
                                      alive=("127.0.1.80",))
        self.master.daemon.resolver = self.resolver

    def test_the_instance_takes_the_resolved_name_and_address(self):
        job_id = self.master.submit(create_op("inst3", name_check=True, ip_check=True,
                                              nics=[{"ip": "auto"}]))
        status, results, log = self.master.finish(job_id)
        self.assertEqual((status, results), ("success", [["node1.test"]]))
        self.assertIn(" - INFO: Resolved given name 'inst3' to 'inst3.test'", log)
        inst = self.instance("inst3.test")
        self.assertEqual(inst.nics[0].ip, "127.0.1.70")
        self.assertIsNone(self.instance("inst3"))
        self.assertEqual(self.master.daemon.locks.names(LEVEL_INSTANCE), ["inst3.test"])
        (op,) = self.master.client().call("QueryJobs", [job_id], ["ops"])[0][0]
        self.assertEqual(op["instance_name"], "inst3.test")
        self.assertEqual(self.resolver.calls[-1], ("tcp_ping", "127.0.1.70"))
        # the resolved name must be new as well
        self.assertEqual(self.run_error(create_op("inst3", name_check=True, ip_check=False)),
                         ("OpPrereqError", "Instance 'inst3.test' is already in the cluster",
                          "already_exists"))

    def test_bad_names_and_an_address_in_use_are_refused(self):
        self.assertEqual(self.run_error(create_op("inst2.test", name_check=True,
                                                  ip_check=False)), (
            "OpPrereqError", "Resolved hostname 'localhost' does not look the same as "
            "given hostname 'inst2.test'", "wrong_input"))
        self.assertEqual(self.run_error(create_op("nosuch.test", name_check=True,
                                                  ip_check=False)), (
            "OpPrereqError", "The given name (nosuch.test) does not resolve: Name or "
            "service not known", "resolver_error"))
        self.resolver.lines.append(("127.0.1.80", ["inst4.test"]))
        self.assertEqual(self.run_error(create_op("inst4.test", name_check=True,
                                                  ip_check=True)), (
            "OpPrereqError", "IP 127.0.1.80 of instance inst4.test already in use",
            "resource_not_unique"))
        self.assertEqual(self.config.instances, {})


class SystemResolverPingTest(TestCase):
    """Ganeti's TcpPing: a host that accepts or refuses the connection is up."""

    def test_accepted_and_refused_both_answer(self):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        try:
            self.assertTrue(SystemResolver().tcp_ping("127.0.0.1", port, 5.0))
        finally:
            server.close()
        # nothing listens there any more: the kernel refuses, a host answered
        self.assertTrue(SystemResolver().tcp_ping("127.0.0.1", port, 5.0))


class HostsResolverTest(TestCase):
    def test_the_fake_has_the_real_resolvers_methods(self):
        for name in ("fqdn", "address", "tcp_ping"):
            self.assertEqual(inspect.signature(getattr(HostsResolver, name)),
                             inspect.signature(getattr(SystemResolver, name)), name)
