"""node_activate_master_ip, node_deactivate_master_ip, node_change_master_netmask.

Ganeti's RPCs of the same names: the master asks its own node daemon to bring
the cluster's master IP up or down by running the master IP setup script
with ``start`` or ``stop`` and the address in the environment
(``MASTER_NETDEV``, ``MASTER_IP``, ``MASTER_NETMASK``, ``CLUSTER_IP_VERSION``).
The script is ours (:mod:`ganeti.noded.masteripsetup`, run as a program), or
with ``use_external_mip_script`` the administrator's at Ganeti's path
``/etc/ganeti/scripts/master-ip-setup`` (under the node's root).  As
Ganeti's, the local hooks ``master-ip-turnup`` / ``master-ip-turndown`` run
around the script (a failing pre hook stops it).  Every argument is validated
before anything runs; the programs are started through the daemon's
:class:`~ganeti.noded.procs.ChildProcesses`, so the reactor never waits.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer
from twisted.logger import Logger

from ganeti.core import hooks
from ganeti.noded import masteripsetup as mip
from ganeti.noded.backend import hooks as nodehooks
from ganeti.noded.backend.context import NodeContext, RPCFail

log = Logger()

#: Seconds the script may run (fping and arping take a few); the master's call
#: times out earlier and its cancellation ends the script too.
SCRIPT_TIMEOUT = 60.0
#: Ganeti's fake opcodes and hook paths of the local hooks.
TURNUP = ("OP_CLUSTER_IP_TURNUP", "master-ip-turnup")
TURNDOWN = ("OP_CLUSTER_IP_TURNDOWN", "master-ip-turndown")
#: DATA_DIR as hooks see it (a wire path, as the master's hooks get it).
_WIRE_DATA_DIR = "/var/lib/ganeti"
#: Output kept in error messages.
_MAX_OUTPUT = 4096
#: The address families of MasterNetworkParameters.ip_family (socket numbers).
_FAMILIES = {socket.AF_INET: 4, socket.AF_INET6: 6}


@dataclass(frozen=True)
class MasterParams:
    """Ganeti's MasterNetworkParameters, validated."""

    uuid: str
    address: mip.MasterAddress

    def env(self) -> dict[str, str]:
        """The script's environment variables (Ganeti's ``_BuildMasterIpEnv``)."""
        a = self.address
        return {"MASTER_NETDEV": a.netdev, "MASTER_IP": a.ip,
                "MASTER_NETMASK": str(a.netmask), "CLUSTER_IP_VERSION": str(a.version)}


def parse_master_params(value: Any) -> MasterParams:
    """A MasterNetworkParameters dict checked field by field; RPCFail says what is wrong."""
    if not isinstance(value, dict):
        raise RPCFail("master_params must be an object")
    unknown = sorted(set(value) - {"uuid", "ip", "netmask", "netdev", "ip_family"})
    if unknown:
        raise RPCFail(f"master_params has unknown keys: {', '.join(map(str, unknown))}")
    uuid = value.get("uuid")
    if uuid is not None and not isinstance(uuid, str):
        raise RPCFail("master_params.uuid must be a string")
    family = value.get("ip_family", socket.AF_INET)
    if isinstance(family, bool) or family not in _FAMILIES:
        raise RPCFail(f"master_params.ip_family must be {int(socket.AF_INET)} or "
                      f"{int(socket.AF_INET6)}, got {family!r}")
    try:
        netdev = mip.check_netdev(value.get("netdev"))
        ip, netmask, version = mip.check_address(value.get("ip"), value.get("netmask"),
                                                 _FAMILIES[family])
    except mip.SetupError as err:
        raise RPCFail(str(err)) from None
    return MasterParams(uuid or "", mip.MasterAddress(netdev, ip, netmask, version))


def default_script() -> list[str]:
    """The command of our own script (the running Python, the module as a program)."""
    return [sys.executable, "-m", mip.__name__]


def external_script(ctx: NodeContext) -> str:
    """The administrator's script, Ganeti's ``/etc/ganeti/scripts/master-ip-setup``."""
    return os.path.join(ctx.paths.conf_dir, "scripts", "master-ip-setup")


def script_env(params: MasterParams) -> dict[str, str]:
    """The whole environment of the script: the four variables, a PATH and a C locale
    (Ganeti resets the environment), and where our package is."""
    env = params.env()
    env["PATH"] = hooks.HOOKS_PATH
    env["LC_ALL"] = "C"
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.dirname(mip.__file__)))
    return env


def _blocking_run(argv: list[str], env: dict[str, str], timeout: float) -> tuple[bool, str, str]:
    """Contexts without a process reactor (in-memory tests): a blocking run in ``ctx.run``."""
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, timeout=timeout,
                              check=False, stdin=subprocess.DEVNULL, cwd="/")
    except subprocess.TimeoutExpired:
        return False, "timeout", ""
    except OSError as err:
        return False, str(err.strerror or err), ""
    output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    code = proc.returncode
    reason = ("" if code == 0 else f"exited with exit code {code}" if code > 0
              else f"terminated by signal {-code}")
    return code == 0, reason, output


async def run_program(ctx: NodeContext, argv: list[str],
                      env: dict[str, str]) -> tuple[bool, str, str]:
    """``(ok, why not, output)`` of one program run."""
    if ctx.children is None:
        ok, reason, output = await ctx.run(_blocking_run, argv, env, SCRIPT_TIMEOUT)
        return ok, reason, output
    out = await ctx.children.run(argv, env=env, timeout=SCRIPT_TIMEOUT)
    output = (out.stdout + out.stderr).decode("utf-8", "replace")
    return out.ok, out.reason(), output


def _read_ssconf(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


async def _hooks_env(ctx: NodeContext, fake_op: str, hpath: str, phase: str,
                     params: MasterParams) -> dict[str, str]:
    """The environment of the local hooks, as Ganeti's HooksMaster builds it."""
    env = {"GANETI_HOOKS_VERSION": str(hooks.HOOKS_VERSION), "GANETI_OP_CODE": fake_op,
           "GANETI_DATA_DIR": _WIRE_DATA_DIR, "GANETI_HOOKS_PHASE": phase,
           "GANETI_HOOKS_PATH": hpath}
    for key, name in (("GANETI_CLUSTER", "cluster_name"), ("GANETI_MASTER", "master_node")):
        value = await ctx.run(_read_ssconf, ctx.paths.ssconf_file(name))
        if value:
            env[key] = value
    own = {f"GANETI_{k}": v for k, v in params.env().items()}
    env.update(own)
    if phase == hooks.PHASE_POST:
        env.update({f"GANETI_POST_{k}": v for k, v in params.env().items()})
    return env


async def _run_local_hooks(ctx: NodeContext, fake_op: str, hpath: str, phase: str,
                           params: MasterParams) -> None:
    """One phase of the local hooks; RPCFail if a pre hook fails (post: logged)."""
    env = await _hooks_env(ctx, fake_op, hpath, phase, params)
    results = await nodehooks.run_hooks(ctx.paths.hooks_base_dir, hpath, phase, env,
                                        children=ctx.children, run=ctx.run)
    failed = [(script, output) for script, status, output in results
              if status == hooks.HKR_FAIL]
    if not failed:
        return
    text = "; ".join(f"{script}: {output or '(no output)'}" for script, output in failed)
    if phase == hooks.PHASE_PRE:
        raise RPCFail(f"Hook(s) failed: {text}")
    log.warn("Post hook(s) of {hpath} failed: {text}", hpath=hpath, text=text)


async def _setup(ctx: NodeContext, master_params: Any, use_external: Any, action: str,
                 hook: tuple[str, str]) -> None:
    params = parse_master_params(master_params)
    if not isinstance(use_external, bool):
        raise RPCFail("use_external_mip_script must be true or false")
    if use_external:
        path = external_script(ctx)
        if not await ctx.run(os.access, path, os.X_OK):
            raise RPCFail(f"Failed to {action} the master IP. The external master IP "
                          f"setup script {path} does not exist or is not executable")
        argv = [path, action]
    else:
        argv = [*default_script(), action]
    fake_op, hpath = hook
    await _run_local_hooks(ctx, fake_op, hpath, hooks.PHASE_PRE, params)
    ok, reason, output = await run_program(ctx, argv, script_env(params))
    output = output.strip()[:_MAX_OUTPUT]
    if not ok:
        log.error("Failed to {action} the master IP ({reason}): {output}",
                  action=action, reason=reason, output=output)
        raise RPCFail(f"Failed to {action} the master IP. Script return value: {reason}, "
                      f"output: '{output}'")
    if output:
        log.info("Master IP setup ({action}): {output}", action=action, output=output)
    await _run_local_hooks(ctx, fake_op, hpath, hooks.PHASE_POST, params)


def node_activate_master_ip(ctx: NodeContext, master_params: Any,
                            use_external_mip_script: Any) -> defer.Deferred[None]:
    """Bring the master IP up on this node (``start``)."""
    return defer.Deferred.fromCoroutine(_setup(ctx, master_params, use_external_mip_script,
                                               mip.START, TURNUP))


def node_deactivate_master_ip(ctx: NodeContext, master_params: Any,
                              use_external_mip_script: Any) -> defer.Deferred[None]:
    """Take the master IP down on this node (``stop``)."""
    return defer.Deferred.fromCoroutine(_setup(ctx, master_params, use_external_mip_script,
                                               mip.STOP, TURNDOWN))


def _change_netmask(old: mip.MasterAddress, new_netmask: int) -> str:
    try:
        return mip.change_netmask(old, new_netmask, mip.run_command)
    except mip.SetupError as err:
        raise RPCFail(str(err)) from None


async def _netmask(ctx: NodeContext, old_netmask: Any, netmask: Any, master_ip: Any,
                   master_netdev: Any) -> None:
    try:
        netdev = mip.check_netdev(master_netdev)
        version = 6 if isinstance(master_ip, str) and ":" in master_ip else 4
        ip, old, _ = mip.check_address(master_ip, old_netmask, version)
        _, new, _ = mip.check_address(master_ip, netmask, version)
    except mip.SetupError as err:
        raise RPCFail(str(err)) from None
    if old == new:
        return
    message = await ctx.run(_change_netmask, mip.MasterAddress(netdev, ip, old, version), new)
    log.info("{message}", message=message)


def node_change_master_netmask(ctx: NodeContext, old_netmask: Any, netmask: Any,
                               master_ip: Any, master_netdev: Any) -> defer.Deferred[None]:
    """Ganeti's ChangeMasterNetmask: the master IP moves from ``old_netmask`` to ``netmask``
    (``ip`` run in the thread pool: two short commands)."""
    return defer.Deferred.fromCoroutine(_netmask(ctx, old_netmask, netmask, master_ip,
                                                 master_netdev))
