"""The job resources: ``/2/jobs``, ``/2/jobs/{job_id}`` and ``/2/jobs/{job_id}/wait``."""

from __future__ import annotations

from typing import Any

from ganeti.core import errors
from ganeti.core.queryfields.base import object_schema
from ganeti.core.queryfields.jobs import JOB_FIELDS as JOB_DECLS
from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import (
    BULK,
    SchemaHandler,
    is_str_list,
    map_fields,
    require_dict,
    uri_list,
)
from ganeti.rapi.routing import WRITE, Method, Request, Route

#: Fields of each job in ``/2/jobs?bulk=1`` (Ganeti's; our ``wait_reason`` is the
#: job query field of that name, ``/2/query/job?fields=id,wait_reason``, and the feed's).
J_FIELDS_BULK = ("id", "ops", "status", "summary", "opstatus", "received_ts", "start_ts",
                 "end_ts")
#: Fields of ``/2/jobs/{job_id}``.
J_FIELDS = (*J_FIELDS_BULK, "oplog", "opresult")

#: Jobs whose bulk fields one LUXI call asks for (``/2/jobs?bulk=1``).
BULK_CHUNK = 1000

#: How long ``/wait`` lets WaitForJobChange wait for a change (Ganeti's value).
WAIT_TIMEOUT = 10

WAIT_KEYS = ("fields", "previous_job_info", "previous_log_serial")

#: WaitForJobChange's legacy "nothing changed" answer (older Ganeti masters).
JOB_NOTCHANGED = "nochange"

#: Ganeti's answer (500) for waiting on a job that does not exist.
JOB_FILE_MISSING = "Can't load job file"


def _job_id(request: Request) -> int:
    return int(request.params["job_id"])


async def get_jobs(request: Request) -> list[Any]:
    """Every live job: ``[{id, uri}]``, or with ``?bulk=1`` the J_FIELDS_BULK of each.

    The bulk fields are asked for :data:`BULK_CHUNK` jobs per LUXI call: one
    answer for thousands of jobs would be encoded by masterd and decoded here
    in one go each, holding both daemons from their other clients meanwhile.
    A job archived between two calls is still listed (masterd reads it back
    from the archive), as if the list had been read just before.
    """
    bulk = request.flag(BULK)
    rows = await request.luxi.call("QueryJobs", None, ["id"])
    ids = sorted(int(row[0]) for row in rows if row is not None)
    if not bulk:
        return uri_list(ids, "/2/jobs/{}", "id")
    jobs: list[dict[str, Any]] = []
    for start in range(0, len(ids), BULK_CHUNK):
        rows = await request.luxi.call("QueryJobs", ids[start:start + BULK_CHUNK],
                                       list(J_FIELDS_BULK))
        jobs.extend(map_fields(J_FIELDS_BULK, row) for row in rows if row is not None)
    return jobs


async def get_job(request: Request) -> dict[str, Any]:
    """One job's J_FIELDS; for a job that does not exist, its id and nulls (as Ganeti)."""
    job_id = _job_id(request)
    (row,) = await request.luxi.call("QueryJobs", [job_id], list(J_FIELDS))
    if row is None:  # (a master that answers null for a missing job)
        row = [job_id if name == "id" else None for name in J_FIELDS]
    return map_fields(J_FIELDS, row)


async def cancel_job(request: Request) -> list[Any]:
    """CancelJob: ``[true, message]`` or ``[false, reason]``."""
    return list(await request.luxi.call("CancelJob", _job_id(request), False))


async def wait_job(request: Request) -> dict[str, Any] | None:
    """WaitForJobChange for at most ten seconds.

    Answers ``{job_info, log_entries}`` (on a timeout the unchanged values
    and no log entries, as Ganeti's luxid answers), null for the legacy
    "nochange" answer.  As Ganeti's RAPI: other body keys are ignored, and a
    job that does not exist is a 500 error "Can't load job file".
    """
    job_id = _job_id(request)
    body = require_dict(request.body)
    if "fields" not in body:
        raise http.HttpBadRequest("Required parameter 'fields' is missing")
    fields = body["fields"]
    prev_info = body.get("previous_job_info")
    prev_serial = body.get("previous_log_serial")
    if not isinstance(fields, list):
        raise http.HttpBadRequest("The 'fields' parameter should be a list")
    if not is_str_list(fields):
        raise http.HttpBadRequest("The 'fields' parameter should be a list of strings")
    if prev_info is not None and not isinstance(prev_info, list):
        raise http.HttpBadRequest("The 'previous_job_info' parameter should be a list")
    if prev_serial is not None and (isinstance(prev_serial, bool)
                                    or not isinstance(prev_serial, int)):
        raise http.HttpBadRequest("The 'previous_log_serial' parameter should be a number")
    try:
        result = await request.luxi.call("WaitForJobChange", job_id, fields, prev_info,
                                         prev_serial, WAIT_TIMEOUT)
    except errors.JobLost as err:
        raise http.HttpInternalServerError(str(err.args[0]) if err.args else
                                           JOB_FILE_MISSING) from None
    if not result:
        raise http.HttpInternalServerError(JOB_FILE_MISSING)
    if result == JOB_NOTCHANGED:
        return None
    job_info, log_entries = result
    return {"job_info": job_info, "log_entries": log_entries}


# Value schemas from the field declarations (ganeti.core.queryfields.jobs).
BULK_JOB = object_schema(JOB_DECLS, J_FIELDS_BULK)
JOB = object_schema(JOB_DECLS, J_FIELDS)
ID_LIST = {"type": "array", "items": {"type": "object", "properties": {
    "id": {"type": "integer"}, "uri": {"type": "string"}}}}
WAIT_BODY = {
    "type": "object", "required": ["fields"],
    "properties": {
        "fields": {"type": "array", "items": {"type": "string"},
                   "description": "Job fields to watch (e.g. status)"},
        "previous_job_info": {"type": "array", "items": {}, "nullable": True,
                              "description": "The field values seen last"},
        "previous_log_serial": {"type": "integer", "nullable": True,
                                "description": "The last log serial seen"},
    },
}
WAIT_RESULT = {
    "type": "object", "nullable": True,
    "properties": {"job_info": {"type": "array", "items": {}},
                   "log_entries": {"type": "array", "items": {"type": "array"}}},
}

ROUTES = [
    Route("/2/jobs", {"GET": Method(
        get_jobs, "Every job: [{id, uri}], or with ?bulk=1 their fields",
        query=(BULK,), heavy=True,
        schema={"oneOf": [ID_LIST, {"type": "array", "items": BULK_JOB}]})},
          "The job queue"),
    Route("/2/jobs/{job_id}", {
        "GET": Method(get_job, "A job's status, opcodes, results and log", schema=JOB),
        "DELETE": Method(cancel_job, "Cancel a job (CancelJob): [success, message]",
                         access=frozenset({WRITE}), schema={
                             "type": "array", "minItems": 2, "maxItems": 2,
                             "items": {"oneOf": [{"type": "boolean"}, {"type": "string"}]}}),
    }, "One job"),
    Route("/2/jobs/{job_id}/wait", {"GET": Method(
        SchemaHandler(wait_job, WAIT_BODY),
        "Wait up to 10 s for a change of the job's fields or log (JSON body)",
        access=frozenset({WRITE}), body="json", schema=WAIT_RESULT)},
          "Waiting for job changes"),
]
