"""The text of ``config.data``, kept by parts so that a change re-serialises only itself.

:class:`TextState` holds, for one config version, the JSON fragment of the
cluster object and of every object of every container, each container's
assembled text once it has been needed, and the small top-level object
(``version``, ``serial_no``, times) with markers where the parts go.
:meth:`TextState.derive` makes the next version's state from a change's
:class:`~ganeti.core.configdraft.Delta` in time proportional to the change;
containers the change did not touch are shared, with their assembled text.
:meth:`TextState.render` gives exactly the bytes :func:`ganeti.core.config.dump`
gives for the same config (sorted keys, compact separators); it is O(config)
in the worst case and is called from a thread pool.

:func:`split` parses ``config.data`` and keeps the text of each object as
read, so that a config loaded at start-up has its fragments without being
serialised again.  Only text this software wrote (canonical) can be reused
this way; :func:`load_state` samples the fragments and falls back to
serialising every object when the file was written differently.

A change's record (what the journal keeps and what candidates receive) is
:func:`record`: the serial it applies on and the one it makes, the new top
object, and the fragments of the changed objects and the keys of deleted
ones.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from ganeti.core import configdraft
from ganeti.core.configdraft import CONTAINERS, Delta
from ganeti.core.errors import ConfigurationError
from ganeti.core.objects import (
    Cluster,
    ConfigData,
    ConfigObject,
    Disk,
    FilterRule,
    Instance,
    Network,
    Node,
    NodeGroup,
)

_CLASSES: dict[str, type[ConfigObject]] = {
    "nodes": Node, "nodegroups": NodeGroup, "instances": Instance, "networks": Network,
    "disks": Disk, "filters": FilterRule}
_TOP_FIELDS = ("version", "serial_no", "ctime", "mtime")

_PARTS = ("cluster", *CONTAINERS)
_MARK = "\x00frag:{}\x00"
_MARK_RE = re.compile(r'"\\u0000frag:(\w+)\\u0000"')
_WS = re.compile(r"[ \t\n\r]*")
_ENC = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Canonical JSON (as :func:`ganeti.core.serializer.dump_json`)."""
    return _ENC.encode(value)


def fragment(obj: Any) -> str:
    """The canonical JSON text of one config object."""
    return _ENC.encode(obj.to_dict())


def top_template(cfg: ConfigData) -> str:
    """The top-level object's text with a marker for the cluster and each container."""
    skeleton = object.__new__(ConfigData)
    skeleton.__dict__.update((k, v) for k, v in cfg.__dict__.items()
                             if not k.startswith("_cache"))
    absent: frozenset[str] = cfg.__dict__.get("_absent", frozenset())
    for name in _PARTS:
        if name in absent and not getattr(cfg, name):
            continue  # left out of the file and still empty: stays out, as to_dict does
        setattr(skeleton, name, _MARK.format(name))
    return _ENC.encode(skeleton.to_dict())


class ContainerText:
    """The fragments of one container (by key) and, once rendered, its text."""

    __slots__ = ("frags", "text")

    def __init__(self, frags: dict[str, str], text: str | None = None) -> None:
        self.frags = frags
        self.text = text

    def render(self) -> str:
        """The container's JSON object text (cached)."""
        text = self.text
        if text is None:
            frags = self.frags
            enc = _ENC.encode
            text = "{" + ",".join([f"{enc(k)}:{frags[k]}" for k in sorted(frags)]) + "}"
            self.text = text
        return text


class TextState:
    """The text of one config version, by parts (see the module docstring)."""

    def __init__(self, serial: int, top: str, cluster: str,
                 containers: dict[str, ContainerText]) -> None:
        self.serial = serial
        self.top = top
        self.cluster = cluster
        self.containers = containers

    @classmethod
    def from_config(cls, cfg: ConfigData) -> TextState:
        """Serialise every object (O(config); for small configs and foreign files)."""
        return cls(cfg.serial_no, top_template(cfg), fragment(cfg.cluster),
                   {c: ContainerText({k: fragment(o) for k, o in getattr(cfg, c).items()})
                    for c in CONTAINERS})

    def derive(self, cfg: ConfigData, delta: Delta) -> TextState:
        """The state of ``cfg``, made from this one by ``delta`` (O(change))."""
        containers = dict(self.containers)
        for cname in CONTAINERS:
            changed = delta.changed.get(cname, {})
            deleted = delta.deleted.get(cname, ())
            if not changed and not deleted:
                continue
            frags = dict(containers[cname].frags)
            for key, obj in changed.items():
                frags[key] = fragment(obj)
            for key in deleted:
                frags.pop(key, None)
            containers[cname] = ContainerText(frags)
        cluster = fragment(cfg.cluster) if delta.cluster else self.cluster
        return TextState(cfg.serial_no, top_template(cfg), cluster, containers)

    def render(self) -> str:
        """The whole ``config.data`` text (O(config) for changed containers; use a thread)."""
        pieces = _MARK_RE.split(self.top)
        for i in range(1, len(pieces), 2):
            name = pieces[i]
            pieces[i] = self.cluster if name == "cluster" else self.containers[name].render()
        return "".join(pieces)

    def record(self, base_serial: int, delta: Delta, roles: bool) -> str:
        """The journal/replication record of the change from ``base_serial`` to this state."""
        sets = {c: {k: self.containers[c].frags[k] for k in objs}
                for c, objs in delta.changed.items()}
        return dumps({"base": base_serial, "serial": self.serial, "top": self.top,
                      "cluster": self.cluster if delta.cluster else None,
                      "set": sets, "del": {c: list(k) for c, k in delta.deleted.items()},
                      "roles": roles})

    def apply_record(self, rec: dict[str, Any]) -> TextState:
        """The state a parsed record makes of this one (a node's copy; O(change))."""
        containers = dict(self.containers)
        for cname in set(rec["set"]) | set(rec["del"]):
            if cname not in containers:
                raise ConfigurationError(f"config record: unknown container {cname!r}")
            frags = dict(containers[cname].frags)
            frags.update(rec["set"].get(cname, {}))
            for key in rec["del"].get(cname, ()):
                frags.pop(key, None)
            containers[cname] = ContainerText(frags)
        cluster = rec["cluster"] if rec["cluster"] is not None else self.cluster
        return TextState(rec["serial"], rec["top"], cluster, containers)


def parse_record(text: str | bytes) -> dict[str, Any]:
    """Parse and shape-check a record (from the journal or the master)."""
    try:
        rec: dict[str, Any] = json.loads(text)
    except ValueError as err:
        raise ConfigurationError(f"config record: not JSON: {err}") from None
    ok = (isinstance(rec, dict) and isinstance(rec.get("base"), int)
          and isinstance(rec.get("serial"), int) and isinstance(rec.get("top"), str)
          and (rec.get("cluster") is None or isinstance(rec["cluster"], str))
          and isinstance(rec.get("set"), dict) and isinstance(rec.get("del"), dict)
          and all(isinstance(v, dict) and all(isinstance(f, str) for f in v.values())
                  for v in rec["set"].values())
          and all(isinstance(v, list) and all(isinstance(k, str) for k in v)
                  for v in rec["del"].values()))
    if not ok:
        raise ConfigurationError("config record: malformed")
    return rec


def split(text: str) -> tuple[dict[str, Any], str | None, dict[str, ContainerText]]:
    """Parse config text; also the cluster's and each container's text as read.

    Returns the parsed top-level object, the cluster object's text and the
    containers' fragments (with the container's whole text).  Raises
    ValueError for text that is not a JSON object.
    """
    decoder = json.JSONDecoder()
    scan = decoder.scan_once  # type: ignore[attr-defined]
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if text[pos:pos + 1] != "{":
        raise ValueError("config: the top level must be a JSON object")
    top: dict[str, Any] = {}
    cluster: str | None = None
    parts: dict[str, ContainerText] = {}

    def expect(pos: int, char: str) -> int:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos:pos + 1] != char:
            raise ValueError(f"config: expected {char!r} at offset {pos}")
        return _WS.match(text, pos + 1).end()  # type: ignore[union-attr]

    def value(pos: int) -> tuple[Any, int]:
        try:
            return scan(text, pos)  # type: ignore[no-any-return]
        except StopIteration:
            raise ValueError(f"config: expected a value at offset {pos}") from None

    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text[pos:pos + 1] == "}":
        pos += 1
    else:
        while True:
            if text[pos:pos + 1] != '"':
                raise ValueError(f"config: expected a key at offset {pos}")
            key, pos = scanstring(text, pos + 1)
            pos = expect(pos, ":")
            start = pos
            if key in CONTAINERS and text[pos:pos + 1] == "{":
                frags: dict[str, str] = {}
                values: dict[str, Any] = {}
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                if text[pos:pos + 1] == "}":
                    pos += 1
                else:
                    while True:
                        if text[pos:pos + 1] != '"':
                            raise ValueError(f"config: expected a key at offset {pos}")
                        member, pos = scanstring(text, pos + 1)
                        pos = expect(pos, ":")
                        vstart = pos
                        values[member], pos = value(pos)
                        frags[member] = text[vstart:pos]
                        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
                        if text[pos:pos + 1] == ",":
                            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                            continue
                        if text[pos:pos + 1] != "}":
                            raise ValueError(f"config: expected ',' or '}}' at offset {pos}")
                        pos += 1
                        break
                top[key] = values
                parts[key] = ContainerText(frags, text[start:pos])
            else:
                top[key], pos = value(pos)
                if key == "cluster":
                    cluster = text[start:pos]
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos:pos + 1] == ",":
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                continue
            if text[pos:pos + 1] != "}":
                raise ValueError(f"config: expected ',' or '}}' at offset {pos}")
            pos += 1
            break
    if _WS.match(text, pos).end() != len(text):  # type: ignore[union-attr]
        raise ValueError(f"config: extra data at offset {pos}")
    return top, cluster, parts


def state_from_split(cfg: ConfigData, cluster: str | None,
                     parts: dict[str, ContainerText]) -> TextState:
    """The text state of a config loaded by :func:`split`, reusing the text as read.

    The text read is reused only if a sample of it (the cluster and the
    first object of each container) is what this software writes and every
    container was present; otherwise every object is serialised again.
    """
    ok = cluster is not None and cluster == fragment(cfg.cluster)
    for cname in CONTAINERS:
        container: dict[str, Any] = getattr(cfg, cname)
        part = parts.get(cname)
        if part is None:
            ok = ok and not container
            parts[cname] = ContainerText({k: fragment(o) for k, o in container.items()})
            continue
        if part.text is not None and (" " in part.text[:64] or "\n" in part.text[:64]):
            ok = False
        for key, obj in container.items():
            ok = ok and part.frags.get(key) == fragment(obj)
            break
    if not ok:
        return TextState.from_config(cfg)
    assert cluster is not None
    state = TextState(cfg.serial_no, top_template(cfg), cluster, parts)
    return state


def _load_fragment(cls: type[ConfigObject], text: str, where: str) -> Any:
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ConfigurationError(f"{where}: not JSON: {err}") from None
    return cls.from_dict(data, where)


def replay(cfg: ConfigData, state: TextState | None, payloads: list[str], where: str
           ) -> tuple[ConfigData, TextState | None, int]:
    """Apply the journal records above ``cfg``'s serial; also to ``state`` if given.

    Returns the config, its text state and how many records were applied.
    Raises ConfigurationError if a record does not follow on the config.
    """
    applied = 0
    for payload in payloads:
        rec = parse_record(payload)
        if rec["serial"] <= cfg.serial_no:
            continue  # already in the checkpoint
        if rec["base"] != cfg.serial_no:
            raise ConfigurationError(
                f"{where}: a record makes serial {rec['serial']} from {rec['base']}, but "
                f"the config is at serial {cfg.serial_no}; changes are missing")
        changed = {}
        for cname, frags in rec["set"].items():
            cls = _CLASSES.get(cname)
            if cls is None:
                raise ConfigurationError(f"{where}: unknown container {cname!r}")
            changed[cname] = {k: _load_fragment(cls, f, f"{where}/{cname}/{k}")
                              for k, f in frags.items()}
        cluster = (None if rec["cluster"] is None
                   else _load_fragment(Cluster, rec["cluster"], f"{where}/cluster"))
        try:
            top_data = json.loads(rec["top"])
        except ValueError as err:
            raise ConfigurationError(f"{where}: top object is not JSON: {err}") from None
        top: dict[str, Any] = {k: top_data[k] for k in _TOP_FIELDS if k in top_data}
        top["extra"] = {k: v for k, v in top_data.items()
                        if k not in _TOP_FIELDS and k not in ("cluster", *CONTAINERS)}
        if top.get("serial_no") != rec["serial"]:
            raise ConfigurationError(f"{where}: record for serial {rec['serial']} "
                                     "carries another serial")
        cfg, _ = configdraft.apply(cfg, changed, rec["del"], cluster, top)
        if state is not None:
            state = state.apply_record(rec)
        applied += 1
    return cfg, state, applied
