"""The opcodes this implementation knows, declared once.

Each declaration gives the OP_ID, a one-line description, the parameters
(name, kind, default, description) and the parameter shown in job
summaries.  LUXI validates submitted jobs against this table, the CLI
builds opcodes from it, the reference in docs/design/opcodes-and-jobs.md is
generated from it, and RAPI will map its bodies onto it.  Parameters,
defaults and summaries follow Ganeti 3.0; where Ganeti has parameters that
do not work here yet they are declared ``reserved``.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core import qfilter, uidpool
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


def _check_uid_range(value: Any) -> Any:
    pair = kinds.tuple_of(kinds.INT, kinds.INT, name="a uid range [low, high]").check(value)
    try:
        uidpool.check([(pair[0], pair[1])])
    except OpPrereqError as err:
        raise KindMismatch("a uid range [low, high]", value, str(err.args[0])) from None
    return pair


UID_RANGES = kinds.list_of(Kind("a uid range [low, high]", _check_uid_range),
                           name="a list of uid ranges [low, high]")


def _check_filter(value: Any) -> Any:
    try:
        return qfilter.check_filter(value)
    except OpPrereqError as err:
        raise KindMismatch("a query filter", value, str(err.args[0])) from None


QUERY_FILTER = Kind("a query filter", _check_filter)


def _tag_owner(value: Any) -> str:
    return "None" if value is None else str(value)


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
        reserved("force", "Force the operation", False),
        *(reserved(name, "Ganeti parameter, not supported yet") for name in (
            "hv_state", "disk_state", "vg_name", "enabled_hypervisors", "os_hvp", "osparams",
            "osparams_private_cluster", "maintain_node_health", "prealloc_wipe_disks",
            "ndparams", "drbd_helper", "default_iallocator_params", "mac_prefix",
            "master_netdev", "master_netmask", "reserved_lvs", "hidden_os",
            "blacklisted_os", "use_external_mip_script", "enabled_disk_templates",
            "modify_etc_hosts", "file_storage_dir", "shared_file_storage_dir",
            "gluster_storage_dir", "install_image", "instance_communication_network",
            "zeroing_image", "compression_tools", "enabled_user_shutdown",
            "enabled_data_collectors", "data_collector_interval")),
    ))

OP_QUERY = OpCode(
    "OP_QUERY", "Query for resources",
    (
        req("what", QUERY_RESOURCE, "Resource to query"),
        req("fields", NAME_LIST, "Requested fields"),
        opt("qfilter", kinds.maybe(QUERY_FILTER), "Query filter (null: everything)"),
        opt("use_locking", kinds.BOOL, "Whether to use synchronization", False),
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
        opt("name", kinds.maybe(kinds.STRING), "Name of the object (null for the cluster)"),
        opt("use_locking", kinds.BOOL, "Whether to use synchronization", False),
    ),
    summary_param="name", summary_format=_tag_owner)

OP_TAGS_SEARCH = OpCode(
    "OP_TAGS_SEARCH", "Search all tags of the cluster for a pattern",
    (req("pattern", kinds.regexp(), "Search pattern (regular expression)"),),
    summary_param="pattern")

OP_TAGS_SET = OpCode(
    "OP_TAGS_SET", "Add tags to an object",
    (
        req("kind", TAG_KIND, "Tag kind"),
        opt("name", kinds.maybe(kinds.STRING), "Name of the object (null for the cluster)"),
        req("tags", kinds.list_of(kinds.STRING, name="a list of strings"), "Tags to add"),
    ))

OP_TAGS_DEL = OpCode(
    "OP_TAGS_DEL", "Remove tags from an object",
    (
        req("kind", TAG_KIND, "Tag kind"),
        opt("name", kinds.maybe(kinds.STRING), "Name of the object (null for the cluster)"),
        req("tags", kinds.list_of(kinds.STRING, name="a list of strings"), "Tags to remove"),
    ))

OP_TEST_DELAY = OpCode(
    "OP_TEST_DELAY", "Sleep for a while (for testing)",
    (
        req("duration", kinds.float_kind(0.0), "Seconds to sleep"),
        opt("on_master", kinds.BOOL, "Sleep on the master", True),
        opt("on_nodes", NAME_LIST, "Nodes to sleep on (after the master)", []),
        opt("on_node_uuids", kinds.maybe(NAME_LIST), "UUIDs of the nodes to sleep on"),
        opt("repeat", kinds.int_range(0), "How many more times to sleep", 0),
        opt("interruptible", kinds.BOOL, "Allow interrupting the sleep through a socket",
            False),
        opt("no_locks", kinds.BOOL, "Take no locks while sleeping", True),
    ),
    summary_param="duration")

#: Every declared opcode, in the order of the reference.
ALL: tuple[OpCode, ...] = (
    OP_CLUSTER_QUERY, OP_CLUSTER_SET_PARAMS, OP_QUERY, OP_QUERY_FIELDS, OP_TAGS_GET,
    OP_TAGS_SEARCH, OP_TAGS_SET, OP_TAGS_DEL, OP_TEST_DELAY,
)
