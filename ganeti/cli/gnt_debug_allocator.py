"""gnt-debug iallocator (alias allocator): OP_TEST_ALLOCATOR, as Ganeti's TestAllocator.

The options and their defaults are Ganeti 3.0's (``--dir in``, ``-m relocate``,
``--memory 128``, ``--disks 4096,4096``, ``--nics 00:11:22:33:44:55`` as
``mac/ip/bridge`` items, ``--count 2``, ...); the positional arguments are the
request's name and, for node-evacuate and change-group, its instances.  The
result (the input text, or the allocator's output) is printed as it is.
Beyond Ganeti: the modes ``capacity`` and ``balance`` (``--count`` is the most
moves, 0 for no limit; ``--min-gain``; ``-g`` the group).
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.cli.gnt_instance_opts import unit_type
from ganeti.core import constants as c
from ganeti.core.errors import GenericError
from ganeti.core.opcodes.table import IALLOCATOR_TEST_MODES
from ganeti.core.params_types import parse_unit


def setup(p: argparse.ArgumentParser) -> None:
    """Ganeti's options of ``gnt-debug iallocator``."""
    p.add_argument("--dir", dest="direction", default="in", choices=["in", "out"],
                   help="show the allocator's input (in) or run it and show its "
                        "output (out)")
    p.add_argument("-I", "--iallocator", metavar="NAME", help="the allocator to run")
    p.add_argument("-m", "--mode", default="relocate", choices=list(IALLOCATOR_TEST_MODES),
                   help=f"request mode (one of {', '.join(IALLOCATOR_TEST_MODES)})")
    p.add_argument("--memory", default=128, type=unit_type,
                   help="memory size of the instance (MiB)")
    p.add_argument("--disks", default="4096,4096",
                   help="comma-separated list of disk sizes (MiB)")
    p.add_argument("-t", "--disk-template", choices=sorted(c.DISK_TEMPLATES),
                   metavar="TEMPLATE", help="disk template")
    p.add_argument("--nics", default="00:11:22:33:44:55",
                   help="comma-separated list of NICs, each mac/ip/bridge (missing "
                        "values are None)")
    p.add_argument("-o", "--os-type", dest="os", metavar="OS", help="operating system")
    p.add_argument("-p", "--vcpus", default=1, type=int, help="number of VCPUs")
    p.add_argument("--tags", default=None, help="comma-separated list of tags")
    p.add_argument("--evac-mode", default="all",
                   choices=["primary-only", "secondary-only", "all"],
                   help="node evacuation mode")
    p.add_argument("--target-groups", default=[], action="append",
                   help="target groups for change-group (repeatable)")
    p.add_argument("--spindle-use", default=1, type=int, help="how many spindles to use")
    p.add_argument("--count", default=2, type=int,
                   help="how many instances to allocate (multi-allocate); the most moves "
                        "(balance, 0: no limit)")
    p.add_argument("-g", "--node-group", dest="group_name", metavar="GROUP",
                   help="node group (allocate, capacity, balance)")
    p.add_argument("--min-gain", default=0.0, type=float,
                   help="smallest score gain of a move (balance)")
    jobs.add_job_options(p, submit=False, dry_run=True)
    p.add_argument("names", nargs="+", metavar="NAME",
                   help="the instance name (and the instances of node-evacuate and "
                        "change-group)")


def _nics(text: str) -> list[dict[str, Any]]:
    out = []
    for item in text.split(","):
        row: list[str | None] = list(item.split("/"))
        row += [None] * (3 - len(row))
        mac, ip, bridge = (value or None for value in row[:3])
        out.append({"mac": mac, "ip": ip, "bridge": bridge})
    return out


def opcode(opts: argparse.Namespace) -> dict[str, Any] | str:
    """The opcode of the options, or the message of a bad ``--disks``."""
    try:
        disks = [{"size": parse_unit(val), "mode": "rw"} for val in opts.disks.split(",")]
    except (GenericError, ValueError) as err:
        return f"Invalid disks parameter '{opts.disks}': {err}"
    op: dict[str, Any] = {
        "OP_ID": "OP_TEST_ALLOCATOR", "mode": opts.mode, "name": opts.names[0],
        "instances": list(opts.names), "memory": opts.memory, "disks": disks,
        "disk_template": opts.disk_template, "nics": _nics(opts.nics), "os": opts.os,
        "vcpus": opts.vcpus, "tags": opts.tags.split(",") if opts.tags else [],
        "direction": opts.direction, "iallocator": opts.iallocator,
        "evac_mode": opts.evac_mode, "target_groups": list(opts.target_groups),
        "spindle_use": opts.spindle_use, "count": opts.count,
        "group_name": opts.group_name}
    if opts.mode == "balance":
        op["min_gain"] = opts.min_gain
    return op


def cmd_iallocator(ctx: Context, opts: argparse.Namespace) -> int:
    """Submit OP_TEST_ALLOCATOR and print its result."""
    op = opcode(opts)
    if isinstance(op, str):
        ctx.err(op)
        return 1
    ctx.out(str(jobs.submit_opcode(ctx, opts, op)))
    return c.EXIT_SUCCESS


__all__ = ["cmd_iallocator", "opcode", "setup"]
