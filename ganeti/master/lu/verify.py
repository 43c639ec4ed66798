"""Cluster verification and redistribution of the config and ancillary files.

``OP_CLUSTER_VERIFY`` submits one ``OP_CLUSTER_VERIFY_CONFIG`` job and one
``OP_CLUSTER_VERIFY_GROUP`` job per node group (by UUID, each depending on
the config job) and returns their ids, as in Ganeti.  Each verify job
reports its findings as log lines in Ganeti's form (see
:mod:`ganeti.master.lu.verify_report`) and returns True when it found no
error.  The group verification lives in :mod:`ganeti.master.lu.verify_group`.
"""

from __future__ import annotations

import os
from typing import Any

from ganeti.core import certverify, constants, hvchecks
from ganeti.core import config as configmod
from ganeti.core import verifycodes as cv
from ganeti.core.errors import OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData
from ganeti.core.opcodes.views import OpClusterVerify, OpClusterVerifyConfig
from ganeti.master.config import nodes as nodesmod
from ganeti.master.lu.base import LogicalUnit, ResultWithJobs
from ganeti.master.lu.verify_report import VerifyReporter

_COMMON = ("debug_simulate_errors", "verbose", "error_codes", "skip_checks")
_TRUE_WORDS = {"true", "false"}


class LUClusterVerify(LogicalUnit):
    """OP_CLUSTER_VERIFY: submit the verify jobs; ``{"jobs": [[true, id], ...]}``.

    As Ganeti's, an unknown ``group_name`` is not checked here: the group job fails.
    """

    OP_ID = "OP_CLUSTER_VERIFY"
    REQ_BGL = False
    op: OpClusterVerify

    @property
    def uses_locks(self) -> bool:
        return False

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        common = {k: getattr(self.op, k) for k in _COMMON}
        ignore = list(self.op.ignore_errors or [])
        jobs: list[list[dict[str, Any]]] = []
        if self.op.group_name:
            groups = [self.op.group_name]
        else:
            groups = list(cfg.nodegroups)
            # (Ganeti's OP_CLUSTER_VERIFY_CONFIG has no skip_checks)
            jobs.append([{"OP_ID": "OP_CLUSTER_VERIFY_CONFIG", "ignore_errors": ignore,
                          **{k: v for k, v in common.items() if k != "skip_checks"}}])
        for group in groups:
            op: dict[str, Any] = {"OP_ID": "OP_CLUSTER_VERIFY_GROUP", "group_name": group,
                                  "ignore_errors": ignore,
                                  "verify_clutter": bool(self.op.verify_clutter),
                                  **common}
            if not self.op.group_name:
                op["depends"] = [[-len(jobs), []]]  # always after the config job
            jobs.append([op])
        return ResultWithJobs(jobs)  # the processor submits them


def hv_syntax_problem(params: dict[str, Any], defaults: dict[str, Any],
                      hypervisor: str | None = None) -> str | None:
    """The first syntax problem of hypervisor parameters (Ganeti's ForceDictType, then
    with ``hypervisor`` its CheckParameterSyntax)."""
    for key, value in params.items():
        if key not in defaults:
            return f"Unknown parameter '{key}'"
        default = defaults[key]
        if isinstance(default, bool):
            if isinstance(value, str) and value and value.lower() not in _TRUE_WORDS:
                return f"'{key}' (value {value}) is not a valid boolean"
        elif isinstance(default, int):
            try:
                int(value)
            except (TypeError, ValueError):
                return f"'{key}' (value {value}) is not a valid integer"
        elif isinstance(default, float):
            try:
                float(value)
            except (TypeError, ValueError):
                return f"'{key}' (value {value}) is not a valid float"
        elif isinstance(default, str):
            if not isinstance(value, str) and value is not False:
                return f"'{key}' (value {value}) is not a valid string"
    mode = params.get("migration_mode")
    if mode is not None and mode not in ("live", "non-live"):
        return f"Invalid migration mode '{mode}', must be one of live, non-live"
    if hypervisor is not None:
        try:
            hvchecks.check_syntax(hypervisor, params)
        except OpPrereqError as err:
            return str(err.args[0])
    return None


def hv_parameter_sets(cfg: ConfigData) -> list[tuple[str, str, dict[str, Any]]]:
    """``(origin, hypervisor, filled parameters)`` to check, as Ganeti's."""
    cluster = cfg.cluster
    out = []
    for hv in cluster.enabled_hypervisors:
        out.append(("cluster", hv, {**constants.HVC_DEFAULTS.get(hv, {}),
                                    **cluster.hvparams.get(hv, {})}))
    for os_name, os_hvp in sorted(cluster.os_hvp.items()):
        for hv, params in sorted(os_hvp.items()):
            if params:
                out.append((f"os {os_name}", hv, {**constants.HVC_DEFAULTS.get(hv, {}),
                                                   **cluster.hvparams.get(hv, {}), **params}))
    for inst in sorted(cfg.instances.values(), key=lambda i: i.name):
        if inst.hvparams:
            hv = inst.hypervisor
            out.append((f"instance {inst.name}", hv,
                        {**constants.HVC_DEFAULTS.get(hv, {}), **cluster.hvparams.get(hv, {}),
                         **inst.hvparams}))
    return out


class LUClusterVerifyConfig(VerifyReporter, LogicalUnit):
    """OP_CLUSTER_VERIFY_CONFIG: config, certificates, hypervisor parameters, groups."""

    OP_ID = "OP_CLUSTER_VERIFY_CONFIG"
    REQ_BGL = False
    op: OpClusterVerifyConfig

    def _cert_files(self) -> list[tuple[str, bytes | None]]:
        """The master's certificates (blocking): ``(path, content or None)``."""
        paths = self.ctx.replicator.paths if self.ctx.replicator else None
        if paths is None:
            return []
        out: list[tuple[str, bytes | None]] = []
        for path in (paths.server_pem, paths.rapi_pem):
            try:
                with open(path, "rb") as f:
                    out.append((path, f.read()))
            except FileNotFoundError:
                out.append((path, None))
        return out

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        self.step("Verifying cluster config")
        problems = list(configmod.verify(cfg))
        current, desired = nodesmod.candidate_stats(cfg)
        if current < desired:
            problems.append(f"Not enough master candidates: actual {current}, "
                            f"target {desired}")
        self.report(cv.ECLUSTERCFG, None, problems)
        self.step("Verifying cluster certificate files")
        now = self.ctx.clock.seconds()
        certs = await self.ctx.run_blocking(self._cert_files)
        for path, pem in certs:
            level, msg = certverify.verify_certificate(pem, path, now)
            self.error_if(level, cv.ECLUSTERCERT, None, str(msg),
                          warning=level == cv.WARNING)
        if certs:
            server_pem = certs[0][0]
            readable = await self.ctx.run_blocking(os.access, server_pem, os.R_OK)
            self.error_if(not readable, cv.ECLUSTERCERT, None,
                          f"{server_pem} must be accessible by the master daemon's user")
        self.step("Verifying hypervisor parameters")
        for origin, hv, params in hv_parameter_sets(cfg):
            problem = hv_syntax_problem(params, constants.HVC_DEFAULTS.get(hv, {}), hv)
            if hv not in constants.HVC_DEFAULTS:
                problem = f"Unknown hypervisor '{hv}'"
            # Ganeti names origin and hypervisor the other way round; kept as it prints
            self.error_if(problem, cv.ECLUSTERCFG, None,
                          f"hypervisor {origin} parameters syntax check (source {hv}): "
                          f"{problem}")
        self.step("Verifying all nodes belong to an existing group")
        dangling = sorted((n for n in cfg.nodes.values() if n.group not in cfg.nodegroups),
                          key=lambda n: n.name)
        dangling_ids = {n.uuid for n in dangling}
        by_node: dict[str, list[str]] = {}
        no_node: list[str] = []
        for inst in cfg.instances.values():
            if inst.primary_node in dangling_ids:
                by_node.setdefault(inst.primary_node, []).append(inst.name)
            elif inst.primary_node not in cfg.nodes:
                no_node.append(inst.name)
        pretty = ", ".join(f"{n.name} ({', '.join(sorted(by_node.get(n.uuid, [])))})"
                           for n in dangling)
        self.error_if(dangling, cv.ECLUSTERDANGLINGNODES, None,
                      "the following nodes (and their instances) belong to a non existing "
                      f"group: {pretty}")
        self.error_if(no_node, cv.ECLUSTERDANGLINGINST, None,
                      "the following instances have a non-existing primary-node: "
                      f"{', '.join(sorted(no_node))}")
        return not self.bad


class LUClusterRedistConf(LogicalUnit):
    """OP_CLUSTER_REDIST_CONF: config to candidates, ssconf to all, ancillary files."""

    OP_ID = "OP_CLUSTER_REDIST_CONF"
    REQ_BGL = True

    async def exec(self) -> Any:
        ctx = self.ctx
        cfg = ctx.config.config
        rep = ctx.replicator
        problem = await ctx.config.redistribute()
        if rep is None:
            return None
        # Ganeti's rule: the ancillary files go to every node, config.data to candidates
        failed_files = await rep.push_ancillary(
            [n for n in nodesmod.others(cfg) if not n.offline])
        failures: list[str] = []
        for node in nodesmod.others(cfg):
            for failure in rep.failures.get(node.name, {}).values():
                failures.append(f"{node.name}: {failure.what}: {failure.message}")
        for path, results in failed_files.items():
            for result in results:
                ctx.feedback("message", f"Warning: copy of {path} to {result.node} failed: "
                                        f"{result.fail_msg}")
        for line in failures:
            ctx.feedback("message", f"Warning: {line}")
        if problem is not None:
            raise OpExecError(problem)
        # Ganeti's LUClusterRedistConf reports nothing on success (only the warnings above)
        return None

