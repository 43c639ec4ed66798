"""OP_CLUSTER_ACTIVATE_MASTER_IP, OP_CLUSTER_DEACTIVATE_MASTER_IP (Ganeti's
LUClusterActivateMasterIp / LUClusterDeactivateMasterIp).

The master's node daemon brings the cluster's master IP up or down
(``node_activate_master_ip`` / ``node_deactivate_master_ip`` with the cluster's
MasterNetworkParameters and ``use_external_mip_script``); a failure of the
call fails the job.  Both take the Big Ganeti Lock exclusively, as Ganeti's.
"""

from __future__ import annotations

from typing import Any

from ganeti.core.objects import ConfigData
from ganeti.master.lu.base import LogicalUnit


def master_params(cfg: ConfigData) -> dict[str, Any]:
    """Ganeti's MasterNetworkParameters of the cluster, as they travel."""
    cl = cfg.cluster
    return {"uuid": cl.master_node, "ip": cl.master_ip, "netmask": cl.master_netmask,
            "netdev": cl.master_netdev, "ip_family": cl.primary_ip_family}


async def call_master_ip(lu: LogicalUnit, call: str, what: str) -> None:
    """Run ``call`` on the master node; OpExecError ``Could not <what> the master IP``."""
    cfg = lu.ctx.config.config
    master = cfg.nodes[cfg.cluster.master_node]
    result = await lu.ctx.rpc().call_one(
        master, call, [master_params(cfg), bool(cfg.cluster.use_external_mip_script)])
    result.raise_if_failed(f"Could not {what} the master IP")


class LUClusterActivateMasterIp(LogicalUnit):
    """OP_CLUSTER_ACTIVATE_MASTER_IP: bring the master IP up on the master node."""

    OP_ID = "OP_CLUSTER_ACTIVATE_MASTER_IP"
    REQ_BGL = True

    async def exec(self) -> Any:
        await call_master_ip(self, "node_activate_master_ip", "activate")
        return None


class LUClusterDeactivateMasterIp(LogicalUnit):
    """OP_CLUSTER_DEACTIVATE_MASTER_IP: take the master IP down on the master node."""

    OP_ID = "OP_CLUSTER_DEACTIVATE_MASTER_IP"
    REQ_BGL = True

    async def exec(self) -> Any:
        await call_master_ip(self, "node_deactivate_master_ip", "deactivate")
        return None


LUS: tuple[type[LogicalUnit], ...] = (LUClusterActivateMasterIp, LUClusterDeactivateMasterIp)
