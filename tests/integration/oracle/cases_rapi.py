"""Cases: Ganeti's RAPI client (``python3-ganeti-rapi``) methods that need no instances,
and htools reading the cluster through LUXI (``-L``) and RAPI (``-m``)."""

from __future__ import annotations

from tests.integration.oracle.model import call, cli, rapi, rapi_step

N1, N2, N3 = "node1.example.com", "node2.example.com", "node3.example.com"
# Host-dependent numbers in node answers (free memory/disk change between reads).
DYNAMIC = (r'"(?:mfree|mnode|dfree|spfree)": (\d+)',)
HTOOLS_DYNAMIC = (r"(?m)^(?:  MEM|  -|   [a-z_]+ +|Cluster score|Initial score|"
                  r"  - node node\d\.example\.com is missing| *node\d).*?(\d[\d.]*.*)$",)
WAIT = "wait_job"

READS = [
    rapi("rapi-version", call("GetVersion")),
    rapi("rapi-features", call("GetFeatures"), unordered=True),
    rapi("rapi-info", call("GetInfo")),
    rapi("rapi-info-reason", call("GetInfo", reason="oracle")),
    rapi("rapi-operating-systems", call("GetOperatingSystems")),
    rapi("rapi-cluster-tags", call("GetClusterTags")),
    rapi("rapi-nodes", call("GetNodes")),
    rapi("rapi-nodes-bulk", call("GetNodes", bulk=True), masks=DYNAMIC),
    rapi("rapi-node", call("GetNode", N2), masks=DYNAMIC),
    rapi("rapi-node-unknown", call("GetNode", "nope.example.com")),
    rapi("rapi-node-role", call("GetNodeRole", N1), call("GetNodeRole", N2)),
    rapi("rapi-node-role-unknown", call("GetNodeRole", "nope.example.com")),
    rapi("rapi-node-tags", call("GetNodeTags", N3)),
    rapi("rapi-node-storage-file", call("GetNodeStorageUnits", N1, "file",
                                        ["name", "size", "used", "free"])),
    rapi("rapi-groups", call("GetGroups")),
    rapi("rapi-groups-bulk", call("GetGroups", bulk=True)),
    rapi("rapi-group", call("GetGroup", "default")),
    rapi("rapi-group-unknown", call("GetGroup", "nope")),
    rapi("rapi-group-tags", call("GetGroupTags", "default")),
    rapi("rapi-jobs", call("GetJobs")),
    rapi("rapi-jobs-bulk", call("GetJobs", bulk=True)),
    rapi("rapi-job-unknown", call("GetJobStatus", 999999)),
    rapi("rapi-filters", call("GetFilters"), call("GetFilters", bulk=True)),
    rapi("rapi-filter-unknown", call("GetFilter", "00000000-0000-0000-0000-000000000000")),
    rapi("rapi-networks", call("GetNetworks")),
    rapi("rapi-instances", call("GetInstances")),
] + [
    rapi(f"rapi-query-{what}", call("Query", what, fields), masks=DYNAMIC)
    for what, fields in (("node", ["name", "role", "pip", "group", "tags", "mtotal"]),
                         ("group", ["name", "node_cnt", "alloc_policy", "ipolicy"]),
                         ("job", ["id", "status", "summary"]),
                         ("lock", ["name", "mode", "owner", "pending"]),
                         ("filter", ["uuid", "priority", "action"]),
                         ("cluster", ["name", "master_node"]),
                         ("instance", ["name"]),
                         ("os", ["name"]))
] + [
    rapi("rapi-query-node-filter", call("Query", "node", ["name"],
                                        qfilter=["=", "name", N2])),
    rapi("rapi-query-node-filter-regex", call("Query", "node", ["name", "master"],
                                              qfilter=["=~", "name", "node[13]"])),
    rapi("rapi-query-node-filter-and", call("Query", "node", ["name"], qfilter=[
        "&", ["!", ["?", "master"]], ["?", "master_candidate"]])),
    rapi("rapi-query-node-unknown-field", call("Query", "node", ["name", "nope"])),
    rapi("rapi-query-node-bad-filter", call("Query", "node", ["name"], qfilter=["~~", "x"])),
    rapi("rapi-query-unknown-resource", call("Query", "planet", ["name"])),
    rapi("rapi-query-instance-live", call("Query", "instance", [
        "name", "status", "oper_state", "oper_ram", "disk.sizes", "nic.count", "sda_size",
        "nic.mac/5", "be/maxmem"], qfilter=["|", ["=", "name", "inst12.example.com"],
                                             ["=", "status", "running"]])),
    rapi("rapi-query-instance-fields", call("QueryFields", "instance",
                                            ["name", "sda_size", "nic.vlan/7", "nope"])),
    rapi("rapi-instance-console", call("GetInstanceConsole", "inst11.example.com"),
         call("GetInstanceConsole", "inst12.example.com"),
         call("GetInstanceConsole", "nope.example.com")),
    rapi("rapi-instance-tags", call("GetInstanceTags", "inst11.example.com"),
         call("GetInstanceTags", "nope.example.com")),
    rapi("rapi-query-fields-node", call("QueryFields", "node")),
    rapi("rapi-query-fields-node-some", call("QueryFields", "node", ["name", "ndp/ssh_port"])),
    rapi("rapi-query-fields-group", call("QueryFields", "group")),
    rapi("rapi-query-fields-job", call("QueryFields", "job")),
    rapi("rapi-query-fields-lock", call("QueryFields", "lock")),
    rapi("rapi-query-fields-filter", call("QueryFields", "filter")),
]

CHANGES = [
    rapi("rapi-cluster-tags-add", call("AddClusterTags", ["r1", "r2"]), call(WAIT, "$0"),
         call("GetClusterTags")),
    rapi("rapi-cluster-tags-delete", call("DeleteClusterTags", ["r1", "r2"]),
         call(WAIT, "$0"), call("GetClusterTags")),
    rapi("rapi-cluster-tags-bad", call("AddClusterTags", ["bad tag"]), call(WAIT, "$0")),
    rapi("rapi-modify-cluster", call("ModifyCluster", max_running_jobs=18),
         call(WAIT, "$0"), then=[("gnt-cluster", "info"), rapi_step(
             call("ModifyCluster", max_running_jobs=20), call(WAIT, "$0"))]),
    rapi("rapi-modify-cluster-ipolicy", call("ModifyCluster", ipolicy={"std": {
        "memory-size": 256}}), call(WAIT, "$0"), then=[
             ("gnt-cluster", "show-ispecs-cmd"),
             rapi_step(call("ModifyCluster", ipolicy={"std": {"memory-size": 128}}),
                       call(WAIT, "$0"))]),
    rapi("rapi-modify-cluster-bad-param", call("ModifyCluster", no_such_param=1)),
    rapi("rapi-modify-cluster-bad-type", call("ModifyCluster", candidate_pool_size="many")),
    rapi("rapi-node-tags-add", call("AddNodeTags", N3, ["t1"]), call(WAIT, "$0"),
         call("GetNodeTags", N3), call("DeleteNodeTags", N3, ["t1"]), call(WAIT, "$3"),
         call("GetNodeTags", N3)),
    rapi("rapi-node-tags-unknown-node", call("AddNodeTags", "nope.example.com", ["t1"])),
    rapi("rapi-set-node-role-drained", call("SetNodeRole", N3, "drained"),
         call(WAIT, "$0"), call("GetNodeRole", N3)),
    rapi("rapi-set-node-role-regular", call("SetNodeRole", N3, "regular"),
         call(WAIT, "$0"), call("GetNodeRole", N3)),
    rapi("rapi-set-node-role-candidate", call("SetNodeRole", N3, "master-candidate"),
         call(WAIT, "$0"), call("GetNodeRole", N3)),
    rapi("rapi-set-node-role-master", call("SetNodeRole", N3, "master")),
    rapi("rapi-set-node-role-bad", call("SetNodeRole", N3, "boss")),
    rapi("rapi-set-node-role-offline-master", call("SetNodeRole", N1, "offline"),
         call(WAIT, "$0")),
    rapi("rapi-modify-node-ndparams", call("ModifyNode", N2, ndparams={"spindle_count": 2}),
         call(WAIT, "$0"), call("GetNode", N2), masks=DYNAMIC),
    rapi("rapi-modify-node-ndparams-back", call("ModifyNode", N2,
                                                ndparams={"spindle_count": "default"}),
         call(WAIT, "$0"), then=[("gnt-node", "list", "-o", "name,custom_ndparams")]),
    rapi("rapi-modify-node-unknown", call("ModifyNode", "nope.example.com", drained=True)),
    rapi("rapi-evacuate-node", call("EvacuateNode", N2, iallocator="hail",
                                    mode="secondary-only"), call(WAIT, "$0")),
    rapi("rapi-migrate-node", call("MigrateNode", N2), call(WAIT, "$0")),
    rapi("rapi-create-group", call("CreateGroup", "rapi-g", alloc_policy="last_resort"),
         call(WAIT, "$0"), call("GetGroup", "rapi-g")),
    rapi("rapi-create-group-existing", call("CreateGroup", "rapi-g"), call(WAIT, "$0")),
    rapi("rapi-modify-group", call("ModifyGroup", "rapi-g", alloc_policy="preferred",
                                   custom_ndparams={"ssh_port": 2222},
                                   diskparams={"drbd": {"resync-rate": 100}}),
         call(WAIT, "$0"), call("GetGroup", "rapi-g")),
    rapi("rapi-group-tags-add-delete", call("AddGroupTags", "rapi-g", ["g1"]), call(WAIT, "$0"),
         call("GetGroupTags", "rapi-g"), call("DeleteGroupTags", "rapi-g", ["g1"]),
         call(WAIT, "$3"), call("GetGroupTags", "rapi-g")),
    rapi("rapi-rename-group", call("RenameGroup", "rapi-g", "rapi-h"), call(WAIT, "$0"),
         call("GetGroups")),
    rapi("rapi-assign-group-nodes", call("AssignGroupNodes", "rapi-h", [N3], force=True),
         call(WAIT, "$0"), call("GetGroup", "rapi-h")),
    rapi("rapi-assign-group-nodes-back", call("AssignGroupNodes", "default", [N3]),
         call(WAIT, "$0"), call("GetGroup", "rapi-h")),
    rapi("rapi-delete-group", call("DeleteGroup", "rapi-h"), call(WAIT, "$0"),
         call("GetGroups")),
    rapi("rapi-delete-group-unknown", call("DeleteGroup", "rapi-h")),
    rapi("rapi-add-filter", call("AddFilter", 3, [["opcode", ["=", "OP_ID",
                                                               "OP_TEST_DELAY"]]],
                                 "ACCEPT", reason_trail=[["oracle", "test", 1]]),
         call("GetFilter", "$0"), call("ReplaceFilter", "$0", 4, [], "CONTINUE"),
         call("GetFilters", bulk=True), call("DeleteFilter", "$0"), call("GetFilters")),
    rapi("rapi-add-filter-bad-action", call("AddFilter", 0, [], "EXPLODE")),
    rapi("rapi-job-status", call("AddClusterTags", ["j1"]), call(WAIT, "$0"),
         call("GetJobStatus", "$0"), call("DeleteClusterTags", ["j1"]), call(WAIT, "$3")),
    rapi("rapi-wait-for-job-change", call("RedistributeConfig"), call(WAIT, "$0"),
         call("WaitForJobChange", "$0", ["status", "id"], None, None)),
    rapi("rapi-cancel-unknown", call("CancelJob", 999999)),
]

# Issue 34: a body on a method that takes none is ignored, as the QA's client sends it;
# a method a resource lacks is 501 whatever the body; Ganeti's QA get/modify symmetry
# (qa_rapi._DoGetPutTests, with the QA's exceptions).
CLUSTER_EXCEPTIONS = ["force", "add_uids", "remove_uids", "osparams_private_cluster",
                      "hv_state", "disk_state", "modify_etc_hosts"]
NODE_EXCEPTIONS = ["force", "powered", "node_name", "node_uuid", "hv_state", "disk_state",
                   "auto_promote"]
ISSUE34 = [
    rapi("rapi-get-with-body", call("_SendRequest", "GET", "/version", None, {}),
         call("_SendRequest", "GET", "/2/nodes", None, {}),
         call("_SendRequest", "GET", f"/2/nodes/{N2}/role", None, {"x": 1}),
         call("_SendRequest", "GET", "/2/tags", None, [1, 2]),
         call("_SendRequest", "GET", "/2/groups", None, "text"),
         call("_SendRequest", "DELETE", "/2/jobs/999999", None, {"a": 1})),
    rapi("rapi-unimplemented-methods", *(
        call("_SendRequest", method, path, None, body)
        for method, path in (("PUT", "/version"), ("POST", "/version"),
                             ("DELETE", "/version"), ("PUT", f"/2/nodes/{N2}"),
                             ("PATCH", "/2/info"))
        for body in (None, {}, []))),
    rapi("rapi-get-put-cluster", call("get_put", "/2/info", "/2/modify",
                                      "OpClusterSetParams", exceptions=CLUSTER_EXCEPTIONS,
                                      set_exceptions=["nicparams", "compression_tools"]),
         call(WAIT, "$0")),
    rapi("rapi-get-put-cluster-accepted", call(
        "get_put", "/2/info", "/2/modify", "OpClusterSetParams",
        exceptions=CLUSTER_EXCEPTIONS + ["install_image", "zeroing_image", "beparams",
                                         "hvparams", "master_netdev"],
        set_exceptions=["nicparams", "compression_tools"]), call(WAIT, "$0")),
    rapi("rapi-get-put-node", call("get_put", f"/2/nodes/{N2}", f"/2/nodes/{N2}/modify",
                                   "OpNodeSetParams", method="POST",
                                   exceptions=NODE_EXCEPTIONS), call(WAIT, "$0")),
    rapi("rapi-get-put-node-accepted", call(
        "get_put", f"/2/nodes/{N2}", f"/2/nodes/{N2}/modify", "OpNodeSetParams",
        method="POST", exceptions=NODE_EXCEPTIONS + ["master_capable", "vm_capable",
                                                     "ndparams"]), call(WAIT, "$0")),
    rapi("rapi-get-put-group", call(
        "get_put", "/2/groups/default", "/2/groups/default/modify", "OpGroupSetParams",
        aliases=["custom_ndparams", "custom_ipolicy", "custom_diskparams"],
        exceptions=["group_name", "hv_state", "disk_state"],
        set_exceptions=["ndparams", "ipolicy", "diskparams"]), call(WAIT, "$0")),
    # a demoted candidate stays regular through other cluster changes (issue 34)
    rapi("rapi-set-node-role-regular-stays", call("SetNodeRole", N3, "regular"),
         call(WAIT, "$0"), call("ModifyCluster", max_running_jobs=20), call(WAIT, "$2"),
         call("GetNodeRole", N3), call("SetNodeRole", N3, "master-candidate"),
         call(WAIT, "$5"), call("GetNodeRole", N3)),
]

HTOOLS = [
    cli("htools-hbal-luxi", "hbal", "-L", masks=HTOOLS_DYNAMIC),
    cli("htools-hinfo-luxi", "hinfo", "-L", masks=HTOOLS_DYNAMIC),
    cli("htools-hspace-luxi", "hspace", "-L", masks=HTOOLS_DYNAMIC),
    cli("htools-hbal-rapi", "hbal", "-m", "{rapi_host}", masks=HTOOLS_DYNAMIC),
    cli("htools-hinfo-rapi", "hinfo", "-m", "{rapi_host}", masks=HTOOLS_DYNAMIC),
    cli("htools-hspace-rapi", "hspace", "-m", "{rapi_host}", masks=HTOOLS_DYNAMIC),
    cli("htools-hscan", "hscan", "-p", "{rapi_host}",
        # the name column is as wide as the RAPI address, which differs in length; free
        # memory and disk (GB) are the host's at the time
        masks=(r"^Name( +)Nodes ",
               r"^<ip:node1>(?: +\d+){5} +(\d+) +\d+ +(\d+) +(\S+)$",
               r"^ +node\d +\d+( +.*)$")),
]

CASES = READS + CHANGES + ISSUE34 + HTOOLS
