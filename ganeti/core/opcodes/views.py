"""Typed, read-only views of opcodes: one frozen dataclass per opcode.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).  Logical units read their opcode
through these views (``self.op.node_name``); job files and query answers
keep the submitted dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from ganeti.core.errors import ECODE_INVAL, OpPrereqError


@dataclass(frozen=True, kw_only=True)
class OpView:
    """The parameters every opcode has."""

    OP_ID: ClassVar[str] = ""
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})
    dry_run: bool | None = None
    debug_level: int | None = None
    priority: int = 0
    depends: list[list[Any]] | None = None
    comment: str | None = None
    reason: list[list[Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class OpBackupExport(OpView):
    """OP_BACKUP_EXPORT: Export an instance."""

    OP_ID: ClassVar[str] = "OP_BACKUP_EXPORT"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "compress", "ignore_remove_failures", "instance_name", "long_sleep", "mode", "priority",
        "reason", "remove_instance", "shutdown", "shutdown_timeout"
    })
    instance_name: str
    instance_uuid: str | None = None
    compress: str = "none"
    shutdown_timeout: int = 120
    target_node: Any = None
    target_node_uuid: str | None = None
    shutdown: bool = True
    remove_instance: bool = False
    ignore_remove_failures: bool = False
    mode: str = "local"
    x509_key_name: list[Any] | None = None
    destination_x509_ca: str | None = None
    long_sleep: bool = False


@dataclass(frozen=True, kw_only=True)
class OpBackupPrepare(OpView):
    """OP_BACKUP_PREPARE: Prepare an instance export."""

    OP_ID: ClassVar[str] = "OP_BACKUP_PREPARE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name", "mode"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"instance_name", "mode", "priority", "reason"})
    instance_name: str
    instance_uuid: str | None = None
    mode: str


@dataclass(frozen=True, kw_only=True)
class OpBackupQuery(OpView):
    """OP_BACKUP_QUERY: Compute the list of exported images."""

    OP_ID: ClassVar[str] = "OP_BACKUP_QUERY"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"nodes", "priority", "reason", "use_locking"})
    nodes: list[str] = field(default_factory=lambda: [])
    use_locking: bool = False


@dataclass(frozen=True, kw_only=True)
class OpBackupRemove(OpView):
    """OP_BACKUP_REMOVE: Remove an instance's export."""

    OP_ID: ClassVar[str] = "OP_BACKUP_REMOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"instance_name", "priority", "reason"})
    instance_name: str
    instance_uuid: str | None = None


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
class OpExtStorageDiagnose(OpView):
    """OP_EXT_STORAGE_DIAGNOSE: Compute the list of external storage providers."""

    OP_ID: ClassVar[str] = "OP_EXT_STORAGE_DIAGNOSE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"names", "output_fields", "priority", "reason"})
    output_fields: list[str]
    names: list[str] = field(default_factory=lambda: [])


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
class OpInstanceActivateDisks(OpView):
    """OP_INSTANCE_ACTIVATE_DISKS: Activate the disks of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_ACTIVATE_DISKS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "ignore_size", "instance_name", "priority", "reason", "wait_for_sync"
    })
    instance_name: str
    instance_uuid: str | None = None
    ignore_size: bool = False
    wait_for_sync: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceConsole(OpView):
    """OP_INSTANCE_CONSOLE: Return how to reach the console of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_CONSOLE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"instance_name", "priority", "reason"})
    instance_name: str
    instance_uuid: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpInstanceCreate(OpView):
    """OP_INSTANCE_CREATE: Create an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_CREATE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"disks", "instance_name", "mode", "nics"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "beparams", "compress", "conflicts_check", "disks", "force_variant", "hvparams",
        "identify_defaults", "ignore_ipolicy", "instance_name", "ip_check", "mode", "name_check",
        "nics", "opportunistic_locking", "osparams", "priority", "reason",
        "source_shutdown_timeout", "start", "tags", "wait_for_sync"
    })
    instance_name: str
    force_variant: bool = False
    wait_for_sync: bool = True
    name_check: bool = True
    ignore_ipolicy: bool = False
    opportunistic_locking: bool = False
    beparams: dict[str, Any] = field(default_factory=lambda: {})
    disks: list[dict[str, Any]]
    disk_template: str | None = None
    group_name: str | None = None
    file_driver: str | None = None
    file_storage_dir: str | None = None
    hvparams: dict[str, Any] = field(default_factory=lambda: {})
    hypervisor: str | None = None
    iallocator: str | None = None
    identify_defaults: bool = False
    ip_check: bool = True
    conflicts_check: bool = True
    mode: str
    nics: list[dict[str, Any]]
    no_install: bool | None = None
    osparams: dict[str, Any] = field(default_factory=lambda: {})
    osparams_private: dict[str, Any] | None = None
    osparams_secret: dict[str, Any] | None = None
    os_type: str | None = None
    pnode: str | None = None
    pnode_uuid: str | None = None
    snode: str | None = None
    snode_uuid: str | None = None
    source_shutdown_timeout: int = 120
    src_node: str | None = None
    src_node_uuid: str | None = None
    src_path: str | None = None
    compress: str = "none"
    start: bool = True
    tags: list[str] = field(default_factory=lambda: [])


@dataclass(frozen=True, kw_only=True)
class OpInstanceDeactivateDisks(OpView):
    """OP_INSTANCE_DEACTIVATE_DISKS: Deactivate the disks of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_DEACTIVATE_DISKS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"force", "instance_name", "priority", "reason"})
    instance_name: str
    instance_uuid: str | None = None
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceGrowDisk(OpView):
    """OP_INSTANCE_GROW_DISK: Grow a disk of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_GROW_DISK"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"amount", "disk", "instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "absolute", "amount", "disk", "ignore_ipolicy", "instance_name", "priority", "reason",
        "wait_for_sync"
    })
    instance_name: str
    instance_uuid: str | None = None
    wait_for_sync: bool = True
    disk: int
    amount: int
    absolute: bool = False
    ignore_ipolicy: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceQueryData(OpView):
    """OP_INSTANCE_QUERY_DATA: Return the configuration and run-time state of instances."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_QUERY_DATA"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "instances", "priority", "reason", "static", "use_locking"
    })
    use_locking: bool = False
    instances: list[str] = field(default_factory=lambda: [])
    static: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceReboot(OpView):
    """OP_INSTANCE_REBOOT: Reboot an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_REBOOT"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name", "reboot_type"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "ignore_secondaries", "instance_name", "priority", "reason", "reboot_type",
        "shutdown_timeout"
    })
    instance_name: str
    instance_uuid: str | None = None
    shutdown_timeout: int = 120
    ignore_secondaries: bool = False
    reboot_type: str


@dataclass(frozen=True, kw_only=True)
class OpInstanceRecreateDisks(OpView):
    """OP_INSTANCE_RECREATE_DISKS: Recreate the disks of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_RECREATE_DISKS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "disks", "instance_name", "nodes", "priority", "reason"
    })
    instance_name: str
    instance_uuid: str | None = None
    disks: list[Any] = field(default_factory=lambda: [])
    nodes: list[str] = field(default_factory=lambda: [])
    node_uuids: list[str] | None = None
    iallocator: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpInstanceReinstall(OpView):
    """OP_INSTANCE_REINSTALL: Reinstall the operating system of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_REINSTALL"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "force_variant", "instance_name", "priority", "reason"
    })
    instance_name: str
    instance_uuid: str | None = None
    force_variant: bool = False
    os_type: str | None = None
    osparams: dict[str, Any] | None = None
    osparams_private: dict[str, Any] | None = None
    osparams_secret: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class OpInstanceRemove(OpView):
    """OP_INSTANCE_REMOVE: Remove an instance and its disks."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_REMOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "ignore_failures", "instance_name", "priority", "reason", "shutdown_timeout"
    })
    instance_name: str
    instance_uuid: str | None = None
    shutdown_timeout: int = 120
    ignore_failures: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceRename(OpView):
    """OP_INSTANCE_RENAME: Rename an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_RENAME"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name", "new_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "instance_name", "ip_check", "name_check", "new_name", "priority", "reason"
    })
    instance_name: str
    instance_uuid: str | None = None
    new_name: str
    name_check: bool = True
    ip_check: bool = True


@dataclass(frozen=True, kw_only=True)
class OpInstanceSetParams(OpView):
    """OP_INSTANCE_SET_PARAMS: Change the parameters of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_SET_PARAMS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "beparams", "conflicts_check", "disks", "force", "force_variant", "hotplug",
        "hotplug_if_possible", "hvparams", "ignore_ipolicy", "instance_name", "nics", "osparams",
        "priority", "reason", "wait_for_sync"
    })
    instance_name: str
    instance_uuid: str | None = None
    force: bool = False
    force_variant: bool = False
    ignore_ipolicy: bool = False
    nics: list[list[Any]] = field(default_factory=lambda: [])
    disks: list[list[Any]] = field(default_factory=lambda: [])
    beparams: dict[str, Any] = field(default_factory=lambda: {})
    runtime_mem: int | None = None
    hvparams: dict[str, Any] = field(default_factory=lambda: {})
    disk_template: str | None = None
    file_driver: str | None = None
    file_storage_dir: str | None = None
    pnode: str | None = None
    pnode_uuid: str | None = None
    remote_node: str | None = None
    remote_node_uuid: str | None = None
    iallocator: str | None = None
    os_name: str | None = None
    osparams: dict[str, Any] = field(default_factory=lambda: {})
    osparams_private: dict[str, Any] | None = None
    wait_for_sync: bool = True
    offline: bool | None = None
    conflicts_check: bool = True
    hotplug: bool = False
    hotplug_if_possible: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceShutdown(OpView):
    """OP_INSTANCE_SHUTDOWN: Stop an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_SHUTDOWN"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "force", "ignore_offline_nodes", "instance_name", "no_remember", "priority", "reason",
        "timeout"
    })
    instance_name: str
    instance_uuid: str | None = None
    force: bool = False
    ignore_offline_nodes: bool = False
    timeout: int = 120
    no_remember: bool = False
    admin_state_source: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpInstanceStartup(OpView):
    """OP_INSTANCE_STARTUP: Start an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_STARTUP"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "beparams", "force", "hvparams", "ignore_offline_nodes", "instance_name", "no_remember",
        "priority", "reason", "shutdown_timeout", "startup_paused"
    })
    instance_name: str
    instance_uuid: str | None = None
    force: bool = False
    ignore_offline_nodes: bool = False
    hvparams: dict[str, Any] = field(default_factory=lambda: {})
    beparams: dict[str, Any] = field(default_factory=lambda: {})
    no_remember: bool = False
    startup_paused: bool = False
    shutdown_timeout: int = 120


@dataclass(frozen=True, kw_only=True)
class OpNetworkAdd(OpView):
    """OP_NETWORK_ADD: Add an IP network to the cluster."""

    OP_ID: ClassVar[str] = "OP_NETWORK_ADD"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"network", "network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "conflicts_check", "network", "network_name", "priority", "reason", "tags"
    })
    network_name: str
    network: str
    gateway: str | None = None
    network6: str | None = None
    gateway6: str | None = None
    mac_prefix: str | None = None
    add_reserved_ips: list[str] | None = None
    conflicts_check: bool = True
    tags: list[str] = field(default_factory=lambda: [])


@dataclass(frozen=True, kw_only=True)
class OpNetworkConnect(OpView):
    """OP_NETWORK_CONNECT: Connect a network to a node group with NIC mode, link and VLAN."""

    OP_ID: ClassVar[str] = "OP_NETWORK_CONNECT"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({
        "group_name", "network_link", "network_mode", "network_name"
    })
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "conflicts_check", "group_name", "network_link", "network_mode", "network_name",
        "network_vlan", "priority", "reason"
    })
    group_name: str
    network_name: str
    network_mode: str
    network_link: str
    network_vlan: str = ""
    conflicts_check: bool = True


@dataclass(frozen=True, kw_only=True)
class OpNetworkDisconnect(OpView):
    """OP_NETWORK_DISCONNECT: Disconnect a network from a node group."""

    OP_ID: ClassVar[str] = "OP_NETWORK_DISCONNECT"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name", "network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "group_name", "network_name", "priority", "reason"
    })
    group_name: str
    network_name: str


@dataclass(frozen=True, kw_only=True)
class OpNetworkRemove(OpView):
    """OP_NETWORK_REMOVE: Remove a network that no node group is connected to."""

    OP_ID: ClassVar[str] = "OP_NETWORK_REMOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"force", "network_name", "priority", "reason"})
    network_name: str
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class OpNetworkSetParams(OpView):
    """OP_NETWORK_SET_PARAMS: Change the parameters of a network (not its IPv4 subnet)."""

    OP_ID: ClassVar[str] = "OP_NETWORK_SET_PARAMS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"network_name", "priority", "reason"})
    network_name: str
    gateway: str | None = None
    network6: str | None = None
    gateway6: str | None = None
    mac_prefix: str | None = None
    add_reserved_ips: list[str] | None = None
    remove_reserved_ips: list[str] | None = None


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
class OpNodeModifyStorage(OpView):
    """OP_NODE_MODIFY_STORAGE: Modify the properties of a storage unit."""

    OP_ID: ClassVar[str] = "OP_NODE_MODIFY_STORAGE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"changes", "node_name", "storage_type"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "changes", "node_name", "priority", "reason", "storage_type"
    })
    node_name: str
    node_uuid: str | None = None
    storage_type: str
    name: str | None = None
    changes: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class OpNodeQueryvols(OpView):
    """OP_NODE_QUERYVOLS: Get the list of volumes on nodes."""

    OP_ID: ClassVar[str] = "OP_NODE_QUERYVOLS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"nodes", "output_fields", "priority", "reason"})
    output_fields: list[str]
    nodes: list[str] = field(default_factory=lambda: [])


@dataclass(frozen=True, kw_only=True)
class OpNodeQueryStorage(OpView):
    """OP_NODE_QUERY_STORAGE: Get information on storage units of nodes."""

    OP_ID: ClassVar[str] = "OP_NODE_QUERY_STORAGE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"nodes", "output_fields", "priority", "reason"})
    output_fields: list[str]
    storage_type: str | None = None
    nodes: list[str] = field(default_factory=lambda: [])
    name: str | None = None


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
class OpOsDiagnose(OpView):
    """OP_OS_DIAGNOSE: Compute the list of guest operating systems."""

    OP_ID: ClassVar[str] = "OP_OS_DIAGNOSE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"names", "output_fields", "priority", "reason"})
    output_fields: list[str]
    names: list[str] = field(default_factory=lambda: [])


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
class OpRepairNodeStorage(OpView):
    """OP_REPAIR_NODE_STORAGE: Repair a storage unit (a volume group) of a node."""

    OP_ID: ClassVar[str] = "OP_REPAIR_NODE_STORAGE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"node_name", "storage_type"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "ignore_consistency", "node_name", "priority", "reason", "storage_type"
    })
    node_name: str
    node_uuid: str | None = None
    storage_type: str
    name: str | None = None
    ignore_consistency: bool = False


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


#: OP_ID -> view class, for every declared opcode.
VIEWS: dict[str, type[OpView]] = {
    "OP_BACKUP_EXPORT": OpBackupExport,
    "OP_BACKUP_PREPARE": OpBackupPrepare,
    "OP_BACKUP_QUERY": OpBackupQuery,
    "OP_BACKUP_REMOVE": OpBackupRemove,
    "OP_CLUSTER_ACTIVATE_MASTER_IP": OpClusterActivateMasterIp,
    "OP_CLUSTER_DEACTIVATE_MASTER_IP": OpClusterDeactivateMasterIp,
    "OP_CLUSTER_QUERY": OpClusterQuery,
    "OP_CLUSTER_REDIST_CONF": OpClusterRedistConf,
    "OP_CLUSTER_SET_PARAMS": OpClusterSetParams,
    "OP_CLUSTER_VERIFY": OpClusterVerify,
    "OP_CLUSTER_VERIFY_CONFIG": OpClusterVerifyConfig,
    "OP_CLUSTER_VERIFY_DISKS": OpClusterVerifyDisks,
    "OP_CLUSTER_VERIFY_GROUP": OpClusterVerifyGroup,
    "OP_EXT_STORAGE_DIAGNOSE": OpExtStorageDiagnose,
    "OP_GROUP_ADD": OpGroupAdd,
    "OP_GROUP_ASSIGN_NODES": OpGroupAssignNodes,
    "OP_GROUP_REMOVE": OpGroupRemove,
    "OP_GROUP_RENAME": OpGroupRename,
    "OP_GROUP_SET_PARAMS": OpGroupSetParams,
    "OP_GROUP_VERIFY_DISKS": OpGroupVerifyDisks,
    "OP_INSTANCE_ACTIVATE_DISKS": OpInstanceActivateDisks,
    "OP_INSTANCE_CONSOLE": OpInstanceConsole,
    "OP_INSTANCE_CREATE": OpInstanceCreate,
    "OP_INSTANCE_DEACTIVATE_DISKS": OpInstanceDeactivateDisks,
    "OP_INSTANCE_GROW_DISK": OpInstanceGrowDisk,
    "OP_INSTANCE_QUERY_DATA": OpInstanceQueryData,
    "OP_INSTANCE_REBOOT": OpInstanceReboot,
    "OP_INSTANCE_RECREATE_DISKS": OpInstanceRecreateDisks,
    "OP_INSTANCE_REINSTALL": OpInstanceReinstall,
    "OP_INSTANCE_REMOVE": OpInstanceRemove,
    "OP_INSTANCE_RENAME": OpInstanceRename,
    "OP_INSTANCE_SET_PARAMS": OpInstanceSetParams,
    "OP_INSTANCE_SHUTDOWN": OpInstanceShutdown,
    "OP_INSTANCE_STARTUP": OpInstanceStartup,
    "OP_NETWORK_ADD": OpNetworkAdd,
    "OP_NETWORK_CONNECT": OpNetworkConnect,
    "OP_NETWORK_DISCONNECT": OpNetworkDisconnect,
    "OP_NETWORK_REMOVE": OpNetworkRemove,
    "OP_NETWORK_SET_PARAMS": OpNetworkSetParams,
    "OP_NODE_ADD": OpNodeAdd,
    "OP_NODE_MODIFY_STORAGE": OpNodeModifyStorage,
    "OP_NODE_QUERYVOLS": OpNodeQueryvols,
    "OP_NODE_QUERY_STORAGE": OpNodeQueryStorage,
    "OP_NODE_REMOVE": OpNodeRemove,
    "OP_NODE_SET_PARAMS": OpNodeSetParams,
    "OP_OOB_COMMAND": OpOobCommand,
    "OP_OS_DIAGNOSE": OpOsDiagnose,
    "OP_QUERY": OpQuery,
    "OP_QUERY_FIELDS": OpQueryFields,
    "OP_REPAIR_NODE_STORAGE": OpRepairNodeStorage,
    "OP_TAGS_DEL": OpTagsDel,
    "OP_TAGS_GET": OpTagsGet,
    "OP_TAGS_SEARCH": OpTagsSearch,
    "OP_TAGS_SET": OpTagsSet,
    "OP_TEST_DELAY": OpTestDelay,
    "OP_TEST_JQUEUE": OpTestJqueue,
    "OP_TEST_OS_PARAMS": OpTestOsParams,
}


def view(op: Mapping[str, Any]) -> OpView:
    """The typed view of ``op`` (a stored or run form, see ``opcodes.base``).

    Keys the view does not declare are ignored; a null given for a field
    that cannot be null takes the default (as validation does); a missing
    required parameter is an ``OpPrereqError``.  An unknown or missing
    ``OP_ID`` gives the common parameters only.
    """
    cls = VIEWS.get(str(op.get("OP_ID")), OpView)
    values: dict[str, Any] = {}
    for f in fields(cls):
        value = op.get(f.name)
        if value is None and (f.name not in op or f.name in cls.NOT_NULL):
            if f.name in cls.REQUIRED:
                raise OpPrereqError(f"Parameter '{cls.OP_ID}.{f.name}' is required but "
                                    "missing", ECODE_INVAL)
            continue
        values[f.name] = value
    return cls(**values)
