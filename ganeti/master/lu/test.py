"""OP_TEST_DELAY: sleep on the master and/or nodes, to test the queue, locks and cancellation.

As Ganeti 3.0's LUTestDelay:

- a duration that is not greater than zero fails the opcode (OpPrereqError
  "Duration must be greater than zero", without an error code);
- the nodes to sleep on are ``on_nodes`` plus the master if ``on_master``;
  without any (``--no-master`` and no ``-n``) the master sleeps anyway;
- ``repeat`` 0 sleeps once; ``repeat`` N > 0 sleeps N times, logging
  "Test delay iteration i/N-1" (i from 0) before each;
- the sleeps of one iteration run at the same time on all nodes.

With ``interruptible`` the master waits on a test socket instead
(:mod:`ganeti.master.lu.testsocket`, the path logged as ``delay-test``): a
client that connects and then sends a byte or closes stops the delay, and
the remaining iterations.

OP_TEST_JQUEUE is Ganeti's LUTestJqueue, which ``gnt-debug test-jobqueue``
drives: it notifies the client through a test socket (log type
``jqueue-test``) while waiting for its lock and when executing, logs the
given messages (prefixed ``TESTMSG=``) and fails if asked to.

OP_TEST_OS_PARAMS is Ganeti's LUTestOsParams (``gnt-debug test-osparams``): it
shows the secret OS parameters it was given in the job's log (the job's stored
opcode holds their names only) and fails without any.

Differences (docs/compat.md): the master's own sleep happens in masterd, not
through its node daemon; ``no_locks`` is honoured (Ganeti 3.0 overwrites the
lock list it computed from it, so it always locks the nodes); and a
CancelJob also stops an interruptible sleep.
"""

from __future__ import annotations

import copy
from typing import Any

from twisted.internet import defer, task

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.opcodes.views import OpTestDelay, OpTestJqueue, OpTestOsParams
from ganeti.core.rpcdefs import TMO_SLOW
from ganeti.master.config.nodes import find_node, target
from ganeti.master.locking.manager import LEVEL_NODE
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.testsocket import SocketTimeout, TestSocket

#: Ganeti's test notifications of OP_TEST_JQUEUE (constants.JQT_*).
JQT_EXPANDNAMES = "expandnames"
JQT_EXEC = "exec"
JQT_STARTMSG = "startmsg"
JQT_LOGMSG = "logmsg"
JQT_MSGPREFIX = "TESTMSG="


def log_info(lu: LogicalUnit, text: str) -> None:
    """Ganeti's LogInfo: a message `` - INFO: text``."""
    lu.ctx.feedback(c.ELOG_MESSAGE, f" - INFO: {text}")


class LUTestDelay(LogicalUnit):
    """Sleeps ``duration`` seconds, ``max(repeat, 1)`` times (without locks if ``no_locks``)."""

    OP_ID = "OP_TEST_DELAY"
    REQ_BGL = False
    op: OpTestDelay

    @property
    def uses_locks(self) -> bool:
        return not self.op.no_locks

    @property
    def interruptible(self) -> bool:
        return bool(self.op.interruptible)

    def check_arguments(self) -> None:
        if not float(self.op.duration) > 0:
            raise OpPrereqError("Duration must be greater than zero")

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        self._record_nodes(cfg)
        wanted: dict[str, Node] = {}
        for name in list(self.op.on_nodes or []) + list(self.op.on_node_uuids or []):
            node = find_node(cfg, name)
            wanted.setdefault(node.uuid, copy.deepcopy(node))
        master = cfg.nodes.get(cfg.cluster.master_node)
        #: Whether masterd sleeps itself: for the master, or when no node is named at all.
        self.local = bool(self.op.on_master) or not wanted
        if self.op.on_master and master is not None:
            wanted.pop(master.uuid, None)
            lock_nodes = [master.uuid]
        else:
            lock_nodes = []
        #: The other nodes, reached through their node daemons.
        self.nodes = sorted(wanted.values(), key=lambda n: n.name)
        lock_nodes.extend(n.uuid for n in self.nodes)
        if lock_nodes:
            self.needed_locks[LEVEL_NODE] = sorted(set(lock_nodes))
            self.share_locks[LEVEL_NODE] = False  # as Ganeti: exclusive

    def _record_nodes(self, cfg: ConfigData) -> None:
        """Ganeti's LUTestDelay stores in the opcode the UUIDs of the nodes it sleeps
        on (the master's last, if ``on_master``) and the full names of ``on_nodes``;
        ``on_node_uuids`` is ``[]`` first, so it stays that when a name is unknown."""
        self.record_op(on_node_uuids=[])
        found = [find_node(cfg, name) for name in self.op.on_nodes or []]
        uuids = [node.uuid for node in found]
        if found:
            self.record_op(on_node_uuids=uuids, on_nodes=[node.name for node in found])
        master = cfg.cluster.master_node
        if self.op.on_master and master not in uuids:
            self.record_op(on_node_uuids=uuids + [master])

    def check_prereq(self) -> None:
        if self.op.duration > TMO_SLOW and self.nodes:
            raise OpPrereqError(f"A delay on nodes can last at most {TMO_SLOW} seconds",
                                ECODE_INVAL)

    async def exec(self) -> Any:
        duration = float(self.op.duration)
        repeat = int(self.op.repeat or 0)
        if repeat == 0:
            await self._delay(duration)
            return None
        for i in range(repeat):
            log_info(self, f"Test delay iteration {i}/{repeat - 1}")
            if await self._delay(duration):
                break  # interrupted
        return None

    async def _delay(self, duration: float) -> bool:
        """One iteration; whether it was interrupted (``interruptible`` only)."""
        if self.op.interruptible:
            return await self._interruptible(duration)
        await self._uninterruptible(duration)
        return False

    async def _interruptible(self, duration: float) -> bool:
        """Wait on a test socket for at most ``duration`` seconds (no node sleeps)."""
        clock = self.ctx.clock
        try:
            sock = TestSocket(clock, self.ctx.run_blocking)
        except SocketTimeout as err:
            raise OpExecError(str(err)) from None
        try:
            path = await sock.open()
            self.ctx.feedback(c.ELOG_DELAY_TEST, [path])
            start = clock.seconds()
            if not await sock.wait_connect(duration):
                return False
            time_to_go = duration - (clock.seconds() - start)
            self.ctx.feedback(c.ELOG_MESSAGE,
                              f"Received connection, time to go is {int(time_to_go)}")
            if not await sock.wait_confirm(max(time_to_go, 0.0)):
                return False
            self.ctx.feedback(c.ELOG_MESSAGE, "Interrupted, time spent waiting: "
                                              f"{int(clock.seconds() - start)}")
            return True
        finally:
            await sock.close()

    async def _uninterruptible(self, duration: float) -> None:
        """One iteration: the master's sleep and the nodes' at the same time."""
        waits: list[defer.Deferred[Any]] = []
        if self.local:
            waits.append(self._sleep(duration))
        if self.nodes:
            waits.append(defer.Deferred.fromCoroutine(self._on_nodes(duration)))
        if len(waits) == 1:
            await waits[0]
            return
        try:
            await defer.gatherResults(waits, consumeErrors=True)
        except defer.FirstError as err:
            for d in waits:
                d.cancel()
            err.subFailure.raiseException()
        except defer.CancelledError:
            for d in waits:
                d.cancel()
            raise

    async def _on_nodes(self, duration: float) -> None:
        # the table's timeout follows the duration (ganeti/core/rpcdefs/test.py)
        results = await self.ctx.rpc().call([target(n) for n in self.nodes], "test_delay",
                                            [duration])
        for name, result in sorted(results.items()):
            result.raise_if_failed(f"Failure during rpc call to node {name}")

    def _sleep(self, duration: float) -> defer.Deferred[None]:
        # Cancelling the sleep (CancelJob with kill, or interruptible) stops it at once.
        return task.deferLater(self.ctx.clock, duration, lambda: None)


class LUTestJqueue(LogicalUnit):
    """Ganeti's job queue test opcode: notifications, test messages, failure."""

    OP_ID = "OP_TEST_JQUEUE"
    REQ_BGL = False
    op: OpTestJqueue

    def expand_names(self) -> None:
        super().expand_names()
        # As Ganeti: the master's node lock, just to wait for a lock.
        cfg = self.ctx.config.config
        master = cfg.nodes.get(cfg.cluster.master_node)
        if master is not None:
            self.needed_locks[LEVEL_NODE] = [master.uuid]
            self.share_locks[LEVEL_NODE] = False

    async def before_locks(self) -> None:
        if self.op.notify_waitlock:
            await self._notify(True, JQT_EXPANDNAMES, None)
        log_info(self, "Expanding names")

    async def exec(self) -> Any:
        if self.op.notify_exec:
            await self._notify(False, JQT_EXEC, None)
        log_info(self, "Executing")
        messages = list(self.op.log_messages or [])
        if messages:
            await self._notify(False, JQT_STARTMSG, len(messages))
            for index, message in enumerate(messages, start=1):
                log_info(self, f"Sending log message {index}")
                self.ctx.feedback(c.ELOG_MESSAGE, JQT_MSGPREFIX + message)
                await self._notify(False, JQT_LOGMSG, index)
        if self.op.fail:
            raise OpExecError("Opcode failure was requested")
        return True

    async def _notify(self, prereq: bool, test: str, arg: Any) -> None:
        """Tell the client through a test socket and wait until it has looked."""
        error = OpPrereqError if prereq else OpExecError
        try:
            sock = TestSocket(self.ctx.clock, self.ctx.run_blocking)
        except SocketTimeout as err:
            raise error(str(err)) from None
        try:
            path = await sock.open()
            self.ctx.feedback(c.ELOG_JQUEUE_TEST, [path, test, arg])
            if not await sock.wait_connect():
                raise error("Client didn't connect in time (timed out)")
            if not await sock.wait_confirm():
                raise error("Client failed to confirm notification (timed out)")
        finally:
            await sock.close()


class LUTestOsParams(LogicalUnit):
    """Ganeti's test of secret OS parameters: their values back in the job's log."""

    OP_ID = "OP_TEST_OS_PARAMS"
    REQ_BGL = False
    op: OpTestOsParams

    async def exec(self) -> Any:
        secret = self.op.osparams_secret
        if not secret:
            raise OpExecError("Opcode needs secret parameters")
        # as Ganeti's (a Python dict's text): what the client gave, nothing stored
        self.ctx.feedback(c.ELOG_MESSAGE, f"Secret OS parameters: {dict(secret)!r}")
        return None
