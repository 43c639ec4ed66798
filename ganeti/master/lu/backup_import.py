"""OP_INSTANCE_CREATE in ``import`` mode: the parts that read an export and import
its disks (Ganeti's ``_ReadExportInfo``, ``_ReadExportParams`` and the import
transfers of ``LUInstanceCreate.Exec``), used by
:mod:`ganeti.master.lu.instance_create`.

``src_path`` is an export name (default: the instance's name) or a path in the
export directory; without ``src_node`` every node is locked and asked
(``export_list``) and the first one holding the export is the source.  The
export's ``config.ini`` (``export_info``) fills what the opcode leaves out:
the OS always, the disks (sizes and names), NICs, tags and the hypervisor when
not given, hypervisor, backend, OS and private OS parameters key by key.  A
missing or corrupt export is an ``OpPrereqError`` before anything is made.
NICs taken from the export keep their MAC addresses only when the instance
keeps its name (Ganeti would reuse them under any name, which collides with
the exported instance while it exists).

After the disks are created and the instance is in the config, each dump is
copied to the primary node (unless it is the source) into a staging
directory and fed to the OS import script (``instance_import_disk``); the
staging directory is removed afterwards.  A failure undoes the whole create.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from ganeti.core import exportinfo
from ganeti.core.errors import ECODE_INVAL, OpPrereqError, TypeEnforcementError
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.opcodes.views import OpInstanceCreate, view
from ganeti.core.params_types import HVS_PARAMETER_TYPES, force_dict_type
from ganeti.core.paths import EXPORT_DIR
from ganeti.core.rpcdefs.exports import is_name
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu.backup import abort_staging, copy_file, export_lists, new_staging
from ganeti.master.lu.base import ALL_SET

if TYPE_CHECKING:  # the unit imports this module
    from ganeti.master.lu.instance_create import LUInstanceCreate


def check_import_arguments(lu: LUInstanceCreate) -> None:
    """The import arguments alone: the export's name and the path shown in hooks."""
    op = lu.op
    src_path = str(op.src_path or op.instance_name)
    if os.path.isabs(src_path):
        if not op.src_node:
            raise OpPrereqError("Importing an instance from a path requires a source node "
                                "option", ECODE_INVAL)
        name = os.path.basename(os.path.normpath(src_path))
    else:
        name = src_path
        src_path = os.path.join(EXPORT_DIR, src_path)
    if not is_name(name):
        raise OpPrereqError(f"Invalid export name '{name}'", ECODE_INVAL)
    lu.src_export = name
    lu.src_path = src_path
    if op.no_install:
        lu.ctx.feedback("message", "No-installation mode has no effect during import")


def lock_source_node(lu: LUInstanceCreate, cfg: ConfigData) -> None:
    """Add the source node to the node locks; without one, lock every node (it is
    searched for, as in Ganeti)."""
    src = lu.op.src_node_uuid or lu.op.src_node
    if not src:
        lu.src_node_uuid = None
        lu.needed_locks[LEVEL_NODE] = ALL_SET
        lu.needed_locks[LEVEL_NODE_RES] = ALL_SET
        return
    node = nodesmod.find_node(cfg, src)
    lu.src_node_uuid = node.uuid
    lu.src_node_name = node.name
    nodes = lu.needed_locks[LEVEL_NODE]
    if nodes is not ALL_SET and node.uuid not in nodes:
        lu.needed_locks[LEVEL_NODE] = sorted([*nodes, node.uuid])


def export_read(lu: LUInstanceCreate) -> bool:
    """Whether the export has filled the opcode already."""
    return lu.export_info is not None


def _typed_hvparams(params: dict[str, Any], given: set[str]) -> dict[str, Any]:
    out = {}
    for key, value in params.items():
        if key in given or key not in HVS_PARAMETER_TYPES:
            out[key] = value
            continue
        value = None if value == "None" else value
        if value is not None:
            try:
                value = force_dict_type({key: value}, HVS_PARAMETER_TYPES)[key]
            except TypeEnforcementError as err:
                raise OpPrereqError(f"Invalid hypervisor parameter in the export: {err}",
                                    ECODE_INVAL) from None
        out[key] = value
    return out


async def read_export(lu: LUInstanceCreate) -> None:
    """Find the export, read its ``config.ini`` and fill the opcode from it."""
    if export_read(lu):
        return
    cfg = lu.ctx.config.config
    name = lu.src_export
    if lu.src_node_uuid is None:
        nodes = sorted((n for n in cfg.nodes.values() if not n.offline),
                       key=lambda n: n.name)
        lists = await export_lists(lu, nodes)
        found = next((n for n in nodes if name in (lists.get(n.uuid) or [])), None)
        if found is None:
            raise OpPrereqError(f"No export found for relative path {name}", ECODE_INVAL)
        lu.src_node_uuid = found.uuid
        lu.src_node_name = found.name
    src = cfg.nodes[lu.src_node_uuid]
    ic.check_node_online(src)
    result = await lu.ctx.rpc().call_one(src, "export_info", [name])
    result.raise_if_failed(f"No export or invalid export found in dir {lu.src_path}",
                           prereq=True, ecode=ECODE_INVAL)
    info = exportinfo.ExportInfo(result.payload)
    op = dict(lu.op_input)
    had_nics = bool(op.get("nics"))
    given_hv = set(op.get("hvparams") or {})
    exportinfo.fill_op_from_export(info, op)
    op["hvparams"] = _typed_hvparams(op["hvparams"], given_hv)
    op["force_variant"] = True  # as Ganeti: it worked when it was installed
    if not had_nics and info.name != lu.name:
        for nic in op["nics"]:
            nic.pop("mac", None)
    if op.get("os_type") is None and any(info.dumps(len(op["disks"]))):
        raise OpPrereqError("The export has no OS: importing raw disks is not supported",
                            ECODE_INVAL)
    lu.op = cast(OpInstanceCreate, view(op))  # the same opcode, filled from the export
    lu.export_info = info
    lu.src_images = info.dumps(len(op["disks"]))


async def import_disks(lu: LUInstanceCreate, inst: Instance) -> None:
    """Run the OS import script for each disk with its dump (copied to the primary
    node first when the export is elsewhere)."""
    cfg = lu.ctx.config.config
    assert lu.src_node_uuid is not None  # read_export found it
    src = cfg.nodes[lu.src_node_uuid]
    pnode = cfg.nodes[inst.primary_node]
    images = lu.src_images
    if not any(images):
        return
    lu.ctx.feedback("message", "* running the instance OS import scripts...")
    staging = None if src.uuid == pnode.uuid else new_staging()
    arg = ic.instance_arg(inst)
    try:
        for idx, dump in enumerate(images):
            if dump is None or idx >= len(inst.disks):
                continue
            path = f"{lu.src_export}/{dump}"
            if staging is not None:
                await copy_file(lu, src, path, pnode, staging, dump)
                path = f"{staging}/{dump}"
            result = await lu.ctx.rpc().call_one(pnode, "instance_import_disk",
                                                 [arg, idx, path, lu.op.debug_level or 0])
            result.raise_if_failed(
                f"Could not import disk/{idx} of {inst.name} on node {pnode.name}")
    finally:
        if staging is not None:
            await abort_staging(lu, [pnode], staging)


__all__ = ["check_import_arguments", "export_read", "import_disks", "lock_source_node",
           "read_export"]
