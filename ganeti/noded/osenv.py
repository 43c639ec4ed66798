"""The environment of an OS script (Ganeti's ``OSCoreEnv`` and ``OSEnvironment``).

A script gets this environment and nothing else (the daemon's own is not
passed on).  Every value is a string; counts and indexes start at 0.

- Always: ``OS_API_VERSION`` (the highest version both sides speak),
  ``OS_NAME``, ``OS_VARIANT`` (API 15 and later: the given variant or the
  definition's first; '' otherwise), ``DEBUG_LEVEL``, ``PATH`` and
  ``OSP_<NAME>`` for each OS parameter (upper case, ``-`` as ``_``).
- For an instance: ``INSTANCE_NAME``, ``INSTANCE_OS``, ``INSTANCE_UUID``,
  ``INSTANCE_CTIME``, ``INSTANCE_MTIME``, ``INSTANCE_PRIMARY_NODE``,
  ``INSTANCE_SECONDARY_NODES``, ``HYPERVISOR``, ``DISK_COUNT``, per disk
  ``DISK_<n>_ACCESS``, ``_UUID``, ``_SIZE``, ``_PATH``, ``_NAME``,
  ``_FRONTEND_TYPE``, ``_BACKEND_TYPE``, ``NIC_COUNT``, per NIC
  ``NIC_<n>_MAC``, ``_UUID``, ``_NAME``, ``_IP``, ``_MODE``, ``_BRIDGE``,
  ``_LINK``, ``_FRONTEND_TYPE`` and ``_NETWORK_*`` of its network, and
  ``INSTANCE_BE_<key>`` / ``INSTANCE_HV_<key>`` with the parameter's own
  (lower-case) name.

Pure functions: the disk paths come from a function given by the caller
(:func:`ganeti.noded.bdev.paths.device_path` on the node).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ganeti.core import constants
from ganeti.core.hooks import HOOKS_PATH
from ganeti.noded.osdir import API_V15, OsDefinition, split_name

DiskPath = Callable[[Mapping[str, Any]], str]

#: Disk types whose disks are block devices, and those that are files (Ganeti's
#: DTS_BLOCK and DTS_FILEBASED).
BLOCK_TYPES = frozenset({"blockdev", "drbd", "ext", "plain", "rbd"})
FILE_TYPES = frozenset({"file", "gluster", "sharedfile"})
#: The hypervisor parameters naming the disk and NIC models (Ganeti's HV_DISK_TYPE,
#: HV_NIC_TYPE).
HV_DISK_TYPE = "disk_type"
HV_NIC_TYPE = "nic_type"


def _text(value: Any) -> str:
    """A value as Ganeti's ``str()`` shows it in Python 3 (True, None, 1.5, [..])."""
    return str(value)


def core_env(os_name: str, osdef: OsDefinition, os_params: Mapping[str, Any],
             debug: int = 0) -> dict[str, str]:
    """What every script of ``osdef`` gets (Ganeti's ``OSCoreEnv``)."""
    api = osdef.api_version
    env = {"OS_API_VERSION": str(api), "OS_NAME": osdef.name, "DEBUG_LEVEL": str(debug)}
    variant = ""
    if api >= API_V15 and osdef.variants:
        variant = split_name(os_name)[1] or osdef.variants[0]
    env["OS_VARIANT"] = variant
    for name, value in os_params.items():
        env["OSP_" + name.upper().replace("-", "_")] = _text(value)
    env["PATH"] = HOOKS_PATH
    return env


def instance_params(instance: Mapping[str, Any]) -> dict[str, Any]:
    """The instance's OS parameters: the filled public ones, then the private ones
    (the secret ones travel in ``osparams``)."""
    params = dict(instance.get("osparams") or {})
    params.update(instance.get("osparams_private") or {})
    return params


def hidden_values(instance: Mapping[str, Any]) -> list[str]:
    """Values that must never reach a log: the instance's private OS parameters and
    the secret ones (named in ``osparams_secret``)."""
    params = instance_params(instance)
    names = set(instance.get("osparams_private") or {})
    names.update(n for n in instance.get("osparams_secret") or [] if isinstance(n, str))
    return [str(params[n]) for n in sorted(names) if n in params and str(params[n])]


def _disk_env(idx: int, disk: Mapping[str, Any], hvparams: Mapping[str, Any],
              disk_path: DiskPath) -> dict[str, str]:
    pre = f"DISK_{idx}_"
    env = {pre + "ACCESS": _text(disk.get("mode", constants.DISK_RDWR)),
           pre + "UUID": _text(disk.get("uuid", "")),
           pre + "SIZE": _text(disk.get("size", 0))}
    dev_type = disk.get("dev_type")
    if dev_type != constants.DT_DISKLESS:
        try:
            env[pre + "PATH"] = disk_path(disk)
        except ValueError:
            pass  # a disk with no path on the node (rbd, gluster): Ganeti gives a URI
    if disk.get("name"):
        env[pre + "NAME"] = _text(disk["name"])
    if HV_DISK_TYPE in hvparams:
        env[pre + "FRONTEND_TYPE"] = _text(hvparams[HV_DISK_TYPE])
    if dev_type in BLOCK_TYPES:
        env[pre + "BACKEND_TYPE"] = "block"
    elif dev_type in FILE_TYPES:
        lid = disk.get("logical_id") or [""]
        env[pre + "BACKEND_TYPE"] = f"file:{lid[0]}"
    return env


def _network_env(prefix: str, net: Mapping[str, Any]) -> dict[str, str]:
    """A network's variables (Ganeti's ``Network.HooksDict``)."""
    env = {prefix + "NETWORK_NAME": _text(net.get("name", "")),
           prefix + "NETWORK_UUID": _text(net.get("uuid", "")),
           prefix + "NETWORK_TAGS": " ".join(sorted(net.get("tags") or []))}
    for key, var in (("network", "SUBNET"), ("gateway", "GATEWAY"),
                     ("network6", "SUBNET6"), ("gateway6", "GATEWAY6"),
                     ("mac_prefix", "MAC_PREFIX")):
        if net.get(key):
            env[f"{prefix}NETWORK_{var}"] = _text(net[key])
    return env


def _nic_env(idx: int, nic: Mapping[str, Any], hvparams: Mapping[str, Any]) -> dict[str, str]:
    pre = f"NIC_{idx}_"
    params = nic.get("nicparams") or {}
    mode = params.get(constants.NIC_MODE, "")
    link = params.get(constants.NIC_LINK, "")
    env = {pre + "MAC": _text(nic.get("mac", "")), pre + "UUID": _text(nic.get("uuid", "")),
           pre + "MODE": _text(mode)}
    if nic.get("name"):
        env[pre + "NAME"] = _text(nic["name"])
    if nic.get("ip"):
        env[pre + "IP"] = _text(nic["ip"])
    if mode == constants.NIC_MODE_BRIDGED:
        env[pre + "BRIDGE"] = _text(link)
    if link:
        env[pre + "LINK"] = _text(link)
    if nic.get("netinfo"):
        env.update(_network_env(pre, nic["netinfo"]))
    if HV_NIC_TYPE in hvparams:
        env[pre + "FRONTEND_TYPE"] = _text(hvparams[HV_NIC_TYPE])
    return env


def instance_env(instance: Mapping[str, Any], osdef: OsDefinition, disk_path: DiskPath,
                 debug: int = 0) -> dict[str, str]:
    """What a script gets for ``instance`` (an instance dict from the master, Ganeti's
    ``OSEnvironment``)."""
    env = core_env(instance.get("os") or "", osdef, instance_params(instance), debug)
    for attr in ("name", "os", "uuid", "ctime", "mtime", "primary_node"):
        env["INSTANCE_" + attr.upper()] = _text(instance.get(attr))
    hvparams = instance.get("hvparams") or {}
    disks = instance.get("disks_info") or []
    nics = instance.get("nics") or []
    env["HYPERVISOR"] = _text(instance.get("hypervisor"))
    env["DISK_COUNT"] = str(len(disks))
    env["NIC_COUNT"] = str(len(nics))
    env["INSTANCE_SECONDARY_NODES"] = " ".join(instance.get("secondary_nodes") or [])
    for idx, disk in enumerate(disks):
        env.update(_disk_env(idx, disk, hvparams, disk_path))
    for idx, nic in enumerate(nics):
        env.update(_nic_env(idx, nic, hvparams))
    for kind, source in (("BE", instance.get("beparams") or {}), ("HV", hvparams)):
        for key, value in source.items():
            env[f"INSTANCE_{kind}_{key}"] = _text(value)
    return env
