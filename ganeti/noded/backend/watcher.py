"""set_watcher_pause: write or remove the node's watcher pause file.

Ganeti's masterd sends this call to the master and the master candidates
when ``gnt-cluster watcher pause|continue`` runs, so that the pause holds on
the nodes that may become master (and their own watcher runs stay quiet).
"""

from __future__ import annotations

import math
from typing import Any

from twisted.internet import defer

from ganeti.core import watcher as watchermod
from ganeti.noded.backend.context import NodeContext, RPCFail


def set_watcher_pause(ctx: NodeContext, until: Any) -> defer.Deferred[None]:
    """Pause the watcher until ``until`` (seconds since the epoch), or end the pause."""
    if until is not None and not math.isfinite(until):
        raise RPCFail("Duration must be numeric")
    return ctx.run(watchermod.write_pause_file, ctx.paths.watcher_pause_file, until)
