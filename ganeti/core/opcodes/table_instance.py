"""Opcode declarations: instance opcodes.

Declared as in :mod:`ganeti.core.opcodes.table` (whose shared kinds this
module may import); :mod:`ganeti.core.opcodes.catalog` joins the parts.
Parameters, defaults and summaries are Ganeti 3.0's.  What an instance
opcode cannot do yet (remote import, hotplug, disk template conversion,
instance communication) is declared
``reserved``: accepted at its default, refused otherwise with the reason.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.base import OpCode, opt, req, reserved
from ganeti.core.opcodes.kinds import Kind, KindMismatch
from ganeti.core.opcodes.table import NAME_LIST

#: Ganeti's instance limits (``MAX_DISKS``, ``MAX_NICS``).
MAX_DISKS = 16
MAX_NICS = 8

#: The keys of a disk definition (Ganeti's ``IDISK_PARAMS``).
IDISK_PARAMS = frozenset({"access", "adopt", "dev_type", "metavg", "mode", "name", "provider",
                          "size", "spindles", "vg"})
#: The keys of a NIC definition (Ganeti's ``INIC_PARAMS``).
INIC_PARAMS = frozenset({"bridge", "ip", "link", "mac", "mode", "name", "network", "vlan"})
CREATE_MODES = ("create", "import", "remote-import")
DDM_ADD, DDM_REMOVE, DDM_MODIFY, DDM_ATTACH, DDM_DETACH = (
    "add", "remove", "modify", "attach", "detach")
DDMS_VALUES = frozenset({DDM_ADD, DDM_ATTACH, DDM_DETACH, DDM_REMOVE})
DDMS_VALUES_WITH_MODIFY = DDMS_VALUES | {DDM_MODIFY}

_DISK_DEF_NAME = "a disk definition (an object of size, mode, name, vg, adopt, ...)"
_NIC_DEF_NAME = "a NIC definition (an object of mac, ip, mode, link, vlan, network, name)"


def _check_disk_def(value: Any) -> Any:
    # Ganeti's TIDiskParams: non-empty string keys, string or integer values.
    # Which keys a template takes is checked by the unit (Ganeti's CheckArguments).
    if not isinstance(value, dict):
        raise KindMismatch(_DISK_DEF_NAME, value)
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise KindMismatch(_DISK_DEF_NAME, value, f"invalid key {kinds.show(key)}")
        if not (isinstance(item, str) and item) and not (
                isinstance(item, int) and not isinstance(item, bool)):
            raise KindMismatch(_DISK_DEF_NAME, value,
                               f"{key}: expected a non-empty string or an integer, got "
                               f"{kinds.show(item)}")
    return dict(value)


def _check_nic_def(value: Any) -> Any:
    if not isinstance(value, dict):
        raise KindMismatch(_NIC_DEF_NAME, value)
    for key, item in value.items():
        if key not in INIC_PARAMS:
            raise KindMismatch(_NIC_DEF_NAME, value,
                               f"unknown NIC parameter {kinds.show(key)} (known: "
                               f"{', '.join(sorted(INIC_PARAMS))})")
        if item is not None and not isinstance(item, str):
            raise KindMismatch(_NIC_DEF_NAME, value,
                               f"{key}: expected a string or null, got {kinds.show(item)}")
    return dict(value)


DISK_DEF = Kind(_DISK_DEF_NAME, _check_disk_def, py="dict[str, Any]")
NIC_DEF = Kind(_NIC_DEF_NAME, _check_nic_def, py="dict[str, Any]")
DISK_INDEX = kinds.int_range(0, MAX_DISKS - 1)
DISK_TEMPLATE = kinds.one_of(c.DISK_TEMPLATES, "a disk template:")
HYPERVISOR = kinds.one_of(c.HYPER_TYPES, "a hypervisor:")
FILE_DRIVER = kinds.one_of(sorted(c.FILE_DRIVERS), "a file driver:")
SECONDS = kinds.int_range(0)


def _mods_kind(item: Kind, what: str) -> Kind:
    """Ganeti's TSetParamsMods: ``[[op, index-or-name, params], ...]`` (the
    current form) or ``[[op-or-index, params], ...]`` (the old form)."""
    name = f"a list of {what} changes ([action, index or name, parameters])"

    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise KindMismatch(name, value)
        out = []
        for pos, mod in enumerate(value):
            if not isinstance(mod, list) or len(mod) not in (2, 3):
                raise KindMismatch(name, value, f"[{pos}]: expected [action, index or name, "
                                                f"parameters], got {kinds.show(mod)}")
            if len(mod) == 3:
                action, ident, params = mod
                if action not in DDMS_VALUES_WITH_MODIFY:
                    raise KindMismatch(name, value, f"[{pos}]: unknown action "
                                                    f"{kinds.show(action)}")
                if not isinstance(ident, (int, str)) or isinstance(ident, bool):
                    raise KindMismatch(name, value, f"[{pos}]: expected an index or a name, "
                                                    f"got {kinds.show(ident)}")
            else:
                action, params = mod
                if action not in DDMS_VALUES and not (
                        isinstance(action, int) and not isinstance(action, bool)
                        and action >= 0):
                    raise KindMismatch(name, value, f"[{pos}]: unknown action "
                                                    f"{kinds.show(action)}")
            try:
                checked = item.check(params)
            except KindMismatch as err:
                err.path = f"[{pos}]{err.path}"
                raise
            out.append([*mod[:-1], checked])
        if len({len(m) for m in out}) > 1:
            raise KindMismatch(name, value, "old and new forms mixed")
        return out
    return Kind(name, check, py="list[list[Any]]")


def _check_recreate(value: Any) -> Any:
    name = "a list of disk indices, or of [index, parameters] pairs"
    if not isinstance(value, list):
        raise KindMismatch(name, value)
    if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return list(value)
    pair = kinds.tuple_of(kinds.int_range(0), kinds.OBJECT)
    return kinds.list_of(pair, name=name).check(value)


RECREATE_DISKS = Kind("a list of disk indices, or of [index, parameters] pairs",
                      _check_recreate, py="list[Any]")


def _name(value: Any) -> str | None:
    return str(value) if value else None


#: Every single-instance opcode names its instance (or its UUID).
_INSTANCE = (
    req("instance_name", kinds.NON_EMPTY_STRING, "Name of the instance"),
    opt("instance_uuid", kinds.maybe(kinds.NON_EMPTY_STRING), "UUID of the instance"),
)
_SHUTDOWN_TIMEOUT = opt("shutdown_timeout", SECONDS,
                        "Seconds to wait for the instance to shut down",
                        c.DEFAULT_SHUTDOWN_TIMEOUT)
_NOT_YET = "Ganeti parameter, not supported yet"
#: A reservation (forthcoming) or its commit: the create's required parameters may be
#: left out (the reservation holds them, seed 004)
_RESERVING = ("forthcoming", "commit")


def _instance_op(op_id: str, doc: str, *params: Any, summary: bool = True) -> OpCode:
    if summary:
        return OpCode(op_id, doc, (*_INSTANCE, *params), summary_param="instance_name",
                      summary_format=_name)
    return OpCode(op_id, doc, (*_INSTANCE, *params))


OP_INSTANCE_CREATE = OpCode(
    "OP_INSTANCE_CREATE", "Create an instance",
    (
        req("instance_name", kinds.NON_EMPTY_STRING,
            "Name of the instance (a reservation's UUID names it until it is renamed)",
            unless=("forthcoming",)),
        opt("force_variant", kinds.BOOL, "Whether to force an unknown OS variant", False),
        opt("wait_for_sync", kinds.BOOL, "Whether to wait for the disks to synchronize", True),
        opt("name_check", kinds.BOOL, "Whether to check the name resolves", True),
        opt("ignore_ipolicy", kinds.BOOL, "Whether to ignore instance policy violations",
            False),
        opt("opportunistic_locking", kinds.BOOL,
            "Whether to take only free node locks (with an allocator)", False),
        opt("beparams", kinds.OBJECT, "Backend parameters of the instance", {}),
        req("disks", kinds.list_of(DISK_DEF, name="a list of disk definitions"),
            "Disks of the instance", unless=_RESERVING),
        opt("disk_template", kinds.maybe(DISK_TEMPLATE),
            "Disk template (default: the cluster's first enabled one)"),
        opt("group_name", kinds.maybe(kinds.STRING), "Node group (with an allocator)"),
        opt("file_driver", kinds.maybe(FILE_DRIVER), "Driver of file-backed disks"),
        opt("file_storage_dir", kinds.maybe(kinds.STRING),
            "Directory of file-backed disks, below the cluster's storage directory"),
        opt("hvparams", kinds.OBJECT, "Hypervisor parameters of the instance", {}),
        opt("hypervisor", kinds.maybe(HYPERVISOR),
            "Hypervisor (default: the cluster's first enabled one)"),
        opt("iallocator", kinds.maybe(kinds.STRING),
            "Instance allocator choosing the nodes ('.': the cluster's default)"),
        opt("identify_defaults", kinds.BOOL,
            "Drop instance parameters equal to the cluster's defaults", False),
        opt("ip_check", kinds.BOOL, "Whether to check the instance's IP is not in use", True),
        opt("conflicts_check", kinds.BOOL, "Whether to check for conflicting IP addresses",
            True),
        req("mode", kinds.one_of(CREATE_MODES, "a creation mode:"), "Creation mode",
            unless=_RESERVING),
        req("nics", kinds.list_of(NIC_DEF, name="a list of NIC definitions"),
            "Network interfaces of the instance", unless=_RESERVING),
        opt("no_install", kinds.maybe(kinds.BOOL),
            "Do not install the OS (the instance is not started)"),
        opt("osparams", kinds.OBJECT, "OS parameters of the instance", {}),
        opt("osparams_private", kinds.maybe(kinds.OBJECT), "Private OS parameters"),
        opt("osparams_secret", kinds.maybe(kinds.OBJECT),
            "Secret OS parameters (given to the OS scripts, never stored)"),
        opt("os_type", kinds.maybe(kinds.STRING), "Operating system (OS definition+variant)"),
        opt("pnode", kinds.maybe(kinds.STRING), "Primary node"),
        opt("pnode_uuid", kinds.maybe(kinds.STRING), "UUID of the primary node"),
        opt("snode", kinds.maybe(kinds.STRING), "Secondary node (mirrored templates)"),
        opt("snode_uuid", kinds.maybe(kinds.STRING), "UUID of the secondary node"),
        reserved("source_handshake", _NOT_YET),
        reserved("source_instance_name", _NOT_YET),
        opt("source_shutdown_timeout", SECONDS,
            "Seconds the source instance had to shut down (remote import)",
            c.DEFAULT_SHUTDOWN_TIMEOUT),
        reserved("source_x509_ca", _NOT_YET),
        opt("src_node", kinds.maybe(kinds.STRING), "Source node of an import"),
        opt("src_node_uuid", kinds.maybe(kinds.STRING), "UUID of the source node of an import"),
        opt("src_path", kinds.maybe(kinds.STRING), "Source directory of an import"),
        opt("compress", kinds.STRING, "Compression of imports", "none"),
        opt("start", kinds.BOOL, "Whether to start the instance once created", True),
        opt("forthcoming", kinds.BOOL,
            "Only reserve the resources: a forthcoming instance, in the config only", False),
        opt("commit", kinds.BOOL, "Turn the reserved (forthcoming) instance into a real one",
            False),
        opt("tags", kinds.list_of(kinds.NON_EMPTY_STRING, name="a list of tags"),
            "Tags of the instance", []),
        reserved("instance_communication", _NOT_YET, False),
        reserved("helper_startup_timeout", _NOT_YET),
        reserved("helper_shutdown_timeout", _NOT_YET),
    ),
    summary_param="instance_name", summary_format=_name)

OP_INSTANCE_REINSTALL = _instance_op(
    "OP_INSTANCE_REINSTALL", "Reinstall the operating system of an instance",
    opt("force_variant", kinds.BOOL, "Whether to force an unknown OS variant", False),
    opt("os_type", kinds.maybe(kinds.STRING), "Install this OS instead (kept afterwards)"),
    opt("osparams", kinds.maybe(kinds.OBJECT), "OS parameters for this reinstall only"),
    opt("osparams_private", kinds.maybe(kinds.OBJECT),
        "Private OS parameters for this reinstall only"),
    opt("osparams_secret", kinds.maybe(kinds.OBJECT),
        "Secret OS parameters for this reinstall (never stored)"))

OP_INSTANCE_REMOVE = _instance_op(
    "OP_INSTANCE_REMOVE", "Remove an instance and its disks",
    _SHUTDOWN_TIMEOUT,
    opt("ignore_failures", kinds.BOOL, "Remove the instance even if some steps fail", False))

OP_INSTANCE_RENAME = _instance_op(
    "OP_INSTANCE_RENAME", "Rename an instance",
    req("new_name", kinds.NON_EMPTY_STRING, "New name of the instance"),
    opt("name_check", kinds.BOOL, "Whether to check the new name resolves", True),
    opt("ip_check", kinds.BOOL, "Whether to check the new IP address is not in use", True),
    summary=False)

OP_INSTANCE_STARTUP = _instance_op(
    "OP_INSTANCE_STARTUP", "Start an instance",
    opt("force", kinds.BOOL, "Start even if the checks fail", False),
    opt("ignore_offline_nodes", kinds.BOOL, "Ignore offline nodes (only records the state)",
        False),
    opt("hvparams", kinds.OBJECT, "Hypervisor parameters for this start only", {}),
    opt("beparams", kinds.OBJECT, "Backend parameters for this start only", {}),
    opt("no_remember", kinds.BOOL, "Do not record the new state in the config", False),
    opt("startup_paused", kinds.BOOL, "Start the instance paused", False),
    _SHUTDOWN_TIMEOUT)

OP_INSTANCE_SHUTDOWN = _instance_op(
    "OP_INSTANCE_SHUTDOWN", "Stop an instance",
    opt("force", kinds.BOOL, "Stop even if the checks fail", False),
    opt("ignore_offline_nodes", kinds.BOOL, "Ignore offline nodes (only records the state)",
        False),
    opt("timeout", SECONDS, "Seconds to wait for a clean shutdown before destroying",
        c.DEFAULT_SHUTDOWN_TIMEOUT),
    opt("no_remember", kinds.BOOL, "Do not record the new state in the config", False),
    opt("admin_state_source", kinds.maybe(kinds.one_of(sorted(c.INSTANCE_ADMIN_SOURCES),
                                                       "an admin state source:")),
        "Who changed the admin state (admin or user)"))

OP_INSTANCE_REBOOT = _instance_op(
    "OP_INSTANCE_REBOOT", "Reboot an instance",
    _SHUTDOWN_TIMEOUT,
    opt("ignore_secondaries", kinds.BOOL,
        "Start the instance even if secondary disks fail", False),
    req("reboot_type", kinds.one_of(sorted(c.REBOOT_TYPES), "a reboot type:"),
        "How to reboot (soft, hard, full)"))

OP_INSTANCE_CONSOLE = _instance_op(
    "OP_INSTANCE_CONSOLE", "Return how to reach the console of an instance")

OP_INSTANCE_ACTIVATE_DISKS = _instance_op(
    "OP_INSTANCE_ACTIVATE_DISKS", "Activate the disks of an instance",
    opt("ignore_size", kinds.BOOL, "Ignore the recorded disk sizes", False),
    opt("wait_for_sync", kinds.BOOL, "Whether to wait for the disks to synchronize", False))

OP_INSTANCE_DEACTIVATE_DISKS = _instance_op(
    "OP_INSTANCE_DEACTIVATE_DISKS", "Deactivate the disks of an instance",
    opt("force", kinds.BOOL, "Deactivate even if the instance runs", False))

OP_INSTANCE_RECREATE_DISKS = _instance_op(
    "OP_INSTANCE_RECREATE_DISKS", "Recreate the disks of an instance",
    opt("disks", RECREATE_DISKS, "Disks to recreate (default: all)", []),
    opt("nodes", NAME_LIST, "New nodes of the instance (relocation)", []),
    opt("node_uuids", kinds.maybe(NAME_LIST), "UUIDs of the new nodes"),
    opt("iallocator", kinds.maybe(kinds.STRING),
        "Instance allocator choosing new nodes ('.': the cluster's default)"))

OP_INSTANCE_QUERY_DATA = OpCode(
    "OP_INSTANCE_QUERY_DATA", "Return the configuration and run-time state of instances",
    (
        opt("use_locking", kinds.BOOL, "Whether to use synchronization", False),
        opt("instances", NAME_LIST, "Instances (default: all)", []),
        opt("static", kinds.BOOL, "Only the configuration, without asking the nodes", False),
    ))

OP_INSTANCE_SET_PARAMS = _instance_op(
    "OP_INSTANCE_SET_PARAMS", "Change the parameters of an instance",
    opt("force", kinds.BOOL, "Change even if the checks fail", False),
    opt("force_variant", kinds.BOOL, "Whether to force an unknown OS variant", False),
    opt("ignore_ipolicy", kinds.BOOL, "Whether to ignore instance policy violations", False),
    opt("nics", _mods_kind(NIC_DEF, "NIC"), "NIC changes", []),
    opt("disks", _mods_kind(DISK_DEF, "disk"), "Disk changes", []),
    opt("beparams", kinds.OBJECT, "Backend parameters to change", {}),
    opt("runtime_mem", kinds.maybe(kinds.int_range(1)),
        "New memory of the running instance (MiB)"),
    opt("hvparams", kinds.OBJECT, "Hypervisor parameters to change", {}),
    opt("disk_template", kinds.maybe(DISK_TEMPLATE),
        "New disk template (conversion: not supported yet)"),
    reserved("ext_params", _NOT_YET, {}),
    opt("file_driver", kinds.maybe(FILE_DRIVER), "Driver of file-backed disks"),
    opt("file_storage_dir", kinds.maybe(kinds.STRING), "Directory of file-backed disks"),
    opt("pnode", kinds.maybe(kinds.STRING), "Primary node (template conversion)"),
    opt("pnode_uuid", kinds.maybe(kinds.STRING), "UUID of the primary node"),
    opt("remote_node", kinds.maybe(kinds.STRING), "Secondary node (template conversion)"),
    opt("remote_node_uuid", kinds.maybe(kinds.STRING), "UUID of the secondary node"),
    opt("iallocator", kinds.maybe(kinds.STRING), "Instance allocator (not supported yet)"),
    opt("os_name", kinds.maybe(kinds.STRING), "Change the OS without reinstalling"),
    opt("osparams", kinds.OBJECT, "OS parameters to change", {}),
    opt("osparams_private", kinds.maybe(kinds.OBJECT), "Private OS parameters to change"),
    opt("wait_for_sync", kinds.BOOL, "Whether to wait for the disks to synchronize", True),
    opt("offline", kinds.maybe(kinds.BOOL), "Mark the instance offline (true) or online"),
    opt("conflicts_check", kinds.BOOL, "Whether to check for conflicting IP addresses", True),
    opt("hotplug", kinds.BOOL, "Hot-plug new devices (not supported: refused)", False),
    opt("hotplug_if_possible", kinds.BOOL, "Hot-plug new devices where possible", False),
    reserved("instance_communication", _NOT_YET))

OP_INSTANCE_GROW_DISK = _instance_op(
    "OP_INSTANCE_GROW_DISK", "Grow a disk of an instance",
    opt("wait_for_sync", kinds.BOOL, "Whether to wait for the disk to synchronize", True),
    req("disk", DISK_INDEX, "Index of the disk"),
    req("amount", kinds.int_range(0), "MiB to add, or the new size with absolute"),
    opt("absolute", kinds.BOOL, "Whether amount is the new size", False),
    opt("ignore_ipolicy", kinds.BOOL, "Whether to ignore instance policy violations", False))

MIGRATION_MODE = kinds.one_of(sorted(c.HT_MIGRATION_MODES), "a migration mode:")
_TARGET_NODE = (
    opt("target_node", kinds.maybe(kinds.STRING), "Target node for instance migration/failover"),
    opt("target_node_uuid", kinds.maybe(kinds.STRING),
        "Target node UUID for instance migration/failover"),
)
_IGNORE_IPOLICY = opt("ignore_ipolicy", kinds.BOOL, "Whether to ignore ipolicy violations", False)
_CLEANUP = opt("cleanup", kinds.BOOL,
               "Whether a previously failed migration should be cleaned up", False)
_MIGRATION_IALLOCATOR = opt(
    "iallocator", kinds.maybe(kinds.STRING),
    "Iallocator for deciding the target node for shared-storage instances")
#: Ganeti's migration parameters (OpInstanceMigrate and OpNodeMigrate share them)
MIGRATION_MODE_PARAMS = (
    opt("mode", kinds.maybe(MIGRATION_MODE), "Migration type (live/non-live)"),
    opt("live", kinds.maybe(kinds.BOOL), "Obsolete 'live' migration mode (do not use)"),
)
_ALLOW_RUNTIME_CHANGES = opt("allow_runtime_changes", kinds.BOOL,
                             "Whether to allow runtime changes while migrating", True)

OP_INSTANCE_FAILOVER = _instance_op(
    "OP_INSTANCE_FAILOVER", "Failover an instance",
    opt("shutdown_timeout", SECONDS, "How long to wait for instance to shut down",
        c.DEFAULT_SHUTDOWN_TIMEOUT),
    opt("ignore_consistency", kinds.BOOL, "Whether to ignore disk consistency", False),
    *_TARGET_NODE, _IGNORE_IPOLICY, _CLEANUP, _MIGRATION_IALLOCATOR)

OP_INSTANCE_MIGRATE = _instance_op(
    "OP_INSTANCE_MIGRATE", "Migrate an instance",
    *MIGRATION_MODE_PARAMS, *_TARGET_NODE, _ALLOW_RUNTIME_CHANGES, _IGNORE_IPOLICY, _CLEANUP,
    _MIGRATION_IALLOCATOR,
    opt("allow_failover", kinds.BOOL,
        "Whether we can fallback to failover if migration is not possible", False),
    opt("ignore_hvversions", kinds.BOOL,
        "Whether to ignore incompatible Hypervisor versions", False))

#: Migrate every primary instance of a node (Ganeti's OpNodeMigrate; its result is
#: ``{"jobs": [[true, id], ...]}``, one OP_INSTANCE_MIGRATE job per instance)
OP_NODE_MIGRATE = OpCode(
    "OP_NODE_MIGRATE", "Migrate all instances from a node",
    (
        req("node_name", kinds.NON_EMPTY_STRING, "A required node name (for single-node LUs)"),
        opt("node_uuid", kinds.maybe(kinds.NON_EMPTY_STRING),
            "A node UUID (for single-node LUs)"),
        *MIGRATION_MODE_PARAMS, *_TARGET_NODE, _ALLOW_RUNTIME_CHANGES, _IGNORE_IPOLICY,
        _MIGRATION_IALLOCATOR,
    ),
    summary_param="node_name", summary_format=_name)

#: Replace the disks of a mirrored instance (Ganeti's OpInstanceReplaceDisks): new
#: volumes on the primary or the secondary, a new secondary node (named or chosen by
#: an allocator), or the faulty side found automatically
OP_INSTANCE_REPLACE_DISKS = _instance_op(
    "OP_INSTANCE_REPLACE_DISKS", "Replace the disks of an instance",
    opt("early_release", kinds.BOOL, "Whether to release locks as soon as possible", False),
    _IGNORE_IPOLICY,
    req("mode", kinds.one_of(sorted(c.REPLACE_MODES), "a replace-disks mode:"),
        "Replacement mode"),
    opt("disks", kinds.list_of(DISK_INDEX, name="a list of disk indices"),
        "List of disk indices", []),
    opt("remote_node", kinds.maybe(kinds.STRING), "New secondary node"),
    opt("remote_node_uuid", kinds.maybe(kinds.STRING), "New secondary node UUID"),
    _MIGRATION_IALLOCATOR)

#: The opcodes of this part, in the order of the reference.
OP_INSTANCE_MULTI_ALLOC = OpCode(
    "OP_INSTANCE_MULTI_ALLOC", "Create several instances on nodes an allocator chooses",
    (
        opt("opportunistic_locking", kinds.BOOL,
            "Whether to take only free node locks (with an allocator)", False),
        opt("iallocator", kinds.maybe(kinds.STRING),
            "Instance allocator choosing the nodes (default: the cluster's)"),
        opt("instances", kinds.list_of(kinds.OBJECT, name="a list of OP_INSTANCE_CREATE "
                                                          "opcodes"),
            "The instance create opcodes", []),
    ))

OPCODES: tuple[OpCode, ...] = (
    OP_INSTANCE_CREATE, OP_INSTANCE_REINSTALL, OP_INSTANCE_REMOVE, OP_INSTANCE_RENAME,
    OP_INSTANCE_STARTUP, OP_INSTANCE_SHUTDOWN, OP_INSTANCE_REBOOT, OP_INSTANCE_CONSOLE,
    OP_INSTANCE_ACTIVATE_DISKS, OP_INSTANCE_DEACTIVATE_DISKS, OP_INSTANCE_RECREATE_DISKS,
    OP_INSTANCE_QUERY_DATA, OP_INSTANCE_SET_PARAMS, OP_INSTANCE_GROW_DISK,
    OP_INSTANCE_MULTI_ALLOC, OP_INSTANCE_FAILOVER, OP_INSTANCE_MIGRATE, OP_NODE_MIGRATE,
    OP_INSTANCE_REPLACE_DISKS,
)
