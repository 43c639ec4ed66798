"""One node and one instance as htools tracks them during an allocation run.

:class:`NodeState` is htools' ``Node`` (3.0.2's ``Node.hs``): the figures the
score and the rules need, and the node operations ``add_pri``, ``add_sec``,
``remove_pri`` and ``remove_sec``, which return a new node (or, for the adds,
the htools failure reason as hail prints it: ``FailMem``, ``FailDisk``,
``FailCPU``, ``FailN1``, ``FailTags``, ``FailSpindles``, ``FailDiskCount``).
With ``force`` (hail's ``--ignore-soft-errors``) only the hard limits remain
(memory, disk, spindles with exclusive storage); without it the soft rules
apply too: the disk reserve, the spindle ratio, the vCPU ratio, no node newly
failing N+1, exclusion tags, and then the same limits counting forthcoming
instances (htools' ``checkForthcomingViolation``).

Forthcoming instances (reservations) are kept as htools 3.0.2 keeps them: a
forthcoming instance holds nothing real (it is in no ``plist``/``slist``, takes
no ``i_mem``, ``f_dsk``, ``u_cpu``, peers or location score) and only the
``*_forth`` figures (``f_mem_forth``, ``f_dsk_forth``, ``u_cpu_forth``,
``f_spindles_forth``, ``inst_spindles_forth``) and the exclusion tags count it;
a real instance changes both its real and its ``*_forth`` figures.  The
``*_forth`` figures feed the four ``*_forth`` score terms.

:class:`Inst` is htools' ``Instance``; :func:`policy_failure` is the group
policy check (``instMatchesPolicy``).
:mod:`ganeti.core.placement.state` holds the whole cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import constants
from ganeti.core.placement.model import Group

FAIL_MEM = "FailMem"
FAIL_DISK = "FailDisk"
FAIL_CPU = "FailCPU"
FAIL_N1 = "FailN1"
FAIL_TAGS = "FailTags"
FAIL_MIG = "FailMig"
FAIL_DISK_COUNT = "FailDiskCount"
FAIL_SPINDLES = "FailSpindles"
FAIL_INTERNAL = "FailInternal"
#: htools' failure modes in its order (how hail lists them in its info text).
FAIL_MODES = (FAIL_MEM, FAIL_DISK, FAIL_CPU, FAIL_N1, FAIL_TAGS, FAIL_MIG, FAIL_DISK_COUNT,
              FAIL_SPINDLES, FAIL_INTERNAL)

#: Templates whose disks take space on the nodes' volume groups (htools' local storage).
LOCAL_STORAGE = frozenset({constants.DT_DRBD8, constants.DT_PLAIN})
EX_TAGS_PREFIX = "htools:iextags:"
LOCATION_PREFIX = "htools:nlocation:"
DESIRED_LOCATION_PREFIX = "htools:desiredlocation:"
NO_NODE = -1


@dataclass(slots=True)
class Inst:
    """An instance as the allocator tracks it (htools' ``Instance``)."""

    name: str
    mem: int
    dsk: int
    vcpus: int
    template: str
    run: str = constants.ADMINST_UP
    spindle_use: int = 1
    disk_sizes: tuple[int, ...] = ()
    disk_spindles: tuple[int | None, ...] = ()
    excl_tags: tuple[str, ...] = ()
    dsrd_loc: frozenset[str] = frozenset()
    pnode: int = NO_NODE
    snode: int = NO_NODE
    loc_score: int = 0
    forthcoming: bool = False

    @property
    def uses_memory(self) -> bool:
        """Whether the instance holds memory on its primary (it runs; a forthcoming
        instance never does: htools' ``usesMemory``)."""
        return self.run == constants.ADMINST_UP and not self.forthcoming

    @property
    def online(self) -> bool:
        """Not administratively offline."""
        return self.run != constants.ADMINST_OFFLINE

    @property
    def local(self) -> bool:
        """Whether its disks take space on the node (plain, drbd)."""
        return self.template in LOCAL_STORAGE

    @property
    def mirrored(self) -> bool:
        """Whether it has a secondary node (drbd)."""
        return self.template == constants.DT_DRBD8

    @property
    def total_spindles(self) -> int | None:
        """The spindles of all disks, ``None`` when one is unknown."""
        if any(s is None for s in self.disk_spindles):
            return None
        return sum(s for s in self.disk_spindles if s is not None)


def _counter_add(counts: dict[Any, int], keys: Iterable[Any], sign: int) -> dict[Any, int]:
    new = dict(counts)
    for key in keys:
        left = new.get(key, 0) + sign
        if left > 0:
            new[key] = left
        else:
            new.pop(key, None)
    return new


@dataclass(slots=True)
class NodeState:
    """A node as htools tracks it (``Node``); sizes in MiB."""

    name: str
    idx: int
    group: str
    offline: bool
    t_mem: float = 0.0
    n_mem: int = 0
    f_mem: int = 0
    i_mem: int = 0
    x_mem: int = 0
    f_mem_forth: int = 0
    t_dsk: float = 0.0
    f_dsk: int = 0
    f_dsk_forth: int = 0
    t_cpu: float = 0.0
    u_cpu: int = 0
    u_cpu_forth: int = 0
    t_spindles: int = 0
    f_spindles: int = 0
    f_spindles_forth: int = 0
    hi_spindles: float = 0.0
    inst_spindles: float = 0.0
    inst_spindles_forth: float = 0.0
    excl: bool = False
    vcpu_ratio: float = -1.0
    lo_dsk: int = 0
    plist: tuple[str, ...] = ()
    slist: tuple[str, ...] = ()
    peers: dict[int, int] = field(default_factory=dict)
    r_mem: int = 0
    fail_n1: bool = True
    p_tags: dict[str, int] = field(default_factory=dict)
    loc_tags: frozenset[str] = frozenset()
    loc_score: int = 0
    inst_map: dict[tuple[str, str], int] = field(default_factory=dict)

    def copy(self) -> NodeState:
        """A copy sharing nothing mutable."""
        new = object.__new__(NodeState)  # field by field: 5x faster than copy.copy
        new.name = self.name
        new.idx = self.idx
        new.group = self.group
        new.offline = self.offline
        new.t_mem = self.t_mem
        new.n_mem = self.n_mem
        new.f_mem = self.f_mem
        new.i_mem = self.i_mem
        new.x_mem = self.x_mem
        new.f_mem_forth = self.f_mem_forth
        new.t_dsk = self.t_dsk
        new.f_dsk = self.f_dsk
        new.f_dsk_forth = self.f_dsk_forth
        new.t_cpu = self.t_cpu
        new.u_cpu = self.u_cpu
        new.u_cpu_forth = self.u_cpu_forth
        new.t_spindles = self.t_spindles
        new.f_spindles = self.f_spindles
        new.f_spindles_forth = self.f_spindles_forth
        new.hi_spindles = self.hi_spindles
        new.inst_spindles = self.inst_spindles
        new.inst_spindles_forth = self.inst_spindles_forth
        new.excl = self.excl
        new.vcpu_ratio = self.vcpu_ratio
        new.lo_dsk = self.lo_dsk
        new.plist = self.plist
        new.slist = self.slist
        new.r_mem = self.r_mem
        new.fail_n1 = self.fail_n1
        new.p_tags = self.p_tags
        new.loc_tags = self.loc_tags
        new.loc_score = self.loc_score
        new.inst_map = self.inst_map
        new.peers = dict(self.peers)
        return new

    # -- derived figures ------------------------------------------------------------------

    def unallocated_mem(self, i_mem: int | None = None) -> int:
        """htools' ``unallocatedMem``: recorded free memory less the missing memory."""
        used = self.i_mem if i_mem is None else i_mem
        return int(self.t_mem) - self.n_mem - used - max(0, self.x_mem)

    def p_dsk(self, f_dsk: int | None = None, f_spindles: int | None = None) -> float:
        """Free disk ratio (free spindles with exclusive storage; 1 without disk)."""
        if self.excl:
            free, total = (self.f_spindles if f_spindles is None else f_spindles), \
                float(self.t_spindles)
        else:
            free, total = (self.f_dsk if f_dsk is None else f_dsk), self.t_dsk
        return 1.0 if total == 0 else free / total

    def conflicting_primaries(self) -> int:
        """Primaries sharing an exclusion tag (htools' ``conflictingPrimaries``)."""
        return sum(self.p_tags.values()) - len(self.p_tags)

    def components(self) -> tuple[Any, ...]:
        """The node's component vector for :mod:`metric` (htools' ``compDetailedCVNode``)."""
        npri, nsec = float(len(self.plist)), float(len(self.slist))
        if self.t_mem == 0:  # offline (no live data); htools would divide by zero
            mem = rem = cpu = mem_f = cpu_f = 0.0
        else:
            mem = self.unallocated_mem() / self.t_mem
            rem = self.r_mem / self.t_mem
            mem_f = self.f_mem_forth / self.t_mem
            cpu = self.u_cpu / self.t_cpu if self.t_cpu else 0.0
            cpu_f = self.u_cpu_forth / self.t_cpu if self.t_cpu else 0.0
        dsk = self.p_dsk()
        dsk_f = self.p_dsk(self.f_dsk_forth, self.f_spindles_forth)
        hi = self.hi_spindles
        spindles = self.inst_spindles / hi if hi else 0.0
        spindles_f = self.inst_spindles_forth / hi if hi else 0.0
        n1 = npri + nsec if self.fail_n1 else 0.0
        return (mem, dsk, n1, rem, npri + nsec, npri, cpu, npri, npri, npri + nsec, npri,
                float(self.conflicting_primaries()), spindles, mem_f, dsk_f, cpu_f,
                spindles_f, float(self.loc_score), self.inst_map, rem)

    # -- htools' node operations -------------------------------------------------------------

    def _spindle_use(self, inst: Inst, sign: int) -> float:
        if self.excl or not inst.local:
            return self.inst_spindles
        return self.inst_spindles + sign * inst.spindle_use

    def _spindle_use_forth(self, inst: Inst, sign: int) -> float:
        if self.excl or not inst.local:
            return self.inst_spindles_forth
        return self.inst_spindles_forth + sign * inst.spindle_use

    def _free_spindles(self, inst: Inst, sign: int, free: int | None = None) -> int:
        """Free spindles (``free``, default the real ones) with ``inst``'s spindles
        added (``sign`` -1: taken) or given back (1): htools' ``calcNewFreeSpindles``."""
        if not self.excl:
            return 0
        now = self.f_spindles if free is None else free
        total = inst.total_spindles
        if total is None:
            return -1 if sign < 0 else now
        return now + sign * total

    def _pri_forth_failure(self, inst: Inst, mem: int, dsk: int, free_sp: int,
                           inst_sp: float, ucpu: int) -> str | None:
        """htools' ``checkForthcomingViolation`` of ``addPriEx``, on the new figures."""
        if mem <= 0:
            return FAIL_MEM
        if inst.local:
            if dsk <= 0 or dsk < self.lo_dsk:
                return FAIL_DISK
            if self.excl and free_sp < 0:
                return FAIL_SPINDLES
            if inst_sp > self.hi_spindles:
                return FAIL_DISK
        pcpu = ucpu / self.t_cpu if self.t_cpu else float("inf")
        if 0 <= self.vcpu_ratio < pcpu:
            return FAIL_CPU
        return None

    def add_pri(self, inst: Inst, force: bool = False) -> NodeState | str:
        """The node with ``inst`` as a new primary, or why not (``addPriEx``)."""
        strict = not force
        local = inst.local
        new_mem_forth = self.f_mem_forth - inst.mem
        new_dsk_forth = self.f_dsk_forth - inst.dsk if local else self.f_dsk_forth
        new_free_sp_forth = self._free_spindles(inst, -1, self.f_spindles_forth)
        new_inst_sp_forth = self._spindle_use_forth(inst, 1)
        new_ucpu_forth = self.u_cpu_forth + (inst.vcpus if inst.online else 0)
        forth_args = (inst, new_mem_forth, new_dsk_forth, new_free_sp_forth,
                      new_inst_sp_forth, new_ucpu_forth)
        if inst.forthcoming:  # only the forthcoming figures change
            reason = self._pri_forth_failure(*forth_args) if strict else None
            if reason is not None:
                return reason
            new = self.copy()
        else:
            uses_mem = inst.uses_memory
            new_i_mem = self.i_mem + (inst.mem if uses_mem else 0)
            new_free_mem = self.unallocated_mem(new_i_mem)
            new_failn1 = new_free_mem <= self.r_mem
            new_dsk = self.f_dsk - inst.dsk if local else self.f_dsk
            new_free_sp = self._free_spindles(inst, -1)
            new_inst_sp = self._spindle_use(inst, 1)
            new_ucpu = self.u_cpu + (inst.vcpus if inst.online else 0)
            new_pcpu = new_ucpu / self.t_cpu if self.t_cpu else float("inf")
            l_cpu = self.vcpu_ratio
            if new_free_mem <= 0:
                return FAIL_MEM
            if local and new_dsk <= 0:
                return FAIL_DISK
            if strict and local and new_dsk < self.lo_dsk:
                return FAIL_DISK
            if local and self.excl and new_free_sp < 0:
                return FAIL_SPINDLES
            if strict and local and new_inst_sp > self.hi_spindles:
                return FAIL_DISK
            if strict and new_failn1 and not self.fail_n1:
                return FAIL_MEM
            if strict and 0 <= l_cpu < new_pcpu:
                return FAIL_CPU
            if strict and any(t in self.p_tags for t in inst.excl_tags):
                return FAIL_TAGS
            # the forthcoming limits, after the real ones (as htools)
            reason = self._pri_forth_failure(*forth_args) if strict else None
            if reason is not None:
                return reason
            new = self.copy()
            new.plist = (*self.plist, inst.name)
            new.i_mem = new_i_mem
            new.f_dsk = new_dsk
            new.fail_n1 = new_failn1
            new.u_cpu = new_ucpu
            new.inst_spindles = new_inst_sp
            new.f_spindles = new_free_sp
            new.loc_score = self.loc_score + inst.loc_score + self._dsrd_score(inst)
            new.inst_map = _counter_add(self.inst_map, self._loc_pairs(inst), 1)
        new.f_mem_forth = new_mem_forth
        new.f_dsk_forth = new_dsk_forth
        new.f_spindles_forth = new_free_sp_forth
        new.inst_spindles_forth = new_inst_sp_forth
        new.u_cpu_forth = new_ucpu_forth
        if inst.excl_tags:
            new.p_tags = _counter_add(self.p_tags, inst.excl_tags, 1)
        return new

    def add_sec(self, inst: Inst, pdx: int, force: bool = False,
                ignore_disks: bool = False) -> NodeState | str:
        """The node with ``inst`` as a new secondary of primary ``pdx``, or why not."""
        strict = not force
        sec_mem = inst.mem if inst.online else 0
        new_dsk_forth = self.f_dsk_forth - inst.dsk
        new_free_sp_forth = self._free_spindles(inst, -1, self.f_spindles_forth)
        new_inst_sp_forth = self._spindle_use_forth(inst, 1)
        forth_failure: str | None = None
        if strict:  # htools' checkForthcomingViolation of addSecExEx
            if not inst.mirrored or new_dsk_forth <= 0 or new_dsk_forth < self.lo_dsk:
                forth_failure = FAIL_DISK
            elif self.excl and new_free_sp_forth < 0:
                forth_failure = FAIL_SPINDLES
            elif new_inst_sp_forth > self.hi_spindles:
                forth_failure = FAIL_DISK
            elif sec_mem >= self.f_mem_forth:
                forth_failure = FAIL_MEM
        if inst.forthcoming:
            if forth_failure is not None:
                return forth_failure
            new = self.copy()
        else:
            new_peem = self.peers.get(pdx, 0) + sec_mem
            old_mem = self.unallocated_mem()
            new_dsk = self.f_dsk - inst.dsk
            new_free_sp = self._free_spindles(inst, -1)
            new_inst_sp = self._spindle_use(inst, 1)
            new_rmem = max(self.r_mem, new_peem)
            new_failn1 = old_mem <= new_rmem
            if not inst.mirrored:
                return FAIL_DISK
            if not ignore_disks and new_dsk <= 0:
                return FAIL_DISK
            if strict and new_dsk < self.lo_dsk:
                return FAIL_DISK
            if self.excl and new_free_sp < 0:
                return FAIL_SPINDLES
            if strict and new_inst_sp > self.hi_spindles:
                return FAIL_DISK
            if strict and sec_mem >= old_mem:
                return FAIL_MEM
            if strict and new_failn1 and not self.fail_n1:
                return FAIL_MEM
            if forth_failure is not None:
                return forth_failure
            new = self.copy()
            new.slist = (*self.slist, inst.name)
            new.f_dsk = new_dsk
            new.peers[pdx] = new_peem
            new.fail_n1 = new_failn1
            new.r_mem = new_rmem
            new.inst_spindles = new_inst_sp
            new.f_spindles = new_free_sp
        new.f_dsk_forth = new_dsk_forth
        new.f_spindles_forth = new_free_sp_forth
        new.inst_spindles_forth = new_inst_sp_forth
        return new

    def remove_pri(self, inst: Inst) -> NodeState:
        """The node without primary ``inst`` (``removePri``)."""
        new = self.copy()
        if not inst.forthcoming:
            new.plist = tuple(n for n in self.plist if n != inst.name)
            new.i_mem = self.i_mem - (inst.mem if inst.uses_memory else 0)
            new.fail_n1 = new.unallocated_mem() <= self.r_mem
            if inst.local:
                new.f_dsk = self.f_dsk + inst.dsk
            new.f_spindles = self._free_spindles(inst, 1)
            new.inst_spindles = self._spindle_use(inst, -1)
            new.u_cpu = self.u_cpu - (inst.vcpus if inst.online else 0)
            new.loc_score = self.loc_score - inst.loc_score - self._dsrd_score(inst)
            new.inst_map = _counter_add(self.inst_map, self._loc_pairs(inst), -1)
        new.f_mem_forth = self.f_mem_forth + inst.mem
        if inst.local:
            new.f_dsk_forth = self.f_dsk_forth + inst.dsk
        new.f_spindles_forth = self._free_spindles(inst, 1, self.f_spindles_forth)
        new.inst_spindles_forth = self._spindle_use_forth(inst, -1)
        new.u_cpu_forth = self.u_cpu_forth - (inst.vcpus if inst.online else 0)
        if inst.excl_tags:
            new.p_tags = _counter_add(self.p_tags, inst.excl_tags, -1)
        return new

    def remove_sec(self, inst: Inst) -> NodeState:
        """The node without secondary ``inst`` (``removeSec``)."""
        new = self.copy()
        if not inst.forthcoming:
            new.slist = tuple(n for n in self.slist if n != inst.name)
            if inst.local:
                new.f_dsk = self.f_dsk + inst.dsk
            new.f_spindles = self._free_spindles(inst, 1)
            new.inst_spindles = self._spindle_use(inst, -1)
            old_peem = self.peers.get(inst.pnode, 0)
            new_peem = old_peem - (inst.mem if inst.online else 0)
            if new_peem > 0:
                new.peers[inst.pnode] = new_peem
            else:
                new.peers.pop(inst.pnode, None)
            new.r_mem = (self.r_mem if old_peem < self.r_mem
                         else max(new.peers.values(), default=0))
            new.fail_n1 = new.unallocated_mem() <= new.r_mem
        if inst.local:
            new.f_dsk_forth = self.f_dsk_forth + inst.dsk
        new.f_spindles_forth = self._free_spindles(inst, 1, self.f_spindles_forth)
        new.inst_spindles_forth = self._spindle_use_forth(inst, -1)
        return new

    def _dsrd_score(self, inst: Inst) -> int:
        return len(inst.dsrd_loc) - len(inst.dsrd_loc & self.loc_tags)

    def _loc_pairs(self, inst: Inst) -> list[tuple[str, str]]:
        return [(loc, tag) for loc in sorted(self.loc_tags) for tag in inst.excl_tags]


def prefixed(tags: Iterable[str], prefix: str) -> list[str]:
    """The non-empty rests of the tags that start with ``prefix``."""
    return [t[len(prefix):] for t in tags if t.startswith(prefix) and len(t) > len(prefix)]


def policy_failure(inst: Inst, group: Group, excl: bool = False) -> str | None:
    """Why ``inst`` breaks ``group``'s policy (htools' ``instMatchesPolicy``), or ``None``."""
    policy = group.ipolicy
    reason: str | None = FAIL_INTERNAL if policy.minmax else None
    for low, high in policy.minmax:
        reason = _spec_failure(inst, low, 1, excl) or _spec_failure(inst, high, -1, excl)
        if reason is None:
            break
    if reason is not None:
        return reason
    if inst.template not in policy.disk_templates:
        return FAIL_DISK
    return None


def _spec_failure(inst: Inst, spec: Any, side: int, excl: bool) -> str | None:
    """side 1: ``inst`` must not be below ``spec``; -1: must not be above."""
    def bad(value: int, limit: int) -> bool:
        return (limit - value) * side > 0
    if bad(inst.mem, spec.memory_size):
        return FAIL_MEM
    if any(bad(size, spec.disk_size) for size in inst.disk_sizes):
        return FAIL_DISK
    if bad(inst.vcpus, spec.cpu_count):
        return FAIL_CPU
    if excl:
        total = inst.total_spindles
        if total is None or bad(total, spec.spindle_use):
            return FAIL_SPINDLES
    elif bad(inst.spindle_use, spec.spindle_use):
        return FAIL_SPINDLES
    if inst.template != constants.DT_DISKLESS and bad(len(inst.disk_sizes), spec.disk_count):
        return FAIL_DISK_COUNT
    return None

__all__ = ["DESIRED_LOCATION_PREFIX", "EX_TAGS_PREFIX", "FAIL_CPU", "FAIL_DISK",
           "FAIL_DISK_COUNT", "FAIL_INTERNAL", "FAIL_MEM", "FAIL_MIG", "FAIL_MODES",
           "FAIL_N1", "FAIL_SPINDLES", "FAIL_TAGS", "LOCAL_STORAGE", "LOCATION_PREFIX",
           "NO_NODE", "Inst", "NodeState", "policy_failure", "prefixed"]
