"""Configuration objects in the shape of Ganeti 3.x ``config.data``.

Each object is a keyword-only dataclass whose field names are the JSON keys.
``from_dict`` checks every known key against its annotated type and names the
offending path in its error; unknown keys are kept (so a newer Ganeti's
config round-trips) and listed by :func:`ganeti.core.config.unknown_keys`
(masterd logs them at startup).
``to_dict`` omits fields whose value is None, as Ganeti does.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ganeti.core import constants, objplan
from ganeti.core.errors import ECODE_INVAL, ECODE_NOENT, ConfigurationError, OpPrereqError

T = TypeVar("T", bound="ConfigObject")

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = hints
    return hints


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _convert(value: Any, tp: Any, where: str) -> Any:
    """Check ``value`` against the annotation ``tp``; build nested objects."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option, where)
            except ConfigurationError as err:
                errors.append(str(err))
        raise ConfigurationError(errors[0] if len(errors) == 1 else
                                 f"{where}: unexpected value {value!r}")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigurationError(f"{where}: expected a list, got {type(value).__name__}")
        (item_tp,) = typing.get_args(tp) or (Any,)
        return [_convert(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigurationError(f"{where}: expected an object, got {type(value).__name__}")
        key_tp, val_tp = typing.get_args(tp) or (str, Any)
        return {k: _convert(v, val_tp, f"{where}/{k}") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, ConfigObject):
        if not isinstance(value, dict):
            raise ConfigurationError(f"{where}: expected an object, got {type(value).__name__}")
        return tp.from_dict(value, where)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is bool or tp is str:
        if isinstance(value, tp):
            return value
    else:  # pragma: no cover - a declaration error, caught by the unit tests
        raise TypeError(f"unsupported annotation {tp!r} at {where}")
    raise ConfigurationError(f"{where}: expected {_type_name(tp)}, got {value!r}")


_DEFAULTS: dict[type, dict[str, Any]] = {}


def _field_defaults(cls: type) -> dict[str, Any]:
    """Default value of each optional field of a config class (cached)."""
    found = _DEFAULTS.get(cls)
    if found is None:
        found = {}
        for f in dataclasses.fields(cls):
            if f.name == "extra":
                continue
            if f.default is not dataclasses.MISSING:
                found[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                found[f.name] = f.default_factory()
        _DEFAULTS[cls] = found
    return found


@dataclass(frozen=True)
class _Plan:
    """What ``from_dict`` needs of a class, computed once."""

    hints: dict[str, Any]
    converters: dict[str, objplan.Converter]
    required: frozenset[str]
    optional: frozenset[str]
    build: Callable[[dict[str, Any]], Any]


_PLANS: dict[type, _Plan] = {}


def _is_required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _factory(f: dataclasses.Field[Any]) -> Callable[[], Any] | None:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory
    if f.default is not dataclasses.MISSING:
        default = f.default
        return lambda: default
    return None


def _plan(cls: type) -> _Plan:
    hints = _hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.name != "extra"]

    def is_object(tp: Any) -> bool:
        return isinstance(tp, type) and issubclass(tp, ConfigObject)

    plan = _Plan(hints={f.name: hints[f.name] for f in fields},
                 converters={f.name: objplan.compile_converter(hints[f.name], is_object)
                             for f in fields},
                 required=frozenset(f.name for f in fields if _is_required(f)),
                 optional=frozenset(_field_defaults(cls)),
                 build=objplan.compile_builder(
                     cls, [(f.name, hints[f.name], _is_required(f), _factory(f))
                           for f in fields], is_object))
    _PLANS[cls] = plan
    return plan


def _to_json(value: Any) -> Any:
    if isinstance(value, ConfigObject):
        return value.to_dict()
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    return value


@dataclass(kw_only=True)
class ConfigObject:
    """Base of all config objects: typed load, dump, unknown keys kept."""

    KIND: ClassVar[str] = "object"
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=True)

    @classmethod
    def field_names(cls) -> list[str]:
        """The JSON keys this class knows."""
        return [f.name for f in dataclasses.fields(cls) if f.name != "extra"]

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any], where: str = "") -> T:
        """Build an object from its JSON form, validating every known key."""
        where = where or cls.KIND
        if not isinstance(data, dict):
            raise ConfigurationError(f"{where}: expected an object, got {type(data).__name__}")
        plan = _PLANS.get(cls) or _plan(cls)
        try:
            built: T = plan.build(data)
            return built
        except (objplan.Slow, ConfigurationError):
            pass  # something unusual: the generic path below decides and words errors
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            convert = plan.converters.get(key)
            if convert is None:
                extra[key] = value
                continue
            try:
                kwargs[key] = convert(value)
            except (objplan.Slow, ConfigurationError):
                # the generic checker words the error with the full path
                kwargs[key] = _convert(value, plan.hints[key], f"{where}/{key}")
        if not plan.required <= kwargs.keys():
            missing = sorted(plan.required - kwargs.keys())
            raise ConfigurationError(f"{where}: missing required key(s) {', '.join(missing)}")
        obj = cls(**kwargs)
        obj.extra = extra
        absent = plan.optional - data.keys()
        if absent:
            # Keys the file left out stay out of the dump while they keep
            # their default, so a Ganeti config round-trips to the same JSON.
            object.__setattr__(obj, "_absent", frozenset(absent))
        return obj

    def clone(self: T) -> T:
        """An independent copy (containers copied, nested objects cloned), cheaply.

        Attributes outside the fields (``_absent``) are kept; caches are not.
        """
        new = object.__new__(type(self))
        d = new.__dict__
        for key, value in self.__dict__.items():
            if type(value) in objplan.ATOMS or key == "_absent":
                d[key] = value
            elif not key.startswith("_cache"):
                d[key] = objplan.clone_value(value)
        return new

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: known fields that are not None, then the unknown keys."""
        result: dict[str, Any] = {}
        absent: frozenset[str] = getattr(self, "_absent", frozenset())
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None or (f.name in absent
                                 and value == _field_defaults(type(self)).get(f.name)):
                continue
            result[f.name] = _to_json(value)
        for key, value in self.extra.items():
            result.setdefault(key, value)
        return result


@dataclass(kw_only=True)
class TaggableObject(ConfigObject):
    """An object with tags, a serial number and timestamps."""

    tags: list[str] = field(default_factory=list)
    serial_no: int = 1
    ctime: float = 0.0
    mtime: float = 0.0


@dataclass(kw_only=True)
class NIC(ConfigObject):
    """A network interface of an instance."""

    KIND: ClassVar[str] = "nic"
    uuid: str | None = None
    name: str | None = None
    mac: str | None = None
    ip: str | None = None
    network: str | None = None
    nicparams: dict[str, Any] = field(default_factory=dict)
    netinfo: dict[str, Any] | None = None
    pci: int | None = None


@dataclass(kw_only=True)
class Disk(ConfigObject):
    """A disk (top-level ``disks`` container; children nest)."""

    KIND: ClassVar[str] = "disk"
    uuid: str = ""  # child disks (in ``children``) have none in Ganeti's files
    name: str | None = None
    dev_type: str
    logical_id: list[Any] | None = None
    children: list[Disk] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    iv_name: str | None = None
    size: int = 0
    mode: str = "rw"
    params: dict[str, Any] = field(default_factory=dict)
    spindles: int | None = None
    pci: int | None = None
    dynamic_params: dict[str, Any] | None = None
    # Child disks carry no serial or timestamps in Ganeti's files.
    serial_no: int | None = None
    ctime: float | None = None
    mtime: float | None = None
    forthcoming: bool | None = None


@dataclass(kw_only=True)
class Instance(TaggableObject):
    """A virtual machine."""

    KIND: ClassVar[str] = "instance"
    uuid: str
    name: str
    primary_node: str
    secondary_nodes: list[str] | None = None
    os: str | None = None
    hypervisor: str
    hvparams: dict[str, Any] = field(default_factory=dict)
    beparams: dict[str, Any] = field(default_factory=dict)
    osparams: dict[str, Any] = field(default_factory=dict)
    osparams_private: dict[str, Any] = field(default_factory=dict)
    admin_state: str = constants.ADMINST_DOWN
    admin_state_source: str | None = None
    nics: list[NIC] = field(default_factory=list)
    disks: list[str] = field(default_factory=list)
    disks_info: str | None = None
    disk_template: str | None = None
    disks_active: bool = False
    network_port: int | None = None
    forthcoming: bool | None = None


@dataclass(kw_only=True)
class Node(TaggableObject):
    """A node of the cluster."""

    KIND: ClassVar[str] = "node"
    uuid: str
    name: str
    primary_ip: str
    secondary_ip: str | None = None
    master_candidate: bool = False
    offline: bool = False
    drained: bool = False
    group: str
    master_capable: bool = True
    vm_capable: bool = True
    ndparams: dict[str, Any] = field(default_factory=dict)
    powered: bool = True
    hv_state_static: dict[str, Any] | None = None
    disk_state_static: dict[str, Any] | None = None

    @property
    def role(self) -> str:
        """Role letter from the node's own flags (C, D, O or R).

        Whether a node is the master (M) is a cluster fact: use
        :meth:`ConfigData.node_role`.
        """
        if self.master_candidate:
            return constants.NR_MCANDIDATE
        if self.drained:
            return constants.NR_DRAINED
        if self.offline:
            return constants.NR_OFFLINE
        return constants.NR_REGULAR


@dataclass(kw_only=True)
class NodeGroup(TaggableObject):
    """A group of nodes sharing policies and parameters."""

    KIND: ClassVar[str] = "nodegroup"
    uuid: str
    name: str
    members: list[str] = field(default_factory=list)
    ndparams: dict[str, Any] = field(default_factory=dict)
    diskparams: dict[str, Any] = field(default_factory=dict)
    ipolicy: dict[str, Any] = field(default_factory=dict)
    alloc_policy: str = constants.ALLOC_POLICY_PREFERRED
    networks: dict[str, Any] = field(default_factory=dict)
    hv_state_static: dict[str, Any] = field(default_factory=dict)
    disk_state_static: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As the base; members derived at load (Ganeti's files omit them) stay out."""
        result = super().to_dict()
        if "members" in getattr(self, "_absent", ()):
            result.pop("members", None)
        return result


@dataclass(kw_only=True)
class Network(TaggableObject):
    """An IP network instances can be connected to."""

    KIND: ClassVar[str] = "network"
    uuid: str
    name: str
    network: str
    gateway: str | None = None
    network6: str | None = None
    gateway6: str | None = None
    mac_prefix: str | None = None
    reservations: str | None = None
    ext_reservations: str | None = None


@dataclass(kw_only=True)
class FilterRule(ConfigObject):
    """A job-queue filter rule (docs/filters.md)."""

    KIND: ClassVar[str] = "filter"
    uuid: str
    watermark: int
    priority: int = 0
    predicates: list[Any] = field(default_factory=list)
    action: Any = "CONTINUE"
    reason_trail: list[Any] = field(default_factory=list)
    serial_no: int | None = None


@dataclass(kw_only=True)
class Cluster(TaggableObject):
    """Cluster-wide parameters and the defaults instances inherit."""

    KIND: ClassVar[str] = "cluster"
    uuid: str
    cluster_name: str
    master_node: str
    master_ip: str
    master_netdev: str = constants.DEFAULT_MASTER_NETDEV
    master_netmask: int = 32
    use_external_mip_script: bool = False
    # Ganeti's daemons refuse a config without rsahostkeypub (it may be empty).
    rsahostkeypub: str = ""
    dsahostkeypub: str | None = None
    highest_used_port: int = 0
    tcpudp_port_pool: list[int] = field(default_factory=list)
    mac_prefix: str = constants.DEFAULT_MAC_PREFIX
    volume_group_name: str | None = None
    reserved_lvs: list[str] = field(default_factory=list)
    drbd_usermode_helper: str | None = None
    file_storage_dir: str = ""
    shared_file_storage_dir: str = ""
    gluster_storage_dir: str = ""
    enabled_hypervisors: list[str] = field(default_factory=list)
    hvparams: dict[str, dict[str, Any]] = field(default_factory=dict)
    os_hvp: dict[str, dict[str, Any]] = field(default_factory=dict)
    beparams: dict[str, dict[str, Any]] = field(default_factory=dict)
    osparams: dict[str, dict[str, Any]] = field(default_factory=dict)
    osparams_private_cluster: dict[str, Any] = field(default_factory=dict)
    nicparams: dict[str, dict[str, Any]] = field(default_factory=dict)
    ndparams: dict[str, Any] = field(default_factory=dict)
    diskparams: dict[str, dict[str, Any]] = field(default_factory=dict)
    ipolicy: dict[str, Any] = field(default_factory=dict)
    candidate_pool_size: int = constants.DEFAULT_CANDIDATE_POOL_SIZE
    modify_etc_hosts: bool = True
    modify_ssh_setup: bool = False
    maintain_node_health: bool = False
    uid_pool: list[list[int]] = field(default_factory=list)
    default_iallocator: str = ""
    default_iallocator_params: dict[str, Any] = field(default_factory=dict)
    hidden_os: list[str] = field(default_factory=list)
    blacklisted_os: list[str] = field(default_factory=list)
    primary_ip_family: int = 2
    prealloc_wipe_disks: bool = False
    hv_state_static: dict[str, Any] = field(default_factory=dict)
    disk_state_static: dict[str, Any] = field(default_factory=dict)
    enabled_disk_templates: list[str] = field(default_factory=list)
    candidate_certs: dict[str, str] = field(default_factory=dict)
    max_running_jobs: int = constants.DEFAULT_MAX_RUNNING_JOBS
    max_tracked_jobs: int = constants.DEFAULT_MAX_TRACKED_JOBS
    install_image: str = ""
    instance_communication_network: str = ""
    zeroing_image: str = ""
    compression_tools: list[str] = field(default_factory=lambda: ["gzip", "gzip-fast",
                                                                  "gzip-slow"])
    enabled_user_shutdown: bool = False
    data_collectors: dict[str, dict[str, Any]] = field(default_factory=dict)
    ssh_key_type: str = "rsa"
    ssh_key_bits: int = 2048


@dataclass(kw_only=True)
class ConfigData(ConfigObject):
    """The whole ``config.data``: version, cluster and the containers keyed by UUID."""

    KIND: ClassVar[str] = "config"
    version: int
    cluster: Cluster
    nodes: dict[str, Node] = field(default_factory=dict)
    nodegroups: dict[str, NodeGroup] = field(default_factory=dict)
    instances: dict[str, Instance] = field(default_factory=dict)
    networks: dict[str, Network] = field(default_factory=dict)
    disks: dict[str, Disk] = field(default_factory=dict)
    filters: dict[str, FilterRule] = field(default_factory=dict)
    serial_no: int = 1
    ctime: float = 0.0
    mtime: float = 0.0

    # Name look-ups go through an index per container, built on first use and
    # kept with the container it describes: committed configs are never changed
    # in place (the config writer derives each new version's index from the
    # previous one), so an index stays valid as long as its container is the
    # same object with the same length.
    def name_index(self, cname: str) -> dict[str, str]:
        """Name -> UUID of the objects of container ``cname`` (do not change it)."""
        container: dict[str, Any] = getattr(self, cname)
        cache: dict[str, tuple[Any, int, dict[str, str]]] | None = \
            self.__dict__.get("_cache_names")
        if cache is None:
            cache = self.__dict__["_cache_names"] = {}
        entry = cache.get(cname)
        if entry is None or entry[0] is not container or entry[1] != len(container):
            index: dict[str, str] = {}
            for uuid, obj in dict.items(container):
                index.setdefault(obj.name, uuid)
            entry = cache[cname] = (container, len(container), index)
        return entry[2]

    def set_name_index(self, cname: str, index: dict[str, str]) -> None:
        """Install an index the caller derived for container ``cname`` (the writer)."""
        container = getattr(self, cname)
        cache = self.__dict__.setdefault("_cache_names", {})
        cache[cname] = (container, len(container), index)

    def view(self, **containers: dict[str, Any]) -> ConfigData:
        """A shallow copy with some containers replaced (``disks={...}``): what the
        config would be with those objects, for a node call or an allocator's input,
        without changing this one.  The copy builds its own name indexes."""
        new = copy.copy(self)
        new.__dict__.pop("_cache_names", None)
        for cname, container in containers.items():
            setattr(new, cname, container)
        return new

    def by_name(self, cname: str, name: str) -> Any:
        """The object of container ``cname`` called ``name``, or None."""
        uuid = self.name_index(cname).get(name)
        if uuid is None:
            return None
        obj = getattr(self, cname).get(uuid)
        if obj is None or obj.name != name:  # changed in place against the rules
            self.__dict__.pop("_cache_names", None)
            return next((o for o in getattr(self, cname).values() if o.name == name), None)
        return obj

    def node_by_name(self, name: str) -> Node | None:
        """The node called ``name``, or None."""
        found: Node | None = self.by_name("nodes", name)
        return found

    def group_by_name(self, name: str) -> NodeGroup | None:
        """The node group called ``name``, or None."""
        found: NodeGroup | None = self.by_name("nodegroups", name)
        return found

    def instance_by_name(self, name: str) -> Instance | None:
        """The instance called ``name``, or None."""
        found: Instance | None = self.by_name("instances", name)
        return found

    def network_by_name(self, name: str) -> Network | None:
        """The network called ``name``, or None."""
        found: Network | None = self.by_name("networks", name)
        return found

    def tagged_object(self, kind: str, name: str | None) -> TaggableObject:
        """The object tags of ``kind``/``name`` belong to (OpPrereqError if none).

        The error wording is luxid's, so scripts matching on it keep working.
        """
        if kind == constants.TAG_CLUSTER:
            return self.cluster
        lookups: dict[str, tuple[Callable[[str], TaggableObject | None], str]] = {
            constants.TAG_NODE: (self.node_by_name, "Node"),
            constants.TAG_NODEGROUP: (self.group_by_name, "NodeGroup"),
            constants.TAG_INSTANCE: (self.instance_by_name, "Instance"),
            constants.TAG_NETWORK: (self.network_by_name, "Network"),
        }
        if kind not in lookups:
            valid = ", ".join(sorted(constants.VALID_TAG_TYPES))
            raise OpPrereqError(f"Invalid tag kind {kind!r} (valid: {valid})", ECODE_INVAL)
        lookup, label = lookups[kind]
        obj = lookup(name or "")
        if obj is None and name:
            # nodes and groups are also addressed by UUID, nodes by a unique short name
            if kind == constants.TAG_NODE:
                short = [n for n in self.nodes.values() if n.name.split(".")[0] == name]
                obj = self.nodes.get(name) or (short[0] if len(short) == 1 else None)
            elif kind == constants.TAG_NODEGROUP:
                obj = self.nodegroups.get(name)
        if obj is None:
            raise OpPrereqError(f"{label} name {name or ''} not found", ECODE_NOENT)
        return obj

    @property
    def master(self) -> Node:
        """The master node (verify guarantees it exists)."""
        return self.nodes[self.cluster.master_node]

    def node_role(self, node: Node) -> str:
        """Role letter of a node: M, C, D, O or R."""
        if node.uuid == self.cluster.master_node:
            return constants.NR_MASTER
        return node.role
