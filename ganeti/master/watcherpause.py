"""The LUXI method ``SetWatcherPause``: pause ganeti-watcher until a time, or end it.

As Ganeti's luxid, the pause file ``DATA_DIR/watcher.pause`` is written (or
removed) on the master and on every master candidate (``set_watcher_pause``
node RPC), so that it survives a master failover, and the answer is the new
value: the time given, or null.  The master's own file is written by masterd
itself (it owns DATA_DIR), so the pause holds even if the master's node daemon
is down; a candidate that cannot be reached is logged, as luxid ignores it.

Ganeti's luxid answers null, and ends the pause, for an argument that is not a
number; here such an argument is refused with ``OpPrereqError`` (wrong_input)
and nothing changes (docs/compat.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.logger import Logger

from ganeti.core import watcher as watchermod
from ganeti.core.objects import ConfigData
from ganeti.core.paths import Paths
from ganeti.master.config import nodes as nodesmod
from ganeti.master.config.replication import BlockingRunner
from ganeti.rpc.noderpc import NodeRpc


class WatcherPauseMethod:
    """Implements ``SetWatcherPause``."""

    log = Logger()

    def __init__(self, config: Callable[[], ConfigData], paths: Paths,
                 rpc: Callable[[], NodeRpc], run_blocking: BlockingRunner,
                 durable: bool = True) -> None:
        self._config = config
        self._paths = paths
        self._rpc = rpc
        self._run_blocking = run_blocking
        self._durable = durable

    def implementations(self) -> dict[str, Callable[..., Any]]:
        """LUXI method name -> implementation."""
        return {"SetWatcherPause": self.set_watcher_pause}

    async def set_watcher_pause(self, until: Any) -> float | None:
        """Write (or remove) the pause file on the master and the candidates."""
        value = watchermod.parse_pause_until(until)
        if value is None:
            self.log.info("Received request to no longer pause the watcher")
        else:
            self.log.info("Received request to pause the watcher until {until}", until=value)
        await self._run_blocking(watchermod.write_pause_file, self._paths.watcher_pause_file,
                                 value, self._durable)
        targets = [nodesmod.target(n) for n in nodesmod.candidates(self._config())
                   if not n.offline]
        if targets:
            try:
                results = await self._rpc().call(targets, "set_watcher_pause", [value])
            except Exception as err:  # no certificate, say: the master's file is written
                self.log.warn("Cannot send the watcher pause to the candidates: {error}",
                              error=err)
                return value
            for name, result in sorted(results.items()):
                if not result.success:
                    self.log.warn("Setting the watcher pause on {node} failed: {error}",
                                  node=name, error=result.fail_msg)
        return value
