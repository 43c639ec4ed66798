"""Cluster logical units: query and change cluster parameters."""

from __future__ import annotations

import copy
from typing import Any

from ganeti.core import constants, params, uidpool
from ganeti.core.bootstrap import BE_SIZES
from ganeti.core.errors import ECODE_INVAL, ECODE_NOENT, OpPrereqError
from ganeti.core.objects import Cluster, ConfigData
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.node import welcome_candidates
from ganeti.master.nodes import fill_candidate_pool
from ganeti.master.queries import cluster_info

_IPOLICY_KEYS = frozenset({constants.IPOLICY_MINMAX, constants.IPOLICY_STD,
                           constants.IPOLICY_DTS, constants.IPOLICY_VCPU_RATIO,
                           constants.IPOLICY_SPINDLE_RATIO})


class LUClusterQuery(LogicalUnit):
    """OP_CLUSTER_QUERY: the cluster's parameters (the QueryClusterInfo dict)."""

    OP_ID = "OP_CLUSTER_QUERY"
    REQ_BGL = False

    async def exec(self) -> Any:
        return cluster_info(self.ctx.config.config)


def _ranges(value: Any) -> list[tuple[int, int]]:
    ranges = [(int(lo), int(hi)) for lo, hi in value]
    uidpool.check(ranges)
    return sorted(ranges)


def _check_ispecs(specs: Any, where: str) -> dict[str, int]:
    if not isinstance(specs, dict):
        raise OpPrereqError(f"{where} must be an object of instance specs", ECODE_INVAL)
    for key, value in specs.items():
        if key not in constants.ISPECS_PARAMETERS:
            raise OpPrereqError(f"{where}: unknown instance spec {key!r}", ECODE_INVAL)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise OpPrereqError(f"{where}/{key} must be a non-negative integer", ECODE_INVAL)
    return dict(specs)


def merge_ipolicy(current: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """The cluster's instance policy after ``change``, checked for consistency."""
    unknown = sorted(set(change) - _IPOLICY_KEYS)
    if unknown:
        raise OpPrereqError(f"Unknown instance policy key(s): {', '.join(unknown)}",
                            ECODE_INVAL)
    policy = copy.deepcopy(current)
    for ratio in (constants.IPOLICY_VCPU_RATIO, constants.IPOLICY_SPINDLE_RATIO):
        if ratio in change:
            value = change[ratio]
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise OpPrereqError(f"Instance policy {ratio} must be a positive number",
                                    ECODE_INVAL)
            policy[ratio] = float(value)
    if constants.IPOLICY_DTS in change:
        templates = change[constants.IPOLICY_DTS]
        if not isinstance(templates, list) or not all(t in constants.DISK_TEMPLATES
                                                      for t in templates):
            raise OpPrereqError("Instance policy disk-templates must list known disk "
                                "templates", ECODE_INVAL)
        policy[constants.IPOLICY_DTS] = list(templates)
    if constants.IPOLICY_MINMAX in change:
        minmax = change[constants.IPOLICY_MINMAX]
        if not isinstance(minmax, list) or not minmax:
            raise OpPrereqError("Instance policy minmax must be a non-empty list",
                                ECODE_INVAL)
        checked = []
        for i, pair in enumerate(minmax):
            if not isinstance(pair, dict) or set(pair) != {constants.ISPECS_MIN,
                                                           constants.ISPECS_MAX}:
                raise OpPrereqError(f"Instance policy minmax[{i}] needs exactly min and max",
                                    ECODE_INVAL)
            low = _check_ispecs(pair[constants.ISPECS_MIN], f"minmax[{i}]/min")
            high = _check_ispecs(pair[constants.ISPECS_MAX], f"minmax[{i}]/max")
            for key in set(low) & set(high):
                if low[key] > high[key]:
                    raise OpPrereqError(f"Instance policy minmax[{i}]: min {key} is above "
                                        "max", ECODE_INVAL)
            checked.append({constants.ISPECS_MIN: low, constants.ISPECS_MAX: high})
        policy[constants.IPOLICY_MINMAX] = checked
    if constants.IPOLICY_STD in change:
        policy[constants.IPOLICY_STD] = _check_ispecs(change[constants.IPOLICY_STD], "std")
    std = policy.get(constants.IPOLICY_STD, {})
    for key, value in std.items():
        if not any(pair[constants.ISPECS_MIN].get(key, value) <= value
                   <= pair[constants.ISPECS_MAX].get(key, value)
                   for pair in policy.get(constants.IPOLICY_MINMAX, [])):
            raise OpPrereqError(f"Instance policy std {key}={value} is outside every "
                                "min/max range", ECODE_INVAL)
    return policy


class LUClusterSetParams(LogicalUnit):
    """OP_CLUSTER_SET_PARAMS for the parameters this version has.

    Everything is checked in :meth:`check_prereq`, on a copy; :meth:`exec`
    commits the new values in one config change, so a bad parameter changes
    nothing.
    """

    OP_ID = "OP_CLUSTER_SET_PARAMS"
    REQ_BGL = True

    def check_prereq(self) -> None:
        cl = copy.deepcopy(self.ctx.config.config.cluster)
        self.changes: list[tuple[str, Any]] = []
        op = self.op
        for name in ("candidate_pool_size", "max_running_jobs", "max_tracked_jobs",
                     "default_iallocator"):
            if op.get(name) is not None:
                setattr(cl, name, op[name])
                self.changes.append((name, op[name]))
        if op.get("hvparams"):
            for hv, values in op["hvparams"].items():
                if hv not in constants.HVC_DEFAULTS:
                    raise OpPrereqError(f"Hypervisor {hv!r} is not known", ECODE_NOENT)
                checked = params.check_params(values, constants.HVC_DEFAULTS[hv], f"-H {hv}")
                cl.hvparams.setdefault(hv, dict(constants.HVC_DEFAULTS[hv])).update(checked)
            self.changes.append(("hvparams", cl.hvparams))
        if op.get("beparams"):
            be = cl.beparams.setdefault("default", dict(constants.BEC_DEFAULTS))
            be.update(params.check_params(op["beparams"], constants.BEC_DEFAULTS, "-B",
                                          BE_SIZES))
            if be.get(constants.BE_MINMEM, 0) > be.get(constants.BE_MAXMEM, 0):
                raise OpPrereqError("-B: minmem is greater than maxmem", ECODE_INVAL)
            self.changes.append(("beparams", be))
        if op.get("nicparams"):
            nic = cl.nicparams.setdefault("default", dict(constants.NICC_DEFAULTS))
            nic.update(params.check_params(op["nicparams"], constants.NICC_DEFAULTS, "-N"))
            if nic[constants.NIC_MODE] not in constants.NIC_VALID_MODES:
                raise OpPrereqError(f"-N: invalid NIC mode {nic[constants.NIC_MODE]!r}",
                                    ECODE_INVAL)
            self.changes.append(("nicparams", nic))
        if op.get("diskparams"):
            for template, values in op["diskparams"].items():
                if template not in constants.DISK_DT_DEFAULTS:
                    raise OpPrereqError(f"Disk template {template!r} is not known",
                                        ECODE_INVAL)
                defaults = constants.DISK_DT_DEFAULTS[template]
                cl.diskparams.setdefault(template, dict(defaults)).update(
                    params.check_params(values, defaults, f"-D {template}"))
            self.changes.append(("diskparams", cl.diskparams))
        self._uid_pool(cl)
        if op.get("ipolicy"):
            cl.ipolicy = merge_ipolicy(cl.ipolicy, op["ipolicy"])
            self.changes.append(("ipolicy", cl.ipolicy))
        if not self.changes:
            raise OpPrereqError("Please give at least one of the parameters to change",
                                ECODE_INVAL)
        self.new_cluster = cl

    def _uid_pool(self, cl: Cluster) -> None:
        op = self.op
        pool = [(lo, hi) for lo, hi in cl.uid_pool]
        if op.get("uid_pool") is not None:
            pool = _ranges(op["uid_pool"])
        if op.get("add_uids"):
            pool = sorted(set(pool) | set(_ranges(op["add_uids"])))
        if op.get("remove_uids"):
            for rng in _ranges(op["remove_uids"]):
                if rng not in pool:
                    raise OpPrereqError(f"User-id range {uidpool.format_pool([rng])} is not "
                                        "in the pool", ECODE_INVAL)
                pool.remove(rng)
        if any(op.get(k) is not None for k in ("uid_pool", "add_uids", "remove_uids")):
            cl.uid_pool = [[lo, hi] for lo, hi in pool]
            self.changes.append(("uid_pool", uidpool.format_pool(pool)))

    async def exec(self) -> Any:
        if self.op.get("dry_run"):
            return None
        new = self.new_cluster

        def change(cfg: ConfigData) -> list[str]:
            new.serial_no = cfg.cluster.serial_no + 1
            new.mtime = self.ctx.clock.seconds()
            cfg.cluster = copy.deepcopy(new)
            return fill_candidate_pool(cfg, new.mtime)

        promoted = await self.ctx.config.update(change)
        for name, value in self.changes:
            self.ctx.feedback("message", f"Changed {name} to {value}")
        await welcome_candidates(self.ctx, promoted)
        return None
