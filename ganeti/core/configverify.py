"""Verify a change, not the whole config.

:func:`verify_delta` finds the problems a change can have introduced: it
checks the objects the change touched and the objects that refer to
anything it replaced or deleted, with the same per-object checks (and the
same wording) as the full :func:`ganeti.core.config.verify`.  Starting from a
config that verifies clean, the new config verifies clean exactly when
``verify_delta`` reports nothing (the property test in
``tests/core/test_configverify.py`` checks this over random changes).

Deleting a node, a group, a disk or a network looks for what referred to it
with a scan of the referring container; these changes are rare, and the
scan is a loop over attributes, not a check of every object.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import config as configmod
from ganeti.core import config_instances
from ganeti.core.configdraft import NAMED, Delta
from ganeti.core.objects import ConfigData


def _names(old: ConfigData, new: ConfigData, delta: Delta, problems: list[str]) -> None:
    for cname, objs in delta.changed.items():
        for key, obj in objs.items():
            if getattr(obj, "uuid", None) != key:
                problems.append(f"{cname}/{key}: key differs from the object's uuid "
                                f"{getattr(obj, 'uuid', None)!r}")
        if cname not in NAMED:
            continue
        index = old.name_index(cname)
        container: dict[str, Any] = getattr(new, cname)
        seen: dict[str, str] = {}
        for key, obj in objs.items():
            holder = seen.get(obj.name)
            if holder is None:
                holder = index.get(obj.name)
                if holder == key or holder not in container or \
                        container[holder].name != obj.name:
                    holder = None
            if holder is not None:
                problems.append(f"{cname}: name {obj.name!r} used by {holder} and {key}")
            seen[obj.name] = key


def _nodes_and_groups(old: ConfigData, new: ConfigData, delta: Delta,
                      problems: list[str]) -> None:
    nodes = set(delta.changed.get("nodes", ()))
    groups = set(delta.changed.get("nodegroups", ()))
    for node in delta.old.get("nodes", {}).values():
        groups.add(node.group)  # the group it left (or was deleted from)
    for key in nodes:
        groups.add(new.nodes[key].group)
    for group in delta.old.get("nodegroups", {}).values():
        nodes.update(group.members)  # members it dropped must now be elsewhere
    if delta.deleted.get("nodegroups"):
        gone = set(delta.deleted["nodegroups"])
        nodes.update(u for u, n in new.nodes.items() if n.group in gone)
        if not new.nodegroups:
            problems.append("nodegroups: the cluster has no node group")
    for key in sorted(nodes):
        if key in new.nodes:
            configmod.check_node(new, key, problems)
    for key in sorted(groups):
        if key in new.nodegroups:
            configmod.check_group(new, key, problems)


def _referrers(new: ConfigData, delta: Delta) -> tuple[set[str], set[str], set[str]]:
    """Instances, disks and networks to check besides the changed ones."""
    instances = set(delta.changed.get("instances", ()))
    disks = set(delta.changed.get("disks", ()))
    networks = set(delta.changed.get("networks", ()))
    for inst in delta.old.get("instances", {}).values():
        disks.update(inst.disks)  # disks it let go of
    for key in instances:
        disks.update(new.instances[key].disks)
    gone_nodes = set(delta.deleted.get("nodes", ()))
    if gone_nodes:
        instances.update(k for k, i in new.instances.items()
                         if i.primary_node in gone_nodes
                         or gone_nodes.intersection(i.secondary_nodes or ()))
        disks.update(k for k, d in new.disks.items() if gone_nodes.intersection(d.nodes))
    gone_disks = set(delta.deleted.get("disks", ()))
    if gone_disks:
        instances.update(k for k, i in new.instances.items()
                         if gone_disks.intersection(i.disks))
    gone_networks = set(delta.deleted.get("networks", ()))
    if gone_networks:
        instances.update(k for k, i in new.instances.items()
                         if any(n.network in gone_networks for n in i.nics))
    return ({k for k in instances if k in new.instances}, {k for k in disks if k in new.disks},
            {k for k in networks if k in new.networks})


def touches_unique_values(delta: Delta) -> bool:
    """Whether ``delta`` may change values that must be unique across instances
    (MACs, ports, DRBD minors, IPs, disk owners)."""
    return bool(delta.touched("instances") or delta.touched("disks")
                or delta.touched("networks") or delta.deleted.get("nodes"))


def verify_delta(old: ConfigData, new: ConfigData, delta: Delta,
                 unique: config_instances.UniqueIndex | None = None) -> list[str]:
    """The problems of ``new`` that the change ``delta`` (from ``old``) can have caused.

    ``unique``: the index of ``old``'s unique values; the changed objects are
    compared with every other object through it, and when there is no problem
    it is updated to ``new`` (undo with its ``mark``/``rollback``).  Without it
    a clash is found only among the objects the change touched.
    """
    problems: list[str] = []
    _names(old, new, delta, problems)
    configmod.check_cluster(new, problems)
    if delta.touched("nodes") or delta.touched("nodegroups"):
        _nodes_and_groups(old, new, delta, problems)
    staged = None
    if touches_unique_values(delta) or (unique is not None and delta.cluster):
        instances, disks, networks = _referrers(new, delta)
        if unique is not None:
            # a disk's DRBD port counts as its instance's: check the owners again
            for disk in delta.changed.get("disks", ()):
                instances.update(u for kind, u in unique.users("disk_owner", disk)
                                 if u in new.instances)
        staged = config_instances.check(
            new, problems, instances=sorted(instances), disks=sorted(disks),
            networks=sorted(networks), unique=unique,
            gone_instances=delta.deleted.get("instances", ()),
            gone_disks=delta.deleted.get("disks", ()))
    for key, rule in delta.changed.get("filters", {}).items():
        configmod.check_filter(key, rule, problems)
    if unique is not None and staged is not None and not problems:
        unique.replace(*staged)
    return problems
