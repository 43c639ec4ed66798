"""test_delay: wait on the node's clock, then succeed (Ganeti's gnt-debug delay -n)."""

from __future__ import annotations

from twisted.internet import defer, task

from ganeti.noded.backend.context import NodeContext


def test_delay(ctx: NodeContext, duration: float) -> defer.Deferred[None]:
    """Fires after ``duration`` seconds; cancelled if the master goes away."""
    return task.deferLater(ctx.clock, duration, lambda: None)
