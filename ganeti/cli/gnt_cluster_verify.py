"""gnt-cluster verify and verify-disks, as Ganeti 3.0's.

``verify`` submits OP_CLUSTER_VERIFY, follows the jobs it submitted and
exits 1 if one of them failed or found an error.  ``verify-disks`` submits
OP_CLUSTER_VERIFY_DISKS, follows the per-group jobs and prints what needs
doing about instance disks (nothing is printed when no job was needed).
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import jobs
from ganeti.cli.framework import Command, Context, format_error
from ganeti.core import constants, verifycodes


def _setup_verify(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help="verbose output")
    p.add_argument("--error-codes", action="store_true",
                   help="enable parseable error messages (ERROR:ECODE:type:item:message)")
    p.add_argument("--debug-simulate-errors", dest="simulate_errors", action="store_true",
                   help="debugging option that makes the operation treat most runtime "
                        "checks as failed")
    p.add_argument("--no-nplus1-mem", dest="skip_nplusone_mem", action="store_true",
                   help="skip N+1 memory redundancy tests")
    p.add_argument("-I", "--ignore-errors", action="append", default=[], metavar="ECODE",
                   choices=sorted(verifycodes.ALL),
                   help="error code to be reported as a warning (repeatable)")
    p.add_argument("-g", "--node-group", dest="nodegroup", metavar="GROUP",
                   help="verify only this node group (name or UUID)")
    p.add_argument("--verify-ssh-clutter", dest="verify_clutter", action="store_true",
                   help="verify that Ganeti did not clutter up the 'authorized_keys' file "
                        "(no SSH keys are managed here: accepted, nothing to check)")
    jobs.add_job_options(p, submit=False, dry_run=True)


def verify_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_CLUSTER_VERIFY of ``gnt-cluster verify``."""
    skip = [constants.VERIFY_NPLUSONE_MEM] if opts.skip_nplusone_mem else []
    return {"OP_ID": "OP_CLUSTER_VERIFY", "verbose": opts.verbose,
            "error_codes": opts.error_codes,
            "debug_simulate_errors": opts.simulate_errors,
            "skip_checks": skip, "ignore_errors": list(opts.ignore_errors),
            "group_name": opts.nodegroup, "verify_clutter": opts.verify_clutter}


def cmd_verify(ctx: Context, opts: argparse.Namespace) -> int:
    """Verify the cluster: OP_CLUSTER_VERIFY submits the verify jobs, follow each.

    Exit code 1 if a job failed or found errors (its result is false).
    """
    result = jobs.submit_opcode(ctx, opts, verify_opcode(opts))
    submitted = result.get("jobs", []) if isinstance(result, dict) else []
    results = jobs.wait_for_jobs(ctx, submitted)
    bad_jobs = sum(1 for success, _ in results if not success)
    bad_results = sum(1 for success, value in results
                      if success and not (value and value[0]))
    if bad_jobs:
        ctx.out(f"{bad_jobs} job(s) failed while verifying the cluster.")
    if bad_jobs or bad_results:
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def _setup_verify_disks(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--node-group", dest="nodegroup", metavar="GROUP",
                   help="verify only the disks of this node group (name or UUID)")
    jobs.add_job_options(p, submit=False, dry_run=False)


def _report_group(ctx: Context, opts: argparse.Namespace, value: Any) -> int:
    """Print what one OP_GROUP_VERIFY_DISKS result asks for; the exit code."""
    retcode = constants.EXIT_SUCCESS
    try:
        ((bad_nodes, instances, missing),) = value
    except (TypeError, ValueError):
        ctx.out(f"Job failed: {value}")
        return constants.EXIT_FAILURE
    for node, text in bad_nodes.items():
        ctx.out(f"Error gathering data on node {node}: {str(text)[-400:]}")
        retcode = constants.EXIT_FAILURE
        ctx.out("You need to fix these nodes first before fixing instances")
    for name in instances:
        if name in missing:
            continue
        ctx.out(f"Activating disks for instance '{name}'")
        try:
            jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS",
                                           "instance_name": name})
        except Exception as err:  # reported as Ganeti does, then go on
            code, msg = format_error(err)
            retcode |= code
            ctx.err(f"Error activating disks for instance {name}: {msg}")
    if missing:
        for name, volumes in missing.items():
            if all(node in bad_nodes for node, _ in volumes):
                ctx.out(f"Instance {name} cannot be verified as it lives on broken nodes")
                continue
            ctx.out(f"Instance {name} has missing logical volumes:")
            for node, vol in sorted(volumes):
                prefix = "broken node " if node in bad_nodes else ""
                ctx.out(f"\t{prefix}{node} /dev/{vol}")
        ctx.out("You need to replace or recreate disks for all the above instances if this "
                "message persists after fixing broken nodes.")
        retcode = constants.EXIT_FAILURE
    elif not instances:
        ctx.out("No disks need to be activated.")
    return retcode


def cmd_verify_disks(ctx: Context, opts: argparse.Namespace) -> int:
    """OP_CLUSTER_VERIFY_DISKS, then the per-group jobs it submitted, as Ganeti."""
    result = jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_CLUSTER_VERIFY_DISKS",
                                            "group_name": opts.nodegroup})
    submitted = result.get("jobs", []) if isinstance(result, dict) else []
    retcode = constants.EXIT_SUCCESS
    for success, value in jobs.wait_for_jobs(ctx, submitted):
        if not success:
            ctx.out(f"Job failed: {value}")
            continue
        retcode |= _report_group(ctx, opts, value)
    return retcode


COMMANDS = [
    Command("verify", cmd_verify, "Verify the cluster's configuration and nodes",
            _setup_verify,
            "Submit OP_CLUSTER_VERIFY, which submits one job to verify the configuration "
            "and one per node group; wait for each and show its messages. The exit code "
            "is 1 if any of them found an error or failed."),
    Command("verify-disks", cmd_verify_disks, "Verify the disks of the instances",
            _setup_verify_disks,
            "Submit OP_CLUSTER_VERIFY_DISKS, which submits one job per node group (none "
            "when no instance has disks to check); activate the disks that need it and "
            "list missing volumes."),
]
