"""Instance export resources: ``/2/instances/{instance_name}/export`` and
``/2/instances/{instance_name}/prepare-export`` (Ganeti's ``rlib2``).

``PUT .../export`` submits OP_BACKUP_EXPORT with the body's parameters
(``destination`` is accepted for ``target_node``, as Ganeti renames it);
``DELETE .../export`` submits OP_BACKUP_REMOVE; ``PUT .../prepare-export``
submits OP_BACKUP_PREPARE with the ``mode`` query parameter.
"""

from __future__ import annotations

from ganeti.rapi.resources.common import DRY_RUN, OpcodeBody, flag, opcode_method, path
from ganeti.rapi.resources.instances import QueryArg
from ganeti.rapi.routing import Route

_INSTANCE = {"instance_name": path("instance_name")}

ROUTES = [
    Route("/2/instances/{instance_name}/export", {
        "PUT": opcode_method("PUT", OpcodeBody(
            "OP_BACKUP_EXPORT", "instances_name_export", _INSTANCE,
            rename={"destination": "target_node"}),
            "Export an instance (OP_BACKUP_EXPORT; the body gives 'mode', 'destination' "
            "(the target node), 'shutdown', 'remove_instance', ...)"),
        "DELETE": opcode_method("DELETE", OpcodeBody(
            "OP_BACKUP_REMOVE", "instances_name_export",
            {**_INSTANCE, "dry_run": flag(DRY_RUN)}, body_params=False),
            "Remove the exports of an instance (OP_BACKUP_REMOVE)", (DRY_RUN,)),
    }, "Instance export"),
    Route("/2/instances/{instance_name}/prepare-export", {
        "PUT": opcode_method("PUT", OpcodeBody(
            "OP_BACKUP_PREPARE", "instances_name_prepare_export",
            {**_INSTANCE, "mode": QueryArg("query", "mode")}, body_params=False),
            "Prepare an instance export (OP_BACKUP_PREPARE; ?mode=local|remote)",
            ("mode",)),
    }, "Instance export preparation"),
]

__all__ = ["ROUTES"]
