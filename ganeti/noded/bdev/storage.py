"""Storage units on the node: list, modify and repair (Ganeti's storage containers).

``file``/``sharedfile``: the units are the storage directories given as the
type's arguments (name, size and free space of their file system, the space
their contents use; always allocatable).  ``lvm-pv``: physical volumes
(``pvs``; allocatable from the attributes, changed with ``pvchange``).
``lvm-vg``: volume groups (``vgs``; repaired with ``vgreduce --removemissing``).
Rows hold the requested fields in the requested order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ganeti.core import storagetypes as st
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev import files, lvm
from ganeti.noded.bdev.base import BlockDeviceError


def _size(value: Any) -> int:
    return int(round(lvm.mib(str(value))))


_PV_FIELDS: dict[str, tuple[list[str], Callable[..., Any]]] = {
    st.SF_NAME: (["pv_name"], str),
    st.SF_SIZE: (["pv_size"], _size),
    st.SF_USED: (["pv_used"], _size),
    st.SF_FREE: (["pv_free"], _size),
    st.SF_ALLOCATABLE: (["pv_attr"], lambda attr: str(attr)[:1] == "a"),
}
_VG_FIELDS: dict[str, tuple[list[str], Callable[..., Any]]] = {
    st.SF_NAME: (["vg_name"], str),
    st.SF_SIZE: (["vg_size"], _size),
    st.SF_FREE: (["vg_free"], _size),
    st.SF_USED: (["vg_size", "vg_free"], lambda size, free: _size(size) - _size(free)),
    st.SF_ALLOCATABLE: ([], lambda: True),
}


async def _lvm_list(ctx: NodeContext, command: str,
                    table: dict[str, tuple[list[str], Callable[..., Any]]],
                    name: str | None, fields: list[str]) -> list[list[Any]]:
    wanted: list[str] = []
    for f in fields:
        for lvm_field in table[f][0]:
            if lvm_field not in wanted:
                wanted.append(lvm_field)
    key = table[st.SF_NAME][0][0]
    if key not in wanted:
        wanted.append(key)
    names = [name] if name is not None else []
    rows = await lvm.report(ctx, command, wanted, *names)
    out = []
    for row in rows:
        out.append([table[f][1](*[row.get(k, "") for k in table[f][0]]) for f in fields])
    return out


def _file_list(ctx: NodeContext, dirs: list[str], name: str | None,
               fields: list[str]) -> list[list[Any]]:
    out = []
    for d in ([name] if name is not None else dirs):
        size, used, free = files.space(ctx.paths, d)
        values = {st.SF_NAME: d, st.SF_SIZE: size, st.SF_USED: used, st.SF_FREE: free,
                  st.SF_ALLOCATABLE: True}
        out.append([values[f] for f in fields])
    return out


def _check_fields(fields: list[str]) -> None:
    unknown = [f for f in fields if f not in st.NODE_STORAGE_FIELDS]
    if unknown:
        raise BlockDeviceError(f"Unknown field: {unknown[0]!r}")


async def list_units(ctx: NodeContext, su_name: str, su_args: list[str], name: str | None,
                     fields: list[str]) -> list[list[Any]]:
    """The units of ``su_name``: one row of ``fields`` each."""
    _check_fields(fields)
    if su_name in (st.ST_FILE, st.ST_SHARED_FILE):
        if name is not None and name not in su_args:
            raise BlockDeviceError(f"Unknown {su_name} storage unit '{name}'")
        rows: list[list[Any]] = await ctx.run(_file_list, ctx, su_args, name, fields)
        return rows
    if su_name == st.ST_LVM_PV:
        return await _lvm_list(ctx, "pvs", _PV_FIELDS, name, fields)
    if su_name == st.ST_LVM_VG:
        return await _lvm_list(ctx, "vgs", _VG_FIELDS, name, fields)
    raise BlockDeviceError(f"Unknown storage type: {su_name!r}")


async def modify(ctx: NodeContext, su_name: str, name: str, changes: dict[str, Any]) -> None:
    """Change fields of a unit: ``allocatable`` of a physical volume."""
    rest = dict(changes)
    if su_name == st.ST_LVM_PV and st.SF_ALLOCATABLE in rest:
        value = rest.pop(st.SF_ALLOCATABLE)
        if not isinstance(value, bool):
            raise BlockDeviceError(f"allocatable must be a boolean, not {value!r:.40}")
        out = await lvm.lvm(ctx, "pvchange", "--allocatable", "y" if value else "n", name)
        if not out.ok:
            raise BlockDeviceError(f"Failed to modify physical volume, pvchange output: "
                                   f"{out.output}")
    if rest:
        raise BlockDeviceError(f"Unable to modify the following fields: {sorted(rest)!r}")


async def execute(ctx: NodeContext, su_name: str, name: str, op: str) -> None:
    """Run an operation on a unit: ``fix-consistency`` of a volume group."""
    if su_name != st.ST_LVM_VG or op != st.SO_FIX_CONSISTENCY:
        raise BlockDeviceError(f"Operation '{op}' is not supported on storage type "
                               f"'{su_name}'")
    vg = lvm.check_name(name)
    first = await lvm.lvm(ctx, "vgreduce", "--removemissing", vg)
    output = first.output
    if ("Wrote out consistent volume group" not in output
            or "vgreduce --removemissing --force" in output):
        second = await lvm.lvm(ctx, "vgreduce", "--removemissing", "--force", vg)
        output += "\n" + second.output
    check = await lvm.lvm(ctx, "vgs", "--noheadings", "--nosuffix", vg)
    if not check.ok or "Couldn't find device with uuid" in check.output:
        raise BlockDeviceError(f"Volume group '{vg}' still not consistent, 'vgreduce' "
                               f"output: {output!r}, 'vgs' output: {check.output!r}")
