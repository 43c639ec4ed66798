"""The opcodes this implementation knows, declared once.

Each declaration gives the OP_ID, a one-line description, the parameters
(name, kind, default, description) and the parameter shown in job
summaries.  LUXI validates submitted jobs against this table, the CLI
builds opcodes from it, the reference in docs/design/opcodes-and-jobs.md is
generated from it, and RAPI will map its bodies onto it.  Parameters,
defaults and summaries follow Ganeti 3.0; where Ganeti has parameters that
do not work here yet they are declared ``reserved``.  The order of the
parameters is Ganeti's where it shows: luxid echoes a job's opcode with its
parameters in that order (:func:`ganeti.core.opcodes.base.luxid_echo`).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ganeti.core import constants as c
from ganeti.core import qlang
from ganeti.core.errors import OpPrereqError
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.base import OpCode, opt, req, reserved
from ganeti.core.opcodes.kinds import Kind, KindMismatch

# --- kinds used by the declarations ----------------------------------------

NAME_LIST = kinds.list_of(kinds.NON_EMPTY_STRING, name="a list of non-empty strings")
TAG_KIND = kinds.one_of(c.VALID_TAG_TYPES, "a tag kind:")
QUERY_RESOURCE = kinds.one_of(c.QR_VIA_OPCODE, "a resource:")
HV_PARAMS = kinds.dict_of(kinds.one_of(c.HYPER_TYPES, "a hypervisor:"), kinds.OBJECT,
                          name="an object mapping hypervisor names to parameter objects")
DISK_PARAMS = kinds.dict_of(kinds.one_of(c.DISK_TEMPLATES, "a disk template:"), kinds.OBJECT,
                            name="an object mapping disk templates to parameter objects")
NIC_PARAMS = kinds.dict_of(kinds.one_of(c.NICC_DEFAULTS, "a NIC parameter:"),
                           kinds.maybe(kinds.STRING),
                           name="an object mapping NIC parameters to strings")


# The shape only: the logical unit checks the bounds (OpPrereqError wrong_input), as
# Ganeti's LUClusterSetParams does.
UID_RANGES = kinds.list_of(kinds.tuple_of(kinds.INT, kinds.INT, name="a uid range [low, high]"),
                           name="a list of uid ranges [low, high]")


def _check_filter(value: Any) -> Any:
    try:
        return qlang.check_filter(value)
    except OpPrereqError as err:
        raise KindMismatch("a query filter", value, str(err.args[0])) from None


QUERY_FILTER = Kind("a query filter", _check_filter)


#: luxid shows a tag kind in summaries by its Haskell constructor (``TAGS_GET(TagKindNode)``).
_TAG_KIND_SHOWN = {"cluster": "TagKindCluster", "node": "TagKindNode",
                   "instance": "TagKindInstance", "nodegroup": "TagKindGroup",
                   "network": "TagKindNetwork"}


def _tag_kind(value: Any) -> str | None:
    return _TAG_KIND_SHOWN.get(value, str(value)) if value is not None else None


_HV_LIST = kinds.list_of(kinds.one_of(c.HYPER_TYPES, "a hypervisor:"),
                         name="a list of hypervisors")
_DT_LIST = kinds.list_of(kinds.one_of(c.DISK_TEMPLATES, "a disk template:"),
                         name="a list of disk templates")
_NAMES = kinds.list_of(kinds.NON_EMPTY_STRING, name="a list of non-empty strings")
# Ganeti's luxid takes any hypervisor name here; the logical unit refuses an unknown
# one (after the parameters' types, as Ganeti's LUClusterSetParams)
_OS_HVP = kinds.dict_of(
    kinds.NON_EMPTY_STRING,
    kinds.maybe(kinds.dict_of(kinds.NON_EMPTY_STRING, kinds.maybe(kinds.OBJECT))),
    name="an object mapping OS names to hypervisor parameters per hypervisor")
_OS_PARAMS = kinds.dict_of(kinds.NON_EMPTY_STRING, kinds.OBJECT,
                           name="an object mapping OS names to parameter objects")
_OS_MODS = kinds.list_of(kinds.tuple_of(kinds.one_of(("add", "remove"), "add or remove:"),
                                        kinds.NON_EMPTY_STRING,
                                        name="a pair [add|remove, OS name]"),
                         name="a list of [add|remove, OS name] pairs")


# --- the declarations -------------------------------------------------------

OP_CLUSTER_QUERY = OpCode("OP_CLUSTER_QUERY", "Query cluster information")

OP_CLUSTER_SET_PARAMS = OpCode(
    "OP_CLUSTER_SET_PARAMS", "Change the parameters of the cluster",
    (
        opt("hvparams", kinds.maybe(HV_PARAMS), "Cluster-wide hypervisor parameters, per "
            "hypervisor"),
        opt("beparams", kinds.maybe(kinds.OBJECT), "Cluster-wide backend parameter defaults"),
        opt("nicparams", kinds.maybe(NIC_PARAMS), "Cluster-wide NIC parameter defaults"),
        opt("diskparams", kinds.maybe(DISK_PARAMS), "Disk parameter defaults, per disk "
            "template"),
        opt("candidate_pool_size", kinds.maybe(kinds.int_range(1)),
            "Master candidate pool size"),
        opt("max_running_jobs", kinds.maybe(kinds.int_range(1)),
            "Maximum number of jobs running at the same time"),
        opt("max_tracked_jobs", kinds.maybe(kinds.int_range(1)),
            "Maximum number of jobs tracked in the job queue"),
        opt("uid_pool", kinds.maybe(UID_RANGES), "Set the user-id pool to these ranges"),
        opt("add_uids", kinds.maybe(UID_RANGES), "Add these ranges to the user-id pool"),
        opt("remove_uids", kinds.maybe(UID_RANGES),
            "Remove these ranges from the user-id pool"),
        opt("default_iallocator", kinds.maybe(kinds.STRING),
            "Default instance allocator (empty string: none)"),
        opt("ipolicy", kinds.maybe(kinds.OBJECT), "Cluster-wide instance policy"),
        opt("force", kinds.BOOL, "Force the operation", False),
        opt("ndparams", kinds.maybe(kinds.OBJECT), "Cluster-wide node parameter defaults"),
        opt("enabled_hypervisors", kinds.maybe(_HV_LIST), "List of enabled hypervisors"),
        opt("enabled_disk_templates", kinds.maybe(_DT_LIST), "List of enabled disk templates"),
        *(opt(name, kinds.maybe(kinds.BOOL), doc) for name, doc in (
            ("maintain_node_health", "Whether to automatically maintain node health"),
            ("prealloc_wipe_disks", "Whether to wipe disks before allocating them"),
            ("modify_etc_hosts", "Whether the cluster maintains /etc/hosts"),
            ("use_external_mip_script", "Whether to use an external master IP script"),
            ("enabled_user_shutdown", "Whether user shutdown is enabled cluster wide"))),
        opt("default_iallocator_params", kinds.maybe(kinds.OBJECT),
            "Default iallocator parameters"),
        opt("mac_prefix", kinds.maybe(kinds.STRING), "MAC prefix of instance NICs (XX:XX:XX)"),
        opt("reserved_lvs", kinds.maybe(_NAMES), "Logical volumes cluster verify ignores"),
        opt("os_hvp", kinds.maybe(_OS_HVP), "Per-OS hypervisor parameters (null removes)"),
        opt("osparams", kinds.maybe(_OS_PARAMS), "Per-OS parameters (null removes a key)"),
        opt("osparams_private_cluster", kinds.maybe(_OS_PARAMS),
            "Per-OS private parameters (null removes a key)"),
        opt("hidden_os", kinds.maybe(_OS_MODS), "Add/remove hidden operating systems"),
        opt("blacklisted_os", kinds.maybe(_OS_MODS),
            "Add/remove blacklisted operating systems"),
        *(opt(name, kinds.maybe(kinds.STRING), doc) for name, doc in (
            ("file_storage_dir", "Directory of file-based disks"),
            ("shared_file_storage_dir", "Directory of shared-file disks"),
            ("gluster_storage_dir", "Gluster storage directory (ignored, as by Ganeti)"),
            ("install_image", "OS image for running OS scripts safely"),
            ("zeroing_image", "OS image used to zero instance disks"))),
        opt("compression_tools", kinds.maybe(_NAMES), "Allowed compression tools"),
        opt("enabled_data_collectors",
            kinds.maybe(kinds.dict_of(kinds.STRING, kinds.BOOL)),
            "Activate or deactivate data collectors"),
        opt("data_collector_interval",
            kinds.maybe(kinds.dict_of(kinds.STRING, kinds.INT)),
            "Intervals of the data collectors (microseconds)"),
        opt("vg_name", kinds.maybe(kinds.STRING),
            "Volume group of lvm-based disks (empty: disable lvm storage)"),
        opt("master_netmask", kinds.maybe(kinds.INT),
            "Netmask of the master IP (prefix length)"),
        opt("master_netdev", kinds.maybe(kinds.STRING),
            "Network device of the master IP (the master IP moves to it)"),
        opt("drbd_helper", kinds.maybe(kinds.STRING),
            "DRBD usermode helper (empty: none, refused while drbd is enabled)"),
        *(reserved(name, "Ganeti parameter, not supported yet") for name in (
            "hv_state", "disk_state", "instance_communication_network")),
    ))

OP_QUERY = OpCode(
    "OP_QUERY", "Query for resources",
    (
        req("what", QUERY_RESOURCE, "Resource to query"),
        opt("use_locking", kinds.BOOL, "Whether to use synchronization", False),
        req("fields", NAME_LIST, "Requested fields"),
        opt("qfilter", kinds.maybe(QUERY_FILTER), "Query filter (null: everything)"),
    ),
    summary_param="what")

OP_QUERY_FIELDS = OpCode(
    "OP_QUERY_FIELDS", "Query for the fields of a resource",
    (
        req("what", QUERY_RESOURCE, "Resource to query"),
        opt("fields", kinds.maybe(NAME_LIST), "Requested fields (null: all)"),
    ),
    summary_param="what")

OP_TAGS_GET = OpCode(
    "OP_TAGS_GET", "Return the tags of an object",
    (
        req("kind", TAG_KIND, "Tag kind"),
        opt("use_locking", kinds.BOOL, "Whether to use synchronization", False),
        opt("name", kinds.maybe(kinds.STRING), "Name of the object (null for the cluster)"),
    ),
    summary_param="kind", summary_format=_tag_kind)

OP_TAGS_SEARCH = OpCode(
    "OP_TAGS_SEARCH", "Search all tags of the cluster for a pattern",
    # A string here; the logical unit refuses a pattern that does not compile
    # (OpPrereqError wrong_input), as Ganeti's LUTagsSearch does.
    (req("pattern", kinds.NON_EMPTY_STRING, "Search pattern (regular expression)"),),
    summary_param="pattern")

OP_TAGS_SET = OpCode(
    "OP_TAGS_SET", "Add tags to an object",
    (
        req("kind", TAG_KIND, "Tag kind"),
        req("tags", kinds.list_of(kinds.STRING, name="a list of strings"), "Tags to add"),
        opt("name", kinds.maybe(kinds.STRING), "Name of the object (null for the cluster)"),
    ))

OP_TAGS_DEL = OpCode(
    "OP_TAGS_DEL", "Remove tags from an object",
    (
        req("kind", TAG_KIND, "Tag kind"),
        req("tags", kinds.list_of(kinds.STRING, name="a list of strings"), "Tags to remove"),
        opt("name", kinds.maybe(kinds.STRING), "Name of the object (null for the cluster)"),
    ))

OP_TEST_DELAY = OpCode(
    "OP_TEST_DELAY", "Sleep for a while (for testing)",
    (
        req("duration", kinds.FLOAT, "Seconds to sleep (the opcode fails unless > 0)"),
        opt("on_master", kinds.BOOL, "Sleep on the master", True),
        opt("on_nodes", NAME_LIST, "Nodes to sleep on (with the master)", []),
        opt("on_node_uuids", kinds.maybe(NAME_LIST), "UUIDs of the nodes to sleep on"),
        opt("repeat", kinds.int_range(0), "How many times to sleep (0: once)", 0),
        opt("interruptible", kinds.BOOL, "Allow interrupting the sleep through a socket",
            False),
        opt("no_locks", kinds.BOOL, "Take no locks while sleeping", True),
    ),
    summary_param="duration")

OP_TEST_JQUEUE = OpCode(
    "OP_TEST_JQUEUE", "Test the job queue (gnt-debug test-jobqueue)",
    (
        opt("notify_waitlock", kinds.BOOL, "Notify the client while waiting for locks",
            False),
        opt("notify_exec", kinds.BOOL, "Notify the client when executing", False),
        opt("log_messages", kinds.list_of(kinds.STRING, name="a list of strings"),
            "Test messages to log", []),
        opt("fail", kinds.BOOL, "Fail the opcode at the end", False),
    ))

#: A NIC of OP_TEST_ALLOCATOR: an object, stored without its null values (luxid's
#: optional fields: gnt-debug's {"mac": m, "ip": None, "bridge": None} is {"mac": m}).
def _nic_spec_check(value: Any) -> Any:
    return {k: v for k, v in kinds.OBJECT.check(value).items() if v is not None}


_NIC_SPEC = Kind("a NIC object", _nic_spec_check, py="dict[str, Any]")

#: OP_TEST_ALLOCATOR's modes: Ganeti's five, and our capacity and balance requests.
IALLOCATOR_TEST_MODES = ("allocate", "multi-allocate", "relocate", "node-evacuate",
                         "change-group", "capacity", "balance")

OP_TEST_ALLOCATOR = OpCode(
    "OP_TEST_ALLOCATOR", "Show an allocator's input, or run it (gnt-debug allocator)",
    (
        req("direction", kinds.one_of(("in", "out"), "a direction:"),
            "in: the allocator's input; out: run the allocator, its output"),
        req("mode", kinds.one_of(IALLOCATOR_TEST_MODES, "a mode:"), "The request type"),
        req("name", kinds.NON_EMPTY_STRING,
            "The new instance (allocate), the instance (relocate); ignored otherwise"),
        opt("nics", kinds.maybe(kinds.list_of(_NIC_SPEC, name="a list of NIC objects")),
            "NICs of the new instance (null values dropped, as luxid stores them)"),
        opt("disks", kinds.maybe(kinds.list_of(kinds.ANY, name="a list of disks")),
            "Disks of the new instance ([{\"size\": MiB, \"mode\": \"rw\"}, ...])"),
        opt("hypervisor", kinds.maybe(kinds.one_of(c.HYPER_TYPES, "a hypervisor:")),
            "Hypervisor of the new instance"),
        opt("iallocator", kinds.maybe(kinds.STRING), "The allocator to run (direction out)"),
        opt("tags", kinds.list_of(kinds.NON_EMPTY_STRING, name="a list of non-empty strings"),
            "Tags of the new instance", []),
        opt("memory", kinds.maybe(kinds.int_range(0)), "Memory of the new instance (MiB)"),
        opt("vcpus", kinds.maybe(kinds.int_range(0)), "VCPUs of the new instance"),
        opt("os", kinds.maybe(kinds.STRING), "OS of the new instance"),
        opt("disk_template", kinds.maybe(kinds.one_of(c.DISK_TEMPLATES, "a disk template:")),
            "Disk template of the new instance"),
        opt("instances", kinds.maybe(NAME_LIST), "Instances (node-evacuate, change-group)"),
        opt("evac_mode", kinds.maybe(kinds.one_of(("primary-only", "secondary-only", "all"),
                                                  "an evacuation mode:")),
            "Evacuation mode (node-evacuate)"),
        opt("target_groups", kinds.maybe(NAME_LIST),
            "Destination groups, names or UUIDs (change-group; default: all but the "
            "current one)"),
        opt("spindle_use", kinds.int_range(0), "Spindle use of the new instance", 1),
        opt("count", kinds.int_range(0), "How many instances (multi-allocate); the most "
            "moves (balance, 0: until no gain)", 1),
        opt("group_name", kinds.maybe(kinds.STRING),
            "Node group (allocate, capacity, balance)"),
        opt("min_gain", kinds.maybe(kinds.float_kind(0.0)),
            "Smallest score gain of a move (balance; an extension; null: 0)"),
    ),
    # luxid shows the missing allocator as None: TEST_ALLOCATOR(None)
    summary_param="iallocator", summary_format=str)

OP_TEST_OS_PARAMS = OpCode(
    "OP_TEST_OS_PARAMS", "Test secret OS parameters (gnt-debug test-osparams)",
    (
        opt("osparams_secret", kinds.maybe(kinds.OBJECT),
            "Secret OS parameters (shown back in the job's log, never stored)"),
    ))


# --- nodes, groups, cluster-wide node operations -----------------------------

def _check_ip(value: Any) -> Any:
    if not isinstance(value, str):
        raise KindMismatch("an IP address", value)
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise KindMismatch("an IP address", value, f"{value!r:.40} is not an IP address") \
            from None
    return value


IP_ADDRESS = Kind("an IP address", _check_ip, py="str")
ALLOC_POLICY = kinds.one_of(c.VALID_ALLOC_POLICIES, "an allocation policy:")
ND_PARAMS = kinds.dict_of(kinds.one_of(c.NDC_DEFAULTS, "a node parameter:"), kinds.ANY,
                          name="an object of node parameters")
# Node names become ssconf lines and file names: whole host names only.
NODE_NAME = kinds.HOSTNAME
VERIFY_CHECKS = kinds.list_of(kinds.one_of(c.VERIFY_OPTIONAL_CHECKS, "a skippable check:"),
                              name="a list of skippable checks")


def _node_name(value: Any) -> str | None:
    return str(value) if value else None


OP_NODE_ADD = OpCode(
    "OP_NODE_ADD", "Add a node to the cluster",
    (
        req("node_name", NODE_NAME, "Name of the node to add"),
        opt("primary_ip", kinds.maybe(IP_ADDRESS),
            "Primary IP address (default: the address the name resolves to)"),
        opt("secondary_ip", kinds.maybe(IP_ADDRESS),
            "Secondary IP address (default: the primary IP)"),
        opt("readd", kinds.BOOL, "Whether the node is re-added after being offline", False),
        opt("group", kinds.maybe(kinds.NON_EMPTY_STRING),
            "Node group (name or UUID; default: the cluster's first group)"),
        opt("master_capable", kinds.maybe(kinds.BOOL),
            "Whether the node can become master or master candidate"),
        opt("vm_capable", kinds.maybe(kinds.BOOL), "Whether the node can host instances"),
        opt("ndparams", kinds.maybe(ND_PARAMS), "Node parameters"),
        reserved("hv_state", "Ganeti parameter, not supported yet"),
        reserved("disk_state", "Ganeti parameter, not supported yet"),
        reserved("node_setup", "Set up the node over SSH (not supported: nodes are prepared "
                 "beforehand)", False),
    ),
    summary_param="node_name", summary_format=_node_name)

OP_NODE_REMOVE = OpCode(
    "OP_NODE_REMOVE", "Remove a node from the cluster",
    (
        opt("node_name", kinds.maybe(NODE_NAME), "Name of the node to remove"),
        opt("node_uuid", kinds.maybe(kinds.NON_EMPTY_STRING), "UUID of the node to remove"),
    ),
    summary_param="node_name", summary_format=_node_name)

OP_NODE_SET_PARAMS = OpCode(
    "OP_NODE_SET_PARAMS", "Change the parameters or role of a node",
    (
        opt("node_name", kinds.maybe(NODE_NAME), "Name of the node"),
        opt("node_uuid", kinds.maybe(kinds.NON_EMPTY_STRING), "UUID of the node"),
        opt("force", kinds.BOOL, "Force the operation", False),
        opt("master_candidate", kinds.maybe(kinds.BOOL), "Master candidate flag"),
        opt("offline", kinds.maybe(kinds.BOOL), "Offline flag"),
        opt("drained", kinds.maybe(kinds.BOOL), "Drained flag"),
        opt("auto_promote", kinds.BOOL,
            "Promote other nodes to candidates if this change shrinks the pool", False),
        opt("master_capable", kinds.maybe(kinds.BOOL), "Master capable flag"),
        opt("vm_capable", kinds.maybe(kinds.BOOL), "VM capable flag"),
        opt("secondary_ip", kinds.maybe(IP_ADDRESS), "New secondary IP address"),
        opt("ndparams", kinds.maybe(ND_PARAMS), "Node parameters to change"),
        reserved("hv_state", "Ganeti parameter, not supported yet"),
        reserved("disk_state", "Ganeti parameter, not supported yet"),
        opt("powered", kinds.maybe(kinds.BOOL),
            "Whether the node should be marked as powered (out-of-band nodes only)"),
    ),
    summary_param="node_name", summary_format=_node_name)

OP_OOB_COMMAND = OpCode(
    "OP_OOB_COMMAND", "Run an out-of-band command (the ndparam oob_program) for nodes",
    (
        opt("node_names", NAME_LIST, "Nodes to run the command for (default: all)", []),
        opt("node_uuids", kinds.maybe(NAME_LIST), "UUIDs of the nodes"),
        req("command", kinds.one_of(c.OOB_COMMANDS, "an out-of-band command:"),
            "The command (power-on, power-off, power-cycle, power-status, health)"),
        opt("timeout", kinds.int_range(1, 900),
            "Seconds before the out-of-band program is killed", c.OOB_TIMEOUT),
        opt("ignore_status", kinds.BOOL,
            "Power off even nodes that are not marked offline", False),
        opt("power_delay", kinds.float_kind(0.0),
            "Seconds to wait between powering on nodes", c.OOB_POWER_DELAY),
    ))

# Group names become ssconf lines ("<uuid> <name>"): one printable line only.
GROUP_NAME = kinds.PRINTABLE_NAME

_GROUP_PARAMS = (
    opt("alloc_policy", kinds.maybe(ALLOC_POLICY), "Instance allocation policy"),
    # an object: unknown keys are refused while coercing, with Ganeti's error
    opt("ndparams", kinds.maybe(kinds.OBJECT), "Default node parameters for the group"),
    opt("diskparams", kinds.maybe(DISK_PARAMS), "Disk parameters, per disk template"),
    opt("ipolicy", kinds.maybe(kinds.OBJECT), "Group-specific instance policy"),
    reserved("hv_state", "Ganeti parameter, not supported yet"),
    reserved("disk_state", "Ganeti parameter, not supported yet"),
)

OP_GROUP_ADD = OpCode(
    "OP_GROUP_ADD", "Add a node group to the cluster",
    (req("group_name", GROUP_NAME, "Name of the group"), *_GROUP_PARAMS),
    summary_param="group_name")

OP_GROUP_REMOVE = OpCode(
    "OP_GROUP_REMOVE", "Remove an empty node group",
    (req("group_name", GROUP_NAME, "Name or UUID of the group"),),
    summary_param="group_name")

OP_GROUP_RENAME = OpCode(
    "OP_GROUP_RENAME", "Rename a node group",
    (
        req("group_name", GROUP_NAME, "Name or UUID of the group"),
        req("new_name", GROUP_NAME, "New name of the group"),
    ))  # luxid shows no argument in its summary

OP_GROUP_SET_PARAMS = OpCode(
    "OP_GROUP_SET_PARAMS", "Change the parameters of a node group",
    (req("group_name", GROUP_NAME, "Name or UUID of the group"), *_GROUP_PARAMS),
    summary_param="group_name")

OP_GROUP_ASSIGN_NODES = OpCode(
    "OP_GROUP_ASSIGN_NODES", "Move nodes into a node group",
    (
        req("group_name", GROUP_NAME, "Name or UUID of the target group"),
        opt("force", kinds.BOOL, "Move nodes even if that splits instances", False),
        req("nodes", NAME_LIST, "Names or UUIDs of the nodes to move"),
        opt("node_uuids", kinds.maybe(NAME_LIST), "UUIDs of the nodes to move"),
    ),
    summary_param="group_name")

OP_CLUSTER_REDIST_CONF = OpCode(
    "OP_CLUSTER_REDIST_CONF", "Push the configuration and ancillary files to the nodes")

OP_CLUSTER_ACTIVATE_MASTER_IP = OpCode(
    "OP_CLUSTER_ACTIVATE_MASTER_IP", "Activate the master IP on the master node")

OP_CLUSTER_DEACTIVATE_MASTER_IP = OpCode(
    "OP_CLUSTER_DEACTIVATE_MASTER_IP", "Deactivate the master IP on the master node")

_VERIFY_COMMON = (
    opt("debug_simulate_errors", kinds.BOOL, "Report every check as failed (for testing)",
        False),
    opt("error_codes", kinds.BOOL, "Report errors in parseable form", False),
    opt("skip_checks", VERIFY_CHECKS, "Checks to skip", []),
    opt("ignore_errors", kinds.list_of(kinds.STRING, name="a list of error codes"),
        "Error codes to report as warnings", []),
    opt("verbose", kinds.BOOL, "Verbose output", False),
)

OP_CLUSTER_VERIFY = OpCode(
    "OP_CLUSTER_VERIFY", "Verify the cluster: submits one verify job per part",
    (
        *_VERIFY_COMMON,
        opt("group_name", kinds.maybe(GROUP_NAME),
            "Verify only this node group"),
        opt("verify_clutter", kinds.BOOL, "Look for unknown files (not supported yet)", False),
    ))

OP_CLUSTER_VERIFY_CONFIG = OpCode(
    "OP_CLUSTER_VERIFY_CONFIG", "Verify the consistency of the cluster configuration",
    tuple(p for p in _VERIFY_COMMON if p.name != "skip_checks"))  # (as Ganeti's)

OP_CLUSTER_VERIFY_GROUP = OpCode(
    "OP_CLUSTER_VERIFY_GROUP", "Verify the nodes of one node group",
    (
        req("group_name", GROUP_NAME, "Name or UUID of the group"),
        *_VERIFY_COMMON,
        opt("verify_clutter", kinds.BOOL, "Look for unknown files (not supported yet)", False),
    ),
    summary_param="group_name")

OP_CLUSTER_VERIFY_DISKS = OpCode(
    "OP_CLUSTER_VERIFY_DISKS", "Verify the disks of the cluster: submits one job per group",
    (
        opt("group_name", kinds.maybe(GROUP_NAME), "Verify only this node group"),
    ))

OP_GROUP_VERIFY_DISKS = OpCode(
    "OP_GROUP_VERIFY_DISKS", "Verify the disks of the instances of one node group",
    (req("group_name", GROUP_NAME, "Name or UUID of the group"),),
    summary_param="group_name")

#: The opcodes declared in this module (the others: table_instance, table_network,
#: table_os, table_storage; all of them: :data:`ganeti.core.opcodes.catalog.ALL`).
CORE: tuple[OpCode, ...] = (
    OP_CLUSTER_QUERY, OP_CLUSTER_SET_PARAMS, OP_QUERY, OP_QUERY_FIELDS, OP_TAGS_GET,
    OP_TAGS_SEARCH, OP_TAGS_SET, OP_TAGS_DEL, OP_TEST_DELAY, OP_TEST_JQUEUE, OP_TEST_OS_PARAMS,
    OP_TEST_ALLOCATOR,
    OP_CLUSTER_REDIST_CONF, OP_CLUSTER_ACTIVATE_MASTER_IP, OP_CLUSTER_DEACTIVATE_MASTER_IP,
    OP_CLUSTER_VERIFY, OP_CLUSTER_VERIFY_CONFIG, OP_CLUSTER_VERIFY_GROUP,
    OP_CLUSTER_VERIFY_DISKS, OP_GROUP_VERIFY_DISKS,
    OP_NODE_ADD, OP_NODE_REMOVE, OP_NODE_SET_PARAMS, OP_GROUP_ADD, OP_GROUP_REMOVE,
    OP_OOB_COMMAND,
    OP_GROUP_RENAME, OP_GROUP_SET_PARAMS, OP_GROUP_ASSIGN_NODES,
)
