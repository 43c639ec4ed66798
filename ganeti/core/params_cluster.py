"""The cluster after an OP_CLUSTER_SET_PARAMS, computed as Ganeti computes it.

:func:`compute_cluster_change` follows Ganeti's LUClusterSetParams: the
argument checks, then the prerequisite checks, then the changes in Ganeti's
order (so ``add_uids``, then ``remove_uids``, then ``uid_pool``, the last
winning).  It works on a copy and returns it with the feedback lines Ganeti
prints; an error leaves the stored cluster untouched.
"""

from __future__ import annotations

import copy
import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import constants, hvchecks
from ganeti.core.errors import (
    ECODE_INVAL,
    ECODE_NOENT,
    ECODE_STATE,
    ConfigurationError,
    GenericError,
    HypervisorError,
    OpPrereqError,
)
from ganeti.core.objects import Cluster, ConfigData
from ganeti.core.params_fill import fill_os
from ganeti.core.params_merge import (
    check_compression_tools,
    check_disk_access_modes,
    check_ipolicy_vs_disk_templates,
    fill_dict,
    force_diskparams,
    get_updated_ipolicy,
    get_updated_params,
    normalize_mac_prefix,
    verify_dict_options,
)
from ganeti.core.params_types import (
    BE_MEMORY,
    BES_PARAMETER_TYPES,
    HVS_PARAMETER_TYPES,
    NDS_PARAMETER_TYPES,
    NICS_PARAMETER_TYPES,
    force_dict_type,
)

DEFAULT = "default"  # the key of the cluster's be/nic defaults
LVM_TEMPLATES = frozenset({constants.DT_PLAIN, constants.DT_DRBD8})
_URL_RE = re.compile(r"^(https?|ftp)://", re.I)

#: Parameters of OP_CLUSTER_SET_PARAMS that change something here.
CHANGING_PARAMS = (
    "hvparams", "beparams", "nicparams", "ndparams", "diskparams", "ipolicy",
    "candidate_pool_size", "max_running_jobs", "max_tracked_jobs", "uid_pool", "add_uids",
    "remove_uids", "default_iallocator", "default_iallocator_params", "mac_prefix",
    "reserved_lvs", "compression_tools", "prealloc_wipe_disks", "maintain_node_health",
    "modify_etc_hosts", "use_external_mip_script", "enabled_user_shutdown", "install_image",
    "zeroing_image", "enabled_hypervisors", "enabled_disk_templates", "file_storage_dir",
    "shared_file_storage_dir", "gluster_storage_dir", "hidden_os", "blacklisted_os",
    "enabled_data_collectors", "data_collector_interval", "os_hvp", "osparams",
    "osparams_private_cluster", "vg_name", "master_netmask",
)

#: Ganeti's MIN_VG_SIZE: the smallest volume group (MiB) the cluster accepts.
MIN_VG_SIZE = 20480


#: Where Ganeti looks for instance allocators (not below GANETI_ROOTDIR, as in Ganeti).
IALLOCATOR_SEARCH_PATH = ("/usr/local/lib/ganeti/iallocators", "/usr/lib/ganeti/iallocators")
_PLUGIN_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")


#: The built-in allocator's name (always available: see ganeti.master.iallocator.runner).
BUILTIN_IALLOCATOR = "ganeti-place"


def find_iallocator(value: str, search_path: tuple[str, ...] = IALLOCATOR_SEARCH_PATH,
                    exists: Callable[[str], bool] | None = None) -> None:
    """Refuse a default allocator that is not one: each name of the comma-separated list
    (seed 001: tried in order) must be the built-in or a file in the search path, or
    satisfy ``exists`` when given (blocking: stats files)."""
    for name in [n.strip() for n in value.split(",")] or [value]:
        if _PLUGIN_NAME_RE.match(name):
            if exists is not None:
                if exists(name):
                    continue
            elif name == BUILTIN_IALLOCATOR or any(
                    os.path.isfile(os.path.join(d, name)) for d in search_path):
                continue
        raise OpPrereqError(f"Invalid default iallocator script '{name}' specified",
                            ECODE_INVAL)


@dataclass
class ClusterChange:
    """The new cluster and the feedback lines (``" - WARNING: ..."`` included)."""

    cluster: Cluster
    feedback: list[str] = field(default_factory=list)
    #: OS name -> its filled parameters, for the OSes whose parameters changed: the
    #: unit validates them on the master node (Ganeti's CheckOSParams)
    os_checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: (hypervisor, filled parameters) whose values changed: the unit has the
    #: vm_capable nodes validate them (Ganeti's CheckHVParams)
    hv_checks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: the volume group every vm_capable node must have (at least MIN_VG_SIZE):
    #: the unit asks the nodes (Ganeti's _CheckVgNameOnNodes); None: no check
    vg_check: str | None = None
    #: the DRBD usermode helper every vm_capable node must report: the unit asks
    #: them (Ganeti's _CheckDrbdHelperOnNodes); None: no check
    drbd_check: str | None = None

    def warn(self, message: str) -> None:
        """Ganeti's LogWarning."""
        self.feedback.append(f" - WARNING: {message}")


def _check_image(image: str | None, message: str) -> None:
    if image is not None and not (_URL_RE.match(image) or os.path.isabs(image)):
        raise OpPrereqError(message)


def _check_arguments(op: dict[str, Any]) -> None:
    if op.get("mac_prefix"):
        op["mac_prefix"] = normalize_mac_prefix(op["mac_prefix"])
    if op.get("diskparams"):
        force_diskparams(op["diskparams"])
        try:
            verify_dict_options(op["diskparams"], constants.DISK_DT_DEFAULTS)
            check_disk_access_modes(op["diskparams"])
        except OpPrereqError as err:
            raise OpPrereqError(f"While verify diskparams options: {err.args[0]}",
                                ECODE_INVAL) from None
    _check_image(op.get("install_image"),
                 "Install image must be an absolute path or a URL")


def _disk_templates(cfg: ConfigData, ch: ClusterChange,
                    op: dict[str, Any]) -> list[str]:
    cl = ch.cluster
    old = list(cl.enabled_disk_templates)
    wanted = op.get("enabled_disk_templates")
    if not wanted:
        return old
    disabled = sorted(set(old) - set(wanted))
    for template in disabled:
        using = [d for d in cfg.disks.values() if d.dev_type == template]
        if using:
            names = "\n * ".join(f"{d.uuid} ({_disk_owner(cfg, d.uuid)})" for d in using)
            raise OpPrereqError(f"Cannot disable disk template '{template}', because there "
                                f"is at least one disk using it:\n * {names}",
                                "wrong_state")
    if constants.DT_DISKLESS in disabled:
        for inst in cfg.instances.values():
            if not getattr(inst, "disks", None):
                raise OpPrereqError("Cannot disable disk template 'diskless', because there "
                                    f"is at least one instance using it:\n * {inst.name}",
                                    "wrong_state")
    return list(wanted)


def _vg_name(cfg: ConfigData, ch: ClusterChange, op: dict[str, Any],
             enabled: list[str]) -> None:
    """Ganeti's _CheckVgName without its node call (the unit makes it for ``vg_check``).

    ``""`` disables lvm storage, refused while an lvm-based template is (or gets)
    enabled or a disk uses one; lvm-based templates need a volume group.  The
    nodes are checked for a volume group given while lvm is enabled, and for the
    configured one when lvm-based templates get enabled.
    """
    vg = op.get("vg_name")
    current = ch.cluster.volume_group_name
    lvm_enabled = bool(LVM_TEMPLATES & set(enabled))
    lvm_added = bool(LVM_TEMPLATES & (set(enabled) - set(cfg.cluster.enabled_disk_templates)))
    if vg == "" and lvm_enabled:
        raise OpPrereqError("Cannot unset volume group if lvm-based disk templates are or "
                            "get enabled.", ECODE_INVAL)
    # (Ganeti asks this whenever lvm is enabled; a cluster initialised with plain
    # and no volume group could then change nothing else.)
    if vg is None and current is None and lvm_added:
        raise OpPrereqError("Please specify a volume group when enabling lvm-based "
                            "disk-templates.", ECODE_INVAL)
    if vg == "" and any(d.dev_type in LVM_TEMPLATES for d in cfg.disks.values()):
        raise OpPrereqError("Cannot disable lvm storage while lvm-based instances exist",
                            ECODE_INVAL)
    if vg and lvm_enabled:
        ch.vg_check = vg
    elif vg is None and lvm_added:
        ch.vg_check = current


def check_vg_size(vgs: dict[str, Any], vg_name: str, min_size: int = MIN_VG_SIZE
                  ) -> str | None:
    """Ganeti's CheckVolumeGroupSize: why ``vg_name`` is unusable in a node's
    ``vg_list`` answer ({name: MiB}), or None."""
    size = vgs.get(vg_name)
    if size is None:
        return f"volume group '{vg_name}' missing"
    if size < min_size:
        return (f"volume group '{vg_name}' too small ({min_size} MiB required, "
                f"{int(size)} MiB found)")
    return None


def _disk_owner(cfg: ConfigData, disk_uuid: str) -> str:
    for inst in cfg.instances.values():
        if disk_uuid in (getattr(inst, "disks", None) or []):
            return f"on {inst.name}"
    return "detached"


def _storage_dirs(ch: ClusterChange, op: dict[str, Any], enabled: list[str]) -> None:
    for param, template in (("file_storage_dir", constants.DT_FILE),
                            ("shared_file_storage_dir", constants.DT_SHARED_FILE)):
        value = op.get(param)
        if value is None:
            continue
        if value == "":
            if template in enabled:
                raise OpPrereqError(f"Unsetting the '{template}' storage directory while "
                                    f"having '{template}' storage enabled is not permitted.",
                                    ECODE_INVAL)
        elif template not in enabled:
            ch.warn(f"Specified a {template} storage directory, although {template} "
                    "storage is not enabled.")


def _hv_params(ch: ClusterChange, op: dict[str, Any]) -> dict[str, dict[str, Any]]:
    cl = ch.cluster
    new = copy.deepcopy(cl.hvparams)
    for hv, values in (op.get("hvparams") or {}).items():
        new.setdefault(hv, {}).update(values)
    for hv in op.get("enabled_hypervisors") or []:
        if hv not in constants.ENABLED_HYPERVISOR_CHOICES:
            raise OpPrereqError(f"Hypervisor {hv!r} is not available in this version "
                                f"(available: "
                                f"{', '.join(sorted(constants.ENABLED_HYPERVISOR_CHOICES))})",
                                ECODE_INVAL)
        new[hv] = fill_dict(constants.HVC_DEFAULTS[hv], new.get(hv, {}))
        force_dict_type(new[hv], HVS_PARAMETER_TYPES)
    touched = set(op.get("hvparams") or {}) | set(op.get("enabled_hypervisors") or [])
    for hv in sorted(touched):
        defaults = constants.HVC_DEFAULTS.get(hv)
        if defaults is None:
            raise OpPrereqError(f"Hypervisor {hv!r} is not known", ECODE_NOENT)
        # Ganeti's config holds every hypervisor's parameters filled (one made before
        # ours stored them all may lack some): checked and stored filled
        new[hv] = fill_dict(defaults, new[hv])
        force_dict_type(new[hv], HVS_PARAMETER_TYPES)
        for key in new[hv]:
            if key not in defaults:
                raise HypervisorError(f"Parameter '{key}' is not supported")
        # Ganeti's cheap syntax checks (CheckParameterSyntax), then the nodes' (in the unit)
        _hv_syntax(hv, new[hv])
        ch.hv_checks.append((hv, copy.deepcopy(new[hv])))
    return new


def _hv_syntax(hv: str, filled: dict[str, Any]) -> None:
    """hvchecks.check_syntax, its refusal raised as Ganeti raises it here (HypervisorError)."""
    try:
        hvchecks.check_syntax(hv, filled)
    except OpPrereqError as err:
        raise HypervisorError(str(err.args[0])) from None


def _check_uid_pool_users(ch: ClusterChange) -> None:
    """``security_model=pool`` in the cluster's (or an OS's) parameters needs a pool."""
    cl = ch.cluster
    if cl.uid_pool:
        return
    layers = [(hv, cl.hvparams.get(hv, {})) for hv in cl.enabled_hypervisors]
    layers += [(hv, values) for hvs in cl.os_hvp.values() for hv, values in hvs.items()]
    for hv, values in layers:
        if values.get("security_model") == hvchecks.SM_POOL:
            raise OpPrereqError(f"Parameter 'security_model' of hypervisor {hv} is 'pool' "
                                "but the cluster's user-id pool is empty", ECODE_INVAL)


def _os_list(ch: ClusterChange, attr: str, mods: list[Any], desc: str) -> None:
    desc += " OS list"
    lst: list[str] = getattr(ch.cluster, attr)
    for action, name in mods:
        if action == "add":
            if name in lst:
                ch.feedback.append(f"OS {name} already in {desc}, ignoring")
            else:
                lst.append(name)
        elif name in lst:
            lst.remove(name)
        else:
            ch.feedback.append(f"OS {name} not found in {desc}, ignoring")


def _os_hvp(ch: ClusterChange, op: dict[str, Any]) -> None:
    """Merge OP's per-OS hypervisor parameters as Ganeti does (a null hypervisor entry
    removes it, an OS left without any is dropped); their names and types are
    checked."""
    new = copy.deepcopy(ch.cluster.os_hvp)
    for os_name, hvs in op["os_hvp"].items():
        current = new.setdefault(os_name, {})
        for hv, values in (hvs or {}).items():
            if values is None:
                current.pop(hv, None)
            else:
                current.setdefault(hv, {}).update(values)
        if hvs is None:
            current.clear()
    new = {os_name: hvs for os_name, hvs in new.items() if hvs}
    for hvs in new.values():
        for hv, values in hvs.items():
            force_dict_type(values, HVS_PARAMETER_TYPES)
            if hv not in constants.HVC_DEFAULTS:
                raise HypervisorError(f"Unknown hypervisor type '{hv}'")
            unknown = sorted(set(values) - set(constants.HVC_DEFAULTS.get(hv, {})))
            if unknown:
                raise HypervisorError(f"Parameter '{unknown[0]}' is not supported")
            # Ganeti's: on top of the (new) cluster defaults, syntax, then the nodes
            filled = fill_dict(fill_dict(constants.HVC_DEFAULTS.get(hv, {}),
                                         ch.cluster.hvparams.get(hv, {})), values)
            _hv_syntax(hv, filled)
            ch.hv_checks.append((hv, filled))
    ch.cluster.os_hvp = new


def os_hvp_echo(old: dict[str, dict[str, Any]], given: dict[str, Any]) -> dict[str, Any]:
    """OP's ``os_hvp`` as Ganeti's unit leaves it in the job's opcode.  Its merge
    takes the opcode's own dictionaries where the cluster has none yet (an OS
    without per-OS parameters, or a hypervisor that OS has none for) and then forces
    their types in place, before any other check; values merged into existing ones
    stay as given.  A value that cannot be typed is left as given (the change is
    refused anyway)."""
    echo = copy.deepcopy(given)
    for os_name, hvs in echo.items():
        for hv, values in (hvs or {}).items():
            if values is None or hv in old.get(os_name, {}):
                continue
            try:
                typed = copy.deepcopy(values)
                force_dict_type(typed, HVS_PARAMETER_TYPES)
            except (GenericError, ValueError, TypeError):
                continue
            hvs[hv] = typed
    return echo


def _os_params(ch: ClusterChange, op: dict[str, Any]) -> None:
    """Merge OP's per-OS public and private parameters (``None`` or ``"default"``
    removes a key; an OS left without any is dropped) and note what to validate."""
    cl = ch.cluster
    changed: set[str] = set()
    for attr, param in (("osparams", "osparams"),
                        ("osparams_private_cluster", "osparams_private_cluster")):
        if op.get(param) is None:
            continue
        new = copy.deepcopy(getattr(cl, attr))
        for os_name, values in op[param].items():
            new[os_name] = get_updated_params(new.get(os_name, {}), values, use_none=True)
            if not new[os_name]:
                del new[os_name]
            changed.add(os_name)
        setattr(cl, attr, new)
    for os_name in sorted(changed):
        ch.os_checks[os_name] = fill_os(cl, os_name, {}, {})


def _data_collectors(cl: Cluster, op: dict[str, Any]) -> None:
    for param in ("enabled_data_collectors", "data_collector_interval"):
        unknown = sorted(set(op.get(param) or {}) - set(cl.data_collectors))
        if unknown:
            raise OpPrereqError(f"Data collector names not recognized: {', '.join(unknown)}",
                                ECODE_INVAL)
    for name, active in (op.get("enabled_data_collectors") or {}).items():
        cl.data_collectors[name]["active"] = active
    for name, interval in (op.get("data_collector_interval") or {}).items():
        cl.data_collectors[name]["interval"] = int(interval)


def _uid_pool(cl: Cluster, op: dict[str, Any]) -> None:
    pool = [[lo, hi] for lo, hi in cl.uid_pool]
    for rng in op.get("add_uids") or []:
        if list(rng) not in pool:
            pool.append(list(rng))
    pool.sort()
    for rng in op.get("remove_uids") or []:
        if list(rng) not in pool:
            raise OpPrereqError("User-id range to be removed is not found in the current "
                                f"user-id pool: {list(rng)}", ECODE_INVAL)
        pool.remove(list(rng))
    if op.get("uid_pool") is not None:
        pool = [list(r) for r in op["uid_pool"]]
    cl.uid_pool = pool


def _drbd_helper(cfg: ConfigData, ch: ClusterChange, op: dict[str, Any],
                 enabled: list[str]) -> None:
    """Ganeti's _CheckDrbdHelper and _SetDrbdHelper, without the node call (the unit
    makes it for ``drbd_check``): ``""`` unsets the helper, refused while drbd is
    enabled or a drbd disk exists; a helper given while drbd is enabled, or the
    configured one when drbd gets enabled, is checked on the nodes."""
    helper = op.get("drbd_helper")
    drbd_enabled = constants.DT_DRBD8 in enabled
    gets_enabled = constants.DT_DRBD8 in set(enabled) - set(cfg.cluster.enabled_disk_templates)
    if helper == "":
        if drbd_enabled:
            raise OpPrereqError("Cannot disable drbd helper while DRBD is enabled.",
                                ECODE_STATE)
        if any(d.dev_type == constants.DT_DRBD8 for d in cfg.disks.values()):
            raise OpPrereqError("Cannot disable drbd helper while drbd-based instances "
                                "exist", ECODE_INVAL)
    elif helper is not None and drbd_enabled:
        ch.drbd_check = helper
    elif gets_enabled:
        current = cfg.cluster.drbd_usermode_helper
        if current is None:
            raise OpPrereqError("Cannot enable DRBD without a DRBD usermode helper set.",
                                ECODE_STATE)
        ch.drbd_check = current
    if helper is None:
        return
    if not drbd_enabled:
        ch.feedback.append("Note that you specified a drbd user helper, but did not enable "
                           "the drbd disk template.")
    new = helper or None
    if new != cfg.cluster.drbd_usermode_helper:
        ch.cluster.drbd_usermode_helper = new
    else:
        ch.feedback.append("Cluster DRBD helper already in desired state, not changing")


def compute_cluster_change(cfg: ConfigData, op: dict[str, Any]) -> ClusterChange:
    """The cluster after ``op`` (a validated OP_CLUSTER_SET_PARAMS), or an error."""
    op = copy.deepcopy(op)
    _check_arguments(op)
    ch = ClusterChange(copy.deepcopy(cfg.cluster))
    cl = ch.cluster
    enabled = _disk_templates(cfg, ch, op)
    _vg_name(cfg, ch, op, enabled)
    _drbd_helper(cfg, ch, op, enabled)
    _storage_dirs(ch, op, enabled)
    if op.get("diskparams") and constants.DT_DRBD8 in op["diskparams"]:
        ch.warn("Changing DRBD parameters only affects devices created in the future, not "
                "existing ones")
        ch.warn("You need to shutdown and start (not reboot!) existing instances to adopt "
                "the changes")
        ch.warn("Alternatively you can swap the secondary node by running `gnt-instance "
                "replace-disks --new-secondary $instance`")
    new_be = new_nd = new_nic = new_ipolicy = None
    if op.get("beparams"):
        be = op["beparams"]
        if BE_MEMORY in be:
            be[constants.BE_MAXMEM] = be[constants.BE_MINMEM] = be.pop(BE_MEMORY)
        force_dict_type(be, BES_PARAMETER_TYPES)
        new_be = fill_dict(cl.beparams.get(DEFAULT, {}), be)
    if op.get("ndparams"):
        force_dict_type(op["ndparams"], NDS_PARAMETER_TYPES)
        new_nd = fill_dict(cl.ndparams, op["ndparams"])
        if new_nd.get(constants.ND_OOB_PROGRAM) == "":
            new_nd[constants.ND_OOB_PROGRAM] = constants.NDC_DEFAULTS[constants.ND_OOB_PROGRAM]
    if op.get("ipolicy"):
        new_ipolicy = get_updated_ipolicy(cl.ipolicy, op["ipolicy"], group_policy=False)
        check_ipolicy_vs_disk_templates(new_ipolicy, enabled)
    else:
        check_ipolicy_vs_disk_templates(cl.ipolicy, enabled)
    if op.get("nicparams"):
        force_dict_type(op["nicparams"], NICS_PARAMETER_TYPES)
        new_nic = fill_dict(cl.nicparams.get(DEFAULT, {}), op["nicparams"])
        mode = new_nic.get(constants.NIC_MODE)
        if mode not in constants.NIC_VALID_MODES and mode != "auto":
            raise ConfigurationError(f"Invalid NIC mode '{mode}'")
        if mode == constants.NIC_MODE_BRIDGED and not new_nic.get(constants.NIC_LINK):
            raise ConfigurationError("Missing bridged NIC link")
    new_hv = _hv_params(ch, op)
    if op.get("compression_tools"):
        check_compression_tools(op["compression_tools"])
    if op.get("master_netmask") is not None:  # Ganeti's _ValidateNetmask
        bits = 128 if cfg.cluster.primary_ip_family == socket.AF_INET6 else 32
        if not 0 < op["master_netmask"] <= bits:
            raise OpPrereqError(f"CIDR netmask ({op['master_netmask']}) not valid",
                                ECODE_INVAL)

    # Exec: the changes, in Ganeti's order.
    if op.get("enabled_disk_templates"):
        cl.enabled_disk_templates = list(op["enabled_disk_templates"])
    if op.get("vg_name") is not None:
        if (op["vg_name"] or None) != cl.volume_group_name:
            cl.volume_group_name = op["vg_name"] or None
        else:
            ch.feedback.append("Cluster LVM configuration already in desired state, "
                               "not changing")
    for param in ("file_storage_dir", "shared_file_storage_dir"):
        value = op.get(param)
        if value is not None:
            if getattr(cl, param) == value:
                what = "Global file" if param == "file_storage_dir" else "Global shared file"
                ch.feedback.append(f"{what} storage dir already set to value '{value}'")
            else:
                setattr(cl, param, value)
    _data_collectors(cl, op)
    if op.get("hvparams") or op.get("enabled_hypervisors") is not None:
        cl.hvparams = new_hv
    if op.get("enabled_hypervisors") is not None:
        if not op["enabled_hypervisors"]:
            raise OpPrereqError("At least one hypervisor must be enabled", ECODE_INVAL)
        cl.enabled_hypervisors = list(op["enabled_hypervisors"])
    if new_be is not None:
        cl.beparams[DEFAULT] = new_be
    if new_nic is not None:
        cl.nicparams[DEFAULT] = new_nic
    if new_ipolicy is not None:
        cl.ipolicy = new_ipolicy
    if new_nd is not None:
        cl.ndparams = new_nd
    if op.get("diskparams"):
        new_disk = copy.deepcopy(cl.diskparams)
        for template, values in op["diskparams"].items():
            new_disk.setdefault(template, {}).update(values)
        cl.diskparams = new_disk
    for name in ("candidate_pool_size", "max_running_jobs", "max_tracked_jobs",
                 "maintain_node_health", "modify_etc_hosts", "prealloc_wipe_disks"):
        if op.get(name) is not None:
            setattr(cl, name, op[name])
    _uid_pool(cl, op)
    for name in ("default_iallocator", "default_iallocator_params", "reserved_lvs",
                 "use_external_mip_script", "enabled_user_shutdown"):
        if op.get(name) is not None:
            setattr(cl, name, copy.deepcopy(op[name]))
    if op.get("hidden_os"):
        _os_list(ch, "hidden_os", op["hidden_os"], "hidden")
    if op.get("blacklisted_os"):
        _os_list(ch, "blacklisted_os", op["blacklisted_os"], "blacklisted")
    if op.get("os_hvp"):
        _os_hvp(ch, op)
    _os_params(ch, op)
    if op.get("mac_prefix"):
        cl.mac_prefix = op["mac_prefix"]
    if op.get("install_image"):
        cl.install_image = op["install_image"]
    if op.get("zeroing_image") is not None:
        _check_image(op["zeroing_image"], "Zeroing image must be an absolute path or a URL")
        cl.zeroing_image = op["zeroing_image"]
    if op.get("compression_tools") is not None:
        cl.compression_tools = list(op["compression_tools"])
    if op.get("master_netmask"):  # the LU moves the address on the master first
        cl.master_netmask = op["master_netmask"]
    if op.get("uid_pool") is not None or any(op.get(k) for k in (
            "hvparams", "os_hvp", "remove_uids", "enabled_hypervisors")):
        _check_uid_pool_users(ch)
    return ch
