"""Typed, read-only views of the opcodes of the table's core part.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ganeti.core.opcodes.views_base import OpView


@dataclass(frozen=True, kw_only=True)
class OpClusterActivateMasterIp(OpView):
    """OP_CLUSTER_ACTIVATE_MASTER_IP: Activate the master IP on the master node."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_ACTIVATE_MASTER_IP"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})


@dataclass(frozen=True, kw_only=True)
class OpClusterDeactivateMasterIp(OpView):
    """OP_CLUSTER_DEACTIVATE_MASTER_IP: Deactivate the master IP on the master node."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_DEACTIVATE_MASTER_IP"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})


@dataclass(frozen=True, kw_only=True)
class OpClusterQuery(OpView):
    """OP_CLUSTER_QUERY: Query cluster information."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_QUERY"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})


@dataclass(frozen=True, kw_only=True)
class OpClusterRedistConf(OpView):
    """OP_CLUSTER_REDIST_CONF: Push the configuration and ancillary files to the nodes."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_REDIST_CONF"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})


@dataclass(frozen=True, kw_only=True)
class OpClusterSetParams(OpView):
    """OP_CLUSTER_SET_PARAMS: Change the parameters of the cluster."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_SET_PARAMS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"force", "priority", "reason"})
    hvparams: dict[str, dict[str, Any]] | None = None
    beparams: dict[str, Any] | None = None
    nicparams: dict[str, str | None] | None = None
    diskparams: dict[str, dict[str, Any]] | None = None
    candidate_pool_size: int | None = None
    max_running_jobs: int | None = None
    max_tracked_jobs: int | None = None
    uid_pool: list[list[Any]] | None = None
    add_uids: list[list[Any]] | None = None
    remove_uids: list[list[Any]] | None = None
    default_iallocator: str | None = None
    ipolicy: dict[str, Any] | None = None
    force: bool = False
    ndparams: dict[str, Any] | None = None
    enabled_hypervisors: list[str] | None = None
    enabled_disk_templates: list[str] | None = None
    maintain_node_health: bool | None = None
    prealloc_wipe_disks: bool | None = None
    modify_etc_hosts: bool | None = None
    use_external_mip_script: bool | None = None
    enabled_user_shutdown: bool | None = None
    default_iallocator_params: dict[str, Any] | None = None
    mac_prefix: str | None = None
    reserved_lvs: list[str] | None = None
    os_hvp: dict[str, dict[str, dict[str, Any] | None] | None] | None = None
    osparams: dict[str, dict[str, Any]] | None = None
    osparams_private_cluster: dict[str, dict[str, Any]] | None = None
    hidden_os: list[list[Any]] | None = None
    blacklisted_os: list[list[Any]] | None = None
    file_storage_dir: str | None = None
    shared_file_storage_dir: str | None = None
    gluster_storage_dir: str | None = None
    install_image: str | None = None
    zeroing_image: str | None = None
    compression_tools: list[str] | None = None
    enabled_data_collectors: dict[str, bool] | None = None
    data_collector_interval: dict[str, int] | None = None
    vg_name: str | None = None
    master_netmask: int | None = None
    master_netdev: str | None = None
    drbd_helper: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpClusterVerify(OpView):
    """OP_CLUSTER_VERIFY: Verify the cluster: submits one verify job per part."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_VERIFY"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "debug_simulate_errors", "error_codes", "ignore_errors", "priority", "reason",
        "skip_checks", "verbose", "verify_clutter"
    })
    debug_simulate_errors: bool = False
    error_codes: bool = False
    skip_checks: list[str] = field(default_factory=lambda: [])
    ignore_errors: list[str] = field(default_factory=lambda: [])
    verbose: bool = False
    group_name: str | None = None
    verify_clutter: bool = False


@dataclass(frozen=True, kw_only=True)
class OpClusterVerifyConfig(OpView):
    """OP_CLUSTER_VERIFY_CONFIG: Verify the consistency of the cluster configuration."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_VERIFY_CONFIG"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "debug_simulate_errors", "error_codes", "ignore_errors", "priority", "reason", "verbose"
    })
    debug_simulate_errors: bool = False
    error_codes: bool = False
    ignore_errors: list[str] = field(default_factory=lambda: [])
    verbose: bool = False


@dataclass(frozen=True, kw_only=True)
class OpClusterVerifyDisks(OpView):
    """OP_CLUSTER_VERIFY_DISKS: Verify the disks of the cluster: submits one job per group."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_VERIFY_DISKS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})
    group_name: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpClusterVerifyGroup(OpView):
    """OP_CLUSTER_VERIFY_GROUP: Verify the nodes of one node group."""

    OP_ID: ClassVar[str] = "OP_CLUSTER_VERIFY_GROUP"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "debug_simulate_errors", "error_codes", "group_name", "ignore_errors", "priority", "reason",
        "skip_checks", "verbose", "verify_clutter"
    })
    group_name: str
    debug_simulate_errors: bool = False
    error_codes: bool = False
    skip_checks: list[str] = field(default_factory=lambda: [])
    ignore_errors: list[str] = field(default_factory=lambda: [])
    verbose: bool = False
    verify_clutter: bool = False


@dataclass(frozen=True, kw_only=True)
class OpGroupAdd(OpView):
    """OP_GROUP_ADD: Add a node group to the cluster."""

    OP_ID: ClassVar[str] = "OP_GROUP_ADD"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"group_name", "priority", "reason"})
    group_name: str
    alloc_policy: str | None = None
    ndparams: dict[str, Any] | None = None
    diskparams: dict[str, dict[str, Any]] | None = None
    ipolicy: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class OpGroupAssignNodes(OpView):
    """OP_GROUP_ASSIGN_NODES: Move nodes into a node group."""

    OP_ID: ClassVar[str] = "OP_GROUP_ASSIGN_NODES"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name", "nodes"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "force", "group_name", "nodes", "priority", "reason"
    })
    group_name: str
    force: bool = False
    nodes: list[str]
    node_uuids: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class OpGroupRemove(OpView):
    """OP_GROUP_REMOVE: Remove an empty node group."""

    OP_ID: ClassVar[str] = "OP_GROUP_REMOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"group_name", "priority", "reason"})
    group_name: str


@dataclass(frozen=True, kw_only=True)
class OpGroupRename(OpView):
    """OP_GROUP_RENAME: Rename a node group."""

    OP_ID: ClassVar[str] = "OP_GROUP_RENAME"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name", "new_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"group_name", "new_name", "priority", "reason"})
    group_name: str
    new_name: str


@dataclass(frozen=True, kw_only=True)
class OpGroupSetParams(OpView):
    """OP_GROUP_SET_PARAMS: Change the parameters of a node group."""

    OP_ID: ClassVar[str] = "OP_GROUP_SET_PARAMS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"group_name", "priority", "reason"})
    group_name: str
    alloc_policy: str | None = None
    ndparams: dict[str, Any] | None = None
    diskparams: dict[str, dict[str, Any]] | None = None
    ipolicy: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class OpGroupVerifyDisks(OpView):
    """OP_GROUP_VERIFY_DISKS: Verify the disks of the instances of one node group."""

    OP_ID: ClassVar[str] = "OP_GROUP_VERIFY_DISKS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"group_name", "priority", "reason"})
    group_name: str


@dataclass(frozen=True, kw_only=True)
class OpNodeAdd(OpView):
    """OP_NODE_ADD: Add a node to the cluster."""

    OP_ID: ClassVar[str] = "OP_NODE_ADD"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"node_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"node_name", "priority", "readd", "reason"})
    node_name: str
    primary_ip: str | None = None
    secondary_ip: str | None = None
    readd: bool = False
    group: str | None = None
    master_capable: bool | None = None
    vm_capable: bool | None = None
    ndparams: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class OpNodeRemove(OpView):
    """OP_NODE_REMOVE: Remove a node from the cluster."""

    OP_ID: ClassVar[str] = "OP_NODE_REMOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})
    node_name: str | None = None
    node_uuid: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpNodeSetParams(OpView):
    """OP_NODE_SET_PARAMS: Change the parameters or role of a node."""

    OP_ID: ClassVar[str] = "OP_NODE_SET_PARAMS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"auto_promote", "force", "priority", "reason"})
    node_name: str | None = None
    node_uuid: str | None = None
    force: bool = False
    master_candidate: bool | None = None
    offline: bool | None = None
    drained: bool | None = None
    auto_promote: bool = False
    master_capable: bool | None = None
    vm_capable: bool | None = None
    secondary_ip: str | None = None
    ndparams: dict[str, Any] | None = None
    powered: bool | None = None


@dataclass(frozen=True, kw_only=True)
class OpOobCommand(OpView):
    """OP_OOB_COMMAND: Run an out-of-band command (the ndparam oob_program) for nodes."""

    OP_ID: ClassVar[str] = "OP_OOB_COMMAND"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"command"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "command", "ignore_status", "node_names", "power_delay", "priority", "reason", "timeout"
    })
    node_names: list[str] = field(default_factory=lambda: [])
    node_uuids: list[str] | None = None
    command: str
    timeout: int = 60
    ignore_status: bool = False
    power_delay: float = 2.0


@dataclass(frozen=True, kw_only=True)
class OpQuery(OpView):
    """OP_QUERY: Query for resources."""

    OP_ID: ClassVar[str] = "OP_QUERY"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"fields", "what"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "fields", "priority", "reason", "use_locking", "what"
    })
    what: str
    use_locking: bool = False
    fields: list[str]
    qfilter: Any = None


@dataclass(frozen=True, kw_only=True)
class OpQueryFields(OpView):
    """OP_QUERY_FIELDS: Query for the fields of a resource."""

    OP_ID: ClassVar[str] = "OP_QUERY_FIELDS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"what"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason", "what"})
    what: str
    fields: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class OpTagsDel(OpView):
    """OP_TAGS_DEL: Remove tags from an object."""

    OP_ID: ClassVar[str] = "OP_TAGS_DEL"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"kind", "tags"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"kind", "priority", "reason", "tags"})
    kind: str
    tags: list[str]
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpTagsGet(OpView):
    """OP_TAGS_GET: Return the tags of an object."""

    OP_ID: ClassVar[str] = "OP_TAGS_GET"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"kind"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"kind", "priority", "reason", "use_locking"})
    kind: str
    use_locking: bool = False
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpTagsSearch(OpView):
    """OP_TAGS_SEARCH: Search all tags of the cluster for a pattern."""

    OP_ID: ClassVar[str] = "OP_TAGS_SEARCH"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"pattern"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"pattern", "priority", "reason"})
    pattern: str


@dataclass(frozen=True, kw_only=True)
class OpTagsSet(OpView):
    """OP_TAGS_SET: Add tags to an object."""

    OP_ID: ClassVar[str] = "OP_TAGS_SET"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"kind", "tags"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"kind", "priority", "reason", "tags"})
    kind: str
    tags: list[str]
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpTestAllocator(OpView):
    """OP_TEST_ALLOCATOR: Show an allocator's input, or run it (gnt-debug allocator)."""

    OP_ID: ClassVar[str] = "OP_TEST_ALLOCATOR"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"direction", "mode", "name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "count", "direction", "mode", "name", "priority", "reason", "spindle_use", "tags"
    })
    direction: str
    mode: str
    name: str
    nics: list[dict[str, Any]] | None = None
    disks: list[Any] | None = None
    hypervisor: str | None = None
    iallocator: str | None = None
    tags: list[str] = field(default_factory=lambda: [])
    memory: int | None = None
    vcpus: int | None = None
    os: str | None = None
    disk_template: str | None = None
    instances: list[str] | None = None
    evac_mode: str | None = None
    target_groups: list[str] | None = None
    spindle_use: int = 1
    count: int = 1
    group_name: str | None = None
    min_gain: float | None = None


@dataclass(frozen=True, kw_only=True)
class OpTestDelay(OpView):
    """OP_TEST_DELAY: Sleep for a while (for testing)."""

    OP_ID: ClassVar[str] = "OP_TEST_DELAY"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"duration"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "duration", "interruptible", "no_locks", "on_master", "on_nodes", "priority", "reason",
        "repeat"
    })
    duration: float
    on_master: bool = True
    on_nodes: list[str] = field(default_factory=lambda: [])
    on_node_uuids: list[str] | None = None
    repeat: int = 0
    interruptible: bool = False
    no_locks: bool = True


@dataclass(frozen=True, kw_only=True)
class OpTestJqueue(OpView):
    """OP_TEST_JQUEUE: Test the job queue (gnt-debug test-jobqueue)."""

    OP_ID: ClassVar[str] = "OP_TEST_JQUEUE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "fail", "log_messages", "notify_exec", "notify_waitlock", "priority", "reason"
    })
    notify_waitlock: bool = False
    notify_exec: bool = False
    log_messages: list[str] = field(default_factory=lambda: [])
    fail: bool = False


@dataclass(frozen=True, kw_only=True)
class OpTestOsParams(OpView):
    """OP_TEST_OS_PARAMS: Test secret OS parameters (gnt-debug test-osparams)."""

    OP_ID: ClassVar[str] = "OP_TEST_OS_PARAMS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})
    osparams_secret: dict[str, Any] | None = None
