"""Cases: gnt-node (queries with every field, filters and options; then role, parameter and
tag changes, each undone)."""

from __future__ import annotations

from tests.integration.oracle.model import cli

N1, N2, N3 = "node1.example.com", "node2.example.com", "node3.example.com"
ROLES = ("gnt-node", "list", "-o", "name,role,master_candidate,drained,offline,"
         "master_capable,vm_capable")
# Values the host changes between two reads (free memory and disk), masked on both sides.
DYNAMIC = (r"^node\d\.example\.com( .*)$", r"^Node( .*)$")
SEP_DYNAMIC = (r"^node\d\.example\.com\|(.*)$", r"^Node\|(.*)$")

# Fields whose values do not change while the oracle runs (so any difference is real).
STATIC_FIELDS = [
    "bootid", "cnodes", "cnos", "csockets", "ctime", "ctotal", "custom_ndparams",
    "disk_state", "drained", "dtotal", "group", "group.uuid", "hv_state", "master",
    "master_candidate", "master_capable", "mtime", "mtotal", "name", "ndp/cpu_speed",
    "ndp/exclusive_storage", "ndp/oob_program", "ndp/ovs", "ndp/ovs_link", "ndp/ovs_name",
    "ndp/spindle_count", "ndp/ssh_port", "ndparams", "offline", "pinst_cnt", "pinst_list",
    "pip", "powered", "role", "serial_no", "sinst_cnt", "sinst_list", "sip", "spfree",
    "sptotal", "tags", "uuid", "vm_capable",
]

READS = [
    cli("node-list", "gnt-node", "list", masks=DYNAMIC),
    cli("node-list-no-headers", "gnt-node", "list", "--no-headers", "-o", "name,pip,sip"),
    cli("node-list-separator", "gnt-node", "list", "--separator=|", masks=SEP_DYNAMIC),
    cli("node-list-units-m", "gnt-node", "list", "--units=m", "-o", "name,dtotal,mtotal"),
    cli("node-list-units-g", "gnt-node", "list", "--units=g", "-o", "name,dtotal,mtotal"),
    cli("node-list-units-bad", "gnt-node", "list", "--units=x"),
    cli("node-list-plus-fields", "gnt-node", "list", "-o", "+group,role", masks=DYNAMIC),
    cli("node-list-verbose", "gnt-node", "list", "-v", "-o", "name,tags"),
    cli("node-list-roles", *ROLES),
    cli("node-list-names", "gnt-node", "list", "-o", "name,pip", N2, N1),
    cli("node-list-short-name", "gnt-node", "list", "-o", "name", "node2"),
    cli("node-list-unknown-name", "gnt-node", "list", "nope.example.com"),
    cli("node-list-unknown-field", "gnt-node", "list", "-o", "name,nosuchfield"),
    cli("node-list-filter-eq", "gnt-node", "list", "-o", "name", "-F",
        f'name == "{N3}"'),
    cli("node-list-filter-regex", "gnt-node", "list", "-o", "name", "-F",
        "name =~ m/node[12]/"),
    cli("node-list-filter-bool", "gnt-node", "list", "-o", "name,master", "-F",
        "master_candidate and not master"),
    cli("node-list-filter-in", "gnt-node", "list", "-o", "name", "-F",
        f'"{N1}" in name or pip == "x"'),
    cli("node-list-filter-bad", "gnt-node", "list", "-F", "name =="),
    cli("node-list-filter-unknown-field", "gnt-node", "list", "-F", "nope == 1"),
    cli("node-list-filter-and-names", "gnt-node", "list", "-F", "master", N1),
    cli("node-list-fields", "gnt-node", "list-fields"),
    cli("node-list-fields-some", "gnt-node", "list-fields", "name", "pip", "ndp/ssh_port"),
    cli("node-list-fields-unknown", "gnt-node", "list-fields", "nope"),
    cli("node-list-fields-separator", "gnt-node", "list-fields", "--separator=,",
        "--no-headers", "role", "tags"),
    cli("node-info-all", "gnt-node", "info"),
    cli("node-info-one", "gnt-node", "info", N2),
    cli("node-info-two", "gnt-node", "info", N3, N1),
    cli("node-info-unknown", "gnt-node", "info", "nope.example.com"),
    cli("node-list-tags-empty", "gnt-node", "list-tags", N1),
    cli("node-list-tags-unknown", "gnt-node", "list-tags", "nope.example.com"),
    cli("node-list-storage", "gnt-node", "list-storage",
        masks=(r"supported storage types \(([^)]*)\)",)),
    cli("node-list-storage-file", "gnt-node", "list-storage", "--storage-type", "file",
        masks=(r"^node\d\.example\.com +\S+ +(.*)$",), unordered=True),
    cli("node-volumes", "gnt-node", "volumes"),
    cli("node-list-drbd", "gnt-node", "list-drbd", N1),
    cli("node-health", "gnt-node", "health"),
    cli("node-health-one", "gnt-node", "health", N2),
    cli("node-power-status", "gnt-node", "power", "status", N2),
    cli("node-migrate-empty", "gnt-node", "migrate", "-f", N2),
    cli("node-evacuate-empty", "gnt-node", "evacuate", "-f", "-s", N2),
    cli("node-failover-empty", "gnt-node", "failover", "-f", N2),
    cli("node-add-existing", "gnt-node", "add", N2),
    cli("node-add-readd-master", "gnt-node", "add", "--readd", "--no-ssh-key-check", N1),
    # every storage type a user may name is sent; the job refuses what cannot change
    cli("node-modify-storage-no-change", "gnt-node", "modify-storage", N1, "file", "x"),
    cli("node-modify-storage-file", "gnt-node", "modify-storage", "--allocatable=no", N1,
        "file", "x"),
    cli("node-modify-storage-unknown-type", "gnt-node", "modify-storage",
        "--allocatable=no", N1, "rados", "x"),
    cli("node-modify-storage-unknown-node", "gnt-node", "modify-storage",
        "--allocatable=no", "nope.example.com", "file", "x"),
    cli("node-repair-storage-file", "gnt-node", "repair-storage", N1, "file", "x"),
    cli("storage-diagnose", "gnt-storage", "diagnose"),
    cli("storage-info", "gnt-storage", "info", "foo"),
    cli("node-remove-master", "gnt-node", "remove", N1),
    cli("node-remove-unknown", "gnt-node", "remove", "nope.example.com"),
    cli("node-no-command", "gnt-node"),
] + [
    cli(f"node-list-field-{field.replace('/', '-').replace('.', '-')}", "gnt-node", "list",
        "-o", f"name,{field}")
    for field in STATIC_FIELDS if field != "name"
] + [
    cli("node-list-dynamic-fields", "gnt-node", "list", "--separator=|", "-o",
        "name,mfree,mnode,dfree", masks=(r"^node\d\.example\.com\|(.*)$",)),
]

MODIFY = [
    cli("node-modify-nothing", "gnt-node", "modify", N2),
    cli("node-modify-unknown", "gnt-node", "modify", "-D", "yes", "nope.example.com"),
    cli("node-modify-two-flags", "gnt-node", "modify", "--master-capable", "yes",
        "--vm-capable", "yes", N2, then=[ROLES]),
    cli("node-modify-drain-and-offline", "gnt-node", "modify", "-D", "yes", "-O", "yes", N2),
    cli("node-modify-demote-candidate", "gnt-node", "modify", "-C", "no", N3, then=[ROLES]),
    cli("node-modify-promote-candidate", "gnt-node", "modify", "-C", "yes", N3,
        then=[ROLES]),
    cli("node-modify-drain", "gnt-node", "modify", "-D", "yes", N3, then=[ROLES]),
    cli("node-modify-undrain", "gnt-node", "modify", "-D", "no", N3, then=[ROLES]),
    cli("node-modify-auto-promote", "gnt-node", "modify", "-D", "no", "-C", "yes",
        "--auto-promote", N3, then=[ROLES]),
    cli("node-modify-offline", "gnt-node", "modify", "-O", "yes", N3, then=[ROLES]),
    cli("node-modify-online", "gnt-node", "modify", "-O", "no", N3, then=[ROLES]),
    cli("node-modify-offline-master", "gnt-node", "modify", "-O", "yes", N1),
    cli("node-modify-demote-master", "gnt-node", "modify", "-C", "no", N1),
    cli("node-modify-vm-capable", "gnt-node", "modify", "--vm-capable", "no", N3,
        then=[ROLES]),
    cli("node-modify-vm-capable-back", "gnt-node", "modify", "--vm-capable", "yes", N3),
    cli("node-modify-master-capable", "gnt-node", "modify", "--master-capable", "no", N3,
        then=[ROLES]),
    cli("node-modify-master-capable-back", "gnt-node", "modify", "--master-capable", "yes",
        N3),
    cli("node-modify-candidate-back", "gnt-node", "modify", "-C", "yes", N3, then=[ROLES]),
    cli("node-modify-secondary-ip", "gnt-node", "modify", "-s", "127.0.44.99", N2),
    cli("node-modify-ndparams", "gnt-node", "modify", "--node-parameters",
        "spindle_count=3", N2, then=[("gnt-node", "info", N2)]),
    cli("node-modify-ndparams-back", "gnt-node", "modify", "--node-parameters",
        "spindle_count=default", N2, then=[("gnt-node", "list", "-o",
                                             "name,custom_ndparams")]),
    cli("node-modify-ndparams-bad", "gnt-node", "modify", "--node-parameters",
        "spindle_count=x", N2),
    cli("node-modify-bad-bool", "gnt-node", "modify", "-D", "maybe", N2),
]

TAGS = [
    cli("node-add-tags", "gnt-node", "add-tags", N2, "rack:1", "ssd",
        then=[("gnt-node", "list-tags", N2), ("gnt-node", "list", "-o", "name,tags")]),
    cli("node-add-tags-unknown-node", "gnt-node", "add-tags", "nope.example.com", "x"),
    cli("node-add-tags-bad", "gnt-node", "add-tags", N2, "a b"),
    cli("node-search-tags", "gnt-cluster", "search-tags", "ssd"),
    cli("node-list-filter-tags", "gnt-node", "list", "-o", "name", "-F", '"ssd" in tags'),
    cli("node-remove-tags", "gnt-node", "remove-tags", N2, "rack:1", "ssd",
        then=[("gnt-node", "list-tags", N2)]),
    cli("node-remove-tags-missing", "gnt-node", "remove-tags", N2, "nothing"),
]

CASES = READS + MODIFY + TAGS
