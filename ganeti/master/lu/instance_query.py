"""OP_INSTANCE_QUERY_DATA: configuration and run-time state of instances
(what ``gnt-instance info`` prints), with Ganeti's answer keys."""

from __future__ import annotations

from typing import Any

from ganeti.core import params_fill
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.opcodes.views import OpInstanceQueryData
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_INSTANCE
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_drbd, instance_storage
from ganeti.master.lu.base import LogicalUnit


def nic_tuple(cfg: ConfigData, nic: Any) -> list[Any]:
    """Ganeti's NICToTuple: name, uuid, ip, mac, mode, link, vlan, network, netinfo."""
    filled = params_fill.fill_nic(cfg.cluster, nic.nicparams)
    net = cfg.networks.get(nic.network) if nic.network else None
    return [nic.name, nic.uuid, nic.ip, nic.mac, filled.get("mode"), filled.get("link"),
            filled.get("vlan", ""), nic.network, net.to_dict() if net is not None else None]


def instance_data(cfg: ConfigData, inst: Instance, run_state: str | None,
                  disks: list[dict[str, Any]]) -> dict[str, Any]:
    """One instance's entry of the answer (``disks``: its disks' entries)."""
    cluster = cfg.cluster
    pnode = cfg.nodes.get(inst.primary_node)
    snodes = nodesmod.secondary_nodes(cfg, inst)
    sgroups = [cfg.nodes[u].group for u in snodes if u in cfg.nodes]

    def group_name(uuid: str | None) -> str | None:
        group = cfg.nodegroups.get(uuid or "")
        return group.name if group is not None else None
    return {
        "name": inst.name, "config_state": inst.admin_state, "run_state": run_state,
        "pnode": pnode.name if pnode else inst.primary_node,
        "pnode_group_uuid": pnode.group if pnode else None,
        "pnode_group_name": group_name(pnode.group if pnode else None),
        "snodes": [ic.node_name(cfg, u) for u in snodes],
        "snodes_group_uuids": sgroups,
        "snodes_group_names": [group_name(u) for u in sgroups],
        "os": inst.os, "network_port": inst.network_port,
        "nics": [nic_tuple(cfg, nic) for nic in inst.nics],
        "disk_template": inst.disk_template,
        "disks": disks,
        "hypervisor": inst.hypervisor,
        "hv_instance": dict(inst.hvparams),
        "hv_actual": params_fill.fill_instance_hv(cluster, inst),
        "be_instance": dict(inst.beparams),
        "be_actual": params_fill.fill_instance_be(cluster, inst),
        "os_instance": dict(inst.osparams),
        "os_actual": params_fill.fill_instance_os(cluster, inst),
        "serial_no": inst.serial_no, "mtime": inst.mtime, "ctime": inst.ctime,
        "uuid": inst.uuid,
    }


class LUInstanceQueryData(LogicalUnit):
    """OP_INSTANCE_QUERY_DATA: name -> data; run_state from the primary nodes
    ("up", "down", "offline" for an offline node; null with ``static``)."""

    OP_ID = "OP_INSTANCE_QUERY_DATA"
    op: OpInstanceQueryData
    REQ_BGL = False

    @property
    def uses_locks(self) -> bool:
        return bool(self.op.use_locking)

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        if self.op.instances:
            self.wanted = [ic.find_instance(cfg, n).name for n in self.op.instances]
        else:
            self.wanted = sorted(i.name for i in cfg.instances.values())
        if self.op.use_locking:
            self.needed_locks[LEVEL_INSTANCE] = list(self.wanted)
            self.share_locks[LEVEL_INSTANCE] = True

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        instances = [i for i in (cfg.instance_by_name(n) for n in self.wanted) if i is not None]
        running: dict[str, set[str]] = {}
        if not self.op.static:
            by_node: dict[str, list[Instance]] = {}
            for inst in instances:
                by_node.setdefault(inst.primary_node, []).append(inst)
            targets = [nodesmod.target(cfg.nodes[u]) for u in by_node
                       if u in cfg.nodes and not cfg.nodes[u].offline]
            if targets:
                hvs = sorted({i.hypervisor for i in instances})
                results = await self.ctx.rpc().call(
                    targets, "instance_list",
                    [hvs, {hv: params_fill.fill_hv(cfg.cluster, hv, None, {}) for hv in hvs}])
                for node_name, result in results.items():
                    result.raise_if_failed(f"Error checking node {node_name}")
                    running[node_name] = set(result.payload or [])
        out: dict[str, Any] = {}
        for inst in instances:
            state: str | None = None
            if not self.op.static:
                node = cfg.nodes.get(inst.primary_node)
                if node is None or node.offline:
                    pname = ic.node_name(cfg, inst.primary_node)
                    self.ctx.feedback("message", f"Primary node {pname} is marked offline, "
                                                 "returning static information only for "
                                                 f"instance {inst.name}")
                    state = None
                else:
                    state = "up" if inst.name in running.get(node.name, set()) else "down"
            disks = [await instance_drbd.disk_status_tree(self, cfg, inst, d, self.op.static)
                     for d in instance_storage.instance_disks(cfg, inst)]
            out[inst.name] = instance_data(cfg, inst, state, disks)
        return out


LUS: tuple[type[LogicalUnit], ...] = (LUInstanceQueryData,)
