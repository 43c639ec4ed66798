"""The hooks runner on the master (Ganeti's HooksMaster); design: docs/design/hooks.md.

A logical unit takes part in hooks through what :class:`LogicalUnit` declares
(with defaults), as Ganeti's do:

- ``HPATH``: the hooks path (``group-add``: the scripts of
  ``HOOKS_BASE_DIR/group-add-pre.d`` and ``-post.d`` run); units without one
  (the default) run no hooks;
- ``HTYPE``: ``GANETI_OBJECT_TYPE`` (:data:`ganeti.core.hooks.HTYPE_NODE`, ...);
- ``build_hooks_env()``: its own variables, without prefix (``{"GROUP_NAME": ...}``);
- ``build_hooks_nodes()``: ``(pre, post)``, the UUIDs of the nodes each phase runs on;
- ``prepare_post_hook_nodes(uuids)`` (a node that exists only after ``exec``,
  as node-add's) and ``hooks_callback(phase, results, result)`` (cluster verify
  reports the post hooks' results and changes its own); the defaults change nothing.

The processor calls :meth:`HooksRunner.run_pre` after ``check_prereq`` (locks
held) and :meth:`HooksRunner.run_post` after a successful ``exec``.  A failing
pre hook aborts the opcode with Ganeti's ``HooksAbort``; post-hook failures
become warnings in the job's log.  Offline nodes are never contacted.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twisted.logger import Logger

from ganeti.core import hooks
from ganeti.core.errors import HooksAbort, HooksFailure, OpExecError, ProgrammerError
from ganeti.core.objects import ConfigData, Node
from ganeti.master.config import nodes as nodesmod
from ganeti.rpc.noderpc import NodeRpc, NodeTarget
from ganeti.rpc.result import RpcResult

if TYPE_CHECKING:  # base imports this module for LUContext
    from ganeti.master.lu.base import LogicalUnit

log = Logger()

#: Where a phase's warnings go: the job's log (``lu.ctx.feedback``) or the master's.
Warn = Callable[[str], None]


@dataclass(frozen=True)
class NodeHooks:
    """One node's answer to a hooks phase (Ganeti's ``(fail_msg, offline, payload)``)."""

    uuid: str
    name: str
    fail_msg: str | None
    offline: bool
    results: list[tuple[str, int, str]]


@dataclass
class _Run:
    """What the pre phase computed and the post phase reuses."""

    pre_env: dict[str, str]
    pre_nodes: list[str]
    post_nodes: list[str]
    known: dict[str, NodeTarget]  # uuid -> target, as the config was at the pre phase
    names: dict[str, str]  # node name -> uuid


def _uniq(uuids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(uuids))


def _job_log(lu: LogicalUnit) -> Warn:
    return lambda text: lu.ctx.feedback("message", text)


def _master_log(text: str) -> None:
    """The config-update hook's warnings: its job's log is not written to."""
    log.info("config-update hook: {message}", message=text.strip())


class HooksRunner:
    """Runs the pre and post hooks of logical units on their nodes.

    ``rpc`` gives the node RPC client; ``data_dir`` is the master's
    ``DATA_DIR`` (``GANETI_DATA_DIR``).
    """

    def __init__(self, rpc: Callable[[], NodeRpc], data_dir: str) -> None:
        self.rpc = rpc
        self.data_dir = data_dir
        self._runs: weakref.WeakKeyDictionary[LogicalUnit, _Run] = weakref.WeakKeyDictionary()

    # -- environment -----------------------------------------------------------

    @staticmethod
    def _lu_env(lu: LogicalUnit, prefix: str) -> dict[str, str]:
        env = lu.build_hooks_env() or {}
        out: dict[str, str] = {}
        for key, value in env.items():
            if key.upper().startswith(prefix):
                raise ProgrammerError(f"{type(lu).__name__}: hooks variable {key} already "
                                      f"carries the prefix {prefix}")
            out[f"{prefix}{key}"] = str(value)
        return out

    def base_env(self, lu: LogicalUnit, cfg: ConfigData, hpath: str,
                 phase: str) -> dict[str, str]:
        """The variables every hook gets (Ganeti's fixed part)."""
        env = {
            "PATH": hooks.HOOKS_PATH,
            "GANETI_HOOKS_VERSION": str(hooks.HOOKS_VERSION),
            "GANETI_OP_CODE": lu.OP_ID,
            "GANETI_DATA_DIR": self.data_dir,
            "GANETI_HOOKS_PHASE": phase,
            "GANETI_HOOKS_PATH": hpath,
        }
        if lu.HTYPE:
            env["GANETI_OBJECT_TYPE"] = lu.HTYPE
        env["GANETI_CLUSTER"] = cfg.cluster.cluster_name
        master = cfg.nodes.get(cfg.cluster.master_node)
        if master is not None:
            env["GANETI_MASTER"] = master.name
        return env

    def full_env(self, lu: LogicalUnit, cfg: ConfigData, hpath: str, phase: str,
                 phase_env: dict[str, str]) -> dict[str, str]:
        """The fixed part joined with the unit's; a name in both is a programming error."""
        env = self.base_env(lu, cfg, hpath, phase)
        clash = set(env) & set(phase_env)
        if clash:
            raise ProgrammerError(f"{type(lu).__name__}: hooks variables {sorted(clash)} "
                                  "clash with Ganeti's own")
        env.update(phase_env)
        return env

    # -- the phases ------------------------------------------------------------

    async def run_pre(self, lu: LogicalUnit) -> None:
        """Run the unit's pre hooks; HooksAbort if a script failed."""
        hpath = lu.HPATH
        if not hpath:
            return
        cfg = lu.ctx.config.config
        pre_nodes, post_nodes = lu.build_hooks_nodes()
        run = _Run(self._lu_env(lu, "GANETI_"), _uniq(pre_nodes), _uniq(post_nodes),
                   {u: nodesmod.target(n) for u, n in cfg.nodes.items()},
                   {n.name: u for u, n in cfg.nodes.items()})
        self._runs[lu] = run
        found = await self._phase(lu, _job_log(lu), cfg, hpath, hooks.PHASE_PRE, run.pre_env,
                                  run.pre_nodes, run)
        errs = [(node.uuid, script, output) for node in found if not node.offline
                and not node.fail_msg for script, status, output in node.results
                if status == hooks.HKR_FAIL]
        if errs:
            raise HooksAbort(errs)
        lu.hooks_callback(hooks.PHASE_PRE, found, None)

    async def run_post(self, lu: LogicalUnit, result: Any = None) -> Any:
        """Run the unit's post hooks; failures are logged.  Returns the unit's
        result, as its ``hooks_callback`` may have changed it."""
        hpath = lu.HPATH
        if not hpath:
            return result
        cfg = lu.ctx.config.config
        run = self._runs.get(lu)  # kept for the config-update hook (weakly, with the unit)
        if run is None:  # no pre phase ran: compute what it would have
            pre_nodes, post_nodes = lu.build_hooks_nodes()
            run = _Run(self._lu_env(lu, "GANETI_"), _uniq(pre_nodes), _uniq(post_nodes),
                       {}, {})
        nodes = _uniq(lu.prepare_post_hook_nodes(list(run.post_nodes)))
        env = {**self._lu_env(lu, "GANETI_POST_"), **run.pre_env}
        found = await self._phase(lu, _job_log(lu), cfg, hpath, hooks.PHASE_POST, env, nodes,
                                  run)
        self._warn_failures(lu, found)
        return lu.hooks_callback(hooks.PHASE_POST, found, result)

    async def run_config_update(self, lu: LogicalUnit) -> None:
        """Ganeti's special "config-update" hook: a post phase on the master only,
        after a unit that changed the config (whether it then succeeded or not),
        with the unit's pre-phase environment.  As Ganeti's, its results do not reach
        the job: a failing script is logged in the master's log only."""
        cfg = lu.ctx.config.config
        run = self._runs.get(lu)
        if run is None:
            env = self._lu_env(lu, "GANETI_") if lu.HPATH else {}
            run = _Run(env, [], [], {}, {})
        hpath = hooks.HOOKS_NAME_CFGUPDATE
        found = await self._phase(lu, _master_log, cfg, hpath, hooks.PHASE_POST, run.pre_env,
                                  [cfg.cluster.master_node], run)
        for node in found:
            for script, status, output in node.results:
                if status == hooks.HKR_FAIL:
                    log.warn("Hook {script} on {node} failed after {op}: {output}",
                             script=script, node=node.name, op=lu.OP_ID,
                             output=output or "(no output)")

    @staticmethod
    def _warn_failures(lu: LogicalUnit, found: list[NodeHooks]) -> None:
        for node in found:
            if node.offline or node.fail_msg:
                continue
            for script, status, output in node.results:
                if status == hooks.HKR_FAIL:
                    lu.ctx.feedback("message", f" - WARNING: On {node.uuid} script {script} "
                                               f"failed, output: {output or '(no output)'}")

    async def _phase(self, lu: LogicalUnit, warn: Warn, cfg: ConfigData, hpath: str,
                     phase: str, phase_env: dict[str, str], uuids: list[str],
                     run: _Run) -> list[NodeHooks]:
        """Run one phase on ``uuids``; each node's answer, in the order given;
        communication warnings go to ``warn``."""
        if not uuids:
            return []
        env = self.full_env(lu, cfg, hpath, phase, phase_env)
        targets: list[NodeTarget] = []
        names: dict[str, str] = dict(run.names)
        for uuid in uuids:
            node: Node | None = cfg.nodes.get(uuid)
            target = nodesmod.target(node) if node is not None else run.known.get(uuid)
            if target is None:
                log.warn("Hooks {hpath}-{phase}: node {uuid} is not in the configuration",
                         hpath=hpath, phase=phase, uuid=uuid)
                continue
            names[target.name] = uuid
            targets.append(target)
        try:
            rpc = self.rpc()
        except OpExecError as err:  # a master without node RPC (no server.pem) runs none
            log.warn("Hooks {hpath}-{phase} not run: {error}", hpath=hpath, phase=phase,
                     error=err)
            return []
        results: dict[str, RpcResult] = await rpc.call(
            targets, "hooks_runner", [hpath, phase, env])
        if not results and targets:
            if phase == hooks.PHASE_PRE:
                raise HooksFailure("Communication Failure")
            warn(" - WARNING: Communication Failure")
            return []
        found: list[NodeHooks] = []
        for target in targets:
            res = results.get(target.name)
            uuid = names[target.name]
            if res is None:
                found.append(NodeHooks(uuid, target.name, "no answer", False, []))
                continue
            fail_msg = None if res.success else (res.fail_msg or "unknown error")
            payload: list[tuple[str, int, str]] = []
            if res.success:
                try:
                    payload = hooks.check_results(res.payload)
                except ValueError as err:
                    fail_msg = f"invalid hooks answer: {err}"
            if fail_msg and not res.offline:
                warn(f" - WARNING: Communication failure to node {uuid}: {fail_msg}")
            found.append(NodeHooks(uuid, target.name, fail_msg, res.offline, payload))
        return found
