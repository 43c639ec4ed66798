"""Node and node-group rules shared by the logical units: look-ups and the candidate pool.

Nodes and groups are addressed by name or by UUID everywhere.  The master
candidate pool follows Ganeti (docs/design/nodes-and-replication.md): the
cluster keeps ``candidate_pool_size`` candidates (the master counts as one)
among the nodes that may be candidates
(master capable, neither offline nor drained); a node that leaves the pool is
replaced by promoting others, in name order.
"""

from __future__ import annotations

from ganeti.core import constants
from ganeti.core.errors import ECODE_NOENT, OpPrereqError
from ganeti.core.objects import ConfigData, Instance, Node, NodeGroup
from ganeti.rpc.client import NodeTarget


def find_node(cfg: ConfigData, name_or_uuid: str | None) -> Node:
    """The node with this name or UUID; OpPrereqError(unknown_entity) if none."""
    if name_or_uuid:
        if name_or_uuid in cfg.nodes:
            return cfg.nodes[name_or_uuid]
        node = cfg.node_by_name(name_or_uuid)
        if node is not None:
            return node
        # a short name that is unique is accepted, as Ganeti expands names
        short = [n for n in cfg.nodes.values() if n.name.split(".")[0] == name_or_uuid]
        if len(short) == 1:
            return short[0]
    raise OpPrereqError(f"Node '{name_or_uuid}' not known", ECODE_NOENT)


def find_group(cfg: ConfigData, name_or_uuid: str | None) -> NodeGroup:
    """The node group with this name or UUID; OpPrereqError(unknown_entity) if none."""
    if name_or_uuid:
        if name_or_uuid in cfg.nodegroups:
            return cfg.nodegroups[name_or_uuid]
        group = cfg.group_by_name(name_or_uuid)
        if group is not None:
            return group
    raise OpPrereqError(f"Node group '{name_or_uuid}' not found", ECODE_NOENT)


def default_group(cfg: ConfigData) -> NodeGroup:
    """The group new nodes join when none is given: the only one, else "default"."""
    if len(cfg.nodegroups) == 1:
        return next(iter(cfg.nodegroups.values()))
    group = cfg.group_by_name(constants.DEFAULT_NODEGROUP_NAME)
    if group is None:
        raise OpPrereqError("There are several node groups and none is called "
                            f"{constants.DEFAULT_NODEGROUP_NAME!r}; name the group of "
                            "the new node", ECODE_NOENT)
    return group


def instance_nodes(cfg: ConfigData, inst: Instance) -> set[str]:
    """UUIDs of the nodes an instance uses: its primary and every node of its disks."""
    return {inst.primary_node} | {n for d in inst.disks if d in cfg.disks
                                  for n in cfg.disks[d].nodes}


def secondary_nodes(cfg: ConfigData, inst: Instance) -> list[str]:
    """UUIDs of the nodes an instance's disks use besides its primary, in disk order."""
    seen: list[str] = []
    for uuid in inst.disks:
        disk = cfg.disks.get(uuid)
        for node in disk.nodes if disk is not None else ():
            if node != inst.primary_node and node not in seen:
                seen.append(node)
    return seen


def may_be_candidate(node: Node) -> bool:
    """Whether the node can be a master candidate (capable, not offline, not drained)."""
    return node.master_capable and not node.offline and not node.drained


def candidate_stats(cfg: ConfigData, exclude: frozenset[str] = frozenset()) -> tuple[int, int]:
    """``(current, desired)`` candidates, ignoring the nodes (UUIDs) in ``exclude``.

    ``desired`` is the pool size bounded by how many nodes could be candidates.
    """
    nodes = [n for n in cfg.nodes.values() if n.uuid not in exclude]
    current = sum(1 for n in nodes if n.master_candidate)
    possible = sum(1 for n in nodes if may_be_candidate(n))
    return current, min(cfg.cluster.candidate_pool_size, possible)


def fill_candidate_pool(cfg: ConfigData, now: float,
                        exclude: frozenset[str] = frozenset()) -> list[str]:
    """Promote nodes (in name order) until the pool has its size; the names promoted.

    Nodes in ``exclude`` (UUIDs; e.g. one just demoted) are not promoted.
    """
    current, desired = candidate_stats(cfg, exclude)
    promoted = []
    for node in sorted(cfg.nodes.values(), key=lambda n: n.name):
        if current >= desired:
            break
        if node.uuid in exclude or node.master_candidate or not may_be_candidate(node):
            continue
        node.master_candidate = True
        node.serial_no += 1
        node.mtime = now
        current += 1
        promoted.append(node.name)
    return promoted


def target(node: Node) -> NodeTarget:
    """How the RPC client reaches a node."""
    return NodeTarget(node.name, node.primary_ip, node.offline)


def candidates(cfg: ConfigData, include_master: bool = False) -> list[Node]:
    """The master candidates, by name (the master only if asked for)."""
    return sorted((n for n in cfg.nodes.values() if n.master_candidate
                   and (include_master or n.uuid != cfg.cluster.master_node)),
                  key=lambda n: n.name)


def others(cfg: ConfigData) -> list[Node]:
    """Every node except the master, by name."""
    return sorted((n for n in cfg.nodes.values() if n.uuid != cfg.cluster.master_node),
                  key=lambda n: n.name)
