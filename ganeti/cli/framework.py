"""Command tables, option parsing, error reporting and exit codes for gnt-* tools.

A tool is a table of :class:`Command` objects.  ``run_tool`` parses ``argv``,
calls the chosen handler with a :class:`Context` (stdout, stderr, paths and a
LUXI client factory, all injectable for tests) and turns Ganeti errors into
one clear message and Ganeti's exit codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TextIO

from ganeti import version
from ganeti.core import constants, errors, ssconf
from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient

Handler = Callable[["Context", argparse.Namespace], int]
ArgSetup = Callable[[argparse.ArgumentParser], None]
LuxiFactory = Callable[[Paths], Any]


class UsageError(Exception):
    """The command line is wrong; the message says how."""


@dataclass
class Command:
    """One sub-command: ``gnt-<tool> <name> ...``."""

    name: str
    handler: Handler
    summary: str
    setup: ArgSetup | None = None
    description: str = ""


@dataclass
class Context:
    """What a handler may touch: output streams, node paths, the master."""

    tool: str
    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str]
    luxi_factory: LuxiFactory
    _paths: Paths | None = None
    _luxi: Any = field(default=None, repr=False)

    @property
    def paths(self) -> Paths:
        """Paths of the node selected by the environment."""
        if self._paths is None:
            self._paths = Paths.from_env(self.environ)
        return self._paths

    def luxi(self) -> Any:
        """A LUXI client connected (lazily) to this node's master socket."""
        if self._luxi is None:
            self._luxi = self.luxi_factory(self.paths)
        return self._luxi

    def out(self, text: str = "") -> None:
        """Print a line to stdout."""
        self.stdout.write(text + "\n")

    def err(self, text: str) -> None:
        """Print a line to stderr."""
        self.stderr.write(text + "\n")


class ToolParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, and prints to our streams."""

    def __init__(self, *args: Any, stdout: TextIO, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stdout = stdout

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")

    def _print_message(self, message: str, file: Any = None) -> None:
        # --help and --version go to the injected stdout, not sys.stdout
        if message:
            self._stdout.write(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._stdout.write(message)
        raise SystemExit(status)


def format_error(err: BaseException) -> tuple[int, str]:
    """Exit code and one-line message for an error, in Ganeti's terms."""
    code = constants.EXIT_FAILURE
    if isinstance(err, errors.OpPrereqError):
        ecode = errors.error_code(err)
        detail = err.args[0] if err.args else ""
        msg = f"Failure: prerequisites not met for this operation: {detail}"
        if ecode:
            msg += f" (error type: {ecode})"
    elif isinstance(err, errors.NoMasterError):
        msg = str(err.args[0]) if err.args else "Cannot communicate with the master daemon"
    elif isinstance(err, errors.PermissionError):
        msg = f"Permission denied: {err.args[0] if err.args else ''}"
    elif isinstance(err, errors.ConfigurationError):
        msg = f"Configuration error: {err.args[0] if err.args else ''}"
        code = 2  # as Ganeti's tools
    elif isinstance(err, errors.OpExecError):
        msg = f"Failure: command execution error: {err.args[0] if err.args else ''}"
    elif isinstance(err, errors.HooksAbort):
        msg = "Failure: hooks execution failed:" + "".join(
            f"\n  node: {e[0]}, script: {e[1]}, output: {e[2]}" if e[2]
            else f"\n  node: {e[0]}, script: {e[1]} (no output)"
            for e in (err.args[0] if err.args and isinstance(err.args[0], list) else [])
            if isinstance(e, (list, tuple)) and len(e) == 3)
    elif isinstance(err, errors.HooksFailure):
        msg = f"Failure: hooks general failure: {err.args[0] if err.args else ''}"
    elif type(err) is errors.GenericError:
        # luxid's plain errors ("Queue drained", an unknown filter rule to delete),
        # as Ganeti's CLI shows them
        msg = f"Unhandled Ganeti error: {err.args[0] if err.args else ''}"
    elif isinstance(err, errors.JobQueueDrainError):
        msg = ("Failure: the job queue is marked for drain and doesn't accept new requests "
               "(undrain it with 'gnt-cluster queue undrain')")
    elif isinstance(err, errors.JobQueueFull):
        msg = ("Failure: the job queue is full and doesn't accept new job submissions until "
               "old jobs are archived ('gnt-job autoarchive')")
    elif isinstance(err, errors.ProtocolError) and not isinstance(err, errors.TimeoutError):
        # (a request the master refused while parsing it, or a broken connection)
        msg = ("Unhandled protocol error while talking to the master daemon:\n"
               f"{err.args[0] if err.args else ''}")
    elif isinstance(err, errors.JobLost):
        msg = f"Error checking job status: {err.args[0] if err.args else ''}"
    elif isinstance(err, errors.TagError):
        msg = f"Failure: invalid tag(s) given: {err.args[0] if err.args else ''}"
    elif isinstance(err, errors.ParameterError):
        msg = f"Failure: unknown/wrong parameter name '{err.args[0] if err.args else ''}'"
    elif isinstance(err, errors.TypeEnforcementError):
        msg = f"Parameter Error: {err.args[0] if err.args else ''}"
    elif isinstance(err, errors.GenericError):
        detail = ", ".join(str(a) for a in err.args)
        msg = f"{type(err).__name__}: {detail}"
    else:
        msg = f"Unexpected error: {type(err).__name__}: {err}"
    return code, msg


def diagnose_no_master(ctx: Context, err: errors.NoMasterError) -> tuple[int, str]:
    """Explain a failed connection to the master: no cluster, wrong node, or daemon down."""
    paths = ctx.paths
    try:
        master = ssconf.read(paths, "master_node")
    except errors.ConfigurationError:
        return (constants.EXIT_NOTCLUSTER,
                f"This node ({paths.hostname}) is not part of a cluster: "
                f"{paths.ssconf_file('master_node')} is missing. Initialise a cluster with "
                "'gnt-cluster init', or set GANETI_ROOTDIR/GANETI_HOSTNAME to a node's.")
    if master != paths.hostname:
        return (constants.EXIT_NOTMASTER,
                f"This is not the master node; run the command on {master}.")
    return format_error(err)


def default_luxi_factory(paths: Paths) -> LuxiClient:
    """A blocking LUXI client for the node's master socket."""
    return LuxiClient(paths.luxi_socket)


def build_parser(tool: str, description: str, commands: Sequence[Command],
                 stdout: TextIO) -> argparse.ArgumentParser:
    """The argparse parser of a tool (also used to write its man page)."""
    parser = ToolParser(prog=tool, description=description, stdout=stdout,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"{tool} (ganeti-twisted {version.PACKAGE_VERSION}) "
                                f"{constants.RELEASE_VERSION}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                parser_class=ToolParser)
    for cmd in commands:
        p = sub.add_parser(cmd.name, help=cmd.summary, stdout=stdout,
                           description=cmd.description or cmd.summary,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if cmd.setup is not None:
            cmd.setup(p)
        p.set_defaults(_handler=cmd.handler)
    return parser


def run_tool(tool: str, description: str, commands: Sequence[Command],
             argv: Sequence[str] | None = None, stdout: TextIO | None = None,
             stderr: TextIO | None = None, environ: Mapping[str, str] | None = None,
             luxi_factory: LuxiFactory | None = None) -> int:
    """Parse ``argv``, run the command, report errors; returns the exit code."""
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(tool, description, commands, stdout)
    ctx = Context(tool=tool, stdout=stdout, stderr=stderr,
                  environ=os.environ if environ is None else environ,
                  luxi_factory=luxi_factory or default_luxi_factory)
    try:
        opts = parser.parse_args(argv)
        if opts.command is None:
            parser.print_help()
            return constants.EXIT_FAILURE
        return int(opts._handler(ctx, opts))
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else constants.EXIT_FAILURE
    except UsageError as err:
        ctx.err(f"Usage error: {err}")
        return constants.EXIT_FAILURE
    except errors.NoMasterError as err:
        code, msg = diagnose_no_master(ctx, err)
        ctx.err(msg)
        return code
    except (errors.GenericError, OSError) as err:
        code, msg = format_error(err)
        ctx.err(msg)
        return code
    except BrokenPipeError:  # output piped into head(1) and the like
        return constants.EXIT_FAILURE
    except KeyboardInterrupt:
        ctx.err("Aborted.")
        return constants.EXIT_FAILURE
    finally:
        if ctx._luxi is not None and hasattr(ctx._luxi, "close"):
            ctx._luxi.close()


def confirm_flag(opts: argparse.Namespace, flag: str, what: str) -> None:
    """Refuse a destructive action unless its explicit flag was given."""
    if not getattr(opts, flag.lstrip("-").replace("-", "_"), False):
        raise UsageError(f"{what} is destructive; add {flag} to confirm")


def format_value(value: Any) -> str:
    """Ganeti-style rendering of a scalar for info output: None and [] are "(none)"."""
    if value is None or value == []:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def print_tree(ctx: Context, data: Any, indent: int = 0) -> None:
    """Print nested dicts as indented ``key: value`` lines, keys sorted."""
    pad = "  " * indent
    if isinstance(data, dict):
        for key in sorted(data):
            value = data[key]
            if isinstance(value, dict):
                ctx.out(f"{pad}{key}:" if value else f"{pad}{key}: (none)")
                print_tree(ctx, value, indent + 1)
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                ctx.out(f"{pad}{key}:")
                for i, item in enumerate(value):
                    ctx.out(f"{pad}  - {i}:")
                    print_tree(ctx, item, indent + 2)
            else:
                ctx.out(f"{pad}{key}: {format_value(value)}")
    else:
        ctx.out(f"{pad}{format_value(data)}")
