"""gnt-instance batch-create: instances from a JSON file, placed by OP_INSTANCE_MULTI_ALLOC.

Ganeti's format: a JSON list of objects, each the parameters of an
OP_INSTANCE_CREATE (unknown keys are refused, naming the definition's index);
all of them go into one OP_INSTANCE_MULTI_ALLOC with ``-I``'s allocator (or
the cluster's default).  The jobs it submits (one per placed instance) are
followed; the exit status says whether all were created.  Beyond Ganeti's
output, the instances the allocator could not place are listed.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes.table_instance import OP_INSTANCE_CREATE

#: The most bytes read from the definition file.
MAX_FILE = 16 * 1024 * 1024


def setup(p: argparse.ArgumentParser) -> None:
    """Ganeti's options: --dry-run, --priority, -I, --submit."""
    p.add_argument("-I", "--iallocator", metavar="NAME",
                   help="the allocator placing the instances (default: the cluster's)")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("spec", metavar="INSTANCES.JSON", help="the instance definitions")


def opcodes_of(text: str) -> list[dict[str, Any]] | str:
    """The create opcodes of a definition file's text, or why not (a message);
    unknown keys raise Ganeti's OpPrereqError."""
    try:
        data = json.loads(text)
    except ValueError as err:
        return f"Can't parse the instance definition file: {err}"
    if not (isinstance(data, list) and all(isinstance(d, dict) for d in data)):
        return "The instance definition file is not a list of objects"
    known = {p.name for p in OP_INSTANCE_CREATE.all_params}
    out = []
    for idx, inst in enumerate(data):
        unknown = sorted(set(inst) - known - {"OP_ID"})
        if unknown:
            raise OpPrereqError(f"Unknown fields in definition {idx}: {', '.join(unknown)}",
                                ECODE_INVAL)
        out.append({**inst, "OP_ID": OP_INSTANCE_CREATE.op_id})
    return out


def cmd_batch_create(ctx: Context, opts: argparse.Namespace) -> int:
    """Submit the multi-allocation and follow the jobs it submits."""
    try:
        with open(opts.spec, encoding="utf-8") as f:
            text = f.read(MAX_FILE + 1)
    except OSError as err:
        ctx.err(f"Can't parse the instance definition file: {err}")
        return c.EXIT_FAILURE
    instances = opcodes_of(text)
    if isinstance(instances, str):
        ctx.err(instances)
        return c.EXIT_FAILURE
    op: dict[str, Any] = {"OP_ID": "OP_INSTANCE_MULTI_ALLOC", "instances": instances}
    if opts.iallocator:
        op["iallocator"] = opts.iallocator
    result = jobs.submit_or_send(ctx, opts, op)
    if result is jobs.SUBMITTED:
        return c.EXIT_SUCCESS
    failed = list(result.get("failed") or [])
    if failed:
        ctx.out(f"Not placed by the allocator: {', '.join(failed)}")
    if getattr(opts, "dry_run", False):
        ctx.out(f"Dry run: would create {', '.join(result.get('allocatable') or [])}")
        return c.EXIT_SUCCESS
    results = jobs.wait_for_jobs(ctx, result.get("jobs") or [])
    bad = len([row for row in results if not row[0]]) + len(failed)
    if bad == 0:
        ctx.out("All instances created successfully.")
        return c.EXIT_SUCCESS
    ctx.out(f"There were {bad} errors during the creation.")
    return c.EXIT_FAILURE


__all__ = ["cmd_batch_create", "opcodes_of", "setup"]
