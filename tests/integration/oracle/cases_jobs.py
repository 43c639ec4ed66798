"""Cases: gnt-job, gnt-debug and gnt-filter (job ids are the same on both sides, see
runner.py; ``{lastjob}`` is the newest one)."""

from __future__ import annotations

import json

from tests.integration.oracle.model import cli

N1 = "node1.example.com"
N2 = "node2.example.com"
JOBS = ("gnt-job", "list", "-o", "id,status,summary")
FILTERS = ("gnt-filter", "list", "-o", "priority,predicates,action,reason_trail",
           "--no-headers", "--separator=|")
DELAY_OPS = json.dumps([{"OP_ID": "OP_TEST_DELAY", "duration": 0.01}])
TWO_OPS = json.dumps([{"OP_ID": "OP_TEST_DELAY", "duration": 0.01},
                      {"OP_ID": "OP_TEST_DELAY", "duration": 0.02, "on_master": False}])
BAD_OPS = json.dumps([{"OP_ID": "OP_NO_SUCH_THING"}])
FILTER_UUID = "$(gnt-filter list --no-headers -o uuid | head -n1)"
JOB_FIELDS = ["id", "status", "priority", "summary", "ops", "opstatus", "oplog", "opresult",
              "opstart", "opexec", "opend", "oppriority", "received_ts", "start_ts",
              "end_ts", "reason", "archived"]

#: Config fields of instances whose values are the same on both sides (no UUIDs, MACs,
#: timestamps or serial numbers).
INSTANCE_CONFIG_FIELDS = ("name,pnode,snodes,pnode.group,admin_state,admin_up,"
                          "admin_state_source,disk_template,disk.count,disk.sizes,"
                          "disk.spindles,disk_usage,nic.count,nic.modes,nic.links,nic.bridges,"
                          "nic.vlans,nic.ips,nic.networks,be/maxmem,be/memory,vcpus,"
                          "be/auto_balance,os,hypervisor,tags,network_port,hv/acpi,"
                          "custom_beparams")
INSTANCE_LIVE_FIELDS = "name,status,oper_state,oper_ram,oper_vcpus,console"

CASES = [
    # Ganeti archives nothing here, we archive every finished job (gnt-job(8)); the count
    # is masked when it is not 0 (it depends on the cases before), and both queues are
    # archived afterwards so that the job lists of the next cases compare.
    cli("job-autoarchive-all", "gnt-job", "autoarchive", "all",
        masks=(r"^Archived ([1-9]\d*) jobs",), archive_after=True),
    cli("job-list-empty", "gnt-job", "list"),
    cli("job-list-fields", "gnt-job", "list-fields"),
    cli("job-list-fields-some", "gnt-job", "list-fields", "id", "status", "archived"),
    cli("debug-delay", "gnt-debug", "delay", "0.01", then=[JOBS]),
    cli("debug-delay-zero", "gnt-debug", "delay", "0"),
    cli("debug-delay-negative", "gnt-debug", "delay", "--", "-1"),
    cli("debug-delay-not-a-number", "gnt-debug", "delay", "soon"),
    cli("debug-delay-no-args", "gnt-debug", "delay"),
    cli("debug-delay-no-master", "gnt-debug", "delay", "--no-master", "0.01"),
    cli("debug-delay-no-master-no-nodes", "gnt-debug", "delay", "--no-master", "-n",
        "nope.example.com", "0.01"),
    cli("debug-delay-repeat", "gnt-debug", "delay", "--repeat", "2", "0.01"),
    cli("debug-delay-fail", "gnt-debug", "delay", "--fail", "0.01"),
    cli("debug-delay-submit", "gnt-debug", "delay", "--submit", "0.01",
        then=[("gnt-job", "wait", "{lastjob}"), ("gnt-job", "info", "{lastjob}")]),
    cli("debug-delay-reason", "gnt-debug", "delay", "--reason", "testing", "0.01",
        then=[("gnt-job", "list", "-o", "id,reason", "{lastjob}")],
        masks=(r"'(gnt:(?:client|opcode):[a-z_]+)'",)),
    cli("job-info-last", "gnt-job", "info", "{lastjob}"),
    cli("job-info-two", "gnt-job", "info", "{lastjob-1}", "{lastjob}"),
    cli("job-info-unknown", "gnt-job", "info", "999999"),
    cli("job-info-not-a-number", "gnt-job", "info", "abc"),
    cli("job-watch-finished", "gnt-job", "watch", "{lastjob}"),
    cli("job-watch-unknown", "gnt-job", "watch", "999999"),
    cli("job-wait-finished", "gnt-job", "wait", "{lastjob}"),
    cli("job-wait-unknown", "gnt-job", "wait", "999999"),
    cli("job-list", "gnt-job", "list"),
    cli("job-list-no-headers", "gnt-job", "list", "--no-headers", "--separator=,"),
    cli("job-list-running", "gnt-job", "list", "--running"),
    cli("job-list-error", "gnt-job", "list", "--error", "-o", "id,status,summary"),
    cli("job-list-finished", "gnt-job", "list", "--finished", "-o", "id,status"),
    cli("job-list-pending", "gnt-job", "list", "--pending"),
    cli("job-list-ids", "gnt-job", "list", "-o", "id,status", "{lastjob}", "{lastjob-2}"),
    cli("job-list-unknown-id", "gnt-job", "list", "999999"),
    cli("job-list-filter", "gnt-job", "list", "-o", "id,summary", "-F",
        'status == "error"'),
    # ids only: the statuses of archived jobs depend on which side padded (runner.py)
    cli("job-list-archived", "gnt-job", "list", "--archived", "-o", "id,archived",
        "--no-headers"),
] + [
    cli(f"job-list-field-{field}", "gnt-job", "list", "-o", f"id,{field}", "{lastjob}")
    for field in JOB_FIELDS if field != "id"
] + [
    cli("job-cancel-finished", "gnt-job", "cancel", "{lastjob}"),
    cli("job-cancel-unknown", "gnt-job", "cancel", "999999"),
    cli("job-cancel-no-args", "gnt-job", "cancel"),
    cli("job-change-priority-finished", "gnt-job", "change-priority", "--priority", "high",
        "{lastjob}"),
    cli("job-change-priority-no-priority", "gnt-job", "change-priority", "{lastjob}"),
    cli("job-archive", "gnt-job", "archive", "{lastjob}",
        then=[("gnt-job", "list", "-o", "id", "{lastjob}")]),
    cli("job-archive-unknown", "gnt-job", "archive", "999999"),
    cli("job-autoarchive-age", "gnt-job", "autoarchive", "1d"),
    cli("job-autoarchive-bad", "gnt-job", "autoarchive", "yesterday"),
    cli("debug-locks", "gnt-debug", "locks"),
    cli("debug-locks-fields", "gnt-debug", "locks", "-o", "name,mode,owner,pending",
        "--no-headers"),
    cli("debug-locks-interval-bad", "gnt-debug", "locks", "--interval", "x"),
    cli("debug-submit-job", "gnt-debug", "submit-job", "{files}/delay.json",
        files={"delay.json": DELAY_OPS}, then=[("gnt-job", "info", "{lastjob}")]),
    cli("debug-submit-job-two-ops", "gnt-debug", "submit-job", "--op-repeat", "2",
        "{files}/two.json", files={"two.json": TWO_OPS},
        then=[("gnt-job", "list", "-o", "id,summary,opstatus", "{lastjob}")]),
    cli("debug-submit-job-bad-opcode", "gnt-debug", "submit-job", "{files}/bad.json",
        files={"bad.json": BAD_OPS}),
    cli("debug-submit-job-missing-file", "gnt-debug", "submit-job", "{files}/missing.json"),
    cli("debug-iallocator-relocate-unknown", "gnt-debug", "iallocator", "--mode",
        "relocate", "inst1.example.com"),
    cli("debug-iallocator-allocate-in", "gnt-debug", "iallocator", "--dir", "in",
        "--mode", "allocate", "--mem", "128", "--disks", "1024", "-t", "file",
        "--nics", "1", "-o", "noop+default", "inst1.example.com",
        masks=(r'"(?:free_memory|free_disk|total_disk|total_memory|reserved_memory|'
               r'i_pri_memory|i_pri_up_memory|free_spindles|total_spindles|'
               r'reserved_cpus|total_cpus)": (\d+)',)),
    cli("debug-wconfd-echo", "gnt-debug", "wconfd", "echo", "hello", timeout=1),
    cli("debug-wconfd-listalllocks", "gnt-debug", "wconfd", "listalllocks"),
    cli("debug-wconfd-listalllocksowners", "gnt-debug", "wconfd", "listalllocksowners"),
    cli("debug-wconfd-cleanuplocks", "gnt-debug", "wconfd", "cleanuplocks"),
    cli("debug-wconfd-flushconfig", "gnt-debug", "wconfd", "flushconfig"),
    cli("debug-wconfd-unknown", "gnt-debug", "wconfd", "foo"),
    cli("debug-test-osparams", "gnt-debug", "test-osparams", "--os-parameters-secret",
        "secret=x", then=[("gnt-job", "list", "-o", "id,summary,status", "{lastjob}")]),
    cli("debug-test-osparams-none", "gnt-debug", "test-osparams"),
    cli("debug-no-command", "gnt-debug"),
    # filters
    cli("filter-list-empty", "gnt-filter", "list"),
    cli("filter-list-fields", "gnt-filter", "list-fields"),
    cli("filter-add-reject-delay", "gnt-filter", "add", "--priority", "10", "--predicates",
        '[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]]', "--action", "REJECT",
        then=[FILTERS, ("gnt-debug", "delay", "0.01"), JOBS[:3] + ("id,status",
                                                               "{lastjob}")]),
    cli("filter-info", "gnt-filter", "info"),
    cli("filter-replace", "sh", "-c", f"gnt-filter replace --action PAUSE {FILTER_UUID}",
        then=[FILTERS]),
    cli("filter-replace-rate-limit", "sh", "-c",
        f"gnt-filter replace --action RATE_LIMIT,2 {FILTER_UUID}", then=[FILTERS]),
    cli("filter-delete", "sh", "-c", f"gnt-filter delete {FILTER_UUID}", then=[FILTERS]),
    cli("filter-add-accept-jobid", "gnt-filter", "add", "--predicates",
        '[["jobid", [">", "id", "watermark"]]]', "--action", "ACCEPT", then=[FILTERS]),
    cli("filter-add-reason", "gnt-filter", "add", "--priority", "5", "--predicates",
        '[["reason", ["=", "source", "gnt:client:gnt-debug"]]]', "--action", "CONTINUE",
        then=[FILTERS], unordered=True),
    cli("filter-list-separator", "gnt-filter", "list", "--no-headers", "--separator=|",
        "-o", "priority,action", unordered=True),
    cli("filter-delete-all", "sh", "-c", "for u in $(gnt-filter list --no-headers -o uuid); "
        "do gnt-filter delete $u || exit 1; done", then=[FILTERS]),
    cli("filter-add-bad-action", "gnt-filter", "add", "--action", "EXPLODE"),
    cli("filter-add-bad-predicates", "gnt-filter", "add", "--predicates", "not json"),
    cli("filter-add-bad-predicate-name", "gnt-filter", "add", "--predicates",
        '[["planet", ["=", "name", "mars"]]]'),
    cli("filter-add-negative-priority", "gnt-filter", "add", "--priority", "-1"),
    cli("filter-delete-unknown", "gnt-filter", "delete",
        "00000000-0000-0000-0000-000000000000"),
    cli("filter-info-unknown", "gnt-filter", "info", "00000000-0000-0000-0000-000000000000"),
    cli("filter-no-command", "gnt-filter"),
    # what other tools answer before instances exist
    cli("os-list", "gnt-os", "list"),
    # our virtual nodes keep their OS definitions below their own roots, the real ones
    # in /usr/share/ganeti/os: the path is masked
    cli("os-diagnose", "gnt-os", "diagnose", masks=(r"\(path: ([^)]*)\)",)),
    # issue 34: the parameters of every hypervisor Ganeti knows, enabled or not (Ganeti's
    # QA TestOsModifyValid/Invalid); the xen ones are refused by the nodes here, which lack
    # their kernels, in the order of the nodes' random UUIDs (masked)
    cli("os-modify-hv-xen-pvm", "gnt-os", "modify", "-H", "xen-pvm:root_path=/dev/sda5",
        "noop", masks=(r"failed on node (node\d)\.example\.com",)),
    cli("os-modify-hv-xen-hvm", "gnt-os", "modify", "-H", "xen-hvm:acpi=False,pae=True",
        "noop", masks=(r"failed on node (node\d)\.example\.com",)),
    cli("os-modify-hv-bad-boot-order", "gnt-os", "modify", "-H", "xen-hvm:boot_order=zz",
        "noop"),
    cli("os-modify-hv-negative", "gnt-os", "modify", "-H", "lxc:num_ttys=-1", "noop"),
    cli("os-modify-hv-unknown", "gnt-os", "modify", "-H", "blahblahblubb:bar=", "noop"),
    cli("os-modify-hv-not-enabled", "gnt-os", "modify", "-H", "chroot:init_script=/sbin/init",
        "-H", "lxc:num_ttys=3", "noop"),
    cli("os-modify-hv-not-enabled-back", "gnt-os", "modify", "-H", "-chroot", "-H", "-lxc",
        "noop"),
    cli("instance-list", "gnt-instance", "list"),
    cli("instance-list-fields-some", "gnt-instance", "list-fields", "name", "status"),
    cli("instance-info-unknown", "gnt-instance", "info", "inst1.example.com"),
    # the instances both sides have from the start (sides.py): one running, one stopped
    cli("instance-list-config-fields", "gnt-instance", "list", "-o", INSTANCE_CONFIG_FIELDS),
    cli("instance-list-live-fields", "gnt-instance", "list", "-o", INSTANCE_LIVE_FIELDS),
    cli("instance-list-names-short", "gnt-instance", "list", "--no-headers", "-o",
        "name,status", "inst12", "inst11.example.com"),
    cli("instance-list-unknown", "gnt-instance", "list", "inst11", "nope.example.com"),
    cli("instance-list-filter-running", "gnt-instance", "list", "--no-headers",
        "--separator=|", "-o", "name,oper_ram", "--filter", 'status == "running"'),
    cli("instance-list-filter-config", "gnt-instance", "list", "--no-headers", "-o",
        "name,nic.count,nic.bridge/1", "--filter", 'nic.count > 1 and admin_state == "down"'),
    cli("instance-list-units", "gnt-instance", "list", "--units=g", "-o",
        "name,disk_usage,be/maxmem,sda_size,sdb_size"),
] + [
    # The stored opcode of various opcodes as luxid echoes it (`gnt-job info` sorts its
    # keys; `-o ops` shows luxid's key order): defaults filled in, unset parameters left
    # out, and what the logical unit recorded in it (expanded names, node UUIDs, typed
    # parameter values, flags it dropped).
    cli("job-ops-tags", "gnt-cluster", "add-tags", "echo1",
        then=[("gnt-job", "list", "--no-headers", "-o", "ops", "{lastjob}"),
              ("gnt-cluster", "remove-tags", "echo1"), ("gnt-job", "info", "{lastjob}")]),
    cli("job-ops-delay-nodes", "gnt-debug", "delay", "--no-master", "-n", "node2", "0.01",
        then=[("gnt-job", "list", "--no-headers", "-o", "ops", "{lastjob}")]),
    cli("job-ops-node-modify-unset", "gnt-node", "modify", "--drained", "no", N2,
        then=[("gnt-job", "info", "{lastjob}")]),
    cli("job-ops-node-health", "gnt-node", "health", "node2",
        then=[("gnt-job", "info", "{lastjob}")]),
    cli("job-ops-group-add", "gnt-group", "add", "--node-parameters", "spindle_count=4",
        "-D", "drbd:resync-rate=100", "rack7",
        then=[("gnt-job", "info", "{lastjob}"), ("gnt-group", "remove", "rack7")]),
    cli("job-ops-verify-disks", "gnt-cluster", "verify-disks",
        then=[("gnt-job", "list", "--no-headers", "-o", "summary,ops", "{lastjob}")]),
]
