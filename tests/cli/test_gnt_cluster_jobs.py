"""gnt-cluster commands that submit jobs or use the queue, against an in-process masterd."""

import argparse
import io

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_cluster, gnt_cluster_modify
from ganeti.cli.framework import UsageError, build_parser
from ganeti.core.errors import OpPrereqError
from tests.fakes.clirun import MasterCliTestCase


def parse_modify(*argv):
    parser = build_parser("gnt-cluster", "", gnt_cluster.COMMANDS, io.StringIO())
    return parser.parse_args(["modify", *argv])


class ModifyOpcodeTest(SynchronousTestCase):
    def test_every_option(self):
        opts = parse_modify(
            "-C", "5", "--max-running-jobs", "7", "--max-tracked-jobs", "9",
            "-H", "fake:migration_mode=non-live", "-H", "kvm:acpi=false",
            "-B", "vcpus=2,maxmem=1G", "-N", "mode=routed,link=br1",
            "-D", "drbd:resync-rate=2048", "--uid-pool", "2000,1000-1009",
            "--add-uids", "3000", "--remove-uids", "1000-1009", "-I", "hail",
            "--ipolicy-vcpu-ratio", "2.5", "--ipolicy-spindle-ratio", "8",
            "--ipolicy-disk-templates", "plain,drbd")
        self.assertEqual(gnt_cluster_modify.modify_opcode(opts), {
            "OP_ID": "OP_CLUSTER_SET_PARAMS",
            "candidate_pool_size": 5, "max_running_jobs": 7, "max_tracked_jobs": 9,
            "hvparams": {"fake": {"migration_mode": "non-live"}, "kvm": {"acpi": "false"}},
            "beparams": {"vcpus": "2", "maxmem": "1G"},
            "nicparams": {"mode": "routed", "link": "br1"},
            "diskparams": {"drbd": {"resync-rate": "2048"}},
            "uid_pool": [[1000, 1009], [2000, 2000]], "add_uids": [[3000, 3000]],
            "remove_uids": [[1000, 1009]], "default_iallocator": "hail",
            "ipolicy": {"vcpu-ratio": 2.5, "spindle-ratio": 8.0,
                        "disk-templates": ["plain", "drbd"]},
        })

    def test_nothing_given(self):
        self.assertEqual(gnt_cluster_modify.modify_opcode(parse_modify()),
                         {"OP_ID": "OP_CLUSTER_SET_PARAMS"})

    def test_empty_uid_pool_clears_it(self):
        op = gnt_cluster_modify.modify_opcode(parse_modify("--uid-pool", ""))
        self.assertEqual(op["uid_pool"], [])

    def test_parse_errors(self):
        for argv in (["-H", "novalue"], ["-D", ":x=1"], ["-C", "many"]):
            with self.assertRaises(UsageError, msg=argv):
                gnt_cluster_modify.modify_opcode(parse_modify(*argv))
        with self.assertRaises(OpPrereqError):
            gnt_cluster_modify.modify_opcode(parse_modify("--uid-pool", "1-2-3"))


class ClusterJobsTestCase(MasterCliTestCase):
    def cluster(self, *argv):
        return self.run_tool(gnt_cluster, *argv)

    def last_job_op(self):
        jobs = self.master.client().call("QueryJobs", None, ["ops"])
        return jobs[-1][0][0]


class ModifyTest(ClusterJobsTestCase):
    def test_modify_changes_the_cluster(self):
        r = self.cluster("modify", "-C", "5", "--max-running-jobs", "3", "--uid-pool",
                         "1000-1009,2000", "--ipolicy-vcpu-ratio", "2")
        self.assertEqual(r.code, 0, r.err)
        cl = self.master.config.cluster
        self.assertEqual((cl.candidate_pool_size, cl.max_running_jobs), (5, 3))
        self.assertEqual([list(r) for r in cl.uid_pool], [[1000, 1009], [2000, 2000]])
        self.assertEqual(cl.ipolicy["vcpu-ratio"], 2.0)
        self.assertEqual(r.out, "")  # Ganeti prints nothing for these changes
        op = self.last_job_op()
        self.assertEqual(op["reason"][0][:2], ["gnt:client:gnt-cluster", "modify"])
        self.assertEqual(self.cluster("info").out.count("  candidate pool size: 5\n"), 1)

    def test_no_changes_is_a_usage_error(self):
        r = self.cluster("modify")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Please give at least one of the parameters.\n")
        self.assertEqual(self.master.calls, [])

    def test_dry_run_changes_nothing(self):
        r = self.cluster("modify", "--dry-run", "-C", "4")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.master.config.cluster.candidate_pool_size, 10)
        self.assertTrue(self.last_job_op()["dry_run"])

    def test_submit(self):
        r = self.cluster("modify", "--submit", "--print-jobid", "--priority", "low",
                         "--max-tracked-jobs", "30")
        self.assertEqual((r.code, r.out, r.err), (0, "1\n", "JobID: 1\n"))
        self.assertEqual(self.last_job_op()["priority"], 10)

    def test_failure_from_the_logical_unit(self):
        r = self.cluster("modify", "-B", "vcpus=lots")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Parameter Error: 'vcpus' (value lots) is not a valid "
                                "integer\n")

    def test_refused_at_submission(self):
        r = self.cluster("modify", "-N", "colour=blue")
        self.assertEqual(r.code, 1)
        # as Ganeti's CLI shows luxid's refusal of an ill-typed opcode
        self.assertTrue(r.err.startswith(
            "Unhandled protocol error while talking to the master daemon:\n"
            "Failed to parse request: SubmitJob: Can't parse value for 'nicparams'"), r.err)

    def test_vg_name(self):
        # no lvm-based template enabled: the name is stored without asking the nodes
        r = self.cluster("modify", "--vg-name", "fastvg")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.last_job_op()["vg_name"], "fastvg")
        self.assertEqual(self.master.config.cluster.volume_group_name, "fastvg")
        self.assertIn("  lvm volume group: fastvg\n", self.cluster("info").out)
        r = self.cluster("modify", "-g", "fastvg")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(r.out.endswith(" Cluster LVM configuration already in desired state, "
                                       "not changing\n"), r.out)  # (a timestamped feedback)
        r = self.cluster("modify", "-g", "", "--enabled-disk-templates", "diskless,file,plain")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: "
                                "Cannot unset volume group if lvm-based disk templates are "
                                "or get enabled. (error type: wrong_input)\n")
        self.assertIsNotNone(self.master.config.cluster.volume_group_name)
        r = self.cluster("modify", "-g", "")
        self.assertEqual(r.code, 0, r.err)
        self.assertIsNone(self.master.config.cluster.volume_group_name)

    def test_vg_name_without_lvm_templates_is_pointed_out(self):
        r = self.cluster("modify", "-g", "xenvg", "--enabled-disk-templates", "diskless,file")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "You specified a volume group with --vg-name, but you did "
                                "not enable any of the following lvm-based disk templates: "
                                "drbd, plain\n")
        self.assertEqual(self.master.config.cluster.volume_group_name, "xenvg")

    def test_bad_uid_pool(self):
        # As Ganeti's client: not checked here; the job fails in the logical unit
        before = self.master.config.serial_no
        r = self.cluster("modify", "--add-uids", "9-3")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: "
                                "Lower user-id range boundary value (9) is larger than "
                                "higher boundary value (3) (error type: wrong_input)\n")
        self.assertEqual(self.master.config.serial_no, before)


class QueueTest(ClusterJobsTestCase):
    def test_drain_undrain_info(self):
        self.assertEqual(self.cluster("queue", "info").out, "The drain flag is unset\n")
        r = self.cluster("queue", "drain")
        self.assertEqual((r.code, r.out), (0, ""))
        self.assertEqual(self.cluster("queue", "info").out, "The drain flag is set\n")
        r = self.cluster("add-tags", "a")  # as Ganeti's CLI with its luxid:
        self.assertEqual((r.code, r.err), (1, "Unhandled Ganeti error: Queue drained\n"))
        self.assertEqual(self.cluster("queue", "undrain").code, 0)
        self.assertEqual(self.cluster("queue", "info").out, "The drain flag is unset\n")
        self.assertEqual([m for m in self.methods() if m != "QueryConfigValues"],
                         ["SetDrainFlag", "SubmitJob", "SetDrainFlag"])

    def test_bad_action(self):
        r = self.cluster("queue", "flush")
        self.assertEqual(r.code, 1)
        self.assertIn("invalid choice", r.err)


class TagsTest(ClusterJobsTestCase):
    def test_add_search_remove(self):
        r = self.cluster("add-tags", "web", "db")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.cluster("list-tags").out, "db\nweb\n")
        op = self.last_job_op()
        self.assertEqual((op["OP_ID"], op["kind"], op["tags"]),
                         ("OP_TAGS_SET", "cluster", ["web", "db"]))
        r = self.cluster("search-tags", "^w")
        self.assertEqual((r.code, r.out), (0, "/cluster web\n"))
        r = self.cluster("remove-tags", "web")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.cluster("list-tags").out, "db\n")

    def test_tags_from_a_file(self):
        path = self.mktemp()
        with open(path, "w") as f:
            f.write("one\ntwo\n")
        r = self.cluster("add-tags", "--from", path, "zero")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.master.config.cluster.tags, ["one", "two", "zero"])

    def test_no_tags(self):
        for cmd in ("add-tags", "remove-tags"):
            r = self.cluster(cmd)
            self.assertEqual(r.code, 1)
            self.assertIn("No tags to be", r.err)

    def test_errors(self):
        r = self.cluster("add-tags", "bad tag")
        self.assertEqual(r.code, 1)
        self.assertIn("invalid tag(s) given", r.err)
        r = self.cluster("remove-tags", "absent")
        self.assertIn("Tag(s) 'absent' not found", r.err)
        r = self.cluster("search-tags", "nothing")
        self.assertEqual((r.code, r.out), (1, ""))

    def test_submit_and_priority(self):
        r = self.cluster("add-tags", "--submit", "--priority", "high", "--reason", "ticket 1",
                         "x")
        self.assertEqual((r.code, r.err), (0, "JobID: 1\n"))
        op = self.last_job_op()
        self.assertEqual(op["priority"], -10)
        self.assertEqual([e[:2] for e in op["reason"][:2]],
                         [["gnt:user", "ticket 1"], ["gnt:client:gnt-cluster", "add-tags"]])


class HelpTest(ClusterJobsTestCase):
    def test_help_for_every_command(self):
        r = self.cluster("--help")
        for name in ("modify", "queue", "add-tags", "remove-tags", "search-tags",
                     "list-tags", "info", "init", "destroy"):
            self.assertIn(name, r.out)
            sub = self.cluster(name, "--help")
            self.assertEqual(sub.code, 0, name)
            self.assertIn("usage: gnt-cluster " + name, sub.out)
        self.assertIn("--ipolicy-vcpu-ratio", self.cluster("modify", "--help").out)
        self.assertIn("--print-jobid", self.cluster("add-tags", "--help").out)
        self.assertEqual(self.master.calls, [])


class SetGenericOptionsTest(SynchronousTestCase):
    def test_no_submit_options_on_search(self):
        parser = build_parser("gnt-cluster", "", gnt_cluster.COMMANDS, io.StringIO())
        opts = parser.parse_args(["search-tags", "x"])
        self.assertIsInstance(opts, argparse.Namespace)
        self.assertFalse(hasattr(opts, "submit"))
