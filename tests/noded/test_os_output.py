"""The output of OS script runs kept for ``os_output``: the bounded store, the
handlers with a real script (real processes on the real reactor, as in
test_osdefs), and the call table's optional run id."""

from __future__ import annotations

import os

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import rpcdefs
from ganeti.noded import osoutput
from ganeti.noded.backend import osdefs
from ganeti.noded.backend.context import RPCFail
from tests.noded.helpers import MemoryNode, node_paths
from tests.noded.test_osdefs import OsTestCase, instance, make_os, wait_for


class StoreTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.runs = osoutput.OsRuns()

    def test_answers_from_an_offset_and_done_only_at_the_end(self):
        run = self.runs.start("r1", 100.0)
        for i in range(3):
            run.add(f"l{i}")
        self.assertEqual(run.answer(1), {"lines": ["l1", "l2"], "next": 3, "done": False,
                                         "truncated": False, "log_file": None})
        self.runs.finish(run, 101.0)
        self.assertEqual(run.answer(3)["done"], True)
        self.assertEqual(run.answer(99)["next"], 3)  # past the end: nothing new
        self.patch(osoutput, "MAX_ANSWER_LINES", 2)
        first = run.answer(0)
        self.assertEqual((first["lines"], first["next"], first["done"]), (["l0", "l1"], 2, False))

    def test_lines_bytes_and_line_length_are_bounded(self):
        self.patch(osoutput, "MAX_LINES", 3)
        run = self.runs.start("r1", 0.0)
        for i in range(5):
            run.add(str(i))
        self.assertEqual(run.lines, ["0", "1", "2"])
        self.assertTrue(run.answer(0)["truncated"])
        self.patch(osoutput, "MAX_ANSWER_LINES", 2)  # truncated only with the last lines
        self.assertEqual([run.answer(k)["truncated"] for k in (0, 2)], [False, True])
        self.patch(osoutput, "MAX_LINES", 1000)
        self.patch(osoutput, "MAX_BYTES", 10)
        run = self.runs.start("r2", 0.0)
        run.add("x" * 6)
        run.add("y" * 6)
        self.assertEqual((run.lines, run.truncated), (["x" * 6], True))
        run = self.runs.start("r3", 0.0)
        self.patch(osoutput, "MAX_BYTES", 1 << 20)
        run.add("z" * 5000)
        self.assertEqual(run.lines, ["z" * osoutput.MAX_LINE + " ..."])

    def test_finished_runs_expire_and_running_ids_are_not_reused(self):
        run = self.runs.start("r1", 0.0)
        with self.assertRaises(osoutput.RunIdInUse):
            self.runs.start("r1", 1.0)
        self.runs.finish(run, 10.0)
        self.assertIs(self.runs.get("r1", 10.0 + osoutput.KEEP_FINISHED), run)
        self.assertIsNone(self.runs.get("r1", 11.0 + osoutput.KEEP_FINISHED))
        again = self.runs.start("r2", 0.0)
        self.runs.finish(again, 1.0)
        self.assertIsNot(self.runs.start("r2", 2.0), again)  # a finished id may come back

    def test_at_most_max_runs_the_oldest_finished_go_first(self):
        self.patch(osoutput, "MAX_RUNS", 3)
        running = self.runs.start("running", 0.0)
        for i, name in enumerate(("a", "b")):
            self.runs.finish(self.runs.start(name, float(i)), float(i))
        self.runs.start("c", 5.0)
        self.assertEqual(sorted(self.runs.runs), ["b", "c", "running"])
        self.assertFalse(running.done)


class TableTest(SynchronousTestCase):
    def test_run_id_is_optional_and_checked(self):
        call = rpcdefs.CALLS["instance_os_add"]
        inst = instance()
        self.assertEqual(call.required_count, 3)
        call.check_args([inst, False, 0])
        call.check_args([inst, False, 0, "abc-123_X"])
        for bad in ("", "a/b", "x" * 65, 7):
            self.assertRaises(rpcdefs.RpcArgumentError, call.check_args, [inst, False, 0, bad])
        err = self.assertRaises(rpcdefs.RpcArgumentError, call.check_args,
                                [inst, False, 0, "a", "b"])
        self.assertIn("instance_os_add takes 3 to 4 argument(s)", str(err))
        self.assertRaises(rpcdefs.RpcArgumentError, call.check_args, [inst, False])
        rename = rpcdefs.CALLS["instance_run_rename"]
        self.assertEqual((rename.required_count, len(rename.args)), (3, 4))

    def test_os_output_arguments_and_answer(self):
        call = rpcdefs.CALLS["os_output"]
        call.check_args(["abc", 0])
        for args in (["abc", -1], ["abc", True], ["a b", 0], ["abc"]):
            self.assertRaises(rpcdefs.RpcArgumentError, call.check_args, args)
        ok = {"lines": ["a"], "next": 1, "done": False, "truncated": False, "log_file": None}
        self.assertEqual(call.decode_payload(ok), ok)
        self.assertIsNone(call.decode_payload(None))
        for bad in ({**ok, "lines": [1]}, {**ok, "next": -1}, "x", {**ok, "done": None}):
            self.assertRaises(rpcdefs.RpcReplyError, call.decode_payload, bad)


@pytest.mark.subprocess
class HandlerTest(OsTestCase):
    async def test_output_is_readable_while_the_script_runs_secrets_hidden(self):
        gate = os.path.join(self.out, "gate")
        body = (f'echo "first $OSP_TOKEN"\nwhile [ ! -e {gate} ]; do sleep 0.02; done\n'
                'echo second\nprintf "last"\n')
        make_os(self.top, "testos", scripts={"create": body},
                parameters="marker m\nsize-mb s\ntoken t\n")
        inst = instance(osparams={"marker": "x", "size-mb": 5, "token": "tok-123456789"},
                        osparams_secret=["token"])
        self.assertIsNone(osdefs.os_output(self.ctx, "run1", 0))
        d = osdefs.instance_os_add(self.ctx, inst, False, 0, "run1")
        await wait_for(lambda: osdefs.os_output(self.ctx, "run1", 0)["lines"], "a line")
        answer = osdefs.os_output(self.ctx, "run1", 0)
        self.assertEqual(answer["lines"], ["first <redacted>"])
        self.assertFalse(answer["done"])
        self.assertFalse(d.called)
        self.assertRegex(answer["log_file"],
                         r"^/var/log/ganeti/os/add-testos\+default-inst1\.example\.com-.*\.log$")
        with self.assertRaises(RPCFail) as cm:  # the id is taken while it runs
            await osdefs.instance_os_add(self.ctx, inst, False, 0, "run1")
        self.assertIn("run id run1 is in use", str(cm.exception))
        with open(gate, "w"):
            pass
        await d
        self.assertEqual(osdefs.os_output(self.ctx, "run1", 1),
                         {"lines": ["second", "last"], "next": 3, "done": True,
                          "truncated": False, "log_file": answer["log_file"]})

    async def test_a_run_that_cannot_start_is_done(self):
        with self.assertRaises(RPCFail):
            await osdefs.instance_os_add(self.ctx, instance(os_name="missing"), False, 0, "r2")
        self.assertEqual(osdefs.os_output(self.ctx, "r2", 0)["done"], True)

    async def test_rename_keeps_its_output_and_works_without_a_run_id(self):
        make_os(self.top, "testos", scripts={"rename": 'echo "from $OLD_INSTANCE_NAME"\n'})
        await osdefs.instance_run_rename(self.ctx, instance(name="new.example.com"),
                                         "old.example.com", 0, "ren1")
        self.assertEqual(osdefs.os_output(self.ctx, "ren1", 0)["lines"],
                         ["from old.example.com"])
        await osdefs.instance_run_rename(self.ctx, instance(name="new.example.com"),
                                         "old.example.com", 0)
        self.assertEqual(list(self.ctx.os_runs.runs), ["ren1"])


class SiteTest(SynchronousTestCase):
    def test_os_output_through_the_node_site(self):
        node = MemoryNode(node_paths(self))
        self.assertEqual(node.put("os_output", ["abc", 0]), (200, [True, None]))
        status, (ok, message) = node.put("os_output", ["../x", 0])
        self.assertEqual((status, ok), (400, False))
        self.assertIn("argument run_id must be a run id", message)
