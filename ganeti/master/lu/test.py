"""OP_TEST_DELAY: sleep on the master, to test the queue, locks and cancellation."""

from __future__ import annotations

import copy
from typing import Any

from twisted.internet import defer, task

from ganeti.core.errors import ECODE_INVAL, OpExecError, OpPrereqError
from ganeti.core.rpcdefs import TMO_FAST, TMO_SLOW
from ganeti.master.locking.manager import LEVEL_NODE
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.nodes import find_node, target


class LUTestDelay(LogicalUnit):
    """Sleeps ``duration`` seconds, ``repeat`` + 1 times (without locks if ``no_locks``)."""

    OP_ID = "OP_TEST_DELAY"
    REQ_BGL = False

    @property
    def uses_locks(self) -> bool:
        return not self.op.get("no_locks", True)

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        wanted = list(self.op.get("on_nodes") or []) + list(self.op.get("on_node_uuids") or [])
        self.nodes = [copy.deepcopy(find_node(cfg, name)) for name in wanted]
        if self.nodes:
            self.needed_locks[LEVEL_NODE] = sorted({n.name for n in self.nodes})
            self.share_locks[LEVEL_NODE] = True

    def check_prereq(self) -> None:
        if self.op["duration"] > TMO_SLOW and self.nodes:
            raise OpPrereqError(f"A delay on nodes can last at most {TMO_SLOW} seconds",
                                ECODE_INVAL)

    async def exec(self) -> Any:
        duration = float(self.op["duration"])
        repeat = int(self.op.get("repeat") or 0)
        for i in range(repeat + 1):
            if repeat:
                self.ctx.feedback("message", f"Test delay iteration {i + 1}/{repeat + 1}")
            if self.op.get("on_master", True) and duration > 0:
                await self._sleep(duration)
            if self.nodes:
                await self._on_nodes(duration)
        return None

    async def _on_nodes(self, duration: float) -> None:
        results = await self.ctx.rpc().call([target(n) for n in self.nodes], "test_delay",
                                            [duration], timeout=duration + TMO_FAST)
        failed = [f"{name}: {r.fail_msg}" for name, r in sorted(results.items())
                  if not r.success]
        if failed:
            raise OpExecError("Failure executing TEST_DELAY on nodes: " + "; ".join(failed))

    def _sleep(self, duration: float) -> defer.Deferred[None]:
        # Cancelling the sleep (CancelJob with kill, or interruptible) stops it at once.
        return task.deferLater(self.ctx.clock, duration, lambda: None)
