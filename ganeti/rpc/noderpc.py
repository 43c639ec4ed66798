"""What the master's code needs of node RPC, and calls on one node in one step.

:class:`NodeRpc` is the interface replication, the logical units, the
queries and the services program against: :meth:`NodeRpc.call` runs a call on
many nodes and answers one :class:`RpcResult` per node name;
:meth:`NodeRpc.call_one` runs it on one node and answers that node's result
(Ganeti's single-node ``call_*`` methods).  :class:`OneNodeCalls` gives any
client (the real :class:`~ganeti.rpc.client.RpcClient`, the tests' in-process
node network) ``call_one`` on top of its ``call``, so there is one way to do it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from twisted.internet import defer

from ganeti.core.objects import Node
from ganeti.rpc.result import RpcResult

__all__ = ["NodeRpc", "NodeTarget", "OneNode", "OneNodeCalls", "as_target"]


@dataclass(frozen=True)
class NodeTarget:
    """A node to call: its name, its primary IP and whether it is offline."""

    name: str
    ip: str
    offline: bool = False

#: What :meth:`NodeRpc.call_one` accepts: a node of the config (reached at its
#: primary IP, not contacted when offline) or an explicit target (a node not in
#: the config yet, or one to contact whatever its offline flag says).
OneNode = Node | NodeTarget


def as_target(node: OneNode) -> NodeTarget:
    """How the client reaches ``node``."""
    if isinstance(node, NodeTarget):
        return node
    return NodeTarget(node.name, node.primary_ip, node.offline)


class NodeRpc(Protocol):
    """What replication, the logical units and the services need of the RPC client."""

    def call(self, nodes: Iterable[NodeTarget], call_name: str, args: Any = (),
             timeout: float | None = None) -> defer.Deferred[dict[str, RpcResult]]:
        """Run a call on nodes concurrently; one result per node name."""
        ...  # pragma: no cover

    def call_one(self, node: OneNode, call_name: str, args: Any = (),
                 timeout: float | None = None) -> defer.Deferred[RpcResult]:
        """Run a call on one node; that node's result."""
        ...  # pragma: no cover


class OneNodeCalls:
    """``call_one`` for a client that has ``call`` (mix it in first)."""

    def call(self, nodes: Iterable[NodeTarget], call_name: str, args: Any = (),
             timeout: float | None = None) -> defer.Deferred[dict[str, RpcResult]]:
        """Run a call on nodes concurrently (the client's own)."""
        raise NotImplementedError

    def call_one(self, node: OneNode, call_name: str, args: Any = (),
                 timeout: float | None = None) -> defer.Deferred[RpcResult]:
        """Run ``call_name`` on ``node`` alone; its :class:`RpcResult`.

        Everything else is as :meth:`call`: arguments are checked before
        anything is sent (RpcArgumentError), an offline node is answered at
        once, a node failure is a failed result, and cancelling the Deferred
        cancels the request.
        """
        target = as_target(node)
        d = self.call([target], call_name, args, timeout)
        return d.addCallback(lambda results: results[target.name])
