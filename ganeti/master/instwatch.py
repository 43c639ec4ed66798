"""masterd's instance event watch: a crashed guest is restarted within seconds.

Ganeti notices a dead instance only when its watcher runs (cron, five minutes);
masterd's watcher service (:mod:`ganeti.master.watchersvc`) every interval.
This service keeps one ``instance_events(since, hold)`` long poll open to every
online vm_capable node (the node answers as soon as an instance starts, stops,
crashes or powers itself off; docs/design/hypervisor-kvm.md) and acts on what
it hears:

- every event is logged with the node's event time and the delay until the
  master saw it (the figures of "the master sees a crash within 2 s");
- "crashed" and "shutdown" of an instance whose admin state is up, on its
  primary node: the instance's live status is read and, when it is
  ``ERROR_down``, the watcher's restart is submitted at once: the same
  ``OP_INSTANCE_STARTUP`` with the watcher's reason, counted in the group's
  state file under its lock with :func:`ganeti.core.watcher.restart_plan`, so the
  back-off and the give-up after five attempts are the watcher's (a give-up is
  logged and recorded in the watcher service's history);
- a guest that powered itself off ("shutdown") where Ganeti's user shutdown
  applies (cluster ``enabled_user_shutdown``, and for kvm the instance's
  ``user_shutdown``) is not restarted: it gets the cleanup Ganeti's watcher
  submits for ``USER_down`` (``OP_INSTANCE_SHUTDOWN`` with admin state source
  ``user``); without user shutdown it is ``ERROR_down`` and restarted;
- "started" and "stopped" (asked for through a node call) are only logged;
- a new ``boot_id`` (noded restarted) or a gap in the serials: the events are
  not trusted, one ordinary watcher check of the node's primary instances is run
  instead; the first answer of a node (master start, node added) only gives the
  serial to follow (what happened before is the periodic rounds' business).

Nodes come and go with the config (a config listener); a node that fails is
retried with a back-off on the injected clock, its state changes logged once; a
node daemon that does not know the call (HTTP 404, an older noded) is left to
the periodic watcher and asked again every :data:`UNSUPPORTED_RETRY` seconds.
The service runs only while the watcher service does (``--watcher-interval``
above 0) and not with ``--no-instance-events``; while the watcher is paused it
logs events but starts nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from twisted.application import service
from twisted.internet import defer, task
from twisted.logger import Logger
from twisted.python.failure import Failure

from ganeti.core import constants as c
from ganeti.core import watcher as watchermod
from ganeti.core.errors import GenericError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.params_fill import fill_instance_hv
from ganeti.master.config.nodes import target
from ganeti.master.query.instancequeries import allows_user_down
from ganeti.master.watchersvc import WatcherService, _PercentLog
from ganeti.rpc.client import NodeTarget
from ganeti.rpc.noderpc import NodeRpc
from ganeti.rpc.result import RpcResult

CALL = "instance_events"
#: Seconds a node holds the call when nothing happens (the node's maximum).
DEFAULT_HOLD = 30.0
#: Least seconds between two polls of a node when an answer brought nothing new
#: (a node that answers at once instead of holding is not polled in a busy loop).
MIN_SPACING = 1.0
#: Back-off of a failing node: 1, 2, 4, ... seconds, up to this.
MAX_BACKOFF = 60.0
#: Seconds between two tries of a node daemon that does not know the call.
UNSUPPORTED_RETRY = 300.0
#: A group's state file held by another watcher: tried again after this many
#: seconds, up to :data:`LOCKED_TRIES` times; then the periodic watcher's turn.
LOCKED_RETRY = 1.0
LOCKED_TRIES = 60
#: The largest answer accepted (the node retains 1000 events).
MAX_EVENTS = 5000
#: Events that may need a restart, and all the events a node may report.
DOWN_EVENTS = frozenset({"crashed", "shutdown"})
EVENTS = frozenset({"started", "stopped"}) | DOWN_EVENTS


@dataclass(frozen=True)
class NodeEvent:
    """One event of a node's answer (checked)."""

    serial: int
    instance: str
    hypervisor: str
    event: str
    reason: str
    time: float


@dataclass(frozen=True)
class Answer:
    """A node's checked answer: its boot id, latest serial, events and how many
    events were dropped as malformed."""

    boot_id: str
    serial: int
    events: list[NodeEvent]
    dropped: int = 0


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _event(raw: Any) -> NodeEvent | None:
    if not isinstance(raw, dict):
        return None
    serial, name, event = raw.get("serial"), raw.get("instance"), raw.get("event")
    hv, reason, when = raw.get("hypervisor", ""), raw.get("reason", ""), raw.get("time")
    if not (_is_int(serial) and serial > 0 and isinstance(name, str) and 0 < len(name) <= 255
            and event in EVENTS and isinstance(hv, str) and isinstance(reason, str)
            and isinstance(when, int | float) and not isinstance(when, bool)
            and math.isfinite(when)):
        return None
    return NodeEvent(serial, name, hv[:64], event, reason[:200], float(when))


def parse_answer(payload: Any) -> Answer:
    """Check a node's ``instance_events`` answer; ValueError if it is not one.

    Malformed events are dropped (and counted), so one bad entry does not hide
    the others; the events come back sorted by serial.
    """
    if not isinstance(payload, dict):
        raise ValueError("the answer is not a dict")
    boot_id, serial, raw = payload.get("boot_id"), payload.get("serial"), payload.get("events")
    if not isinstance(boot_id, str) or not 0 < len(boot_id) <= 128:
        raise ValueError("no valid boot_id")
    if not _is_int(serial) or serial < 0:
        raise ValueError("no valid serial")
    if not isinstance(raw, list) or len(raw) > MAX_EVENTS:
        raise ValueError(f"events must be a list of at most {MAX_EVENTS}")
    events = [e for e in map(_event, raw) if e is not None]
    events.sort(key=lambda e: e.serial)
    return Answer(boot_id, serial, events, len(raw) - len(events))


def is_unknown_call(result: RpcResult) -> bool:
    """Whether a node daemon answered that it does not know the call (HTTP 404)."""
    msg = result.fail_msg or ""
    return not result.success and not result.offline and (
        msg.startswith("HTTP 404") or "unknown RPC call" in msg)


def cleanup_opcode(name: str, now: float) -> dict[str, Any]:
    """What Ganeti's watcher submits for an instance its user shut down (USER_down)."""
    return {"OP_ID": "OP_INSTANCE_SHUTDOWN", "instance_name": name,
            "admin_state_source": c.USER_SOURCE,
            "reason": watchermod.reason(f"Cleaning up instance {name}", now)}


class NodePoll:
    """The long poll of one node: call, act on the answer, call again."""

    def __init__(self, watch: InstanceEventWatch, target: NodeTarget) -> None:
        self.watch = watch
        self.target = target
        #: "new" (never answered), "ok", "failing" or "unsupported"
        self.state = "new"
        self.boot_id: str | None = None
        self.since = 0
        self.failures = 0
        self.polls = 0
        self._loop: defer.Deferred[None] | None = None

    @property
    def name(self) -> str:
        return self.target.name

    def start(self) -> None:
        self._loop = defer.Deferred.fromCoroutine(self._run())
        self._loop.addErrback(lambda f: f.trap(defer.CancelledError))

    def stop(self) -> None:
        if self._loop is not None:
            loop, self._loop = self._loop, None
            loop.cancel()

    async def _run(self) -> None:
        clock = self.watch.clock
        while True:
            started = clock.seconds()
            self.polls += 1
            try:
                # the first call, and the first after failures, only learns the
                # node's boot id and serial (the node daemon may have restarted
                # meanwhile): not held
                hold = self.watch.hold if self.state == "ok" else 0.0
                result = await self.watch.rpc().call_one(self.target, CALL, [self.since, hold])
            except defer.CancelledError:
                raise
            except Exception as err:  # no client (certificate), a bug: retried
                result = RpcResult(self.name, False, fail_msg=str(err), call=CALL)
            delay = self._answered(result, started)
            if delay > 0:
                await task.deferLater(clock, delay, lambda: None)

    def _answered(self, result: RpcResult, started: float) -> float:
        """Act on one answer; the seconds to wait before the next call."""
        if not result.success:
            if is_unknown_call(result):
                self._set_state("unsupported", "")
                return UNSUPPORTED_RETRY
            return self._failed(result.fail_msg or "failed")
        try:
            answer = parse_answer(result.payload)
        except ValueError as err:
            return self._failed(f"unexpected answer: {err}")
        self.failures = 0
        if answer.dropped:
            self.watch.log.warn("Node {node} sent {count} malformed instance event(s); "
                                "ignored", node=self.name, count=answer.dropped)
        fresh = self._take(answer)
        self._set_state("ok", "")
        if fresh:
            return 0.0
        return max(0.0, started + MIN_SPACING - self.watch.clock.seconds())

    def _take(self, answer: Answer) -> bool:
        """Follow the node's serials; whether the answer brought anything new."""
        if self.state in ("new", "unsupported") or self.boot_id is None:
            # first contact: what happened before is the periodic watcher's business
            self.boot_id, self.since = answer.boot_id, answer.serial
            return True
        if answer.boot_id != self.boot_id:
            self.boot_id, self.since = answer.boot_id, answer.serial
            self.watch.node_pass(self.name, f"node daemon restarted (boot id "
                                            f"{answer.boot_id[:12]})")
            return True
        new = [e for e in answer.events if e.serial > self.since]
        if answer.serial < self.since or (new and new[0].serial > self.since + 1):
            why = (f"serial went back from {self.since} to {answer.serial}"
                   if answer.serial < self.since
                   else f"events {self.since + 1} to {new[0].serial - 1} were lost")
            self.since = answer.serial
            self.watch.node_pass(self.name, why)
            return True
        for event in new:
            self.since = event.serial
            self.watch.event_seen(self.name, event)
        self.since = max(self.since, answer.serial)
        return bool(new)

    def _failed(self, message: str) -> float:
        self.failures += 1
        self._set_state("failing", message)
        return min(MAX_BACKOFF, 2.0 ** (self.failures - 1))

    def _set_state(self, state: str, message: str) -> None:
        old, self.state = self.state, state
        if old == state:
            return
        log = self.watch.log
        if state == "failing":
            log.warn("Instance events of node {node} unavailable ({error}); retried with "
                     "back-off, the periodic watcher covers its instances meanwhile",
                     node=self.name, error=message)
        elif state == "unsupported":
            log.debug("Node {node} does not know {call}: the periodic watcher covers its "
                      "instances", node=self.name, call=CALL)
        elif state == "ok" and old == "failing":
            log.info("Instance events of node {node} flow again", node=self.name)
        elif state == "ok":
            log.debug("Watching instance events of node {node}", node=self.name)


class InstanceEventWatch(service.Service):
    """One :class:`NodePoll` per online vm_capable node; restarts on crash events."""

    log = Logger()

    def __init__(self, watcher: WatcherService, rpc: Callable[[], NodeRpc],
                 enabled: bool = True, hold: float = DEFAULT_HOLD,
                 ready: Callable[[], defer.Deferred[None]] | None = None) -> None:
        """``watcher`` lends its clock, config, query, job access, paths and blocking
        runner (the restart is its own); ``rpc`` gives the node RPC client;
        ``ready`` fires once jobs may be submitted (the job queue is restored):
        no node is polled before."""
        self.watcher = watcher
        self.clock = watcher.clock
        self.config: Callable[[], ConfigData] = watcher.config
        self.rpc = rpc
        self.enabled = enabled
        self.hold = hold
        self.ready = ready
        self._active = False
        self.polls: dict[str, NodePoll] = {}
        self._tasks: set[defer.Deferred[Any]] = set()
        self._group_locks: dict[str, defer.DeferredLock] = {}

    # --- the nodes --------------------------------------------------------------

    def startService(self) -> None:
        super().startService()
        if not self.enabled or self.watcher.interval <= 0:
            why = "--no-instance-events" if not self.enabled else "the watcher service is off"
            self.log.info("Instance event watch off ({why})", why=why)
            return
        if self.ready is None:
            self._activate()
        else:
            self.ready().addCallbacks(lambda _: self._activate(), lambda _: None)

    def _activate(self) -> None:
        if self.running:
            self._active = True
            self.sync_nodes()

    def stopService(self) -> Any:
        super().stopService()
        self._active = False
        for poll in self.polls.values():
            poll.stop()
        self.polls = {}
        for d in list(self._tasks):
            d.cancel()
        return None

    def config_changed(self, cfg: ConfigData) -> None:
        """A config listener: follow the nodes of ``cfg``."""
        if self._active:
            self.sync_nodes(cfg)

    def sync_nodes(self, cfg: ConfigData | None = None) -> None:
        """Start polls of new nodes, stop those of removed, offline or non-vm_capable
        ones; a node whose address changed is polled afresh."""
        cfg = cfg if cfg is not None else self.config()
        wanted = {n.name: target(n) for n in cfg.nodes.values()
                  if not n.offline and n.vm_capable}
        for name in sorted(set(self.polls) - set(wanted)):
            self.log.debug("Instance events of node {node} no longer watched", node=name)
            self.polls.pop(name).stop()
        for name, tgt in sorted(wanted.items()):
            poll = self.polls.get(name)
            if poll is not None and poll.target == tgt:
                continue
            if poll is not None:
                poll.stop()
            self.polls[name] = NodePoll(self, tgt)
            self.polls[name].start()

    # --- acting on events ----------------------------------------------------

    def _spawn(self, work: Any) -> None:
        d: defer.Deferred[Any] = defer.Deferred.fromCoroutine(work)
        self._tasks.add(d)

        def done(result: Any) -> None:
            self._tasks.discard(d)
            if isinstance(result, Failure) and not result.check(defer.CancelledError):
                self.log.failure("Instance event handling failed", result)
        d.addBoth(done)

    def event_seen(self, node: str, event: NodeEvent) -> None:
        """Log one event with its delay; act on it if it may need a restart."""
        seen = self.clock.seconds()
        self.log.info("Instance event: {instance} {event} on node {node} (node time "
                      "{time:.3f}, seen by the master at {seen:.3f}, {delay:.3f} s later)"
                      "{reason}", instance=event.instance, event=event.event, node=node,
                      time=event.time, seen=seen, delay=seen - event.time,
                      reason=f": {event.reason}" if event.reason else "")
        if event.event in DOWN_EVENTS:
            self._spawn(self._instance_down(node, event))

    def node_pass(self, node: str, why: str) -> None:
        """One ordinary watcher check of the instances whose primary is ``node``."""
        self.log.info("Checking the instances of node {node} ({why})", node=node, why=why)
        self._spawn(self._node_pass(node, why))

    async def _instance_down(self, node_name: str, event: NodeEvent) -> None:
        cfg = self.config()
        name = event.instance
        inst = cfg.instance_by_name(name)
        node = cfg.nodes.get(inst.primary_node) if inst is not None else None
        if inst is None or node is None:
            self.log.info("Instance {name} ({event} on {node}) is not in the config; "
                          "nothing done", name=name, event=event.event, node=node_name)
            return
        if node.name != node_name:
            self.log.info("Instance {name} {event} on node {node}, which is not its "
                          "primary ({primary}); nothing done", name=name,
                          event=event.event, node=node_name, primary=node.name)
            return
        if inst.admin_state != c.ADMINST_UP:
            self.log.info("Instance {name} {event}; its admin state is {state}: not "
                          "restarted", name=name, event=event.event, state=inst.admin_state)
            return
        if await self._paused():
            return
        if event.event == "shutdown" and allows_user_down(
                cfg, inst, fill_instance_hv(cfg.cluster, inst, skip_globals=True)):
            await self._submit(cleanup_opcode(name, self.clock.seconds()),
                               f"Instance {name} was shut down by its user; cleanup",
                               event)
            return
        try:
            response = await self.watcher.query(c.QR_INSTANCE, ["name", "status"],
                                                ["==", "name", name])
        except GenericError as err:
            self.log.warn("Cannot read the status of instance {name}: {error}; left to "
                          "the periodic watcher", name=name, error=err)
            return
        statuses = _statuses(response)
        status = statuses.get(name)
        if status not in watchermod.BAD_STATES:
            self.log.info("Instance {name} is {status} now: not restarted", name=name,
                          status=status)
            return
        await self._restart(node, {name: status}, f"{event.event} on {node_name}", event)

    async def _node_pass(self, node_name: str, why: str) -> None:
        node = self.config().node_by_name(node_name)
        if node is None or await self._paused():
            return
        try:
            response = await self.watcher.query(c.QR_INSTANCE, ["name", "status"],
                                                ["==", "pnode", node_name])
        except GenericError as err:
            self.log.warn("Cannot read the instances of node {node}: {error}; left to the "
                          "periodic watcher", node=node_name, error=err)
            return
        statuses = _statuses(response)
        if statuses:
            await self._restart(node, statuses, why, None)

    async def _paused(self) -> bool:
        now = self.clock.seconds()
        until = await self.watcher.run_blocking(watchermod.read_pause_file,
                                                self.watcher.paths.watcher_pause_file, now)
        if until is not None:
            self.log.info("Watcher paused until {until}: nothing restarted", until=until)
            return True
        return False

    async def _restart(self, node: Node, statuses: dict[str, str], why: str,
                       event: NodeEvent | None) -> None:
        """The watcher's restart of ``statuses``' instances in ``node``'s group, with
        the group's state file bookkeeping (its lock held)."""
        lock = self._group_locks.setdefault(node.group, defer.DeferredLock())
        await lock.acquire()
        try:
            await self._restart_locked(node, statuses, why, event)
        finally:
            lock.release()

    async def _restart_locked(self, node: Node, statuses: dict[str, str], why: str,
                              event: NodeEvent | None) -> None:
        run_blocking = self.watcher.run_blocking
        path = self.watcher.paths.watcher_group_state_file(node.group)
        for attempt in range(LOCKED_TRIES):
            try:
                statefile = await run_blocking(watchermod.open_state_file, path)
                break
            except watchermod.StateLocked:
                if attempt == 0:
                    self.log.debug("State file {path} is locked; trying again", path=path)
                await task.deferLater(self.clock, LOCKED_RETRY, lambda: None)
        else:
            self.log.info("State file {path} stayed locked; {why} left to the periodic "
                          "watcher", path=path, why=why)
            return
        entry: dict[str, Any] = {"when": self.clock.seconds(), "source": "instance events",
                                 "node": node.name, "why": why, "restarted": {},
                                 "gave_up": []}
        try:
            state = await run_blocking(watchermod.WatcherState.read_from, statefile)
            before = {name: state.restart_attempts(name) for name in statuses}
            names = watchermod.restart_plan(state, statuses, self.clock.seconds(),
                                            _PercentLog(self.log), prune=False)
            entry["gave_up"] = [n for n, s in sorted(statuses.items())
                                if s in watchermod.BAD_STATES and n not in names
                                and before[n] == watchermod.MAX_RESTARTS]
            # counted before the jobs go, as the periodic watcher does
            await run_blocking(state.save, statefile, path)
        finally:
            await run_blocking(statefile.close)
        for name in names:
            job = await self._submit(watchermod.restart_opcode(name, self.clock.seconds()),
                                     f"Restart of instance {name}", event)
            entry["restarted"][name] = job
        if names or entry["gave_up"]:
            self.watcher.record(entry)

    async def _submit(self, op: dict[str, Any], what: str,
                      event: NodeEvent | None) -> int | None:
        try:
            job_id: int = await self.watcher.jobs.submit([op])
        except GenericError as err:
            self.log.error("{what} could not be submitted: {error}", what=what, error=err)
            return None
        if event is not None:
            self.log.info("{what} submitted as job {job}, {delay:.3f} s after the node's "
                          "event", what=what, job=job_id,
                          delay=self.clock.seconds() - event.time)
        else:
            self.log.info("{what} submitted as job {job}", what=what, job=job_id)
        return job_id


def _statuses(response: dict[str, Any]) -> dict[str, str]:
    rows = response.get("data") if isinstance(response, dict) else None
    return {row[0][1]: row[1][1] for row in rows or []
            if row[0][0] == c.RS_NORMAL and row[1][0] == c.RS_NORMAL}
