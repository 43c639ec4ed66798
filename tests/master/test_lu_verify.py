"""Cluster verify on a whole master daemon with in-process node daemons.

The cluster is set up as ``gnt-cluster init`` leaves it (certificates, the
candidate certificate map, the file storage directory), so a healthy
cluster verifies clean; then each test breaks one thing and checks the
finding Ganeti reports for it, by error code.
"""

from __future__ import annotations

import datetime
import os

from twisted.trial.unittest import TestCase

from ganeti.core import constants as c
from ganeti.core import crypto, fileutil
from tests.fakes.configs import small_config
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet

MASTER = "node1.test"
DAY = 24 * 3600


def write(path: str, data: bytes | str, mode: int = 0o640) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fileutil.atomic_write(path, data, mode=mode, durable=False)


class VerifyCase(TestCase):
    """A master and two more nodes, all candidates, healthy."""

    def setUp(self) -> None:
        tmp = os.path.abspath(self.mktemp())
        os.makedirs(tmp)
        self.storage = os.path.join(tmp, "file-storage")
        os.makedirs(self.storage)
        self.pem = crypto.generate_self_signed("cluster.test")
        cfg = small_config()
        cfg.cluster.file_storage_dir = self.storage
        cfg.cluster.candidate_certs = {cfg.cluster.master_node:
                                       crypto.certificate_digest(self.pem)}
        self.net = FakeNodeNet(os.path.join(tmp, "nodes"), None)
        self.master = InProcessMaster(tmp, cfg, rpc=self.net)
        self.addCleanup(self.master.stop)
        self.net.clock = self.master.reactor
        mp = self.master.paths
        self.net.add(MASTER, "127.0.1.1", paths=mp)
        write(mp.server_pem, self.pem, 0o440)
        write(mp.rapi_pem, crypto.generate_self_signed("cluster.test"), 0o440)
        write(mp.hmac_key, "secret\n", 0o400)
        write(mp.cluster_domain_secret, "domain\n", 0o400)
        write(mp.rapi_users, "admin {HA1}x write\n")
        self.client = self.master.client()
        for k in (2, 3):
            paths = self.net.add(f"node{k}.test", f"127.0.1.{k}")
            write(paths.server_pem, self.pem, 0o440)
            self.ok({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                     "primary_ip": f"127.0.1.{k}"})
        for paths in self.net.nodes.values():  # the nodes allow the cluster's directory
            with open(os.path.join(paths.conf_dir, "file-storage-paths"), "a") as f:
                f.write(f"{self.storage}\n")
        self.ok({"OP_ID": "OP_CLUSTER_REDIST_CONF"})

    def run_job(self, *ops):
        return self.master.finish(self.master.submit(*ops))

    def ok(self, *ops):
        status, results, log = self.run_job(*ops)
        self.assertEqual(status, "success", f"{results} {log}")
        return results[-1]

    def verify(self, **params):
        """(results of the verify jobs, their log lines, the jobs' inputs)."""
        result = self.ok({"OP_ID": "OP_CLUSTER_VERIFY", **params})
        outcomes, lines, inputs = [], [], []
        for ok, job_id in result["jobs"]:
            self.assertTrue(ok)
            status, results, log = self.master.finish(job_id)
            self.assertEqual(status, "success", f"{results} {log}")
            outcomes.append(results[0])
            lines += log
            inputs.append(self.client.call("QueryJobs", [job_id], ["ops"])[0][0][0])
        return outcomes, lines, inputs

    def findings(self, lines):
        return [line for line in lines if line.startswith("  - ")]


class HealthyTest(VerifyCase):
    def test_healthy_cluster_is_clean_with_ganetis_steps(self):
        outcomes, lines, inputs = self.verify()
        self.assertEqual(outcomes, [True, True], lines)
        self.assertEqual(lines, [
            "* Verifying cluster config", "* Verifying cluster certificate files",
            "* Verifying hypervisor parameters",
            "* Verifying all nodes belong to an existing group",
            "* Verifying group 'default'", "* Gathering data (3 nodes)",
            "* Gathering information about nodes (3 nodes)",
            "* Gathering disk information (3 nodes)",
            "* Verifying configuration file consistency", "* Verifying node status",
            "* Verifying instance status", "* Verifying orphan volumes",
            "* Verifying N+1 Memory redundancy", "* Other Notes", "* Hooks Results"])
        # as Ganeti: the group job names the group by UUID, depends on the config job
        group = inputs[1]
        self.assertEqual(group["group_name"], next(iter(self.master.config.nodegroups)))
        self.assertEqual(group["comment"], "Submitted by OP_CLUSTER_VERIFY")
        self.assertEqual(len(group["depends"]), 1)

    def test_skip_nplusone_and_verbose(self):
        _, lines, _ = self.verify(skip_checks=[c.VERIFY_NPLUSONE_MEM], verbose=True)
        self.assertNotIn("* Verifying N+1 Memory redundancy", lines)
        self.assertIn("* Verifying node node1.test (master)", lines)
        self.assertIn("* Verifying node node2.test (master candidate)", lines)

    def test_simulated_errors_fail_both_jobs(self):
        outcomes, lines, _ = self.verify(debug_simulate_errors=True, error_codes=True)
        self.assertEqual(outcomes, [False, False])
        codes = {line.split(":")[1] for line in self.findings(lines)}
        self.assertTrue({"ECLUSTERCFG", "ECLUSTERCERT", "ENODETIME", "ENODESETUP",
                         "ECLUSTERFILECHECK", "ENODERPC"} <= codes, codes)

    def test_one_group(self):
        result = self.ok({"OP_ID": "OP_CLUSTER_VERIFY", "group_name": "default"})
        self.assertEqual(len(result["jobs"]), 1)  # no config job, as Ganeti


class FaultTest(VerifyCase):
    def assert_finding(self, lines, code, *words, level="ERROR"):
        hits = [line for line in self.findings(lines)
                if line.startswith(f"  - {level}:{code}:") and all(w in line for w in words)]
        self.assertTrue(hits, f"no {level} {code} with {words} in {self.findings(lines)}")

    def test_node_down_is_enoderpc_and_filecheck_ignores_it(self):
        self.net.down.add("node3.test")
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes, [True, False])
        self.assert_finding(lines, "ENODERPC", "node:node3.test:while contacting node")
        self.assert_finding(lines, "ENODEFILECHECK", "node3.test")
        self.assert_finding(lines, "ENODENET", "node1.test", "'node3.test'")

    def test_wrong_file_on_a_node(self):
        write(self.net.paths("node2.test").hmac_key, "other\n", 0o400)
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes, [True, False])
        self.assert_finding(lines, "ECLUSTERFILECHECK", "cluster:None:File /var/lib/ganeti/"
                            "hmac.key found with 2 different checksums (variant 1 on")

    def test_vnc_password_file_is_compared_across_nodes(self):
        password = "/etc/ganeti/vnc-cluster-password"
        for node in ("node1.test", "node2.test", "node3.test"):
            write(self.net.paths(node).root + password, "secret\n", 0o400)
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "enabled_hypervisors": ["fake", "kvm"],
                 "hvparams": {"kvm": {"vnc_password_file": password}}})
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertFalse([line for line in self.findings(lines) if password in line], lines)
        write(self.net.paths("node2.test").root + password, "changed\n", 0o400)
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes, [True, False])
        self.assert_finding(lines, "ECLUSTERFILECHECK", f"File {password} found with 2 "
                            "different checksums")

    def test_missing_ssconf_file_and_ignore_errors(self):
        os.unlink(self.net.paths("node3.test").ssconf_file("master_node"))
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assert_finding(lines, "ECLUSTERFILECHECK",
                            "ssconf_master_node is missing from node(s) node3.test")
        outcomes, lines, _ = self.verify(ignore_errors=["ECLUSTERFILECHECK"])
        self.assertEqual(outcomes, [True, True])
        self.assertIn("  - WARNING: cluster : File /var/lib/ganeti/ssconf_master_node is "
                      "missing from node(s) node3.test", lines)

    def test_config_on_a_regular_node(self):
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 2})
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                 "master_candidate": False, "auto_promote": False})
        # the demoted node dropped config.data and keeps the files every node has
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes, [True, True], self.findings(lines))
        stray = self.net.paths("node3.test").config_file
        with open(self.master.paths.config_file, "rb") as f:
            write(stray, f.read(), 0o640)
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assert_finding(lines, "ECLUSTERFILECHECK",
                            "config.data should not exist on node(s) node3.test")

    def cert(self, days, ago=0):
        now = datetime.datetime.fromtimestamp(self.master.reactor.seconds() - ago * DAY,
                                              datetime.UTC)
        return crypto.generate_self_signed("x", validity_days=days, now=now)

    def test_expired_and_missing_certificates(self):
        mp = self.master.paths
        write(mp.rapi_pem, self.cert(3), 0o440)
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes[0], False)
        self.assert_finding(lines, "ECLUSTERCERT", "rapi.pem: Certificate expires in about")
        os.unlink(mp.rapi_pem)
        _, lines, _ = self.verify(error_codes=True)
        self.assert_finding(lines, "ECLUSTERCERT", "Failed to load X509 certificate")
        write(mp.rapi_pem, self.cert(20), 0o440)
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes[0], True)  # 20 days left: only a warning
        self.assert_finding(lines, "ECLUSTERCERT", "expires in about", level="WARNING")
        write(mp.rapi_pem, self.cert(1, ago=2), 0o440)
        _, lines, _ = self.verify(error_codes=True)
        self.assert_finding(lines, "ECLUSTERCERT", "rapi.pem: Certificate is expired")

    def test_node_certificate_differs(self):
        write(self.net.paths("node2.test").server_pem,
              crypto.generate_self_signed("cluster.test"), 0o440)
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes[1], False)
        node2 = self.master.config.node_by_name("node2.test").uuid
        self.assert_finding(lines, "ECLUSTERCLIENTCERT", f"node '{node2}' does not match")
        self.assert_finding(lines, "ECLUSTERFILECHECK", "server.pem found with 2 different")

    def test_clock_skew(self):
        handler = self.net.handlers["node_verify"]

        def skewed(ctx, checks, name):
            d = handler(ctx, checks, name)
            if ctx.paths.hostname == "node2.test":
                d.addCallback(lambda r: {**r, "time": r["time"] + 400})
            return d
        self.net.handlers["node_verify"] = skewed
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes, [True, False])
        self.assert_finding(lines, "ENODETIME", "node2.test:Node time diverges by at least "
                            "400.0s from master node time")

    def test_node_setup_and_version(self):
        self.net.setup_problems["node2.test"] = ["The procfs filesystem is broken"]
        handler = self.net.handlers["node_verify"]

        def old(ctx, checks, name):
            d = handler(ctx, checks, name)
            if ctx.paths.hostname == "node3.test":
                d.addCallback(lambda r: {**r, "version": [c.PROTOCOL_VERSION, "2.16.0"]})
            return d
        self.net.handlers["node_verify"] = old
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assert_finding(lines, "ENODESETUP", "node2.test:node setup error: The procfs")
        self.assert_finding(lines, "ENODEVERSION", "software version mismatch", level="WARNING")

    def test_file_storage_dir_missing(self):
        os.rmdir(self.storage)
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes[1], False)
        self.assert_finding(lines, "ENODEFILESTORAGEPATHUNUSABLE",
                            "The configured file storage path is unusable")

    def test_file_storage_dir_the_nodes_do_not_allow(self):
        # Ganeti's QA (TestClusterModifyFileStorageDir) sets '/boot/' and expects verify
        # to fail: each node judges the directory against its file-storage-paths.
        for directory, why in (
                ("/boot/", "Path '/boot/' uses a forbidden prefix"),
                (self.storage + "-other", f"Path '{self.storage}-other' is not acceptable "
                                          "for file storage")):
            self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "file_storage_dir": directory})
            outcomes, lines, _ = self.verify(error_codes=True)
            self.assertEqual(outcomes[1], False)
            for node in (MASTER, "node2.test", "node3.test"):
                self.assertIn(f"  - ERROR:ENODEFILESTORAGEPATHUNUSABLE:node:{node}:The "
                              f"configured file storage path is unusable: {why}",
                              self.findings(lines))
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "file_storage_dir": self.storage})
        outcomes, lines, _ = self.verify()
        self.assertEqual((outcomes, self.findings(lines)), ([True, True], []))

    def test_offline_node_is_not_contacted(self):
        self.ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test", "offline": True,
                 "auto_promote": True})
        self.net.contacted.clear()
        outcomes, lines, _ = self.verify()
        self.assertNotIn(("node3.test", "node_verify"), self.net.contacted)
        self.assertIn("  - NOTICE: 1 offline node(s) found.", lines)
        self.assertEqual(outcomes, [True, True], self.findings(lines))

    def test_bad_hvparams_and_candidate_pool(self):
        cfg = self.master.config
        cfg.cluster.hvparams[c.HT_FAKE] = {"migration_mode": "teleport"}
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes[0], False)
        self.assert_finding(lines, "ECLUSTERCFG", "hypervisor cluster parameters syntax check "
                            "(source fake): Invalid migration mode 'teleport'")

    def test_hvparams_failing_the_hypervisors_syntax_check(self):
        cfg = self.master.config
        cfg.cluster.enabled_hypervisors = [c.HT_FAKE, c.HT_KVM]
        cfg.cluster.hvparams[c.HT_KVM] = {"boot_order": "usb"}
        outcomes, lines, _ = self.verify(error_codes=True)
        self.assertEqual(outcomes[0], False)
        self.assert_finding(lines, "ECLUSTERCFG", "hypervisor cluster parameters syntax check "
                            "(source kvm): Parameter 'boot_order' fails syntax check")


class VerifyDisksTest(VerifyCase):
    def test_no_instances_no_jobs(self):
        self.assertEqual(self.ok({"OP_ID": "OP_CLUSTER_VERIFY_DISKS"}), {"jobs": []})

    def test_group_verify_disks_is_empty(self):
        self.assertEqual(self.ok({"OP_ID": "OP_GROUP_VERIFY_DISKS", "group_name": "default"}),
                         [{}, [], {}])

    def test_unknown_group(self):
        status, results, _ = self.run_job({"OP_ID": "OP_CLUSTER_VERIFY_DISKS",
                                           "group_name": "nosuch"})
        self.assertEqual(status, "error")
        self.assertEqual(results[-1][1][1], "unknown_entity")
