"""Instances written straight into a config, for tests of what reads them (queries,
RAPI, confd, the real clients) before the logical units that create them exist."""

from __future__ import annotations

import uuid as uuidmod
from typing import Any

from ganeti.core import constants as c
from ganeti.core.objects import NIC, ConfigData, Disk, Instance


def _uuid(name: str, what: str) -> str:
    return str(uuidmod.uuid5(uuidmod.NAMESPACE_DNS, f"{what}.{name}"))


def add_instance(cfg: ConfigData, name: str, pnode: str | None = None,
                 template: str = c.DT_DISKLESS, disks: tuple[int, ...] = (),
                 snode: str | None = None, nics: int = 1, admin_state: str = c.ADMINST_UP,
                 ips: tuple[str | None, ...] = (), nicparams: dict[str, Any] | None = None,
                 mac_base: int | None = None, **attrs: Any) -> Instance:
    """Add an instance named ``name`` on node ``pnode`` (a name; default the master) with
    ``disks`` (sizes in MiB) of ``template`` and ``nics`` NICs; the instance.

    Values are fixed by the name (UUIDs, MACs), so two configs built alike are equal.
    ``attrs`` set other Instance attributes (beparams, os, tags, ...).
    """
    node = cfg.node_by_name(pnode) if pnode else cfg.master
    assert node is not None, pnode
    second = cfg.node_by_name(snode) if snode else None
    base = mac_base if mac_base is not None else int(_uuid(name, "mac")[:6], 16)
    disk_ids = []
    for idx, size in enumerate(disks):
        du = _uuid(name, f"disk{idx}")
        nodes = [node.uuid] + ([second.uuid] if second is not None else [])
        if template == c.DT_PLAIN:
            lid: list[Any] = [cfg.cluster.volume_group_name or "xenvg", f"{du}.disk{idx}"]
        elif template in (c.DT_FILE, c.DT_SHARED_FILE):
            root = (cfg.cluster.file_storage_dir if template == c.DT_FILE
                    else cfg.cluster.shared_file_storage_dir)
            lid = ["loop", f"{root}/{name}/disk{idx}"]
        elif template == c.DT_DRBD8:
            assert second is not None, "drbd needs snode"
            port = cfg.cluster.highest_used_port = max(cfg.cluster.highest_used_port,
                                                       11000) + 1
            lid = [node.uuid, second.uuid, port, idx, idx, "s" * 32]
        else:
            lid = ["manual", f"/dev/{name}-{idx}"]
        cfg.disks[du] = Disk(uuid=du, dev_type=template, logical_id=lid, size=size,
                             iv_name=f"disk/{idx}", nodes=nodes, serial_no=1, ctime=1.0,
                             mtime=1.0)
        disk_ids.append(du)
    nic_list = []
    for idx in range(nics):
        mac = base * 256 + idx
        nic_list.append(NIC(uuid=_uuid(name, f"nic{idx}"),
                            mac="aa:00:" + ":".join(f"{(mac >> s) & 255:02x}"
                                                    for s in (24, 16, 8, 0)),
                            ip=ips[idx] if idx < len(ips) else None,
                            nicparams=dict(nicparams or {})))
    values: dict[str, Any] = dict(
        uuid=_uuid(name, "instance"), name=name, primary_node=node.uuid,
        hypervisor=c.HT_FAKE, os="busybox", admin_state=admin_state,
        admin_state_source=c.ADMIN_SOURCE, disks=disk_ids, nics=nic_list,
        disks_active=admin_state == c.ADMINST_UP and bool(disk_ids),
        serial_no=1, ctime=1700000000.0, mtime=1700000000.0)
    values.update(attrs)
    inst = Instance(**values)
    cfg.instances[inst.uuid] = inst
    if template not in cfg.cluster.enabled_disk_templates:
        cfg.cluster.enabled_disk_templates.append(template)
    return inst
