"""Load, verify and dump ``config.data``.

``load`` parses and type-checks, refuses versions it does not know, and runs
``verify``; ``verify`` returns every consistency problem it finds so that an
administrator sees them all at once; ``dump`` gives the canonical text.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import ipaddress
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from ganeti.core import (
    config_instances,
    configjournal,
    configtext,
    constants,
    jobfilters,
    serializer,
)
from ganeti.core.errors import ConfigurationError, ConfigVersionMismatch, OpPrereqError
from ganeti.core.objects import ConfigData, ConfigObject, FilterRule

_CONTAINERS = ("nodes", "nodegroups", "instances", "networks", "disks", "filters")

_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (reference counting still frees).

    Loading a large config allocates hundreds of thousands of objects that all
    survive; each allocation burst would start a collection that walks them
    all again (half the load time of a 20,000-instance config).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _without_gc(func: Callable[_P, _R]) -> Callable[_P, _R]:
    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with gc_paused():
            return func(*args, **kwargs)
    return wrapper


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
    cfg = ConfigData.from_dict(data)
    for group in cfg.nodegroups.values():
        # Ganeti keeps group members in memory only; derive them as it does.
        if "members" in getattr(group, "_absent", ()):
            group.members = [n.uuid for n in cfg.nodes.values() if n.group == group.uuid]
    return cfg


@_without_gc
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


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except OSError as err:
        raise ConfigurationError(f"cannot read the cluster config {path}: "
                                 f"{err.strerror}") from err
    except UnicodeDecodeError as err:
        raise ConfigurationError(f"config: not valid JSON: {err}") from err


def _check(cfg: ConfigData) -> None:
    problems = verify(cfg)
    if problems:
        raise ConfigurationError("config is inconsistent:\n  " + "\n  ".join(problems))


@_without_gc
def load_file(path: str, check: bool = True) -> ConfigData:
    """Read and load a config file and the changes its journal holds (blocking)."""
    cfg = load(_read(path), check=False)
    payloads, _ = configjournal.read(configjournal.journal_path(path))
    if payloads:
        cfg, _, _ = configtext.replay(cfg, None, payloads, configjournal.journal_path(path))
    if check:
        _check(cfg)
    return cfg


@dataclass
class Loaded:
    """A config read for the master: the config, its text by parts, what recovery did."""

    config: ConfigData
    text: configtext.TextState
    replayed: int  # journal records applied on top of the checkpoint
    torn: bool  # a torn (never acknowledged) last journal record was skipped


@_without_gc
def load_with_text(path: str) -> Loaded:
    """Read, replay, verify ``config.data`` keeping its text by parts (blocking).

    Used by masterd at start-up: the text of a file this software wrote is
    kept as read (see :func:`ganeti.core.configtext.split`), so no object is
    serialised again.
    """
    text = _read(path)
    try:
        serializer.check_depth(text)
        top, cluster, parts = configtext.split(text)
    except ValueError as err:
        raise ConfigurationError(f"config: not valid JSON: {err}") from err
    cfg = parse(top)
    state = configtext.state_from_split(cfg, cluster, parts)
    jpath = configjournal.journal_path(path)
    payloads, torn = configjournal.read(jpath)
    replayed = 0
    if payloads:
        cfg, new_state, replayed = configtext.replay(cfg, state, payloads, jpath)
        assert new_state is not None
        state = new_state
    _check(cfg)
    return Loaded(cfg, state, replayed, torn)


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


def check_keys(cfg: ConfigData, problems: list[str]) -> None:
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


def check_cluster(cfg: ConfigData, problems: list[str]) -> None:
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


def check_node(cfg: ConfigData, uuid: str, problems: list[str],
               members: dict[str, set[str]] | None = None) -> None:
    """The problems of one node (``members``: group members as sets, if at hand)."""
    node = cfg.nodes[uuid]
    where = f"nodes/{uuid} ({node.name})"
    group = cfg.nodegroups.get(node.group)
    if group is None:
        problems.append(f"{where}: group {node.group!r} does not exist")
    elif uuid not in (members[node.group] if members is not None else group.members):
        problems.append(f"{where}: not listed in the members of its group")
    if not _valid_ip(node.primary_ip):
        problems.append(f"{where}: primary_ip {node.primary_ip!r} is not an IP address")
    if node.secondary_ip and not _valid_ip(node.secondary_ip):
        problems.append(f"{where}: secondary_ip {node.secondary_ip!r} is not an IP address")
    flags = [f for f in ("master_candidate", "offline", "drained") if getattr(node, f)]
    if len(flags) > 1:
        problems.append(f"{where}: flags {', '.join(flags)} are mutually exclusive")


def check_group(cfg: ConfigData, guuid: str, problems: list[str]) -> None:
    """The problems of one node group (its members included)."""
    grp = cfg.nodegroups[guuid]
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


def _check_nodes_and_groups(cfg: ConfigData, problems: list[str]) -> None:
    members: dict[str, set[str]] = {g: set(grp.members) for g, grp in cfg.nodegroups.items()}
    for uuid in cfg.nodes:
        check_node(cfg, uuid, problems, members)
    for guuid in cfg.nodegroups:
        check_group(cfg, guuid, problems)
    if not cfg.nodegroups:
        problems.append("nodegroups: the cluster has no node group")


def check_filter(key: str, rule: FilterRule, problems: list[str]) -> None:
    """The problems of one job filter rule."""
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


def _check_filters(cfg: ConfigData, problems: list[str]) -> None:
    for key, rule in cfg.filters.items():
        check_filter(key, rule, problems)


_OBJECT_FIELDS: dict[type, list[str]] = {}


def _object_fields(cls: type[ConfigObject]) -> list[str]:
    """The fields of ``cls`` whose values can hold config objects (cached)."""
    found = _OBJECT_FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)

        def holds(tp: Any) -> bool:
            if isinstance(tp, type) and issubclass(tp, ConfigObject):
                return True
            return any(holds(arg) for arg in typing.get_args(tp))
        found = _OBJECT_FIELDS[cls] = [n for n in cls.field_names() if holds(hints[n])]
    return found


def unknown_keys(obj: ConfigObject, where: str = "config") -> list[str]:
    """Paths of keys this software does not know (kept, but worth a warning)."""
    found = [f"{where}/{k}" for k in obj.extra]
    for name in _object_fields(type(obj)):
        value = getattr(obj, name)
        if isinstance(value, ConfigObject):
            found += unknown_keys(value, f"{where}/{name}")
        elif isinstance(value, (dict, list)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                if isinstance(v, ConfigObject) and (v.extra or _object_fields(type(v))):
                    found += unknown_keys(v, f"{where}/{name}/{k}")
    return found


def verify(cfg: ConfigData) -> list[str]:
    """All consistency problems of a config, as readable one-line messages."""
    problems: list[str] = []
    check_keys(cfg, problems)
    _check_unique_names(cfg, problems)
    check_cluster(cfg, problems)
    _check_nodes_and_groups(cfg, problems)
    config_instances.check(cfg, problems)
    _check_filters(cfg, problems)
    return problems

