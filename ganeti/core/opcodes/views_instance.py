"""Typed, read-only views of the opcodes of the table's instance part.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ganeti.core.opcodes.views_base import OpView


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
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "beparams", "commit", "compress", "conflicts_check", "force_variant", "forthcoming",
        "hvparams", "identify_defaults", "ignore_ipolicy", "ip_check", "name_check",
        "opportunistic_locking", "osparams", "priority", "reason", "source_shutdown_timeout",
        "start", "tags", "wait_for_sync"
    })
    instance_name: str | None = None
    force_variant: bool = False
    wait_for_sync: bool = True
    name_check: bool = True
    ignore_ipolicy: bool = False
    opportunistic_locking: bool = False
    beparams: dict[str, Any] = field(default_factory=lambda: {})
    disks: list[dict[str, Any]] | None = None
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
    mode: str | None = None
    nics: list[dict[str, Any]] | None = None
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
    forthcoming: bool = False
    commit: bool = False
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
class OpInstanceFailover(OpView):
    """OP_INSTANCE_FAILOVER: Failover an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_FAILOVER"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "cleanup", "ignore_consistency", "ignore_ipolicy", "instance_name", "priority", "reason",
        "shutdown_timeout"
    })
    instance_name: str
    instance_uuid: str | None = None
    shutdown_timeout: int = 120
    ignore_consistency: bool = False
    target_node: str | None = None
    target_node_uuid: str | None = None
    ignore_ipolicy: bool = False
    cleanup: bool = False
    iallocator: str | None = None


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
class OpInstanceMigrate(OpView):
    """OP_INSTANCE_MIGRATE: Migrate an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_MIGRATE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "allow_failover", "allow_runtime_changes", "cleanup", "ignore_hvversions", "ignore_ipolicy",
        "instance_name", "priority", "reason"
    })
    instance_name: str
    instance_uuid: str | None = None
    mode: str | None = None
    live: bool | None = None
    target_node: str | None = None
    target_node_uuid: str | None = None
    allow_runtime_changes: bool = True
    ignore_ipolicy: bool = False
    cleanup: bool = False
    iallocator: str | None = None
    allow_failover: bool = False
    ignore_hvversions: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceMultiAlloc(OpView):
    """OP_INSTANCE_MULTI_ALLOC: Create several instances on nodes an allocator chooses."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_MULTI_ALLOC"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "instances", "opportunistic_locking", "priority", "reason"
    })
    opportunistic_locking: bool = False
    iallocator: str | None = None
    instances: list[dict[str, Any]] = field(default_factory=lambda: [])


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
class OpInstanceReplaceDisks(OpView):
    """OP_INSTANCE_REPLACE_DISKS: Replace the disks of an instance."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_REPLACE_DISKS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name", "mode"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "disks", "early_release", "ignore_ipolicy", "instance_name", "mode", "priority", "reason"
    })
    instance_name: str
    instance_uuid: str | None = None
    early_release: bool = False
    ignore_ipolicy: bool = False
    mode: str
    disks: list[int] = field(default_factory=lambda: [])
    remote_node: str | None = None
    remote_node_uuid: str | None = None
    iallocator: str | None = None


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
class OpNodeMigrate(OpView):
    """OP_NODE_MIGRATE: Migrate all instances from a node."""

    OP_ID: ClassVar[str] = "OP_NODE_MIGRATE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"node_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "allow_runtime_changes", "ignore_ipolicy", "node_name", "priority", "reason"
    })
    node_name: str
    node_uuid: str | None = None
    mode: str | None = None
    live: bool | None = None
    target_node: str | None = None
    target_node_uuid: str | None = None
    allow_runtime_changes: bool = True
    ignore_ipolicy: bool = False
    iallocator: str | None = None
