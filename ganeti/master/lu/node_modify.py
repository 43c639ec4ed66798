"""OP_NODE_SET_PARAMS: a node's role, capabilities, secondary IP and parameters.

The rules are Ganeti's ``LUNodeSetParams``:

- a node has one role: master candidate, drained, offline or regular; at most
  one flag (or capability) may be set to true in one request;
- the master's role flags change only through master-failover, and the
  master stays master capable;
- leaving the candidate pool is refused when it would leave fewer candidates
  than the pool wants, unless ``auto_promote`` (then other nodes are
  promoted);
- a node coming back (undrained, onlined, made master capable) promotes
  itself if the pool wants another candidate;
- on a single-homed cluster the secondary IP can only be changed for the
  master with ``force`` (making the cluster multi-homed), and the reverse.

The result is Ganeti's list of ``[parameter, new value]`` pairs.  A role change
reaches the node with the config and ssconf files the config writer
distributes (a node daemon started with ``--manage-confd`` starts or stops
confd from them); a new candidate also gets the ancillary files and the job
queue.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ganeti.core import hooks as hookdefs
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpPrereqError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.opcodes.views import OpNodeSetParams
from ganeti.core.params_merge import NDC_GLOBALS, check_params_not_global, get_updated_params
from ganeti.core.params_types import NDS_PARAMETER_TYPES, force_dict_type
from ganeti.master.config import nodes as nodesmod
from ganeti.master.lu.node import _OneNodeLU, check_ips_free, welcome_candidates
from ganeti.master.lu.oob import oob_program
from ganeti.rpc.client import NodeTarget

ROLE_CANDIDATE, ROLE_DRAINED, ROLE_OFFLINE, ROLE_REGULAR = range(4)
#: (master_candidate, drained, offline) -> role, and back
FLAGS_TO_ROLE = {
    (True, False, False): ROLE_CANDIDATE,
    (False, True, False): ROLE_DRAINED,
    (False, False, True): ROLE_OFFLINE,
    (False, False, False): ROLE_REGULAR,
}
ROLE_TO_FLAGS = {role: flags for flags, role in FLAGS_TO_ROLE.items()}
FLAGS = ("master_candidate", "drained", "offline")


def candidate_stats(cfg: ConfigData, exclude: frozenset[str] = frozenset()
                    ) -> tuple[int, int]:
    """Ganeti's ``GetMasterCandidateStats``: (candidates now, candidates wanted)."""
    return nodesmod.candidate_stats(cfg, exclude)


def decide_self_promotion(cfg: ConfigData) -> bool:
    """Whether a node joining the possible candidates should become one (Ganeti's rule)."""
    now, should = candidate_stats(cfg)
    return now < min(should + 1, cfg.cluster.candidate_pool_size)


class LUNodeSetParams(_OneNodeLU):
    """OP_NODE_SET_PARAMS with Ganeti's role rules (see the module docstring)."""

    OP_ID = "OP_NODE_SET_PARAMS"
    op: OpNodeSetParams
    HPATH = "node-modify"
    HTYPE = hookdefs.HTYPE_NODE

    def build_hooks_env(self) -> dict[str, Any]:
        """Ganeti's: the flags as the prerequisites left them (auto-promotion included)."""
        flags = self.flags
        return {"OP_TARGET": self.node.name, "MASTER_CANDIDATE": flags["master_candidate"],
                "OFFLINE": flags["offline"], "DRAINED": flags["drained"],
                "MASTER_CAPABLE": self.op.master_capable, "VM_CAPABLE": self.op.vm_capable}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: the master and the node, in both phases."""
        nodes = [self.ctx.config.config.cluster.master_node, self.node.uuid]
        return nodes, nodes

    def _info(self, text: str) -> None:
        self.ctx.feedback("message", f" - INFO: {text}")

    def _warning(self, text: str) -> None:
        self.ctx.feedback("message", f" - WARNING: {text}")

    def check_prereq(self) -> None:
        super().check_prereq()
        cfg = self.ctx.config.config
        op = self.op
        node = cfg.nodes[self.node.uuid]
        self.flags: dict[str, bool | None] = {f: getattr(op, f) for f in FLAGS}
        # (hv_state and disk_state are reserved: never stored, so never a modification)
        mods = [op.offline, op.master_candidate, op.drained, op.master_capable,
                op.vm_capable, op.secondary_ip, op.ndparams]
        if all(m is None for m in mods):
            raise OpPrereqError("Please pass at least one modification", ECODE_INVAL)
        if sum(1 for m in mods if m is True) > 1:
            raise OpPrereqError("Can't set the node into more than one state at the same "
                                "time", ECODE_INVAL)
        might_demote = (op.master_candidate is False or op.offline is True
                        or op.drained is True or op.master_capable is False)
        sip = op.secondary_ip
        if sip and not _is_ipv4(sip):
            raise OpPrereqError(f"Secondary IP ({sip}) needs to be a valid IPv4 address",
                                ECODE_INVAL)
        self.lock_all = bool(op.auto_promote) and might_demote
        is_master = node.uuid == cfg.cluster.master_node
        if any(v is not None for v in self.flags.values()) and is_master:
            raise OpPrereqError("The master role can be changed only via master-failover",
                                ECODE_INVAL)
        if self.flags["master_candidate"] and not node.master_capable:
            raise OpPrereqError(f"Node {node.name} is not master capable, cannot make it a "
                                "master candidate", ECODE_STATE)
        if op.vm_capable is False and self._hosts_instances(cfg, node):
            raise OpPrereqError(f"Node {node.name} hosts instances, cannot unset the "
                                "vm_capable flag", ECODE_STATE)
        if node.master_candidate and might_demote and not self.lock_all:
            remaining, should = candidate_stats(cfg, frozenset({node.uuid}))
            if remaining < should:
                raise OpPrereqError(
                    "Not enough master candidates, please pass auto promote option to allow "
                    "promotion (--auto-promote or RAPI auto_promote=True)", ECODE_STATE)
        self.old_flags = (node.master_candidate, node.drained, node.offline)
        self.old_role = FLAGS_TO_ROLE.get(self.old_flags, ROLE_REGULAR)
        for flag in FLAGS:
            if self.flags[flag] is False and getattr(node, flag) is False:
                self._info(f"Ignoring request to unset flag {flag}, already unset")
                self.flags[flag] = None
                self.record_op(**{flag: None})  # (Ganeti's unit changes its opcode so)
        if oob_program(cfg, node):
            if self.flags["offline"] is False and not (node.powered
                                                       or op.powered is True):
                raise OpPrereqError(f"Node {node.name} needs to be "
                                    "turned on before its offline status can be reset",
                                    ECODE_STATE)
        elif op.powered is not None:
            raise OpPrereqError("Unable to change powered state for node "
                                f"{node.name} as it does not support "
                                "out-of-band handling", ECODE_STATE)
        capable = op.master_capable
        if (self.flags["drained"] is False or self.flags["offline"] is False
                or (capable and not node.master_capable)):
            # Ganeti does not look at master_capable here; a node that may not be a
            # candidate is not promoted (Ganeti would write an inconsistent config)
            may = capable if capable is not None else node.master_capable
            if may and decide_self_promotion(cfg):
                self.flags["master_candidate"] = True
                self.record_op(master_candidate=True)
                self._info("Auto-promoting node to master candidate")
        if capable is False and node.master_candidate:
            if is_master:
                raise OpPrereqError("Master must remain master capable", ECODE_STATE)
            self._info("Demoting from master candidate")
            self.flags["master_candidate"] = False
            self.record_op(master_candidate=False)
        self.new_role = self._new_role()
        if sip:
            self._check_secondary_ip(cfg, node, sip)
        check_ips_free(cfg, [sip], node.uuid)
        # As LUNodeSetParams: merged into the node's own ("default" drops a key),
        # then type-enforced (TypeEnforcementError, "Parameter Error: ...").
        self.ndparams = (force_dict_type(get_updated_params(node.ndparams, op.ndparams),
                                         NDS_PARAMETER_TYPES)
                         if op.ndparams else None)
        if op.ndparams:
            check_params_not_global(op.ndparams, NDC_GLOBALS, "node", "node",
                                    "cluster or group")

    @staticmethod
    def _hosts_instances(cfg: ConfigData, node: Node) -> bool:
        return any(node.uuid in nodesmod.instance_nodes(cfg, inst)
                   for inst in cfg.instances.values())

    def _new_role(self) -> int:
        flags = self.flags
        if flags["master_candidate"]:
            return ROLE_CANDIDATE
        if flags["drained"]:
            return ROLE_DRAINED
        if flags["offline"]:
            return ROLE_OFFLINE
        if False in flags.values():
            return ROLE_REGULAR  # the only true flag is being unset
        return self.old_role

    def _check_secondary_ip(self, cfg: ConfigData, node: Node, sip: str) -> None:
        master = cfg.nodes[cfg.cluster.master_node]
        master_singlehomed = (master.secondary_ip or master.primary_ip) == master.primary_ip
        forced_master = bool(self.op.force) and node.uuid == master.uuid
        if master_singlehomed and sip != node.primary_ip:
            if not forced_master:
                raise OpPrereqError("Changing the secondary ip on a single-homed cluster "
                                    "requires the --force option to be passed, and the "
                                    "target node to be the master", ECODE_INVAL)
            self._warning("Transitioning from single-homed to multi-homed cluster; all "
                          "nodes will require a secondary IP address")
        elif not master_singlehomed and sip == node.primary_ip:
            if not forced_master:
                raise OpPrereqError("Cannot set the secondary IP to be the same as the "
                                    "primary IP on a multi-homed cluster, unless the --force "
                                    "option is passed, and the target node is the master",
                                    ECODE_INVAL)
            self._warning("Transitioning from multi-homed to single-homed cluster; "
                          "secondary IP addresses will have to be removed")
        if node.offline:
            users = sorted(inst.name for inst in cfg.instances.values()
                           if node.uuid in nodesmod.instance_nodes(cfg, inst))
            if users:
                raise OpPrereqError("Cannot change secondary IP address: offline node has "
                                    f"instances ({', '.join(users)}) configured to use it",
                                    ECODE_STATE)

    async def _check_back_online(self) -> None:
        """A node leaving the offline role must answer (Ganeti asks for its version)."""
        node = self.node
        # an explicit target: the node is still offline in the config
        result = await self.ctx.rpc().call_one(NodeTarget(node.name, node.primary_ip),
                                               "version", [])
        result.raise_if_failed(
            f"Node {node.name} is being de-offlined but fails to report its version",
            prereq=True, ecode=ECODE_STATE)
        self._warning("Transitioning node from offline to online state without using "
                      "re-add. Please make sure the node is healthy!")

    async def exec(self) -> Any:
        ctx, op = self.ctx, self.op
        if self.old_role == ROLE_OFFLINE and self.new_role != self.old_role:
            await self._check_back_online()
        if op.dry_run:
            return None
        now = ctx.clock.seconds()
        uuid = self.node.uuid

        def change(cfg: ConfigData) -> tuple[list[list[str]], list[str], bool]:
            node = cfg.nodes[uuid]
            result: list[list[str]] = []
            if self.ndparams is not None:
                node.ndparams = dict(self.ndparams)
            if op.powered is not None:
                node.powered = bool(op.powered)
            if op.master_capable is not None:
                node.master_capable = bool(op.master_capable)
                result.append(["master_capable", str(bool(op.master_capable))])
            if op.vm_capable is not None:
                node.vm_capable = bool(op.vm_capable)
                result.append(["vm_capable", str(bool(op.vm_capable))])
            if op.secondary_ip:
                node.secondary_ip = op.secondary_ip
                result.append(["secondary_ip", op.secondary_ip])
            promoted: list[str] = []
            if self.new_role != self.old_role:
                new_flags = ROLE_TO_FLAGS[self.new_role]
                for old, new, name in zip(self.old_flags, new_flags, FLAGS, strict=True):
                    if old != new:
                        result.append([name, str(new)])
                node.master_candidate, node.drained, node.offline = new_flags
                if self.lock_all:
                    promoted = nodesmod.fill_candidate_pool(cfg, now, frozenset({uuid}))
            node.serial_no += 1
            node.mtime = now
            cfg.cluster.serial_no += 1
            cfg.cluster.mtime = now
            return result, promoted, self.new_role == ROLE_CANDIDATE != self.old_role

        result, promoted, became = await self.update_config(change)
        if self.old_role == ROLE_CANDIDATE and self.new_role not in (ROLE_CANDIDATE,
                                                                      ROLE_OFFLINE):
            # after the config no longer sends it updates: it drops its copy
            demoted = await ctx.rpc().call_one(
                NodeTarget(self.node.name, self.node.primary_ip), "node_demote_from_mc", [])
            demoted.warn("Node failed to demote itself", self._warning)
        if promoted:
            self._info(f"Promoted nodes to master candidate role: {', '.join(promoted)}")
        if self.lock_all:
            now_mc, want = candidate_stats(ctx.config.config, frozenset({uuid}))
            if now_mc > want:
                self._info(f"Note: more nodes are candidates ({now_mc}) than desired "
                           f"({want})")
        await welcome_candidates(ctx, ([self.node.name] if became else []) + promoted,
                                 announce=False)
        return result


def _is_ipv4(value: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(value), ipaddress.IPv4Address)
    except ValueError:
        return False
