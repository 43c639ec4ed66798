"""Node logical units: add and remove nodes (changing one: node_modify.py).

Every unit takes the Big Ganeti Lock exclusively: node membership and roles
change what every other job may assume.  Checks that need only the config
run in :meth:`check_prereq` and change nothing; a config change is one call
of the config writer, which distributes the result before the job goes on.
"""

from __future__ import annotations

import copy
import socket
import uuid as uuidmod
from typing import Any

from ganeti.core import constants, params
from ganeti.core import hooks as hookdefs
from ganeti.core.errors import (
    ECODE_ENVIRON,
    ECODE_EXISTS,
    ECODE_INVAL,
    ECODE_NOENT,
    ECODE_NOTUNIQUE,
    ECODE_RESOLVER,
    ECODE_STATE,
    OpPrereqError,
)
from ganeti.core.objects import ConfigData, Node
from ganeti.core.opcodes.views import OpNodeAdd, OpNodeRemove, OpNodeSetParams
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu.base import LogicalUnit, LUContext
from ganeti.rpc.client import NodeTarget


def check_ndparams(values: dict[str, Any] | None) -> dict[str, Any]:
    """Node parameters checked and converted (``"2222"`` -> 2222) against the defaults."""
    checked = params.check_params(dict(values or {}), constants.NDC_DEFAULTS, "-N")
    for key, value in checked.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            raise OpPrereqError(f"-N: node parameter {key} must not be negative",
                                ECODE_INVAL)
    return checked


def check_ips_free(cfg: ConfigData, ips: list[str | None], skip: str | None = None) -> None:
    """OpPrereqError(resource_not_unique) if another node (not ``skip``) uses one of ``ips``."""
    used: dict[str, str] = {}
    for node in cfg.nodes.values():
        if node.uuid != skip:
            used.update({ip: node.name for ip in (node.primary_ip, node.secondary_ip) if ip})
    for ip in ips:
        if ip and ip in used:
            raise OpPrereqError(f"The IP address {ip} is already used by node {used[ip]}",
                                ECODE_NOTUNIQUE)


async def welcome_candidates(ctx: LUContext, names: list[str], announce: bool = True) -> None:
    """Give nodes that just became candidates the job queue (and the ancillary files,
    which every node gets, in case they missed them).

    ``announce``: say so in the job's feedback (node modify does not, as Ganeti's).
    """
    if not names or ctx.replicator is None:
        return
    cfg = ctx.config.config
    new = [nodesmod.find_node(cfg, name) for name in names]
    new = [n for n in new if not n.offline and n.uuid != cfg.cluster.master_node]
    if not new:
        return
    await ctx.replicator.push_ancillary(new)
    failed = await ctx.replicator.copy_queue(new, ctx.job_texts())
    for result in failed:
        ctx.feedback("message", f"Warning: copying the job queue to {result.node} failed: "
                                f"{result.fail_msg}")
    for name in names if announce else []:
        ctx.feedback("message", f"Node {name} is now a master candidate")


class LUNodeAdd(LogicalUnit):
    """OP_NODE_ADD: check the node's daemon, add it to the config, push its files."""

    OP_ID = "OP_NODE_ADD"
    op: OpNodeAdd
    HPATH = "node-add"
    HTYPE = hookdefs.HTYPE_NODE

    def build_hooks_env(self) -> dict[str, Any]:
        op, old = self.op, getattr(self, "existing", None)
        # the address as resolved in exec (post phase), else as given or known
        pip = getattr(self, "hooks_primary_ip", None) or op.primary_ip or (
            old.primary_ip if old is not None else None)

        def flag(name: str) -> bool | None:
            value = getattr(op, name)
            if value is None:  # as Ganeti fills it: the old node's, else True
                return bool(getattr(old, name)) if old is not None else True
            return bool(value)
        return {"OP_TARGET": op.node_name, "NODE_NAME": op.node_name, "NODE_PIP": pip,
                "NODE_SIP": op.secondary_ip or pip, "MASTER_CAPABLE": flag("master_capable"),
                "VM_CAPABLE": flag("vm_capable")}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: every node but the one added; after exec, that one too."""
        cfg = self.ctx.config.config
        old = cfg.node_by_name(self.op.node_name)
        nodes = sorted(u for u in cfg.nodes if old is None or u != old.uuid)
        return nodes, nodes

    def prepare_post_hook_nodes(self, uuids: list[str]) -> list[str]:
        node = self.ctx.config.config.node_by_name(self.op.node_name)
        return uuids + [node.uuid] if node is not None else uuids

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        op = self.op
        name = op.node_name
        self.existing = cfg.node_by_name(name)
        if op.readd:  # in Ganeti's order (LUNodeAdd's CheckArguments, then CheckPrereq)
            if cfg.master is not None and name == cfg.master.name:
                raise OpPrereqError("Cannot readd the master node", ECODE_STATE)
            if op.group:
                raise OpPrereqError("Cannot pass a node group when a node is being readded",
                                    ECODE_INVAL)
            if self.existing is None:
                raise OpPrereqError(f"Node {name} is not in the configuration", ECODE_NOENT)
            if op.vm_capable is False and any(
                    self.existing.uuid in nodesmod.instance_nodes(cfg, inst)
                    for inst in cfg.instances.values()):
                raise OpPrereqError(f"Node {name} being re-added with vm_capable flag set to "
                                    "false, but it already holds instances", ECODE_STATE)
        elif self.existing is not None:
            raise OpPrereqError(f"Node {name} is already in the configuration", ECODE_EXISTS)
        self.group = (nodesmod.find_group(cfg, op.group) if op.group
                      else (cfg.nodegroups[self.existing.group] if self.existing
                            else nodesmod.default_group(cfg)))
        self.ndparams = check_ndparams(op.ndparams)
        self.skip = self.existing.uuid if self.existing else None
        check_ips_free(cfg, [op.primary_ip, op.secondary_ip], self.skip)

    async def _primary_ip(self) -> str:
        ip = self.op.primary_ip
        if ip:
            return str(ip)
        if self.existing is not None:
            return self.existing.primary_ip
        name = self.op.node_name
        try:
            infos = await self.ctx.run_blocking(socket.getaddrinfo, name, None,
                                                socket.AF_INET, socket.SOCK_STREAM)
        except OSError as err:
            raise OpPrereqError(f"Cannot resolve node name {name}: {err}; give its "
                                "address with --primary-ip", ECODE_RESOLVER) from None
        ip = str(infos[0][4][0])
        check_ips_free(self.ctx.config.config, [ip], self.skip)
        return ip

    async def _check_daemon(self, ip: str) -> None:
        name = self.op.node_name
        result = await self.ctx.rpc().call_one(NodeTarget(name, ip), "version", [])
        if not result.success:
            raise OpPrereqError(
                f"Cannot communicate with node {name} at {ip}: {result.fail_msg}; check that "
                "ganeti-noded runs there and holds this cluster's server.pem",
                ECODE_ENVIRON)
        if result.payload != constants.PROTOCOL_VERSION:
            raise OpPrereqError(f"Node {name} speaks protocol version {result.payload}, "
                                f"the master {constants.PROTOCOL_VERSION}; install the "
                                "same version on both", ECODE_ENVIRON)

    async def exec(self) -> Any:
        op, ctx = self.op, self.ctx
        name = op.node_name
        primary_ip = await self._primary_ip()
        self.hooks_primary_ip = primary_ip  # for the post hooks' NODE_PIP
        secondary_ip = op.secondary_ip or primary_ip
        if self.existing is not None and secondary_ip != self.existing.secondary_ip:
            raise OpPrereqError("Readded node doesn't have the same IP address configuration "
                                "as before", ECODE_INVAL)
        ctx.feedback("message", f"Checking the node daemon of {name} at {primary_ip}")
        await self._check_daemon(primary_ip)
        if op.dry_run:
            return None
        group_uuid = self.group.uuid
        readd = bool(op.readd)
        new_uuid = self.existing.uuid if self.existing else str(uuidmod.uuid4())
        now = ctx.clock.seconds()

        def change(cfg: ConfigData) -> bool:
            check_ips_free(cfg, [primary_ip, secondary_ip], new_uuid if readd else None)
            if readd:
                # Ganeti's re-add: same UUID, group, capabilities (unless given); the
                # offline, drained and candidate flags start again, the node parameters
                # are the ones given (none: none), the node is powered.
                node = cfg.nodes[new_uuid]
                node.primary_ip, node.secondary_ip = primary_ip, secondary_ip
                node.offline = node.drained = node.master_candidate = False
                node.powered = True
                node.serial_no += 1
                node.mtime = now
            else:
                if cfg.node_by_name(name) is not None:
                    raise OpPrereqError(f"Node {name} is already in the configuration",
                                        ECODE_EXISTS)
                node = Node(uuid=new_uuid, name=name, primary_ip=primary_ip,
                            secondary_ip=secondary_ip, group=group_uuid, ctime=now, mtime=now)
                cfg.nodes[new_uuid] = node
                cfg.nodegroups[group_uuid].members.append(new_uuid)
            if op.master_capable is not None:
                node.master_capable = bool(op.master_capable)
            if op.vm_capable is not None:
                node.vm_capable = bool(op.vm_capable)
            node.ndparams = dict(self.ndparams)  # checked and converted
            current, desired = nodesmod.candidate_stats(cfg)
            if nodesmod.may_be_candidate(node) and current < desired:
                node.master_candidate = True
            cfg.cluster.serial_no += 1
            cfg.cluster.mtime = now
            return node.master_candidate

        if readd:
            ctx.feedback("message", " - INFO: Readding a node, the offline/drained flags "
                                    "were reset")
        candidate = await self.update_config(change)
        if candidate:
            ctx.feedback("message", " - INFO: Node will be a master candidate")
        if not readd:  # locks are keyed by UUID
            await ctx.locks.add(LEVEL_NODE, [new_uuid])
            await ctx.locks.add(LEVEL_NODE_RES, [new_uuid])
            ctx.feedback("message", f"Added node {name} ({primary_ip})")
        if candidate:
            await welcome_candidates(ctx, [name], announce=not readd)
        elif ctx.replicator is not None:
            added = nodesmod.find_node(ctx.config.config, name)
            if not added.offline:  # Ganeti gives every node the ancillary files
                await ctx.replicator.push_ancillary([added])
        if readd and not candidate:
            # a re-added node must not keep the config it had as a candidate (Ganeti's)
            result = await ctx.rpc().call_one(NodeTarget(name, primary_ip),
                                              "node_demote_from_mc", [])
            result.warn("Node failed to demote itself from master candidate status",
                               lambda text: ctx.feedback("message", f" - WARNING: {text}"))
        return None


class _OneNodeLU(LogicalUnit):
    """A logical unit acting on one existing node, named by uuid or name; it locks it
    (by UUID), and reads the node again once the lock is held."""

    op: OpNodeRemove | OpNodeSetParams

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        node = nodesmod.find_node(cfg, self.op.node_uuid or self.op.node_name)
        self.node_uuid = node.uuid
        # Ganeti's ExpandNodeUuidAndName: the UUID and full name, in the job's opcode
        self.record_op(node_uuid=node.uuid, node_name=node.name)
        self.needed_locks[LEVEL_NODE] = [self.node_uuid]

    def check_prereq(self) -> None:
        node = self.ctx.config.config.nodes.get(self.node_uuid)
        if node is None:  # (cannot happen while the lock is held: removal takes it)
            raise OpPrereqError(f"Node '{self.op.node_name or self.node_uuid}' not known",
                                ECODE_NOENT)
        self.node = copy.deepcopy(node)


class LUNodeRemove(_OneNodeLU):
    """OP_NODE_REMOVE: take a node out of the cluster and tell it to forget the cluster."""

    OP_ID = "OP_NODE_REMOVE"
    op: OpNodeRemove
    HPATH = "node-remove"
    HTYPE = hookdefs.HTYPE_NODE

    def build_hooks_env(self) -> dict[str, Any]:
        return {"OP_TARGET": self.node.name, "NODE_NAME": self.node.name}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: every node but the one removed (a broken node stays removable)."""
        nodes = sorted(u for u in self.ctx.config.config.nodes if u != self.node_uuid)
        return nodes, nodes

    def expand_names(self) -> None:
        super().expand_names()
        self.needed_locks[LEVEL_NODE_RES] = [self.node_uuid]  # removed with the node

    def check_prereq(self) -> None:
        super().check_prereq()
        cfg = self.ctx.config.config
        node = self.node
        if node.uuid == cfg.cluster.master_node:
            raise OpPrereqError("Node is the master node, failover to another node is "
                                "required", ECODE_INVAL)
        for inst in cfg.instances.values():
            if node.uuid in nodesmod.instance_nodes(cfg, inst):
                raise OpPrereqError(f"Instance {inst.name} is still running on the node, "
                                    "please remove first", ECODE_INVAL)

    async def exec(self) -> Any:
        ctx, node = self.ctx, self.node
        if self.op.dry_run:
            return None
        now = ctx.clock.seconds()

        def change(cfg: ConfigData) -> list[str]:
            gone = cfg.nodes.pop(node.uuid)
            group = cfg.nodegroups.get(gone.group)
            if group is not None and gone.uuid in group.members:
                group.members.remove(gone.uuid)
            cfg.cluster.serial_no += 1
            cfg.cluster.mtime = now
            return nodesmod.fill_candidate_pool(cfg, now)

        ctx.feedback("message", f"Removing node {node.name} from the configuration")
        promoted = await self.update_config(change)
        ctx.locks.remove(ctx.owner, LEVEL_NODE, [node.uuid])
        ctx.locks.remove(ctx.owner, LEVEL_NODE_RES, [node.uuid])
        if ctx.replicator is not None:
            ctx.replicator.forget(node.name)
        if not node.offline:
            result = await ctx.rpc().call_one(node, "node_leave_cluster", [])
            if not result.success:
                ctx.feedback("message", f"Warning: node {node.name} could not be told to "
                                        f"leave the cluster: {result.fail_msg}; remove its "
                                        "Ganeti files by hand")
        await welcome_candidates(ctx, promoted)
        return None
