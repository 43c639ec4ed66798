"""Cluster logical units: query and change cluster parameters."""

from __future__ import annotations

import copy
from typing import Any

from ganeti.core import hooks as hookdefs
from ganeti.core import uidpool
from ganeti.core.errors import ECODE_ENVIRON, OpPrereqError
from ganeti.core.objects import ConfigData
from ganeti.core.opcodes.views import OpClusterSetParams
from ganeti.core.params_cluster import (
    IALLOCATOR_SEARCH_PATH,
    check_vg_size,
    compute_cluster_change,
    find_iallocator,
    os_hvp_echo,
)
from ganeti.master.config import nodes as nodesmod
from ganeti.master.config.nodes import fill_candidate_pool
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.instance_common import validate_hvparams_on_nodes
from ganeti.master.lu.masterip import master_params
from ganeti.master.lu.node import welcome_candidates
from ganeti.master.lu.os_lu import check_os_params
from ganeti.master.query.queries import cluster_info


class LUClusterQuery(LogicalUnit):
    """OP_CLUSTER_QUERY: the cluster's parameters (the QueryClusterInfo dict)."""

    OP_ID = "OP_CLUSTER_QUERY"
    REQ_BGL = False

    async def exec(self) -> Any:
        return cluster_info(self.ctx.config.config)


class LUClusterSetParams(LogicalUnit):
    """OP_CLUSTER_SET_PARAMS, merged and checked as Ganeti's LUClusterSetParams.

    Everything is computed in :meth:`check_prereq`, on a copy
    (:func:`ganeti.core.params_cluster.compute_cluster_change`); :meth:`exec`
    commits the new cluster in one config change, so a bad parameter changes
    nothing.  The node checks (OS and hypervisor parameters, the volume group)
    run in :meth:`exec` before that change, and a new ``master_netmask`` is applied
    to the master IP by the master's node daemon; with ``master_netdev`` (even the
    current one, as Ganeti) the master IP is taken down before the change and
    brought up on the new device after it.  Parameters that need what this
    version does not have yet (hv_state, disk_state, the instance communication
    network) stay reserved in the opcode table.
    """

    OP_ID = "OP_CLUSTER_SET_PARAMS"
    REQ_BGL = True
    op: OpClusterSetParams
    HPATH = "cluster-modify"
    HTYPE = hookdefs.HTYPE_CLUSTER

    def build_hooks_env(self) -> dict[str, Any]:
        return {"OP_TARGET": self.ctx.config.config.cluster.cluster_name,
                "NEW_VG_NAME": self.op.vg_name}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: the master, in both phases."""
        master = self.ctx.config.config.cluster.master_node
        return [master], [master]

    def check_arguments(self) -> None:
        # Ganeti's: the uid ranges' bounds are checked here (the opcode only says
        # "a list of integer pairs"), so a bad range fails the job, wrong_input.
        for ranges in (self.op.uid_pool, self.op.add_uids, self.op.remove_uids):
            if ranges:
                uidpool.check(ranges)

    def check_prereq(self) -> None:
        # Like Ganeti's, an opcode that changes nothing succeeds (the client
        # asks for at least one option).
        if self.op.os_hvp:  # (typed before the checks, so also when they fail)
            self.record_op(os_hvp=os_hvp_echo(self.ctx.config.config.cluster.os_hvp,
                                              self.op_input["os_hvp"]))
        self.change = compute_cluster_change(self.ctx.config.config, dict(self.op_input))

    async def exec(self) -> Any:
        if self.op.default_iallocator:
            # Ganeti checks this with the prerequisites; it stats files, so off the reactor
            runner = self.ctx.allocators
            await self.ctx.run_blocking(find_iallocator, self.op.default_iallocator,
                                        IALLOCATOR_SEARCH_PATH,
                                        runner.exists if runner is not None else None)
        master = self.ctx.config.config.cluster.master_node
        for os_name, params in self.change.os_checks.items():
            # Ganeti's: on the master node, the OS need not exist there
            await check_os_params(self.ctx, False, [master], os_name, params, False)
        every_node = sorted(self.ctx.config.config.nodes)
        for hv_name, hv_params in self.change.hv_checks:
            # Ganeti's CheckHVParams: every vm_capable online node
            await validate_hvparams_on_nodes(self, every_node, hv_name, hv_params,
                                             prereq=False)
        if self.change.vg_check is not None:
            await self._check_vg_on_nodes(self.change.vg_check)
        if self.change.drbd_check is not None:
            await self._check_drbd_helper_on_nodes(self.change.drbd_check)
        if self.op.dry_run:
            return None
        new = self.change.cluster

        def change(cfg: ConfigData) -> list[str]:
            new.serial_no = cfg.cluster.serial_no + 1
            new.mtime = self.ctx.clock.seconds()
            cfg.cluster = copy.deepcopy(new)
            # Ganeti's: the pool is refilled only when its size is given (a node an
            # administrator demoted is not promoted back by another change)
            if self.op.candidate_pool_size is None:
                return []
            return fill_candidate_pool(cfg, new.mtime)

        if self.op.master_netdev:
            await self._master_ip_down(new)
        if self.op.master_netmask:
            await self._change_master_netmask(self.op.master_netmask)
        for line in self.change.feedback:
            self.ctx.feedback("message", line)
        promoted = await self.update_config(change)
        await welcome_candidates(self.ctx, promoted)
        if self.op.master_netdev:
            await self._master_ip_up(self.op.master_netdev)
        return None

    async def _master_ip_call(self, call: str) -> Any:
        """The master's node daemon's answer to ``node_(de)activate_master_ip``."""
        cfg = self.ctx.config.config
        master = cfg.nodes[cfg.cluster.master_node]
        return await self.ctx.rpc().call_one(
            master, call, [master_params(cfg), bool(cfg.cluster.use_external_mip_script)])

    async def _master_ip_down(self, new: Any) -> None:
        """Ganeti's: the master IP goes down on the current device (a failure fails
        the job unless ``force``), and the new device is recorded."""
        current = self.ctx.config.config.cluster.master_netdev
        self.ctx.feedback("message", f"Shutting down master ip on the current netdev "
                                     f"({current})")
        result = await self._master_ip_call("node_deactivate_master_ip")
        if self.op.force:
            result.warn("Could not disable the master ip (continuing anyway)",
                        lambda text: self.ctx.feedback("message", text))
        else:
            result.raise_if_failed("Could not disable the master ip")
        self.ctx.feedback("message", f"Changing master_netdev from {current} to "
                                     f"{self.op.master_netdev}")
        new.master_netdev = self.op.master_netdev

    async def _master_ip_up(self, netdev: str) -> None:
        """Ganeti's: the master IP comes up on the new device; a failure is a warning
        (LogWarning's)."""
        self.ctx.feedback("message", f"Starting the master ip on the new master netdev "
                                     f"({netdev})")
        result = await self._master_ip_call("node_activate_master_ip")
        result.warn("Could not re-enable the master ip on the master, please restart "
                    "manually", lambda text: self.ctx.feedback("message", f" - WARNING: {text}"))

    async def _change_master_netmask(self, netmask: int) -> None:
        """Ganeti's: the master's node daemon moves the master IP to the new netmask; a
        failure (the address is not up, say) is a warning, the config changes anyway."""
        cl = self.ctx.config.config.cluster
        master = self.ctx.config.config.nodes[cl.master_node]
        self.ctx.feedback("message", f"Changing master IP netmask to {netmask}")
        result = await self.ctx.rpc().call_one(
            master, "node_change_master_netmask",
            [cl.master_netmask, netmask, cl.master_ip, cl.master_netdev])
        result.warn("Could not change the master IP netmask",
                    lambda text: self.ctx.feedback("message", text))

    async def _check_drbd_helper_on_nodes(self, helper: str) -> None:
        """Ganeti's _CheckDrbdHelperOnNodes: every vm_capable node reports ``helper``
        (an offline node is skipped, said in the job's log)."""
        cfg = self.ctx.config.config
        nodes = sorted((n for n in cfg.nodes.values() if n.vm_capable), key=lambda n: n.name)
        online = [n for n in nodes if not n.offline]
        results = (await self.ctx.rpc().call([nodesmod.target(n) for n in online],
                                             "drbd_helper") if online else {})
        for node in nodes:
            if node.offline:
                self.ctx.feedback("message", f" - INFO: Not checking drbd helper on offline "
                                             f"node {node.name}")
                continue
            result = results[node.name]
            if result.fail_msg:
                raise OpPrereqError(f"Error checking drbd helper on node '{node.name}': "
                                    f"{result.fail_msg}", ECODE_ENVIRON)
            if result.payload != helper:
                raise OpPrereqError(f"Error on node '{node.name}': drbd helper is "
                                    f"{result.payload}", ECODE_ENVIRON)

    async def _check_vg_on_nodes(self, vg_name: str) -> None:
        """Ganeti's _CheckVgNameOnNodes: every vm_capable node has ``vg_name`` with at
        least MIN_VG_SIZE MiB; a node that does not answer (offline, down) is skipped
        with a warning, as Ganeti skips it."""
        cfg = self.ctx.config.config
        nodes = sorted((n for n in cfg.nodes.values() if n.vm_capable), key=lambda n: n.name)
        if not nodes:
            return
        results = await self.ctx.rpc().call([nodesmod.target(n) for n in nodes], "vg_list")
        for node in nodes:
            result = results[node.name]
            if result.fail_msg or not isinstance(result.payload, dict):
                self.ctx.feedback("message", " - WARNING: Error while gathering data on node "
                                  f"{node.name} (ignoring node): "
                                  f"{result.fail_msg or 'invalid answer'}")
                continue
            problem = check_vg_size(result.payload, vg_name)
            if problem:
                raise OpPrereqError(f"Error on node '{node.name}': {problem}", ECODE_ENVIRON)
