"""The namespaced virtual cluster's pure parts: the address plan, the ip commands, the
hosts file, the command prefixes, the libvirt configuration, the cluster settings, the
exec arguments and the demo's ready line.  Building real namespaces is
tests/integration/test_vcluster_netns.py's business."""

import argparse
import json
import os
import shutil
import sys
import tempfile

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import netns, vcluster, vcluster_demo, vcluster_demo_kvm, vcluster_ns
from ganeti.cli.framework import UsageError
from ganeti.core import constants, errors


class GuestStub:
    kernel, initrd = "/g/vmlinux", "/g/initrd.img"
    kernel_args, root_path = "console=ttyS0,115200", "/dev/vda"


class PlanTest(SynchronousTestCase):
    def test_addresses_and_names(self):
        plan = netns.new_plan("/tmp/x", 3, subnet="10.77.0.0/24", cluster_id="abc123")
        self.assertEqual(plan.master_ip, "10.77.0.2")
        self.assertEqual([plan.node_ip(k) for k in (1, 2, 3)],
                         ["10.77.0.11", "10.77.0.12", "10.77.0.13"])
        self.assertEqual(plan.client_ip, "10.77.0.250")
        self.assertEqual(plan.instance_ip(0), "10.77.0.100")
        self.assertEqual(plan.prefixlen, 24)
        self.assertEqual(plan.namespaces(), ["gvcabc123-switch", "gvcabc123-node1",
                                             "gvcabc123-node2", "gvcabc123-node3",
                                             "gvcabc123-client"])

    def test_default_subnet_is_private_10_x(self):
        plan = netns.new_plan("/tmp/some/dir", 2)
        self.assertTrue(plan.subnet.startswith("10.") and plan.subnet.endswith(".0.0/24"))
        self.assertEqual(len(plan.cluster_id), 6)
        # the id makes the subnet, so it is stable
        self.assertEqual(netns.new_plan("/d", 2, cluster_id=plan.cluster_id).subnet, plan.subnet)

    def test_refused_subnets(self):
        for subnet in ("192.0.2.0/24", "127.0.5.0/24", "8.8.8.0/24", "10.1.0.0/16", "x"):
            with self.assertRaises(errors.OpPrereqError, msg=subnet):
                netns.new_plan("/d", 1, subnet=subnet, cluster_id="a1")
        with self.assertRaises(errors.OpPrereqError):
            netns.new_plan("/d", netns.MAX_NODES + 1, subnet="10.5.0.0/24", cluster_id="a1")
        with self.assertRaises(errors.OpPrereqError):
            netns.new_plan("/d", 1, subnet="10.5.0.0/24", cluster_id="a b")

    def test_round_trip_and_corrupt(self):
        plan = netns.new_plan("/d", 2, subnet="10.9.0.0/24", cluster_id="ff00aa")
        self.assertEqual(netns.NetPlan.from_dict(json.loads(json.dumps(plan.to_dict()))), plan)
        for bad in ([], {"cluster_id": "x"}, {"cluster_id": "x", "subnet": "192.0.2.0/24",
                                               "nodes": 1}):
            with self.assertRaises((ValueError, KeyError)):
                netns.NetPlan.from_dict(bad)

    def test_create_commands(self):
        plan = netns.new_plan("/d", 2, subnet="10.9.0.0/24", cluster_id="c1")
        cmds = [" ".join(c) for c in netns.create_commands(plan)]
        self.assertEqual(cmds[:4], [f"ip netns add {ns}" for ns in plan.namespaces()[:4]])
        self.assertIn("ip -n gvcc1-switch link add sw0 type bridge", cmds)
        self.assertIn("ip -n gvcc1-node2 link add eth0 type veth peer name n2 netns "
                      "gvcc1-switch", cmds)
        self.assertIn("ip -n gvcc1-node2 link set eth0 master br0 up", cmds)
        self.assertIn("ip -n gvcc1-node2 address add 10.9.0.12/24 dev br0", cmds)
        self.assertIn("ip -n gvcc1-client address add 10.9.0.250/24 dev eth0", cmds)
        self.assertIn("ip -n gvcc1-node1 link set lo up", cmds)
        # every command names one of the cluster's own namespaces
        for cmd in netns.create_commands(plan):
            self.assertTrue(any(ns in cmd for ns in plan.namespaces()), cmd)

    def test_hosts(self):
        plan = netns.new_plan("/d", 2, subnet="10.9.0.0/24", cluster_id="c1")
        text = netns.hosts_text(plan, "cluster.x.test", ["node1.x.test", "node2.x.test"],
                                "x.test")
        self.assertIn("127.0.0.1\tlocalhost\n", text)
        self.assertIn("10.9.0.2\tcluster.x.test\tcluster\n", text)
        self.assertIn("10.9.0.12\tnode2.x.test\tnode2\n", text)
        self.assertIn("10.9.0.250\tclient.x.test\tclient\n", text)

    def test_wrapper(self):
        argv = netns.wrapper("gvcc1-node1", "/d/hosts", {"B": "2", "A": "1"})
        self.assertEqual(argv[:3], ["nsenter", "--net=/run/netns/gvcc1-node1", "--"])
        self.assertIn("unshare", argv)
        self.assertEqual(argv[argv.index("--propagation") + 1], "private")
        self.assertEqual(argv[-4:], ["/d/hosts", "env", "A=1", "B=2"])
        self.assertEqual(netns.wrapper("n", None), ["nsenter", "--net=/run/netns/n", "--"])


class LibvirtTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ganeti-vcns-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_paths_and_uri(self):
        root = "/v/node1.x"
        self.assertEqual(vcluster_ns.libvirt_socket(root), "/v/node1.x/libvirt/run/libvirt-sock")
        self.assertEqual(vcluster_ns.libvirt_uri(root),
                         "qemu+unix:///system?socket=/v/node1.x/libvirt/run/libvirt-sock")

    def test_command_binds_every_dir_inside_the_node_namespaces(self):
        argv = vcluster_ns.libvirt_command("gvcc1-node2", "/v/n2")
        self.assertEqual(argv[:2], ["nsenter", "--net=/run/netns/gvcc1-node2"])
        self.assertIn("--mount", argv)
        script = argv[-1]
        for part, target in vcluster_ns.LIBVIRT_DIRS:
            self.assertIn(f"mount --bind /v/n2/libvirt/{part} {target} || exit 1", script)
        self.assertIn("virtlogd -d -p /v/n2/libvirt/virtlogd.pid", script)
        self.assertTrue(script.endswith("exec libvirtd -d -l -p /v/n2/libvirt/libvirtd.pid"))
        # under the subreaper that collects each ended QEMU at once
        at = argv.index("ganeti.cli.subreaper")
        self.assertEqual(argv[at - 2:at], [sys.executable, "-m"])
        self.assertEqual(argv[at + 1:at + 4], ["--", "sh", "-c"])

    def test_config(self):
        vcluster_ns.write_libvirt_config(self.tmp, "10.9.0.11")
        etc = os.path.join(self.tmp, "libvirt", "etc")
        with open(os.path.join(etc, "libvirtd.conf")) as f:
            conf = f.read()
        self.assertIn('listen_addr = "10.9.0.11"', conf)
        self.assertIn("listen_tls = 0", conf)
        with open(os.path.join(etc, "qemu.conf")) as f:
            qemu_conf = f.read()
        self.assertIn('user = "root"', qemu_conf)
        # no machine-wide cgroups named after domain id and name, shared across nodes
        self.assertIn("cgroup_controllers = [ ]", qemu_conf)
        for part, _ in vcluster_ns.LIBVIRT_DIRS:
            self.assertTrue(os.path.isdir(os.path.join(self.tmp, "libvirt", part)))

    def test_socket_path_too_long(self):
        root = os.path.join(self.tmp, "x" * 100)
        with self.assertRaises(errors.OpPrereqError):
            vcluster_ns.write_libvirt_config(root, "10.9.0.11")

    def test_kvm_device_absent(self):
        self.assertFalse(vcluster_ns.fix_kvm_device(os.path.join(self.tmp, "nokvm")))


class CapsCacheTest(SynchronousTestCase):
    """The QEMU capabilities one node's libvirtd probed are handed to the next ones."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.store = os.path.join(self.tmp, "store")
        os.environ[vcluster_ns.CAPS_CACHE_ENV] = self.store
        self.addCleanup(os.environ.pop, vcluster_ns.CAPS_CACHE_ENV)

    def node_caps(self, node):
        return os.path.join(self.tmp, node, "libvirt", "cache", "qemu", "capabilities")

    def write(self, path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def read(self, path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    def test_kept_from_one_node_and_seeded_into_another(self):
        self.assertEqual(vcluster_ns.seed_caps(os.path.join(self.tmp, "n1")), 0)  # none yet
        self.write(os.path.join(self.node_caps("n1"), "abc.xml"), "<qemuCaps>1</qemuCaps>")
        self.write(os.path.join(self.node_caps("n1"), "notes.txt"), "not a capability file")
        self.assertEqual(vcluster_ns.keep_caps(os.path.join(self.tmp, "n1")), 1)
        self.assertEqual(os.listdir(self.store), ["abc.xml"])
        self.assertEqual(vcluster_ns.seed_caps(os.path.join(self.tmp, "n2")), 1)
        self.assertEqual(self.read(os.path.join(self.node_caps("n2"), "abc.xml")),
                         "<qemuCaps>1</qemuCaps>")

    def test_a_node_keeps_its_own_files_and_a_new_probe_replaces_the_stored_one(self):
        self.write(os.path.join(self.store, "abc.xml"), "old")
        self.write(os.path.join(self.node_caps("n1"), "abc.xml"), "reprobed")
        self.assertEqual(vcluster_ns.seed_caps(os.path.join(self.tmp, "n1")), 0)
        self.assertEqual(self.read(os.path.join(self.node_caps("n1"), "abc.xml")), "reprobed")
        vcluster_ns.keep_caps(os.path.join(self.tmp, "n1"))
        self.assertEqual(self.read(os.path.join(self.store, "abc.xml")), "reprobed")
        self.assertEqual(sorted(os.listdir(self.store)), ["abc.xml"])  # no temporary left

    def test_links_are_not_followed(self):
        outside = os.path.join(self.tmp, "secret")
        self.write(outside, "secret")
        os.makedirs(self.store)
        os.symlink(outside, os.path.join(self.store, "evil.xml"))
        self.assertEqual(vcluster_ns.seed_caps(os.path.join(self.tmp, "n1")), 0)
        self.assertFalse(os.path.exists(self.node_caps("n1")))


class SettingsTest(SynchronousTestCase):
    plan = netns.new_plan("/d", 3, subnet="10.9.0.0/24", cluster_id="c1")

    def test_with_guest(self):
        s = vcluster_ns.cluster_settings(self.plan, GuestStub(), True)
        self.assertEqual(s["enabled_hypervisors"], [constants.HT_KVM, constants.HT_FAKE])
        self.assertEqual((s["master_ip"], s["master_netdev"], s["master_netmask"]),
                         ("10.9.0.2", "br0", 24))
        self.assertEqual(s["nicparams"], {"mode": "bridged", "link": "br0"})
        kvm = s["hvparams"][constants.HT_KVM]
        self.assertEqual((kvm["kernel_path"], kvm["initrd_path"], kvm["root_path"]),
                         ("/g/vmlinux", "/g/initrd.img", "/dev/vda"))
        self.assertEqual(kvm["kernel_args"], "console=ttyS0,115200")
        self.assertIs(kvm["serial_console"], True)

    def test_without_guest_or_libvirt(self):
        s = vcluster_ns.cluster_settings(self.plan, None, True)
        self.assertEqual(s["enabled_hypervisors"], [constants.HT_FAKE, constants.HT_KVM])
        self.assertNotIn("hvparams", s)
        s = vcluster_ns.cluster_settings(self.plan, None, False)
        self.assertEqual(s["enabled_hypervisors"], [constants.HT_FAKE])

    def test_settings_make_a_valid_config(self):
        from ganeti.core import bootstrap
        from ganeti.core.paths import Paths
        s = vcluster_ns.cluster_settings(self.plan, GuestStub(), True)
        init = bootstrap.InitOptions(cluster_name="cluster.x.test", primary_ip="10.9.0.11",
                                     enabled_disk_templates=["file"], **s)
        cfg = bootstrap.build_config(init, Paths.for_node("/tmp/none/node1.x.test", "node1.x.test"))
        self.assertEqual(cfg.cluster.master_netdev, "br0")
        self.assertEqual(cfg.cluster.hvparams["kvm"]["root_path"], "/dev/vda")


class ExecTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ganeti-vcns-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        plan = netns.new_plan(self.tmp, 2, subnet="10.9.0.0/24", cluster_id="c1")
        nodes = [vcluster.VNode(f"node{k}.x.test", plan.node_ip(k),
                                os.path.join(self.tmp, f"node{k}.x.test")) for k in (1, 2)]
        self.vc = vcluster.VCluster(self.tmp, "cluster.x.test", "x.test", nodes[0].name,
                                    nodes, plan, True)

    def test_split_args(self):
        split = vcluster_ns.split_exec_args
        self.assertEqual(split(None, False, ["--", "ping", "-c1", "x"]),
                         (None, False, ["ping", "-c1", "x"]))
        self.assertEqual(split(None, False, ["--node", "node2", "--", "sh"]),
                         ("node2", False, ["sh"]))
        self.assertEqual(split(None, False, ["--client", "--", "curl", "--node", "x"]),
                         (None, True, ["curl", "--node", "x"]))
        self.assertEqual(split("node1", False, ["--", "true"]), ("node1", False, ["true"]))
        with self.assertRaises(UsageError):
            split("node1", True, ["--", "true"])

    def test_node_argv(self):
        argv = vcluster_ns.exec_argv(self.vc, "node2", False, ["gnt-node", "list"])
        self.assertEqual(argv[1], "--net=/run/netns/gvcc1-node2")
        self.assertIn(os.path.join(self.tmp, "hosts"), argv)
        self.assertIn(f"GANETI_ROOTDIR={self.tmp}/node2.x.test", argv)
        self.assertIn("GANETI_HOSTNAME=node2.x.test", argv)
        self.assertIn("GANETI_LIBVIRT_URI=qemu+unix:///system?socket="
                      f"{self.tmp}/node2.x.test/libvirt/run/libvirt-sock", argv)
        self.assertEqual(argv[-2:], ["gnt-node", "list"])
        self.assertFalse(any(a.startswith("LVM_SYSTEM_DIR=") for a in argv))
        conf = os.path.join(self.tmp, "node2.x.test", "etc", "lvm")
        os.makedirs(conf)
        open(os.path.join(conf, "lvm.conf"), "w").close()  # a node with a volume group
        argv = vcluster_ns.exec_argv(self.vc, "node2", False, ["lvm", "vgs"])
        self.assertIn(f"LVM_SYSTEM_DIR={conf}", argv)

    def test_client_argv(self):
        argv = vcluster_ns.exec_argv(self.vc, None, True, ["curl", "x"])
        self.assertEqual(argv[1], "--net=/run/netns/gvcc1-client")
        self.assertFalse(any(a.startswith("GANETI_") for a in argv))

    def test_errors(self):
        with self.assertRaises(UsageError):
            vcluster_ns.exec_argv(self.vc, None, False, [])
        self.vc.netns = None
        with self.assertRaises(errors.OpPrereqError):
            vcluster_ns.exec_argv(self.vc, None, False, ["true"])

    def test_daemon_wrapper(self):
        node2 = self.vc.nodes[1]
        noded = vcluster_ns.daemon_wrapper(self.vc, node2, constants.NODED)
        self.assertIn("--net=/run/netns/gvcc1-node2", noded)
        self.assertTrue(any(a.startswith("GANETI_LIBVIRT_URI=") for a in noded))
        masterd = vcluster_ns.daemon_wrapper(self.vc, self.vc.nodes[0], constants.MASTERD)
        self.assertFalse(any(a.startswith("GANETI_LIBVIRT_URI=") for a in masterd))
        self.vc.netns = None
        self.assertEqual(vcluster_ns.daemon_wrapper(self.vc, node2, constants.NODED), [])

    def test_state_round_trip(self):
        self.vc.save()
        again = vcluster.VCluster.load(self.tmp)
        self.assertEqual((again.netns, again.libvirt), (self.vc.netns, True))
        vcluster_ns.write_hosts(again)
        with open(os.path.join(self.tmp, "hosts")) as f:
            self.assertIn("10.9.0.12\tnode2.x.test\tnode2\n", f.read())

    def test_loopback_state_has_no_plan(self):
        self.vc.netns, self.vc.libvirt = None, False
        self.vc.save()
        with open(os.path.join(self.tmp, vcluster.STATE_FILE)) as f:
            self.assertNotIn("netns", json.load(f))
        self.assertIsNone(vcluster.VCluster.load(self.tmp).netns)


class DemoTest(SynchronousTestCase):
    def test_mode(self):
        opts = argparse.Namespace(mode="loopback", ip_base=vcluster.DEFAULT_IP_BASE)
        self.assertEqual(vcluster_demo.demo_mode(opts), "loopback")
        opts = argparse.Namespace(mode=None, ip_base="127.0.9.")
        self.assertEqual(vcluster_demo.demo_mode(opts), "loopback")
        opts = argparse.Namespace(mode="namespaces", ip_base="127.0.9.")
        self.assertEqual(vcluster_demo.demo_mode(opts), "namespaces")

    def test_ready_line(self):
        ready = vcluster_demo_kvm.ready
        self.assertTrue(ready("boot\nGANETI-GUEST-READY vm1.x.test\n# ", "vm1.x.test"))
        self.assertTrue(ready("GANETI-GUEST-READY vm1\r\n", "vm1.x.test"))
        self.assertFalse(ready("GANETI-GUEST-READY vm2.x.test\n", "vm1.x.test"))
        self.assertFalse(ready("echo GANETI-GUEST-READY vm1.x.test\n", "vm1.x.test"))

    def test_console_lines_are_shown_without_control_sequences(self):
        printable = vcluster_demo_kvm.printable
        self.assertEqual(printable("# \x1b[6nls -l\r"), "# ls -l")
        self.assertEqual(printable("\x1b[1;32mok\x1b[0m\tdone"), "ok\tdone")
        self.assertEqual(printable("\x1b]0;title\x07x\x1b]2;t\x1b\\y"), "xy")
        self.assertEqual(printable("a\x1bcb\x07\x00\x7fc\x1b(Bd\x1b"), "abcd")

    def test_wait_ready_times_out_on_the_injected_clock(self):
        now = [0.0]
        slept = []

        def sleep(s):
            slept.append(s)
            now[0] += s

        self.assertIsNone(vcluster_demo_kvm.wait_ready("/nonexistent", "vm1", timeout=1.0,
                                                       clock=lambda: now[0], sleep=sleep))
        self.assertEqual(sum(slept), 1.0)

    def test_add_command(self):
        argv = vcluster_demo_kvm.add_command(None, "vm1.x.test", "node2.x.test", "10.9.0.100")
        self.assertEqual(argv[:2], ["gnt-instance", "add"])
        self.assertEqual(argv[argv.index("-H") + 1], "kvm")
        self.assertIn("0:ip=10.9.0.100", argv)
        self.assertEqual(argv[-3:], ["-n", "node2.x.test", "vm1.x.test"])


class NotRootTest(SynchronousTestCase):
    def test_refused_without_root(self):
        self.patch(vcluster_ns.os, "geteuid", lambda: 1000)
        self.assertEqual(vcluster_ns.unavailable_reason(), "network namespaces need root")
        tmp = tempfile.mkdtemp(prefix="ganeti-vcns-")
        self.addCleanup(shutil.rmtree, tmp, True)
        opts = argparse.Namespace(directory=os.path.join(tmp, "vc"), nodes=1, domain="x.test",
                                  ip_base="127.0.9.", name=None, mode="namespaces",
                                  subnet=None, command="create")
        with self.assertRaises(errors.OpPrereqError) as caught:
            vcluster.create(None, opts, keep_running=False)
        self.assertIn("need root", str(caught.exception))
        self.assertFalse(os.path.exists(os.path.join(tmp, "vc")))


class UsageLinesTest(SynchronousTestCase):
    def test_namespaced_usage_points_inside(self):
        tmp = tempfile.mkdtemp(prefix="ganeti-vcns-")
        self.addCleanup(shutil.rmtree, tmp, True)
        plan = netns.new_plan(tmp, 2, subnet="10.9.0.0/24", cluster_id="c1")
        nodes = [vcluster.VNode(f"node{k}.x.test", plan.node_ip(k),
                                os.path.join(tmp, f"node{k}.x.test")) for k in (1, 2)]
        vc = vcluster.VCluster(tmp, "cluster.x.test", "x.test", nodes[0].name, nodes, plan,
                               True)
        text = "\n".join(vcluster_demo.usage_lines(vc))
        self.assertIn(f"exec {tmp} --client -- curl --cacert", text)
        self.assertIn("https://10.9.0.2:5080/dashboard/, at the master IP", text)
        # curl reaches the cluster's name at the master IP, not at the master node's own
        self.assertNotEqual(plan.node_ip(1), plan.master_ip)
        self.assertIn(f"--resolve cluster.x.test:5080:{plan.master_ip} ", text)
        self.assertIn(f"exec {tmp} [--node NODE | --client] -- CMD", text)
        vc.netns = None
        self.assertNotIn("exec", "\n".join(vcluster_demo.usage_lines(vc)))
