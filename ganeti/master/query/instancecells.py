"""The config-derived cells of instance query rows, kept between queries.

At 20,000 instances computing every cell of ``/2/instances?bulk=1`` costs most
of the answer.  :class:`StaticCells` keeps, per field list, each instance's row
with its config-derived cells; the row is reused while every committed object
those cells come from is the same object (docs/design/query.md).  Live cells
are computed for every answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ganeti.core import constants as c
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.query import Special

if TYPE_CHECKING:
    from ganeti.master.query.instancequeries import InstanceItem

#: Cell functions of a row: one per selected field, with whether the cell is
#: config-derived (cached between queries) or live (computed every time).
Cells = list[tuple[Callable[["InstanceItem"], Any], bool]]
#: Field lists whose config-derived cells are kept (least recently used dropped).
STATIC_CACHE_LISTS = 4


def _sources(cfg: ConfigData, inst: Instance) -> tuple[Any, ...]:
    """The committed objects an instance's config-derived cells are computed from.

    Committed config objects are never changed: a change replaces them (and
    the container holding them), so while each of these is the same object,
    so are the cells.  The cluster holds every default; the node, group and
    network containers give node names and groups and network names; the
    instance's disks give sizes, templates and secondary nodes."""
    disks = cfg.disks
    return (inst, cfg.cluster, cfg.nodes, cfg.nodegroups, cfg.networks,
            *[disks.get(uuid) for uuid in inst.disks])


class StaticCells:
    """The config-derived cells of one field list, per instance, between queries.

    At 20,000 instances computing every cell of ``/2/instances?bulk=1`` costs
    most of the answer; the cells of an instance whose objects did not change
    since the last answer are taken from here.  An entry holds the objects it
    was computed from (so their ids stay unique) and is recomputed as soon as
    one of them is not the same object any more."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[tuple[int, ...], tuple[Any, ...], list[Any]]] = {}
        self.hits = 0
        self.misses = 0

    def maker(self, cells: Cells) -> Callable[[InstanceItem], list[Any]]:
        """A row function: the cached row with its live cells filled in."""
        static = [(i, fn) for i, (fn, live) in enumerate(cells) if not live]
        live = [(i, fn) for i, (fn, is_live) in enumerate(cells) if is_live]
        rows = self.rows
        width = len(cells)

        def make(item: InstanceItem) -> list[Any]:
            sources = _sources(item.cfg, item.inst)
            ids = tuple(map(id, sources))
            entry = rows.get(item.inst.uuid)
            if entry is not None and entry[0] == ids:
                self.hits += 1
                row = entry[2].copy()
            else:
                self.misses += 1
                template: list[Any] = [None] * width
                for i, fn in static:
                    template[i] = fn(item)
                rows[item.inst.uuid] = (ids, sources, template)
                row = template.copy()
            for i, fn in live:
                row[i] = fn(item)
            return row
        return make

    def prune(self, cfg: ConfigData) -> None:
        """Forget instances no longer in the config (when there are many such)."""
        if len(self.rows) > len(cfg.instances) + 64:
            present = cfg.instances
            self.rows = {u: e for u, e in self.rows.items() if u in present}


def unknown_cell(item: InstanceItem) -> list[Any]:
    return [c.RS_UNKNOWN, None]


def plain_cell(getter: Callable[[InstanceItem], Any]) -> Callable[[InstanceItem], Any]:
    """An old-style cell: the plain value, null where there is none."""
    def cell(item: InstanceItem) -> Any:
        value = getter(item)
        return None if isinstance(value, Special) else value
    return cell
