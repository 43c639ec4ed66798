"""Migration calls on the node: Ganeti's ``migration_info``, ``accept_instance``,
``instance_migrate``, ``instance_get_migration_status``,
``instance_finalize_migration_dst`` and ``instance_finalize_migration_src``.

Each is one step of the instance's hypervisor
(:class:`ganeti.noded.hypervisors.base.Hypervisor`), its failure Ganeti's
message: "Failed to fetch migration information: ...", "Failed to accept
instance: ...", "Failed to migrate instance: ...", "Failed to get migration
status: ...", "Failed to finalize migration on the target node: ...", "Failed
to finalize the migration on the source node: ...".  The status answers
Ganeti's ``MigrationStatus`` object (``status``, and ``transferred_ram`` /
``total_ram`` in bytes where known).  The master drives them from
:mod:`ganeti.master.lu.instance_migration_exec` (docs/design/migration.md).
"""

from __future__ import annotations

from typing import Any

from ganeti.noded.backend.context import NodeContext
from ganeti.noded.backend.instances import checked, hv_call


async def migration_info(ctx: NodeContext, instance: dict[str, Any]) -> str:
    """What the destination needs to accept the instance (opaque), from the source."""
    hv, _ = checked(ctx, instance)
    return await hv_call(hv.migration_info(instance),
                         "Failed to fetch migration information")


async def accept_instance(ctx: NodeContext, instance: dict[str, Any], info: str,
                          target: str) -> None:
    """Prepare this node (the destination) to receive the instance."""
    hv, _ = checked(ctx, instance)
    await hv_call(hv.accept_instance(instance, info, target), "Failed to accept instance")


async def instance_migrate(ctx: NodeContext, cluster_name: str, instance: dict[str, Any],
                           target: str, live: bool) -> None:
    """Start sending the instance to ``target`` (the destination's address)."""
    hv, _ = checked(ctx, instance)
    await hv_call(hv.migrate_instance(cluster_name, instance, target, live),
                  "Failed to migrate instance")


async def instance_get_migration_status(ctx: NodeContext,
                                        instance: dict[str, Any]) -> dict[str, Any]:
    """How the migration from this node goes."""
    hv, _ = checked(ctx, instance)
    status = await hv_call(hv.migration_status(instance), "Failed to get migration status")
    return status.to_dict()


async def instance_finalize_migration_dst(ctx: NodeContext, instance: dict[str, Any],
                                          info: str, success: bool) -> None:
    """Take the instance as running here, or undo the accept."""
    hv, _ = checked(ctx, instance)
    await hv_call(hv.finalize_migration_dst(instance, info, success),
                  "Failed to finalize migration on the target node")


async def instance_finalize_migration_src(ctx: NodeContext, instance: dict[str, Any],
                                          success: bool, live: bool) -> None:
    """Forget the instance here, or keep it running."""
    hv, _ = checked(ctx, instance)
    await hv_call(hv.finalize_migration_source(instance, success, live),
                  "Failed to finalize the migration on the source node")
