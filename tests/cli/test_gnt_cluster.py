"""gnt-cluster, in process: argv, stdout, stderr and the LUXI client injected."""

import copy
import io
import os
import stat

import yaml
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_cluster
from ganeti.core import config as configmod
from ganeti.core import constants, crypto, ssconf
from tests.fakes.configs import node_paths, small_config
from tests.fakes.luxi import FakeLuxiClient


class Run:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err


class CliTestCase(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self.mktemp())
        self.environ = self.paths.env()
        self.cfg = small_config()
        self.fake = FakeLuxiClient(self.cfg, self.paths, Clock())

    def run_cli(self, *argv, luxi=True):
        out, err = io.StringIO(), io.StringIO()
        code = gnt_cluster.main(list(argv), stdout=out, stderr=err, environ=self.environ,
                                luxi_factory=(lambda paths: self.fake) if luxi else None)
        return Run(code, out.getvalue(), err.getvalue())


class QueryCommandsTest(CliTestCase):
    def test_getmaster(self):
        r = self.run_cli("getmaster")
        self.assertEqual((r.code, r.out), (0, "node1.test\n"))
        self.assertEqual(self.fake.calls, [("QueryConfigValues", (["master_node"],))])
        self.assertTrue(self.fake.closed)

    def test_version(self):
        r = self.run_cli("version")
        self.assertEqual(r.code, 0)
        self.assertIn(f"Configuration format: {constants.CONFIG_VERSION}\n", r.out)
        self.assertIn("Software version: 3.0.2\n", r.out)

    def test_info(self):
        r = self.run_cli("info")
        self.assertEqual(r.code, 0, r.err)
        for line in ("Cluster name: cluster.test", "Master node: node1.test",
                     "Default hypervisor: fake", "  candidate pool size: 10",
                     "Instance policy - limits for instances: "):
            self.assertIn(line + "\n", r.out)

    def test_show_ispecs_cmd_as_ganeti_prints_it(self):
        """Ganeti's QA TestClusterModifyISpecs reads this back (sorted keys; std, then
        the bounds sets joined by //)."""
        self.cfg.cluster.ipolicy["minmax"].append(copy.deepcopy(
            self.cfg.cluster.ipolicy["minmax"][0]))
        r = self.run_cli("show-ispecs-cmd")
        self.assertEqual(r.code, 0, r.err)
        bounds = ("min:cpu-count=1,disk-count=1,disk-size=1024,memory-size=128,nic-count=1,"
                  "spindle-use=1/max:cpu-count=8,disk-count=16,disk-size=1048576,"
                  "memory-size=32768,nic-count=8,spindle-use=12")
        self.assertEqual(r.out, (
            "gnt-cluster init --ipolicy-std-specs cpu-count=1,disk-count=1,disk-size=1024,"
            f"memory-size=128,nic-count=1,spindle-use=1 --ipolicy-bounds-specs {bounds}//"
            f"{bounds} {self.cfg.cluster.cluster_name}\n"))

    def test_info_instance_policy_as_ganeti_prints_it(self):
        """Ganeti's layout, which Ganeti's QA reads back as YAML (qa_utils.ParseIPolicy)."""
        self.cfg.cluster.ipolicy["vcpu-ratio"] = 2.5
        r = self.run_cli("info")
        self.assertEqual(r.code, 0, r.err)
        start = r.out.index("Instance policy - limits for instances:")
        block = r.out[start:r.out.index("Data collectors:")]
        self.assertEqual(block, (
            "Instance policy - limits for instances: \n"
            "  bounds specs: \n"
            "    - max/0: \n"
            "        cpu-count: 8\n        disk-count: 16\n        disk-size: 1048576\n"
            "        memory-size: 32768\n        nic-count: 8\n        spindle-use: 12\n"
            "      min/0: \n"
            "        cpu-count: 1\n        disk-count: 1\n        disk-size: 1024\n"
            "        memory-size: 128\n        nic-count: 1\n        spindle-use: 1\n"
            "  std: \n"
            "    cpu-count: 1\n    disk-count: 1\n    disk-size: 1024\n"
            "    memory-size: 128\n    nic-count: 1\n    spindle-use: 1\n"
            "  allowed disk templates: diskless, file\n"
            "  vcpu-ratio: 2.5\n"
            "  spindle-ratio: 32\n"))
        info = yaml.safe_load(r.out)
        policy, specs = parse_ipolicy(info["Instance policy - limits for instances"])
        self.assertEqual(policy, {"allowed disk templates": "diskless, file",
                                  "vcpu-ratio": 2.5, "spindle-ratio": 32})
        self.assertEqual(specs["std"]["memory-size"], 128)
        self.assertEqual(specs["minmax"], [{"max": constants.ISPECS_MINMAX_DEFAULTS["max"],
                                            "min": constants.ISPECS_MINMAX_DEFAULTS["min"]}])


def parse_ipolicy(policy: dict) -> tuple[dict, dict]:
    """What Ganeti's QA makes of an info output's policy (qa_utils.ParseIPolicy): the
    ``bounds specs`` as ``minmax`` (``min/0`` -> ``min``), ``std``, the rest."""
    specs: dict = {}
    rest = {}
    for key, value in policy.items():
        if key == "bounds specs":
            specs["minmax"] = [{k.split("/", 1)[0]: v for k, v in pair.items()
                                if len(k.split("/", 1)) == 2} for pair in value]
        elif key == "std":
            specs[key] = value
        else:
            rest[key] = value
    return rest, specs

    def test_list_tags(self):
        self.cfg.cluster.tags = ["b", "a"]
        r = self.run_cli("list-tags")
        self.assertEqual(r.out, "a\nb\n")
        self.assertEqual(self.fake.calls, [("QueryTags", ("cluster", ""))])

    def test_not_part_of_a_cluster(self):
        r = self.run_cli("getmaster", luxi=False)  # the real client, no socket
        self.assertEqual(r.code, constants.EXIT_NOTCLUSTER)
        self.assertIn("is not part of a cluster", r.err)

    def test_master_daemon_not_running(self):
        self.assertEqual(self.run_cli(*INIT, "cluster.test").code, 0)
        r = self.run_cli("info", luxi=False)
        self.assertEqual(r.code, constants.EXIT_FAILURE)
        self.assertIn("Cannot communicate with the master daemon", r.err)
        self.assertIn("is ganeti-masterd running", r.err)
        self.assertEqual(r.err.count("Cannot communicate"), 1)

    def test_not_the_master(self):
        self.assertEqual(self.run_cli(*INIT, "cluster.test").code, 0)
        os.chmod(self.paths.ssconf_file("master_node"), 0o644)
        with open(self.paths.ssconf_file("master_node"), "w") as f:
            f.write("node9.test\n")
        r = self.run_cli("info", luxi=False)
        self.assertEqual(r.code, constants.EXIT_NOTMASTER)
        self.assertIn("run the command on node9.test", r.err)


class HelpTest(CliTestCase):
    def test_help_everywhere(self):
        r = self.run_cli("--help")
        self.assertEqual(r.code, 0)
        for name in ("init", "info", "getmaster", "version", "list-tags", "destroy"):
            self.assertIn(name, r.out)
            sub = self.run_cli(name, "--help")
            self.assertEqual(sub.code, 0, name)
            self.assertIn("usage: gnt-cluster " + name, sub.out)

    def test_no_command(self):
        r = self.run_cli()
        self.assertEqual(r.code, constants.EXIT_FAILURE)
        self.assertIn("usage:", r.out)

    def test_unknown_command_and_option(self):
        for argv in (["frobnicate"], ["info", "--nope"], ["version", "extra"]):
            r = self.run_cli(*argv)
            self.assertEqual(r.code, constants.EXIT_FAILURE, argv)
            self.assertTrue(r.err.startswith("Usage error: "), r.err)
            self.assertEqual(r.out, "")

    def test_version_flag(self):
        r = self.run_cli("--version")
        self.assertEqual(r.code, 0)
        self.assertIn("3.0.2", r.out)


INIT = ["init", "--primary-ip", "127.0.1.1", "--master-ip", "127.0.1.254",
        "--enabled-hypervisors", "fake", "--enabled-disk-templates", "diskless,file"]


class InitTest(CliTestCase):
    def listing(self):
        result = []
        for base, dirs, files in os.walk(self.paths.root):
            result += [os.path.join(base, n) for n in dirs + files]
        return sorted(result)

    def test_init_creates_the_cluster(self):
        r = self.run_cli(*INIT, "-C", "5", "--uid-pool", "1000-1009,2000", "-H",
                         "fake:migration_mode=non-live", "-B", "maxmem=1G,vcpus=2",
                         "-N", "link=br7", "cluster.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("RAPI user 'gnt-admin' (write access), password: ", r.out)
        password = r.out.split("password: ")[1].split()[0]
        cfg = configmod.load_file(self.paths.config_file)
        cl = cfg.cluster
        self.assertEqual((cl.cluster_name, cfg.master.name, cfg.master.primary_ip),
                         ("cluster.test", self.paths.hostname, "127.0.1.1"))
        self.assertEqual(cl.candidate_pool_size, 5)
        self.assertEqual(cl.uid_pool, [[1000, 1009], [2000, 2000]])
        self.assertEqual(cl.hvparams["fake"]["migration_mode"], "non-live")
        self.assertEqual(cl.beparams["default"]["maxmem"], 1024)
        self.assertEqual(cl.beparams["default"]["vcpus"], 2)
        self.assertEqual(cl.nicparams["default"]["link"], "br7")
        self.assertTrue(cfg.master.master_candidate)
        self.assertEqual([g.name for g in cfg.nodegroups.values()], ["default"])
        # keys, certificates, users file, queue, ssconf
        mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)  # noqa: E731
        self.assertEqual(mode(self.paths.hmac_key), 0o400)
        with open(self.paths.hmac_key) as f:
            key = f.read()
        self.assertTrue(key.endswith("\n") and len(key.strip()) >= 40)
        with open(self.paths.server_pem, "rb") as f:
            pem = f.read()
        self.assertIn(b"PRIVATE KEY", pem)
        crypto.load_certificate(pem)
        with open(self.paths.rapi_users) as f:
            users = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
        self.assertEqual(users, [["gnt-admin", "{HA1}" + crypto.rapi_ha1("gnt-admin", password),
                                  "write"]])
        self.assertNotIn(password, open(self.paths.rapi_users).read())
        with open(self.paths.queue_serial) as f:
            self.assertEqual(f.read(), "0\n")
        with open(self.paths.queue_version) as f:
            self.assertEqual(f.read(), "1\n")
        self.assertEqual(ssconf.read(self.paths, "master_node"), self.paths.hostname)
        self.assertEqual(ssconf.read(self.paths, "master_candidates_ips"), "127.0.1.1")
        self.assertEqual(ssconf.read(self.paths, "uid_pool"), "1000-1009\n2000")
        self.assertEqual(ssconf.read(self.paths, "node_primary_ips"),
                         f"{self.paths.hostname} 127.0.1.1")
        self.assertEqual(mode(self.paths.ssconf_file("cluster_name")), 0o444)

    def test_init_refuses_initialised_node(self):
        self.assertEqual(self.run_cli(*INIT, "cluster.test").code, 0)
        with open(self.paths.config_file) as f:
            before = f.read()
        r = self.run_cli(*INIT, "other.test")
        self.assertEqual(r.code, constants.EXIT_FAILURE)
        self.assertIn("already belongs to a cluster", r.err)
        with open(self.paths.config_file) as f:
            self.assertEqual(f.read(), before)

    def test_bad_options_fail_cleanly(self):
        cases = [
            (["--uid-pool", "10-5"], "Lower user-id range boundary value (10) is larger"),
            (["--uid-pool", "1-2-3"], "Invalid user-id range"),
            (["-C", "0"], "candidate-pool-size"),
            (["--mac-prefix", "zz:00:00"], "mac-prefix"),
            (["-H", "kvm:acpi=true"], "not in --enabled-hypervisors"),
            (["-H", "fake:bogus=1"], "unknown parameter 'bogus'"),
            (["-B", "maxmem=lots"], "Invalid size"),
            (["-B", "vcpus=two"], "must be an integer"),
            (["-N", "mode=tunnel"], "invalid NIC mode"),
            (["--enabled-hypervisors", "vmware"], "not supported"),
            (["--enabled-disk-templates", "floppy"], "not known"),
            (["--file-storage-dir", "relative/dir"], "absolute path"),
            (["--primary-ip", "1.2.3"], "not an IP address"),
            (["-C", "many"], "invalid int value"),
        ]
        for extra, needle in cases:
            r = self.run_cli(*INIT, *extra, "cluster.test")
            self.assertEqual(r.code, constants.EXIT_FAILURE, extra)
            self.assertIn(needle, r.err, extra)
            self.assertEqual(len(r.err.strip().splitlines()), 1, r.err)  # one line
            self.assertEqual(self.listing(), [], extra)  # nothing half-made
        bad_name = self.run_cli(*INIT, "bad_name!")
        self.assertIn("not a valid host name", bad_name.err)
        self.assertEqual(self.listing(), [])

    def test_failure_while_writing_rolls_back(self):
        # A directory where a file must go makes the write fail part-way.
        os.makedirs(os.path.join(self.paths.data_dir, "queue", "serial"))
        os.chmod(self.paths.data_dir, 0o700)
        r = self.run_cli(*INIT, "cluster.test")
        self.assertEqual(r.code, constants.EXIT_FAILURE)
        leftovers = [p for p in self.listing() if os.path.isfile(p)]
        self.assertEqual(leftovers, [])
        self.assertFalse(ssconf.is_initialised(self.paths))
        self.assertEqual(stat.S_IMODE(os.stat(self.paths.data_dir).st_mode), 0o700)


class DestroyTest(CliTestCase):
    def test_needs_confirmation(self):
        self.assertEqual(self.run_cli(*INIT, "cluster.test").code, 0)
        r = self.run_cli("destroy")
        self.assertEqual(r.code, constants.EXIT_FAILURE)
        self.assertIn("--yes-do-it", r.err)
        self.assertTrue(os.path.exists(self.paths.config_file))

    def test_destroy(self):
        self.assertEqual(self.run_cli(*INIT, "cluster.test").code, 0)
        r = self.run_cli("destroy", "--yes-do-it")
        self.assertEqual(r.code, 0, r.err)
        self.assertFalse(ssconf.is_initialised(self.paths))
        self.assertFalse(os.path.exists(self.paths.hmac_key))
        # and the node can be initialised again
        self.assertEqual(self.run_cli(*INIT, "cluster.test").code, 0)

    def test_destroy_with_config_missing(self):
        self.assertEqual(self.run_cli(*INIT, "cluster.test").code, 0)
        os.unlink(self.paths.config_file)
        r = self.run_cli("destroy", "--yes-do-it")
        self.assertEqual(r.code, 0, r.err)
        self.assertFalse(ssconf.is_initialised(self.paths))

    def test_destroy_uninitialised(self):
        r = self.run_cli("destroy", "--yes-do-it")
        self.assertEqual(r.code, constants.EXIT_NOTCLUSTER)
