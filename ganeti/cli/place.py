"""ganeti-place: the built-in allocator as an iallocator program.

Called as Ganeti calls any iallocator (``ganeti-place [options] INPUT``): it
reads the version-2 input file, prints the JSON answer on stdout and exits 0,
whether the request succeeded or not (the answer says).  An input it cannot
read or parse exits 1 with one line on stderr, no traceback.  Options:
``--no-capacity-checks`` skips the global N+1 check, ``--ignore-soft-errors``
the soft rules (vCPU and spindle ratios, N+1 of the chosen nodes), as hail's.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Sequence

from ganeti.core.errors import ParseError
from ganeti.core.placement import solve, wire
from ganeti.core.placement.requests import REQUEST_TYPES


class _Parser(argparse.ArgumentParser):
    """argparse, exiting 1 with one line on bad usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Bad usage: one line on stderr, exit 1."""
        sys.stderr.write(f"ganeti-place: {message}\n")
        raise SystemExit(1)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ganeti-place",
                     description="Ganeti's iallocator protocol: the built-in allocator.")
    parser.add_argument("input", help="the iallocator input file")
    parser.add_argument("--no-capacity-checks", action="store_true",
                        help="do not check that the cluster stays globally N+1 redundant")
    parser.add_argument("--ignore-soft-errors", action="store_true",
                        help="ignore the soft rules (vCPU and spindle ratios, N+1)")
    return parser


def run(data: object, options: solve.Options) -> wire.Answer:
    """The answer to an input dict (unknown request types get a failed answer)."""
    request = data.get("request") if isinstance(data, dict) else None
    mode = request.get("type") if isinstance(request, dict) else None
    if isinstance(mode, str) and mode not in REQUEST_TYPES:
        return solve.failure(f"request type '{mode}' is not supported by this allocator")
    return solve.answer(wire.parse_input(data), options)


def main(argv: Sequence[str] | None = None) -> int:
    """Read the input named by the one argument, print the answer; 0, or 1 on bad input."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    # a short run that frees by reference counting: the cycle collector would
    # only rescan the input's objects again and again (a quarter of the time)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        if enabled:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    options = solve.Options(capacity_checks=not args.no_capacity_checks,
                            ignore_soft_errors=args.ignore_soft_errors)
    try:
        with open(args.input, "rb") as handle:
            data = json.load(handle)
    except OSError as err:
        sys.stderr.write(f"ganeti-place: cannot read {args.input}: {err.strerror}\n")
        return 1
    except (ValueError, UnicodeDecodeError) as err:
        sys.stderr.write(f"ganeti-place: {args.input} is not JSON: {err}\n")
        return 1
    try:
        answer = run(data, options)
    except ParseError as err:
        sys.stderr.write(f"ganeti-place: {err}\n")
        return 1
    except (ValueError, KeyError, TypeError, AttributeError, ArithmeticError) as err:
        # what a malformed input raises past the parser's own checks
        sys.stderr.write(f"ganeti-place: invalid input: {str(err) or type(err).__name__}\n")
        return 1
    sys.stdout.write(wire.render_answer(answer) + "\n")
    return 0


__all__ = ["main", "run"]

if __name__ == "__main__":
    sys.exit(main())
