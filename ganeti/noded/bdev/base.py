"""What the block device modules share: their error and running programs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the context holds the drbd network, which imports this module
    from ganeti.noded.backend.context import NodeContext

#: Seconds a storage program (lvm, blockdev) may run before it is ended.
PROGRAM_TIMEOUT = 300.0


class BlockDeviceError(Exception):
    """A block device operation failed; the message goes to the master."""


@dataclass(frozen=True)
class Outcome:
    """How a program ended: success, its output and, on failure, why."""

    ok: bool
    stdout: str
    stderr: str
    reason: str = ""

    @property
    def output(self) -> str:
        """Both outputs, for error messages."""
        return (self.stdout + self.stderr).strip()


def _blocking(argv: Sequence[str], env: dict[str, str] | None, timeout: float) -> Outcome:
    try:
        proc = subprocess.run(list(argv), capture_output=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL, env=env, close_fds=True)
    except subprocess.TimeoutExpired:
        return Outcome(False, "", "", f"timeout after {timeout:g}s")
    except OSError as err:
        return Outcome(False, "", "", err.strerror or str(err))
    out = proc.stdout.decode("utf-8", "replace")
    err_text = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 0:
        return Outcome(True, out, err_text)
    reason = (f"exited with exit code {proc.returncode}" if proc.returncode > 0
              else f"terminated by signal {-proc.returncode}")
    return Outcome(False, out, err_text, reason)


async def run_program(ctx: NodeContext, argv: Sequence[str],
                      env: dict[str, str] | None = None,
                      timeout: float = PROGRAM_TIMEOUT) -> Outcome:
    """Run ``argv`` (``argv[0]`` absolute) without blocking the reactor: through the
    daemon's child processes (``spawnProcess``), or in ``ctx.run`` where the context
    has none (in-memory tests)."""
    environ = dict(os.environ if env is None else env)
    if ctx.children is None:
        result: Outcome = await ctx.run(_blocking, list(argv), environ, timeout)
        return result
    out = await ctx.children.run(list(argv), env=environ, timeout=timeout)
    stdout = out.stdout.decode("utf-8", "replace")
    stderr = out.stderr.decode("utf-8", "replace")
    if out.ok:
        return Outcome(True, stdout, stderr)
    return Outcome(False, stdout, stderr, out.reason())
