"""OS definition calls: os_diagnose, os_validate, os_get, instance_os_add,
instance_run_rename, os_export (Ganeti's backend: DiagnoseOS, ValidateOS,
InstanceOsAdd, RunRenameInstance, ExportOS).

Definitions are read from the node's search path (``Paths.os_search_path``,
:mod:`ganeti.noded.osdir`) in the thread pool; scripts run through the
daemon's child processes with Ganeti's environment (:mod:`ganeti.noded.osenv`)
and their output in ``LOG_DIR/os/`` (:mod:`ganeti.noded.osrun`).  Failures
answer in Ganeti's words, with the last lines of the script's log.

Given a run id (the optional last argument), a script run also keeps its
output for ``os_output`` (:mod:`ganeti.noded.osoutput`), which the master
reads while the call is pending to stream it into the job's log.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from typing import Any

from twisted.internet import defer

from ganeti.core import rpcdefs
from ganeti.core.rpcdefs.base import RPC_TMO_1DAY, RPC_TMO_FAST, RPC_TMO_SLOW
from ganeti.core.rpcdefs.os import OS_VALIDATE_CALLS, OS_VALIDATE_PARAMETERS, is_os_name
from ganeti.noded import osdir, osenv, osoutput, osrun
from ganeti.noded.backend import lvloops
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev.paths import device_path
from ganeti.noded.hypervisors.base import HypervisorError, check_name

#: Seconds a script may run on the node: a little less than its call's timeout, so
#: the node ends it and answers with its log before the master gives up.
CREATE_TIMEOUT = RPC_TMO_1DAY - 60.0
RENAME_TIMEOUT = RPC_TMO_SLOW - 60.0
VERIFY_TIMEOUT = RPC_TMO_FAST - 30.0


def _instance_name(value: Any) -> str:
    try:
        return check_name(value)
    except HypervisorError as err:
        raise RPCFail(str(err)) from None


def _os_name(value: Any) -> str:
    if not is_os_name(value):
        raise RPCFail(f"Invalid OS name {value!r:.80}")
    return str(value)


async def _definition(ctx: NodeContext, name: str) -> osdir.OsDefinition:
    try:
        osdef: osdir.OsDefinition = await ctx.run(osdir.find_definition, name,
                                                  ctx.paths.os_search_path)
    except osdir.OsError as err:
        raise RPCFail(str(err)) from None
    return osdef


def os_diagnose(ctx: NodeContext) -> defer.Deferred[list[list[Any]]]:
    """Every OS definition on the search path, valid or not."""
    return ctx.run(osdir.diagnose, ctx.paths.os_search_path)


async def _os_validate(ctx: NodeContext, required: bool, name: str, checks: list[str],
                       params: dict[str, Any], force_variant: bool) -> bool:
    unknown = sorted(set(checks) - OS_VALIDATE_CALLS)
    if unknown:
        raise RPCFail(f"Unknown checks required for OS {name}: {', '.join(unknown)}")
    try:
        osdef: osdir.OsDefinition = await ctx.run(osdir.find_definition, name,
                                                  ctx.paths.os_search_path)
    except osdir.OsError as err:
        if required:
            raise RPCFail(str(err)) from None
        return False
    try:
        if not force_variant:
            osdir.check_variant(osdef, name)
        if max(osdef.api_versions) < osdir.API_V20:
            return True
        if OS_VALIDATE_PARAMETERS in checks:
            osdir.check_parameters(osdef, params)
    except osdir.OsError as err:
        raise RPCFail(str(err)) from None
    verify = osdef.script(osdir.SCRIPT_VERIFY)
    assert verify is not None  # required from API 20 on
    env = osenv.core_env(name, osdef, params)
    run = await osrun.run_script(ctx, [verify, *checks], env, osdef.path, None,
                                 [str(v) for v in params.values()], VERIFY_TIMEOUT)
    if not run.ok:
        raise RPCFail(f"OS validation script failed ({run.reason()}), output: {run.tail}")
    return True


def os_validate(ctx: NodeContext, required: bool, name: str, checks: list[str],
                params: dict[str, Any], force_variant: bool) -> defer.Deferred[bool]:
    """Check an OS name and its parameters and run its verify script; False if the OS
    is missing and not ``required``.  The verify output is not logged (all the
    parameters are hidden in it: the node cannot tell secret ones here)."""
    return defer.Deferred.fromCoroutine(_os_validate(ctx, required, _os_name(name), checks,
                                                     params, force_variant))


async def _os_get(ctx: NodeContext, name: str) -> dict[str, Any]:
    return (await _definition(ctx, _os_name(name))).to_dict()


def os_get(ctx: NodeContext, name: str) -> defer.Deferred[dict[str, Any]]:
    """One valid OS definition (not Ganeti 3.0's: its 2.x ``os_get``)."""
    return defer.Deferred.fromCoroutine(_os_get(ctx, name))


async def _prepare(ctx: NodeContext, instance: Mapping[str, Any], script: str | None,
                   debug: int) -> tuple[osdir.OsDefinition, str, dict[str, str]]:
    """The instance's OS definition, the path of ``script`` ('' for None) and the
    script environment."""
    _instance_name(instance.get("name"))
    os_name = _os_name(instance.get("os"))
    osdef = await _definition(ctx, os_name)
    path = osdef.script(script) if script is not None else ""
    if path is None:
        if script == osdir.SCRIPT_CREATE and osdef.script(osdir.SCRIPT_CREATE_UNTRUSTED):
            raise RPCFail(f"OS '{osdef.name}' has only an untrusted create script; it "
                          "must run in a helper VM (install_image), which this node "
                          "does not support")
        raise RPCFail(f"OS '{osdef.name}' has no {script} script")
    try:
        env = osenv.instance_env(instance, osdef,
                                 lambda disk: device_path(disk, ctx.paths), debug)
    except (TypeError, AttributeError, KeyError) as err:
        raise RPCFail(f"Invalid instance description: {err}") from None
    return osdef, path, env


async def _run_for_instance(ctx: NodeContext, instance: Mapping[str, Any], script: str,
                            what: str, env_extra: Mapping[str, str], log_kind: str,
                            log_instance: str, debug: int, timeout: float,
                            run_id: str | None) -> None:
    output = None
    if run_id is not None:
        try:
            output = ctx.os_runs.start(run_id, ctx.clock.seconds())
        except osoutput.RunIdInUse as err:
            raise RPCFail(str(err)) from None
    loops: list[str] = []
    try:
        osdef, path, env = await _prepare(ctx, instance, script, debug)
        env.update(env_extra)
        # volumes without device-mapper: a loop device over each one's range
        ranges, loops = await lvloops.attach(ctx, instance, f"run the OS {what} script of")
        env.update(ranges)
        name = osrun.log_name(log_kind, str(instance["os"]), log_instance, None,
                              ctx.clock.seconds())
        logfile = os.path.join(ctx.paths.os_log_dir, name)
        if output is not None:
            output.log_file = rpcdefs.to_wire_path(ctx.paths.root, logfile)
        run = await osrun.run_script(ctx, [path], env, osdef.path, logfile,
                                     osenv.hidden_values(instance), timeout,
                                     on_line=output.add if output is not None else None)
    finally:
        await lvloops.detach(ctx, loops)
        if output is not None:
            ctx.os_runs.finish(output, ctx.clock.seconds())
    if not run.ok:
        raise RPCFail(f"OS {what} script failed ({run.reason()}), last lines in the log "
                      f"file:\n{run.tail}")


def instance_os_add(ctx: NodeContext, instance: dict[str, Any], reinstall: bool,
                    debug: int, run_id: str | None = None) -> defer.Deferred[None]:
    """Run the OS create script for ``instance`` (``INSTANCE_REINSTALL=1`` on a
    reinstall); its log is ``LOG_DIR/os/add-<os>-<instance>-<time>.log``; its output
    is kept for ``os_output`` under ``run_id`` if given."""
    extra = {"INSTANCE_REINSTALL": "1"} if reinstall else {}
    return defer.Deferred.fromCoroutine(_run_for_instance(
        ctx, instance, osdir.SCRIPT_CREATE, "create", extra, "add",
        _instance_name(instance.get("name")), debug, CREATE_TIMEOUT, run_id))


def instance_run_rename(ctx: NodeContext, instance: dict[str, Any], old_name: str,
                        debug: int, run_id: str | None = None) -> defer.Deferred[None]:
    """Run the OS rename script (``OLD_INSTANCE_NAME``); its log is
    ``LOG_DIR/os/rename-<os>-<old>-<new>-<time>.log``; its output is kept for
    ``os_output`` under ``run_id`` if given."""
    old = _instance_name(old_name)
    new = _instance_name(instance.get("name"))
    return defer.Deferred.fromCoroutine(_run_for_instance(
        ctx, instance, osdir.SCRIPT_RENAME, "rename", {"OLD_INSTANCE_NAME": old}, "rename",
        f"{old}-{new}", debug, RENAME_TIMEOUT, run_id))


def os_output(ctx: NodeContext, run_id: str, offset: int) -> dict[str, Any] | None:
    """The output of the run ``run_id`` from line ``offset`` on (``{"lines", "next",
    "done", "truncated", "log_file"}``), None if this node does not know the run."""
    run = ctx.os_runs.get(run_id, ctx.clock.seconds())
    return None if run is None else run.answer(offset)


def pack_os(os_path: str, env: Mapping[str, str]) -> str:
    """A .tgz holding ``os/`` (the definition, links followed) and ``environment``
    (``NAME=value`` lines); its path (blocking: thread pool)."""
    temp_dir = tempfile.mkdtemp(prefix="ganeti-os-export-")
    try:
        env_path = os.path.join(temp_dir, "environment")
        with open(env_path, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o600)
            f.writelines(f"{k}={v}\n" for k, v in env.items())
        fd, package = tempfile.mkstemp(suffix=".tgz", prefix="ganeti-os-")
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz",
                                                      dereference=True) as tar:
            tar.add(os_path, arcname="./os")
            tar.add(env_path, arcname="./environment")
        return package
    except OSError as err:
        raise RPCFail(f"Failed to create OS archive: {err}") from None
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


async def _os_export(ctx: NodeContext, instance: dict[str, Any],
                     override_env: dict[str, str]) -> str:
    osdef, _, env = await _prepare(ctx, instance, None, 0)
    env.update(override_env)
    path: str = await ctx.run(pack_os, osdef.path, env)
    return path


def os_export(ctx: NodeContext, instance: dict[str, Any],
              override_env: dict[str, str]) -> defer.Deferred[str]:
    """Pack the instance's OS definition and environment (Ganeti's ``ExportOS``, for
    installing in a helper VM); the path of the archive on the node."""
    return defer.Deferred.fromCoroutine(_os_export(ctx, instance, override_env))
