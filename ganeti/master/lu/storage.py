"""Logical units: storage units of the nodes (query, modify, repair; node volumes).

Each unit follows docs/design/lu-contract.md; :mod:`ganeti.master.lu.registry`
dispatches to the units listed in :data:`LUS`.  The rules and answers are
Ganeti's (``LUNodeQueryStorage``, ``LUNodeModifyStorage``,
``LURepairNodeStorage``, ``LUNodeQueryvols``): a storage type is usable when
a disk template of that type is enabled (``lvm-pv`` with ``lvm-vg``); file
types take the cluster's storage directory as their argument; nodes that are
offline are skipped and nodes that fail are reported as warnings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ganeti.core import query
from ganeti.core import storagetypes as st
from ganeti.core.errors import ECODE_INVAL, ECODE_NOENT, OpPrereqError
from ganeti.core.objects import Cluster, ConfigData, Disk, Node
from ganeti.core.opcodes.views import (
    OpNodeModifyStorage,
    OpNodeQueryStorage,
    OpNodeQueryvols,
    OpRepairNodeStorage,
)
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE
from ganeti.master.lu.base import ALL_SET, LogicalUnit

#: Storage types whose units nodes report (Ganeti's ``STS_REPORT_NODE_STORAGE``).
REPORTED_TYPES = frozenset({st.ST_FILE, st.ST_SHARED_FILE, st.ST_LVM_PV, st.ST_LVM_VG})


def check_storage_type_enabled(cluster: Cluster, storage_type: str) -> None:
    """OpPrereqError unless a disk template of ``storage_type`` is enabled (Ganeti's
    ``CheckStorageTypeEnabled``; ``lvm-pv`` counts as ``lvm-vg``)."""
    wanted = st.ST_LVM_VG if storage_type == st.ST_LVM_PV else storage_type
    for template in st.storage_type_templates(wanted):
        if template in cluster.enabled_disk_templates:
            return
    # (Ganeti raises these two without an error code)
    raise OpPrereqError(f"No disk template of storage type '{wanted}' is enabled in "
                        "this cluster. Enabled disk templates are: "
                        f"{','.join(cluster.enabled_disk_templates)}")


def storage_type_args(cfg: ConfigData, storage_type: str) -> list[str]:
    """The node-side arguments of a storage type: the storage directory of file types."""
    if storage_type == st.ST_FILE:
        return [cfg.cluster.file_storage_dir]
    if storage_type == st.ST_SHARED_FILE:
        return [cfg.cluster.shared_file_storage_dir]
    return []


def _check_fields(fields: Iterable[str], valid: Iterable[str]) -> None:
    unknown = [f for f in fields if f not in set(valid)]
    if unknown:
        raise OpPrereqError(f"Unknown output fields selected: {','.join(unknown)}",
                            ECODE_INVAL)


class _NodesLU(LogicalUnit):
    """A query of some nodes (``op.nodes``; all if empty), their locks shared."""

    REQ_BGL = False
    op: OpNodeQueryStorage | OpNodeQueryvols

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        self.needed_locks[LEVEL_NODE] = (
            sorted({nodesmod.find_node(cfg, n).uuid for n in self.op.nodes})
            if self.op.nodes else ALL_SET)
        self.share_locks[LEVEL_NODE] = True

    async def answers(self, call: str, args: list[Any], warning: str
                      ) -> list[tuple[Node, Any]]:
        """``call`` on the locked nodes: (node, payload) of each that answered, by
        name; offline nodes are skipped, failures reported as ``warning`` + node."""
        cfg = self.ctx.config.config
        nodes = [cfg.nodes[u] for u in self.owned_locks(LEVEL_NODE) if u in cfg.nodes]
        nodes.sort(key=lambda n: query.nice_sort_key(n.name))
        results = await self.ctx.rpc().call([nodesmod.target(n) for n in nodes], call, args)
        out = []
        for node in nodes:
            result = results[node.name]
            if result.offline:
                continue
            if not result.success:
                _warn(self, f"{warning} {node.name}: {result.fail_msg}")
                continue
            out.append((node, result.payload))
        return out


def _warn(lu: LogicalUnit, text: str) -> None:
    lu.ctx.feedback("message", f"Warning: {text}")


class LUNodeQueryStorage(_NodesLU):
    """OP_NODE_QUERY_STORAGE: the storage units of nodes, one row per unit."""

    OP_ID = "OP_NODE_QUERY_STORAGE"
    op: OpNodeQueryStorage

    def check_arguments(self) -> None:
        _check_fields(self.op.output_fields, st.VALID_STORAGE_FIELDS)

    def check_prereq(self) -> None:
        cluster = self.ctx.config.config.cluster
        if self.op.storage_type:
            check_storage_type_enabled(cluster, self.op.storage_type)
            self.storage_type = self.op.storage_type
        else:
            templates = cluster.enabled_disk_templates
            self.storage_type = st.DISK_TEMPLATE_STORAGE_TYPE.get(templates[0], "") \
                if templates else ""
        if self.storage_type not in REPORTED_TYPES:
            raise OpPrereqError(
                f"Storage reporting for storage type '{self.storage_type}' is not "
                "supported. Please use the --storage-type option to specify one of the "
                f"supported storage types ({', '.join(sorted(REPORTED_TYPES))}) or set the "
                "default disk template to one that supports storage reporting.")

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        fields = [f for f in self.op.output_fields if f not in (st.SF_NODE, st.SF_TYPE)]
        if st.SF_NAME not in fields:
            fields.insert(0, st.SF_NAME)
        fields = list(dict.fromkeys(fields))
        index = {name: i for i, name in enumerate(fields)}
        answers = await self.answers(
            "storage_list", [self.storage_type, storage_type_args(cfg, self.storage_type),
                             self.op.name, fields], "Can't get storage data from node")
        out: list[list[Any]] = []
        for node, payload in answers:
            rows = {row[index[st.SF_NAME]]: row for row in payload or []}
            for name in sorted(rows, key=lambda n: query.nice_sort_key(str(n))):
                row = rows[name]
                values = []
                for field in self.op.output_fields:
                    if field == st.SF_NODE:
                        values.append(node.name)
                    elif field == st.SF_TYPE:
                        values.append(self.storage_type)
                    else:
                        values.append(row[index[field]])
                out.append(values)
        return out


class _OneNodeStorageLU(LogicalUnit):
    """A unit acting on one storage unit of one node (locked by UUID)."""

    REQ_BGL = False
    op: OpNodeModifyStorage | OpRepairNodeStorage

    def check_operation(self) -> None:
        """OpPrereqError if the operation does not apply to the storage type."""

    def expand_names(self) -> None:
        # Ganeti resolves the node before it looks at the storage type: an unknown
        # node is reported first.
        node = nodesmod.find_node(self.ctx.config.config, self.op.node_uuid or self.op.node_name)
        self.check_operation()
        self.node_uuid = node.uuid
        self.needed_locks[LEVEL_NODE] = [node.uuid]

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        node = cfg.nodes.get(self.node_uuid)
        if node is None:
            raise OpPrereqError(f"Node '{self.op.node_name}' not known", ECODE_NOENT)
        self.node = node
        check_storage_type_enabled(cfg.cluster, self.op.storage_type)
        if not self.op.name:
            raise OpPrereqError("A storage unit name is required", ECODE_INVAL)


class LUNodeModifyStorage(_OneNodeStorageLU):
    """OP_NODE_MODIFY_STORAGE: change a storage unit (``allocatable`` of an lvm-pv)."""

    OP_ID = "OP_NODE_MODIFY_STORAGE"
    op: OpNodeModifyStorage

    def check_operation(self) -> None:
        modifiable = st.MODIFIABLE_STORAGE_FIELDS.get(self.op.storage_type)
        if modifiable is None:
            raise OpPrereqError(f"Storage units of type '{self.op.storage_type}' can not be "
                                "modified", ECODE_INVAL)
        diff = sorted(set(self.op.changes) - modifiable)
        if diff:
            raise OpPrereqError("The following fields can not be modified for storage units "
                                f"of type '{self.op.storage_type}': {diff!r}", ECODE_INVAL)
        for key, value in self.op.changes.items():
            if key == st.SF_ALLOCATABLE and not isinstance(value, bool):
                raise OpPrereqError(f"Field '{key}' must be a boolean, not {value!r:.40}",
                                    ECODE_INVAL)

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        result = await self.ctx.rpc().call_one(
            self.node, "storage_modify",
            [self.op.storage_type, storage_type_args(cfg, self.op.storage_type),
             self.op.name, dict(self.op.changes)])
        result.raise_if_failed(
            f"Failed to modify storage unit '{self.op.name}' on {self.node.name}")
        return None


class LURepairNodeStorage(_OneNodeStorageLU):
    """OP_REPAIR_NODE_STORAGE: repair a volume group (``vgreduce --removemissing``).

    Ganeti first checks the disks of the node's instances on their other nodes
    (mirrored templates); no template served here has disks on other nodes.
    """

    OP_ID = "OP_REPAIR_NODE_STORAGE"
    op: OpRepairNodeStorage

    def check_operation(self) -> None:
        if st.SO_FIX_CONSISTENCY not in st.VALID_STORAGE_OPERATIONS.get(self.op.storage_type,
                                                                        ()):
            raise OpPrereqError(f"Storage units of type '{self.op.storage_type}' can not be "
                                "repaired", ECODE_INVAL)

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        self.ctx.feedback("message", f"Repairing storage unit '{self.op.name}' on "
                                     f"{self.node.name} ...")
        result = await self.ctx.rpc().call_one(
            self.node, "storage_execute",
            [self.op.storage_type, storage_type_args(cfg, self.op.storage_type),
             self.op.name, st.SO_FIX_CONSISTENCY])
        result.raise_if_failed(
            f"Failed to repair storage unit '{self.op.name}' on {self.node.name}")
        return None


def _walk(disks: Iterable[Disk]) -> Iterable[Disk]:
    for disk in disks:
        yield disk
        yield from _walk(disk.children)


def instance_lvs(cfg: ConfigData) -> dict[tuple[str, str], str]:
    """(node UUID, "vg/lv") -> instance name of every logical volume the config
    knows (Ganeti's ``MapInstanceLvsToNodes``)."""
    out: dict[tuple[str, str], str] = {}
    for inst in cfg.instances.values():
        disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
        for top in disks:
            nodes = list(top.nodes) or [inst.primary_node]
            for disk in _walk([top]):
                lid = disk.logical_id
                if disk.dev_type == "plain" and lid and len(lid) == 2:
                    for node in nodes:
                        out[(node, f"{lid[0]}/{lid[1]}")] = inst.name
    return out


class LUNodeQueryvols(_NodesLU):
    """OP_NODE_QUERYVOLS: the logical volumes of nodes, with their instance."""

    OP_ID = "OP_NODE_QUERYVOLS"
    op: OpNodeQueryvols

    def check_arguments(self) -> None:
        _check_fields(self.op.output_fields, st.VOLUME_FIELDS)

    async def exec(self) -> Any:
        answers = await self.answers("node_volumes", [], "Can't compute volume data on node")
        owners = instance_lvs(self.ctx.config.config)
        out: list[list[str]] = []
        for node, payload in answers:
            for vol in sorted(payload or [], key=lambda v: str(v.get("dev"))):
                row = []
                for field in self.op.output_fields:
                    if field == st.VF_NODE:
                        value: Any = node.name
                    elif field == st.VF_PHYS:
                        value = vol.get("dev")
                    elif field == st.VF_VG:
                        value = vol.get("vg")
                    elif field == st.VF_NAME:
                        value = vol.get("name")
                    elif field == st.VF_SIZE:
                        value = int(float(vol.get("size") or 0))
                    else:  # instance
                        value = owners.get((node.uuid, f"{vol.get('vg')}/{vol.get('name')}"),
                                           "-")
                    row.append(str(value))
                out.append(row)
        return out


#: The units of this module, registered by OP_ID.
LUS: tuple[type[LogicalUnit], ...] = (LUNodeQueryStorage, LUNodeModifyStorage,
                                      LURepairNodeStorage, LUNodeQueryvols)
