"""``gnt-instance add --forthcoming`` and ``--commit``: reservations (seed 004).

Ganeti 3.0's two flags of ``add``, with its help texts and its client-side
refusal of both at once.  Where ours goes beyond Ganeti 3.0 (see
docs/compat.md): with ``--forthcoming`` the instance name may be left out
(the master names the reservation by its UUID until it is renamed), and so
may the disks and NICs; ``--commit NAME`` needs only the name, the
reservation supplying what the command line leaves out.  A reservation's job
returns ``{"uuid": UUID, "nodes": [primary, (secondary)]}``, which is
printed; a commit returns the nodes, as a plain create does, and prints
nothing more than the job's log (as Ganeti).
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli.framework import Context, UsageError
from ganeti.core import errors

#: Ganeti 3.0's help texts of the two flags
FORTHCOMING_HELP = "Only reserve resources, but do not create the instance yet"
COMMIT_HELP = "The instance is already reserved and should be committed now"
#: Ganeti 3.0's client-side refusal of both flags at once (its spelling)
EXCLUSIVE = ("Creating an instance only forthcoming and commiting it are mutally "
             "exclusive")


def add_options(p: argparse.ArgumentParser) -> None:
    """``--forthcoming`` and ``--commit`` (``gnt-instance add`` only)."""
    p.add_argument("--forthcoming", action="store_true", default=False,
                   help=FORTHCOMING_HELP + " (the name may then be left out: the "
                        "reservation is named by its UUID until renamed)")
    p.add_argument("--commit", action="store_true", default=False,
                   help=COMMIT_HELP + " (only the name is needed; options given "
                        "override or complete the reservation)")


def is_forthcoming(opts: argparse.Namespace) -> bool:
    return bool(getattr(opts, "forthcoming", False))


def is_commit(opts: argparse.Namespace) -> bool:
    return bool(getattr(opts, "commit", False))


def reserving(opts: argparse.Namespace) -> bool:
    """A reservation or its commit: disks and NICs not given are left out."""
    return is_forthcoming(opts) or is_commit(opts)


def check(opts: argparse.Namespace) -> None:
    """Ganeti's checks before anything is parsed: not both flags; a name unless
    ``--forthcoming`` (argparse's own message, as when the name was mandatory)."""
    if is_forthcoming(opts) and is_commit(opts):
        raise errors.OpPrereqError(EXCLUSIVE, errors.ECODE_INVAL)
    if not opts.instance_name and not is_forthcoming(opts):
        raise UsageError("gnt-instance add: the following arguments are required: "
                         "INSTANCE (see 'gnt-instance add --help')")


def disks_given(opts: argparse.Namespace) -> bool:
    return bool(opts.disks) or opts.sd_size is not None


def nics_given(opts: argparse.Namespace) -> bool:
    return bool(opts.nics) or bool(opts.no_nics)


def complete_opcode(op: dict[str, Any], opts: argparse.Namespace) -> dict[str, Any]:
    """The create opcode of a reservation or a commit: the flag set, what was not
    given left out (the master or the reservation supplies it)."""
    if is_forthcoming(opts):
        op["forthcoming"] = True
    if is_commit(opts):
        op["commit"] = True
    if not reserving(opts):
        return op
    if not opts.instance_name:
        op.pop("instance_name", None)
    if not disks_given(opts):
        op.pop("disks", None)
    if not nics_given(opts):
        op.pop("nics", None)
    return op


def dry_run_text(opts: argparse.Namespace, nodes: list[Any]) -> str | None:
    """What a reservation's dry run prints (the nodes it would take); None otherwise."""
    if not is_forthcoming(opts):
        return None
    what = f"instance {opts.instance_name}" if opts.instance_name else "an instance"
    return f"Dry run: {what} would be reserved on {', '.join(map(str, nodes))}"


def report(ctx: Context, opts: argparse.Namespace, result: Any) -> None:
    """Print a reservation's UUID and nodes from its job's result."""
    if not is_forthcoming(opts) or not isinstance(result, dict):
        return
    nodes = ", ".join(str(node) for node in result.get("nodes") or [])
    what = f"instance {opts.instance_name}" if opts.instance_name else "instance"
    ctx.out(f"Forthcoming {what} reserved with UUID {result.get('uuid')} on {nodes}")


__all__ = ["COMMIT_HELP", "EXCLUSIVE", "FORTHCOMING_HELP", "add_options", "check",
           "complete_opcode", "disks_given", "dry_run_text", "report", "reserving"]
