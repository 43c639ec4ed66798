"""hooks_runner: run one phase of an opcode's hook scripts on this node (Ganeti's
HooksRunner); design: docs/design/hooks.md.

The scripts of ``HOOKS_BASE_DIR/<hpath>-<phase>.d/`` run one after the other
in the order of their names, as run-parts runs them: names starting with a
dot are ignored, a name that does not match ``[a-zA-Z0-9_-]+`` or a file that
is not an executable regular file is skipped (reported, not run).  Each
script gets exactly the environment the master sent, ``PATH`` set to
Ganeti's, standard input closed and ``/`` as working directory.  It runs in
a session of its own through the daemon's :class:`~ganeti.noded.procs.ChildProcesses`
(``spawnProcess``), so the reactor never waits and a script that outlives its
timeout is ended with its children: SIGTERM, then SIGKILL after a grace period
(Ganeti has no per-script timeout; the call's own timeout bounds the run
there).  Cancelling the call, or stopping the daemon, ends the running script
the same way.

The answer is Ganeti's: ``[[<hpath>-<phase>.d/<name>, status, output], ...]``
with status 0 (skipped), 1 (failed) or 2 (succeeded) and the output
(standard output, then standard error) stripped and escaped as Ganeti's.
"""

from __future__ import annotations

import os
from typing import Any

from twisted.internet import defer
from twisted.logger import Logger

from ganeti.core import hooks
from ganeti.core.textutil import safe_encode
from ganeti.noded.backend.context import NodeContext, RPCFail, Runner
from ganeti.noded.procs import ChildProcesses

#: Seconds one script may run before it is ended.
SCRIPT_TIMEOUT = 300.0

log = Logger()


def scan(dir_name: str) -> list[tuple[str, bool]]:
    """The visible entries of ``dir_name`` by name, each with whether it may run.

    Blocking (a directory listing and a stat per entry): call through the
    thread pool.  A missing directory, or one that cannot be listed, has no
    scripts (as Ganeti's, which logs no warning for every operation).
    """
    if not os.path.isdir(dir_name):
        return []
    try:
        names = os.listdir(dir_name)
    except OSError as err:
        log.warn("Hooks: cannot list {dir}: {error}", dir=dir_name, error=err)
        return []
    out: list[tuple[str, bool]] = []
    for name in sorted(n for n in names if not n.startswith(".")):
        path = os.path.join(dir_name, name)
        runnable = (hooks.SCRIPT_NAME_RE.fullmatch(name) is not None
                    and os.path.isfile(path) and os.access(path, os.X_OK))
        out.append((name, runnable))
    return out


async def run_script(children: ChildProcesses, path: str, env: dict[str, str],
                     timeout: float) -> tuple[int, str]:
    """Run one script in its own process group (:mod:`ganeti.noded.procs`);
    ``(status, output)`` as a ``hooks_runner`` entry has them.  A timeout ends
    the script's whole group; so does cancelling the call."""
    out = await children.run([path], env=env, timeout=timeout)
    if out.exec_error is not None:
        return hooks.HKR_FAIL, safe_encode(
            f"Hook script execution error: {out.exec_error}")
    text = (out.stdout + out.stderr).decode("utf-8", "replace").strip()
    if out.timed_out:
        text = (text + "\n" if text else "") + f"terminated after timeout of {timeout:.2f} seconds"
    status = hooks.HKR_SUCCESS if out.ok else hooks.HKR_FAIL
    return status, safe_encode(text)


async def run_hooks(base_dir: str, hpath: str, phase: str, env: dict[str, str], *,
                    children: ChildProcesses | None, run: Runner,
                    timeout: float = SCRIPT_TIMEOUT) -> list[list[Any]]:
    """Run the scripts of ``<base_dir>/<hpath>-<phase>.d`` in order; Ganeti's answer.

    ``children`` None: RPCFail if there is a script to run (a daemon that may
    not start programs).
    """
    subdir = f"{hpath}-{phase}.d"
    dir_name = os.path.join(base_dir, subdir)
    entries: list[tuple[str, bool]] = await run(scan, dir_name)
    if children is None and any(runnable for _, runnable in entries):
        raise RPCFail("This node daemon cannot start programs")
    full_env = dict(env)
    full_env["PATH"] = hooks.HOOKS_PATH
    results: list[list[Any]] = []
    for name, runnable in entries:
        script = f"{subdir}/{name}"
        if not runnable:
            results.append([script, hooks.HKR_SKIP, ""])
            continue
        assert children is not None
        status, output = await run_script(children, os.path.join(dir_name, name), full_env,
                                          timeout)
        if status == hooks.HKR_FAIL:
            log.info("Hook {script} failed: {output}", script=script, output=output[:200])
        results.append([script, status, output])
    return results


def hooks_runner(ctx: NodeContext, hpath: str, phase: str,
                 env: dict[str, str]) -> defer.Deferred[list[list[Any]]]:
    """The ``hooks_runner`` call: run the scripts of one hooks phase on this node."""
    return defer.Deferred.fromCoroutine(run_hooks(
        ctx.paths.hooks_base_dir, hpath, phase, env, children=ctx.children, run=ctx.run))
