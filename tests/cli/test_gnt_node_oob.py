"""gnt-node health and power: opcodes, confirmations and Ganeti's output (checked against
a real Ganeti 3.0 cluster), against a scripted master and end to end."""

from __future__ import annotations

import os
import stat
from typing import Any

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_node, gnt_node_oob
from ganeti.core import constants as c
from tests.cli.test_gnt_node import NodesCliTestCase, run, two_nodes

HEALTH = {"node1.example.com": [["disk", "OK"], ["fan", "WARNING"]],
          "node2.example.com": None}


def oob_result(op: dict[str, Any]) -> list[Any]:
    """Per node: health items for node1, no answer (nodata) for node2."""
    names = op["node_names"] or ["node1.example.com", "node2.example.com"]
    answer = []
    for name in names:
        full = name if "." in name else f"{name}.example.com"
        payload: Any = HEALTH.get(full)
        if op["command"] == c.OOB_POWER_STATUS and payload is not None:
            payload = {"powered": full == "node1.example.com"}
        elif op["command"] != c.OOB_HEALTH and payload is not None:
            payload = None
            answer.append([[0, full], [0, None]])
            continue
        answer.append([[0, full], [0, payload] if payload is not None
                       else [c.RS_NODATA, None]])
    return answer


class ScriptedOobTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = two_nodes()
        self.fake.results["OP_OOB_COMMAND"] = oob_result

    def node(self, *argv: str):
        return run(gnt_node, self.fake, *argv)

    def test_health_table_and_exit_code(self):
        r = self.node("health")
        self.assertEqual(r.code, 1)
        # Ganeti pads the header's last column, not the rows'
        self.assertEqual(r.out, "Node              Status     \n"
                                "node1.example.com disk=OK\n"
                                "                  fan=WARNING\n"
                                "node2.example.com (nodata)\n")
        (op,) = self.fake.ops()
        self.assertEqual({k: op[k] for k in ("command", "node_names", "timeout")},
                         {"command": "health", "node_names": [], "timeout": 60})
        r = self.node("health", "--separator=|", "--oob-timeout", "5", "node1")
        self.assertEqual((r.code, r.out), (0, "Node|Status\nnode1.example.com|disk=OK\n"
                                              "|fan=WARNING\n"))
        self.assertEqual(self.fake.ops()[-1]["timeout"], 5)
        r = self.node("health", "--no-headers", "node1")
        self.assertEqual(r.out, "node1.example.com disk=OK\n                  fan=WARNING\n")

    def test_power_status_and_on(self):
        r = self.node("power", "status")
        self.assertEqual((r.code, r.out), (1, "Node              Status  \n"
                                              "node1.example.com powered\n"
                                              "node2.example.com (nodata)\n"))
        r = self.node("power", "-f", "--power-delay", "0.5", "on", "node1")
        self.assertEqual((r.code, r.out), (0, "Node              Status \n"
                                              "node1.example.com invoked\n"))
        op = self.fake.ops()[-1]
        self.assertEqual((op["command"], op["power_delay"], op["ignore_status"]),
                         ("power-on", 0.5, False))

    def test_power_off_sets_offline_first_unless_ignore_status(self):
        self.node("power", "-f", "--auto-promote", "off", "node1", "node2")
        ops = self.fake.ops()
        self.assertEqual([o["OP_ID"] for o in ops], ["OP_NODE_SET_PARAMS"] * 2
                         + ["OP_OOB_COMMAND"])
        self.assertEqual([(o["node_name"], o["offline"], o["auto_promote"]) for o in ops[:2]],
                         [("node1", True, True), ("node2", True, True)])
        self.assertEqual(len(self.fake.jobs), 1)
        self.node("power", "-f", "--ignore-status", "off", "node1")
        self.assertEqual(self.fake.ops()[-1]["ignore_status"], True)
        self.assertEqual(len(self.fake.jobs[2]["ops"]), 1)

    def test_refusals(self):
        r = self.node("power", "cycle")
        self.assertEqual((r.code, r.err), (1, "Please provide at least one node for this "
                                              "command\n"))
        r = self.node("power", "bogus", "node1")
        self.assertEqual((r.code, r.err), (1, "power subcommand bogus not supported.\n"))
        r = self.node("power", "on", "node1")  # no terminal: not confirmed
        self.assertEqual(r.code, 1)
        self.assertEqual(self.fake.jobs, {})

    def test_modify_node_powered(self):
        self.node("modify", "--node-powered", "yes", "-O", "no", "-f", "node2")
        op = self.fake.ops()[-1]
        self.assertEqual((op["powered"], op["offline"]), (True, False))

    def test_generate_table_widths(self):
        self.assertEqual(gnt_node_oob.generate_table([["a", "b"]], True, None),
                         ["Node Status", "a    b"])


SCRIPT = """#!/bin/sh
case "$1" in
  health) echo '[["disk", "OK"]]' ;;
  power-status) echo '{"powered": false}' ;;
esac
"""


@pytest.mark.subprocess
class OobEndToEndTest(NodesCliTestCase):
    def test_health_and_power_through_the_master(self):
        self.assertEqual(self.node("add", "--primary-ip", "127.0.1.2", "node2.test").code, 0)
        r = self.node("health")
        self.assertEqual(r.code, 1)
        self.assertIn("node1.test (unavail)\n", r.out)
        tmp = os.path.abspath(self.mktemp())
        os.makedirs(tmp)
        script = os.path.join(tmp, "oob")
        with open(script, "w") as f:
            f.write(SCRIPT)
        os.chmod(script, stat.S_IRWXU)
        r = self.node("modify", "--node-parameters", f"oob_program={script}", "node2")
        self.assertEqual(r.code, 0, r.err)
        r = self.node("health", "node2")
        self.assertEqual((r.code, r.out.splitlines()[-1]), (0, "node2.test disk=OK"), r.err)
        r = self.node("power", "status", "node2")
        self.assertEqual(r.out.splitlines()[-1], "node2.test unpowered")
        r = self.node("power", "-f", "--ignore-status", "off", "node1")
        self.assertEqual(r.code, 1)
        self.assertIn("Operating on the master node node1.test is not allowed for power-off; "
                      "it does not support out-of-band operations", r.err)


class SafeEncodeTest(SynchronousTestCase):
    def test_log_messages_escaped_as_ganeti(self):
        # an out-of-band program's output in a warning keeps the log to one line each
        from ganeti.cli import jobs
        self.assertEqual(jobs.format_log_message("message", "out: broken\n\tx\x01é"),
                         "out: broken\\n\\tx\\x01\\xe9")
        self.assertEqual(jobs.format_log_message("message", "a\rb"), "a\\'rb")
