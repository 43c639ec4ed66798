"""Node logical units: add, remove and change nodes (seed 003 node flags).

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
from ganeti.master import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE
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


async def welcome_candidates(ctx: LUContext, names: list[str]) -> None:
    """Give nodes that just became candidates the ancillary files and the job queue."""
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
    for name in names:
        ctx.feedback("message", f"Node {name} is now a master candidate")


class LUNodeAdd(LogicalUnit):
    """OP_NODE_ADD: check the node's daemon, add it to the config, push its files."""

    OP_ID = "OP_NODE_ADD"

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        op = self.op
        name = op["node_name"]
        self.existing = cfg.node_by_name(name)
        if op.get("readd"):
            if self.existing is None:
                raise OpPrereqError(f"Node {name} is not in the configuration; add it "
                                    "without --readd", ECODE_NOENT)
            if self.existing.uuid == cfg.cluster.master_node:
                raise OpPrereqError("The master node cannot be re-added", ECODE_INVAL)
        elif self.existing is not None:
            raise OpPrereqError(f"Node {name} is already in the configuration; use "
                                "--readd to add it again", ECODE_EXISTS)
        self.group = (nodesmod.find_group(cfg, op["group"]) if op.get("group")
                      else (cfg.nodegroups[self.existing.group] if self.existing
                            else nodesmod.default_group(cfg)))
        self.ndparams = check_ndparams(op.get("ndparams"))
        self.skip = self.existing.uuid if self.existing else None
        check_ips_free(cfg, [op.get("primary_ip"), op.get("secondary_ip")], self.skip)

    async def _primary_ip(self) -> str:
        ip = self.op.get("primary_ip")
        if ip:
            return str(ip)
        if self.existing is not None:
            return self.existing.primary_ip
        name = self.op["node_name"]
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
        name = self.op["node_name"]
        results = await self.ctx.rpc().call([NodeTarget(name, ip)], "version", [])
        result = results[name]
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
        name = op["node_name"]
        primary_ip = await self._primary_ip()
        secondary_ip = op.get("secondary_ip") or primary_ip
        ctx.feedback("message", f"Checking the node daemon of {name} at {primary_ip}")
        await self._check_daemon(primary_ip)
        if op.get("dry_run"):
            return None
        group_uuid = self.group.uuid
        readd = bool(op.get("readd"))
        new_uuid = self.existing.uuid if self.existing else str(uuidmod.uuid4())
        now = ctx.clock.seconds()

        def change(cfg: ConfigData) -> bool:
            check_ips_free(cfg, [primary_ip, secondary_ip], new_uuid if readd else None)
            if readd:
                node = cfg.nodes[new_uuid]
                cfg.nodegroups[node.group].members.remove(node.uuid)
                node.primary_ip, node.secondary_ip = primary_ip, secondary_ip
                node.offline = node.drained = node.master_candidate = False
                node.serial_no += 1
                node.mtime = now
            else:
                if cfg.node_by_name(name) is not None:
                    raise OpPrereqError(f"Node {name} is already in the configuration",
                                        ECODE_EXISTS)
                node = Node(uuid=new_uuid, name=name, primary_ip=primary_ip,
                            secondary_ip=secondary_ip, group=group_uuid, ctime=now, mtime=now)
                cfg.nodes[new_uuid] = node
            node.group = group_uuid
            cfg.nodegroups[group_uuid].members.append(new_uuid)
            if op.get("master_capable") is not None:
                node.master_capable = bool(op["master_capable"])
            if op.get("vm_capable") is not None:
                node.vm_capable = bool(op["vm_capable"])
            if self.ndparams:
                node.ndparams.update(self.ndparams)  # checked and converted
            current, desired = nodesmod.candidate_stats(cfg)
            if nodesmod.may_be_candidate(node) and current < desired:
                node.master_candidate = True
            cfg.cluster.serial_no += 1
            cfg.cluster.mtime = now
            return node.master_candidate

        candidate = await ctx.config.update(change)
        if not readd:
            await ctx.locks.add(LEVEL_NODE, [name])
        ctx.feedback("message", f"Added node {name} ({primary_ip})" if not readd
                     else f"Re-added node {name} ({primary_ip})")
        if candidate:
            await welcome_candidates(ctx, [name])
        return None


class _OneNodeLU(LogicalUnit):
    """A logical unit acting on one existing node, named by uuid or name; it locks it."""

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        self.node = copy.deepcopy(
            nodesmod.find_node(cfg, self.op.get("node_uuid") or self.op.get("node_name")))
        self.needed_locks[LEVEL_NODE] = [self.node.name]


class LUNodeRemove(_OneNodeLU):
    """OP_NODE_REMOVE: take a node out of the cluster and tell it to forget the cluster."""

    OP_ID = "OP_NODE_REMOVE"

    def check_prereq(self) -> None:
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
        if self.op.get("dry_run"):
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
        promoted = await ctx.config.update(change)
        ctx.locks.remove(ctx.owner, LEVEL_NODE, [node.name])
        if ctx.replicator is not None:
            ctx.replicator.forget(node.name)
        if not node.offline:
            results = await ctx.rpc().call([nodesmod.target(node)], "node_leave_cluster", [])
            result = results[node.name]
            if not result.success:
                ctx.feedback("message", f"Warning: node {node.name} could not be told to "
                                        f"leave the cluster: {result.fail_msg}; remove its "
                                        "Ganeti files by hand")
        await welcome_candidates(ctx, promoted)
        return None


class LUNodeSetParams(_OneNodeLU):
    """OP_NODE_SET_PARAMS: flags (seed 003 rules), capabilities and node parameters."""

    OP_ID = "OP_NODE_SET_PARAMS"
    _FLAGS = ("master_candidate", "offline", "drained")

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        op = self.op
        node = cfg.nodes[self.node.uuid]
        changes = {f: op[f] for f in (*self._FLAGS, "master_capable", "vm_capable",
                                      "secondary_ip", "ndparams") if op.get(f) is not None}
        if not changes:
            raise OpPrereqError("Please pass at least one modification", ECODE_INVAL)
        if sum(1 for f in self._FLAGS if op.get(f) is True) > 1:
            raise OpPrereqError("Can't set the node into more than one state at the same "
                                "time", ECODE_INVAL)
        is_master = node.uuid == cfg.cluster.master_node
        if is_master and (op.get("master_candidate") is False or op.get("offline") is True
                          or op.get("drained") is True or op.get("master_capable") is False):
            raise OpPrereqError(f"The master role can be changed only via master-failover; "
                                f"{node.name} is the master, it cannot be offline, drained, "
                                "demoted or not master capable", ECODE_INVAL)
        if op.get("offline") is True:
            owned = sorted(i.name for i in cfg.instances.values()
                           if i.primary_node == node.uuid)
            if owned:
                raise OpPrereqError(f"Can't set the node offline: it is the primary node of "
                                    f"{', '.join(owned)}", ECODE_STATE)
        trial = copy.deepcopy(cfg)
        tnode = trial.nodes[node.uuid]
        self.result = self._apply(trial, tnode)
        if op.get("master_candidate") is True and not tnode.master_candidate:
            raise OpPrereqError(f"Node {node.name} cannot become a master candidate: it is "
                                "not master capable, offline or drained", ECODE_STATE)
        was_candidate = node.master_candidate
        if was_candidate and not tnode.master_candidate:
            current, desired = nodesmod.candidate_stats(trial)
            if current < desired and not op.get("auto_promote"):
                raise OpPrereqError(
                    "Not enough master candidates, please pass auto promote option to allow "
                    "promotion (--auto-promote or RAPI auto_promote=True)", ECODE_STATE)
        check_ips_free(cfg, [op.get("secondary_ip")], node.uuid)

    def _apply(self, cfg: ConfigData, node: Node) -> list[list[str]]:
        """Apply the change to ``node`` in ``cfg``; the [param, value] pairs to report."""
        op = self.op
        result: list[list[str]] = []
        for flag in ("offline", "drained"):
            value = op.get(flag)
            if value is None or value == getattr(node, flag):
                continue
            setattr(node, flag, value)
            result.append([flag, str(value)])
            if value:
                if node.master_candidate:
                    node.master_candidate = False
                    result.append(["master_candidate", f"auto-demotion due to {flag}"])
                other = "drained" if flag == "offline" else "offline"
                if getattr(node, other):
                    setattr(node, other, False)
                    result.append([other, f"clear {other} status due to {flag}"])
        for flag in ("master_capable", "vm_capable"):
            value = op.get(flag)
            if value is not None and value != getattr(node, flag):
                setattr(node, flag, value)
                result.append([flag, str(value)])
                if flag == "master_capable" and not value and node.master_candidate:
                    node.master_candidate = False
                    result.append(["master_candidate", "auto-demotion due to not being "
                                                       "master capable"])
        mc = op.get("master_candidate")
        if mc is not None and mc != node.master_candidate:
            if not mc or nodesmod.may_be_candidate(node):
                node.master_candidate = mc
                result.append(["master_candidate", str(mc)])
        elif mc is None and (op.get("offline") is False or op.get("drained") is False):
            # a node coming back promotes itself if the pool needs it
            current, desired = nodesmod.candidate_stats(cfg, frozenset({node.uuid}))
            if nodesmod.may_be_candidate(node) and not node.master_candidate and (
                    current < cfg.cluster.candidate_pool_size):
                node.master_candidate = True
                result.append(["master_candidate", "auto-promotion"])
        if op.get("secondary_ip") and op["secondary_ip"] != node.secondary_ip:
            node.secondary_ip = op["secondary_ip"]
            result.append(["secondary_ip", op["secondary_ip"]])
        if op.get("ndparams"):
            node.ndparams.update(check_ndparams(op["ndparams"]))
            result.append(["ndparams", str(node.ndparams)])
        return result

    async def exec(self) -> Any:
        ctx = self.ctx
        if self.op.get("dry_run"):
            return self.result
        now = ctx.clock.seconds()
        name = self.node.name

        def change(cfg: ConfigData) -> tuple[list[list[str]], list[str], bool]:
            node = cfg.nodes[self.node.uuid]
            was = node.master_candidate
            result = self._apply(cfg, node)
            node.serial_no += 1
            node.mtime = now
            # refill the pool (check_prereq refused shrinking it without auto_promote)
            promoted = nodesmod.fill_candidate_pool(cfg, now, frozenset({node.uuid}))
            cfg.cluster.serial_no += 1
            cfg.cluster.mtime = now
            return result, promoted, not was and node.master_candidate

        result, promoted, became = await ctx.config.update(change)
        for param, value in result:
            ctx.feedback("message", f"{name}: {param} -> {value}")
        for other in promoted:
            result.append(["master_candidate", f"{other}: auto-promotion"])
        await welcome_candidates(ctx, ([name] if became else []) + promoted)
        return result
