"""The instance resources: ``/2/instances`` and ``/2/instances/{instance_name}[/...]``.

Wherever a path names an instance, its UUID names it as well (the master resolves
either), so ``/2/instances/{uuid}/modify`` and ``/rename`` reach a reservation
that has no name yet (seed 004); ``POST /2/instances/{name}/create`` commits one.

Reads are QueryInstances calls with Ganeti's field list (``I_FIELDS``, plus
``beparams["memory"]``, the old name of ``maxmem``); every write builds its
opcode from the URL, the query string and the body as Ganeti's ``rlib2``
does (``instance-create-reqv1`` bodies, the reinstall job of two or three
opcodes, ``custom_*params`` renamed for modify, ``usb_devices`` spaces turned
into commas) and answers the job id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import object_schema
from ganeti.core.queryfields.instances import INSTANCE_FIELDS as INSTANCE_DECLS
from ganeti.luxi.wire import RawJson
from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import (
    BULK,
    DRY_RUN,
    FORCE,
    JOB_RESULT,
    LOCK,
    REASON,
    OpcodeBody,
    OpcodeHandler,
    SchemaHandler,
    Static,
    build_opcode,
    const,
    flag,
    json_type,
    map_fields,
    not_found_if_unknown,
    opcode_method,
    path,
    require_dict,
    submit,
    tag_methods,
    uri_list,
)
from ganeti.rapi.resources.nodes import COMMON_FIELDS, ID_LIST
from ganeti.rapi.routing import READ, WRITE, Method, Request, Route, default_access

#: Fields of an instance in ``/2/instances?bulk=1`` and ``/2/instances/{instance_name}``
#: (Ganeti 3.0's ``I_FIELDS``).
I_FIELDS = ("name", "admin_state", "os", "pnode", "snodes", "disk_template", "nic.ips",
            "nic.macs", "nic.modes", "nic.uuids", "nic.names", "nic.links", "nic.networks",
            "nic.networks.names", "nic.bridges", "network_port", "disk.sizes",
            "disk.spindles", "disk_usage", "disk.uuids", "disk.names", "beparams",
            "hvparams", "oper_state", "oper_ram", "oper_vcpus", "status", "custom_hvparams",
            "custom_beparams", "custom_nicparams", *COMMON_FIELDS)
#: The version key of creation bodies, and the only version Ganeti still accepts.
REQ_DATA_VERSION = "__version__"
CREATE_VERSION = 1
INSTANCE_NAME = {"instance_name": path("instance_name")}


@dataclass(frozen=True)
class PathList(Static):
    """A static parameter holding a one-element list: the URL placeholder's value."""

    def resolve(self, request: Request) -> Any:
        return [request.params[self.name]]


@dataclass(frozen=True)
class PathIndex(Static):
    """A static parameter from a numeric URL placeholder (a disk index)."""

    def resolve(self, request: Request) -> Any:
        return int(request.params[self.name])


@dataclass(frozen=True)
class QueryArg(Static):
    """A static parameter from the first value of a query parameter, or ``value``."""

    def resolve(self, request: Request) -> Any:
        return request.arg(self.name, self.value)


def _with_memory(inst: dict[str, Any]) -> dict[str, Any]:
    """Ganeti's compatibility key: ``beparams["memory"]`` repeats ``maxmem``."""
    beparams = inst.get("beparams")
    if isinstance(beparams, dict) and c.BE_MAXMEM in beparams:
        beparams["memory"] = beparams[c.BE_MAXMEM]
    return inst


async def get_instances(request: Request) -> list[dict[str, Any]] | RawJson:
    """``[{id, uri}]`` sorted by name, or with ``?bulk=1`` every instance's I_FIELDS.

    The bulk answer comes from masterd as the JSON text RAPI sends (the extension
    QueryInstancesBulk, docs/luxi.md), unparsed: at 20,000 instances that is
    19 MB ganeti-rapi would otherwise decode and encode again."""
    locking = request.flag(LOCK)
    if request.flag(BULK):
        raw: RawJson = await request.luxi.call_raw("QueryInstancesBulk", [],
                                                   list(I_FIELDS), locking)
        return raw
    rows = await request.luxi.call("QueryInstances", [], ["name"], locking)
    return uri_list((row[0] for row in rows), "/2/instances/{}", "id")


async def get_instance(request: Request) -> dict[str, Any]:
    """One instance's I_FIELDS; 404 if unknown."""
    rows = await not_found_if_unknown(request.luxi.call(
        "QueryInstances", [request.params["instance_name"]], list(I_FIELDS),
        request.flag(LOCK)))
    return _with_memory(map_fields(I_FIELDS, rows[0]))


async def get_console(request: Request) -> dict[str, Any]:
    """How to reach the console; 503 while the instance does not run."""
    rows = await not_found_if_unknown(request.luxi.call(
        "QueryInstances", [request.params["instance_name"]], ["console", "oper_state"],
        False))
    console, running = rows[0]
    if not running or not isinstance(console, dict):
        raise http.HttpServiceUnavailable("Instance console unavailable")
    return console


def _usb_devices_with_commas(params: dict[str, Any]) -> None:
    """Ganeti accepts spaces between USB devices over RAPI; the parameter uses commas."""
    hvparams = params.get("hvparams")
    if isinstance(hvparams, dict) and isinstance(hvparams.get("usb_devices"), str):
        params["hvparams"] = dict(hvparams, usb_devices=hvparams["usb_devices"].replace(" ",
                                                                                         ","))


class CreateHandler(OpcodeHandler):
    """POST /2/instances: an ``instance-create-reqv1`` body (``__version__: 1``)."""

    async def __call__(self, request: Request) -> int:
        body = dict(require_dict(request.body))
        version = body.pop(REQ_DATA_VERSION, 0)
        if version == 0:
            raise http.HttpBadRequest("Instance creation request version 0 is no longer "
                                      "supported")
        if version != CREATE_VERSION:
            raise http.HttpBadRequest(f"Unsupported request data version {version}")
        _usb_devices_with_commas(body)
        return await submit(request, [build_opcode(request, self.opcode_body, body)])


class ModifyHandler(OpcodeHandler):
    """PUT .../modify: OP_INSTANCE_SET_PARAMS, ``usb_devices`` spaces as commas."""

    async def __call__(self, request: Request) -> int:
        body = dict(require_dict(request.body))
        _usb_devices_with_commas(body)
        return await submit(request, [build_opcode(request, self.opcode_body, body)])


REINSTALL_BODY_KEYS = ("os", "start", "osparams")
REINSTALL_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "os": {"type": "string", "nullable": True,
               "description": "The OS to install (default: the instance's)"},
        "start": {"type": "boolean", "description": "Start the instance afterwards "
                                                    "(default true)"},
        "osparams": {"type": "object", "nullable": True,
                     "description": "OS parameters for this installation"},
        "depends": {"$ref": "#/components/schemas/opcode.depends"},
    },
}
_SHUTDOWN = OpcodeBody("OP_INSTANCE_SHUTDOWN", "instances_name_reinstall", INSTANCE_NAME)
_REINSTALL = OpcodeBody("OP_INSTANCE_REINSTALL", "instances_name_reinstall", INSTANCE_NAME)
_STARTUP = OpcodeBody("OP_INSTANCE_STARTUP", "instances_name_reinstall", INSTANCE_NAME)


async def post_reinstall(request: Request) -> int:
    """One job: shut the instance down, reinstall it, and start it unless told not to.

    The body is ``{os, start, osparams}``; the older query parameters ``os`` and
    ``nostartup`` are accepted instead of a body, never with one.
    """
    body = request.body
    if body:
        if request.query.keys() - {REASON}:
            raise http.HttpBadRequest("Can't combine query and body parameters")
        if not isinstance(body, dict):
            raise http.HttpBadRequest("Invalid body contents, not a dictionary")
    elif request.query.keys() - {REASON}:
        body = {"os": request.arg("os"), "start": not request.flag("nostartup")}
    else:
        body = {}
    unknown = sorted(set(body) - set(REINSTALL_BODY_KEYS) - {"depends"})
    if unknown:
        raise http.HttpBadRequest("Invalid body parameters: unknown parameter(s) "
                                  + ", ".join(repr(k) for k in unknown))
    start = body.get("start", True)
    if not isinstance(start, bool):
        raise http.HttpBadRequest(f"Parameter 'start' must be a boolean, got "
                                  f"{json_type(start)}")
    ops = [build_opcode(request, _SHUTDOWN, {}),
           build_opcode(request, _REINSTALL, {"os_type": body.get("os"),
                                              "osparams": body.get("osparams")})]
    if start:
        ops.append(build_opcode(request, _STARTUP, {"force": False}))
    return await submit(request, ops)


def _instance_op(op_id: str, suffix: str, **static: Any) -> OpcodeBody:
    return OpcodeBody(op_id, suffix, {**INSTANCE_NAME, **static})


def _body_free(op_id: str, suffix: str, **static: Any) -> OpcodeBody:
    return OpcodeBody(op_id, suffix, {**INSTANCE_NAME, **static}, body_params=False)


#: The query parameters of the older replace-disks interface (Ganeti's client sends
#: them; ``early_release`` is sent but, as Ganeti's rlib2 does, not used).
REPLACE_QUERY = ("mode", "remote_node", "disks", "iallocator", "early_release")


class ReplaceDisksHandler(OpcodeHandler):
    """POST .../replace-disks: OP_INSTANCE_REPLACE_DISKS from the body, or, without
    one, from the query parameters ``mode``, ``remote_node``, ``disks`` and
    ``iallocator`` (Ganeti's client); ``disks`` may be a list of indices or a
    string "0,2"."""

    async def __call__(self, request: Request) -> int:
        body = request.body
        if body:
            data = dict(require_dict(body))
        elif request.query.keys() & set(REPLACE_QUERY[:4]):
            data = {name: request.arg(name) for name in REPLACE_QUERY[:4]}
        else:
            data = {}
        raw = data.pop("disks", None)
        if raw:
            if isinstance(raw, list) and all(isinstance(i, int) and not isinstance(i, bool)
                                             for i in raw):
                data["disks"] = raw
            else:
                try:
                    data["disks"] = [int(part) for part in str(raw).split(",")]
                except ValueError as err:
                    raise http.HttpBadRequest(f"Invalid disk index passed: {err}") from None
        data = {k: v for k, v in data.items() if v is not None or k not in REPLACE_QUERY}
        return await submit(request, [build_opcode(request, self.opcode_body, data)])


INSTANCE = object_schema(INSTANCE_DECLS, I_FIELDS,
                         description="Live values (oper_*) are null when the primary node "
                                     "gives no answer; beparams also holds 'memory' "
                                     "(= maxmem)")
CONSOLE = {"type": "object", "description": "How to reach the console (Ganeti's "
                                            "InstanceConsole: instance, kind, message, host, "
                                            "port, user, command, display)"}

_CREATE = OpcodeBody("OP_INSTANCE_CREATE", "instances", {"dry_run": flag(DRY_RUN)},
                     rename={"os": "os_type", "name": "instance_name"})
_MODIFY = OpcodeBody("OP_INSTANCE_SET_PARAMS", "instances_name_modify", INSTANCE_NAME,
                     rename={"custom_beparams": "beparams", "custom_hvparams": "hvparams"})


def _write(http_method: str, handler: OpcodeHandler, summary: str,
           query: tuple[str, ...] = ()) -> Method:
    spec = handler.opcode_body
    return Method(handler, summary, access=default_access(http_method),
                  query=(*query, REASON), body="opcode", opcode=spec.op_id, result="job",
                  schema=JOB_RESULT)


ROUTES = [
    Route("/2/instances", {
        "GET": Method(get_instances, "Every instance: [{id, uri}], or with ?bulk=1 their "
                      "fields", query=(BULK, LOCK, REASON), heavy=True,
                      schema={"oneOf": [ID_LIST, {"type": "array", "items": INSTANCE}]}),
        "POST": _write("POST", CreateHandler(_CREATE),
                       "Create an instance (OP_INSTANCE_CREATE; the body carries "
                       "'__version__': 1, 'name' and 'os' are accepted for 'instance_name' "
                       "and 'os_type')", (DRY_RUN,)),
    }, "The instances"),
    Route("/2/instances/{instance_name}", {
        "GET": Method(get_instance, "An instance's fields", query=(LOCK, REASON),
                      schema=INSTANCE),
        "DELETE": opcode_method("DELETE", _instance_op(
            "OP_INSTANCE_REMOVE", "instances_name", ignore_failures=const(False),
            dry_run=flag(DRY_RUN)), "Remove an instance (OP_INSTANCE_REMOVE)", (DRY_RUN,)),
    }, "One instance"),
    Route("/2/instances/{instance_name}/info", {"GET": opcode_method(
        "GET", OpcodeBody("OP_INSTANCE_QUERY_DATA", "instances_name_info",
                          {"instances": PathList("path", "instance_name"),
                           "static": flag("static")}, body_params=False),
        "Submit a job collecting the instance's details (OP_INSTANCE_QUERY_DATA)",
        ("static",))}, "An instance's details"),
    Route("/2/instances/{instance_name}/reboot", {"POST": opcode_method(
        "POST", _instance_op("OP_INSTANCE_REBOOT", "instances_name_reboot",
                             reboot_type=QueryArg("query", "type", c.INSTANCE_REBOOT_HARD),
                             ignore_secondaries=flag("ignore_secondaries"),
                             dry_run=flag(DRY_RUN)),
        "Reboot an instance (OP_INSTANCE_REBOOT; ?type=soft|hard|full, default hard)",
        ("type", "ignore_secondaries", DRY_RUN))}, "Instance reboot"),
    Route("/2/instances/{instance_name}/startup", {"PUT": opcode_method(
        "PUT", _body_free("OP_INSTANCE_STARTUP", "instances_name_startup",
                          force=flag(FORCE), dry_run=flag(DRY_RUN),
                          no_remember=flag("no_remember")),
        "Start an instance (OP_INSTANCE_STARTUP)", (FORCE, DRY_RUN, "no_remember"))},
          "Instance start"),
    Route("/2/instances/{instance_name}/shutdown", {"PUT": opcode_method(
        "PUT", _instance_op("OP_INSTANCE_SHUTDOWN", "instances_name_shutdown",
                            no_remember=flag("no_remember"), dry_run=flag(DRY_RUN)),
        "Stop an instance (OP_INSTANCE_SHUTDOWN; the body may give 'timeout')",
        ("no_remember", DRY_RUN))}, "Instance stop"),
    Route("/2/instances/{instance_name}/reinstall", {"POST": Method(
        SchemaHandler(post_reinstall, REINSTALL_SCHEMA),
        "Reinstall an instance: one job of OP_INSTANCE_SHUTDOWN, OP_INSTANCE_REINSTALL and "
        "(unless start is false) OP_INSTANCE_STARTUP", access=frozenset({WRITE}),
        query=("os", "nostartup", REASON), body="json", opcode="OP_INSTANCE_REINSTALL",
        result="job", schema=JOB_RESULT)}, "Instance reinstall"),
    Route("/2/instances/{instance_name}/activate-disks", {"PUT": opcode_method(
        "PUT", _body_free("OP_INSTANCE_ACTIVATE_DISKS", "instances_name_activate_disks",
                          ignore_size=flag("ignore_size")),
        "Activate an instance's disks (OP_INSTANCE_ACTIVATE_DISKS)", ("ignore_size",))},
          "Instance disk activation"),
    Route("/2/instances/{instance_name}/deactivate-disks", {"PUT": opcode_method(
        "PUT", _body_free("OP_INSTANCE_DEACTIVATE_DISKS", "instances_name_deactivate_disks",
                          force=flag(FORCE)),
        "Deactivate an instance's disks (OP_INSTANCE_DEACTIVATE_DISKS)", (FORCE,))},
          "Instance disk deactivation"),
    Route("/2/instances/{instance_name}/recreate-disks", {"POST": opcode_method(
        "POST", _instance_op("OP_INSTANCE_RECREATE_DISKS", "instances_name_recreate_disks"),
        "Recreate an instance's disks (OP_INSTANCE_RECREATE_DISKS)")},
          "Instance disk re-creation"),
    Route("/2/instances/{instance_name}/disk/{disk_index}/grow", {"POST": opcode_method(
        "POST", _instance_op("OP_INSTANCE_GROW_DISK", "instances_name_disk_grow",
                             disk=PathIndex("path", "disk_index")),
        "Grow a disk of an instance (OP_INSTANCE_GROW_DISK; the body gives 'amount')")},
          "Instance disk growth"),
    Route("/2/instances/{instance_name}/create", {"POST": opcode_method(
        "POST", OpcodeBody("OP_INSTANCE_CREATE", "instances_name_create",
                           {**INSTANCE_NAME, "commit": const(True), "dry_run": flag(DRY_RUN)},
                           rename={"os": "os_type"}),
        "Make a reserved (forthcoming) instance real on its reserved nodes "
        "(OP_INSTANCE_CREATE with 'commit'; the reservation supplies what the body "
        "leaves out)", (DRY_RUN,))},
          "Instance reservation commit"),
    Route("/2/instances/{instance_name}/migrate", {"PUT": opcode_method(
        "PUT", _instance_op("OP_INSTANCE_MIGRATE", "instances_name_migrate"),
        "Live-migrate an instance to another node (OP_INSTANCE_MIGRATE; the body may "
        "give mode, cleanup, target_node, iallocator, allow_failover, ...)")},
          "Instance migration"),
    Route("/2/instances/{instance_name}/failover", {"PUT": opcode_method(
        "PUT", _instance_op("OP_INSTANCE_FAILOVER", "instances_name_failover"),
        "Fail an instance over to another node: stop it and start it there "
        "(OP_INSTANCE_FAILOVER; the body may give iallocator, ignore_consistency, "
        "target_node, shutdown_timeout, ...)")},
          "Instance failover"),
    Route("/2/instances/{instance_name}/replace-disks", {"POST": Method(
        ReplaceDisksHandler(_instance_op("OP_INSTANCE_REPLACE_DISKS",
                                         "instances_name_replace_disks")),
        "Rebuild a mirrored instance's storage (OP_INSTANCE_REPLACE_DISKS): the body gives "
        "mode, disks, remote_node, iallocator, early_release; without a body Ganeti's "
        "client sends ?mode=, ?disks=0,1, ?remote_node=, ?iallocator= instead",
        access=frozenset({WRITE}), query=(*REPLACE_QUERY, REASON), body="opcode",
        opcode="OP_INSTANCE_REPLACE_DISKS", result="job", schema=JOB_RESULT)},
          "Instance disk replacement"),
    Route("/2/instances/{instance_name}/rename", {"PUT": opcode_method(
        "PUT", _instance_op("OP_INSTANCE_RENAME", "instances_name_rename"),
        "Rename an instance (OP_INSTANCE_RENAME; the body gives 'new_name')")},
          "Instance rename"),
    Route("/2/instances/{instance_name}/modify", {"PUT": _write(
        "PUT", ModifyHandler(_MODIFY),
        "Change an instance's parameters (OP_INSTANCE_SET_PARAMS; 'custom_beparams' and "
        "'custom_hvparams' are accepted for 'beparams' and 'hvparams')")},
          "Instance parameters"),
    Route("/2/instances/{instance_name}/console", {"GET": Method(
        get_console, "How to reach the instance's console (503 while it does not run)",
        access=frozenset({READ, WRITE}), query=(REASON,), schema=CONSOLE)},
          "Instance console"),
    Route("/2/instances/{instance_name}/tags",
          tag_methods(c.TAG_INSTANCE, "instance_name", "instances_name_tags", "the instance"),
          "Instance tags"),
]
