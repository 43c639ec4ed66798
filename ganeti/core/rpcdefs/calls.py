"""The table of every node RPC call, built from the domain modules."""

from __future__ import annotations

from ganeti.core.rpcdefs import (
    cluster,
    disks,
    drbd,
    exports,
    files,
    hooks,
    instances,
    jobqueue,
    masterip,
    oob,
    storage,
    test,
    transfer,
)
from ganeti.core.rpcdefs import os as osdefs
from ganeti.core.rpcdefs.base import RpcArgumentError, RpcCall

#: The domain modules, in the order their calls are listed.
DOMAINS = (cluster, files, jobqueue, instances, osdefs, disks, drbd, storage, hooks, oob, test,
           exports, masterip, transfer)


def build_table(*call_lists: list[RpcCall]) -> dict[str, RpcCall]:
    """One table from declaration lists; a name declared twice is an error."""
    table: dict[str, RpcCall] = {}
    for calls in call_lists:
        for c in calls:
            if c.name in table:
                raise ValueError(f"RPC call {c.name!r} declared twice")
            table[c.name] = c
    return table


CALLS: dict[str, RpcCall] = build_table(*(d.CALLS for d in DOMAINS))


def get_call(name: str) -> RpcCall:
    """The declaration of ``name``; RpcArgumentError if there is none."""
    try:
        return CALLS[name]
    except KeyError:
        raise RpcArgumentError(f"unknown RPC call {name!r}") from None
