"""Allocators run from jobs: which ones, the input from the config and live node data,
the run, the checked answer, and Ganeti's errors.

Which allocator (Ganeti's ``CheckIAllocatorOrNode`` and seed 001's default list):
an opcode naming one uses it; ``.`` or no allocator and no node uses the
cluster's ``default_iallocator``, a comma-separated list tried in order until
one answers successfully; a cluster without a default uses the built-in
``ganeti-place`` (where Ganeti refuses).  Nodes given by the user win.

A run (Ganeti's ``IAllocator``): live figures from the vm_capable online nodes
(``node_info``, the volume group and physical volumes for LVM templates, the
memory running instances use), the version-2 input, the program on the search
path (:mod:`.runner`, a child process with a timeout and an output bound), the
answer checked against the request's result shape.  The errors are Ganeti's:
``OpExecError`` "Failure while running the iallocator script: ..." when the
program cannot be found or fails, "Can't parse iallocator results: ..." for
what is not an answer, ``ResultValidationError`` for a result of the wrong
shape or naming unknown nodes, and -- raised by the callers -- ``OpPrereqError``
"Can't compute nodes using iallocator '<name>': <its own text>" (``ECODE_NORES``)
when it answers that it found nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ganeti.core.errors import ECODE_INVAL, GenericError, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.placement.wire import AllocatorInput, Answer, parse_answer, render_input
from ganeti.master.config.nodes import target
from ganeti.master.iallocator import build
from ganeti.master.iallocator.runner import BUILTIN

if TYPE_CHECKING:
    from ganeti.master.lu.base import LogicalUnit

#: Ganeti's ``DEFAULT_IALLOCATOR_SHORTCUT``: "the cluster's default".
DEFAULT_SHORTCUT = "."


class TextRunner(Protocol):
    """What runs an allocator program: its stdout for an input text
    (:class:`ganeti.master.iallocator.runner.AllocatorRunner`)."""

    async def run_text(self, name: str, input_text: str,
                       params: Mapping[str, str | None] | None = None) -> str:
        """The program's stdout; ``OpExecError`` when it cannot be run or fails."""

    def exists(self, name: str) -> bool:
        """Whether allocator ``name`` can be run (blocking: stats files)."""


def split_names(value: str | None) -> list[str]:
    """The allocators of a comma-separated list (a cluster's default), in order."""
    return [name.strip() for name in (value or "").split(",") if name.strip()]


def allocator_names(cfg: ConfigData, given: str | None, nodes_given: bool) -> list[str]:
    """The allocators an opcode uses, in the order they are tried (empty: none, the
    user's nodes are used).  Both an allocator and nodes: Ganeti's refusal."""
    if given and nodes_given:  # (the shortcut "." too, as Ganeti)
        raise OpPrereqError("Do not specify both, iallocator and node", ECODE_INVAL)
    if given and given != DEFAULT_SHORTCUT:
        return [given]
    if nodes_given:
        return []
    return split_names(cfg.cluster.default_iallocator) or [BUILTIN]


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


async def _lvm_figures(lu: LogicalUnit, nodes: list[Node], vg_name: str
                       ) -> dict[str, dict[str, tuple[int, int]]]:
    """Per node UUID: the volume group's (size, free) and the physical volumes'
    (count, count with free space) as spindles."""
    rpc = lu.ctx.rpc()
    vgs = await rpc.call([target(n) for n in nodes], "storage_list",
                         ["lvm-vg", [], vg_name, ["size", "free"]])
    pvs = await rpc.call([target(n) for n in nodes], "storage_list",
                         ["lvm-pv", [], None, ["name", "free"]])
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for node in nodes:
        figures: dict[str, tuple[int, int]] = {}
        vg = vgs.get(node.name)
        if vg is not None and vg.success and vg.payload:
            size, free = vg.payload[0][:2]
            figures["lvm-vg"] = (_int(size), _int(free))
        pv = pvs.get(node.name)
        if pv is not None and pv.success and isinstance(pv.payload, list):
            rows = pv.payload
            figures["lvm-pv"] = (len(rows), sum(1 for r in rows if _int(r[1]) > 0))
        out[node.uuid] = figures
    return out


async def live_node_data(lu: LogicalUnit, template: str | None
                         ) -> tuple[dict[str, build.LiveNode | None],
                                    dict[str, dict[str, int]]]:
    """The live figures of the online vm_capable nodes (by UUID) and the memory each
    node's running instances use (by node UUID and instance name)."""
    cfg = lu.ctx.config.config
    nodes = sorted((n for n in cfg.nodes.values() if n.vm_capable and not n.offline),
                   key=lambda n: n.name)
    if not nodes:
        return {}, {}
    rpc = lu.ctx.rpc()
    infos = await rpc.call([target(n) for n in nodes], "node_info", [])
    hvs = list(cfg.cluster.enabled_hypervisors)
    hvparams = {hv: dict(cfg.cluster.hvparams.get(hv, {})) for hv in hvs}
    running_info = await rpc.call([target(n) for n in nodes], "all_instances_info",
                                  [hvs, hvparams])
    lvm: dict[str, dict[str, tuple[int, int]]] = {}
    if template in build.LVM_TEMPLATES and cfg.cluster.volume_group_name:
        lvm = await _lvm_figures(lu, nodes, cfg.cluster.volume_group_name)
    live: dict[str, build.LiveNode | None] = {}
    running: dict[str, dict[str, int]] = {}
    for node in nodes:
        result = infos[node.name]
        result.raise_if_failed(f"Can't get data for node {node.name}")
        figures = build.LiveNode.from_node_info(result.payload or {})
        if lvm.get(node.uuid):
            figures = build.LiveNode(
                memory_total=figures.memory_total, memory_free=figures.memory_free,
                memory_dom0=figures.memory_dom0, cpu_total=figures.cpu_total,
                cpu_dom0=figures.cpu_dom0, storage={**figures.storage, **lvm[node.uuid]})
        live[node.uuid] = figures
        answer = running_info.get(node.name)
        payload = answer.payload if answer is not None and answer.success else None
        if isinstance(payload, dict):
            running[node.uuid] = {name: _int(info.get("memory")) for name, info
                                  in payload.items() if isinstance(info, dict)}
    return live, running


async def build_input(lu: LogicalUnit, request: Any, cfg: ConfigData | None = None
                      ) -> AllocatorInput:
    """The input of ``request`` on the cluster as it is now (live node data included),
    or as ``cfg`` (a view of the config) describes it.

    The model is built in the master's I/O pool, off the reactor (a second or more
    at a thousand nodes); the config is copy-on-write, so the snapshot read there
    does not change under it."""
    cfg = cfg if cfg is not None else lu.ctx.config.config
    template = build.request_template(cfg, request)
    live, running = await live_node_data(lu, template)
    ialloc: AllocatorInput = await lu.ctx.run_blocking(build.build_input, cfg, request,
                                                       live, running)
    return ialloc


def input_text(ialloc: AllocatorInput) -> str:
    """The input file's text (Ganeti's serializer: JSON)."""
    return json.dumps(render_input(ialloc))


async def render(lu: LogicalUnit, ialloc: AllocatorInput) -> str:
    """:func:`input_text`, in the master's I/O pool (megabytes at a thousand nodes)."""
    text: str = await lu.ctx.run_blocking(input_text, ialloc)
    return text


def _runner(lu: LogicalUnit) -> TextRunner:
    runner = lu.ctx.allocators
    if runner is None:
        raise OpExecError("This master cannot run instance allocators")
    return runner


async def run_text(lu: LogicalUnit, name: str, text: str,
                   extra: Mapping[str, str | None] | None = None) -> str:
    """The raw output of allocator ``name`` on ``text`` (OP_TEST_ALLOCATOR's "out");
    ``extra``: the request's own options (Ganeti's GetExtraParams) after the
    cluster's."""
    params = {k: (None if v is None else str(v))
              for k, v in lu.ctx.config.config.cluster.default_iallocator_params.items()}
    params.update(extra or {})
    return await _runner(lu).run_text(name, text, params)


async def run(lu: LogicalUnit, names: Sequence[str], ialloc: AllocatorInput,
              extra: Mapping[str, str | None] | None = None) -> tuple[str, Answer]:
    """Run the allocators ``names`` in order on ``ialloc`` until one answers successfully:
    that one's name and answer.  A failure of all of them: the last one's error, or its
    unsuccessful answer; each earlier failure is logged in the job.  ``extra``: the
    request's own options (``ignore-soft-errors`` of a node evacuation)."""
    text = await render(lu, ialloc)
    last: tuple[str, Answer] | None = None
    for index, name in enumerate(names):
        try:
            answer = parse_answer(await run_text(lu, name, text, extra), ialloc)
        except GenericError as err:
            if index == len(names) - 1:
                raise
            lu.ctx.feedback("message", f"iallocator '{name}' failed ({err}), trying "
                                       f"'{names[index + 1]}'")
            continue
        if answer.success:
            return name, answer
        last = (name, answer)
        if index < len(names) - 1:
            lu.ctx.feedback("message", f"iallocator '{name}' found no solution "
                                       f"({answer.info}), trying '{names[index + 1]}'")
    if last is None:
        raise OpExecError("No iallocator to run")
    return last


__all__ = ["DEFAULT_SHORTCUT", "TextRunner", "allocator_names", "build_input", "input_text",
           "live_node_data", "render", "run", "run_text", "split_names"]

