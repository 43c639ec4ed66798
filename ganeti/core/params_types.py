"""Declared parameter types and Ganeti's coercion of parameter dicts.

Ganeti declares a type for every hypervisor, backend, NIC, node, disk and
instance-spec parameter (``constants.*_PARAMETER_TYPES``) and coerces the
values of a parameter dict in place before storing it (``ForceDictType``):
``"100"`` becomes ``100`` for an int, ``"1G"`` becomes ``1024`` for a size,
``"true"`` becomes ``True`` for a boolean.  A value that cannot be coerced,
or a key that is not declared, is refused with ``TypeEnforcementError``
(Ganeti's class; it carries no error code).  The messages are Ganeti's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ganeti.core import constants
from ganeti.core.errors import TypeEnforcementError

VTYPE_STRING = "string"
VTYPE_MAYBE_STRING = "maybe-string"
VTYPE_BOOL = "bool"
VTYPE_SIZE = "size"
VTYPE_INT = "int"
VTYPE_FLOAT = "float"
ENFORCEABLE_TYPES = frozenset({VTYPE_STRING, VTYPE_MAYBE_STRING, VTYPE_BOOL, VTYPE_SIZE,
                               VTYPE_INT, VTYPE_FLOAT})

#: The value that resets a parameter to its inherited default.
VALUE_DEFAULT = "default"
VALUE_TRUE = "true"
VALUE_FALSE = "false"

BES_PARAMETER_TYPES: dict[str, str] = {
    constants.BE_MAXMEM: VTYPE_SIZE,
    constants.BE_MINMEM: VTYPE_SIZE,
    constants.BE_VCPUS: VTYPE_INT,
    constants.BE_AUTO_BALANCE: VTYPE_BOOL,
    constants.BE_ALWAYS_FAILOVER: VTYPE_BOOL,
    constants.BE_SPINDLE_USE: VTYPE_INT,
}
#: ``memory`` is the pre-2.6 name of maxmem and minmem together.
BE_MEMORY = "memory"
BES_PARAMETER_COMPAT: dict[str, str] = {**BES_PARAMETER_TYPES, BE_MEMORY: VTYPE_SIZE}

NICS_PARAMETER_TYPES: dict[str, str] = {
    constants.NIC_MODE: VTYPE_STRING,
    constants.NIC_LINK: VTYPE_STRING,
    constants.NIC_VLAN: VTYPE_STRING,
}

NDS_PARAMETER_TYPES: dict[str, str] = {
    constants.ND_OOB_PROGRAM: VTYPE_STRING,
    constants.ND_SPINDLE_COUNT: VTYPE_INT,
    constants.ND_EXCLUSIVE_STORAGE: VTYPE_BOOL,
    constants.ND_OVS: VTYPE_BOOL,
    constants.ND_OVS_NAME: VTYPE_MAYBE_STRING,
    constants.ND_OVS_LINK: VTYPE_MAYBE_STRING,
    constants.ND_SSH_PORT: VTYPE_INT,
    constants.ND_CPU_SPEED: VTYPE_FLOAT,
}

#: One table for the parameters of every disk template (as Ganeti has it).
DISK_DT_TYPES: dict[str, str] = {
    "resync-rate": VTYPE_INT, "data-stripes": VTYPE_INT, "meta-stripes": VTYPE_INT,
    "disk-barriers": VTYPE_STRING, "meta-barriers": VTYPE_BOOL, "metavg": VTYPE_STRING,
    "disk-custom": VTYPE_STRING, "net-custom": VTYPE_STRING, "protocol": VTYPE_STRING,
    "dynamic-resync": VTYPE_BOOL, "c-plan-ahead": VTYPE_INT, "c-fill-target": VTYPE_INT,
    "c-delay-target": VTYPE_INT, "c-max-rate": VTYPE_INT, "c-min-rate": VTYPE_INT,
    "stripes": VTYPE_INT, "pool": VTYPE_STRING, "access": VTYPE_STRING,
    "host": VTYPE_STRING, "port": VTYPE_INT, "volume": VTYPE_STRING,
}

ISPECS_PARAMETER_TYPES: dict[str, str] = {name: VTYPE_INT
                                          for name in constants.ISPECS_PARAMETERS}

def _hv_type(name: str, default: object) -> str:
    """Ganeti's type of a hypervisor parameter: its default's (``root_path`` may be
    unset)."""
    if name == "root_path":
        return VTYPE_MAYBE_STRING
    if isinstance(default, bool):
        return VTYPE_BOOL
    if isinstance(default, int):
        return VTYPE_INT
    return VTYPE_STRING


#: The types of the hypervisor parameters of every hypervisor (Ganeti's types).
HVS_PARAMETER_TYPES: dict[str, str] = {
    name: _hv_type(name, value) for defaults in constants.HVC_DEFAULTS.values()
    for name, value in defaults.items()
}

_UNIT_RE = re.compile(r"^([.\d]+)\s*([a-zA-Z]+)?$")


class UnitParseError(ValueError):
    """A size that :func:`parse_unit` cannot read."""


def parse_unit(value: Any) -> int:
    """A size in MiB as Ganeti reads it: ``NUMBER [UNIT]``, rounded up to 4 MiB.

    Units are m/mb/mib (the default), g/gb/gib and t/tb/tib, any case.
    """
    m = _UNIT_RE.match(str(value))
    if not m:
        raise UnitParseError("Invalid format")
    try:
        number = float(m.group(1))
    except ValueError:
        raise UnitParseError("Invalid format") from None
    unit = (m.group(2) or "m").lower()
    if unit in ("m", "mb", "mib"):
        pass
    elif unit in ("g", "gb", "gib"):
        number *= 1024
    elif unit in ("t", "tb", "tib"):
        number *= 1024 * 1024
    else:
        raise UnitParseError(f"Unknown unit: {m.group(2)}")
    if math.isinf(number) or math.isnan(number):
        raise UnitParseError("Invalid format")
    size = math.ceil(number)
    return size + (-size) % 4


def _py_str(value: Any) -> str:
    """``value`` as Python 2/3 Ganeti's ``%s`` shows it in messages."""
    return str(value)


def force_dict_type(target: dict[str, Any], key_types: Mapping[str, str],
                    allowed_values: Iterable[Any] = ()) -> dict[str, Any]:
    """Coerce the values of ``target`` in place to ``key_types``; return it.

    Values in ``allowed_values`` are left as they are (Ganeti passes
    ``["default"]`` where a value may reset a parameter).
    """
    if not isinstance(target, dict):
        raise TypeEnforcementError(f"Expected dictionary, got '{_py_str(target)}'")
    allowed = list(allowed_values)
    for key in list(target):
        if key not in key_types:
            raise TypeEnforcementError(f"Unknown parameter '{key}'")
        value = target[key]
        if any(value == a and type(value) is type(a) for a in allowed):
            continue
        target[key] = _force(key, value, key_types[key])
    return target


def _force(key: str, value: Any, ktype: str) -> Any:
    shown = _py_str(value)
    if ktype in (VTYPE_STRING, VTYPE_MAYBE_STRING):
        if value is None and ktype == VTYPE_MAYBE_STRING:
            return None
        if isinstance(value, str):
            return value
        if value is False:
            return ""
        raise TypeEnforcementError(f"'{key}' (value {shown}) is not a valid string")
    if ktype == VTYPE_BOOL:
        if isinstance(value, str) and value:
            if value.lower() == VALUE_FALSE:
                return False
            if value.lower() == VALUE_TRUE:
                return True
            raise TypeEnforcementError(f"'{key}' (value {shown}) is not a valid boolean")
        return bool(value)
    if ktype == VTYPE_SIZE:
        try:
            return parse_unit(value)
        except UnitParseError as err:
            raise TypeEnforcementError(f"'{key}' (value {shown}) is not a valid size. "
                                       f"error: {err}") from None
    if ktype == VTYPE_INT:
        try:
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(value)
            return int(value)
        except (ValueError, TypeError):
            raise TypeEnforcementError(f"'{key}' (value {shown}) is not a valid integer"
                                       ) from None
    if ktype == VTYPE_FLOAT:
        try:
            return float(value)
        except (ValueError, TypeError):
            raise TypeEnforcementError(f"'{key}' (value {shown}) is not a valid float"
                                       ) from None
    raise TypeEnforcementError(f"'{key}' has non-enforceable type {ktype}")
