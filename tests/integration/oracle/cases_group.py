"""Cases: gnt-group (queries, then a second group made, changed, used and removed)."""

from __future__ import annotations

from tests.integration.oracle.model import cli

N2 = "node2.example.com"
LIST = ("gnt-group", "list", "-o", "name,node_cnt,node_list,alloc_policy,tags")
INFO = ("gnt-group", "info", "rack2")

FIELDS = ["alloc_policy", "ctime", "custom_diskparams", "custom_ipolicy", "custom_ndparams",
          "diskparams", "ipolicy", "mtime", "ndp/cpu_speed", "ndp/exclusive_storage",
          "ndp/oob_program", "ndp/ovs", "ndp/ovs_link", "ndp/ovs_name", "ndp/spindle_count",
          "ndp/ssh_port", "ndparams", "node_cnt", "node_list", "pinst_cnt", "pinst_list",
          "serial_no", "tags", "uuid"]

READS = [
    cli("group-list", "gnt-group", "list"),
    cli("group-list-no-headers", "gnt-group", "list", "--no-headers", "--separator=:"),
    # the serial number of the default group depends on how each side was set up
    cli("group-list-plus", "gnt-group", "list", "-o", "+uuid,serial_no", masks=(r" (\d+)$",)),
    cli("group-list-default", "gnt-group", "list", "default"),
    cli("group-list-unknown", "gnt-group", "list", "nope"),
    cli("group-list-filter", "gnt-group", "list", "-F", "node_cnt > 1"),
    cli("group-list-fields", "gnt-group", "list-fields"),
    cli("group-list-fields-some", "gnt-group", "list-fields", "name", "ipolicy"),
    cli("group-list-fields-unknown", "gnt-group", "list-fields", "nope"),
    cli("group-info", "gnt-group", "info"),
    cli("group-info-default", "gnt-group", "info", "default"),
    cli("group-info-unknown", "gnt-group", "info", "nope"),
    cli("group-list-tags", "gnt-group", "list-tags", "default"),
    cli("group-show-ispecs-cmd", "gnt-group", "show-ispecs-cmd"),
    cli("group-show-ispecs-cmd-unknown", "gnt-group", "show-ispecs-cmd", "nope"),
    cli("group-evacuate-default", "gnt-group", "evacuate", "default"),
    cli("group-remove-default", "gnt-group", "remove", "default"),
    cli("group-remove-unknown", "gnt-group", "remove", "nope"),
    cli("group-no-command", "gnt-group"),
] + [
    cli(f"group-list-field-{field.replace('/', '-')}", "gnt-group", "list", "-o",
        f"name,{field}")
    for field in FIELDS if field != "serial_no"
] + [
    cli("group-list-field-serial_no", "gnt-group", "list", "-o", "name,serial_no",
        masks=(r" (\d+)$",)),
]

CHANGES = [
    cli("group-add", "gnt-group", "add", "rack2", then=[LIST]),
    cli("group-add-existing", "gnt-group", "add", "rack2"),
    cli("group-add-bad-name", "gnt-group", "add", "bad name!"),
    cli("group-add-with-params", "gnt-group", "add", "--alloc-policy", "last_resort",
        "--node-parameters", "spindle_count=4", "-D", "drbd:resync-rate=100",
        "--ipolicy-vcpu-ratio", "2", "rack3", then=[("gnt-group", "info", "rack3")]),
    cli("group-add-bad-policy", "gnt-group", "add", "--alloc-policy", "sometimes", "rack4"),
    cli("group-modify-alloc-policy", "gnt-group", "modify", "--alloc-policy", "unallocable",
        "rack2", then=[LIST]),
    cli("group-modify-diskparams", "gnt-group", "modify", "-D", "drbd:resync-rate=100",
        "rack2", then=[INFO, ("gnt-group", "list", "-o", "name,custom_diskparams")]),
    cli("group-modify-ndparams", "gnt-group", "modify", "--node-parameters",
        "ssh_port=2222", "rack2", then=[("gnt-group", "list", "-o", "name,custom_ndparams")]),
    cli("group-modify-ipolicy-std", "gnt-group", "modify", "--ipolicy-std-specs",
        "memory-size=256", "rack2", then=[INFO]),
    cli("group-modify-ipolicy-bounds", "gnt-group", "modify", "--ipolicy-bounds-specs",
        "min:disk-size=0,cpu-count=1,disk-count=0,memory-size=64,nic-count=0,spindle-use=0"
        "/max:disk-size=2048,cpu-count=2,disk-count=2,memory-size=512,nic-count=2,"
        "spindle-use=2", "rack2", then=[INFO, ("gnt-group", "show-ispecs-cmd", "rack2")]),
    cli("group-modify-ipolicy-ratio", "gnt-group", "modify", "--ipolicy-vcpu-ratio", "3",
        "rack2", then=[("gnt-group", "list", "-o", "name,custom_ipolicy")]),
    cli("group-modify-ipolicy-disk-templates", "gnt-group", "modify",
        "--ipolicy-disk-templates", "diskless", "rack2", then=[INFO]),
    cli("group-modify-nothing", "gnt-group", "modify", "rack2"),
    cli("group-modify-unknown", "gnt-group", "modify", "--alloc-policy", "preferred", "nope"),
    cli("group-modify-bad-diskparam", "gnt-group", "modify", "-D", "drbd:nope=1", "rack2"),
    cli("group-add-tags", "gnt-group", "add-tags", "rack2", "blue", "green",
        then=[("gnt-group", "list-tags", "rack2"), LIST]),
    cli("group-remove-tags", "gnt-group", "remove-tags", "rack2", "green",
        then=[("gnt-group", "list-tags", "rack2")]),
    cli("group-rename", "gnt-group", "rename", "rack2", "rack5", then=[LIST]),
    cli("group-rename-to-existing", "gnt-group", "rename", "rack5", "rack3"),
    cli("group-rename-unknown", "gnt-group", "rename", "nope", "rack9"),
    cli("group-assign-nodes", "gnt-group", "assign-nodes", "rack5", N2,
        then=[LIST, ("gnt-node", "list", "-o", "name,group")]),
    cli("group-list-filter-nodes", "gnt-group", "list", "-o", "name", "-F",
        f'"{N2}" in node_list'),
    cli("group-remove-nonempty", "gnt-group", "remove", "rack5"),
    cli("group-assign-nodes-back", "gnt-group", "assign-nodes", "default", N2,
        then=[LIST]),
    cli("group-assign-unknown-node", "gnt-group", "assign-nodes", "default",
        "nope.example.com"),
    cli("group-remove", "gnt-group", "remove", "rack5", then=[LIST]),
    cli("group-remove-rack3", "gnt-group", "remove", "rack3", then=[LIST]),
    cli("group-modify-default-diskparams", "gnt-group", "modify", "-D",
        "drbd:resync-rate=100", "default", then=[("gnt-group", "list", "-o",
                                                   "name,custom_diskparams")]),
    cli("group-modify-default-diskparams-back", "gnt-group", "modify", "-D",
        "drbd:resync-rate=default", "default", then=[("gnt-group", "list", "-o",
                                                       "name,custom_diskparams")]),
]

CASES = READS + CHANGES
