"""gnt-group: the argument-to-opcode mapping and output formatting against a scripted
master, and the commands end to end against a whole master daemon on a fake clock."""

from __future__ import annotations

import io
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_group
from ganeti.cli.framework import UsageError, build_parser
from ganeti.core import constants as c
from tests.cli.test_gnt_node import NodesCliTestCase, ScriptedMaster, fielddef, run
from tests.fakes.clirun import Run

GROUP_FIELDS = {f["name"]: f for f in [
    fielddef("name", "Group", c.QFT_TEXT),
    fielddef("uuid", "UUID", c.QFT_TEXT),
    fielddef("node_cnt", "Nodes", c.QFT_NUMBER),
    fielddef("pinst_cnt", "Instances", c.QFT_NUMBER),
    fielddef("alloc_policy", "AllocPolicy", c.QFT_TEXT),
    fielddef("ndparams", "NDParams", c.QFT_OTHER),
    fielddef("custom_ndparams", "CustomNDParams", c.QFT_OTHER),
    fielddef("diskparams", "DiskParameters", c.QFT_OTHER),
    fielddef("custom_diskparams", "CustomDiskParameters", c.QFT_OTHER),
    fielddef("ipolicy", "InstancePolicy", c.QFT_OTHER),
    fielddef("custom_ipolicy", "CustomInstancePolicy", c.QFT_OTHER),
    fielddef("node_list", "NodeList", c.QFT_OTHER),
    fielddef("pinst_list", "InstanceList", c.QFT_OTHER),
    fielddef("tags", "Tags", c.QFT_OTHER),
]}

IPOLICY = {
    "minmax": [{"min": {"cpu-count": 1, "memory-size": 128},
                "max": {"cpu-count": 8, "memory-size": 32768}}],
    "std": {"cpu-count": 1, "memory-size": 128},
    "disk-templates": ["drbd", "plain"],
    "vcpu-ratio": 4.0,
    "spindle-ratio": 32.0,
}


def two_groups() -> ScriptedMaster:
    master = ScriptedMaster()
    master.fielddefs["group"] = GROUP_FIELDS
    master.items["group"] = [
        {"name": "default", "node_cnt": 2, "pinst_cnt": 3, "alloc_policy": "preferred",
         "ndparams": {"ssh_port": 22, "spindle_count": 1}, "custom_ndparams": {},
         "diskparams": {"plain": {"stripes": 1}, "diskless": {}},
         "custom_diskparams": {}, "ipolicy": IPOLICY, "custom_ipolicy": {},
         "node_list": ["node1", "node2"], "pinst_list": ["a", "b", "c"], "tags": []},
        {"name": "rack2", "node_cnt": 0, "pinst_cnt": 0, "alloc_policy": "last_resort",
         "ndparams": {}, "custom_ndparams": {"ssh_port": 2222},
         "diskparams": {"plain": {"stripes": 2}}, "custom_diskparams": {"plain":
                                                                        {"stripes": 2}},
         "ipolicy": dict(IPOLICY, **{"vcpu-ratio": 2.0}),
         "custom_ipolicy": {"vcpu-ratio": 2.0, "disk-templates": ["plain"],
                            "minmax": [{"min": {"cpu-count": 2}, "max": {"cpu-count": 4}}]},
         "node_list": [], "pinst_list": [], "tags": ["x"]},
    ]
    return master


def parse(*argv: str) -> Any:
    return build_parser("gnt-group", "", gnt_group.COMMANDS, io.StringIO()).parse_args(argv)


class FakeGroupTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = two_groups()

    def group(self, *argv: str) -> Run:
        return run(gnt_group, self.fake, *argv)

    def only_op(self) -> dict[str, Any]:
        (op,) = self.fake.ops()
        for key in ("reason", "debug_level"):
            op.pop(key)
        return op


class ListTest(FakeGroupTestCase):
    def test_default_fields(self):
        r = self.group("list")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "Group   Nodes Instances AllocPolicy NDParams\n"
                                "default     2         3 preferred   ssh_port=22, "
                                "spindle_count=1\n"
                                "rack2       0         0 last_resort (empty)\n")
        self.assertEqual(self.fake.calls, [("Query", ("group", gnt_group.LIST_DEFAULT_FIELDS,
                                                      None))])

    def test_lists_and_names(self):
        r = self.group("list", "--separator", ";", "-o", "name,node_list,pinst_list",
                       "default")
        self.assertEqual(r.out, "Group;NodeList;InstanceList\ndefault;node1,node2;a,b,c\n")
        self.assertEqual(self.fake.calls[-1][1][2], ["|", ["==", "name", "default"]])

    def test_filter_expressions(self):
        r = self.group("list", "--no-headers", "-o", "name", 'alloc_policy == "last_resort"')
        self.assertEqual((r.code, r.out), (0, "rack2\n"), r.err)
        self.assertEqual(self.fake.calls[-1][1][2], ["==", "alloc_policy", "last_resort"])
        r = self.group("list", "--no-headers", "-o", "name", "-F", "node_cnt")
        self.assertEqual(r.out, "default\n")
        r = self.group("list", "--no-headers", "-o", "name", "--filter", '"x" not in tags')
        self.assertEqual(r.out, "default\n")
        self.assertEqual(self.fake.calls[-1][1][2], ["!", ["=[]", "tags", "x"]])

    def test_bad_filter_expression(self):
        r = self.group("list", "(node_cnt > 0")
        self.assertEqual(r.code, 1)
        self.assertIn("Invalid query filter at column 14: expected ')' to close the '(' at "
                      "column 1, found the end of the filter", r.err)
        r = self.group("list", "-F", "default", "rack2")
        self.assertIn("Exactly one argument must be given as a filter", r.err)
        self.assertEqual(self.fake.calls, [])

    def test_no_units_option(self):
        # Ganeti's gnt-group list has none: groups have no sizes
        r = self.group("list", "--units", "m")
        self.assertEqual(r.code, 1)
        self.assertIn("unrecognized arguments", r.err)

    def test_list_fields(self):
        r = self.group("list-fields", "--separator", "|", "alloc_policy")
        self.assertEqual(r.out, "Name|Type|Title|Description\n"
                                "alloc_policy|Text|AllocPolicy|the alloc_policy\n")


class InfoTest(FakeGroupTestCase):
    def test_inherited_and_own_values(self):
        r = self.group("info")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "\n".join([
            "- Node group: default",
            "  Node parameters: ",
            "    spindle_count: default (1)",
            "    ssh_port: default (22)",
            "  Disk parameters: ",
            "    diskless: default ({})",
            "    plain: ",
            "      stripes: default (1)",
            "  Instance policy: ",
            "    bounds specs: ",
            "      - max/0: ",
            "          cpu-count: default (8)",
            "          memory-size: default (32768)",
            "        min/0: ",
            "          cpu-count: default (1)",
            "          memory-size: default (128)",
            "    allowed disk templates: default (drbd, plain)",
            "    vcpu-ratio: default (4)",  # LUXI sends integral floats as integers
            "    spindle-ratio: default (32)",
            "- Node group: rack2",
            "  Node parameters: ",
            "  Disk parameters: ",
            "    plain: ",
            "      stripes: 2",
            "  Instance policy: ",
            "    bounds specs: ",
            "      - max/0: ",
            "          cpu-count: 4",
            "        min/0: ",
            "          cpu-count: 2",
            "    allowed disk templates: plain",
            "    vcpu-ratio: 2",
            "    spindle-ratio: default (32)",
        ]) + "\n")
        self.assertEqual(self.fake.calls, [("Query", ("group", gnt_group.INFO_FIELDS
                                                      + ["uuid"], None))])

    def test_unknown_group(self):
        # Ganeti's info skips unknown names and exits 0 (an empty line if none is known)
        r = self.group("info", "nowhere")
        self.assertEqual((r.code, r.out, r.err), (0, "\n", ""))
        r = self.group("info", "nowhere", "rack2")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(r.out.startswith("- Node group: rack2\n"), r.out)
        self.assertEqual(r.out.count("- Node group:"), 1)

    def test_list_of_unknown_name(self):
        # Ganeti: unknown_entity, exit 1; patterns may match nothing
        r = self.group("list", "default", "nowhere")
        self.assertEqual(r.code, 1)
        self.assertIn("NodeGroup name nowhere not found", r.err)
        self.assertIn("unknown_entity", r.err)
        r = self.group("list", "no*")
        self.assertEqual(r.code, 0, r.err)


class ShowIspecsCmdTest(FakeGroupTestCase):
    def test_own_specs_or_with_defaults_as_ganeti_prints_them(self):
        # Ganeti's PrintIPolicyCommand for a group: bounds only (no std), keys sorted
        r = self.group("show-ispecs-cmd")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "gnt-group add default\n"
                                "gnt-group add --ipolicy-bounds-specs min:cpu-count=2/"
                                "max:cpu-count=4 rack2\n")
        r = self.group("show-ispecs-cmd", "--include-defaults", "default")
        self.assertEqual(r.out, "gnt-group add --ipolicy-bounds-specs min:cpu-count=1,"
                                "memory-size=128/max:cpu-count=8,memory-size=32768 default\n")


class AddModifyTest(FakeGroupTestCase):
    def test_add_with_every_option(self):
        r = self.group("add", "--alloc-policy", "unallocable", "-N", "ssh_port=2222",
                       "-D", "plain:stripes=2", "-D", "drbd:resync-rate=1000",
                       "--ipolicy-vcpu-ratio", "2", "--ipolicy-spindle-ratio", "16",
                       "--ipolicy-disk-templates", "plain,drbd", "--dry-run", "rack3")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.only_op(), {
            "OP_ID": "OP_GROUP_ADD", "group_name": "rack3", "alloc_policy": "unallocable",
            "ndparams": {"ssh_port": "2222"},
            "diskparams": {"plain": {"stripes": "2"}, "drbd": {"resync-rate": "1000"}},
            "ipolicy": {"vcpu-ratio": 2.0, "spindle-ratio": 16.0,
                        "disk-templates": ["plain", "drbd"]},
            "dry_run": True})

    def test_add_with_nothing_else(self):
        self.assertEqual(gnt_group.add_opcode(parse("add", "g")),
                         {"OP_ID": "OP_GROUP_ADD", "group_name": "g"})

    def test_bad_values(self):
        r = self.group("add", "--alloc-policy", "sometimes", "g")
        self.assertEqual(r.code, 1)
        self.assertIn("invalid choice: 'sometimes'", r.err)
        with self.assertRaises(UsageError):
            gnt_group.add_opcode(parse("add", "-D", "stripes=2", "g"))
        self.assertEqual(self.fake.calls, [])

    def test_modify_reports_changes(self):
        self.fake.results["OP_GROUP_SET_PARAMS"] = lambda op: [
            ["alloc_policy", "last_resort"], ["ndparams", {"ssh_port": 2222}]]
        r = self.group("modify", "--alloc-policy", "last_resort", "-N", "ssh_port=2222",
                       "default")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "Modified node group default\n"
                                " - alloc_policy -> last_resort\n"
                                " - ndparams -> {'ssh_port': 2222}\n")
        op = self.only_op()
        self.assertEqual(op["OP_ID"], "OP_GROUP_SET_PARAMS")
        self.assertEqual((op["group_name"], op["alloc_policy"], op["ndparams"]),
                         ("default", "last_resort", {"ssh_port": "2222"}))

    def test_modify_needs_a_parameter(self):
        r = self.group("modify", "default")
        self.assertEqual((r.code, r.err),
                         (1, "Usage error: Please give at least one of the parameters.\n"))
        self.assertEqual(self.fake.calls, [])

    def test_modify_submit(self):
        r = self.group("modify", "--submit", "--ipolicy-spindle-ratio", "8", "rack2")
        self.assertEqual((r.code, r.out, r.err), (0, "", "JobID: 1\n"))


class RemoveRenameAssignTest(FakeGroupTestCase):
    def test_remove(self):
        self.assertEqual(self.group("remove", "rack2").code, 0)
        self.assertEqual(self.only_op(), {"OP_ID": "OP_GROUP_REMOVE", "group_name": "rack2",
                                          "dry_run": False})

    def test_rename(self):
        r = self.group("rename", "--priority", "low", "rack2", "rack9")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.only_op(), {"OP_ID": "OP_GROUP_RENAME", "group_name": "rack2",
                                          "new_name": "rack9", "dry_run": False,
                                          "priority": c.OP_PRIO_LOW})

    def test_assign_nodes(self):
        r = self.group("assign-nodes", "--force", "rack2", "node1", "node2")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.only_op(), {"OP_ID": "OP_GROUP_ASSIGN_NODES",
                                          "group_name": "rack2", "force": True,
                                          "nodes": ["node1", "node2"], "dry_run": False})
        r = self.group("assign-nodes", "rack2")
        self.assertEqual(r.code, 1)
        self.assertIn("required: NODE", r.err)


class TagsTest(FakeGroupTestCase):
    def test_kind_is_nodegroup(self):
        self.fake.tags[("nodegroup", "rack2")] = ["x"]
        self.assertEqual(self.group("list-tags", "rack2").out, "x\n")
        self.assertEqual(self.group("add-tags", "rack2", "y").code, 0)
        self.assertEqual(self.group("remove-tags", "rack2", "x").code, 0)
        self.assertEqual([(op["OP_ID"], op["kind"], op["name"], op["tags"])
                          for op in self.fake.ops()],
                         [("OP_TAGS_SET", "nodegroup", "rack2", ["y"]),
                          ("OP_TAGS_DEL", "nodegroup", "rack2", ["x"])])


class HelpTest(SynchronousTestCase):
    def test_every_command_has_help(self):
        fake = ScriptedMaster()
        r = run(gnt_group, fake, "--help")
        for cmd in gnt_group.COMMANDS:
            self.assertIn(cmd.name, r.out)
            sub = run(gnt_group, fake, cmd.name, "--help")
            self.assertEqual(sub.code, 0, cmd.name)
            self.assertIn("usage: gnt-group " + cmd.name, sub.out)
        self.assertEqual(fake.calls, [])


# --- end to end: a whole master daemon -------------------------------------------

class GroupEndToEndTest(NodesCliTestCase):
    def group(self, *argv: str) -> Run:
        return self.run_tool(gnt_group, *argv)

    def group_names(self) -> list[str]:
        return sorted(g.name for g in self.master.config.nodegroups.values())

    def test_add_list_rename_remove(self):
        r = self.group("list")
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[0].split(), ["Group", "Nodes", "Instances", "AllocPolicy",
                                            "NDParams"])
        self.assertEqual(lines[1].split()[:4], ["default", "1", "0", "preferred"])
        self.assertIn("ssh_port=22", lines[1])
        self.assertEqual(len(lines), 2)

        r = self.group("add", "--alloc-policy", "last_resort", "rack2")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(self.group_names(), ["default", "rack2"])
        r = self.group("list", "--no-headers", "--separator", "|",
                       "-o", "name,node_cnt,alloc_policy", "rack2")
        self.assertEqual(r.out, "rack2|0|last_resort\n")

        r = self.group("rename", "rack2", "rack3")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.group_names(), ["default", "rack3"])

        r = self.group("remove", "rack3")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.group_names(), ["default"])

    def test_add_existing_and_remove_non_empty(self):
        r = self.group("add", "default")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.err.startswith("Failure: prerequisites not met"), r.err)
        r = self.group("remove", "default")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.err.startswith("Failure: prerequisites not met"), r.err)
        self.assertEqual(self.group_names(), ["default"])

    def test_modify_and_info(self):
        r = self.group("modify", "--alloc-policy", "unallocable", "default")
        self.assertEqual((r.code, r.out), (0, ""), r.err)  # Ganeti reports nd/disk params only
        r = self.group("modify", "-D", "drbd:resync-rate=100", "default")
        self.assertEqual(r.out, "Modified node group default\n"
                                " - diskparams -> {'drbd': {'resync-rate': 100}}\n")
        r = self.group("list", "--no-headers", "-o", "alloc_policy")
        self.assertEqual(r.out, "unallocable\n")
        r = self.group("info", "default")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(r.out.startswith("- Node group: default\n  Node parameters: \n"),
                        r.out)
        self.assertIn("    ssh_port: default (22)\n", r.out)
        self.assertIn("  Instance policy: \n    bounds specs: \n      - max/0: \n", r.out)
        self.assertIn("    allowed disk templates: default (diskless, file)\n", r.out)

    def test_list_with_filter_expressions(self):
        self.assertEqual(self.group("add", "--alloc-policy", "last_resort", "rack2").code, 0)
        r = self.group("list", "--no-headers", "-o", "name", "node_cnt > 0")
        self.assertEqual((r.code, r.out), (0, "default\n"), r.err)
        r = self.group("list", "--no-headers", "-o", "name",
                       'alloc_policy != "preferred" or name == "nothing"')
        self.assertEqual(r.out, "rack2\n")
        r = self.group("list", "--no-headers", "-o", "name", "-F", "name =~ /^rack/")
        self.assertEqual(r.out, "rack2\n")
        r = self.group("list", "size > 3")
        self.assertEqual(r.code, 1)
        self.assertIn("unknown field 'size'", r.err)

    def test_assign_nodes(self):
        self.add_node(2)
        self.assertEqual(self.group("add", "rack2").code, 0)
        r = self.group("assign-nodes", "rack2", "node2.test")
        self.assertEqual(r.code, 0, r.err)
        r = self.group("list", "--no-headers", "--separator", "|", "-o",
                       "name,node_cnt,node_list")
        self.assertEqual(r.out, "default|1|node1.test\nrack2|1|node2.test\n")
        self.assertEqual(self.node("list", "--no-headers", "-o", "group", "node2").out,
                         "rack2\n")
        r = self.group("remove", "rack2")
        self.assertEqual(r.code, 1)
        self.assertIn("rack2", r.err)

    def test_tags(self):
        self.assertEqual(self.group("add-tags", "default", "t1").code, 0)
        self.assertEqual(self.group("list-tags", "default").out, "t1\n")
        self.assertEqual(self.group("remove-tags", "default", "t1").code, 0)
        self.assertEqual(self.group("list-tags", "default").out, "")
