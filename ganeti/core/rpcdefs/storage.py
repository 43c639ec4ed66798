"""Storage-unit calls: list, modify and repair the storage units of a node
(Ganeti's ``storage_list``, ``storage_modify``, ``storage_execute``); served by
ganeti/noded/backend/storage.py.  ``su_args`` are the type's arguments (the
file storage directory for file types, none for LVM)."""

from __future__ import annotations

from typing import Any

from ganeti.core import storagetypes
from ganeti.core.rpcdefs.base import RPC_TMO_NORMAL, RpcArg, call


def _is_type(v: Any) -> bool:
    return v in storagetypes.STORAGE_TYPES


def _is_args(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= 4 and all(isinstance(x, str) for x in v)


def _is_opt_name(v: Any) -> bool:
    return v is None or (isinstance(v, str) and bool(v) and "\0" not in v)


def _is_name(v: Any) -> bool:
    return isinstance(v, str) and bool(v) and "\0" not in v


def _is_fields(v: Any) -> bool:
    return isinstance(v, list) and all(f in storagetypes.NODE_STORAGE_FIELDS for f in v)


def _is_changes(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) for k in v)


_TYPE = RpcArg("su_name", _is_type, "a storage type (" +
               ", ".join(sorted(storagetypes.STORAGE_TYPES)) + ")")
_ARGS = RpcArg("su_args", _is_args, "the storage type's arguments (a list of strings)")

CALLS = [
    call("storage_list", RPC_TMO_NORMAL,
         "The units of a storage type on the node: one row of the fields per unit.",
         _TYPE, _ARGS,
         RpcArg("name", _is_opt_name, "a unit name or null for all"),
         RpcArg("fields", _is_fields,
                "a list of " + ", ".join(storagetypes.NODE_STORAGE_FIELDS))),
    call("storage_modify", RPC_TMO_NORMAL,
         "Change fields of a storage unit (lvm-pv: allocatable).",
         _TYPE, _ARGS, RpcArg("name", _is_name, "a unit name"),
         RpcArg("changes", _is_changes, "an object of field -> value")),
    call("storage_execute", RPC_TMO_NORMAL,
         "Run an operation on a storage unit (lvm-vg: fix-consistency).",
         _TYPE, _ARGS, RpcArg("name", _is_name, "a unit name"),
         RpcArg("op", lambda v: isinstance(v, str), "an operation name")),
]
