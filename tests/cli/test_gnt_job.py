"""gnt-job in process against a whole master daemon on a fake clock (no sockets)."""

import inspect
import time

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_job, jobs, table
from ganeti.core import constants
from ganeti.luxi.client import LuxiClient
from tests.fakes.clirun import MasterCliTestCase, delay_op
from tests.fakes.masterd import START_TIME, DaemonLuxiClient


def ctime(seconds):
    return time.ctime(seconds)


def stamp(seconds, usecs=0):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) + f".{usecs:06d}"


class FakeSignatureTest(SynchronousTestCase):
    def test_daemon_client_matches_the_real_client(self):
        real = {n: m for n, m in inspect.getmembers(LuxiClient, inspect.isfunction)
                if not n.startswith("_")}
        for name, method in real.items():
            fake = getattr(DaemonLuxiClient, name, None)
            self.assertIsNotNone(fake, f"DaemonLuxiClient lacks {name}")
            self.assertEqual(list(inspect.signature(fake).parameters),
                             list(inspect.signature(method).parameters), name)


class JobTestCase(MasterCliTestCase):
    def job(self, *argv):
        return self.run_tool(gnt_job, *argv)

    def finished(self):
        """A job that ran to success (a delay of 0.5 s: Ganeti refuses 0); its id."""
        job_id = self.submit(delay_op(0.5))
        self.advance(0.5)
        return job_id


class ListTest(JobTestCase):
    def setUp(self):
        super().setUp()
        self.finished()                               # 1: success
        self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["bad tag"]})  # 2
        self.submit(delay_op(100))                    # 3: running

    def test_default_fields(self):
        r = self.job("list")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "ID Status  Summary\n"
                                " 1 success TEST_DELAY(0.5)\n"
                                " 2 error   TAGS_SET\n"
                                " 3 running TEST_DELAY(100.0)\n")
        self.assertEqual(self.master.calls[-1],
                         ("Query", ("job", ["id", "status", "summary"], None)))

    def test_no_headers_and_separator(self):
        r = self.job("list", "--no-headers", "--separator=:")
        self.assertEqual(r.out, "1:success:TEST_DELAY(0.5)\n2:error:TAGS_SET\n"
                                "3:running:TEST_DELAY(100.0)\n")

    def test_output_fields_and_plus(self):
        r = self.job("list", "-o", "id,priority")
        self.assertEqual(r.out, "ID Priority\n 1        0\n 2        0\n 3        0\n")
        r = self.job("list", "-o", "+opstart", "3")
        self.assertEqual(r.out, "ID Status  Summary           OpCode_start\n"
                                f" 3 running TEST_DELAY(100.0) ['{stamp(START_TIME, 500000)}']\n")

    def test_status_filters(self):
        self.assertEqual(self.job("list", "--no-headers", "-o", "id", "--running").out, "3\n")
        self.assertEqual(self.job("list", "--no-headers", "-o", "id", "--error").out, "2\n")
        self.assertEqual(self.job("list", "--no-headers", "-o", "id", "--finished").out,
                         "1\n2\n")
        self.assertEqual(self.job("list", "--no-headers", "-o", "id", "--pending").out, "")
        r = self.job("list", "--no-headers", "-o", "id", "--finished", "2", "3")
        self.assertEqual(r.out, "2\n")
        self.assertEqual(self.master.calls[-1][1][2],
                         ["&", ["|", ["==", "id", 2], ["==", "id", 3]],
                          ["|", ["==", "status", "canceled"], ["==", "status", "success"],
                           ["==", "status", "error"]]])

    def ids(self, *argv):
        r = self.job("list", "--no-headers", "-o", "id", *argv)
        self.assertEqual(r.code, 0, r.err)
        return [int(line) for line in r.out.splitlines()]

    def test_filter_expressions(self):
        self.assertEqual(self.ids('status == "success" or id > 2'), [1, 3])
        self.assertEqual(self.master.calls[-1][1][2],
                         ["|", ["==", "status", "success"], [">", "id", 2]])
        self.assertEqual(self.ids("'TAGS_SET' in summary"), [2])
        self.assertEqual(self.ids("status =~ /^(success|error)$/ and not id == 2"), [1])
        # a status option is and-ed to the expression, as in Ganeti
        self.assertEqual(self.ids("--finished", "id >= 2"), [2])
        self.assertEqual(self.master.calls[-1][1][2],
                         ["&", [">=", "id", 2], ["|", ["==", "status", "canceled"],
                                                 ["==", "status", "success"],
                                                 ["==", "status", "error"]]])

    def test_force_filter_option(self):
        self.assertEqual(self.ids("-F", "priority"), [])  # all at priority 0
        self.assertEqual(self.master.calls[-1][1][2], ["?", "priority"])
        self.assertEqual(self.ids("--filter", "id"), [1, 2, 3])
        r = self.job("list", "-F", "1", "2")
        self.assertEqual(r.code, 1)
        self.assertIn("Exactly one argument must be given as a filter", r.err)

    def test_bad_filter_expressions(self):
        calls = len(self.master.calls)
        r = self.job("list", "id > ")
        self.assertEqual(r.code, 1)
        self.assertIn("Invalid query filter at column 6: expected a value (a number or a "
                      "quoted string) after '>', found the end of the filter", r.err)
        r = self.job("list", "-F", "3")
        self.assertEqual(r.code, 1)
        self.assertIn("Invalid query filter at column 2: expected 'in' or 'not in' after "
                      "the value 3", r.err)
        self.assertEqual(len(self.master.calls), calls)
        r = self.job("list", 'id == "one"')
        self.assertEqual(r.code, 1)
        self.assertIn("field 'id' is of kind 'number'", r.err)

    def test_job_ids_are_numbers(self):
        # as in Ganeti, each id is read as an integer; several ids are never an expression
        self.assertEqual(self.ids("+2", "03"), [2, 3])
        self.assertEqual(self.master.calls[-1][1][2], ["|", ["==", "id", 2], ["==", "id", 3]])
        r = self.job("list", "1", "id > 2")
        self.assertEqual(r.code, 1)
        self.assertIn("Invalid job ID passed: 'id > 2'", r.err)

    def test_unknown_field(self):
        r = self.job("list", "-o", "id,bogus")
        self.assertEqual(r.code, table.EXIT_UNKNOWN_FIELD)
        self.assertEqual(r.err, "Warning: Queried for unknown fields bogus\n")
        self.assertEqual(r.out.splitlines()[:2], ["ID bogus", " 1 ??"])

    def test_bad_job_id(self):
        r = self.job("list", "x1")
        self.assertEqual(r.code, 1)
        self.assertIn("Invalid job ID passed: 'x1'", r.err)


class ListFieldsTest(JobTestCase):
    def test_all_fields(self):
        r = self.job("list-fields")
        self.assertEqual(r.code, 0)
        lines = r.out.splitlines()
        self.assertEqual(lines[0].split(), ["Name", "Type", "Title", "Description"])
        self.assertIn("id          Number  ID            Job ID", lines)
        self.assertIn("archived    Boolean Archived      Whether job is archived", lines)
        # Ganeti's fields exactly (its QA compares them): our wait_reason is not listed
        self.assertEqual([line.split()[0] for line in lines[1:]], [
            "archived", "end_ts", "id", "opend", "opexec", "oplog", "oppriority", "opresult",
            "ops", "opstart", "opstatus", "priority", "received_ts", "start_ts", "status",
            "summary"])
        # ... but it is there when named
        r = self.job("list-fields", "--no-headers", "wait_reason")
        self.assertEqual(r.code, 0)
        self.assertTrue(r.out.startswith("wait_reason Text"), r.out)

    def test_selected_and_unknown(self):
        r = self.job("list-fields", "--no-headers", "--separator=|", "status", "nope")
        self.assertEqual(r.code, table.EXIT_UNKNOWN_FIELD)
        self.assertEqual(r.out, "status|Text|Status|Job status\n"
                                "nope|Unknown|nope|Unknown field 'nope'\n")
        self.assertIn("unknown fields nope", r.err)


class InfoTest(JobTestCase):
    def test_info(self):
        jid = self.submit(delay_op(5, repeat=2))
        self.advance(10)
        r = self.job("info", str(jid), "99")
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[:6], [
            "- Job ID: 1",
            "  Status: success",
            f"  Received:         {stamp(START_TIME)}",
            f"  Processing start: {stamp(START_TIME)} (delta 0.000000s)",
            f"  Processing end:   {stamp(START_TIME + 10)} (delta 10.000000s)",
            "  Total processing time: 10.000000 seconds",
        ])
        for line in ("    - Opcode: OP_TEST_DELAY", "      Status: success",
                     f"      Execution start:  {stamp(START_TIME)}",
                     "      Input fields: ", "        duration: 5", "        repeat: 2",
                     "      Result: None", "      Execution log: ",
                     f"        - Time: {stamp(START_TIME + 5)}",
                     "          Content: [2, message,  - INFO: Test delay iteration 1/1]"):
            self.assertIn(line, lines)
        self.assertEqual(lines[-1], "- Job ID 99 not found")

    def test_unfinished_job(self):
        jid = self.submit(delay_op(5))
        r = self.job("info", str(jid))
        self.assertIn("  Processing end:   unknown (None)\n", r.out)
        self.assertIn("  Total processing time: N/A\n", r.out)
        self.assertIn("      Processing end:   N/A\n", r.out)

    def test_failed_opcode_result(self):
        jid = self.submit({"OP_ID": "OP_TAGS_DEL", "kind": "cluster", "tags": ["nope"]})
        r = self.job("info", str(jid))
        self.assertIn("      Result: \n        - OpPrereqError\n"
                      "        - - Tag(s) 'nope' not found\n          - unknown_entity\n", r.out)

    def test_needs_an_id(self):
        r = self.job("info")
        self.assertEqual(r.code, 1)
        self.assertIn("Usage error", r.err)


class WatchWaitTest(JobTestCase):
    def test_watch_prints_the_log_as_it_arrives(self):
        jid = self.submit(delay_op(5, repeat=3))
        r = self.job("watch", str(jid))
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "Output from job 1 follows\n"
                                "-------------------------\n"
                                f"{ctime(START_TIME)}  - INFO: Test delay iteration 0/2\n"
                                f"{ctime(START_TIME + 5)}  - INFO: Test delay iteration 1/2\n"
                                f"{ctime(START_TIME + 10)}  - INFO: Test delay iteration 2/2\n")
        self.assertEqual(self.job_field(jid, "status"), "success")
        self.assertEqual(self.master.reactor.seconds(), START_TIME + 15)
        waits = [args for method, args in self.master.calls if method == "WaitForJobChange"]
        self.assertEqual(waits[0], (1, ["status"], None, None, jobs.WFJC_TIMEOUT))
        self.assertEqual(waits[-1][3], 3)  # the last log serial seen

    def test_watch_failed_job(self):
        jid = self.submit({"OP_ID": "OP_TAGS_DEL", "kind": "cluster", "tags": ["nope"]})
        r = self.job("watch", str(jid))
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Job 1 failed: Failure: prerequisites not met for this "
                                "operation: Tag(s) 'nope' not found (error type: "
                                "unknown_entity)\n")

    def test_watch_missing_job(self):
        r = self.job("watch", "42")
        self.assertEqual(r.code, 1)
        self.assertIn("Job 42 failed: Error checking job status: Can't load job file", r.err)

    def test_wait_is_silent(self):
        jid = self.submit(delay_op(5, repeat=2))
        r = self.job("wait", str(jid))
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))

    def test_wait_for_a_canceled_job(self):
        jid = self.submit(delay_op(50))
        self.master.hooks.append(
            lambda method, args: method == "WaitForJobChange" and args[2] is not None
            and self.master.client().call("CancelJob", jid, True))
        r = self.job("wait", str(jid))
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Job 1 failed: JobCanceled: Job was canceled\n")

    def test_filter_rule_notice_and_info(self):
        client = self.master.client()
        uuid = client.call("ReplaceFilter", None, 0, [["jobid", [">", "id", "watermark"]]],
                           "PAUSE", [["gnt:user", "upgrade", 1]])
        jid = self.submit(delay_op(1))
        r = self.job("info", str(jid))
        self.assertIn(f"Waiting: paused by filter rule {uuid} (PAUSE, reason 'upgrade')",
                      r.out)
        r = self.job("list", "--no-headers", "-o", "id,wait_reason")
        self.assertIn(f"paused by filter rule {uuid}", r.out)
        # watch: says why once, and goes on when the rule goes.
        asked = []

        def release(method, args):
            if method == "Query" and args[1] == ["wait_reason"]:
                asked.append(1)
            elif method == "WaitForJobChange" and asked and len(asked) == 1:
                asked.append(2)
                self.master.client().call("DeleteFilter", uuid)
        self.master.hooks.append(release)
        r = self.job("watch", str(jid))
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.err, f"Job {jid} is waiting: paused by filter rule {uuid} "
                                f"(PAUSE, reason 'upgrade')\n")
        self.assertNotIn("Waiting:", self.job("info", str(jid)).out)

    def test_queue_notice(self):
        self.master.config.cluster.max_running_jobs = 1
        self.submit(delay_op(100))
        second = self.submit(delay_op(1))
        r = self.job("watch", str(second))
        self.assertEqual(r.code, 0)
        self.assertEqual(r.err, "Job 2 is waiting in queue\n")


class CancelTest(JobTestCase):
    def setUp(self):
        super().setUp()
        self.master.config.cluster.max_running_jobs = 1
        self.running = self.submit(delay_op(100))
        self.queued = self.submit(delay_op(1))

    def test_cancel_queued(self):
        r = self.job("cancel", str(self.queued))
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(len(r.out.splitlines()), 1)  # the master's answer (its wording)
        self.assertEqual(self.job_field(self.queued, "status"), "canceled")

    def test_cancel_finished_fails(self):
        self.job("cancel", str(self.queued))
        r = self.job("cancel", str(self.queued), str(self.running))
        self.assertEqual(r.code, 1)
        self.assertEqual(len(r.out.splitlines()), 2)  # one answer per job, in order
        self.assertIn("2", r.out.splitlines()[0])

    def test_kill_needs_confirmation(self):
        r = self.job("cancel", "--kill", str(self.running))
        self.assertEqual(r.code, 1)
        self.assertIn("The --kill option must be confirmed with --yes-do-it", r.err)
        r = self.job("cancel", "--kill", "--yes-do-it", str(self.running))
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.job_field(self.running, "status"), "canceled")

    def test_status_filter_with_force(self):
        r = self.job("cancel", "--queued", "--force")
        self.assertEqual((r.code, len(r.out.splitlines())), (0, 1))
        self.assertEqual(self.job_field(self.queued, "status"), "canceled")

    def test_status_filter_asks(self):
        answers = []
        self.patch(jobs, "ask_user", lambda q: answers.append(q) or False)
        r = self.job("cancel", "--pending")
        self.assertEqual(r.code, constants.EXIT_CONFIRMATION)
        self.assertEqual(r.out, "ID Status Summary\n 2 queued TEST_DELAY(1.0)\n")
        self.assertEqual(answers, ["Cancel job(s) listed above?"])
        self.assertEqual(self.job_field(self.queued, "status"), "queued")
        self.patch(jobs, "ask_user", lambda q: True)
        self.assertEqual(self.job("cancel", "--pending").code, 0)
        self.assertEqual(self.job_field(self.queued, "status"), "canceled")

    def test_ids_or_filter(self):
        for argv in (["cancel"], ["cancel", "--queued", "2"]):
            r = self.job(*argv)
            self.assertEqual(r.code, 1, argv)
            self.assertIn("Either a status filter or job ID(s)", r.err)
        r = self.job("cancel", "--waiting", "-f")
        self.assertIn("No jobs with the requested status have been found", r.err)


class ChangePriorityTest(JobTestCase):
    def test_change(self):
        self.master.config.cluster.max_running_jobs = 1
        self.submit(delay_op(100))
        queued = self.submit(delay_op(1))
        r = self.job("change-priority", "--priority", "high", str(queued))
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "Priorities of pending opcodes for job 2 have been changed "
                                "to -10\n")
        self.assertEqual(self.job_field(queued, "priority"), -10)
        r = self.job("change-priority", "--priority=low", "--queued", "--force")
        self.assertEqual(r.code, 0)
        self.assertEqual(self.job_field(queued, "priority"), 10)

    def test_priority_required(self):
        r = self.job("change-priority", "1")
        self.assertEqual((r.code, r.err), (1, "--priority option must be given.\n"))

    def test_finished_job(self):
        jid = self.finished()
        r = self.job("change-priority", "--priority", "low", str(jid))
        self.assertEqual((r.code, r.out), (1, "Job 1 not found in queue\n"))  # luxid


class ArchiveTest(JobTestCase):
    def test_archive(self):
        done = self.finished()
        running = self.submit(delay_op(10))
        r = self.job("archive", str(done), str(running))
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Failed to archive job with ID '2'\n")
        self.assertEqual(self.job("list", "--no-headers", "-o", "id").out, "2\n")

    def test_list_archived(self):
        # Ganeti 3.0: --archived adds the field "archived" and lists archived jobs too.
        first, second = self.finished(), self.finished()
        running = self.submit(delay_op(100))
        self.assertEqual(self.job("archive", str(first)).code, 0)
        r = self.job("list")
        self.assertEqual(r.out, "ID Status  Summary\n"
                                " 2 success TEST_DELAY(0.5)\n"
                                " 3 running TEST_DELAY(100.0)\n")
        r = self.job("list", "--archived")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "ID Status  Summary           Archived\n"
                                " 1 success TEST_DELAY(0.5)   Y\n"
                                " 2 success TEST_DELAY(0.5)   N\n"
                                " 3 running TEST_DELAY(100.0) N\n")
        self.assertEqual(self.master.calls[-1],
                         ("Query", ("job", ["id", "status", "summary", "archived"], None)))
        r = self.job("list", "--archived", "-o", "id,archived", "--no-headers", "--separator=|",
                     "--running")
        self.assertEqual(r.out, f"{running}|N\n")
        # Asked for by id, an archived job is listed (and shown) without --archived too.
        r = self.job("list", "-o", "id,status,archived", "--no-headers", str(first),
                     str(second))
        self.assertEqual(r.out, "1 success Y\n2 success N\n")
        self.assertEqual(self.job("info", str(first)).out.splitlines()[:2],
                         ["- Job ID: 1", "  Status: success"])
        # QueryJobs: the same field.
        rows = self.master.client().call("QueryJobs", None, ["id", "archived"])
        self.assertEqual(rows, [[1, True], [2, False], [3, False]])
        self.assertEqual(self.master.client().call("QueryJobs", None, ["id"]), [[2], [3]])

    def test_autoarchive(self):
        self.finished()
        self.advance(7200)
        self.finished()
        self.submit(delay_op(100))
        r = self.job("autoarchive", "1h")
        self.assertEqual((r.code, r.out), (0, "Archived 1 jobs, 0 unchecked left\n"))
        self.assertEqual(self.master.calls[-1], ("AutoArchiveJobs", (3600, 89)))
        r = self.job("autoarchive", "all")
        self.assertEqual(r.out, "Archived 1 jobs, 0 unchecked left\n")
        self.assertEqual(self.master.calls[-1], ("AutoArchiveJobs", (-1, 89)))
        self.assertEqual(self.job("list", "--no-headers", "-o", "id").out, "3\n")

    def test_bad_age(self):
        for age in ("x", "h", "1y", ""):
            r = self.job("autoarchive", age)
            self.assertEqual(r.code, 1, age)
            self.assertIn("time specification", r.err)


class HelpTest(JobTestCase):
    def test_help_everywhere(self):
        r = self.job("--help")
        self.assertEqual(r.code, 0)
        for cmd in gnt_job.COMMANDS:
            self.assertIn(cmd.name, r.out)
            sub = self.job(cmd.name, "--help")
            self.assertEqual(sub.code, 0, cmd.name)
            self.assertIn("usage: gnt-job " + cmd.name, sub.out)
        self.assertEqual(self.master.calls, [])

    def test_unknown_command(self):
        r = self.job("frobnicate")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.err.startswith("Usage error: "))


class HelpersTest(SynchronousTestCase):
    def test_parse_timespec(self):
        self.assertEqual([jobs.parse_timespec(v) for v in ("30", "30s", "5m", "1h", "2d",
                                                           "1w")],
                         [30, 30, 300, 3600, 172800, 604800])

    def test_parse_fields(self):
        self.assertEqual(table.parse_fields(None, ["a"]), ["a"])
        self.assertEqual(table.parse_fields("+b,c", ["a"]), ["a", "b", "c"])
        self.assertEqual(table.parse_fields("b", ["a"]), ["b"])

    def test_format_table(self):
        cols = [table.Column("A", str, True), table.Column("Bee", str)]
        self.assertEqual(table.format_table([[1, "x"], [100, "long"]], cols, True, None),
                         ["  A Bee", "  1 x", "100 long"])
        self.assertEqual(table.format_table([[1, "x"]], cols, False, "|"), ["1|x"])

    def test_generic_info(self):
        data = [[("a", 1, "g"), ("bbb", {"y": [], "x": (1, "z")}, "g"), ("c", ["p", "q"])],
                "plain"]
        self.assertEqual(table.format_generic_info(data),
                         "- a:   1\n"
                         "  bbb: \n"
                         "    x: [1, z]\n"
                         "    y: \n"
                         "  c: \n"
                         "    - p\n"
                         "    - q\n"
                         "- plain")
