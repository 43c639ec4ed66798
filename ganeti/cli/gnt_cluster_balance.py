"""``gnt-cluster balance``: compute moves that lower the cluster score and execute them
(an extension: Ganeti balances with hbal; ``hbal -L -X`` works against this cluster too).

The moves come from an allocator's ``balance`` answer (OP_TEST_ALLOCATOR in
direction ``out``: the built-in ``ganeti-place`` unless ``-I`` names another),
computed with the master's live node data.  They are printed as hbal prints
its solution, confirmed unless ``-f``, and submitted as one job per move with
the opcodes hail writes for it (migrate, failover, replace-disks), each job
depending on the previous one's success: a move was planned on the state the
previous ones leave, so a failure stops the rest.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core.placement.moves import (
    FAILOVER_AND_REPLACE,
    FAILOVER_TO_ANY,
    REPLACE_AND_FAILOVER,
    REPLACE_PRIMARY,
    REPLACE_SECONDARY,
    move_opcodes,
)

BUILTIN = "ganeti-place"
#: Which of a move's new nodes (primary first) is the target of its kind (failover: none).
_TARGET_INDEX = {FAILOVER_TO_ANY: 0, REPLACE_PRIMARY: 0, REPLACE_AND_FAILOVER: 0,
                 REPLACE_SECONDARY: 1, FAILOVER_AND_REPLACE: 1}


def setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")
    p.add_argument("-I", "--iallocator", default=BUILTIN, metavar="NAME",
                   help=f"the allocator that computes the moves (default: {BUILTIN})")
    p.add_argument("--max-moves", type=int, default=0, metavar="N",
                   help="at most N moves (default 0: until no move gains enough)")
    p.add_argument("--min-gain", type=float, default=0.01, metavar="SCORE",
                   help="the smallest score gain of a move (default 0.01)")
    p.add_argument("-G", "--group", metavar="GROUP", help="balance this node group only")
    p.add_argument("--print-only", action="store_true",
                   help="print the moves, execute nothing")
    jobs.add_job_options(p, submit=False)


def move_jobs(moves: Sequence[Sequence[Any]]) -> list[list[dict[str, Any]]]:
    """One job per move ``[instance, nodes, kind, score]`` (the opcodes hail writes),
    each after the first depending on the previous one's success (relative id)."""
    out = []
    for index, (instance, nodes, kind, _score) in enumerate(moves):
        where = _TARGET_INDEX.get(kind)
        ops = move_opcodes(instance, kind, None if where is None else nodes[where])
        if index:
            ops[0] = {**ops[0], "depends": [[-1, ["success"]]]}
        out.append(ops)
    return out


def describe(moves: Sequence[Sequence[Any]], initial: float) -> list[str]:
    """hbal's solution lines: ``  1. inst node1 => node2  score a=kind``."""
    lines = []
    for index, (instance, nodes, kind, score) in enumerate(moves, 1):
        lines.append(f"  {index:>2}. {instance} => {':'.join(nodes)}  {score:.8f} a={kind}")
    return [f"Initial score: {initial:.8f}", *lines]


def cmd_balance(ctx: Context, opts: argparse.Namespace) -> int:
    """Compute the moves (OP_TEST_ALLOCATOR balance) and execute them, one job each."""
    op = {"OP_ID": "OP_TEST_ALLOCATOR", "mode": "balance", "direction": "out",
          "name": "cluster", "iallocator": opts.iallocator, "count": opts.max_moves,
          "min_gain": opts.min_gain, "group_name": opts.group}
    text = jobs.submit_opcode(ctx, opts, op)
    answer = json.loads(text) if isinstance(text, str) else text
    if not answer.get("success"):
        ctx.err(f"Can't compute the moves with '{opts.iallocator}': {answer.get('info')}")
        return c.EXIT_FAILURE
    result = answer["result"]
    moves = result["moves"]
    if not moves:
        ctx.out(f"Cluster is already well balanced (score {result['initial_score']:.8f}).")
        return c.EXIT_SUCCESS
    for line in describe(moves, result["initial_score"]):
        ctx.out(line)
    ctx.out(f"Cluster score improved from {result['initial_score']:.8f} to "
            f"{result['final_score']:.8f}")
    if opts.print_only:
        return c.EXIT_SUCCESS
    if not (opts.force or jobs.ask_user(f"Execute {len(moves)} move(s)?")):
        return c.EXIT_CONFIRMATION
    ops = move_jobs(moves)
    jobs.set_generic_options(ctx, opts, [op for job in ops for op in job])
    submitted = ctx.luxi().call("SubmitManyJobs", ops)
    return jobs.report_submitted(ctx, {"jobs": submitted}, "All moves executed successfully.",
                                 "There were {bad} errors during the balancing.")


DESCRIPTION = (
    "Compute moves that lower the cluster score (an allocator's balance answer, the "
    "built-in ganeti-place by default; hbal's score) and execute them, one job per move "
    "(migrate, failover or replace-disks as hail writes them), each waiting for the "
    "previous one's success. An extension: Ganeti balances with hbal -X, which works "
    "against this cluster too. Asks for confirmation unless -f.")

__all__ = ["DESCRIPTION", "cmd_balance", "describe", "move_jobs", "setup"]
