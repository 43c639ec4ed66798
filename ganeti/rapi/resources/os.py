"""The operating systems resource: ``/2/os``.

As Ganeti's RAPI, the answer comes from an OP_OS_DIAGNOSE job that the
handler submits and waits for: every valid, visible OS by the names it can be
given (``name+variant`` for each variant, else ``name``).  ``?bulk=1`` (the
wire reference's extension, as later Ganeti versions answer) gives one object
per OS: ``name, valid, variants, parameters, api_versions, blacklisted,
hidden, trusted``.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.core.queryfields.base import object_schema
from ganeti.core.queryfields.os import OS_FIELDS as OS_DECLS
from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import BULK, REASON, map_fields, submit
from ganeti.rapi.routing import Method, Request, Route

#: The fields of one OS in ``/2/os?bulk=1``.
OS_BULK_FIELDS = ("name", "valid", "variants", "parameters", "api_versions", "blacklisted",
                  "hidden", "trusted")
#: Seconds one WaitForJobChange may wait (Ganeti's client polls the same way).
WAIT_TIMEOUT = 10


async def run_job(request: Request, op: dict[str, Any]) -> Any:
    """Submit ``op`` as a job and wait for it; its result (502 if it failed)."""
    job_id = await submit(request, [op])
    prev_info: Any = None
    while True:
        try:
            answer = await request.luxi.call("WaitForJobChange", job_id, ["status"],
                                             prev_info, None, WAIT_TIMEOUT)
        except errors.JobLost:
            raise http.HttpBadGateway("Can't get OS list") from None
        if isinstance(answer, list) and answer:
            prev_info = answer[0]
            if prev_info and prev_info[0] in c.JOBS_FINALIZED:
                break
    (row,) = await request.luxi.call("QueryJobs", [job_id], ["status", "opresult"])
    if row is None or row[0] != c.JOB_STATUS_SUCCESS:
        raise http.HttpBadGateway("Can't get OS list")
    return row[1][0]


async def get_os(request: Request) -> list[Any]:
    """Every valid, visible OS by name (``os+variant``), or with ``?bulk=1`` their fields."""
    bulk = request.flag(BULK)
    fields = list(OS_BULK_FIELDS) if bulk else ["name", "variants"]
    # (no reason trail of ours: Ganeti's /2/os submits its opcode without one)
    op = {"OP_ID": "OP_OS_DIAGNOSE", "output_fields": fields, "names": []}
    rows = await run_job(request, op)
    if not isinstance(rows, list):
        raise http.HttpBadGateway("Can't get OS list")
    if bulk:
        return [map_fields(OS_BULK_FIELDS, row) for row in rows]
    return [f"{name}+{v}" if variants else name
            for name, variants in rows for v in (variants or [None])]


#: Value schemas from the field declarations (ganeti.core.queryfields.os).
OS_OBJECT = object_schema(OS_DECLS, OS_BULK_FIELDS)

ROUTES = [
    Route("/2/os", {
        "GET": Method(get_os, "The valid operating systems by name (os+variant), or with "
                      "?bulk=1 their fields (an OP_OS_DIAGNOSE job)", query=(BULK, REASON),
                      heavy=True,
                      schema={"oneOf": [{"type": "array", "items": {"type": "string"}},
                                        {"type": "array", "items": OS_OBJECT}]}),
    }, "The operating systems"),
]

__all__ = ["OS_BULK_FIELDS", "ROUTES", "get_os", "run_job"]
