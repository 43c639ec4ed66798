"""Logical units: operating system definitions (diagnose, per-OS cluster parameters)
and ExtStorage providers (diagnose).

Each unit follows docs/design/lu-contract.md; :mod:`ganeti.master.lu.registry`
dispatches to the units listed in :data:`LUS`.  The per-OS cluster parameters
(``os_hvp``, ``osparams``, ``osparams_private_cluster``) are set by
OP_CLUSTER_SET_PARAMS (:mod:`ganeti.master.lu.cluster`), which checks the new
OS parameters on the master node with :func:`check_os_params`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes.views import OpExtStorageDiagnose, OpOsDiagnose
from ganeti.core.rpcdefs.os import OS_VALIDATE_PARAMETERS
from ganeti.master.config.nodes import target
from ganeti.master.lu.base import LogicalUnit, LUContext
from ganeti.master.query.osqueries import OsQueries, rpc_diagnose


class LUOsDiagnose(LogicalUnit):
    """OP_OS_DIAGNOSE: the OSes of the cluster as old-style rows (Ganeti's
    ``LUOsDiagnose``; hidden, blacklisted and invalid OSes are left out unless
    their field is asked for).  Takes no locks, as Ganeti's."""

    OP_ID = "OP_OS_DIAGNOSE"
    REQ_BGL = False
    op: OpOsDiagnose

    @property
    def uses_locks(self) -> bool:
        return False

    async def exec(self) -> Any:
        queries = OsQueries(lambda: self.ctx.config.config, rpc_diagnose(self.ctx.rpc))
        return await queries.diagnose(self.op.output_fields, self.op.names)


#: The fields of Ganeti's ExtStorage diagnose (its query resource "extstorage").
EXTSTORAGE_FIELDS = ("name", "node_status", "nodegroup_status", "parameters")


class LUExtStorageDiagnose(LogicalUnit):
    """OP_EXT_STORAGE_DIAGNOSE (``gnt-storage diagnose``, ``info``): Ganeti's rows per
    ExtStorage provider.  This project has no ``ext`` disk template and looks for no
    providers on the nodes, so the list is empty (Ganeti's answer on a cluster whose
    nodes have none); unknown fields are refused as Ganeti refuses them."""

    OP_ID = "OP_EXT_STORAGE_DIAGNOSE"
    REQ_BGL = False
    op: OpExtStorageDiagnose

    @property
    def uses_locks(self) -> bool:
        return False

    def check_arguments(self) -> None:
        unknown = [f for f in self.op.output_fields if f not in EXTSTORAGE_FIELDS]
        if unknown:
            raise OpPrereqError(f"Unknown output fields selected: {','.join(unknown)}",
                                ECODE_INVAL)

    async def exec(self) -> Any:
        return []


async def check_os_params(ctx: LUContext, required: bool, node_uuids: list[str],
                          os_name: str, params: Mapping[str, Any],
                          force_variant: bool, prereq: bool = True) -> None:
    """Validate OS parameters on the nodes (vm-capable, online; Ganeti's
    ``CheckOSParams``): OpPrereqError if a node refuses them (OpExecError, as
    Ganeti's, unless ``prereq``); a node without the OS is only reported (unless
    ``required``)."""
    cfg = ctx.config.config
    nodes = [cfg.nodes[u] for u in node_uuids
             if u in cfg.nodes and cfg.nodes[u].vm_capable and not cfg.nodes[u].offline]
    if not os_name or not nodes:
        return
    results = await ctx.rpc().call(
        [target(n) for n in nodes], "os_validate",
        [required, os_name, [OS_VALIDATE_PARAMETERS], dict(params), force_variant])
    for node in nodes:
        result = results[node.name]
        result.raise_if_failed(f"OS Parameters validation failed on node {node.name}",
                               prereq=prereq, ecode=ECODE_INVAL if prereq else None)
        if not result.payload:
            ctx.feedback("message", f"OS {os_name} not found on node {node.name}, "
                                    "validation skipped")


#: The units of this module, registered by OP_ID.
LUS: tuple[type[LogicalUnit], ...] = (LUOsDiagnose, LUExtStorageDiagnose)

__all__ = ["LUS", "LUExtStorageDiagnose", "LUOsDiagnose", "check_os_params"]
