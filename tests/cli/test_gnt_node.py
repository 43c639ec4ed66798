"""gnt-node: the argument-to-opcode mapping and output formatting against a scripted
master, and the commands end to end against a whole master daemon on a fake clock."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_node, jobs, table
from ganeti.cli.framework import build_parser
from ganeti.core import constants as c
from ganeti.core import errors, qlang
from ganeti.luxi import wire
from ganeti.luxi.client import LuxiMethods
from ganeti.luxi.methods import METHODS
from tests.fakes.clirun import MasterCliTestCase, Run
from tests.fakes.nodes import master_with_nodes


def fielddef(name: str, title: str, kind: str, doc: str = "") -> dict[str, str]:
    return {"name": name, "title": title, "kind": kind, "doc": doc or f"the {name}"}


class ScriptedMaster(LuxiMethods):
    """A LUXI client whose master is a script: query answers and opcode results
    given by the test, jobs that finish at once (with the log the test gives).
    Query filters are checked and evaluated by the real qlang code.

    Arguments are checked against the LUXI method table and answers go
    through the wire encoding, as with the real client.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        #: resource -> {field name: definition}
        self.fielddefs: dict[str, dict[str, dict[str, str]]] = {}
        #: resource -> rows of {field: value}; absent fields are "unavailable"
        self.items: dict[str, list[dict[str, Any]]] = {}
        #: OP_ID -> fn(op) -> result, or an exception to fail the job with
        self.results: dict[str, Callable[[dict[str, Any]], Any]] = {}
        #: job id -> [[serial, timestamp, type, message], ...] its log
        self.logs: dict[int, list[list[Any]]] = {}
        self.jobs: dict[int, dict[str, Any]] = {}
        self.tags: dict[tuple[str, str | None], list[str]] = {}
        self.cluster_info: dict[str, Any] = {"enabled_hypervisors": ["fake"]}
        self.next_id = 1

    # what the tests look at

    def ops(self) -> list[dict[str, Any]]:
        """Every submitted opcode, in the order of the job ids."""
        return [op for _, job in sorted(self.jobs.items()) for op in job["ops"]]

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]

    # LUXI

    def call(self, method: str, *args: Any) -> Any:
        METHODS[method].check_args(list(args))
        self.calls.append((method, args))
        outcome = getattr(self, "_" + method)(*args)
        return wire.parse_response(wire.encode_response(True, outcome)[:-1])

    def close(self) -> None:
        pass

    def _Query(self, what: str, fields: list[str], qfilter: Any) -> dict[str, Any]:
        defs = self.fielddefs[what]
        specs = {name: qlang.FieldSpec(fdef["kind"], hostname=name == "name")
                 for name, fdef in defs.items()}
        matcher = qlang.compile_filter(qfilter, specs)
        data = []
        for item in self.items[what]:
            if not matcher.matches(lambda f, item=item: (c.RS_NORMAL, item[f]) if f in item
                                   else (c.RS_UNAVAIL, None)):
                continue
            data.append([[c.RS_NORMAL, item[f]] if f in item
                         else [c.RS_UNKNOWN if f not in defs else c.RS_UNAVAIL, None]
                         for f in fields])
        return {"fields": [defs.get(f, fielddef(f, f, c.QFT_UNKNOWN, "unknown field"))
                           for f in fields], "data": data}

    def _QueryNodes(self, names: list[str] | None, fields: list[str],
                    use_locking: bool) -> list[Any]:
        # classic query: names expanded, unknown names skipped, in name order
        items = self.items["node"]
        if names:
            items = [i for i in items
                     if any(qlang.hostname_matches(i["name"], n) for n in names)]
        return [[i.get(f) for f in fields] for i in items]

    def _QueryFields(self, what: str, fields: list[str] | None) -> dict[str, Any]:
        defs = self.fielddefs[what]
        names = fields if fields is not None else sorted(defs)
        return {"fields": [defs.get(f, fielddef(f, f, c.QFT_UNKNOWN, "unknown field"))
                           for f in names]}

    def _QueryClusterInfo(self) -> dict[str, Any]:
        return self.cluster_info

    def _QueryTags(self, kind: str, name: str | None) -> list[str]:
        return self.tags.get((kind, name), [])

    def _submit(self, ops: list[dict[str, Any]]) -> int:
        job_id = self.next_id
        self.next_id += 1
        results, statuses = [], []
        for op in ops:
            fn = self.results.get(op["OP_ID"], lambda op: None)
            try:
                results.append(fn(op))
                statuses.append(c.JOB_STATUS_SUCCESS)
            except errors.GenericError as err:
                results.append(errors.encode_exception(err))
                statuses.append(c.JOB_STATUS_ERROR)
        status = (c.JOB_STATUS_ERROR if c.JOB_STATUS_ERROR in statuses
                  else c.JOB_STATUS_SUCCESS)
        self.jobs[job_id] = {"ops": ops, "status": status, "opstatus": statuses,
                             "opresult": results}
        return job_id

    def _SubmitJob(self, ops: list[dict[str, Any]]) -> int:
        return self._submit(ops)

    def _SubmitJobToDrainedQueue(self, ops: list[dict[str, Any]]) -> int:
        return self._submit(ops)

    def _WaitForJobChange(self, job_id: int, fields: list[str], prev_info: Any,
                          prev_serial: int | None, timeout: float) -> Any:
        log = [e for e in self.logs.get(job_id, [])
               if prev_serial is None or e[0] > prev_serial]
        return [[self.jobs[job_id]["status"]], log]

    def _QueryJobs(self, job_ids: list[int], fields: list[str]) -> list[Any]:
        return [[self.jobs[i][f] for f in fields] if i in self.jobs else None
                for i in job_ids]


NODE_FIELDS = {f["name"]: f for f in [
    fielddef("name", "Node", c.QFT_TEXT),
    fielddef("pip", "PrimaryIP", c.QFT_TEXT),
    fielddef("sip", "SecondaryIP", c.QFT_TEXT),
    fielddef("master", "IsMaster", c.QFT_BOOL),
    fielddef("master_candidate", "MasterC", c.QFT_BOOL),
    fielddef("drained", "Drained", c.QFT_BOOL),
    fielddef("offline", "Offline", c.QFT_BOOL),
    fielddef("master_capable", "MasterCapable", c.QFT_BOOL),
    fielddef("vm_capable", "VMCapable", c.QFT_BOOL),
    fielddef("powered", "Powered", c.QFT_BOOL),
    fielddef("role", "Role", c.QFT_TEXT),
    fielddef("dtotal", "DTotal", c.QFT_UNIT),
    fielddef("dfree", "DFree", c.QFT_UNIT),
    fielddef("mtotal", "MTotal", c.QFT_UNIT),
    fielddef("mnode", "MNode", c.QFT_UNIT),
    fielddef("mfree", "MFree", c.QFT_UNIT),
    fielddef("pinst_cnt", "Pinst", c.QFT_NUMBER),
    fielddef("sinst_cnt", "Sinst", c.QFT_NUMBER),
    fielddef("pinst_list", "PriInstances", c.QFT_OTHER),
    fielddef("sinst_list", "SecInstances", c.QFT_OTHER),
    fielddef("tags", "Tags", c.QFT_OTHER),
    fielddef("ndparams", "NodeParameters", c.QFT_OTHER),
    fielddef("custom_ndparams", "CustomNodeParameters", c.QFT_OTHER),
]}

ND_DEFAULTS = {"oob_program": "", "spindle_count": 1, "ssh_port": 22}


def two_nodes() -> ScriptedMaster:
    master = ScriptedMaster()
    master.fielddefs["node"] = NODE_FIELDS
    master.items["node"] = [
        {"name": "node1.example.com", "pip": "192.0.2.1", "sip": "198.51.100.1",
         "master": True, "master_candidate": True, "drained": False, "offline": False,
         "master_capable": True, "vm_capable": True, "role": "M",
         "dtotal": 1536000, "dfree": 1200000, "mtotal": 2048, "mnode": 512, "mfree": 1000,
         "pinst_cnt": 2, "sinst_cnt": 0, "pinst_list": ["web2", "web1"], "sinst_list": [],
         "tags": ["a", "b"], "ndparams": dict(ND_DEFAULTS),
         "custom_ndparams": {"ssh_port": 2222}},
        {"name": "node2.example.com", "pip": "192.0.2.2", "sip": "192.0.2.2",
         "master": False, "master_candidate": False, "drained": True, "offline": False,
         "master_capable": False, "vm_capable": False, "role": "D", "powered": True,
         "dtotal": 300, "dfree": 2 * 1024 * 1024 * 1024, "mtotal": 1023.6,
         "mnode": 100, "pinst_cnt": 0, "sinst_cnt": 1, "pinst_list": [],
         "sinst_list": ["web1"], "tags": [], "ndparams": dict(ND_DEFAULTS),
         "custom_ndparams": {}},
    ]
    return master


def run(module: Any, fake: LuxiMethods, *argv: str) -> Run:
    out, err = io.StringIO(), io.StringIO()
    code = module.main(list(argv), stdout=out, stderr=err, environ={},
                       luxi_factory=lambda paths: fake)
    return Run(code, out.getvalue(), err.getvalue())


def parse(*argv: str) -> Any:
    return build_parser("gnt-node", "", gnt_node.COMMANDS, io.StringIO()).parse_args(argv)


class FakeNodeTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = two_nodes()

    def node(self, *argv: str) -> Run:
        return run(gnt_node, self.fake, *argv)


class ListTest(FakeNodeTestCase):
    def test_default_fields_and_human_units(self):
        r = self.node("list")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out.splitlines(), [
            "Node              DTotal   DFree MTotal MNode MFree Pinst Sinst",
            "node1.example.com   1.5T    1.1T   2.0G  512M 1000M     2     0",
            "node2.example.com   300M 2048.0T  1024M  100M     -     0     1",
        ])
        self.assertEqual(self.fake.calls, [("Query", ("node", gnt_node.LIST_DEFAULT_FIELDS,
                                                      None))])

    def test_separator_means_mib_and_units_option(self):
        r = self.node("list", "--separator=|", "--no-headers", "-o", "name,mtotal,dtotal")
        self.assertEqual(r.out, "node1.example.com|2048|1536000\n"
                                "node2.example.com|1024|300\n")
        r = self.node("list", "--units", "g", "-o", "name,mtotal", "--no-headers")
        self.assertEqual(r.out, "node1.example.com 2.0\nnode2.example.com 1.0\n")
        r = self.node("list", "--units", "t", "--separator", ",", "-o", "dtotal",
                      "--no-headers")
        self.assertEqual(r.out, "1.5\n0.0\n")

    def test_plus_fields_lists_and_booleans(self):
        r = self.node("list", "-o", "+pinst_list,sinst_list,tags,master,role", "-v",
                      "--units", "m", "node2")
        self.assertEqual(r.out.splitlines(), [
            "Node              DTotal      DFree MTotal MNode     MFree Pinst Sinst "
            "PriInstances SecInstances Tags IsMaster Role",
            "node2.example.com    300 2147483648   1024   100 (unavail)     0     1 "
            "             web1              N        D",
        ])
        self.assertEqual(self.fake.calls[-1][1][2], ["|", ["==", "name", "node2"]])

    def test_names_and_globs_filter(self):
        r = self.node("list", "-o", "name", "--no-headers", "node1", "*2.example.*")
        self.assertEqual(r.out, "node1.example.com\nnode2.example.com\n")
        qfilter = self.fake.calls[-1][1][2]
        self.assertEqual(qfilter[:2], ["|", ["==", "name", "node1"]])
        self.assertEqual(qfilter[2][:2], ["=~", "name"])

    def test_unknown_field(self):
        r = self.node("list", "-o", "name,colour")
        self.assertEqual(r.code, table.EXIT_UNKNOWN_FIELD)
        self.assertEqual(r.err, "Warning: Queried for unknown fields colour\n")
        self.assertEqual(r.out.splitlines()[1], "node1.example.com ??")

    def test_unit_boundaries(self):
        self.assertEqual([table.format_unit(v, "h") for v in (0, 1023, 1024, 1536,
                                                               1024 * 1024 - 1, 1024 * 1024)],
                         ["0M", "1023M", "1.0G", "1.5G", "1024.0G", "1.0T"])
        self.assertEqual([table.format_unit(1536, u) for u in table.UNITS],
                         ["1.5G", "1536", "1.5", "0.0"])

    def test_glob_patterns(self):
        pattern = re.compile(table.glob_pattern("node?.ex*"))
        self.assertTrue(pattern.match("node1.example.com"))
        self.assertTrue(pattern.match("node2.ex"))
        self.assertFalse(pattern.match("node12.example.com"))
        self.assertFalse(pattern.match("xnode1.example.com"))
        self.assertTrue(re.match(table.glob_pattern("node1"), "node1.example.com"))
        self.assertFalse(re.match(table.glob_pattern("a+b"), "aab"))
        # as in Ganeti, * and ? stay within one dot-separated part
        self.assertFalse(re.match(table.glob_pattern("*.com"), "node1.example.com"))
        self.assertTrue(re.match(table.glob_pattern("*.example.com"), "node1.example.com"))

    def names_listed(self, *argv: str) -> list[str]:
        r = self.node("list", "-o", "name", "--no-headers", *argv)
        self.assertEqual(r.code, 0, r.err)
        return r.out.splitlines()

    def test_filter_expression(self):
        self.assertEqual(self.names_listed("drained and not master"), ["node2.example.com"])
        self.assertEqual(self.fake.calls[-1][1][2],
                         ["&", ["?", "drained"], ["!", ["?", "master"]]])
        self.assertEqual(self.names_listed('"web2" in pinst_list or sinst_cnt > 5'),
                         ["node1.example.com"])
        self.assertEqual(self.names_listed('name =* "node2.*"'), ["node2.example.com"])
        self.assertEqual(self.names_listed("role != 'M'"), ["node2.example.com"])

    def test_force_filter_option(self):
        # a word alone is a name; with -F (--filter) it is an expression
        self.assertEqual(self.names_listed("master_candidate"), [])
        self.assertEqual(self.fake.calls[-1][1][2], ["|", ["==", "name", "master_candidate"]])
        self.assertEqual(self.names_listed("-F", "master_candidate"), ["node1.example.com"])
        self.assertEqual(self.fake.calls[-1][1][2], ["?", "master_candidate"])
        r = self.node("list", "--filter", "node1")
        self.assertEqual(r.code, 1)
        self.assertIn("unknown field 'node1'", r.err)
        self.assertEqual(self.fake.calls[-1][1][2], ["?", "node1"])

    def test_force_filter_needs_exactly_one_argument(self):
        for argv in (["-F"], ["-F", "node1", "node2"]):
            r = self.node("list", *argv)
            self.assertEqual(r.code, 1)
            self.assertIn("Exactly one argument must be given as a filter", r.err)
        self.assertEqual(self.fake.calls, [])

    def test_bad_filter_expression(self):
        r = self.node("list", "name == ")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: Invalid "
                                "query filter at column 9: expected a value (a number or a "
                                "quoted string) after '==', found the end of the filter "
                                "(error type: wrong_input)\n")
        r = self.node("list", "name =~ /node/x")
        self.assertIn("Invalid query filter at column 15: unknown regular expression "
                      "flag(s) 'x'", r.err)
        self.assertEqual(self.fake.calls, [])

    def test_several_arguments_are_names(self):
        # only a single argument is taken for an expression, as in Ganeti
        self.assertEqual(self.names_listed("node1", "a b"), ["node1.example.com"])
        self.assertEqual(self.fake.calls[-1][1][2],
                         ["|", ["==", "name", "node1"], ["==", "name", "a b"]])

    def test_list_fields(self):
        r = self.node("list-fields", "name", "dtotal")
        self.assertEqual(r.out, "Name   Type         Title  Description\n"
                                "name   Text         Node   the name\n"
                                "dtotal Storage size DTotal the dtotal\n")
        self.assertEqual(self.fake.calls, [("QueryFields", ("node", ["name", "dtotal"]))])
        self.assertEqual(self.node("list-fields").out.count("\n"), len(NODE_FIELDS) + 1)


class InfoTest(FakeNodeTestCase):
    def test_all_nodes(self):
        r = self.node("info")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "\n".join([
            "- Node name: node1.example.com",
            "  primary ip: 192.0.2.1",
            "  secondary ip: 198.51.100.1",
            "  master candidate: True",
            "  drained: False",
            "  offline: False",
            "  master_capable: True",
            "  vm_capable: True",
            "  primary for instances: ",
            "    - web1",
            "    - web2",
            "  secondary for instances: ",
            "  node parameters: ",
            "    oob_program: default ()",
            "    spindle_count: default (1)",
            "    ssh_port: 2222",
            "- Node name: node2.example.com",
            "  primary ip: 192.0.2.2",
            "  secondary ip: 192.0.2.2",
            "  master candidate: False",
            "  drained: True",
            "  offline: False",
            "  powered: True",
            "  master_capable: False",
            "  vm_capable: False",
            "  node parameters: ",
            "    oob_program: default ()",
            "    spindle_count: default (1)",
            "    ssh_port: default (22)",
        ]) + "\n")
        # kvm is not enabled: no node is asked what its guests run under
        self.assertEqual(self.fake.calls, [("QueryNodes", ([], gnt_node.INFO_FIELDS, False)),
                                           ("QueryClusterInfo", ())])

    def test_what_kvm_guests_run_under(self):
        self.fake.cluster_info = {"enabled_hypervisors": ["kvm", "fake"]}
        self.fake.items["node"][0]["hv_accel"] = "qemu (TCG)"
        r = self.node("info")
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[7:9], ["  vm_capable: True",
                                      "  kvm guests run under: qemu (TCG)"])
        # node2 is not vm_capable: not asked, nothing shown
        self.assertEqual(r.out.count("kvm guests run under"), 1)
        self.assertEqual(self.fake.calls[-1],
                         ("QueryNodes", (["node1.example.com"], ["name", "hv_accel"], False)))
        # a node that does not answer shows no line
        del self.fake.items["node"][0]["hv_accel"]
        self.assertNotIn("kvm guests run under", self.node("info").out)

    def test_show_is_info_and_names_select(self):
        r = self.node("show", "node2")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(r.out.startswith("- Node name: node2.example.com\n"))
        self.assertNotIn("node1", r.out)

    def test_unknown_node(self):
        # as Ganeti's: the classic QueryNodes skips unknown names, exit 0
        r = self.node("info", "node1", "node9")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertTrue(r.out.startswith("- Node name: node1.example.com\n"))
        self.assertNotIn("node2", r.out)
        r = self.node("info", "node9")  # Ganeti prints one empty line
        self.assertEqual((r.code, r.out, r.err), (0, "\n", ""))


class AddTest(FakeNodeTestCase):
    def test_opcode_from_every_option(self):
        r = self.node("add", "--primary-ip", "192.0.2.3", "-s", "198.51.100.3", "-g", "rack2",
                      "--master-capable", "no", "--vm-capable", "yes",
                      "--node-parameters", "ssh_port=2222,spindle_count=2",
                      "--priority", "high", "node3.example.com")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.fake.methods(), ["Query", "SubmitJob", "WaitForJobChange",
                                               "QueryJobs"])
        self.assertEqual(self.fake.calls[0][1], ("node", ["name", "sip", "master"],
                                                 ["|", ["==", "name", "node3.example.com"]]))
        (op,) = self.fake.ops()
        reason = op.pop("reason")
        self.assertEqual(op, {
            "OP_ID": "OP_NODE_ADD", "node_name": "node3.example.com", "readd": False,
            "primary_ip": "192.0.2.3", "secondary_ip": "198.51.100.3", "group": "rack2",
            "master_capable": False, "vm_capable": True,
            "ndparams": {"ssh_port": "2222", "spindle_count": "2"},
            "priority": c.OP_PRIO_HIGH, "debug_level": 0})
        self.assertEqual(reason[0][:2], ["gnt:client:gnt-node", "add"])

    def test_only_what_was_given(self):
        self.assertEqual(gnt_node.add_opcode(parse("add", "n"), None),
                         {"OP_ID": "OP_NODE_ADD", "node_name": "n", "readd": False})

    def test_known_node_needs_readd(self):
        r = self.node("add", "node2")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Node node2 already in the cluster (as node2.example.com) - "
                                "please retry with '--readd'\n")
        self.assertEqual(self.fake.ops(), [])

    def test_readd_keeps_the_secondary_ip(self):
        r = self.node("add", "--readd", "node2.example.com")
        self.assertEqual(r.code, 0, r.err)
        (op,) = self.fake.ops()
        self.assertEqual((op["readd"], op["secondary_ip"]), (True, "192.0.2.2"))

    def test_readd_of_unknown_or_master(self):
        r = self.node("add", "--readd", "node7")
        self.assertEqual((r.code, r.err), (1, "Node node7 not in the cluster - please retry "
                                              "without '--readd'\n"))
        r = self.node("add", "--readd", "node1")
        self.assertEqual((r.code, r.err), (1, "Node node1 is the master, cannot readd\n"))
        self.assertEqual(self.fake.ops(), [])

    def test_bad_flag_value(self):
        r = self.node("add", "--vm-capable", "maybe", "node3")
        self.assertEqual(r.code, 1)
        self.assertIn("expected yes or no, not 'maybe'", r.err)

    def test_failure_of_the_job(self):
        def refuse(op):
            raise errors.OpPrereqError("Node node3 has no node daemon", errors.ECODE_ENVIRON)
        self.fake.results["OP_NODE_ADD"] = refuse
        r = self.node("add", "node3")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: Node "
                                "node3 has no node daemon (error type: environment_error)\n")


class RemoveTest(FakeNodeTestCase):
    def test_remove(self):
        r = self.node("remove", "--dry-run", "node2")
        self.assertEqual(r.code, 0, r.err)
        (op,) = self.fake.ops()
        self.assertEqual((op["OP_ID"], op["node_name"], op["dry_run"]),
                         ("OP_NODE_REMOVE", "node2", True))

    def test_no_submit_option(self):
        # as in Ganeti, remove waits for the job
        r = self.node("remove", "--submit", "node2")
        self.assertEqual(r.code, 1)
        self.assertIn("unrecognized arguments: --submit", r.err)


class ModifyTest(FakeNodeTestCase):
    def test_opcode_and_report(self):
        self.fake.results["OP_NODE_SET_PARAMS"] = lambda op: [
            ["master_candidate", False], ["drained", True], ["ndparams/ssh_port", "2222"]]
        r = self.node("modify", "-C", "no", "-D", "yes", "-O", "yes", "--master-capable",
                      "no", "--vm-capable", "yes", "-s", "198.51.100.2", "--auto-promote",
                      "-N", "ssh_port=2222", "node2")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "Modified node node2\n"
                                " - master_candidate -> False\n"
                                " - drained -> True\n"
                                " - ndparams/ssh_port -> 2222\n")
        (op,) = self.fake.ops()
        for key in ("reason", "debug_level", "dry_run"):
            op.pop(key)
        self.assertEqual(op, {
            "OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2", "force": False,
            "auto_promote": True, "master_candidate": False, "offline": True,
            "drained": True, "master_capable": False, "vm_capable": True,
            "secondary_ip": "198.51.100.2", "ndparams": {"ssh_port": "2222"}})

    def test_short_param_names_are_padded(self):
        self.fake.results["OP_NODE_SET_PARAMS"] = lambda op: [["vm", "x"]]
        self.assertEqual(self.node("modify", "--vm-capable", "no", "n").out,
                         "Modified node n\n - vm    -> x\n")

    def test_nothing_changed_prints_nothing(self):
        self.fake.results["OP_NODE_SET_PARAMS"] = lambda op: []
        r = self.node("modify", "-D", "no", "node2")
        self.assertEqual((r.code, r.out), (0, ""))

    def test_no_parameters(self):
        r = self.node("modify", "--force", "--auto-promote", "node2")
        self.assertEqual((r.code, r.err),
                         (1, "Please give at least one of the parameters.\n"))  # Ganeti's
        self.assertEqual(self.fake.calls, [])

    def test_online_needs_confirmation(self):
        questions: list[str] = []
        self.patch(jobs, "ask_user", lambda q: questions.append(q) or False)
        r = self.node("modify", "-O", "no", "node2")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "")  # Ganeti says nothing more
        self.assertIn("please use --readd instead", questions[0])
        self.assertEqual(self.fake.calls, [])
        self.patch(jobs, "ask_user", lambda q: True)
        self.assertEqual(self.node("modify", "-O", "no", "node2").code, 0)
        r = self.node("modify", "-O", "no", "--force", "node2")
        self.assertEqual(r.code, 0)
        self.assertEqual(self.fake.ops()[-1]["force"], True)

    def test_submit(self):
        r = self.node("modify", "--submit", "--print-jobid", "-D", "yes", "node2")
        self.assertEqual((r.code, r.out, r.err), (0, "1\n", "JobID: 1\n"))
        self.assertEqual(self.fake.methods(), ["SubmitJob"])


class TagsTest(FakeNodeTestCase):
    def test_list_add_remove(self):
        self.fake.tags[("node", "node1")] = ["b", "a"]
        self.assertEqual(self.node("list-tags", "node1").out, "a\nb\n")
        self.assertEqual(self.fake.calls, [("QueryTags", ("node", "node1"))])
        r = self.node("add-tags", "--submit", "node1", "x", "y")
        self.assertEqual((r.code, r.err), (0, "JobID: 1\n"))
        r = self.node("remove-tags", "node1", "x")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual([(op["OP_ID"], op["kind"], op["name"], op["tags"])
                          for op in self.fake.ops()],
                         [("OP_TAGS_SET", "node", "node1", ["x", "y"]),
                          ("OP_TAGS_DEL", "node", "node1", ["x"])])

    def test_tags_from_a_file_and_none(self):
        path = self.mktemp()
        with open(path, "w") as f:
            f.write("p\nq\n")
        self.assertEqual(self.node("add-tags", "--from", path, "node1").code, 0)
        self.assertEqual(self.fake.ops()[0]["tags"], ["p", "q"])
        r = self.node("remove-tags", "node1")
        self.assertEqual(r.code, 1)
        self.assertIn("No tags to be removed", r.err)
        r = self.node("add-tags")
        self.assertEqual(r.code, 1)
        self.assertIn("the following arguments are required: NODE", r.err)


class HelpTest(SynchronousTestCase):
    def test_every_command_has_help(self):
        fake = ScriptedMaster()
        r = run(gnt_node, fake, "--help")
        for cmd in gnt_node.COMMANDS:
            self.assertIn(cmd.name, r.out)
            sub = run(gnt_node, fake, cmd.name, "--help")
            self.assertEqual(sub.code, 0, cmd.name)
            self.assertIn("usage: gnt-node " + cmd.name, sub.out)
        self.assertIn("--primary-ip", run(gnt_node, fake, "add", "--help").out)
        self.assertEqual(fake.calls, [])


# --- end to end: a whole master daemon, node daemons in process -------------------

class NodesCliTestCase(MasterCliTestCase):
    """A master daemon whose node RPC reaches in-process node daemons
    (tests/fakes/nodes.py); node1.test is the master, node2.test and
    node3.test are machines ready to be added at 127.0.1.2 and .3."""

    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, 3)
        self.environ = self.master.paths.env()
        self.clients = []

    def node(self, *argv: str) -> Run:
        return self.run_tool(gnt_node, *argv)

    def add_node(self, k: int) -> None:
        r = self.node("add", "--primary-ip", f"127.0.1.{k}", f"node{k}.test")
        self.assertEqual(r.code, 0, r.err)

    def names(self, *argv: str) -> list[list[str]]:
        r = self.node("list", "--no-headers", "--separator", " ", *argv)
        self.assertEqual(r.code, 0, r.err)
        return [line.split(" ") for line in r.out.splitlines()]


class NodeEndToEndTest(NodesCliTestCase):
    def test_list_one_node(self):
        r = self.node("list")
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[0].split(), ["Node", "DTotal", "DFree", "MTotal", "MNode",
                                            "MFree", "Pinst", "Sinst"])
        self.assertEqual(lines[1].split()[0], "node1.test")
        self.assertEqual(len(lines), 2)
        self.assertEqual(self.names("-o", "name,master,role,group,pinst_cnt,"
                                          "master_candidate", "node1"),
                         [["node1.test", "Y", "M", "default", "0", "Y"]])
        self.assertEqual(self.names("-o", "name", "*.test"), [["node1.test"]])
        # with a separator, sizes are plain MiB
        (row,) = self.names("-o", "mtotal")
        self.assertTrue(row[0].isdigit(), row)

    def test_list_with_filter_expressions(self):
        self.add_node(2)
        self.assertEqual(self.node("modify", "--drained", "yes", "node2.test").code, 0)
        self.assertEqual(self.names("-o", "name", 'master_candidate and role == "M"'),
                         [["node1.test"]])
        self.assertEqual(self.names("-o", "name", "-F", "drained"), [["node2.test"]])
        self.assertEqual(self.names("-o", "name", "not drained or name =~ m/^NODE2/i"),
                         [["node1.test"], ["node2.test"]])
        self.assertEqual(self.names("-o", "name", 'name !* "node1"'), [["node2.test"]])
        r = self.node("list", 'colour == "red"')
        self.assertEqual(r.code, 1)
        self.assertIn("unknown field 'colour'", r.err)
        r = self.node("list", "pinst_cnt > 'many'")
        self.assertEqual(r.code, 1)
        self.assertIn("pinst_cnt", r.err)

    def test_list_fields(self):
        r = self.node("list-fields", "--no-headers", "--separator", "|", "name", "dtotal",
                      "role")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual([line.split("|")[:2] for line in r.out.splitlines()],
                         [["name", "Text"], ["dtotal", "Storage size"], ["role", "Text"]])

    def test_info(self):
        r = self.node("info", "node1")
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[:9], [
            "- Node name: node1.test", "  primary ip: 127.0.1.1",
            "  secondary ip: 127.0.1.1", "  master candidate: True", "  drained: False",
            "  offline: False", "  master_capable: True", "  vm_capable: True",
            "  primary for instances: "])
        self.assertIn("  node parameters: ", lines)
        self.assertIn("    ssh_port: default (22)", lines)
        r = self.node("info", "node9")  # Ganeti: an empty line, exit 0
        self.assertEqual((r.code, r.out, r.err), (0, "\n", ""))
        r = self.node("list", "node9")  # Ganeti: unknown_entity, exit 1
        self.assertEqual(r.code, 1)
        self.assertIn("Node name node9 not found", r.err)

    def test_add_modify_remove(self):
        r = self.node("add", "--primary-ip", "127.0.1.2", "node2.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn(" Added node node2.test", r.out)  # the job's log, as it runs
        self.assertEqual(self.names("-o", "name,role,pip"),
                         [["node1.test", "M", "127.0.1.1"], ["node2.test", "C", "127.0.1.2"]])
        r = self.node("add", "--primary-ip", "127.0.1.2", "node2.test")
        self.assertEqual((r.code, r.err), (1, "Node node2.test already in the cluster (as "
                                              "node2.test) - please retry with '--readd'\n"))

        r = self.node("modify", "-D", "yes", "node2")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("Modified node node2\n - master_candidate -> False\n"
                      " - drained -> True\n", r.out)
        self.assertEqual(self.names("-o", "name,role,drained", "node2"),
                         [["node2.test", "D", "Y"]])
        r = self.node("modify", "-D", "no", "--vm-capable", "no", "node2")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn(" - vm_capable -> False\n", r.out)
        self.assertFalse(self.master.config.node_by_name("node2.test").vm_capable)

        r = self.node("remove", "node2.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.names("-o", "name"), [["node1.test"]])

    def test_add_with_ganetis_ssh_options_and_readd(self):
        # QA's "gnt-node add --no-ssh-key-check"; --readd of an offline node (LUNodeAdd)
        r = self.node("add", "--no-ssh-key-check", "--no-node-setup", "--force-join",
                      "--primary-ip", "127.0.1.2", "node2.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(r.out.startswith("-- WARNING -- \n--no-node-setup changes nothing"),
                        r.out)
        r = self.node("modify", "-O", "yes", "node2")
        self.assertEqual(r.code, 0, r.err)
        r = self.node("add", "--readd", "--no-ssh-key-check", "node2.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn(" - INFO: Readding a node, the offline/drained flags were reset\n",
                      r.out)
        self.assertEqual(self.names("-o", "name,offline", "node2"), [["node2.test", "N"]])

    def test_the_master_cannot_be_drained_readded_or_removed(self):
        r = self.node("modify", "-D", "yes", "node1.test")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.err.startswith("Failure: prerequisites not met"), r.err)
        r = self.node("add", "--readd", "node1.test")
        self.assertEqual((r.code, r.err), (1, "Node node1.test is the master, cannot readd\n"))
        r = self.node("remove", "node1.test")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.err.startswith("Failure: prerequisites not met"), r.err)
        self.assertEqual(len(self.master.config.nodes), 1)

    def test_add_without_a_node_daemon_fails(self):
        r = self.node("add", "--primary-ip", "127.0.1.9", "node9.test")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.err.startswith("Failure: "), r.err)
        self.assertEqual(len(self.master.config.nodes), 1)

    def test_tags(self):
        r = self.node("add-tags", "node1.test", "rack:1", "ssd")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.node("list-tags", "node1.test").out, "rack:1\nssd\n")
        self.assertEqual(self.names("-o", "tags"), [["rack:1,ssd"]])
        self.assertEqual(self.node("remove-tags", "node1.test", "ssd").code, 0)
        self.assertEqual(self.node("list-tags", "node1.test").out, "rack:1\n")
