"""Instance policy checks (Ganeti's ComputeIPolicySpecViolation): an instance's
memory, CPUs, disks, NICs and spindles against the min/max specs and the
allowed disk templates of its node group's filled policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core import params_fill
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.params_merge import comma_join


@dataclass(frozen=True)
class Spec:
    """What the policy looks at (None: not checked)."""

    mem_size: int | None
    cpu_count: int | None
    disk_sizes: tuple[int, ...]
    nic_count: int | None
    spindle_use: int | None


def spec_of(be_full: Mapping[str, Any], disk_sizes: Sequence[int], nic_count: int,
            spindles: Sequence[Any] = ()) -> Spec:
    """The spec of an instance with these filled backend parameters."""
    return Spec(be_full.get(c.BE_MAXMEM), be_full.get(c.BE_VCPUS),
                tuple(int(s) for s in disk_sizes), nic_count,
                be_full.get(c.BE_SPINDLE_USE))


def _out_of_range(name: str, qualifier: str, minmax: Mapping[str, Any],
                  value: Any) -> str | None:
    if value is None or value == "auto":
        return None
    high = minmax[c.ISPECS_MAX].get(name, value)
    low = minmax[c.ISPECS_MIN].get(name, value)
    if value > high or low > value:
        fqn = f"{name}/{qualifier}" if qualifier else name
        return f"{fqn} value {value} is not in range [{low}, {high}]"
    return None


def spec_violations(ipolicy: Mapping[str, Any], spec: Spec, template: str) -> list[str]:
    """Ganeti's ComputeIPolicySpecViolation for one disk template."""
    settings: list[tuple[str, str, Any]] = [
        (c.ISPEC_MEM_SIZE, "", spec.mem_size),
        (c.ISPEC_CPU_COUNT, "", spec.cpu_count),
        (c.ISPEC_NIC_COUNT, "", spec.nic_count),
        (c.ISPEC_SPINDLE_USE, "", spec.spindle_use),
        *((c.ISPEC_DISK_SIZE, str(i), size) for i, size in enumerate(spec.disk_sizes)),
    ]
    allowed = list(ipolicy.get(c.IPOLICY_DTS) or [])
    out: list[str] = []
    if spec.disk_sizes:
        settings.append((c.ISPEC_DISK_COUNT, "", len(spec.disk_sizes)))
    elif c.DT_DISKLESS not in allowed:
        out.append(f"Disk template {c.DT_DISKLESS} is not allowed (allowed templates "
                   f"{comma_join(allowed)})")
    if spec.disk_sizes and template not in allowed:
        out.append(f"Disk template {template} is not allowed (allowed templates: "
                   f"{comma_join(allowed)})")
    best: list[str] | None = None
    for minmax in ipolicy.get(c.IPOLICY_MINMAX) or []:
        errs = [e for e in (_out_of_range(n, q, minmax, v) for n, q, v in settings) if e]
        if best is None or len(errs) < len(best):
            best = errs
    return out + (best or [])


def violations(cfg: ConfigData, group_uuid: str, spec: Spec, template: str) -> list[str]:
    """The violations of ``spec`` against the filled policy of a node group."""
    group = cfg.nodegroups.get(group_uuid)
    return spec_violations(params_fill.fill_ipolicy(cfg.cluster, group), spec, template)


def check_target_policy(cfg: ConfigData, inst: Instance, group_uuid: str, ignore: bool,
                        warn: Any) -> None:
    """Ganeti's CheckTargetNodeIPolicy: the instance must meet the policy of the group it
    moves to (``OpPrereqError``), or with ``ignore`` only ``warn(text)`` is called."""
    be = params_fill.fill_instance_be(cfg.cluster, inst)
    disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
    spec = spec_of(be, [d.size for d in disks], len(inst.nics), [d.spindles for d in disks])
    template = disks[0].dev_type if disks else c.DT_DISKLESS
    bad = violations(cfg, group_uuid, spec, template)
    if not bad:
        return
    group = cfg.nodegroups.get(group_uuid)
    msg = (f"Instance does not meet target node group's "
           f"({group.name if group else group_uuid}) instance policy: {comma_join(bad)}")
    if not ignore:
        raise OpPrereqError(msg, ECODE_INVAL)
    warn(f" - WARNING: {msg}")
