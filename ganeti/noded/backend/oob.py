"""run_oob: run a node's out-of-band program (Ganeti's ``RunOob``) on this node.

The master asks its own node daemon to run ``<oob_program> <command> <node>``
(power-on, power-off, power-cycle, power-status, health).  The program is
started with ``spawnProcess`` in a process group of its own
(ganeti/noded/procs.py), so the reactor never waits for it; a program that
outlives its timeout, or whose call the master cancels, is ended with its
group.  Contexts without a process reactor (in-memory tests) run it in
``ctx.run`` instead, with the same answers.  Its standard
output is JSON (or nothing); the decoded value is the result.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from twisted.internet import defer

from ganeti.core import serializer
from ganeti.noded.backend.context import NodeContext, RPCFail

#: Output kept in error messages (a misbehaving program may print a lot).
_MAX_OUTPUT = 4096


def _describe(cmd: list[str]) -> str:
    return " ".join(cmd)


def run_program(program: str, command: str, node: str, timeout: float) -> str:
    """Run the program (blocking; call through the thread pool); its stdout.

    RPCFail, in Ganeti's wording, if it cannot be started, exits non-zero or
    runs past ``timeout`` seconds.
    """
    cmd = [program, command, node]
    if not os.path.isabs(program):
        raise RPCFail(f"'{_describe(cmd)}' failed with reason 'the out-of-band program "
                      "must be an absolute path'; output: ")
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL, close_fds=True)
    except subprocess.TimeoutExpired as err:
        output = (err.stdout or b"").decode("utf-8", "replace")[:_MAX_OUTPUT]
        raise RPCFail(f"'{_describe(cmd)}' failed with reason 'timeout after "
                      f"{timeout:g}s'; output: {output}") from None
    except OSError as err:
        raise RPCFail(f"'{_describe(cmd)}' failed with reason '{err.strerror or err}'; "
                      "output: ") from None
    stdout = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        reason = (f"exited with exit code {proc.returncode}" if proc.returncode > 0
                  else f"terminated by signal {-proc.returncode}")
        output = (stdout + proc.stderr.decode("utf-8", "replace"))[:_MAX_OUTPUT]
        raise RPCFail(f"'{_describe(cmd)}' failed with reason '{reason}'; output: {output}")
    return stdout


def decode_output(output: str) -> Any:
    """The program's answer: its JSON output, or None for no output."""
    if not output.strip():
        return None
    try:
        return serializer.load_json(output)
    except ValueError as err:
        raise RPCFail(f"The out-of-band program's output is not JSON: {err}") from None


async def spawn_program(ctx: NodeContext, program: str, command: str, node: str,
                        timeout: float) -> str:
    """:func:`run_program` through ``spawnProcess`` (ganeti/noded/procs.py): the same
    answers, and cancelling the call (the master went away) ends the program."""
    cmd = [program, command, node]
    if not os.path.isabs(program):
        raise RPCFail(f"'{_describe(cmd)}' failed with reason 'the out-of-band program "
                      "must be an absolute path'; output: ")
    assert ctx.children is not None
    out = await ctx.children.run(cmd, timeout=timeout)
    stdout = out.stdout.decode("utf-8", "replace")
    if out.exec_error is not None:
        raise RPCFail(f"'{_describe(cmd)}' failed with reason '{out.exec_error}'; output: ")
    if out.timed_out:
        raise RPCFail(f"'{_describe(cmd)}' failed with reason 'timeout after "
                      f"{timeout:g}s'; output: {stdout[:_MAX_OUTPUT]}")
    if not out.ok:
        output = (stdout + out.stderr.decode("utf-8", "replace"))[:_MAX_OUTPUT]
        raise RPCFail(f"'{_describe(cmd)}' failed with reason '{out.reason()}'; "
                      f"output: {output}")
    return stdout


async def _run_oob(ctx: NodeContext, program: str, command: str, node: str,
                   timeout: float) -> Any:
    if ctx.children is not None:
        output = await spawn_program(ctx, program, command, node, timeout)
    else:  # no process reactor (in-memory tests): a blocking run in ctx.run
        output = await ctx.run(run_program, program, command, node, timeout)
    return decode_output(output)


def run_oob(ctx: NodeContext, oob_program: str, command: str, remote_node: str,
            timeout: int) -> defer.Deferred[Any]:
    """Run ``oob_program command remote_node`` with ``timeout`` seconds; its JSON answer."""
    return defer.Deferred.fromCoroutine(_run_oob(ctx, oob_program, command, remote_node,
                                                 float(timeout)))
