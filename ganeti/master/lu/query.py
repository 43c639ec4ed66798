"""OP_QUERY and OP_QUERY_FIELDS for the resources the master answers itself."""

from __future__ import annotations

from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes.views import OpQuery, OpQueryFields
from ganeti.core.queryfields.catalog import VIA_OPCODE
from ganeti.master.lu.base import LogicalUnit

#: What OP_QUERY and OP_QUERY_FIELDS take (declared with the query resources).
RESOURCES = VIA_OPCODE


def _check_what(what: Any) -> str:
    if what not in RESOURCES:
        raise OpPrereqError(f"Resource {what!r} cannot be queried here (choose from "
                            f"{', '.join(RESOURCES)})", ECODE_INVAL)
    return str(what)


class LUQuery(LogicalUnit):
    """OP_QUERY: a QueryResponse for jobs, locks, nodes or groups."""

    OP_ID = "OP_QUERY"
    op: OpQuery

    @property
    def uses_locks(self) -> bool:
        return False

    async def exec(self) -> Any:
        what = _check_what(self.op.what)
        return await self.ctx.query(what, self.op.fields, self.op.qfilter)


class LUQueryFields(LogicalUnit):
    """OP_QUERY_FIELDS: field definitions of jobs, locks, nodes or groups."""

    OP_ID = "OP_QUERY_FIELDS"
    op: OpQueryFields

    @property
    def uses_locks(self) -> bool:
        return False

    async def exec(self) -> Any:
        what = _check_what(self.op.what)
        return self.ctx.query_fields(what, self.op.fields)
