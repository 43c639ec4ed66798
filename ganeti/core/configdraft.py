"""Copy-on-write drafts of a committed config.

A config change is a function that mutates what looks like a
:class:`~ganeti.core.objects.ConfigData`.  :class:`Draft` gives it one
whose parts are copied only when the change reaches them: the cluster
object when ``cfg.cluster`` is first read, a container's dict when it is
first read, and each object of a container when it is first taken out of it
(``cfg.nodes[u]``, ``.get``, ``.values()``, ``.items()``, ``.pop``...).
The committed config is never touched.

:func:`finish` turns a draft into the next committed config and a
:class:`Delta`: objects that were copied but compare equal to their
original are dropped (the original is kept), untouched containers and
objects are shared with the previous version, and changed containers get a
name index derived from the previous one.  Its cost follows the change: the
objects taken out, plus a C-level copy of each container that really
changed.

What a draft cannot see: ``dict(cfg.nodes)``, ``{**cfg.nodes}`` and
``cfg.nodes.copy()`` copy in C without going through the overridden
methods, so the objects they return are the committed ones; changes take
objects out through the usual accessors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import objplan
from ganeti.core.objects import ConfigData

CONTAINERS = ("nodes", "nodegroups", "instances", "networks", "disks", "filters")
NAMED = frozenset({"nodes", "nodegroups", "instances", "networks"})
_TOP = ("version", "serial_no", "ctime", "mtime")


class CowDict(dict[str, Any]):
    """A container of a draft: objects are copied the first time they are taken out."""

    def __init__(self, base: dict[str, Any]) -> None:
        super().__init__(base)
        self.base = base
        self.touched: dict[str, None] = {}  # keys whose value is private (ordered)
        self.removed: set[str] = set()

    def _take(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if key in self.touched:
            return value
        value = value.clone()
        dict.__setitem__(self, key, value)
        self.touched[key] = None
        return value

    def __getitem__(self, key: str) -> Any:
        return self._take(key)

    def get(self, key: str, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._take(key)
        return default

    def __setitem__(self, key: str, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self.touched[key] = None
        self.removed.discard(key)

    def __delitem__(self, key: str) -> None:
        dict.__delitem__(self, key)
        self.touched.pop(key, None)
        if key in self.base:
            self.removed.add(key)

    def pop(self, key: str, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self._take(key)
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, Any]:
        if not self:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self.keys()))
        return key, self.pop(key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._take(key)
        self[key] = default
        return default

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self._take(k) for k in list(dict.keys(self))]

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        return [(k, self._take(k)) for k in list(dict.keys(self))]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        for key in list(dict.keys(self)):
            del self[key]

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def __reduce__(self) -> Any:  # deepcopy/pickle see a plain dict of private copies
        return (dict, (self.copy(),))


class Draft(ConfigData):
    """A config under change; parts are copied from ``base`` on first access."""

    def __init__(self, base: ConfigData) -> None:  # not the dataclass __init__
        d = self.__dict__
        d["_draft_base"] = base
        for name in _TOP:
            d[name] = getattr(base, name)
        d["extra"] = objplan.clone_value(base.extra)
        if "_absent" in base.__dict__:
            d["_absent"] = base.__dict__["_absent"]

    def __getattr__(self, name: str) -> Any:
        # only called for attributes not set yet: the lazily copied parts
        base: ConfigData = self.__dict__["_draft_base"]
        if name in CONTAINERS:
            value: Any = CowDict(getattr(base, name))
        elif name == "cluster":
            value = base.cluster.clone()
        else:
            raise AttributeError(name)
        self.__dict__[name] = value
        return value

    def by_name(self, cname: str, name: str) -> Any:
        base: ConfigData = self.__dict__["_draft_base"]
        container = self.__dict__.get(cname)
        if container is None:
            found = base.by_name(cname, name)
            return None if found is None else getattr(self, cname)[found.uuid]
        if isinstance(container, CowDict):
            for key in container.touched:
                obj = dict.get(container, key)
                if obj is not None and obj.name == name:
                    return obj
            found = base.by_name(cname, name)
            if (found is None or found.uuid in container.touched
                    or not dict.__contains__(container, found.uuid)):
                return None
            return container[found.uuid]
        return next((o for o in container.values() if o.name == name), None)


@dataclass
class Delta:
    """What a change did: changed or added objects and deleted keys per container."""

    cluster: bool = False
    top: bool = False
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: dict[str, list[str]] = field(default_factory=dict)
    old: dict[str, dict[str, Any]] = field(default_factory=dict)  # replaced/deleted originals

    def __bool__(self) -> bool:
        return self.cluster or self.top or bool(self.changed) or bool(self.deleted)

    def touched(self, cname: str) -> bool:
        """Whether container ``cname`` changed."""
        return cname in self.changed or cname in self.deleted


def _container_delta(base: dict[str, Any], draft: dict[str, Any]
                     ) -> tuple[dict[str, Any], list[str]]:
    if isinstance(draft, CowDict) and draft.base is base:
        changed = {}
        for key in draft.touched:
            new = dict.__getitem__(draft, key)
            old = base.get(key)
            if old is None or (old is not new and old != new):
                changed[key] = new
        deleted = [key for key in draft.removed if not dict.__contains__(draft, key)]
        return changed, deleted
    # the change assigned a whole new container: compare everything (rare)
    changed = {k: v for k, v in dict.items(draft)
               if base.get(k) is None or (base[k] is not v and base[k] != v)}
    return changed, [k for k in base if k not in draft]


def finish(draft: Draft) -> tuple[ConfigData, Delta]:
    """The config the draft describes (sharing what did not change) and its delta."""
    base: ConfigData = draft.__dict__["_draft_base"]
    new = object.__new__(ConfigData)
    nd = new.__dict__
    nd.update((k, v) for k, v in base.__dict__.items() if not k.startswith("_cache"))
    delta = Delta()
    for name in _TOP:
        value = draft.__dict__[name]
        if value != nd[name]:
            nd[name] = value
            delta.top = True
    if draft.extra != base.extra:
        nd["extra"] = draft.extra
        delta.top = True
    cluster = draft.__dict__.get("cluster")
    if cluster is not None and cluster is not base.cluster and cluster != base.cluster:
        nd["cluster"] = cluster
        delta.cluster = True
    base_names = base.__dict__.get("_cache_names", {})
    for cname in CONTAINERS:
        if cname not in draft.__dict__:
            if cname in base_names:
                new.set_name_index(cname, base_names[cname][2])
            continue
        old_container: dict[str, Any] = getattr(base, cname)
        changed, deleted = _container_delta(old_container, draft.__dict__[cname])
        if not changed and not deleted:
            if cname in base_names:
                new.set_name_index(cname, base_names[cname][2])
            continue
        container = dict(old_container)
        container.update(changed)
        for key in deleted:
            del container[key]
        nd[cname] = container
        olds = {k: old_container[k] for k in [*changed, *deleted] if k in old_container}
        if changed:
            delta.changed[cname] = changed
        if deleted:
            delta.deleted[cname] = deleted
        if olds:
            delta.old[cname] = olds
        if cname in NAMED:
            new.set_name_index(cname, _derive_index(base.name_index(cname), olds, changed))
    return new, delta


def _derive_index(index: dict[str, str], olds: dict[str, Any],
                  changed: dict[str, Any]) -> dict[str, str]:
    # Names are unique in a committed config (verify refuses clashes), so
    # dropping the old names and adding the new ones gives the new index.
    derived = dict(index)
    for key, obj in olds.items():
        if derived.get(obj.name) == key:
            del derived[obj.name]
    for key, obj in changed.items():
        derived.setdefault(obj.name, key)
    return derived


def apply(base: ConfigData, changed: dict[str, dict[str, Any]],
          deleted: dict[str, Iterable[str]], cluster: Any = None,
          top: dict[str, Any] | None = None) -> tuple[ConfigData, Delta]:
    """Apply replacement objects (e.g. replayed from a journal) to ``base``.

    ``top``: new values of the top-level fields (``version``, ``serial_no``,
    ``ctime``, ``mtime``, ``extra``).
    """
    draft = Draft(base)
    if cluster is not None:
        draft.cluster = cluster
    for name, value in (top or {}).items():
        draft.__dict__[name] = value
    for cname, objs in changed.items():
        container = getattr(draft, cname)
        for key, obj in objs.items():
            container[key] = obj
    for cname, keys in deleted.items():
        container = getattr(draft, cname)
        for key in keys:
            if dict.__contains__(container, key):
                del container[key]
    return finish(draft)
