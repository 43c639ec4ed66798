"""masterd brings the master IP up when it starts, as Ganeti's luxid does.

Once the reactor runs, the master's node daemon is asked to activate the
master IP (``node_activate_master_ip``, the cluster's MasterNetworkParameters
and ``use_external_mip_script``).  A failure -- no node daemon, no right to
add addresses, the address taken elsewhere -- is logged and changes nothing
else: the daemon serves on.  Nothing is done when the daemon stops (Ganeti
leaves the address up; master failover and cluster destroy take it down).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.application import service
from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall
from twisted.logger import Logger

from ganeti.core.errors import GenericError
from ganeti.core.objects import ConfigData
from ganeti.master.lu.masterip import master_params
from ganeti.rpc.noderpc import NodeRpc

log = Logger()


class MasterIpActivation(service.Service):
    """Activates the master IP once, after the daemon has started."""

    def __init__(self, reactor: Any, config: Callable[[], ConfigData],
                 rpc: Callable[[], NodeRpc]) -> None:
        self.reactor = reactor
        self.config = config
        self.rpc = rpc
        self._pending: IDelayedCall | None = None
        self._call: defer.Deferred[Any] | None = None
        #: fires with whether the address is up (tests and callers may wait on it)
        self.done: defer.Deferred[bool] = defer.Deferred()

    def startService(self) -> None:
        super().startService()
        self._pending = self.reactor.callLater(0, self._start)

    def _start(self) -> None:
        self._pending = None
        self._call = defer.Deferred.fromCoroutine(self.activate())
        self._call.addBoth(self._finished)

    def _finished(self, result: Any) -> None:
        self._call = None
        ok = result is True
        if not isinstance(result, bool):  # cancelled, or an unexpected error: logged
            if not isinstance(getattr(result, "value", None), defer.CancelledError):
                log.warn("Activating the master IP failed: {error}",
                         error=getattr(result, "value", result))
        if not self.done.called:
            self.done.callback(ok)

    async def activate(self) -> bool:
        """Ask the master's node daemon to bring the address up; whether it did."""
        cfg = self.config()
        master = cfg.nodes.get(cfg.cluster.master_node)
        if master is None:
            log.warn("Not activating the master IP: the master node is not in the config")
            return False
        params = master_params(cfg)
        log.info("Activating the master IP {ip}/{netmask} on {netdev}", ip=params["ip"],
                 netmask=params["netmask"], netdev=params["netdev"] or "(no device)")
        try:
            rpc = self.rpc()
        except GenericError as err:
            log.warn("Could not activate the master IP: {error}", error=err)
            return False
        result = await rpc.call_one(master, "node_activate_master_ip",
                                    [params, bool(cfg.cluster.use_external_mip_script)])
        if not result.success:
            log.warn("Could not activate the master IP: {error}", error=result.fail_msg)
            return False
        log.info("Master IP activated")
        return True

    def stopService(self) -> Any:
        super().stopService()
        if self._pending is not None and self._pending.active():
            self._pending.cancel()
        self._pending = None
        if self._call is not None:
            self._call.cancel()
        return None
