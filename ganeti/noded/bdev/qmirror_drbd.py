"""The ``drbd`` device's ``qemu`` engine: real data mirrored by qemu-storage-daemons.

A drbd disk whose ``dynamic_params["mirror"]`` is ``qemu`` keeps everything the
emulated engine has (:mod:`.drbd`: the minor's record, the listener and
handshake that tell each side its peer's role and disk) and adds the data
plane of :mod:`.qmirror`/:mod:`.qmirror_roles`: a qemu-storage-daemon per side
over the local data volume (the metadata volume holds its qcow2 metadata and
persistent dirty bitmaps), the primary mirroring synchronously to the
secondary.

- assemble (both sides, with local volumes): the daemon runs (re-found if it
  does); a diskless side has none;
- open (primary), and attach_net on a primary: the mirror to the peer starts
  (not while the peer is primary too: dual-primary during a migration, the old
  primary's mirror runs on); a new resource (its first open after create)
  starts in sync (``sync=none``), as does a side the old primary handed over
  to (below); otherwise the dirty bitmap's extents are copied, or everything
  without a bitmap; an unreachable peer leaves the primary degraded, as
  DRBD's WFConnection; while the peer is primary too, this side only records
  its writes in a bitmap (copied when its mirror starts);
- close (secondary): the mirror stops (a ready mirror leaves the peer
  identical); if it was in sync, the record gets a hand-over token that the
  handshake shows the peer, whose next open then copies nothing (each token
  is used once; a side with a bitmap resyncs from it instead);
- disconnect_net / attach_net: the mirror stops (the bitmap records on) /
  restarts on a primary;
- shutdown: the daemon ends (``quit``: a persistent bitmap is saved);
- the status of a primary: degraded unless the mirror job is ready with
  nothing pending, ``sync_percent``/``estimated_time`` from the copy.

The handshake listens on the resource's port; the daemon's NBD server on
:func:`nbd_port` of it (both sides compute the same one).  The guest opens
``nbd://local-ip:nbd_port/disk`` (:func:`guest_disk`).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from typing import TYPE_CHECKING, cast

from twisted.logger import Logger

from ganeti.core import constants
from ganeti.noded.bdev import lvm
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import BlockDevice
from ganeti.noded.bdev.drbdstate import PRIMARY
from ganeti.noded.bdev.qmirror import (
    ENGINE,
    MirrorDaemon,
    Volume,
    daemon_dir,
    guest_nbd,
    is_qemu,
    nbd_port,
)
from ganeti.noded.bdev.qmirror_roles import ExportClosed, MirrorStatus, QemuMirror

if TYPE_CHECKING:
    from ganeti.noded.backend.context import NodeContext
    from ganeti.noded.bdev.drbd import DrbdDevice

log = Logger()

async def volume_of(dev: BlockDevice) -> Volume:
    """Where a local volume's data is: a plain volume without device-mapper is its
    extents on its physical volume; anything else its path on the node."""
    if dev.dev_type == constants.DT_PLAIN and not lvm.dm_available():
        pv, offset, size = await cast(lvm.LogicalVolume, dev).extents()
        return Volume(pv, offset, size)
    path = dev.local_path()
    if path is None:
        raise BlockDeviceError(f"local volume {dev.logical_id!r:.80} has no path")
    return Volume(path)


async def _daemon(dev: DrbdDevice) -> MirrorDaemon | None:
    """The side's daemon object (None when diskless or without its addresses)."""
    ctx = dev.ctx
    if ctx.children is None or dev.port is None or not dev.local_ip \
            or len(dev.children) != 2 or any(c is None for c in dev.children):
        return None
    data, meta = dev.children
    assert data is not None and meta is not None
    return MirrorDaemon(ctx.children.reactor, ctx.clock, ctx.children,  # type: ignore[arg-type]
                        ctx.paths.run_dir, f"drbd{dev._minor()}", await volume_of(data),
                        str(dev.local_ip), nbd_port(dev.port), meta=await volume_of(meta))


class GuestPaused:
    """The writers of a disk whose guest opens it over NBD: for the last round of a
    resync the node's kvm guests using the export are suspended (libvirt 9.0 gives
    their NBD client no reconnect delay, so closing the export under them would fail
    their I/O); without such a guest the export is closed instead."""

    def __init__(self, ctx: NodeContext, daemon: MirrorDaemon) -> None:
        self.ctx = ctx
        self.daemon = daemon
        self.paused: list[str] = []
        self.closed: ExportClosed | None = None

    async def pause(self) -> None:
        kvm = self.ctx.kvm
        self.paused = (await kvm.pause_nbd_users(self.daemon.local_ip, self.daemon.port)
                       if kvm is not None else [])
        if not self.paused:
            self.closed = ExportClosed(self.daemon)
            await self.closed.pause()

    async def resume(self) -> None:
        closed, self.closed = self.closed, None
        paused, self.paused = self.paused, []
        if closed is not None:
            await closed.resume()
        elif paused and self.ctx.kvm is not None:
            await self.ctx.kvm.resume_guests(paused)


def _rate(dev: DrbdDevice) -> int:
    return dev._rate() * 1024  # KiB/s (the disk's resync-rate) to bytes/s


#: The node daemon's engines by pid file: one QMP connection per qemu-storage-daemon
#: (its monitor takes one client), one rotation loop.
_MIRRORS: dict[str, QemuMirror] = {}


async def mirror_of(dev: DrbdDevice, start: bool = False) -> QemuMirror | None:
    """The side's engine, its daemon connected (``start``: started if it does not run;
    else None when it does not run)."""
    daemon = await _daemon(dev)
    if daemon is None:
        return None
    mirror = _MIRRORS.get(daemon.pidfile)
    if mirror is None or mirror.daemon.pid() is None:
        if mirror is not None:
            forget(mirror)
        if not start and daemon.pid() is None:
            return None
        mirror = _MIRRORS[daemon.pidfile] = QemuMirror(
            daemon, rate=_rate(dev), writers=GuestPaused(dev.ctx, daemon))
    mirror.rate = _rate(dev)
    await mirror.daemon.start()
    return mirror


def forget(mirror: QemuMirror) -> None:
    """Drop an engine whose daemon ended (its connection closed, its loop stopped)."""
    mirror.close()
    if mirror.daemon.qmp is not None:
        mirror.daemon.qmp.close()
    _MIRRORS.pop(mirror.daemon.pidfile, None)


def _fresh_marker(dev: DrbdDevice) -> str:
    return os.path.join(daemon_dir(dev.ctx.paths.run_dir), f"drbd{dev._minor()}.new")


async def created(dev: DrbdDevice) -> None:
    """A new resource: both sides' volumes are new and empty, so its first mirror
    copies nothing (DRBD's ``--clear-bitmap``)."""
    def mark(path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="ascii"):
            pass
    await dev.ctx.run(mark, _fresh_marker(dev))


def _handed_file(dev: DrbdDevice) -> str:
    return os.path.join(daemon_dir(dev.ctx.paths.run_dir), f"drbd{dev._minor()}.handed")


def _identity(dev: DrbdDevice) -> str:
    """The resource (its port and secret), so that a minor used again by another disk
    never takes a token that is not its own."""
    return hashlib.sha256(f"{dev.port}:{dev.secret}".encode()).hexdigest()[:16]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


async def assembled(dev: DrbdDevice) -> None:
    """The daemon runs on a side with its local volumes; a side the record says is
    Secondary is no primary of the data plane either (its daemon may have been
    restarted, or killed, since it last was: the role is kept beside it).  A hand-over
    token the side's last shutdown left (it was an in-sync primary) goes into the new
    record, for the peer's next open."""
    saved = await dev.ctx.run(_read, _handed_file(dev))
    if saved is not None:
        await dev.ctx.run(_unlink, _handed_file(dev))
        identity, _, token = saved.partition(" ")
        if identity == _identity(dev) and token:
            await _set_handoff(dev, token)
    mirror = await mirror_of(dev, start=True)
    if mirror is None or mirror.role() != "primary":
        return
    state = await dev.net.load(dev._minor())
    if state is None or state.role != PRIMARY:
        await mirror.make_secondary()


async def _set_handoff(dev: DrbdDevice, token: str | None) -> None:
    async with dev.net.locked(dev._minor()):
        state = await dev.net.load(dev._minor())
        if state is not None and state.handoff != token:
            state.handoff = token
            await dev.net.save(state)


def _consumed_file(dev: DrbdDevice) -> str:
    return os.path.join(daemon_dir(dev.ctx.paths.run_dir), f"drbd{dev._minor()}.handoff")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".new", "w", encoding="ascii") as f:
        f.write(text + "\n")
    os.replace(path + ".new", path)


async def opened(dev: DrbdDevice) -> None:
    """Primary: mirror to the peer (see the module docstring); not while the peer is
    primary too (dual-primary, a migration: the peer mirrors here, and two mirrors
    would send writes round; what this side writes meanwhile is tracked)."""
    mirror = await mirror_of(dev, start=True)
    if mirror is None or dev.port is None or not dev.remote_ip:
        return
    await _set_handoff(dev, None)  # this side writes now
    state = await dev.net.load(dev._minor())
    peer = await dev.net.ask_peer(state) if state is not None else None
    if peer is not None and peer.get("role") == PRIMARY:
        await mirror.track()
        return
    marker = _fresh_marker(dev)
    fresh = await dev.ctx.run(os.path.exists, marker)
    token = peer.get("handoff") if peer is not None else None
    handed = (not fresh and isinstance(token, str) and token
              and not await mirror.bitmaps()
              and token != await dev.ctx.run(_read, _consumed_file(dev)))
    try:
        await mirror.connect_peer(str(dev.remote_ip), nbd_port(dev.port),
                                  sync="none" if fresh or handed else "auto")
    except BlockDeviceError as err:  # the peer is not there: degraded, as WFConnection
        log.warn("drbd{minor}: mirror to {peer} not connected: {err}", minor=dev.minor,
                 peer=dev.remote_ip, err=str(err))
        return
    if fresh:
        await dev.ctx.run(os.unlink, marker)
    if handed:  # a hand-over is used once
        await dev.ctx.run(_write, _consumed_file(dev), str(token))


async def closed(dev: DrbdDevice) -> None:
    """Secondary: the mirror stops; if the peer was identical then, this side says so
    in its handshake (a hand-over token), and the peer's open copies nothing."""
    mirror = await mirror_of(dev)
    if mirror is not None and mirror.role() == "primary":
        clean = await mirror.make_secondary()
        await _set_handoff(dev, secrets.token_hex(8) if clean else None)
    elif mirror is not None:
        await mirror.make_secondary()


async def net_detached(dev: DrbdDevice) -> None:
    """StandAlone: the mirror stops, the bitmap records on."""
    mirror = await mirror_of(dev)
    if mirror is not None and mirror.role() == "primary":
        await mirror.disconnect()


async def shut_down(dev: DrbdDevice) -> None:
    """The daemon ends (a persistent bitmap is saved); safe when it does not run.  A
    primary whose mirror is in sync then (its guest stopped: a failover) leaves a
    hand-over token (kept beside the daemon's files until the next :func:`assembled`),
    so the peer's next open copies nothing, as after a close; its own bitmaps stay
    for its own next open."""
    daemon = await _daemon(dev)
    if daemon is not None:
        mirror = _MIRRORS.pop(daemon.pidfile, None)
        if mirror is not None:  # its own connection says quit
            mirror.close()
            daemon = mirror.daemon
        elif daemon.pid() is not None:
            mirror = QemuMirror(daemon)
        if mirror is not None and mirror.role() == "primary":
            try:
                st = await mirror.status()
                clean = st.connected is True and st.in_sync
            except BlockDeviceError:
                clean = False
            # the record goes with the minor: the token waits beside the daemon's
            # files for the next assemble of the same resource
            if clean:
                await dev.ctx.run(_write, _handed_file(dev),
                                  f"{_identity(dev)} {secrets.token_hex(8)}")
            else:
                await dev.ctx.run(_unlink, _handed_file(dev))
        await daemon.stop()
        if os.path.exists(_fresh_marker(dev)):
            await dev.ctx.run(os.unlink, _fresh_marker(dev))


async def status(dev: DrbdDevice, peer_there: bool = False) -> MirrorStatus | None:
    """The data plane's status on a primary (None elsewhere).  A new resource's
    primary whose mirror could not connect yet tries again when ``peer_there`` (the
    handshake reaches a secondary peer): a new disk is created on the primary first,
    so its first open finds no daemon on the peer (DRBD waits for its peer and
    connects).  Later disconnections are the master's to repair (attach_net)."""
    mirror = await mirror_of(dev)
    if mirror is None or mirror.role() != "primary":
        return None
    found = await mirror.status()
    if found.connected is False and peer_there \
            and await dev.ctx.run(os.path.exists, _fresh_marker(dev)):
        await opened(dev)
        found = await mirror.status()
    return found


def guest_disk(dev: DrbdDevice) -> tuple[str, str, int]:
    """(export, host, port) the guest opens on this node."""
    return guest_nbd(dev.disk)


__all__ = ["ENGINE", "guest_disk", "guest_nbd", "is_qemu", "nbd_port"]
