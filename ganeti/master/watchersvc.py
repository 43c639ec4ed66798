"""masterd's watcher service: ganeti-watcher's master checks, every few seconds.

Ganeti runs its watcher from cron every five minutes, so a rebooted node or a
crashed instance waits up to five minutes.  This service runs the master's
part of the same checks inside masterd every ``interval`` seconds
(``--watcher-interval``, default :data:`DEFAULT_INTERVAL`; 0 turns it off):

- while the watcher is paused (``DATA_DIR/watcher.pause``, read off the
  reactor), nothing is done;
- every :data:`ARCHIVE_INTERVAL` seconds, jobs older than the job age (6 h) are
  archived, as ``ganeti-watcher`` does at each run;
- for each node group, under the group's state-file lock (the one
  ``ganeti-watcher`` takes, so the two never work on a group at the same
  time; a group whose file is locked is skipped this round): the nodes' boot
  ids are read live and compared with the state file (a reboot is seen within
  one interval, and :meth:`WatcherService.on_node_rebooted` is called; it
  activates instance disks once instances exist), and ``OP_GROUP_VERIFY_DISKS``
  is submitted through the job queue like any client's job, at low priority,
  when the group has instances (Ganeti's rule) and the last verify-disks
  recorded in the state file, by either side, is at least ``verify_interval``
  seconds old.  The service waits for the job without blocking (job events)
  and archives it, as the cron command does.  ``ganeti-watcher`` skips a
  verify-disks the service recorded less than four minutes ago, so the two
  never submit one twice.

Node daemons, RAPI and masterd itself are the cron command's business: a
service inside masterd cannot restart masterd.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import IO, Any

from twisted.application import service
from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import constants
from ganeti.core import watcher as watchermod
from ganeti.core.errors import GenericError
from ganeti.core.objects import ConfigData
from ganeti.core.paths import Paths
from ganeti.master.config.replication import BlockingRunner

#: Seconds between two rounds (``--watcher-interval``).
DEFAULT_INTERVAL = 30.0
#: Seconds between two verify-disks of a group (the cron command's period).
DEFAULT_VERIFY_INTERVAL = 300.0
#: Seconds between two archiving passes.
ARCHIVE_INTERVAL = 300.0
#: Longest wait for a verify-disks job before the round goes on without it.
JOB_WAIT_TIMEOUT = 3600.0
#: Who recorded a verify-disks in the state file.
SUBMITTER = "ganeti-masterd"

Query = Callable[[str, list[str], Any], Awaitable[dict[str, Any]]]


class JobAccess:
    """How the service submits, waits for and archives jobs (the queue's own methods)."""

    def __init__(self, submit: Callable[[list[dict[str, Any]]], Awaitable[int]],
                 wait: Callable[[int, float], Awaitable[Any]],
                 archive: Callable[[int], Awaitable[bool]],
                 auto_archive: Callable[[float, float], Awaitable[Any]]) -> None:
        self.submit = submit
        self.wait = wait
        self.archive = archive
        self.auto_archive = auto_archive


class WatcherService(service.Service):
    """Runs :meth:`run_once` every ``interval`` seconds on ``clock``; never two at once."""

    log = Logger()

    def __init__(self, clock: IReactorTime, paths: Paths, config: Callable[[], ConfigData],
                 query: Query, jobs: JobAccess, run_blocking: BlockingRunner,
                 interval: float = DEFAULT_INTERVAL,
                 verify_interval: float = DEFAULT_VERIFY_INTERVAL,
                 job_age: float = watchermod.DEFAULT_JOB_AGE) -> None:
        self.clock = clock
        self.paths = paths
        self.config = config
        self.query = query
        self.jobs = jobs
        self.run_blocking = run_blocking
        self.interval = interval
        self.verify_interval = verify_interval
        self.job_age = job_age
        self._loop: task.LoopingCall | None = None
        self._round: defer.Deferred[Any] | None = None
        self._last_archive: float | None = None
        #: What the rounds did, newest last (bounded): for tests and debugging.
        self.history: list[dict[str, Any]] = []

    def startService(self) -> None:
        super().startService()
        if self.interval <= 0:
            self.log.info("Watcher service off (--watcher-interval 0)")
            return
        self._loop = task.LoopingCall(self._tick)
        self._loop.clock = self.clock
        self._loop.start(self.interval, now=False)

    def stopService(self) -> Any:
        super().stopService()
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        if self._round is not None:
            self._round.cancel()
        return None

    def _tick(self) -> defer.Deferred[Any]:
        # LoopingCall waits for this Deferred, so rounds never overlap.
        self._round = defer.Deferred.fromCoroutine(self._guarded())
        return self._round

    async def _guarded(self) -> None:
        try:
            self._record(await self.run_once())
        except defer.CancelledError:
            pass
        except Exception:
            self.log.failure("Watcher round failed")

    def _record(self, entry: dict[str, Any]) -> None:
        self.history.append(entry)
        del self.history[:-50]

    def record(self, entry: dict[str, Any]) -> None:
        """Add what another part of the watcher did (masterd's instance events) to
        :attr:`history`."""
        self._record(entry)

    async def run_once(self) -> dict[str, Any]:
        """One round; a summary of what it did."""
        now = self.clock.seconds()
        paused = await self.run_blocking(watchermod.read_pause_file,
                                         self.paths.watcher_pause_file, now)
        if paused is not None:
            self.log.debug("Watcher paused until {until}; nothing done", until=paused)
            return {"when": now, "paused": True}
        summary: dict[str, Any] = {"when": now, "paused": False, "archived": None,
                                   "groups": {}}
        if self._last_archive is None or now - self._last_archive >= ARCHIVE_INTERVAL:
            self._last_archive = now
            result = await self.jobs.auto_archive(self.job_age,
                                                  (constants.LUXI_DEF_RWTO - 1) // 2)
            summary["archived"] = result[0] if isinstance(result, list) and result else result
        for uuid in sorted(self.config().nodegroups):
            summary["groups"][uuid] = await self._group(uuid)
        return summary

    async def _group(self, uuid: str) -> dict[str, Any]:
        path = self.paths.watcher_group_state_file(uuid)
        try:
            statefile = await self.run_blocking(watchermod.open_state_file, path)
        except watchermod.StateLocked:
            self.log.debug("State file {path} is locked (ganeti-watcher runs); group "
                           "skipped this round", path=path)
            return {"skipped": "locked"}
        try:
            state = await self.run_blocking(watchermod.WatcherState.read_from, statefile)
            return await self._check_group(uuid, state, statefile, path)
        finally:
            await self.run_blocking(statefile.close)

    async def _check_group(self, uuid: str, state: watchermod.WatcherState,
                           statefile: IO[str], path: str) -> dict[str, Any]:
        out: dict[str, Any] = {"rebooted": [], "verify_disks": None}
        response = await self.query(constants.QR_NODE, ["name", "bootid", "offline"],
                                    ["==", "group.uuid", uuid])
        boot_ids = {row[0][1]: row[1][1] for row in response["data"]
                    if row[1][0] == constants.RS_NORMAL}
        for node in state.rebooted_nodes(boot_ids):
            out["rebooted"].append(node)
            self.on_node_rebooted(uuid, node)
        instances = self.group_instances(uuid)
        now = self.clock.seconds()
        out["restarted"] = await self._restart_instances(uuid, state, now) if instances else []
        if instances and not all(i.get("disk_template") == "ext" for i in instances) \
                and watchermod.verify_disks_due(state, now, self.verify_interval):
            try:
                job_id = await self.jobs.submit([watchermod.verify_disks_opcode(uuid, now)])
            except GenericError as err:  # e.g. an opcode this master does not know yet
                self.log.warn("Cannot submit the verify-disks of group {uuid}: {error}",
                              uuid=uuid, error=err)
            else:
                state.record_verify_disks(now, job_id, SUBMITTER)
                out["verify_disks"] = job_id
        await self.run_blocking(state.save, statefile, path)
        if out["verify_disks"] is not None:
            # the lock is held until the job ends, as the cron command holds it
            job_id = out["verify_disks"]
            result = await self.jobs.wait(job_id, JOB_WAIT_TIMEOUT)
            await self.jobs.archive(job_id)
            offline = watchermod.offline_disk_instances(result)
            if offline:
                self.log.info("Instances with offline disks in group {uuid}: {names}",
                              uuid=uuid, names=", ".join(offline))
        return out

    async def _restart_instances(self, uuid: str, state: watchermod.WatcherState,
                                 now: float) -> list[str]:
        """Start the group's instances that should run and do not (Ganeti's watcher
        restarts them within 5 minutes; this service within one interval).  The jobs
        are submitted, not waited for: the next round sees whether they worked."""
        try:
            response = await self.query(constants.QR_INSTANCE, ["name", "status"],
                                        ["==", "pnode.group.uuid", uuid])
        except GenericError as err:
            self.log.warn("Cannot query the instances of group {uuid}: {error}", uuid=uuid,
                          error=err)
            return []
        statuses = {row[0][1]: row[1][1] for row in response["data"]
                    if row[0][0] == constants.RS_NORMAL and row[1][0] == constants.RS_NORMAL}
        names = watchermod.restart_plan(state, statuses, now, _PercentLog(self.log))
        for name in names:
            try:
                job_id = await self.jobs.submit([watchermod.restart_opcode(name, now)])
            except GenericError as err:
                self.log.error("Error while restarting instance {name}: {error}", name=name,
                               error=err)
            else:
                self.log.info("Restart of instance {name} submitted as job {job}", name=name,
                              job=job_id)
        return names

    def group_instances(self, uuid: str) -> list[dict[str, Any]]:
        """The instances whose primary node is in the group (from the config)."""
        cfg = self.config()
        out = []
        for inst in cfg.instances.values():
            node = cfg.nodes.get(inst.primary_node)
            if node is not None and node.group == uuid:
                out.append({"name": inst.name, "disk_template": inst.disk_template,
                            "disks_active": inst.disks_active})
        return out

    def on_node_rebooted(self, group_uuid: str, node: str) -> None:
        """A node's boot id changed.  Ganeti then activates the disks of the
        instances that have it as a secondary; nothing to do without instances."""
        self.log.info("Node {node} (group {group}) rebooted", node=node, group=group_uuid)


class _PercentLog:
    """The %-style logger interface of :func:`ganeti.core.watcher.restart_plan`, onto
    a Twisted logger."""

    def __init__(self, log: Logger) -> None:
        self._log = log

    def info(self, fmt: str, *args: Any) -> None:
        self._log.info("{message}", message=fmt % args)

    def warning(self, fmt: str, *args: Any) -> None:
        self._log.warn("{message}", message=fmt % args)

    def error(self, fmt: str, *args: Any) -> None:
        self._log.error("{message}", message=fmt % args)


def queue_job_access(queue: Any, bus: Any, clock: IReactorTime) -> JobAccess:
    """:class:`JobAccess` over masterd's :class:`~ganeti.master.jobs.jobqueue.JobQueue`."""

    async def wait(job_id: int, timeout: float) -> Any:
        deadline = clock.seconds() + timeout
        while True:
            job = queue.visible.get(job_id)
            if job is None or job.finalized:
                break
            remaining = deadline - clock.seconds()
            if remaining <= 0:
                return None
            await bus.wait_for(lambda e: e.kind in ("job", "archive")
                               and e.data.get("id") == job_id, remaining)
        if job is None:
            return None
        results = [op.result for op in job.ops]
        return results[0] if results else None

    return JobAccess(submit=queue.submit, wait=wait, archive=queue.archive,
                     auto_archive=queue.auto_archive)
