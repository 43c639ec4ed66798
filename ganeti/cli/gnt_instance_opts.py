"""Option values of gnt-instance, parsed as Ganeti's tools parse them.

``key=val,key=val`` values (``-B``, ``-O``, the parameters of ``--disk`` and
``--net``) follow Ganeti's rules: a backslash escapes a comma, a key without
a value is ``True`` (``no_KEY`` is ``False``, ``-KEY`` is ``None``), a key
given twice is a ``ParameterError``.  ``IDENT:key=val,...`` values (``-H``,
``--disk``, ``--net``) are ``(ident, dict)`` pairs.  Disk and NIC options of
``add`` become the opcode's lists by index; those of ``modify`` become
``[action, identifier, parameters]`` changes (the old ``add``/``remove``
forms act on the last item, as in Ganeti).  Sizes take units (``512M``,
``1G``, ``1.5T``; Ganeti's rounding up to 4 MiB).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.core.opcodes.table_instance import (
    DDM_ADD,
    DDM_ATTACH,
    DDM_DETACH,
    DDM_MODIFY,
    DDM_REMOVE,
    MAX_DISKS,
    MAX_NICS,
)
from ganeti.core.params_types import (
    BES_PARAMETER_COMPAT,
    HVS_PARAMETER_TYPES,
    VALUE_DEFAULT,
    VTYPE_INT,
    VTYPE_MAYBE_STRING,
    VTYPE_SIZE,
    VTYPE_STRING,
    UnitParseError,
    force_dict_type,
    parse_unit,
)

NO_PREFIX = "no_"
UN_PREFIX = "-"

#: The declared types of a NIC definition's keys (Ganeti's ``INIC_PARAMS_TYPES``).
INIC_PARAMS_TYPES: dict[str, str] = {
    "bridge": VTYPE_MAYBE_STRING, "ip": VTYPE_MAYBE_STRING, "link": VTYPE_STRING,
    "mac": VTYPE_STRING, "mode": VTYPE_STRING, "name": VTYPE_MAYBE_STRING,
    "network": VTYPE_MAYBE_STRING, "vlan": VTYPE_MAYBE_STRING,
}
IDISK_SIZE = "size"
IDISK_ADOPT = "adopt"
IDISK_SPINDLES = "spindles"
#: The declared types of a disk definition's typed keys (Ganeti's ``IDISK_PARAMS_TYPES``).
IDISK_TYPES = {IDISK_SIZE: VTYPE_SIZE, IDISK_SPINDLES: VTYPE_INT}
#: The hypervisor parameter whose list separator is a space on the command line.
HV_USB_DEVICES = "usb_devices"
_DDM_LEGACY = (DDM_ADD, DDM_ATTACH, DDM_REMOVE, DDM_DETACH)
_DDM_ALL = (*_DDM_LEGACY, DDM_MODIFY)
_MISSING: Any = object()


def unescape_and_split(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep``; ``\\,`` keeps a separator, ``\\x`` is ``x``."""
    pieces = text.split(sep)
    result: list[str] = []
    while pieces:
        piece = pieces.pop(0)
        trailing = len(piece) - len(piece.rstrip("\\"))
        if trailing % 2 == 1 and pieces:
            pieces[0] = piece[:-1] + sep + pieces[0]
            continue
        result.append(piece)
    return [re.sub(r"\\(.)", r"\1", piece) for piece in result]


def split_keyval(opt: str, data: str | None, parse_prefixes: bool = True) -> dict[str, Any]:
    """``key=val,...`` as a dict (Ganeti's rules, see the module docstring)."""
    result: dict[str, Any] = {}
    if not data:
        return result
    for elem in unescape_and_split(data):
        value: Any
        if "=" in elem:
            key, value = elem.split("=", 1)
        elif parse_prefixes:
            if elem.startswith(NO_PREFIX):
                key, value = elem[len(NO_PREFIX):], False
            elif elem.startswith(UN_PREFIX):
                key, value = elem[len(UN_PREFIX):], None
            else:
                key, value = elem, True
        else:
            raise errors.ParameterError(f"Missing value for key '{elem}' in option {opt}")
        if key in result:
            raise errors.ParameterError(f"Duplicate key '{key}' in option {opt}")
        result[key] = value
    return result


def split_ident_keyval(opt: str, value: str) -> tuple[str, Any]:
    """``ident:key=val,...`` as ``(ident, dict)``; ``no_ident`` is ``(ident, False)``
    and ``-ident`` ``(ident, None)`` (Ganeti's removal of a parameter group)."""
    ident, _, rest = value.partition(":")
    removal: Any = _MISSING
    if ident.startswith(NO_PREFIX):
        ident, removal = ident[len(NO_PREFIX):], False
    elif ident.startswith(UN_PREFIX) and not ident[len(UN_PREFIX):][:1].isdigit():
        ident, removal = ident[len(UN_PREFIX):], None
    if removal is not _MISSING:
        if rest:
            raise errors.ParameterError(
                f"Cannot pass options when removing parameter groups: {value}")
        return ident, removal
    return ident, split_keyval(opt, rest)


def unit_type(value: str) -> int:
    """An argparse type for size options (``-s``, ``-m``): MiB, units accepted."""
    try:
        return parse_unit(value)
    except UnitParseError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def fix_hvparams(hvparams: dict[str, Any]) -> None:
    """``usb_devices`` is space-separated on the command line, comma-separated
    in the config (Ganeti's FixHvParams)."""
    if isinstance(hvparams.get(HV_USB_DEVICES), str):
        hvparams[HV_USB_DEVICES] = hvparams[HV_USB_DEVICES].replace(" ", ",")


def typed_beparams(beparams: dict[str, Any], allow_default: bool = False) -> dict[str, Any]:
    """Backend parameters coerced to their types (``default`` kept if allowed)."""
    return force_dict_type(_lower_defaults(beparams, allow_default), BES_PARAMETER_COMPAT,
                           [VALUE_DEFAULT] if allow_default else [])


def typed_hvparams(hvparams: dict[str, Any], allow_default: bool = False) -> dict[str, Any]:
    """Hypervisor parameters coerced to their types, ``usb_devices`` fixed."""
    force_dict_type(_lower_defaults(hvparams, allow_default), HVS_PARAMETER_TYPES,
                    [VALUE_DEFAULT] if allow_default else [])
    fix_hvparams(hvparams)
    return hvparams


def _lower_defaults(values: dict[str, Any], allow_default: bool) -> dict[str, Any]:
    if allow_default:
        for key, value in values.items():
            if isinstance(value, str) and value.lower() == VALUE_DEFAULT:
                values[key] = VALUE_DEFAULT
    return values


def split_node_option(value: str | None) -> tuple[str | None, str | None]:
    """``-n pnode[:snode]`` as ``(pnode, snode)``."""
    if value and ":" in value:
        pnode, snode = value.split(":", 1)
        return pnode, snode
    return value, None


# --- add: disks and NICs by index ------------------------------------------------

def _indexed(values: Sequence[str], opt: str, what: str, label: str,
             limit: int) -> list[tuple[int, dict[str, Any]]]:
    """``N:key=val,...`` options as ``(N, params)`` pairs (Ganeti's messages);
    ``N`` must be below ``limit`` (Ganeti's maximal number of disks or NICs)."""
    pairs = [split_ident_keyval(opt, value) for value in values]
    try:
        indexed = [(int(ident), params) for ident, params in pairs]
    except ValueError as err:
        raise errors.OpPrereqError(f"Invalid {what} index passed: {err}",
                                   errors.ECODE_INVAL) from None
    for index, params in indexed:
        if not 0 <= index < limit:
            raise errors.OpPrereqError(f"Invalid {what} index passed: {index} (the "
                                       f"indices are 0 to {limit - 1})", errors.ECODE_INVAL)
        if not isinstance(params, dict):
            raise errors.OpPrereqError(f"Invalid {label}/{index} value: expected dict, got "
                                       f"{params}", errors.ECODE_INVAL)
    return indexed


def _by_index(pairs: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The parameters in a list by index; indices not given are ``{}``."""
    result: list[dict[str, Any]] = [{} for _ in range(max(i for i, _ in pairs) + 1)]
    for index, params in pairs:
        result[index] = params
    return result


def parse_nics(values: Sequence[str]) -> list[dict[str, Any]]:
    """``--net N:key=val,...`` options as the opcode's NIC list (gaps are ``{}``)."""
    pairs = _indexed(values, "--net", "NIC", "nic", MAX_NICS)
    for _, params in pairs:
        force_dict_type(params, INIC_PARAMS_TYPES)
    return _by_index(pairs)


def parse_create_disks(values: Sequence[str], os_size: int | None,
                       disk_template: str | None) -> list[dict[str, Any]]:
    """``--disk N:size=..,mode=..`` or ``-s SIZE`` as the opcode's disk list.

    As Ganeti's: diskless takes no disk options, the others need one; each
    disk has a size or an adopted device, not both.
    """
    if disk_template == c.DT_DISKLESS:
        if values or os_size is not None:
            raise errors.OpPrereqError("Diskless instance but disk information passed",
                                       errors.ECODE_INVAL)
        return []
    if not values and not os_size:
        raise errors.OpPrereqError("No disk information specified", errors.ECODE_INVAL)
    if values and os_size is not None:
        raise errors.OpPrereqError("Please use either the '--disk' or '-s' option",
                                   errors.ECODE_INVAL)
    if os_size is not None:
        return [{IDISK_SIZE: os_size}]
    pairs = _indexed(values, "--disk", "disk", "disk", MAX_DISKS)
    for index, params in pairs:
        if IDISK_SIZE in params:
            if IDISK_ADOPT in params:
                raise errors.OpPrereqError(f"Only one of 'size' and 'adopt' allowed "
                                           f"(disk {index})", errors.ECODE_INVAL)
            params[IDISK_SIZE] = _disk_size(params[IDISK_SIZE])
        elif IDISK_ADOPT in params:
            if IDISK_SPINDLES in params:
                raise errors.OpPrereqError("spindles is not a valid option when adopting "
                                           "a disk", errors.ECODE_INVAL)
            params[IDISK_SIZE] = 0
        else:
            raise errors.OpPrereqError(f"Missing size or adoption source for disk {index}",
                                       errors.ECODE_INVAL)
        if IDISK_SPINDLES in params:
            params[IDISK_SPINDLES] = _spindles(params[IDISK_SPINDLES], index)
    return _by_index(pairs)


def _disk_size(value: Any) -> int:
    # Ganeti's client lets the unit error through: "Unhandled Ganeti error: ..."
    try:
        return parse_unit(value)
    except UnitParseError as err:
        raise errors.GenericError(str(err)) from None


def _spindles(value: Any, index: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as err:
        raise errors.OpPrereqError(f"Invalid spindles for disk {index}: {err}",
                                   errors.ECODE_INVAL) from None


# --- modify: [action, identifier, parameters] changes ------------------------------

def parse_modifications(values: Sequence[str], opt: str) -> list[list[Any]]:
    """``--disk``/``--net`` options of ``modify`` as the opcode's change list.

    ``add:params`` and ``remove`` act on the last item (identifier -1);
    ``ID:add,params``, ``ID:remove`` and ``ID:params`` (a modification, also
    ``ID:modify,params``) act on the item of that index or name, which is
    sent as given, as Ganeti's client does.
    """
    result: list[list[Any]] = []
    for value in values:
        identifier, params = split_ident_keyval(opt, value)
        if not isinstance(params, dict):
            raise errors.OpPrereqError(f"Invalid {opt} value: expected parameters, got "
                                       f"{value!r}", errors.ECODE_INVAL)
        ident: Any = identifier
        if identifier in _DDM_LEGACY:
            action, ident = identifier, -1
        else:
            given = [a for a in _DDM_ALL if a in params]
            if len(given) > 1:
                raise errors.OpPrereqError(
                    "Cannot do more than one of the following operations at the same "
                    f"time: {', '.join(_DDM_ALL)}", errors.ECODE_INVAL)
            action = given[0] if given else DDM_MODIFY
            for name in given:
                del params[name]
        if action in (DDM_REMOVE, DDM_DETACH) and params:
            raise errors.OpPrereqError("Not accepting parameters on removal/detach",
                                       errors.ECODE_INVAL)
        result.append([action, ident, params])
    return result


def parse_disk_sizes(mods: list[list[Any]]) -> list[list[Any]]:
    """Sizes (with units) and spindles of disk changes as numbers; an added disk
    needs a size."""
    for action, ident, params in mods:
        if IDISK_SPINDLES in params:
            params[IDISK_SPINDLES] = _spindles(params[IDISK_SPINDLES], ident)
        if IDISK_SIZE in params:
            params[IDISK_SIZE] = _disk_size(params[IDISK_SIZE])
        elif action == DDM_ADD:
            raise errors.OpPrereqError("Missing required parameter 'size'",
                                       errors.ECODE_INVAL)
    return mods


def parse_recreate_disks(values: Sequence[str]) -> list[list[Any]]:
    """``recreate-disks --disk N[:size=..,spindles=..]`` as ``[index, params]`` pairs."""
    result: list[list[Any]] = []
    for index, params in _indexed(values, "--disk", "disk", "disk", MAX_DISKS):
        if IDISK_SIZE in params:
            params[IDISK_SIZE] = _disk_size(params[IDISK_SIZE])
        if IDISK_SPINDLES in params:
            params[IDISK_SPINDLES] = _spindles(params[IDISK_SPINDLES], index)
        result.append([index, params])
    return result
