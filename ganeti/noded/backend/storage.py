"""Storage-unit calls on the node: ``storage_list``, ``storage_modify``,
``storage_execute`` (the work is in :mod:`ganeti.noded.bdev.storage`)."""

from __future__ import annotations

from typing import Any

from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import storage
from ganeti.noded.bdev.base import BlockDeviceError


async def storage_list(ctx: NodeContext, su_name: str, su_args: list[str], name: str | None,
                       fields: list[str]) -> list[list[Any]]:
    """The units of a storage type: one row of the fields per unit."""
    try:
        return await storage.list_units(ctx, su_name, su_args, name, fields)
    except BlockDeviceError as err:
        raise RPCFail(str(err)) from None


async def storage_modify(ctx: NodeContext, su_name: str, su_args: list[str], name: str,
                         changes: dict[str, Any]) -> None:
    """Change fields of a storage unit."""
    try:
        await storage.modify(ctx, su_name, name, changes)
    except BlockDeviceError as err:
        raise RPCFail(str(err)) from None


async def storage_execute(ctx: NodeContext, su_name: str, su_args: list[str], name: str,
                          op: str) -> None:
    """Run an operation on a storage unit."""
    try:
        await storage.execute(ctx, su_name, name, op)
    except BlockDeviceError as err:
        raise RPCFail(str(err)) from None
