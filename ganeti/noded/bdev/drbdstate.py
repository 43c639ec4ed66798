"""The emulated mirror's state: one record per configured minor, kept in a file.

Kernel DRBD keeps a resource's configuration in the kernel, so it survives a
restart of the node daemon; the emulated engine keeps it in
``RUN_DIR/drbd/minor-<N>.json`` for the same reason (and, like the kernel's,
it is gone after a reboot, which empties the run directory).  A minor is
configured while its file exists.

:class:`MinorState` is the record; :func:`observe` is the pure part of the
engine: from the local record and what the peer answered (or None when it
did not), the connection state, the disk states and the resync progress, as
DRBD's ``/proc/drbd`` shows them.  Resync is emulated (no guest writes reach
an emulated device): an ``Inconsistent`` side has ``oos_kib`` KiB out of
sync and gets ``rate`` KiB/s of it back, on the node's clock, for the time it
is known to have been connected to an ``UpToDate`` peer.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import fileutil, storagetypes

#: Kernel DRBD's block major.
DRBD_MAJOR = 147

# roles, disk states and connection states as /proc/drbd names them
PRIMARY, SECONDARY = "Primary", "Secondary"
UP_TO_DATE, INCONSISTENT, DISKLESS = "UpToDate", "Inconsistent", "Diskless"
STANDALONE, WF_CONNECTION, CONNECTED = "StandAlone", "WFConnection", "Connected"
SYNC_SOURCE, SYNC_TARGET = "SyncSource", "SyncTarget"

#: The default resync rate (KiB/s; Ganeti's ``resync-rate``).
DEFAULT_RATE = 61440


@dataclass
class MinorState:
    """A configured minor: which resource, its disks, its network, its sync.

    ``children`` are the paths of the local volumes (data, meta) last attached.
    ``secret`` names the resource (every disk has its own; it stays through
    replace-disks, as the minor on the node that keeps its side does).  ``net``
    says the network is attached (the device listens on ``local_ip:port``);
    ``net_since`` when it was (re)attached or re-listened to, on the node's
    clock.  ``oos_kib`` is what is out of sync on an Inconsistent side,
    ``total_kib`` what was at the start of the resync, ``sync_mark`` the time up
    to which the resync was counted.
    """

    minor: int
    secret: str
    logical_id: list[Any]
    size: int
    children: list[str] = field(default_factory=list)
    role: str = SECONDARY
    disk: str = UP_TO_DATE
    net: bool = False
    multimaster: bool = False
    local_ip: str | None = None
    remote_ip: str | None = None
    port: int | None = None
    remote_minor: int | None = None
    net_since: float | None = None
    rate: int = DEFAULT_RATE
    oos_kib: float = 0.0
    total_kib: float = 0.0
    sync_mark: float | None = None
    #: the qemu engine: set by a primary whose mirror was in sync when it closed (its
    #: peer then holds the same data), cleared when it opens (:mod:`.qmirror_drbd`)
    handoff: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as its file holds it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MinorState:
        """A record from its file's content (unknown keys ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def start_resync(self, now: float) -> None:
        """The local data is new: all of it is out of sync until the peer sends it."""
        self.disk = INCONSISTENT
        self.total_kib = self.oos_kib = float(self.size) * 1024
        self.sync_mark = now

    def peer_view(self) -> dict[str, Any]:
        """What this side tells its peer in the handshake."""
        return {"role": self.role, "disk": self.disk, "oos_kib": self.oos_kib,
                "total_kib": self.total_kib, "net_since": self.net_since,
                "multimaster": self.multimaster, "rate": self.rate, "handoff": self.handoff}


@dataclass(frozen=True)
class Observed:
    """The device as ``/proc/drbd`` would show it now (DRBD's status line)."""

    cstate: str
    role: str
    disk: str
    peer_role: str | None
    peer_disk: str | None
    sync_percent: float | None
    estimated_time: int | None

    @property
    def is_connected(self) -> bool:
        """Connected and not resyncing."""
        return self.cstate == CONNECTED

    @property
    def is_in_resync(self) -> bool:
        """One side sends the other what it misses."""
        return self.cstate in (SYNC_SOURCE, SYNC_TARGET)

    @property
    def is_standalone(self) -> bool:
        """No network configured."""
        return self.cstate == STANDALONE

    @property
    def is_diskless(self) -> bool:
        """No local disks."""
        return self.disk == DISKLESS

    @property
    def is_degraded(self) -> bool:
        """Redundancy is missing: not Connected (resyncing, or no peer), or the local
        disk is not UpToDate (Ganeti's GetSyncStatus: a Connected side whose peer lost
        its disk is not degraded itself -- the peer is, its local disk faulty -- which
        is what lets replace-disks check the healthy side and rebuild the other)."""
        return not (self.is_connected and self.disk == UP_TO_DATE)

    @property
    def ldisk_status(self) -> int:
        """The local disk: okay (UpToDate), sync (resyncing), faulty (otherwise)."""
        if self.disk == UP_TO_DATE:
            return storagetypes.LDS_OKAY
        if self.disk == INCONSISTENT and self.cstate == SYNC_TARGET:
            return storagetypes.LDS_SYNC
        return storagetypes.LDS_FAULTY


def _progress(oos: float, total: float, rate: float) -> tuple[float, int]:
    done = 100.0 * (total - oos) / total if total > 0 else 0.0
    return round(min(max(done, 0.0), 100.0), 2), int(oos / rate) if rate > 0 else 0


def advance(state: MinorState, peer: dict[str, Any] | None, now: float) -> bool:
    """Count the resync of an Inconsistent side up to ``now``: connected to an UpToDate
    ``peer`` since the last mark, it got ``rate`` KiB/s back.  Whether ``state``
    changed (it then has to be saved)."""
    if state.disk != INCONSISTENT:
        return False
    before = (state.oos_kib, state.sync_mark, state.disk)
    if peer is None or peer.get("disk") != UP_TO_DATE:
        state.sync_mark = now
    else:
        since = [t for t in (state.sync_mark, state.net_since, peer.get("net_since"))
                 if isinstance(t, int | float)]
        start = max(since) if since else now
        state.oos_kib = max(0.0, state.oos_kib - max(0.0, now - start) * state.rate)
        state.sync_mark = now
        if state.oos_kib <= 0:
            state.disk, state.oos_kib, state.total_kib = UP_TO_DATE, 0.0, 0.0
            state.sync_mark = None
    return (state.oos_kib, state.sync_mark, state.disk) != before


def observe(state: MinorState, peer: dict[str, Any] | None) -> Observed:
    """The status of ``state`` given what its peer answered (None: no answer; the
    record's resync is counted already, :func:`advance`)."""
    if not state.net:
        return Observed(STANDALONE, state.role, state.disk, None, None, None, None)
    if peer is None:
        return Observed(WF_CONNECTION, state.role, state.disk, None, None, None, None)
    peer_disk = str(peer.get("disk"))
    peer_role = str(peer.get("role"))
    cstate, percent, eta = CONNECTED, None, None
    if state.disk == INCONSISTENT and peer_disk == UP_TO_DATE:
        cstate = SYNC_TARGET
        percent, eta = _progress(state.oos_kib, state.total_kib, state.rate)
    elif state.disk == UP_TO_DATE and peer_disk == INCONSISTENT:
        cstate = SYNC_SOURCE
        percent, eta = _progress(float(peer.get("oos_kib") or 0.0),
                                 float(peer.get("total_kib") or 0.0),
                                 float(peer.get("rate") or state.rate))
    return Observed(cstate, state.role, state.disk, peer_role, peer_disk, percent, eta)


# -- the files (blocking: run in the node's thread pool) ---------------------------------

def state_dir(run_dir: str) -> str:
    """Where the records are: ``RUN_DIR/drbd``."""
    return os.path.join(run_dir, "drbd")


def _file(run_dir: str, minor: int) -> str:
    return os.path.join(state_dir(run_dir), f"minor-{int(minor)}.json")


def load(run_dir: str, minor: int) -> MinorState | None:
    """The record of ``minor``; None if it is not configured (or its file unreadable)."""
    try:
        with open(_file(run_dir, minor), encoding="utf-8") as f:
            return MinorState.from_dict(json.load(f))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError):
        return None


def load_all(run_dir: str) -> list[MinorState]:
    """Every configured minor's record, by minor."""
    try:
        names = os.listdir(state_dir(run_dir))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        if name.startswith("minor-") and name.endswith(".json"):
            try:
                minor = int(name[len("minor-"):-len(".json")])
            except ValueError:
                continue
            state = load(run_dir, minor)
            if state is not None:
                out.append(state)
    return sorted(out, key=lambda s: s.minor)


def save(run_dir: str, state: MinorState) -> None:
    """Write the record (atomically)."""
    os.makedirs(state_dir(run_dir), 0o700, exist_ok=True)
    fileutil.atomic_write(_file(run_dir, state.minor), json.dumps(state.to_dict()),
                          durable=False)


def delete(run_dir: str, minor: int) -> None:
    """Free the minor (nothing if it is free)."""
    try:
        os.unlink(_file(run_dir, minor))
    except FileNotFoundError:
        pass
