"""Argument encoders run on the master: the config fills what the node must be told.

An encoder takes the caller's value and an :class:`EncodeContext` (the config
of the moment and, for per-node encoders, the target node) and returns the
wire value, which the call's shape check then validates.  Parameters are
filled with :mod:`ganeti.core.params_fill` -- the same functions LUs and
queries use -- so a node always receives the parameters in force, never only
what an object sets itself (Ganeti's ``ED_INST_DICT*`` encoders).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ganeti.core import diskparams, params_fill
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.rpcdefs.base import EncodeContext


@dataclass(frozen=True)
class InstanceArg:
    """An instance to send, with parameters overriding the filled ones for this
    call only (Ganeti's ``hvp``/``bep``/``osp``, e.g. a start with other memory)."""

    instance: Instance
    hvp: Mapping[str, Any] | None = None
    bep: Mapping[str, Any] | None = None
    osp: Mapping[str, Any] | None = None
    #: secret OS parameters (Ganeti's ``osparams_secret``): given to the OS scripts,
    #: never logged; the node learns their names from ``osparams_secret``
    osp_secret: Mapping[str, Any] | None = None


def _config(ctx: EncodeContext) -> ConfigData:
    if not isinstance(ctx.config, ConfigData):
        raise ValueError("no config to fill the parameters from")
    return ctx.config


def instance_dict(value: Any, ctx: EncodeContext) -> dict[str, Any]:
    """An instance (or :class:`InstanceArg`) as the node gets it: its config form with
    hypervisor, backend, OS and NIC parameters filled from the cluster, the call's
    overrides on top, each NIC's network described (``netinfo``) and the instance's
    disks in ``disks_info`` (from the config's top-level ``disks``, in order, with
    their logical-disk and dynamic parameters, see :mod:`ganeti.core.diskparams`).
    """
    arg = InstanceArg(value) if isinstance(value, Instance) else value
    if not isinstance(arg, InstanceArg):
        raise TypeError(f"expected an instance, got {type(value).__name__}")
    cfg = _config(ctx)
    cluster, inst = cfg.cluster, arg.instance
    out = inst.to_dict()
    out["hvparams"] = {**params_fill.fill_instance_hv(cluster, inst), **(arg.hvp or {})}
    out["beparams"] = {**params_fill.fill_instance_be(cluster, inst), **(arg.bep or {})}
    out["osparams"] = {**params_fill.fill_instance_os(cluster, inst), **(arg.osp or {}),
                       **(arg.osp_secret or {})}
    if arg.osp_secret:
        out["osparams_secret"] = sorted(arg.osp_secret)
    by_name = {n.name: n for n in cfg.networks.values()}
    for nic in out.get("nics", []):
        nic["nicparams"] = params_fill.fill_nic(cluster, nic.get("nicparams") or {})
        ref = nic.get("network")
        network = cfg.networks.get(ref) or by_name.get(ref) if ref else None
        if network is not None:
            nic["netinfo"] = network.to_dict()
    out["disks_info"] = diskparams.disk_wire_dicts(
        cfg, inst, diskparams.instance_disks(cfg, inst), ctx.node)
    return out
