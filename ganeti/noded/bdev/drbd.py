"""The ``drbd`` device: a mirror of a disk between two nodes, emulated (Ganeti's
DRBD8Dev, without kernel DRBD).

A disk's ``logical_id`` is ``[pnode, snode, port, pminor, sminor, secret]``; the
node learns its own side from the disk's dynamic parameters (``local-ip``,
``remote-ip``, ``local-minor``, ``remote-minor``).  Its children are the local
data and metadata volumes; it runs without them ("diskless", its data on the
peer).  The device's state is the record of its minor (:mod:`.drbdstate`, a
file under the node's run directory, so it survives a restart of the node
daemon as the kernel's would); its network is a listener and a handshake
(:mod:`.drbdnet`), so a dead or unreachable peer really shows as not
connected.  A new resource starts in sync (both sides' volumes are new and
empty, DRBD's ``new-current-uuid --clear-bitmap``); a side that gets new local
volumes (``blockdev_addchildren``, replace-disks ``-p``/``-s``) or is created
without a port (Ganeti's "alone" id for the new secondary of replace-disks
``-n``) is Inconsistent and resyncs from an UpToDate peer at the disk's
``resync-rate`` on the node's clock.

The engine is chosen by the disk's ``dynamic_params["mirror"]``: ``emulated``
(the default) is this module's; ``qemu`` adds real data on top of it
(:mod:`.qmirror_drbd`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ganeti.core import constants
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev import drbdstate, qmirror_drbd
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import MIB, BlockDevice, SyncStatus
from ganeti.noded.bdev.drbdnet import MirrorNet
from ganeti.noded.bdev.drbdstate import (
    DISKLESS,
    PRIMARY,
    SECONDARY,
    UP_TO_DATE,
    MinorState,
    Observed,
)

#: The mirror engines a node may be asked for (``dynamic_params["mirror"]``); ``qemu``
#: adds real data mirrored by qemu-storage-daemons (:mod:`.qmirror_drbd`).
ENGINES = ("emulated", qmirror_drbd.ENGINE)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class DrbdDevice(BlockDevice):
    """A ``drbd`` disk's device on this node (see the module docstring)."""

    has_children = True
    mirrored = True
    assemble_on_secondary = True
    open_on_secondary = False
    children_needed = 0

    def __init__(self, ctx: NodeContext, disk: dict[str, Any],
                 children: Sequence[BlockDevice | None] = ()) -> None:
        super().__init__(ctx, disk, children)
        lid = self.logical_id if isinstance(self.logical_id, list) else []
        dyn = self.dynamic_params
        self.port = _int(lid[2]) if len(lid) == 6 else None
        self.secret = str(lid[5]) if len(lid) == 6 else ""
        self.local_ip = dyn.get("local-ip")
        self.remote_ip = dyn.get("remote-ip")
        self.aminor = _int(dyn.get("local-minor"))
        self.remote_minor = _int(dyn.get("remote-minor"))

    @property
    def qemu(self) -> bool:
        """Whether the ``qemu`` engine carries the data."""
        return qmirror_drbd.is_qemu(self.dynamic_params)

    def __repr__(self) -> str:
        return f"<DrbdDevice drbd{self.aminor} port {self.port}>"

    # -- checks -----------------------------------------------------------------------

    def _minor(self) -> int:
        """This node's minor, checking the disk's shape."""
        lid = self.logical_id
        if not isinstance(lid, list) or len(lid) != 6 or not self.secret:
            raise BlockDeviceError(f"Invalid logical id for a drbd disk: {lid!r:.120}")
        engine = self.dynamic_params.get("mirror", "emulated")
        if engine not in ENGINES:
            raise BlockDeviceError(f"Mirror engine {engine!r:.20} is not available on "
                                   "this node")
        if self.aminor is None or self.aminor < 0:
            raise BlockDeviceError("drbd disk without its dynamic parameters (local-minor, "
                                   "local-ip, remote-ip, remote-minor)")
        return self.aminor

    @property
    def net(self) -> MirrorNet:
        """The node's mirror network."""
        net = self.ctx.mirrors
        if net is None:
            raise BlockDeviceError("this node has no mirror network")
        return net

    def _mine(self, state: MinorState | None) -> MinorState | None:
        """``state`` if it is this resource's (its secret), else None."""
        return state if state is not None and state.secret == self.secret else None

    def _clash(self, state: MinorState) -> BlockDeviceError:
        return BlockDeviceError(
            f"drbd{state.minor}: minor is in use by another resource (port {state.port}, "
            f"peer {state.remote_ip}); refusing to use it for port {self.port}")

    def _set_found(self, minor: int) -> None:
        self.dev_path = f"/dev/drbd{minor}"
        self.major, self.minor, self.attached = drbdstate.DRBD_MAJOR, minor, True

    def _rate(self) -> int:
        rate = self.params.get("resync-rate", drbdstate.DEFAULT_RATE)
        return rate if isinstance(rate, int) and rate > 0 else drbdstate.DEFAULT_RATE

    def _child_paths(self) -> list[str] | None:
        """The local volumes' paths, if both are there."""
        if len(self.children) != 2 or any(c is None or c.dev_path is None
                                          for c in self.children):
            return None
        return [str(c.dev_path) for c in self.children if c is not None]

    def _net_config(self, state: MinorState) -> bool:
        """Take the network addresses of this disk; whether it has all of them."""
        if self.port is None or not self.local_ip or not self.remote_ip \
                or self.remote_minor is None:
            return False
        state.local_ip, state.remote_ip = str(self.local_ip), str(self.remote_ip)
        state.port, state.remote_minor = self.port, self.remote_minor
        return True

    async def _load_mine(self) -> MinorState:
        minor = self._minor()
        state = self._mine(await self.net.load(minor))
        if state is None:
            raise BlockDeviceError(f"drbd{minor}: device not attached")
        return state

    # -- life -------------------------------------------------------------------------

    @classmethod
    async def create(cls, ctx: NodeContext, disk: dict[str, Any],
                     children: Sequence[BlockDevice | None], size: int,
                     info: str) -> BlockDevice:
        """Configure the minor on its two local volumes: in sync (both sides are new and
        empty), but Inconsistent when the disk has no port yet (Ganeti creates a new
        secondary so in replace-disks -n: it resyncs everything once attached)."""
        dev = cls(ctx, disk, children)
        minor = dev._minor()
        paths = dev._child_paths()
        if paths is None:
            raise BlockDeviceError("Invalid setup for the drbd device: it needs its data "
                                   "and metadata volumes")
        async with dev.net.locked(minor):
            if await dev.net.load(minor) is not None:
                raise BlockDeviceError(f"drbd{minor}: minor is already in use at "
                                       "Create() time")
            state = MinorState(minor=minor, secret=dev.secret, logical_id=list(dev.logical_id),
                               size=int(size), children=paths, rate=dev._rate())
            if dev.port is None:
                # Ganeti's "alone" id (no port): a new secondary of replace-disks -n,
                # whose empty volumes get everything from the primary
                state.start_resync(ctx.clock.seconds())
            await dev.net.save(state)
        dev._set_found(minor)
        if dev.qemu:
            await qmirror_drbd.created(dev)
        return dev

    async def attach(self) -> bool:
        """Whether this resource's minor is configured here."""
        minor = self._minor()
        if self._mine(await self.net.load(minor)) is None:
            return False
        self._set_found(minor)
        return True

    async def assemble(self) -> None:
        """Attach the local volumes (diskless without them) and the network (when the
        disk has its peer's address), as Secondary; idempotent."""
        minor = self._minor()
        net = self.net
        async with net.locked(minor):
            found = await net.load(minor)
            if found is not None and self._mine(found) is None:
                raise self._clash(found)
            paths = self._child_paths()
            state = found or MinorState(
                minor=minor, secret=self.secret, logical_id=list(self.logical_id),
                size=int(self.size or 0), children=paths or [],
                disk=UP_TO_DATE if paths else DISKLESS)
            if paths is None:
                state.disk, state.oos_kib, state.total_kib = DISKLESS, 0.0, 0.0
            elif state.disk == DISKLESS:
                if paths != state.children:
                    state.start_resync(self.ctx.clock.seconds())
                else:
                    state.disk = UP_TO_DATE
            state.children = paths or state.children
            state.logical_id, state.rate = list(self.logical_id), self._rate()
            if self._net_config(state) and not state.net:
                state.net, state.multimaster = True, False
                state.net_since = self.ctx.clock.seconds()
            if state.net:
                await net.listen(state)
            await net.save(state)
        self._set_found(minor)
        if self.qemu:
            await qmirror_drbd.assembled(self)

    async def mirror_status(self) -> Observed:
        """The device as ``/proc/drbd`` shows it now (asks the peer)."""
        state = await self._load_mine()
        peer = await self.net.ask_peer(state)
        async with self.net.locked(state.minor):
            state = await self._load_mine()
            if drbdstate.advance(state, peer, self.ctx.clock.seconds()):
                await self.net.save(state)
        return drbdstate.observe(state, peer)

    async def open(self, force: bool = False, exclusive: bool = True) -> None:
        """Become Primary: refused while the peer is Primary unless the network is
        dual-primary (``multimaster``) and the open is not ``exclusive``, and refused
        without up-to-date data unless ``force``."""
        seen = await self.mirror_status()
        async with self.net.locked(self._minor()):
            state = await self._load_mine()
            if seen.peer_role == PRIMARY and (not state.multimaster or exclusive):
                raise BlockDeviceError(f"drbd{state.minor}: can't make drbd device primary: "
                                       "the peer is primary and dual-primary mode is not "
                                       "enabled" if not state.multimaster else
                                       f"drbd{state.minor}: can't open exclusively: the "
                                       "peer is primary")
            has_data = state.disk == UP_TO_DATE or (
                seen.peer_disk == UP_TO_DATE and seen.cstate != drbdstate.WF_CONNECTION)
            if not (has_data or force):
                raise BlockDeviceError(f"drbd{state.minor}: can't make drbd device primary: "
                                       "no up-to-date data (local disk "
                                       f"{state.disk}, {seen.cstate})")
            state.role = PRIMARY
            await self.net.save(state)
        if self.qemu:
            await qmirror_drbd.opened(self)

    async def close(self) -> None:
        """Become Secondary."""
        async with self.net.locked(self._minor()):
            state = await self._load_mine()
            if state.role != SECONDARY:
                state.role = SECONDARY
                await self.net.save(state)
        if self.qemu:
            await qmirror_drbd.closed(self)

    async def shutdown(self) -> None:
        """Network down, disks detached, the minor freed; nothing if not configured."""
        minor = self._minor()
        async with self.net.locked(minor):
            if self._mine(await self.net.load(minor)) is None:
                return
            await self.net.delete(minor)
        self.attached, self.dev_path = False, None
        if self.qemu:
            await qmirror_drbd.shut_down(self)

    async def remove(self) -> None:
        """Shut down (the walk removes the volumes after it)."""
        await self.shutdown()

    async def grow(self, amount: int, dryrun: bool, backingstore: bool) -> None:
        """Grow the data volume (``backingstore``), or take the new size of the data
        volume (not ``backingstore``: the mirror on top)."""
        state = await self._load_mine()
        data = self.children[0] if self.children else None
        if self._child_paths() is None or data is None:
            raise BlockDeviceError(f"drbd{state.minor}: cannot grow diskless device")
        if self.qemu:  # refused by the dry run, before any volume changes
            raise BlockDeviceError(f"drbd{state.minor}: growing a disk of the qemu mirror "
                                   "engine is not supported yet (its storage daemons serve "
                                   "a fixed size)")
        await data.grow(amount, dryrun, backingstore)
        if dryrun or backingstore:
            return
        dims = await data.dimensions()
        new_size = state.size + int(amount)
        if dims is None or int(dims[0]) < new_size * MIB:
            have = "unknown" if dims is None else f"{int(dims[0]) // MIB}"
            raise BlockDeviceError(f"drbd{state.minor}: can't grow to {new_size} MiB: the "
                                   f"data volume has {have} MiB")
        async with self.net.locked(state.minor):
            state = await self._load_mine()
            state.size = new_size
            await self.net.save(state)
        self.size = new_size

    # -- the network and the local disks (the drbd calls) ----------------------------------

    async def disconnect_net(self) -> None:
        """StandAlone: stop listening and asking."""
        async with self.net.locked(self._minor()):
            state = await self._load_mine()
            state.net, state.net_since = False, None
            await self.net.unlisten(state.minor)
            await self.net.save(state)
        if self.qemu:
            await qmirror_drbd.net_detached(self)

    async def attach_net(self, multimaster: bool) -> None:
        """(Re)attach the network to the peer this disk names (``multimaster``: both
        sides may be Primary)."""
        async with self.net.locked(self._minor()):
            state = await self._load_mine()
            if not self._net_config(state):
                raise BlockDeviceError(f"drbd{state.minor}: missing network info in "
                                       "AttachNet()")
            if not state.net or state.multimaster != multimaster:
                state.net_since = self.ctx.clock.seconds()
            state.net, state.multimaster = True, bool(multimaster)
            await self.net.listen(state)
            await self.net.save(state)
        if self.qemu and state.role == PRIMARY:
            await qmirror_drbd.opened(self)

    async def add_children(self, devices: Sequence[BlockDevice]) -> None:
        """Attach new local volumes (data, meta) to a diskless device: Inconsistent, it
        resyncs from its peer."""
        async with self.net.locked(self._minor()):
            state = await self._load_mine()
            if len(devices) != 2:
                raise BlockDeviceError(f"drbd{state.minor}: need two devices for "
                                       "AddChildren")
            if state.disk != DISKLESS:
                raise BlockDeviceError(f"drbd{state.minor}: already attached to a local "
                                       "disk")
            if any(d.dev_path is None for d in devices):
                raise BlockDeviceError(f"drbd{state.minor}: children not ready during "
                                       "AddChildren")
            state.children = [str(d.dev_path) for d in devices]
            state.start_resync(self.ctx.clock.seconds())
            await self.net.save(state)
        self.children = list(devices)

    async def remove_children(self, paths: Sequence[str]) -> None:
        """Detach the local volumes at ``paths`` (data, meta): the device goes
        diskless."""
        async with self.net.locked(self._minor()):
            state = await self._load_mine()
            if state.disk == DISKLESS:
                return
            if len(paths) != 2:
                raise BlockDeviceError(f"drbd{state.minor}: we need two children in "
                                       "RemoveChildren")
            for have, given in zip(state.children, paths, strict=False):
                if have != given:
                    raise BlockDeviceError(f"drbd{state.minor}: mismatch in local storage "
                                           f"({have} != {given}) in RemoveChildren")
            state.disk, state.children = DISKLESS, []
            state.oos_kib = state.total_kib = 0.0
            await self.net.save(state)
        self.children = []

    # -- state ------------------------------------------------------------------------

    async def sync_status(self) -> SyncStatus:
        """Sync percentage and time left while resyncing; degraded unless Connected
        with the local disk UpToDate; the local disk okay, syncing or faulty."""
        seen = await self.mirror_status()
        data = (await qmirror_drbd.status(
            self, seen.cstate == drbdstate.CONNECTED and seen.peer_role != PRIMARY)
            if self.qemu else None)
        if data is not None:  # the primary's data plane: its mirror job decides
            return SyncStatus(self.dev_path, self.major, self.minor, data.sync_percent,
                              data.estimated_time, seen.is_degraded or not data.in_sync,
                              seen.ldisk_status)
        return SyncStatus(self.dev_path, self.major, self.minor, seen.sync_percent,
                          seen.estimated_time, seen.is_degraded, seen.ldisk_status)

    async def dimensions(self) -> list[Any] | None:
        """[size in bytes, None] (spindles are the volumes')."""
        state = self._mine(await self.net.load(self._minor()))
        return None if state is None else [state.size * MIB, None]

    def local_path(self) -> str | None:
        """Where the data is on this node: the emulated engine has no device node, so
        its local data volume (None when diskless)."""
        if not self.attached:
            return None
        data = self.children[0] if self.children else None
        return None if data is None else data.local_path()

    @classmethod
    def static_path(cls, dev_type: str, logical_id: Sequence[str]) -> str:
        """A drbd device's path depends on the node (its minor): none."""
        raise ValueError(f"no static device path for disks of type {constants.DT_DRBD8}")
