"""Load, verify and dump ``config.data``.

``load`` parses and type-checks, refuses versions it does not know, and runs
``verify``; ``verify`` returns every consistency problem it finds so that an
administrator sees them all at once; ``dump`` gives the canonical text.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ganeti.core import config_instances, constants, jobfilters, serializer
from ganeti.core.errors import ConfigurationError, ConfigVersionMismatch, OpPrereqError
from ganeti.core.objects import ConfigData, ConfigObject

_CONTAINERS = ("nodes", "nodegroups", "instances", "networks", "disks", "filters")


def parse(data: dict[str, Any]) -> ConfigData:
    """Build a :class:`ConfigData` from parsed JSON, checking version and types."""
    if not isinstance(data, dict):
        raise ConfigurationError("config: the top level must be a JSON object")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ConfigurationError(f"config: 'version' must be an integer, got {version!r}")
    if version not in constants.LOADABLE_CONFIG_VERSIONS:
        major, minor, rev = constants.split_version(version)
        known = ", ".join(str(v) for v in sorted(constants.LOADABLE_CONFIG_VERSIONS))
        raise ConfigVersionMismatch(
            f"config: version {version} (Ganeti {major}.{minor}.{rev}) is not supported; "
            f"this software reads versions {known}. Upgrade or downgrade the config "
            "with the matching Ganeti's cfgupgrade first.")
    return ConfigData.from_dict(data)


def load(text: str | bytes, check: bool = True) -> ConfigData:
    """Parse ``config.data`` text; with ``check``, refuse an inconsistent config."""
    try:
        data = serializer.load_json(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise ConfigurationError(f"config: not valid JSON: {err}") from err
    cfg = parse(data)
    if check:
        problems = verify(cfg)
        if problems:
            raise ConfigurationError("config is inconsistent:\n  " + "\n  ".join(problems))
    return cfg


def load_file(path: str, check: bool = True) -> ConfigData:
    """Read and load a config file (blocking)."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as err:
        raise ConfigurationError(f"cannot read the cluster config {path}: "
                                 f"{err.strerror}") from err
    return load(text, check)


def dump(cfg: ConfigData) -> str:
    """The canonical JSON text of a config."""
    return serializer.dump_json(cfg.to_dict())


def _valid_ip(value: str | None) -> bool:
    if not value:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _check_keys(cfg: ConfigData, problems: list[str]) -> None:
    for cname in _CONTAINERS:
        container: dict[str, Any] = getattr(cfg, cname)
        for key, obj in container.items():
            if getattr(obj, "uuid", None) != key:
                problems.append(f"{cname}/{key}: key differs from the object's uuid "
                                f"{getattr(obj, 'uuid', None)!r}")


def _check_unique_names(cfg: ConfigData, problems: list[str]) -> None:
    for cname in ("nodes", "nodegroups", "instances", "networks"):
        seen: dict[str, str] = {}
        for key, obj in getattr(cfg, cname).items():
            if obj.name in seen:
                problems.append(f"{cname}: name {obj.name!r} used by {seen[obj.name]} and {key}")
            seen[obj.name] = key


def _check_cluster(cfg: ConfigData, problems: list[str]) -> None:
    cl = cfg.cluster
    if cl.master_node not in cfg.nodes:
        problems.append(f"cluster: master_node {cl.master_node!r} is not a known node")
    elif not cfg.nodes[cl.master_node].master_candidate:
        problems.append(f"cluster: the master node {cfg.nodes[cl.master_node].name} "
                        "is not a master candidate")
    if not _valid_ip(cl.master_ip):
        problems.append(f"cluster: master_ip {cl.master_ip!r} is not an IP address")
    if cl.candidate_pool_size < 1:
        problems.append("cluster: candidate_pool_size must be at least 1")
    if cl.max_running_jobs < 1:
        problems.append("cluster: max_running_jobs must be at least 1")
    if cl.max_tracked_jobs < 1:
        problems.append("cluster: max_tracked_jobs must be at least 1")
    for hv in cl.enabled_hypervisors:
        if hv not in constants.HYPER_TYPES:
            problems.append(f"cluster: unknown enabled hypervisor {hv!r}")
    if not cl.enabled_hypervisors:
        problems.append("cluster: no hypervisor is enabled")
    for dt in cl.enabled_disk_templates:
        if dt not in constants.DISK_TEMPLATES:
            problems.append(f"cluster: unknown enabled disk template {dt!r}")
    for lo, hi in (r for r in cl.uid_pool if len(r) == 2):
        if not constants.UIDPOOL_UID_MIN <= lo <= hi <= constants.UIDPOOL_UID_MAX:
            problems.append(f"cluster: invalid uid_pool range {lo}-{hi}")
    if any(len(r) != 2 for r in cl.uid_pool):
        problems.append("cluster: uid_pool entries must be [low, high] pairs")


def _check_nodes_and_groups(cfg: ConfigData, problems: list[str]) -> None:
    members: dict[str, set[str]] = {g: set(grp.members) for g, grp in cfg.nodegroups.items()}
    for uuid, node in cfg.nodes.items():
        where = f"nodes/{uuid} ({node.name})"
        if node.group not in cfg.nodegroups:
            problems.append(f"{where}: group {node.group!r} does not exist")
        elif uuid not in members[node.group]:
            problems.append(f"{where}: not listed in the members of its group")
        if not _valid_ip(node.primary_ip):
            problems.append(f"{where}: primary_ip {node.primary_ip!r} is not an IP address")
        if node.secondary_ip and not _valid_ip(node.secondary_ip):
            problems.append(f"{where}: secondary_ip {node.secondary_ip!r} is not an IP address")
        flags = [f for f in ("master_candidate", "offline", "drained") if getattr(node, f)]
        if len(flags) > 1:
            problems.append(f"{where}: flags {', '.join(flags)} are mutually exclusive")
    for guuid, grp in cfg.nodegroups.items():
        for member in grp.members:
            member_node = cfg.nodes.get(member)
            if member_node is None:
                problems.append(f"nodegroups/{guuid} ({grp.name}): member {member!r} "
                                "is not a known node")
            elif member_node.group != guuid:
                problems.append(f"nodegroups/{guuid} ({grp.name}): member {member_node.name} "
                                "belongs to another group")
        if grp.alloc_policy not in constants.VALID_ALLOC_POLICIES:
            problems.append(f"nodegroups/{guuid} ({grp.name}): invalid alloc_policy "
                            f"{grp.alloc_policy!r}")
    if not cfg.nodegroups:
        problems.append("nodegroups: the cluster has no node group")


def _check_filters(cfg: ConfigData, problems: list[str]) -> None:
    for key, rule in cfg.filters.items():
        try:
            jobfilters.check_uuid(rule.uuid)
            jobfilters.check_priority(rule.priority)
            jobfilters.check_predicates(rule.predicates)
            jobfilters.check_action(rule.action)
            jobfilters.check_reason_trail(rule.reason_trail)
            if not isinstance(rule.watermark, int) or rule.watermark < 0:
                raise OpPrereqError(f"bad watermark {rule.watermark!r}")
        except OpPrereqError as err:
            problems.append(f"filter rule {key}: {err.args[0]}")


def unknown_keys(obj: ConfigObject, where: str = "config") -> list[str]:
    """Paths of keys this software does not know (kept, but worth a warning)."""
    found = [f"{where}/{k}" for k in obj.extra]
    for name in obj.field_names():
        value = getattr(obj, name)
        if isinstance(value, ConfigObject):
            found += unknown_keys(value, f"{where}/{name}")
        elif isinstance(value, (dict, list)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                if isinstance(v, ConfigObject):
                    found += unknown_keys(v, f"{where}/{name}/{k}")
    return found


def verify(cfg: ConfigData) -> list[str]:
    """All consistency problems of a config, as readable one-line messages."""
    problems: list[str] = []
    _check_keys(cfg, problems)
    _check_unique_names(cfg, problems)
    _check_cluster(cfg, problems)
    _check_nodes_and_groups(cfg, problems)
    config_instances.check(cfg, problems)
    _check_filters(cfg, problems)
    return problems

