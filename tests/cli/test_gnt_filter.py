"""gnt-filter: option parsing, and every command end to end against a whole master
daemon on a fake clock."""

from __future__ import annotations

import argparse
import io
import json
import re
import time
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_filter
from ganeti.cli.framework import build_parser
from ganeti.core import constants as c
from tests.fakes.clirun import MasterCliTestCase, Run, delay_op

FIELDS = gnt_filter.LIST_DEFAULT_FIELDS
DRAIN = [["jobid", [">", "id", "watermark"]]]
DRAIN_JSON = json.dumps(DRAIN)
DRAIN_PY = str(DRAIN)
NEW_UUID = "0b8c2a3e-6f1d-4c55-9e0a-7d6b5c4a3f21"


def parse(*argv: str) -> Any:
    return build_parser("gnt-filter", "", gnt_filter.COMMANDS, io.StringIO()).parse_args(argv)


class OptionTest(SynchronousTestCase):
    def test_actions_in_ganetis_spellings(self):
        for word in ("ACCEPT", "PAUSE", "REJECT", "CONTINUE"):
            self.assertEqual(gnt_filter.filter_action(word), word)
        self.assertEqual(gnt_filter.filter_action("RATE_LIMIT 5"), ["RATE_LIMIT", 5])
        self.assertEqual(gnt_filter.filter_action("RATE_LIMIT\t 12 "), ["RATE_LIMIT", 12])

    def test_bad_actions(self):
        for text in ("accept", "DROP", "RATE_LIMIT", "RATE_LIMIT 0", "RATE_LIMIT -1",
                     "RATE_LIMIT 5x", "rate_limit 5", '["RATE_LIMIT", 5]', ""):
            with self.assertRaises(argparse.ArgumentTypeError, msg=text):
                gnt_filter.filter_action(text)
        with self.assertRaises(argparse.ArgumentTypeError) as caught:
            gnt_filter.filter_action("RATE_LIMIT")
        self.assertIn("--action 'RATE_LIMIT 5'", str(caught.exception))

    def test_defaults_are_ganetis(self):
        opts = parse("add")
        self.assertEqual((opts.priority, opts.predicates, opts.action, opts.reason),
                         (0, [], "CONTINUE", None))
        opts = parse("replace", "--priority", "3", "--predicates", DRAIN_JSON, "--action",
                     "RATE_LIMIT 2", "--reason", "why", NEW_UUID)
        self.assertEqual((opts.uuid, opts.priority, opts.predicates, opts.action,
                          opts.reason), (NEW_UUID, 3, DRAIN, ["RATE_LIMIT", 2], "why"))

    def test_formats_are_ganetis(self):
        # Ganeti's gnt-filter prints Python's str of the values.
        self.assertEqual(gnt_filter.format_value(["RATE_LIMIT", 4]), "['RATE_LIMIT', 4]")
        self.assertEqual(gnt_filter.format_value("PAUSE"), "PAUSE")
        self.assertEqual(gnt_filter.format_value(DRAIN), "[['jobid', ['>', 'id', 'watermark']]]")


class FilterCliTestCase(MasterCliTestCase):
    def filt(self, *argv: str) -> Run:
        return self.run_tool(gnt_filter, *argv)

    def rules(self) -> list[dict[str, Any]]:
        rows = self.master.client().call("QueryFilters", None, FIELDS)
        return [dict(zip(FIELDS, row, strict=True)) for row in rows]

    def add(self, *argv: str) -> str:
        r = self.filt("add", *argv)
        self.assertEqual((r.code, r.err), (0, ""))
        return r.out.strip()

    def now_ns(self) -> int:
        return int(self.master.reactor.seconds() * 1_000_000_000)

    def finished_job(self) -> int:
        job_id = self.submit(delay_op(0.5))
        self.advance(1)
        self.assertEqual(self.job_field(job_id, "status"), "success")
        return job_id


class UsageTest(FilterCliTestCase):
    def refused(self, *argv: str) -> str:
        r = self.filt(*argv)
        self.assertEqual(r.code, c.EXIT_FAILURE, r)
        self.assertEqual(r.out, "")
        self.assertTrue(r.err.startswith("Usage error: "), r.err)
        return r.err

    def test_bad_options_ask_nothing(self):
        err = self.refused("add", "--action", "rate_limit 5")
        self.assertIn("invalid action 'rate_limit 5'", err)
        self.assertIn("'RATE_LIMIT n'", err)
        self.refused("add", "--action", "RATE_LIMIT 0")
        err = self.refused("add", "--action", "RATE_LIMIT", "5")
        self.assertIn("same argument", err)
        err = self.refused("add", "--predicates", "[[jobid")
        self.assertIn("not valid JSON", err)
        err = self.refused("add", "--predicates", '{"jobid": 1}')
        self.assertIn("expected a JSON list", err)
        self.refused("add", "--priority", "high")
        self.refused("add", NEW_UUID)
        self.refused("replace")
        self.refused("delete")
        self.refused("delete", NEW_UUID, NEW_UUID)
        self.assertEqual(self.methods(), [])

    def test_help(self):
        r = self.filt("--help")
        self.assertEqual(r.code, 0)
        for cmd in gnt_filter.COMMANDS:
            self.assertIn(cmd.name, r.out)
            sub = self.filt(cmd.name, "--help")
            self.assertEqual(sub.code, 0, cmd.name)
            self.assertIn("usage: gnt-filter " + cmd.name, sub.out)
        self.assertIn("RATE_LIMIT n", self.filt("add", "--help").out)
        self.assertEqual(self.methods(), [])


class AddReplaceDeleteTest(FilterCliTestCase):
    def test_add_prints_the_uuid(self):
        job_id = self.finished_job()
        calls = len(self.methods())
        before = time.time_ns()
        uid = self.add("--priority", "2", "--predicates", DRAIN_JSON, "--action", "REJECT",
                       "--reason", "maintenance window")
        after = time.time_ns()
        self.assertEqual(self.methods()[calls:], ["ReplaceFilter"])  # at once, not a job
        (rule,) = self.rules()
        self.assertEqual({k: rule[k] for k in ("uuid", "watermark", "priority", "predicates",
                                               "action")},
                         {"uuid": uid, "watermark": job_id, "priority": 2,
                          "predicates": DRAIN, "action": "REJECT"})
        user, luxid = rule["reason_trail"]
        self.assertEqual(user[:2], ["gnt:user", "maintenance window"])
        self.assertTrue(before <= user[2] <= after)
        self.assertEqual(luxid, ["luxid", "", self.now_ns()])

    def test_add_with_defaults_and_rate_limit(self):
        plain = self.add()
        limited = self.add("--action", "RATE_LIMIT 3", "--priority", "9")
        by_uuid = {rule["uuid"]: rule for rule in self.rules()}
        self.assertEqual((by_uuid[plain]["priority"], by_uuid[plain]["predicates"],
                          by_uuid[plain]["action"], len(by_uuid[plain]["reason_trail"])),
                         (0, [], "CONTINUE", 1))
        self.assertEqual(by_uuid[limited]["action"], ["RATE_LIMIT", 3])

    def test_replace_resets_what_is_not_given(self):
        uid = self.add("--priority", "4", "--predicates", DRAIN_JSON, "--action", "PAUSE")
        r = self.filt("replace", "--action", "ACCEPT", uid)
        self.assertEqual((r.code, r.out, r.err), (0, uid + "\n", ""))
        (rule,) = self.rules()
        self.assertEqual((rule["uuid"], rule["priority"], rule["predicates"], rule["action"]),
                         (uid, 0, [], "ACCEPT"))

    def test_replace_unknown_uuid_adds_it(self):
        r = self.filt("replace", "--priority", "1", NEW_UUID)
        self.assertEqual((r.code, r.out), (0, NEW_UUID + "\n"), r.err)
        self.assertEqual([rule["uuid"] for rule in self.rules()], [NEW_UUID])

    def test_delete(self):
        uid = self.add()
        r = self.filt("delete", uid)
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.rules(), [])
        r = self.filt("delete", uid)
        self.assertEqual(r.code, c.EXIT_FAILURE)
        self.assertEqual(r.err, f"Unhandled Ganeti error: Filter rule with UUID {uid} does "
                                "not exist\n")  # Ganeti's luxid: a GenericError

    def test_the_master_refuses_invalid_rules(self):
        uid = self.add("--priority", "1")
        before = self.rules()
        for argv in (["add", "--priority", "-1"],
                     ["add", "--predicates", '[["nonsense", ["=", "id", 1]]]'],
                     ["add", "--predicates", '[["jobid"]]'],
                     ["replace", "--priority", "-3", uid],
                     ["replace", "not-a-uuid"]):
            r = self.filt(*argv)
            self.assertEqual((r.code, r.out), (c.EXIT_FAILURE, ""), argv)
            self.assertTrue(r.err.startswith("Failure: prerequisites not met"), r.err)
            self.assertIn("wrong_input", r.err)
        self.assertIn("Unable to parse UUID", r.err)
        self.assertEqual(self.rules(), before)


class ListInfoTest(FilterCliTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.finished_job()
        self.late = self.add("--priority", "5", "--action", "RATE_LIMIT 2")
        self.early = self.add("--priority", "1", "--predicates", DRAIN_JSON,
                              "--action", "PAUSE", "--reason", "soft drain")

    def test_default_list(self):
        r = self.filt("list")
        self.assertEqual(r.code, 0, r.err)
        header, first, second = r.out.splitlines()
        self.assertEqual(header.split(), ["UUID", "Watermark", "Priority", "Predicates",
                                          "Action", "ReasonTrail"])
        # Ganeti's layout: rules by uuid, values as Python prints them, left-aligned
        # (the fields are of kind "other"); the watermark is the one finished job.
        by_uuid = dict(zip(sorted([self.early, self.late]), (first, second), strict=True))
        self.assertRegex(by_uuid[self.early],
                         rf"^{self.early} 1 +1 +{re.escape(DRAIN_PY)} +PAUSE +"
                         r"\[\['gnt:user', 'soft drain', \d+\], \['luxid', '', \d+\]\]$")
        self.assertRegex(by_uuid[self.late], rf"^{self.late} 1 +5 +\[\] +\['RATE_LIMIT', 2\] "
                                             r"\[\['luxid', '', \d+\]\]$")

    def test_fields_separator_and_uuids(self):
        r = self.filt("list", "--no-headers", "--separator", "|", "-o",
                      "uuid,priority,action,watermark")
        rows = {self.early: f"{self.early}|1|PAUSE|1\n",
                self.late: f"{self.late}|5|['RATE_LIMIT', 2]|1\n"}
        self.assertEqual(r.out, "".join(rows[u] for u in sorted(rows)))
        r = self.filt("list", "--no-headers", "-o", "priority", self.late)
        self.assertEqual((r.code, r.out), (0, "5\n"), r.err)
        r = self.filt("list", "--no-headers", "-o", "+priority", "--separator", ",",
                      self.early)
        self.assertTrue(r.out.endswith(",1\n"), r.out)

    def test_globs_and_filter_expressions(self):
        r = self.filt("list", "--no-headers", "-o", "priority", self.late[:8] + "*")
        self.assertEqual((r.code, r.out), (0, "5\n"), r.err)
        r = self.filt("list", "--no-headers", "-o", "uuid", "priority < 3")
        self.assertEqual((r.code, r.out), (0, self.early + "\n"), r.err)

    def test_unknown_field(self):
        r = self.filt("list", "-o", "uuid,colour")
        self.assertEqual(r.code, c.EXIT_UNKNOWN_FIELD)
        self.assertIn("Warning: Queried for unknown fields colour", r.err)

    def test_list_fields(self):
        r = self.filt("list-fields", "--no-headers", "--separator", "|")
        self.assertEqual(r.code, 0, r.err)
        rows = {line.split("|")[0]: line.split("|")[1:3] for line in r.out.splitlines()}
        self.assertEqual(rows, {"uuid": ["Custom", "UUID"],
                                "watermark": ["Custom", "Watermark"],
                                "priority": ["Custom", "Priority"],
                                "predicates": ["Custom", "Predicates"],
                                "action": ["Custom", "Action"],
                                "reason_trail": ["Custom", "ReasonTrail"]})
        r = self.filt("list-fields", "priority")
        self.assertEqual(r.out.splitlines()[0].split(), ["Name", "Type", "Title",
                                                         "Description"])
        self.assertEqual(r.out.splitlines()[1].split()[:3], ["priority", "Custom",
                                                             "Priority"])

    def test_info(self):
        r = self.filt("info", self.late)
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[:5], [f"UUID: {self.late}", "  Watermark: 1",
                                     "  Priority: 5", "  Predicates: []",
                                     "  Action: ['RATE_LIMIT', 2]"])
        self.assertTrue(lines[5].startswith("  Reason trail: [['luxid', '', "), lines[5])
        self.assertEqual(len(lines), 6)
        every = self.filt("info").out.splitlines()
        self.assertEqual([line for line in every if line.startswith("UUID: ")],
                         sorted([f"UUID: {self.early}", f"UUID: {self.late}"]))
        self.assertIn(f"  Predicates: {DRAIN_PY}", every)

    def test_predicates_shown_as_ganeti_stores_them(self):
        uuid = self.add("--predicates",
                        '[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]], '
                        '["jobid", ["|", ["=", "id", 5.0], [">", "id", "watermark"]]]]')
        r = self.filt("list", "--no-headers", "-o", "predicates", uuid)
        self.assertEqual(r.out, "[['opcode', ['==', 'OP_ID', 'OP_TEST_DELAY']], "
                                "['jobid', ['|', ['==', 'id', 5], ['>', 'id', 'watermark']]]]\n")
        r = self.filt("add", "--predicates", '[["jobid", ["<", "id", 7.5]]]')
        self.assertEqual((r.code, r.out), (1, ""))
        self.assertIn("a filter value must be a string or an integer", r.err)

    def test_info_and_delete_unknown_uuid_as_ganeti(self):
        # Ganeti: info shows nothing for an unknown uuid (exit 0); delete fails (exit 1).
        r = self.filt("info", NEW_UUID)
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        r = self.filt("info", NEW_UUID, self.late)
        self.assertEqual(r.out.splitlines()[0], f"UUID: {self.late}")
        r = self.filt("delete", NEW_UUID)
        self.assertEqual((r.code, r.out), (c.EXIT_FAILURE, ""))
        self.assertIn(f"Filter rule with UUID {NEW_UUID} does not exist", r.err)
