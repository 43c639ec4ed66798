"""Instance queries on real daemons, asked by Debian's real Ganeti 3.0 clients.

A two-node virtual cluster gets instances written into its config before it
starts (the logical units that create instances are tested with them): a file
instance running on node 1, a diskless one stopped on node 2, a plain one that
should run but does not, and an offline one.  Node 1's fake hypervisor is told
that the first runs.  Then Debian's ``gnt-instance list`` (default and ``-o``
fields, ``--no-headers``, names and filters) and ``list-fields``, htools over
LUXI (``-L``) and over RAPI (``-m``), and Ganeti's RAPI client
(``GetInstances(bulk=True)``, ``GetInstance``) must show them.
"""

from __future__ import annotations

import json
import os
import shutil
import unittest

from ganeti.core import config as configmod
from ganeti.core import configjournal, fileutil
from ganeti.core import constants as c
from ganeti.noded.hypervisors import fake
from tests.fakes.instances import add_instance
from tests.integration.clustercase import ClusterCase, VirtualCluster, needs_debian_tool
from tests.integration.helpers import node_env, run
from tests.integration.test_rapi_compat import RAPI_CLIENT, SYSTEM_PYTHON, call, run_driver
from tests.integration.test_watcher import DEBIAN_WATCHER, DEBIAN_WATCHER_NO_DAEMONS

DEBIAN = "/usr/share/ganeti/3.0"
HTOOLS = "/usr/lib/ganeti/3.0/usr/bin"
DOMAIN = "vcluster.test"
WEB = f"web1.{DOMAIN}"
DB = f"db1.{DOMAIN}"
SPARE = f"spare1.{DOMAIN}"
OLD = f"old1.{DOMAIN}"


def write_instances(cluster: VirtualCluster) -> None:
    """Add the instances to the master's config (the other candidates get it whole)."""
    path = os.path.join(cluster.root, "var/lib/ganeti/config.data")
    cfg = configmod.load_file(path)
    node1, node2 = cluster.nodes
    add_instance(cfg, WEB, node1, c.DT_FILE, (1024, 256),
                 beparams={"maxmem": 256, "vcpus": 2}, tags=["www"],
                 ips=("192.0.2.10",))
    add_instance(cfg, SPARE, node2, admin_state=c.ADMINST_DOWN, nics=2)
    add_instance(cfg, DB, node1, c.DT_PLAIN, (2048,))
    add_instance(cfg, OLD, node2, admin_state=c.ADMINST_OFFLINE, nics=0)
    problems = configmod.verify(cfg)
    assert problems == [], problems
    cfg.serial_no += 1000
    fileutil.atomic_write(path, configmod.dump(cfg).encode(), mode=0o640)
    journal = configjournal.journal_path(path)
    if os.path.exists(journal):
        os.unlink(journal)


class InstanceQueriesTest(ClusterCase):
    PREFIX = "ganeti-instq-"
    NODES = 2
    REQUIRES = (needs_debian_tool("gnt-instance"),)

    @classmethod
    def prepareCluster(cls, cluster):
        write_instances(cluster)
        run_dir = os.path.join(cluster.root, "var/run/ganeti")
        fake.mark_running(run_dir, WEB, 256, 2)

    def gnt(self, *argv, check=True):
        env = node_env(self.cluster.dir, self.cluster.master)
        result = run([os.path.join(DEBIAN, argv[0]), *argv[1:]], env=env, check=False,
                     timeout=120)
        if check:
            self.assertEqual(result.returncode, 0, result.stderr + result.stdout)
        return result

    def htool(self, *argv, codes=(0,)):
        env = node_env(self.cluster.dir, self.cluster.master)
        result = run([os.path.join(HTOOLS, argv[0]), *argv[1:]], env=env, check=False,
                     timeout=120)
        self.assertIn(result.returncode, codes, result.stderr + result.stdout)
        return result.stdout

    def table(self, *argv):
        """``gnt-instance list --no-headers --separator=|`` rows as lists."""
        out = self.gnt("gnt-instance", "list", "--no-headers", "--separator=|", *argv).stdout
        return [line.split("|") for line in out.splitlines()]

    def test_list_default(self):
        out = self.gnt("gnt-instance", "list").stdout.splitlines()
        self.assertEqual(out[0].split(), ["Instance", "Hypervisor", "OS", "Primary_node",
                                          "Status", "Memory"])
        rows = {line.split()[0]: line.split() for line in out[1:]}
        self.assertEqual(sorted(rows), [DB, OLD, SPARE, WEB])
        self.assertEqual(rows[WEB][1:], ["fake", "busybox", self.cluster.nodes[0], "running",
                                         "256M"])
        self.assertEqual(rows[SPARE][4:], ["ADMIN_down", "-"])
        self.assertEqual(rows[DB][4:], ["ERROR_down", "-"])
        self.assertEqual(rows[OLD][4:], ["ADMIN_offline", "-"])

    def test_list_fields_names_and_filters(self):
        self.assertEqual(self.table("-o", "name,disk_template,disk.sizes,nic.count,be/maxmem,"
                                    "tags,oper_vcpus,nic.ip/0", WEB, SPARE), [
            [WEB, "file", "1024,256", "1", "256", "www", "2", "192.0.2.10"],
            [SPARE, "diskless", "", "2", "128", "", "-", "-"]])
        self.assertEqual(self.table("-o", "name", "--filter", "admin_state == \"up\""),
                         [[DB], [WEB]])
        self.assertEqual(self.table("-o", "name,status", "--filter", "status == \"running\""),
                         [[WEB, "running"]])
        self.assertEqual(self.table("-o", "name,pnode", "--filter",
                                    f"pnode == \"{self.cluster.nodes[1]}\""),
                         [[OLD, self.cluster.nodes[1]], [SPARE, self.cluster.nodes[1]]])
        unknown = self.gnt("gnt-instance", "list", "nope.example", check=False)
        self.assertNotEqual(unknown.returncode, 0)
        self.assertIn("nope.example", unknown.stderr + unknown.stdout)

    def test_list_fields(self):
        out = self.gnt("gnt-instance", "list-fields", "name", "status", "oper_ram",
                       "sda_size").stdout.splitlines()
        self.assertEqual([line.split()[:2] for line in out], [
            ["Name", "Type"], ["name", "Text"], ["status", "Text"],
            ["oper_ram", "Storage"], ["sda_size", "Storage"]])
        every = self.gnt("gnt-instance", "list-fields").stdout
        self.assertIn("nic.network.name/7", every)

    def test_htools_over_luxi(self):
        info = self.htool("hinfo", "-L")
        self.assertIn("4 instances", info.replace("\n", " "))
        self.htool("hbal", "-L")
        self.htool("hspace", "-L")
        # hcheck exits 1 when the cluster needs rebalancing (the plain instance cannot move)
        check = self.htool("hcheck", "-L", codes=(0, 1))
        self.assertIn("Instances having the primary node offline: 0", check)

    def test_z_debian_watcher_reads_the_instances(self):
        """Ganeti 3.0's watcher (daemons not started, no WConfD probe) queries each
        group's instances and writes their status, as it does on a real cluster.

        Last (trial runs tests by name): the watcher may submit a start of the
        instance that should run, which would change what the other tests see."""
        if not os.path.exists(DEBIAN_WATCHER):
            raise unittest.SkipTest("Debian's ganeti-watcher is not installed")
        os.makedirs(os.path.join(self.cluster.root, "var/lock"), exist_ok=True)
        env = node_env(self.cluster.dir, self.cluster.master)
        # --no-wait-children is not in 3.0; -d logs what it does on stderr
        result = run(["/usr/bin/python3", "-c", DEBIAN_WATCHER_NO_DAEMONS, "-d",
                      "--rapi-ip", self.cluster.ips[0]], env=env, check=False, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("with 4 instances", result.stderr)
        status_file = os.path.join(self.cluster.root, "var/run/ganeti/instance-status")
        with open(status_file, encoding="utf-8") as f:
            status = dict(line.split() for line in f.read().splitlines())
        self.assertEqual(status, {WEB: "running", SPARE: "ADMIN_down", DB: "ERROR_down",
                                  OLD: "ADMIN_offline"})

    def test_rapi_client_and_htools_over_rapi(self):
        if not (os.path.exists(SYSTEM_PYTHON) and os.path.exists(RAPI_CLIENT)):
            raise unittest.SkipTest("Debian's python3-ganeti-rapi is not installed")
        with open(os.path.join(self.cluster.dir, "rapi-credentials"), encoding="utf-8") as f:
            user, password = f.read().split()
        tmp = self.mktemp()
        os.makedirs(tmp)
        driver = os.path.join(tmp, "driver.py")
        from tests.integration.test_rapi_compat import DRIVER
        with open(driver, "w", encoding="utf-8") as f:
            f.write(DRIVER)
        opts = {"host": self.cluster.ips[0], "port": 5080, "user": user,
                "password": password}
        names, bulk, web, missing = run_driver(driver, opts, [
            call("GetInstances"), call("GetInstances", bulk=True), call("GetInstance", WEB),
            call("GetInstance", "nope.example")])
        self.assertEqual(names, [DB, OLD, SPARE, WEB])
        self.assertEqual({i["name"]: i["status"] for i in bulk},
                         {WEB: "running", SPARE: "ADMIN_down", DB: "ERROR_down",
                          OLD: "ADMIN_offline"})
        self.assertEqual((web["oper_ram"], web["beparams"]["memory"], web["disk.sizes"]),
                         (256, 256, [1024, 256]))
        self.assertEqual(missing["error"]["code"], 404)
        url = f"https://{self.cluster.ips[0]}:5080"
        for tool in ("hinfo", "hbal", "hspace"):
            self.htool(tool, "-m", url)
        shutil.rmtree(tmp, ignore_errors=True)
        self.assertTrue(json.dumps(bulk))
