"""Disks as a node is told about them: logical-disk parameters and dynamic parameters.

A disk template's parameters (``diskparams`` of the cluster and group, keys like
``data-stripes`` or ``metavg``) are not what the node's block device code reads:
each device of a disk's tree gets its *logical-disk* parameters (keys like
``stripes`` or ``default-metavg``), computed from the template's filled
parameters (Ganeti's ``ComputeLDParams``) and filled under what the disk sets
itself (``AnnotateDiskParams``).  DRBD devices also get their *dynamic*
parameters, the addresses and minors seen from the node the disk is sent to.

:func:`disk_wire_dicts` does all of that for the master-side RPC encoders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ganeti.core import constants, params_fill
from ganeti.core.objects import ConfigData, Disk, Instance

#: Logical-disk parameter defaults per template (Ganeti's ``DISK_LD_DEFAULTS``).
DISK_LD_DEFAULTS: dict[str, dict[str, Any]] = {
    constants.DT_PLAIN: {"stripes": 1},
    constants.DT_DRBD8: {
        "resync-rate": 61440, "disabled-barriers": "n", "disable-meta-flush": False,
        "default-metavg": constants.DEFAULT_VG, "disk-custom": "", "net-custom": "",
        "protocol": "C", "dynamic-resync": False, "c-plan-ahead": 20, "c-fill-target": 0,
        "c-delay-target": 1, "c-max-rate": 61440, "c-min-rate": 4096},
    constants.DT_FILE: {},
    constants.DT_SHARED_FILE: {},
    constants.DT_BLOCK: {},
    constants.DT_RBD: {"pool": "rbd", "access": constants.DISK_KERNELSPACE},
    constants.DT_EXT: {"access": constants.DISK_KERNELSPACE},
    constants.DT_GLUSTER: {"access": constants.DISK_KERNELSPACE, "host": "127.0.0.1",
                           "port": 24007, "volume": "gv0"},
}

# DRBD's logical-disk keys and the template keys they come from.
_DRBD_LD_FROM_DT = {
    "resync-rate": "resync-rate", "disabled-barriers": "disk-barriers",
    "disable-meta-flush": "meta-barriers", "default-metavg": "metavg",
    "disk-custom": "disk-custom", "net-custom": "net-custom", "protocol": "protocol",
    "dynamic-resync": "dynamic-resync", "c-plan-ahead": "c-plan-ahead",
    "c-fill-target": "c-fill-target", "c-delay-target": "c-delay-target",
    "c-max-rate": "c-max-rate", "c-min-rate": "c-min-rate",
}


def compute_ld_params(template: str, dt_params: Mapping[str, Mapping[str, Any]]
                      ) -> list[dict[str, Any]]:
    """The logical-disk parameters of a disk of ``template``, one dict per device of
    its tree in order (DRBD: the DRBD device, its data LV, its metadata LV)."""
    if template not in DISK_LD_DEFAULTS:
        raise ValueError(f"unknown disk template {template!r}")
    params = dt_params.get(template, {})
    if template == constants.DT_DRBD8:
        drbd = dict(DISK_LD_DEFAULTS[template])
        drbd.update({ld: params[dt] for ld, dt in _DRBD_LD_FROM_DT.items() if dt in params})
        plain = DISK_LD_DEFAULTS[constants.DT_PLAIN]
        data = {**plain, "stripes": params.get("data-stripes", plain["stripes"])}
        meta = {**plain, "stripes": params.get("meta-stripes", plain["stripes"])}
        return [drbd, data, meta]
    defaults = DISK_LD_DEFAULTS[template]
    return [{key: params.get(key, value) for key, value in defaults.items()}]


def instance_disk_params(cfg: ConfigData, instance: Instance) -> dict[str, dict[str, Any]]:
    """Every template's filled disk parameters for ``instance``: cluster → the group
    of its primary node (Ganeti's ``GetInstanceDiskParams``)."""
    node = cfg.nodes.get(instance.primary_node)
    group = cfg.nodegroups.get(node.group) if node is not None and node.group else None
    return params_fill.fill_disk_params(cfg.cluster, group)


def instance_disks(cfg: ConfigData, instance: Instance) -> list[Disk]:
    """The instance's disk objects from the top-level ``disks``, in its order."""
    missing = [uuid for uuid in instance.disks if uuid not in cfg.disks]
    if missing:
        raise ValueError(f"instance {instance.name} refers to unknown disk(s) "
                         f"{', '.join(missing)}")
    return [cfg.disks[uuid] for uuid in instance.disks]


def _annotated(disk_dict: dict[str, Any], ld_params: list[dict[str, Any]]) -> None:
    disk_dict["params"] = {**ld_params[0], **(disk_dict.get("params") or {})}
    if disk_dict.get("dev_type") == constants.DT_DRBD8:
        children = disk_dict.get("children") or []
        for child, params in zip(children, ld_params[1:], strict=False):
            child["params"] = {**params, **(child.get("params") or {})}


#: The mirror engine of an instance's drbd disks by hypervisor (the contract between the
#: master and the nodes: the ``mirror`` dynamic parameter); the others get
#: :data:`DEFAULT_MIRROR`.  A kvm guest's data is mirrored by qemu-storage-daemons
#: (ganeti/noded/bdev/qmirror*.py); the fake hypervisor's has no data to mirror.
MIRROR_ENGINES: dict[str, str] = {"kvm": "qemu"}
DEFAULT_MIRROR = "emulated"


def mirror_engine(instance: Instance) -> str:
    """The mirror engine of ``instance``'s drbd disks."""
    return MIRROR_ENGINES.get(instance.hypervisor, DEFAULT_MIRROR)


def _dynamic(disk_dict: dict[str, Any], target_uuid: str | None,
             ips: Mapping[str, str | None], mirror: str = DEFAULT_MIRROR) -> None:
    for child in disk_dict.get("children") or []:
        _dynamic(child, target_uuid, ips, mirror)
    dyn: dict[str, Any] = {}
    lid = disk_dict.get("logical_id")
    if (disk_dict.get("dev_type") == constants.DT_DRBD8 and isinstance(lid, list)
            and len(lid) == 6 and target_uuid in (lid[0], lid[1])):
        pnode, snode, _port, pminor, sminor, _secret = lid
        pip, sip = ips.get(pnode), ips.get(snode)
        if pip is None or sip is None:
            raise ValueError(f"cannot find the primary or secondary node of disk "
                             f"{disk_dict.get('uuid') or disk_dict.get('iv_name')}")
        if target_uuid == pnode:
            dyn = {"local-ip": pip, "remote-ip": sip, "local-minor": pminor,
                   "remote-minor": sminor, "mirror": mirror}
        else:
            dyn = {"local-ip": sip, "remote-ip": pip, "local-minor": sminor,
                   "remote-minor": pminor, "mirror": mirror}
    disk_dict["dynamic_params"] = dyn


def disk_wire_dicts(cfg: ConfigData, instance: Instance, disks: Sequence[Disk],
                    node: str | None = None) -> list[dict[str, Any]]:
    """``disks`` (of ``instance``) as dicts for the node ``node`` (a name or UUID; None
    when the body is the same for every node): logical-disk parameters filled under
    each device's own, dynamic parameters set (Ganeti's ``_DisksDictDP``)."""
    dt_params = instance_disk_params(cfg, instance)
    target = node
    if node is not None and node not in cfg.nodes:
        target = cfg.name_index("nodes").get(node, node)
    ips = {uuid: (n.secondary_ip or n.primary_ip) for uuid, n in cfg.nodes.items()}
    out: list[dict[str, Any]] = []
    for disk in disks:
        d = disk.to_dict()
        if disk.dev_type != constants.DT_DISKLESS and disk.dev_type in DISK_LD_DEFAULTS:
            _annotated(d, compute_ld_params(disk.dev_type, dt_params))
        _dynamic(d, target, ips, mirror_engine(instance))
        out.append(d)
    return out
