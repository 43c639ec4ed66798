"""ganeti-vcluster's volume group per node (ganeti.cli.vcluster_lvm) without root: the node's
lvm.conf, finding loop devices by their backing file, stale loop devices, the daemons'
environment, and create/start/destroy with the LVM steps faked (the real ones:
tests/integration/test_vcluster_lvm.py)."""

import argparse
import io
import json
import os
import subprocess

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import daemons, vcluster, vcluster_lvm, vcluster_tool
from ganeti.core import config as configmod
from ganeti.core import constants, errors
from ganeti.core.paths import Paths
from tests.cli.test_vcluster import FakeDaemons, JobMaster

REAL_RUN = vcluster_lvm._run
LOSETUP_JSON = json.dumps({"loopdevices": [
    {"name": "/dev/loop0", "back-file": "/v/node1.x/lvm/pv.img"},
    {"name": "/dev/loop1", "back-file": "/v/node2.x/lvm/pv.img (deleted)"},
    {"name": "/dev/loop2", "back-file": "/srv/other.img (deleted)"},
    {"name": "/dev/loop3", "back-file": "/old/node1.y/lvm/pv.img (deleted)"},
    {"name": "/dev/loop4", "back-file": None}]})


class FakeRun:
    """Stands in for vcluster_lvm._run: records the commands, answers losetup."""

    def __init__(self, listing=LOSETUP_JSON, attach="/dev/loop7"):
        self.calls = []
        self.listing = listing
        self.attach = attach

    def __call__(self, argv, env=None, check=True):
        self.calls.append((argv, dict(env or {})))
        out = ""
        if argv[:2] == ["losetup", "--list"]:
            out = self.listing
        elif argv[:3] == ["losetup", "-f", "--show"]:
            out = self.attach + "\n"
        return subprocess.CompletedProcess(argv, 0, out, "")


class HelpersTest(SynchronousTestCase):
    def setUp(self):
        self.root = os.path.join(os.path.abspath(self.mktemp()), "n1.x")
        os.makedirs(self.root)
        self.fake = FakeRun()
        self.patch(vcluster_lvm, "_run", self.fake)

    def test_loops_found_by_backing_file_even_deleted(self):
        loops = vcluster_lvm.loop_devices()
        self.assertEqual(loops[0], ("/dev/loop0", "/v/node1.x/lvm/pv.img"))
        self.assertEqual(loops[4], ("/dev/loop4", ""))
        self.assertEqual(vcluster_lvm.loops_of("/v/node1.x/lvm/pv.img", loops), ["/dev/loop0"])
        self.assertEqual(vcluster_lvm.loops_of("/v/node2.x/lvm/pv.img", loops), ["/dev/loop1"])
        self.assertEqual(vcluster_lvm.loops_of("/v/node3.x/lvm/pv.img", loops), [])

    def test_unreadable_listing_means_no_loops(self):
        for listing in ("", "not json", "[]", '{"loopdevices": [{}]}'):
            self.fake.listing = listing
            self.assertEqual(vcluster_lvm.loop_devices(), [], listing)

    def test_detach_stale_only_deleted_node_images(self):
        self.assertEqual(vcluster_lvm.detach_stale(), ["/dev/loop1", "/dev/loop3"])
        detached = [argv[2] for argv, _ in self.fake.calls if argv[:2] == ["losetup", "-d"]]
        self.assertEqual(detached, ["/dev/loop1", "/dev/loop3"])

    def test_node_config_sees_only_its_device_and_shares_nothing(self):
        self.assertEqual(vcluster_lvm.lvm_env(self.root), {})  # none yet
        self.assertEqual(vcluster_lvm.attach(self.root), "/dev/loop7")
        self.assertIn((["losetup", "-f", "--show", os.path.join(self.root, "lvm/pv.img")], {}),
                      self.fake.calls)
        env = vcluster_lvm.lvm_env(self.root)
        self.assertEqual(env, {"LVM_SYSTEM_DIR": os.path.join(self.root, "etc/lvm")})
        with open(os.path.join(env["LVM_SYSTEM_DIR"], "lvm.conf"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn('filter = ["a|^/dev/loop7$|", "r|.*|"]', text)
        self.assertIn('global_filter = ["a|^/dev/loop7$|", "r|.*|"]', text)
        for setting in ("use_devicesfile = 0", "obtain_device_list_from_udev = 0",
                        'hints = "none"', "udev_sync = 0",
                        f'locking_dir = "{self.root}/lvm/lock"',
                        f'backup_dir = "{self.root}/lvm/backup"',
                        f'archive_dir = "{self.root}/lvm/archive"'):
            self.assertIn(setting, text)
        for d in ("lock", "backup", "archive"):
            self.assertTrue(os.path.isdir(os.path.join(self.root, "lvm", d)))

    def test_attach_reuses_the_attached_device_and_rewrites_the_config(self):
        vcluster_lvm.attach(self.root)
        image = os.path.join(self.root, "lvm/pv.img")
        self.fake.calls.clear()
        vcluster_lvm.attach(self.root, [("/dev/loop3", image)])  # after a reboot: another
        self.assertEqual(self.fake.calls, [])
        with open(os.path.join(self.root, "etc/lvm/lvm.conf"), encoding="utf-8") as f:
            self.assertIn('"a|^/dev/loop3$|"', f.read())

    def test_create_makes_a_sparse_image_and_the_group(self):
        self.assertEqual(vcluster_lvm.create(self.root, "xenvg", 20480), "/dev/loop7")
        image = os.path.join(self.root, "lvm/pv.img")
        st = os.stat(image)
        self.assertEqual(st.st_size, (20480 + vcluster_lvm.OVERHEAD_MIB) * 1024 * 1024)
        self.assertLess(st.st_blocks * 512, 1024 * 1024)  # sparse
        lvm_calls = [(argv, env) for argv, env in self.fake.calls if argv[0] == "lvm"]
        self.assertEqual([argv for argv, _ in lvm_calls],
                         [["lvm", "pvcreate", "-ff", "-y", "/dev/loop7"],
                          ["lvm", "vgcreate", "xenvg", "/dev/loop7"]])
        for _, env in lvm_calls:
            self.assertEqual(env, {"LVM_SYSTEM_DIR": os.path.join(self.root, "etc/lvm")})

    def test_remove_whatever_the_device_number(self):
        vcluster_lvm.attach(self.root)
        image = os.path.join(self.root, "lvm/pv.img")
        self.fake.calls.clear()
        self.assertEqual(vcluster_lvm.remove(self.root, "xenvg",
                                             [("/dev/loop5", f"{image} (deleted)"),
                                              ("/dev/loop6", "/dev/loop5"),  # a volume's
                                              ("/dev/loop7", "/dev/loop1")]),
                         ["/dev/loop6", "/dev/loop5"])
        self.assertEqual([argv for argv, _ in self.fake.calls],
                         [["lvm", "vgremove", "-ff", "-y", "xenvg"],
                          ["losetup", "-d", "/dev/loop6"],
                          ["lvm", "pvremove", "-ff", "-y", "/dev/loop5"],
                          ["losetup", "-d", "/dev/loop5"]])
        self.fake.calls.clear()
        self.assertEqual(vcluster_lvm.remove(self.root, "xenvg", []), [])  # nothing left
        self.assertEqual(self.fake.calls, [])

    def test_failures_are_command_errors(self):
        def failing(argv, **_kwargs):
            return subprocess.CompletedProcess(argv, 5, "", "  WARNING: x\n  No space\n")
        self.patch(vcluster_lvm.subprocess, "run", failing)
        with self.assertRaises(errors.CommandError) as caught:
            REAL_RUN(["lvm", "vgcreate", "xenvg", "/dev/loop7"])
        self.assertIn("No space", str(caught.exception))
        self.assertNotIn("WARNING", str(caught.exception))
        self.assertEqual(REAL_RUN(["lvm", "vgs"], check=False).returncode, 5)

    def test_daemons_get_the_node_lvm_environment(self):
        vcluster_lvm.attach(self.root)
        paths = Paths.for_node(self.root, "n1.x")
        seen = {}

        def fake_run(cmd, env=None, **_kwargs):
            seen.update(env)
            return subprocess.CompletedProcess(cmd, 0, "", "")
        self.patch(daemons.subprocess, "run", fake_run)
        daemons.start(paths, constants.NODED)
        self.assertEqual(seen["LVM_SYSTEM_DIR"], os.path.join(self.root, "etc/lvm"))
        self.assertEqual(seen["GANETI_ROOTDIR"], self.root)

    def test_unavailable_without_root(self):
        self.patch(vcluster_lvm.os, "geteuid", lambda: 1000)
        self.assertEqual(vcluster_lvm.unavailable_reason(), "loop devices need root")


class FakeLvm:
    """Stands in for the LVM steps of create/start/destroy (the rest is the module's)."""

    def __init__(self, reason=None):
        self.reason = reason
        self.calls = []

    def __getattr__(self, name):
        return getattr(vcluster_lvm, name)

    def unavailable_reason(self):
        return self.reason

    def detach_stale(self):
        self.calls.append(("detach_stale",))

    def create(self, root, vg, size):
        self.calls.append(("create", os.path.basename(root), vg, size))

    def attach_all(self, roots):
        self.calls.append(("attach_all", [os.path.basename(r) for r in roots]))

    def remove_all(self, roots, lvm):
        if lvm:
            self.calls.append(("remove_all", [os.path.basename(r) for r in roots], lvm["vg"]))
        return []


@pytest.mark.subprocess
class CreateTest(SynchronousTestCase):
    def setUp(self):
        self.dir = os.path.abspath(self.mktemp())
        self.patch(vcluster, "daemons", FakeDaemons())
        self.patch(vcluster, "_answers", lambda paths: True)
        self.lvm = FakeLvm()
        self.patch(vcluster, "vcluster_lvm", self.lvm)

    def run_cli(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        master = JobMaster()
        code = vcluster_tool.main(list(argv), stdout=out, stderr=err, environ={},
                                  luxi_factory=lambda _paths: master)
        return code, out.getvalue(), err.getvalue()

    def create(self, *extra):
        return self.run_cli("create", self.dir, "--nodes", "2", "--domain", "x.test",
                            "--ip-base", "127.0.9.", *extra)

    def config(self):
        return configmod.load_file(os.path.join(self.dir, "node1.x.test",
                                                "var/lib/ganeti/config.data"))

    def test_create_gives_every_node_a_group_and_enables_plain(self):
        code, out, err = self.create("--vg-name", "gvg", "--vg-size", "21")
        self.assertEqual(code, 0, err)
        self.assertEqual(self.lvm.calls[:3], [("detach_stale",),
                                              ("create", "node1.x.test", "gvg", 21504),
                                              ("create", "node2.x.test", "gvg", 21504)])
        self.assertIn(("attach_all", ["node1.x.test", "node2.x.test"]), self.lvm.calls)
        self.assertIn("volume group gvg of 21504 MiB on each node", out)
        cfg = self.config()
        self.assertEqual(cfg.cluster.volume_group_name, "gvg")
        self.assertEqual(cfg.cluster.enabled_disk_templates,
                         [constants.DT_FILE, constants.DT_DISKLESS, *vcluster_lvm.TEMPLATES])
        with open(os.path.join(self.dir, "vcluster.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["lvm"], {"vg": "gvg", "size_mib": 21504})
        self.assertEqual(vcluster.VCluster.load(self.dir).lvm, {"vg": "gvg", "size_mib": 21504})
        self.assertNotIn("LVM_SYSTEM_DIR", self.run_cli("env", self.dir)[1])  # faked: none
        conf = os.path.join(self.dir, "node2.x.test", "etc", "lvm")
        os.makedirs(conf)
        open(os.path.join(conf, "lvm.conf"), "w").close()
        self.assertIn(f"export LVM_SYSTEM_DIR={conf}\n", self.run_cli("env", self.dir,
                                                                       "node2")[1])
        self.assertEqual(self.run_cli("destroy", self.dir)[0], 0)
        self.assertEqual(self.lvm.calls[-1],
                         ("remove_all", ["node1.x.test", "node2.x.test"], "gvg"))

    def test_no_lvm_and_unavailable(self):
        code, _, err = self.create("--no-lvm")
        self.assertEqual(code, 0, err)
        self.assertEqual(self.lvm.calls, [])
        self.assertIsNone(self.config().cluster.volume_group_name)
        self.assertEqual(self.config().cluster.enabled_disk_templates,
                         [constants.DT_FILE, constants.DT_DISKLESS])
        self.run_cli("destroy", self.dir)
        self.assertEqual(self.lvm.calls, [])
        self.lvm.reason = "loop devices need root"
        self.assertEqual(self.create()[0], 0)  # the default: none where impossible
        self.assertEqual(self.lvm.calls, [])
        self.run_cli("destroy", self.dir)
        code, _, err = self.create("--lvm")
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("Cannot use --lvm: loop devices need root", err)

    def test_lvm_choice_defaults(self):
        opts = argparse.Namespace()  # the demo's namespace has none of the options
        self.assertEqual(vcluster_lvm.choice(opts, None), {"vg": "xenvg", "size_mib": 20480})
        self.assertIsNone(vcluster_lvm.choice(opts, "no root"))
        with self.assertRaises(Exception) as caught:
            vcluster_lvm.choice(argparse.Namespace(lvm=True, vg_size=-1), None)
        self.assertIn("--vg-size", str(caught.exception))
