"""A block device as an object: :class:`BlockDevice` (Ganeti's ``BlockDev``) and its
status, :class:`SyncStatus` (Ganeti's ``BlockDevStatus``).

A device is made from the disk dict the master sends and the device objects of
the disk's ``children`` (:mod:`.devices` builds the tree from its table of
device types).  Making the object does no I/O and checks nothing: each
operation checks what it needs, so a malformed disk fails the operation that
uses it with that operation's message.  The life of a device, as in Ganeti:

- it does not exist; :meth:`BlockDevice.create` makes it (its children, if
  any, exist and are assembled already);
- it exists; :meth:`~BlockDevice.attach` finds it and learns its path (and
  major/minor where it has them) without changing anything;
- :meth:`~BlockDevice.assemble` makes it usable (activates a volume, brings up
  a mirror), :meth:`~BlockDevice.open` makes it ready for I/O (a mirror's
  primary role), :meth:`~BlockDevice.close` and :meth:`~BlockDevice.shutdown`
  undo that (never touching the children: :mod:`.devices` walks the tree);
- :meth:`~BlockDevice.remove` destroys it; :meth:`~BlockDevice.grow` and
  :meth:`~BlockDevice.rename` change it; :meth:`~BlockDevice.sync_status` and
  :meth:`~BlockDevice.dimensions` report on it.

:meth:`~BlockDevice.remove` and :meth:`~BlockDevice.shutdown` are safe on a
device that does not exist (they do nothing then).  Every method that does
I/O is a coroutine: blocking work runs in the node's thread pool
(``ctx.run``), programs through its child processes (:func:`.base.run_program`);
nothing blocks the reactor.

A mirrored device (the ``drbd`` template of the next issues) is a device with
children (its local data and metadata volumes) and a peer named in its
``logical_id``: it says :attr:`~BlockDevice.assemble_on_secondary`, needs
:attr:`~BlockDevice.children_needed` ``= 0`` (it may run without its local
disks), grows its data child itself and reports its own sync state, which
:meth:`~BlockDevice.combined_sync_status` merges with its children's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ganeti.core import storagetypes
from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev.base import BlockDeviceError

if TYPE_CHECKING:
    from ganeti.noded.bdev.drbdstate import Observed

MIB = 1024 * 1024


@dataclass(frozen=True)
class SyncStatus:
    """A device's status as ``blockdev_find`` answers it (Ganeti's BlockDevStatus).

    ``sync_percent`` None: not syncing; ``estimated_time`` None: unknown (else
    seconds left); ``is_degraded``: redundancy is missing; ``ldisk_status``: the
    state of the local data (``LDS_OKAY``, ``LDS_UNKNOWN``, ``LDS_FAULTY``)."""

    dev_path: str | None
    major: int | None = None
    minor: int | None = None
    sync_percent: float | None = None
    estimated_time: int | None = None
    is_degraded: bool = False
    ldisk_status: int = storagetypes.LDS_OKAY

    @classmethod
    def of(cls, dev_path: str | None, major: int | None = None, minor: int | None = None,
           degraded: bool = False) -> SyncStatus:
        """A device that does not sync: degraded means its local data is faulty."""
        return cls(dev_path, major, minor, is_degraded=degraded,
                   ldisk_status=storagetypes.LDS_FAULTY if degraded
                   else storagetypes.LDS_OKAY)

    def to_wire(self) -> dict[str, Any]:
        """The status as the wire carries it (Ganeti's BlockDevStatus fields)."""
        return {"dev_path": self.dev_path, "major": self.major, "minor": self.minor,
                "sync_percent": self.sync_percent, "estimated_time": self.estimated_time,
                "is_degraded": self.is_degraded, "ldisk_status": self.ldisk_status}

    def combined(self, children: Iterable[SyncStatus]) -> SyncStatus:
        """This status merged with the children's (Ganeti's CombinedSyncStatus): the
        lowest sync percentage, the longest estimate, degraded if any is, the worst
        local-disk state; path and numbers stay this device's."""
        percent, time = self.sync_percent, self.estimated_time
        degraded, ldisk = self.is_degraded, self.ldisk_status
        for child in children:
            if child.sync_percent is not None:
                percent = (child.sync_percent if percent is None
                           else min(percent, child.sync_percent))
            if child.estimated_time is not None:
                time = (child.estimated_time if time is None
                        else max(time, child.estimated_time))
            degraded = degraded or child.is_degraded
            ldisk = max(ldisk, child.ldisk_status)
        return SyncStatus(self.dev_path, self.major, self.minor, percent, time, degraded,
                          ldisk)


class BlockDevice:
    """One block device of a disk on this node (see the module docstring).

    Subclasses set the class attributes that describe their type and override
    the operations they support; the defaults refuse grow and rename and do
    nothing for shutdown, open and close.
    """

    #: whether the device is assembled on a secondary node too (Ganeti's
    #: ``AssembleOnSecondary``: volumes and mirrors)
    assemble_on_secondary: ClassVar[bool] = False
    #: whether it is also opened there (Ganeti's ``OpenOnSecondary``: volumes)
    open_on_secondary: ClassVar[bool] = False
    #: how many children must assemble for the device to assemble: -1 all of them
    #: (Ganeti's ``ChildrenNeeded``; a mirror may run without its local disks: 0)
    children_needed: ClassVar[int] = -1
    #: whether the type has child devices at all (a leaf refuses children)
    has_children: ClassVar[bool] = False
    #: whether it may be created while exclusive storage is on
    exclusive_storage: ClassVar[bool] = False
    #: whether it holds data (a disk conversion copies it; an image is written on it)
    holds_data: ClassVar[bool] = True
    #: whether data may be written onto it (adopted devices are the administrator's)
    accepts_import: ClassVar[bool] = True
    #: whether it is a sparse file (a copy onto it skips blocks of zeros)
    sparse: ClassVar[bool] = False
    #: whether it mirrors its data to a peer node (``drbd``): the mirror calls
    #: (network, roles, local volumes) apply to it
    mirrored: ClassVar[bool] = False

    def __init__(self, ctx: NodeContext, disk: dict[str, Any],
                 children: Sequence[BlockDevice | None] = ()) -> None:
        self.ctx = ctx
        self.disk = disk
        self.dev_type = str(disk.get("dev_type"))
        self.logical_id: Any = disk.get("logical_id")
        self.size: Any = disk.get("size")
        self.params: dict[str, Any] = disk.get("params") or {}
        self.dynamic_params: dict[str, Any] = disk.get("dynamic_params") or {}
        #: the child devices; None for a child that could not be assembled
        self.children: list[BlockDevice | None] = list(children)
        #: the device's path on the wire (as Ganeti names it), once attached
        self.dev_path: str | None = None
        self.major: int | None = None
        self.minor: int | None = None
        self.attached = False
        if children and not self.has_children:
            raise BlockDeviceError(f"Invalid setup for {self.dev_type} device: it has "
                                   "no child devices")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.dev_type} {self.logical_id!r}>"

    @property
    def unique_id(self) -> Any:
        """What ``blockdev_create`` answers: the device's logical id."""
        return list(self.logical_id) if isinstance(self.logical_id, list) else None

    # -- life ------------------------------------------------------------------------

    @classmethod
    async def create(cls, ctx: NodeContext, disk: dict[str, Any],
                     children: Sequence[BlockDevice | None], size: int,
                     info: str) -> BlockDevice:
        """Create the device of ``size`` MiB (``info``: text to tag it with, where the
        type keeps such text); the new device, attached."""
        raise BlockDeviceError(f"Creating {disk.get('dev_type')} disks is not supported")

    async def attach(self) -> bool:
        """Find the existing device and learn its path; whether it exists.  Changes
        nothing on the node; a malformed disk raises BlockDeviceError."""
        raise NotImplementedError

    async def assemble(self) -> None:
        """Make the existing device usable (idempotent); BlockDeviceError if it cannot
        be (it does not exist)."""
        raise NotImplementedError

    async def open(self, force: bool = False, exclusive: bool = True) -> None:
        """Make the assembled device ready for I/O (a mirror's primary role;
        ``exclusive``: the peer may not be primary too)."""

    async def close(self) -> None:
        """Say the device will no longer be used for I/O."""

    async def shutdown(self) -> None:
        """Undo :meth:`assemble` (not the children's); nothing if it is not there."""

    async def remove(self) -> None:
        """Destroy the device; nothing if it is not there."""
        raise NotImplementedError

    async def rename(self, new_id: list[Any]) -> None:
        """Give the (attached) device a new logical id."""
        raise BlockDeviceError(f"Rename is not supported for {self.dev_type} disks")

    async def grow(self, amount: int, dryrun: bool, backingstore: bool) -> None:
        """Grow the (attached) device by ``amount`` MiB (``backingstore``: grow the
        storage under it, not a mirror on top; ``dryrun``: only check)."""
        raise BlockDeviceError(f"Grow is not supported for {self.dev_type} disks")

    # -- a mirror's network and local volumes (the drbd calls) ------------------------

    def _not_mirrored(self) -> BlockDeviceError:
        return BlockDeviceError(f"{self.dev_type} devices are not mirrored")

    async def mirror_status(self) -> Observed:
        """The mirror as DRBD's status shows it (connection, roles, disks, resync)."""
        raise self._not_mirrored()

    async def disconnect_net(self) -> None:
        """Disconnect the mirror from its peer (StandAlone)."""
        raise self._not_mirrored()

    async def attach_net(self, multimaster: bool) -> None:
        """(Re)connect the mirror to its peer (``multimaster``: dual-primary)."""
        raise self._not_mirrored()

    async def add_children(self, devices: Sequence[BlockDevice]) -> None:
        """Attach new local volumes to the mirror."""
        raise self._not_mirrored()

    async def remove_children(self, paths: Sequence[str]) -> None:
        """Detach the local volumes at ``paths`` from the mirror."""
        raise self._not_mirrored()

    # -- state -----------------------------------------------------------------------

    async def sync_status(self) -> SyncStatus:
        """The (attached) device's own status; a non-mirrored device never syncs."""
        return SyncStatus.of(self.dev_path, self.major, self.minor)

    async def combined_sync_status(self) -> SyncStatus:
        """The device's status merged with its children's (recursively)."""
        own = await self.sync_status()
        return own.combined([await child.combined_sync_status()
                             for child in self.children if child is not None])

    async def dimensions(self) -> list[Any] | None:
        """[size in bytes, spindles or None] of the (attached) device."""
        raise NotImplementedError

    @classmethod
    def static_path(cls, dev_type: str, logical_id: Sequence[str]) -> str:
        """The path a device of this type always has, from its logical id (Ganeti's
        ``StaticDevPath``; ``logical_id`` is two non-empty strings); ValueError for a
        type without one or a malformed id.  Pure: no I/O, no checks on the node."""
        raise ValueError(f"no device path for disks of type {dev_type!r}")

    @classmethod
    def local_path_of(cls, paths: Paths, wire_path: str) -> str:
        """A device path of this type as it is on the node of ``paths`` (the wire's
        path, but for files below a virtual node's root)."""
        return wire_path

    def local_path(self) -> str | None:
        """The (attached) device's path on this node, None if it has none."""
        if self.dev_path is None:
            return None
        return self.local_path_of(self.ctx.paths, self.dev_path)

    async def data_path(self) -> str:
        """Where the device's data is read and written on this node (a conversion's
        copy, an OS image): the path of the device, assembled (idempotent)."""
        if not self.holds_data:
            raise BlockDeviceError(f"Disks of template '{self.dev_type}' hold no data")
        await self.assemble()
        path = self.local_path()
        if path is None:
            raise BlockDeviceError(f"{self}: no device path after assembling")
        return path


class DisklessDevice(BlockDevice):
    """The ``diskless`` template: no device.  Creating, assembling, shutting down and
    removing do nothing; it is never found."""

    holds_data = False
    accepts_import = False

    @classmethod
    async def create(cls, ctx: NodeContext, disk: dict[str, Any],
                     children: Sequence[BlockDevice | None], size: int,
                     info: str) -> BlockDevice:
        """Nothing to create."""
        return cls(ctx, disk, children)

    @property
    def unique_id(self) -> Any:
        """A diskless disk has no logical id."""
        return None

    async def attach(self) -> bool:
        """There is never a device."""
        return False

    async def assemble(self) -> None:
        """Nothing to assemble: no path."""

    async def remove(self) -> None:
        """Nothing to remove."""

    async def dimensions(self) -> list[Any] | None:
        """No device, no size."""
        return None
