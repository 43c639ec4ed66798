"""Placement resources: ``/2/instances-multi-alloc`` (Ganeti's) and our
``/2/placement/capacity`` and ``/2/placement/balance``.

``POST /2/instances-multi-alloc`` is Ganeti's R_2_instances_multi_alloc: the
body holds ``instances`` (instance creation bodies: ``name`` and ``os`` are
accepted for ``instance_name`` and ``os_type``), ``iallocator`` and
``opportunistic_locking``; it answers the id of an OP_INSTANCE_MULTI_ALLOC job
whose result lists the instances placed (``allocatable``), those not placed
(``failed``) and the creation jobs (``jobs``).  ``?dry-run=1`` submits no
creation job.

``POST /2/placement/capacity`` and ``/2/placement/balance`` run an allocator
on our ``capacity`` and ``balance`` requests (an OP_TEST_ALLOCATOR job,
direction out; nothing changes).  The body: capacity takes the instance
specification (``disk_template``, ``memory``, ``vcpus``, ``disks``
``[{"size", "mode"}]``, ``nics``, ``spindle_use``) and ``group_name``; balance
``max_moves`` (0: until no gain), ``min_gain`` and ``group_name``; both take
``iallocator`` (default: the built-in ``ganeti-place``; hail answers neither).
The job's result is the allocator's answer as JSON text:
``{"success", "info", "result"}`` with the result shapes of
docs/placement-master.md.
"""

from __future__ import annotations

import copy

from ganeti.core.params_cluster import BUILTIN_IALLOCATOR
from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import (
    JOB_RESULT,
    REASON,
    OpcodeBody,
    OpcodeHandler,
    build_opcode,
    const,
    flag,
    require_dict,
    submit,
)
from ganeti.rapi.routing import DRY_RUN, Method, Request, Route, default_access

#: Instance bodies: Ganeti's renames (as POST /2/instances).
_INSTANCE_RENAME = {"os": "os_type", "name": "instance_name"}

_MULTI = OpcodeBody("OP_INSTANCE_MULTI_ALLOC", "instances_multi_alloc",
                    {"dry_run": flag(DRY_RUN)})


class MultiAllocHandler(OpcodeHandler):
    """The instances' bodies filled in as opcodes, then the multi-allocation job."""

    async def __call__(self, request: Request) -> int:
        body = copy.deepcopy(require_dict(request.body))
        if "instances" not in body:
            raise http.HttpBadRequest("Request is missing required 'instances' field in "
                                      "body")
        if not isinstance(body["instances"], list):
            raise http.HttpBadRequest("Invalid body parameters: 'instances' must be a list")
        instances = []
        for inst in body["instances"]:
            inst = dict(require_dict(inst, "Instance definition"))
            for old, new in _INSTANCE_RENAME.items():
                if old in inst:
                    if new in inst:
                        raise http.HttpBadRequest(f"Parameter '{old}' was renamed to "
                                                  f"'{new}', but both are specified")
                    inst[new] = inst.pop(old)
            inst["OP_ID"] = "OP_INSTANCE_CREATE"
            instances.append(inst)
        body["instances"] = instances
        return await submit(request, [build_opcode(request, self.opcode_body, body)])


def _test_allocator(mode: str, rename: dict[str, str]) -> OpcodeBody:
    return OpcodeBody("OP_TEST_ALLOCATOR", f"placement_{mode}",
                      {"direction": const("out"), "mode": const(mode),
                       "name": const(mode)}, rename=rename)


class PlacementHandler(OpcodeHandler):
    """OP_TEST_ALLOCATOR with the built-in allocator unless the body names one."""

    async def __call__(self, request: Request) -> int:
        body = dict(require_dict(request.body if request.body is not None else {}))
        body.setdefault("iallocator", BUILTIN_IALLOCATOR)
        return await submit(request, [build_opcode(request, self.opcode_body, body)])


def _post(handler: OpcodeHandler, summary: str, query: tuple[str, ...] = ()) -> Method:
    return Method(handler, summary, access=default_access("POST"), query=(*query, REASON),
                  body="opcode", opcode=handler.opcode_body.op_id, result="job",
                  schema=JOB_RESULT)


ROUTES = [
    Route("/2/instances-multi-alloc", {"POST": _post(
        MultiAllocHandler(_MULTI),
        "Create several instances on nodes an allocator chooses "
        "(OP_INSTANCE_MULTI_ALLOC; 'instances' holds instance creation bodies)",
        (DRY_RUN,))}, "Multi-instance allocation"),
    Route("/2/placement/capacity", {"POST": _post(
        PlacementHandler(_test_allocator("capacity", {})),
        "How many instances of a specification fit, and where (OP_TEST_ALLOCATOR, "
        "mode capacity; the job's result is the allocator's answer)")},
        "Cluster capacity"),
    Route("/2/placement/balance", {"POST": _post(
        PlacementHandler(_test_allocator("balance", {"max_moves": "count"})),
        "The moves that lower the cluster score (OP_TEST_ALLOCATOR, mode balance; "
        "nothing is moved; the job's result is the allocator's answer)")},
        "Cluster balance"),
]

__all__ = ["ROUTES"]
