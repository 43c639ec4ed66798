"""The ``qemu`` mirror engine's roles: the synchronous mirror, the resync, the swap.

A disk's two daemons (:class:`~.qmirror.MirrorDaemon`) both export their data
(``disk`` for the guest, ``peer`` for the other side's mirror).  The
**secondary** only serves: its peer writes into its ``peer`` export.  The
**primary** also opens the peer's ``peer`` export as its NBD node ``peer`` and runs
the mirror job ``mirror``: ``blockdev-mirror`` of ``disk`` to ``peer`` with
``copy-mode=write-blocking``, so once the job is *ready* a write completes
only when both sides have it (DRBD's protocol C).  The job is the connection:

- ready, nothing pending: Connected, UpToDate on both sides;
- running, not ready (or a resync copy running): resyncing, ``offset/len`` of
  the job is the sync percentage;
- gone (the peer died: the write to it failed, the job ended with the error,
  the local write still completed): disconnected, degraded.

**Dirty bitmaps** (``dirty-<n>`` on ``disk``, always recording while primary)
say what the peer may lack: one is started when the mirror becomes ready
and the older ones dropped once the peer has flushed (what was written before
is on its disk), again every :data:`ROTATE_INTERVAL` seconds while the job
stays ready.  When the
peer comes back, :meth:`QemuMirror.connect_peer` copies only what the bitmap
marks.  QEMU 7.2's ``blockdev-mirror`` takes no bitmap (``sync=bitmap`` came
later) and no second job may run on a mirrored node, so the copy is done
before the mirror starts, by ``blockdev-backup sync=bitmap`` rounds (each
round freezes the current bitmap and starts the next, which records the
writes made meanwhile; the rounds shrink), then a last round with the
disk's writers paused (:class:`Writers`; by default the guest-facing export is
closed, :class:`ExportClosed`) so no write races it, and the mirror starts
with ``sync=none``.  Without a bitmap (a new daemon, a peer never in sync) the
mirror starts with ``sync=full``.  A **role swap** (migration) stops the
ready mirror (``block-job-cancel`` of a ready mirror leaves the target
identical) and the new primary mirrors back with ``sync=none``: no byte copied.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Protocol

from twisted.internet import defer, task
from twisted.logger import Logger

from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.qmirror import (
    DISK_NODE,
    EXPORT,
    PEER_EXPORT,
    FileExport,
    MirrorDaemon,
    export_args,
    qemu_io_program,
)

log = Logger()

MIRROR_JOB = "mirror"
PEER_NODE = "peer"
#: The mirror's filter node above ``disk``: what the guest's export must write to.
MIRROR_TOP = "mirror-top"
#: Seconds between bitmap rotations while the mirror is ready.
ROTATE_INTERVAL = 60.0
#: A resync round leaving at most this many dirty bytes is followed by the last round.
FINAL_ROUND_BYTES = 8 * 1024 * 1024
#: At most this many background rounds before the last one.
MAX_ROUNDS = 5
#: Seconds a resync copy (one round) may take.
ROUND_TIMEOUT = 3600.0
#: Seconds a job change (cancel, export removal) may take.
JOB_TIMEOUT = 60.0

_BITMAP = re.compile(r"dirty-(\d+)")


@dataclass(frozen=True)
class MirrorStatus:
    """What the engine reports of one side.

    ``connected``: the primary's mirror job exists (None on a secondary, which
    does not know); ``in_sync``: the job is ready with nothing pending;
    ``sync_percent``: the copy's progress while resyncing (else None);
    ``dirty_bytes``: what the newest bitmap marks (None without one);
    ``estimated_time``: seconds left of the copy at the engine's rate (None when
    not copying or unlimited).
    """

    role: str
    connected: bool | None
    in_sync: bool
    sync_percent: float | None
    offset: int
    length: int
    dirty_bytes: int | None
    estimated_time: int | None = None


class Writers(Protocol):
    """Stops and restarts the writers of a disk (its guest) for the last resync round."""

    async def pause(self) -> None:
        """Return once no write can reach the disk."""

    async def resume(self) -> None:
        """Let writes reach the disk again."""


class ExportClosed:
    """The writers are paused by closing the guest-facing export (``block-export-del
    mode=hard``; in-flight requests finish first): a QEMU whose NBD client has a
    ``reconnect-delay`` waits and reconnects.  libvirt 9.0 sets no reconnect delay on
    NBD disks, so a libvirt guest needs a hook that suspends the domain instead."""

    def __init__(self, daemon: MirrorDaemon) -> None:
        self.daemon = daemon

    async def pause(self) -> None:
        gone = self.daemon.wait_event(
            lambda name, data: name == "BLOCK_EXPORT_DELETED" and data.get("id") == EXPORT,
            JOB_TIMEOUT)
        await self.daemon.execute("block-export-del", {"id": EXPORT, "mode": "hard"})
        await gone

    async def resume(self) -> None:
        await self.daemon.execute("block-export-add", export_args(await top_node(self.daemon)))


async def top_node(daemon: MirrorDaemon) -> str:
    """The node a new writer must write to: the mirror's filter when the mirror runs
    (an export on ``disk`` would bypass it; when the job ends QEMU moves the filter's
    parents down to ``disk``), else ``disk``."""
    nodes = await daemon.execute("query-named-block-nodes", {"flat": True})
    return MIRROR_TOP if any(n.get("node-name") == MIRROR_TOP for n in nodes or []) \
        else DISK_NODE


class QemuMirror:
    """One side of a mirrored disk: its daemon and its role (see the module docstring)."""

    def __init__(self, daemon: MirrorDaemon, rate: int = 0,
                 writers: Writers | None = None) -> None:
        self.daemon = daemon
        #: stops the disk's writers for the last resync round (default: the export is
        #: closed, see :class:`ExportClosed`)
        self.writers = writers
        #: bytes/s of the background copies (the disk's ``resync-rate``); 0: unlimited.
        #: Writes through the mirror are never slowed.
        self.rate = rate
        self.copied = 0  # bytes the last connect_peer copied (resync rounds or full sync)
        self._rotator: task.LoopingCall | None = None
        self._resync_job: str | None = None
        self._rotating = False
        self._settle_waiters: list[defer.Deferred[None]] = []
        self._prepared: tuple[str, int] | None = None
        daemon.listeners.append(self._event)

    def close(self) -> None:
        """Stop the periodic bitmap rotation (the daemon and its mirror run on)."""
        self._stop_rotation()

    # -- queries ----------------------------------------------------------------------

    async def _jobs(self) -> dict[str, dict[str, Any]]:
        jobs = await self.daemon.execute("query-block-jobs")
        return {str(j.get("device")): j for j in jobs or []}

    async def _nodes(self) -> dict[str, dict[str, Any]]:
        nodes = await self.daemon.execute("query-named-block-nodes", {"flat": True})
        return {str(n.get("node-name")): n for n in nodes or []}

    async def bitmaps(self) -> dict[int, int]:
        """The dirty bitmaps on the disk: generation -> dirty bytes.  If one is
        inconsistent (a persistent bitmap whose daemon did not stop cleanly: it may
        miss writes), all are dropped and none is returned."""
        node = (await self._nodes()).get(DISK_NODE, {})
        found: dict[int, int] = {}
        broken = False
        for bm in node.get("dirty-bitmaps") or []:
            m = _BITMAP.fullmatch(str(bm.get("name")))
            if m:
                found[int(m.group(1))] = int(bm.get("count", 0))
                broken = broken or bool(bm.get("inconsistent"))
        if broken:
            log.warn("Dirty bitmaps of {name} are inconsistent (an unclean stop); the "
                     "next resync copies the whole disk", name=self.daemon.name)
            for gen in found:
                await self._remove_bitmap(gen)
            return {}
        return found

    @property
    def role_file(self) -> str:
        """Where the side's role is kept (next to the daemon's pid file: it survives a
        noded restart, and a new daemon starts secondary)."""
        return os.path.join(self.daemon.dir, f"{self.daemon.name}.role")

    def role(self) -> str:
        """``primary`` or ``secondary``."""
        try:
            with open(self.role_file, encoding="ascii") as f:
                role = f.read().strip()
        except OSError:
            return "secondary"
        return role if role == "primary" and self.daemon.pid() is not None else "secondary"

    def _set_role(self, role: str) -> None:
        if role == "secondary":
            if os.path.exists(self.role_file):
                os.unlink(self.role_file)
            return
        with open(self.role_file + ".new", "w", encoding="ascii") as f:
            f.write(role + "\n")
        os.replace(self.role_file + ".new", self.role_file)

    async def status(self) -> MirrorStatus:
        """This side's role and sync state."""
        primary = self.role() == "primary"
        jobs = await self._jobs()
        maps = await self.bitmaps()
        dirty = maps[max(maps)] if maps else None
        if not primary:
            return MirrorStatus("secondary", None, False, None, 0, 0, dirty)
        job = jobs.get(self._resync_job or "") or jobs.get(MIRROR_JOB)
        if job is None:
            return MirrorStatus("primary", False, False, None, 0, 0, dirty)
        offset, length = int(job.get("offset", 0)), int(job.get("len", 0))
        in_sync = (job.get("device") == MIRROR_JOB and bool(job.get("ready"))
                   and offset == length)
        percent = None if in_sync else (100.0 * offset / length if length else 0.0)
        eta = (None if in_sync or not self.rate
               else int((length - offset + self.rate - 1) // self.rate))
        return MirrorStatus("primary", True, in_sync, percent, offset, length, dirty, eta)

    # -- roles ------------------------------------------------------------------------

    async def connect_peer(self, peer_ip: str, port: int, sync: str = "auto") -> int:
        """Become (or stay) primary mirroring to ``peer_ip:port``; the bytes copied.

        ``sync``: ``none`` (the sides are known equal: a new resource, a role
        swap), ``full`` (copy everything), ``auto`` (the bitmap's extents if
        there is one, else everything).  Returns once the copy of the dirty
        extents is done and the mirror runs (a full sync goes on in the job:
        :meth:`status`).  A peer that cannot be reached is BlockDeviceError.
        """
        if sync not in ("auto", "full", "none"):
            raise BlockDeviceError(f"Unknown mirror sync mode {sync!r}")
        self._set_role("primary")
        if await self._mirroring():  # already (a noded restart re-found it)
            self._start_rotation()
            return 0
        if self._prepared != (peer_ip, port) or PEER_NODE not in await self._nodes():
            await self._open_peer(peer_ip, port)
        self._prepared = None
        self.copied = 0
        maps = await self.bitmaps()
        if sync == "auto":
            sync = "incremental" if maps else "full"
        if sync == "incremental":
            self.copied = await self._resync(maps)
        else:
            # A full copy makes old bitmaps meaningless (were it to fail, they would
            # claim a partial copy complete); the sides being equal, writes are tracked
            # from now on.
            for gen in maps:
                await self._remove_bitmap(gen)
            if sync == "none":
                await self._add_bitmap(1)
            await self._start_mirror(sync)
            if sync == "full":
                image = (await self._nodes()).get(DISK_NODE, {}).get("image", {})
                self.copied = int(image.get("virtual-size", 0))
        log.info("Mirror of {name} to {peer}:{port} started ({sync} sync): {copied} bytes "
                 "{done}", name=self.daemon.name, peer=peer_ip, port=port, sync=sync,
                 copied=self.copied, done="to copy" if sync == "full" else "copied")
        self._start_rotation()
        return self.copied

    async def _mirroring(self) -> bool:
        """Whether the mirror job runs; one that is ending (a write to the peer failed:
        ``on-target-error=report`` ends it, and QEMU takes a moment to) is waited for
        until it is gone."""
        gone = self.daemon.wait_event(_job_gone(MIRROR_JOB), JOB_TIMEOUT)
        job = (await self._jobs()).get(MIRROR_JOB)
        if job is not None and job.get("status") in ("running", "ready") \
                and not job.get("error"):
            _abandon(gone)
            return True
        if job is not None:
            await gone
        else:
            _abandon(gone)
        return False

    async def prepare_peer(self, peer_ip: str, port: int) -> None:
        """Open the peer's export ahead of a role swap (while the peer still mirrors
        here), so that :meth:`connect_peer` at the switch-over only starts the job."""
        await self._open_peer(peer_ip, port)
        self._prepared = (peer_ip, port)

    async def stop_mirror(self) -> bool:
        """The switch-over's half on the old primary: stop the mirror job (a ready mirror
        leaves the peer identical; no write may come after); :meth:`make_secondary`
        tidies up later.  Whether the peer was identical when it stopped."""
        self._stop_rotation()
        jobs = await self._jobs()
        clean = await self._ready()
        if MIRROR_JOB in jobs:
            gone = self.daemon.wait_event(_job_gone(MIRROR_JOB), JOB_TIMEOUT)
            await self.daemon.execute("block-job-cancel", {"device": MIRROR_JOB})
            await gone
        self._set_role("secondary")
        return clean

    async def track(self) -> None:
        """Record writes in a bitmap without mirroring (a new primary while its peer is
        primary too: what it writes meanwhile is copied when its mirror starts)."""
        if not await self.bitmaps():
            await self._add_bitmap(1)

    async def make_secondary(self) -> bool:
        """Stop mirroring (a ready mirror leaves the peer identical) and close the peer;
        the dirty bitmaps are dropped (the new primary tracks the writes).  Whether
        the peer was identical when the mirror stopped."""
        clean = await self.stop_mirror()
        await self.disconnect()
        for gen in await self.bitmaps():
            await self.daemon.execute("block-dirty-bitmap-remove",
                                      {"node": DISK_NODE, "name": f"dirty-{gen}"})
        return clean

    # -- the disk as a file (OS scripts) ---------------------------------------------

    async def export_file(self) -> str:
        """Serve the disk as a file that writes through the mirror
        (:class:`~.qmirror.FileExport`); its path.  Only on the primary."""
        if self.role() != "primary":
            raise BlockDeviceError("the disk is not primary on this node")
        return await FileExport(self.daemon).start()

    async def end_file_export(self) -> None:
        """End the file export of :meth:`export_file` (if there is one)."""
        await FileExport(self.daemon).stop()

    async def disconnect(self) -> None:
        """Stop the mirror job and close the peer (StandAlone); the bitmap records on.
        A mirror in sync first forgets what the peer has (a rotation), so the resync
        after a planned disconnection (a migration's standalone step) copies only what
        is written meanwhile."""
        jobs = await self._jobs()
        if MIRROR_JOB in jobs:
            await self.settled()
            if await self._ready():
                try:
                    await self.rotate()
                except BlockDeviceError as err:  # the older bitmaps stay: safe
                    log.warn("Bitmap rotation of {name} failed: {err}",
                             name=self.daemon.name, err=str(err))
            gone = self.daemon.wait_event(_job_gone(MIRROR_JOB), JOB_TIMEOUT)
            await self.daemon.execute("block-job-cancel", {"device": MIRROR_JOB})
            await gone
        if PEER_NODE in await self._nodes():
            await self.daemon.execute("blockdev-del", {"node-name": PEER_NODE})

    async def wait_in_sync(self, timeout: float) -> MirrorStatus:
        """Wait (bounded, on the daemon's clock) until the mirror is ready; the status."""
        st = await self.status()
        if st.in_sync or not st.connected:
            await self.settled()
            return st
        ready = self.daemon.wait_event(
            lambda name, data: name == "BLOCK_JOB_READY" and data.get("device") == MIRROR_JOB,
            timeout)
        st = await self.status()
        if st.in_sync:
            _abandon(ready)
        else:
            await ready
        await self.settled()
        return await self.status()

    # -- the pieces -------------------------------------------------------------------

    async def _open_peer(self, peer_ip: str, port: int) -> None:
        if PEER_NODE in await self._nodes():
            await self.daemon.execute("blockdev-del", {"node-name": PEER_NODE})
        await self.daemon.execute("blockdev-add", {
            "driver": "nbd", "node-name": PEER_NODE, "export": PEER_EXPORT,
            "server": {"type": "inet", "host": peer_ip, "port": str(port)},
            "reconnect-delay": 0})

    async def _start_mirror(self, sync: str) -> None:
        """Start the mirror job; with nothing to copy (``sync=none``) return once it is
        ready (or ended), so the side is in sync when its open returns."""
        speed = {"speed": self.rate} if self.rate else {}
        settled = None
        if sync == "none":
            settled = self.daemon.wait_event(_ready_or_ended(MIRROR_JOB), JOB_TIMEOUT)
        try:
            await self.daemon.execute("blockdev-mirror", {**speed,
                "job-id": MIRROR_JOB, "device": DISK_NODE, "target": PEER_NODE,
                "sync": sync, "copy-mode": "write-blocking", "on-source-error": "report",
                "on-target-error": "report", "filter-node-name": MIRROR_TOP})
        except BaseException:
            if settled is not None:
                _abandon(settled)
            raise
        if settled is not None:
            await settled

    async def _add_bitmap(self, gen: int, disable: int | None = None) -> None:
        """Start bitmap ``gen`` and (in the same transaction) freeze ``disable``."""
        # on a qcow2 disk (a metadata volume) the bitmap is kept there across a clean
        # stop of the daemon
        actions: list[dict[str, Any]] = [{"type": "block-dirty-bitmap-add", "data": {
            "node": DISK_NODE, "name": f"dirty-{gen}",
            "persistent": self.daemon.meta is not None}}]
        if disable is not None:
            actions.append({"type": "block-dirty-bitmap-disable", "data": {
                "node": DISK_NODE, "name": f"dirty-{disable}"}})
        await self.daemon.execute("transaction", {"actions": actions})

    async def _remove_bitmap(self, gen: int) -> None:
        await self.daemon.execute("block-dirty-bitmap-remove",
                                  {"node": DISK_NODE, "name": f"dirty-{gen}"})

    async def _copy_round(self, gen: int, nxt: int, limited: bool = True) -> int:
        """Freeze bitmap ``gen``, start ``nxt``, copy what ``gen`` marks to the peer
        (``blockdev-backup sync=bitmap``); the bytes copied.  On failure ``gen`` is
        merged back into ``nxt`` (nothing is forgotten)."""
        await self._add_bitmap(nxt, disable=gen)
        job = f"resync-{gen}"
        done = self.daemon.wait_event(_job_done(job), ROUND_TIMEOUT)
        try:
            self._resync_job = job
            speed = {"speed": self.rate} if self.rate and limited else {}
            await self.daemon.execute("blockdev-backup", {
                **speed, "job-id": job, "device": DISK_NODE, "target": PEER_NODE, "sync": "bitmap",
                "bitmap": f"dirty-{gen}", "bitmap-mode": "never",
                "on-source-error": "report", "on-target-error": "report"})
            data = await done
            if data.get("error") or data.get("_cancelled"):
                raise BlockDeviceError(f"Resync of {self.daemon.name} failed: "
                                       f"{data.get('error', 'cancelled')}")
        except BaseException:
            _abandon(done)
            await self.daemon.execute("block-dirty-bitmap-merge", {
                "node": DISK_NODE, "target": f"dirty-{nxt}", "bitmaps": [f"dirty-{gen}"]})
            await self._remove_bitmap(gen)
            raise
        finally:
            self._resync_job = None
        await self._remove_bitmap(gen)
        return int(data.get("len", 0))

    async def _resync(self, maps: dict[int, int]) -> int:
        """Copy what the bitmaps mark, then start the mirror (module docstring)."""
        gen = max(maps)
        for old in sorted(maps)[:-1]:  # several left by an interrupted rotation: merge
            await self.daemon.execute("block-dirty-bitmap-merge", {
                "node": DISK_NODE, "target": f"dirty-{gen}", "bitmaps": [f"dirty-{old}"]})
            await self._remove_bitmap(old)
        copied = 0
        for _ in range(MAX_ROUNDS):
            copied += await self._copy_round(gen, gen + 1)
            gen += 1
            if (await self.bitmaps()).get(gen, 0) <= FINAL_ROUND_BYTES:
                break
        writers = self.writers or ExportClosed(self.daemon)
        await writers.pause()
        try:
            # the guest waits on this round: at full speed
            copied += await self._copy_round(gen, gen + 1, limited=False)
            await self._start_mirror("none")
        finally:
            await writers.resume()
        return copied

    # -- bitmap rotation --------------------------------------------------------------

    def _event(self, name: str, data: dict[str, Any]) -> None:
        if name == "BLOCK_JOB_READY" and data.get("device") == MIRROR_JOB:
            self._rotate_soon()

    def _rotate_soon(self) -> None:
        if self._rotating:
            return
        self._rotating = True
        d = defer.ensureDeferred(self.rotate())
        d.addErrback(lambda f: log.warn("Bitmap rotation of {name} failed: {err}",
                                        name=self.daemon.name, err=f.getErrorMessage()))

        def done(_: object) -> None:
            self._rotating = False
            waiters, self._settle_waiters = self._settle_waiters, []
            for w in waiters:
                w.callback(None)
        d.addBoth(done)

    async def settled(self) -> None:
        """Wait for a bitmap rotation in progress (started by the mirror's readiness)."""
        if self._rotating:
            wait: defer.Deferred[None] = defer.Deferred()
            self._settle_waiters.append(wait)
            await wait

    async def rotate(self) -> bool:
        """Start a new bitmap and drop the older ones if the mirror is ready with
        nothing pending and the peer has flushed (what they mark is on the peer's
        disk); whether it rotated."""
        maps = await self.bitmaps()
        gen = max(maps) + 1 if maps else 1
        await self._add_bitmap(gen)
        if not await self._ready() or not await self._flush_peer() \
                or not await self._ready():
            await self._remove_bitmap(gen)  # not known on the peer's disk: they stay
            return False
        for old in maps:
            await self._remove_bitmap(old)
        return True

    async def _ready(self) -> bool:
        job = (await self._jobs()).get(MIRROR_JOB)
        return job is not None and bool(job.get("ready")) \
            and job.get("offset") == job.get("len")

    async def _flush_peer(self) -> bool:
        """Make what the peer acknowledged durable there (a flush through its export,
        which covers every write it completed; a write-through export needs none)."""
        if self.daemon.peer_writethrough:
            return True
        peer = (await self._nodes()).get(PEER_NODE, {})
        url = str(peer.get("image", {}).get("filename") or peer.get("file") or "")
        if not url.startswith("nbd:"):
            return False
        out = await self.daemon.children.run(
            [*self.daemon.prefix, qemu_io_program(), "-f", "raw", "-c", "flush", url],
            timeout=JOB_TIMEOUT)
        if not out.ok:
            log.warn("Flushing the peer of {name} failed: {why}", name=self.daemon.name,
                     why=out.reason())
        return out.ok

    def _start_rotation(self) -> None:
        if self._rotator is None:
            self._rotator = task.LoopingCall(self._rotate_soon)
            self._rotator.clock = self.daemon.clock
            self._rotator.start(ROTATE_INTERVAL, now=False)

    def _stop_rotation(self) -> None:
        if self._rotator is not None and self._rotator.running:
            self._rotator.stop()
        self._rotator = None


def _job_gone(job: str) -> Any:
    return lambda name, data: (name == "JOB_STATUS_CHANGE" and data.get("id") == job
                               and data.get("status") == "null")


def _abandon(wait: defer.Deferred[Any]) -> None:
    """Give up an event wait (:meth:`~.qmirror.MirrorDaemon.wait_event`) that is no
    longer needed: cancelled, its CancelledError consumed (one already fired is left
    as it is)."""
    wait.addErrback(lambda f: f.trap(defer.CancelledError))
    wait.cancel()


def _ready_or_ended(job: str) -> Any:
    def match(name: str, data: dict[str, Any]) -> bool:
        if name == "BLOCK_JOB_READY":
            return data.get("device") == job
        return (name == "JOB_STATUS_CHANGE" and data.get("id") == job
                and data.get("status") in ("aborting", "concluded", "null"))
    return match


def _job_done(job: str) -> Any:
    def match(name: str, data: dict[str, Any]) -> bool:
        if data.get("device") != job:
            return False
        if name == "BLOCK_JOB_CANCELLED":
            data["_cancelled"] = True
            return True
        return name == "BLOCK_JOB_COMPLETED"
    return match

