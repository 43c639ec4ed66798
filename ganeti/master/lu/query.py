"""OP_QUERY and OP_QUERY_FIELDS for the resources the master answers itself."""

from __future__ import annotations

from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.master.lu.base import LogicalUnit

RESOURCES = ("group", "job", "lock", "node")


def _check_what(what: Any) -> str:
    if what not in RESOURCES:
        raise OpPrereqError(f"Resource {what!r} cannot be queried here (choose from "
                            f"{', '.join(RESOURCES)})", ECODE_INVAL)
    return str(what)


class LUQuery(LogicalUnit):
    """OP_QUERY: a QueryResponse for jobs, locks, nodes or groups."""

    OP_ID = "OP_QUERY"

    @property
    def uses_locks(self) -> bool:
        return False

    async def exec(self) -> Any:
        what = _check_what(self.op["what"])
        return await self.ctx.query(what, self.op.get("fields"), self.op.get("qfilter"))


class LUQueryFields(LogicalUnit):
    """OP_QUERY_FIELDS: field definitions of jobs, locks, nodes or groups."""

    OP_ID = "OP_QUERY_FIELDS"

    @property
    def uses_locks(self) -> bool:
        return False

    async def exec(self) -> Any:
        what = _check_what(self.op["what"])
        return self.ctx.query_fields(what, self.op.get("fields"))
