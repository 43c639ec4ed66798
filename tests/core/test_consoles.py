"""The console object of kvm instances (Ganeti's InstanceConsole) and its command."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import consoles
from ganeti.core import constants as c
from tests.master.test_instance_queries import N1, RUNNING, QueryCase
from tests.master.test_lu_instance import InstanceCase, create_op

SOCKET = "/var/run/ganeti/kvm-hypervisor/ctrl/vm1.example.com.serial"


class KvmConsoleTest(SynchronousTestCase):
    def test_serial_console_is_ssh_with_socat(self):
        got = consoles.kvm_console("vm1.example.com", 11000, {"serial_console": True},
                                   "node1.example.com", 22, environ={})
        self.assertEqual(got, {
            "instance": "vm1.example.com", "kind": "ssh", "host": "node1.example.com",
            "user": "root", "port": 22,
            "command": ["socat", "STDIO,raw,echo=0,escape=0x1d", "UNIX-CONNECT:" + SOCKET]})
        self.assertEqual(consoles.socket_of_command(got["command"]), SOCKET)

    def test_serial_preferred_over_vnc(self):
        hv = {"serial_console": True, "vnc_bind_address": "0.0.0.0"}
        got = consoles.kvm_console("vm1", 5901, hv, "n1", None, environ={})
        self.assertEqual(got["kind"], "ssh")
        self.assertNotIn("port", got)

    def test_vnc(self):
        hv = {"serial_console": False, "vnc_bind_address": "10.0.0.1"}
        self.assertEqual(consoles.kvm_console("vm1", 5903, hv, "n1", 22, environ={}),
                         {"instance": "vm1", "kind": "vnc", "host": "10.0.0.1",
                          "port": 5903, "display": 3})

    def test_vnc_without_port_is_a_message(self):
        hv = {"serial_console": False, "vnc_bind_address": "10.0.0.1"}
        self.assertEqual(consoles.kvm_console("vm1", None, hv, "n1", 22, environ={}),
                         {"instance": "vm1", "kind": "msg",
                          "message": "No serial shell for instance vm1"})

    def test_virtual_cluster_node_root(self):
        env = {"GANETI_ROOTDIR": "/srv/vc/node1.test", "GANETI_HOSTNAME": "node1.test"}
        got = consoles.kvm_console("vm1", None, {"serial_console": True}, "node2.test", 22,
                                   environ=env)
        self.assertEqual(got["command"][-1], "UNIX-CONNECT:/srv/vc/node2.test/var/run/ganeti/"
                                             "kvm-hypervisor/ctrl/vm1.serial")
        self.assertEqual(consoles.serial_log_path("/r", "vm1"),
                         "/r/kvm-hypervisor/console/vm1.log")

    def test_socket_of_other_commands(self):
        self.assertIsNone(consoles.socket_of_command("socat x UNIX-CONNECT:/a"))
        self.assertIsNone(consoles.socket_of_command(["ssh", "UNIX-CONNECT:/a"]))
        self.assertIsNone(consoles.socket_of_command(["socat", "STDIO", "TCP:a:1"]))


class ConsoleFieldTest(QueryCase):
    """The ``console`` query field of kvm instances."""

    def kvm(self, name, **hvparams):
        inst = self.inst(name)
        inst.hypervisor = c.HT_KVM
        inst.hvparams = hvparams
        return inst

    def test_running_kvm_instance(self):
        self.kvm("plain1.reads.test", serial_console=True)
        self.nodes.answers = {N1: {"plain1.reads.test": RUNNING}}
        console = self.values(["console"])["plain1.reads.test"][0]
        self.assertEqual((console["kind"], console["user"], console["port"]), ("ssh", "root", 22))
        self.assertEqual(console["host"], self.cfg.nodes[N1].name)
        self.assertTrue(console["command"][-1].endswith(
            "/kvm-hypervisor/ctrl/plain1.reads.test.serial"))

    def test_stopped_kvm_instance_has_none(self):
        self.kvm("plain1.reads.test", serial_console=True)
        self.nodes.answers = {N1: {}}
        self.assertEqual(self.rows(["console"])["plain1.reads.test"][0][0], c.RS_UNAVAIL)

    def test_vnc_instance(self):
        inst = self.kvm("plain1.reads.test", serial_console=False,
                        vnc_bind_address="127.0.0.1")
        inst.network_port = 5905
        self.nodes.answers = {N1: {"plain1.reads.test": RUNNING}}
        self.assertEqual(self.values(["console"])["plain1.reads.test"][0],
                         {"instance": "plain1.reads.test", "kind": "vnc",
                          "host": "127.0.0.1", "port": 5905, "display": 5})


class ConsoleOpcodeTest(InstanceCase):
    """OP_INSTANCE_CONSOLE through the real queue (fake hypervisor nodes)."""

    def test_running_and_stopped(self):
        self.run_ok(create_op())
        cls, message, _ = self.run_error({"OP_ID": "OP_INSTANCE_CONSOLE",
                                          "instance_name": "inst1.test"})
        self.assertEqual(cls, "OpExecError")
        self.assertIn("is not running (state ADMIN_down)", message)
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        self.assertEqual(self.run_ok({"OP_ID": "OP_INSTANCE_CONSOLE",
                                      "instance_name": "inst1.test"}),
                         {"instance": "inst1.test", "kind": "msg",
                          "message": "Console not available for fake hypervisor"})

    def test_kvm_console_from_the_config(self):
        self.run_ok(create_op())
        cfg = self.config
        inst = self.instance()
        inst.hypervisor = c.HT_KVM
        inst.hvparams = {"serial_console": True}
        got = consoles.instance_console(cfg, inst, environ={})
        self.assertEqual((got["kind"], got["host"], got["user"], got["port"]),
                         ("ssh", "node1.test", "root", 22))
        self.assertEqual(got["command"][-1], "UNIX-CONNECT:/var/run/ganeti/kvm-hypervisor/"
                                             "ctrl/inst1.test.serial")
        inst.hvparams = {"serial_console": False}
        self.assertEqual(consoles.instance_console(cfg, inst, environ={})["kind"], "msg")
