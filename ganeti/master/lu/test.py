"""OP_TEST_DELAY: sleep on the master, to test the queue, locks and cancellation."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer, task

from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.master.lu.base import LogicalUnit


class LUTestDelay(LogicalUnit):
    """Sleeps ``duration`` seconds, ``repeat`` + 1 times (without locks if ``no_locks``)."""

    OP_ID = "OP_TEST_DELAY"
    REQ_BGL = False

    @property
    def uses_locks(self) -> bool:
        return not self.op.get("no_locks", True)

    def check_prereq(self) -> None:
        if self.op.get("on_nodes") or self.op.get("on_node_uuids"):
            raise OpPrereqError("OP_TEST_DELAY on nodes needs the node daemon, which this "
                                "version does not have yet", ECODE_INVAL)

    async def exec(self) -> Any:
        duration = float(self.op["duration"])
        repeat = int(self.op.get("repeat") or 0)
        for i in range(repeat + 1):
            if repeat:
                self.ctx.feedback("message", f"Test delay iteration {i + 1}/{repeat + 1}")
            if self.op.get("on_master", True) and duration > 0:
                await self._sleep(duration)
        return None

    def _sleep(self, duration: float) -> defer.Deferred[None]:
        # Cancelling the sleep (CancelJob with kill, or interruptible) stops it at once.
        return task.deferLater(self.ctx.clock, duration, lambda: None)
