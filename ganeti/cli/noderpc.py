"""Node RPC from a tool on a node, with masterd down (Ganeti's ``BootstrapRunner``).

Most commands talk LUXI to masterd, which talks to the node daemons.  A few
must reach the node daemons themselves because masterd is not running: Ganeti's
``gnt-cluster master-failover`` asks every node which node it thinks is the
master before starting a master elsewhere.  :class:`NodeRunner` is what such a
command uses: built from this node's own files (:meth:`NodeRunner.from_node`),
it calls nodes by name and answers one :class:`RpcResult` per node, as the
master's client does.

- the certificate: ``DATA_DIR/server.pem`` (the cluster certificate and key,
  which every node holds and every node daemon requires of its callers);
- the addresses: ``ssconf_node_primary_ips`` (every node has the ssconf
  files); a name not in it is resolved by DNS, as Ganeti's resolver does;
- the config: ``config.data`` where this node has it (master candidates), for
  the calls whose arguments the master fills from the config; elsewhere such
  calls see no config.

As Ganeti's, the runner contacts every node it is given, offline or not; which
nodes to ask is the command's choice (:meth:`NodeRunner.node_names`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ganeti.core import config as configmod
from ganeti.core import constants, ssconf
from ganeti.core.errors import ConfigurationError
from ganeti.core.objects import ConfigData
from ganeti.core.paths import Paths
from ganeti.rpc.blocking import BlockingRpcClient
from ganeti.rpc.noderpc import NodeTarget
from ganeti.rpc.result import RpcResult

__all__ = ["NodeRunner", "Resolver", "resolve_by_dns"]

#: A node name to its address (or OSError).
Resolver = Callable[[str], str]


def resolve_by_dns(name: str) -> str:
    """The first address of ``name`` (blocking: tools only)."""
    infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    return str(infos[0][4][0])


def _primary_ips(paths: Paths) -> dict[str, str]:
    """``ssconf_node_primary_ips`` as a map (empty when the file is missing)."""
    try:
        text = ssconf.read(paths, "node_primary_ips")
    except ConfigurationError:
        return {}
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2:
            out[fields[0]] = fields[1]
    return out


class NodeRunner:
    """Calls node daemons by name from a tool; one result per node.

    ``client`` makes the calls; ``addresses`` maps node names to primary
    IPs; ``resolve`` finds the address of a name not in it.  Use
    :meth:`from_node` to build one from this node's files.
    """

    def __init__(self, client: BlockingRpcClient, addresses: Mapping[str, str],
                 resolve: Resolver = resolve_by_dns, paths: Paths | None = None) -> None:
        self.client = client
        self.addresses = dict(addresses)
        self.resolve = resolve
        self.paths = paths

    @classmethod
    def from_node(cls, paths: Paths, port: int = constants.DEFAULT_NODED_PORT,
                  resolve: Resolver = resolve_by_dns, **client_options: Any) -> NodeRunner:
        """A runner from this node's ``server.pem``, ssconf files and config (if any).

        ConfigurationError if this node has no cluster certificate (it is not
        in a cluster); ``client_options`` go to :class:`BlockingRpcClient`.
        """
        try:
            client = BlockingRpcClient(paths.server_pem, port, config=_ConfigFile(paths),
                                       **client_options)
        except (OSError, ValueError) as err:
            raise ConfigurationError(f"Cannot load the cluster certificate "
                                     f"{paths.server_pem}: {err}") from None
        return cls(client, _primary_ips(paths), resolve, paths)

    def node_names(self, online_only: bool = False) -> list[str]:
        """The nodes ssconf lists (``node_list``, or ``online_nodes``), as Ganeti's
        ``GetNodeList`` / ``GetOnlineNodeList``."""
        if self.paths is None:
            return sorted(self.addresses)
        text = ssconf.read(self.paths, "online_nodes" if online_only else "node_list")
        return [line for line in text.splitlines() if line]

    def _targets(self, names: Iterable[str]) -> tuple[list[NodeTarget], dict[str, str]]:
        """The targets to call, and why the others cannot be (name -> message)."""
        targets: list[NodeTarget] = []
        unresolved: dict[str, str] = {}
        for name in names:
            ip = self.addresses.get(name)
            if ip is None:
                try:
                    ip = self.resolve(name)
                except OSError as err:
                    unresolved[name] = f"cannot resolve node {name}: {err}"
                    continue
            targets.append(NodeTarget(name, ip))
        return targets, unresolved

    def call(self, names: Iterable[str], call_name: str, args: Sequence[Any] = (),
             timeout: float | None = None) -> dict[str, RpcResult]:
        """Run ``call_name`` on the nodes named, at once; one result per name.

        A name that cannot be resolved gets a failed result; bad arguments
        raise RpcArgumentError before any node is contacted.
        """
        names = list(names)
        targets, unresolved = self._targets(names)
        results = self.client.call(targets, call_name, args, timeout)
        results.update({name: RpcResult(name, False, fail_msg=msg, call=call_name)
                        for name, msg in unresolved.items()})
        return {name: results[name] for name in names}

    def call_one(self, name: str, call_name: str, args: Sequence[Any] = (),
                 timeout: float | None = None) -> RpcResult:
        """Run ``call_name`` on the node ``name``; its result."""
        return self.call([name], call_name, args, timeout)[name]


class _ConfigFile:
    """The encoders' config: this node's ``config.data``, read once if it exists."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._loaded: tuple[ConfigData | None] | None = None

    def __call__(self) -> ConfigData | None:
        if self._loaded is None:
            try:
                self._loaded = (configmod.load_file(self.paths.config_file),)
            except (OSError, ConfigurationError):
                self._loaded = (None,)
        return self._loaded[0]
