"""Network namespaces for a namespaced virtual cluster: the address plan, the
``ip`` commands that build and remove the network, and running commands inside.

Layout (one set per cluster, named ``gvc<id>-<part>`` so that clusters coexist;
``ip netns`` named namespaces, so that ``ip netns list`` shows leftovers and
``ip -n``/``nsenter`` reach them without a process to hold them):

* ``gvc<id>-switch``: a bridge ``sw0`` and one veth end ``n<k>`` per node
  (``cl`` for the client): the wire between the "hosts";
* ``gvc<id>-node<k>``: ``lo``; a veth ``eth0`` into the switch, enslaved to the
  node's bridge ``br0`` which carries the node's address (and later the master
  IP and the instances' taps), as on a real host with a bridged uplink;
* ``gvc<id>-client``: ``eth0`` with the client address: a machine on the same
  network that is no node (for the RAPI client, curl, ping).

Addresses: one private /24 per cluster, ``10.<x>.0.0/24``; the master IP is
``.2``, node k ``.<10+k>``, the client ``.250``, instances may use ``.100`` to
``.199``.  The namespaces are isolated from the machine, so two clusters with
the same ``x`` do not conflict; ``x`` still differs per cluster by default (from
the cluster id) to keep logs unambiguous.

Names resolve through ``DIR/hosts``, bind-mounted over ``/etc/hosts`` in a private
mount namespace of every process started inside (:func:`wrapper`): the
machine's own ``/etc/hosts`` is never touched.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import subprocess
import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from ganeti.core import errors

NETNS_DIR = "/run/netns"
#: Host part of the master IP, the client and the first node (node k: NODE_BASE + k).
MASTER_HOST, CLIENT_HOST, NODE_BASE = 2, 250, 10
#: Instances of the demo and the tests take addresses from here.
INSTANCE_HOSTS = range(100, 200)
NODE_BRIDGE = "br0"
SWITCH_BRIDGE = "sw0"
#: Node addresses end where the instances' begin.
MAX_NODES = INSTANCE_HOSTS.start - NODE_BASE - 1
CLONE_NEWNET = 0x40000000

T = TypeVar("T")


@dataclass(frozen=True)
class NetPlan:
    """Where everything of one namespaced cluster is: names and addresses."""

    cluster_id: str
    subnet: str
    nodes: int

    @property
    def network(self) -> ipaddress.IPv4Network:
        """The cluster's /24."""
        return ipaddress.IPv4Network(self.subnet)

    @property
    def prefixlen(self) -> int:
        """The netmask length of every address (24)."""
        return self.network.prefixlen

    def host(self, number: int) -> str:
        """The address with host part ``number``."""
        return str(self.network.network_address + number)

    @property
    def master_ip(self) -> str:
        """The cluster's master IP (activated on the master's ``br0`` by masterd)."""
        return self.host(MASTER_HOST)

    @property
    def client_ip(self) -> str:
        """The client namespace's address."""
        return self.host(CLIENT_HOST)

    def node_ip(self, k: int) -> str:
        """Node k's primary IP (k from 1)."""
        return self.host(NODE_BASE + k)

    def instance_ip(self, number: int) -> str:
        """The ``number``-th (from 0) address for instances."""
        return self.host(INSTANCE_HOSTS[number])

    @property
    def prefix(self) -> str:
        """What every namespace name of this cluster starts with."""
        return f"gvc{self.cluster_id}-"

    @property
    def switch_ns(self) -> str:
        """The switch namespace."""
        return f"{self.prefix}switch"

    @property
    def client_ns(self) -> str:
        """The client namespace."""
        return f"{self.prefix}client"

    def node_ns(self, k: int) -> str:
        """Node k's namespace."""
        return f"{self.prefix}node{k}"

    def namespaces(self) -> list[str]:
        """Every namespace of the cluster, switch first."""
        return [self.switch_ns, *(self.node_ns(k) for k in range(1, self.nodes + 1)),
                self.client_ns]

    def to_dict(self) -> dict[str, Any]:
        """For vcluster.json."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> NetPlan:
        """From vcluster.json; ValueError if it is not a valid plan."""
        if not isinstance(data, dict):
            raise ValueError("netns is not an object")
        plan = cls(str(data["cluster_id"]), str(data["subnet"]), int(data["nodes"]))
        plan.validate()
        return plan

    def validate(self) -> None:
        """ValueError unless the id, the subnet and the node count are usable."""
        if not (self.cluster_id.isalnum() and self.cluster_id.isascii()
                and 1 <= len(self.cluster_id) <= 8):
            raise ValueError(f"bad cluster id {self.cluster_id!r}")
        net = self.network
        if net.prefixlen != 24 or not net.is_private or net.overlaps(
                ipaddress.IPv4Network("192.0.2.0/24")) or net.overlaps(
                ipaddress.IPv4Network("127.0.0.0/8")):
            raise ValueError(f"subnet {self.subnet} must be a private /24 (such as "
                             "10.77.0.0/24), not loopback or 192.0.2.0/24")
        if not 1 <= self.nodes <= MAX_NODES:
            raise ValueError(f"a namespaced cluster has 1 to {MAX_NODES} nodes")


def new_plan(directory: str, nodes: int, subnet: str | None = None,
             cluster_id: str | None = None) -> NetPlan:
    """The plan of a new cluster in ``directory``: a short id from the directory (and
    the process id), the subnet ``10.<x>.0.0/24`` with ``x`` from the id unless given."""
    if cluster_id is None:
        cluster_id = f"{zlib.crc32(f'{directory}:{os.getpid()}'.encode()) & 0xffffff:06x}"
    if subnet is None:
        subnet = f"10.{64 + int(cluster_id, 16) % 128}.0.0/24"
    try:
        plan = NetPlan(cluster_id, str(ipaddress.IPv4Network(subnet)), nodes)
        plan.validate()
    except ValueError as err:
        raise errors.OpPrereqError(f"Invalid namespace plan: {err}",
                                   errors.ECODE_INVAL) from None
    return plan


def hosts_text(plan: NetPlan, cluster_name: str, node_names: Sequence[str],
               domain: str) -> str:
    """The ``/etc/hosts`` every process inside the cluster's namespaces sees."""
    def line(ip: str, name: str) -> str:
        short = name.split(".")[0]
        return f"{ip}\t{name}\t{short}\n" if short != name else f"{ip}\t{name}\n"

    text = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    text += line(plan.master_ip, cluster_name)
    text += "".join(line(plan.node_ip(k), name) for k, name in enumerate(node_names, 1))
    return text + line(plan.client_ip, f"client.{domain}")


def create_commands(plan: NetPlan) -> list[list[str]]:
    """The ``ip`` commands that build the network of ``plan`` (namespaces first)."""
    sw = plan.switch_ns
    cmds = [["ip", "netns", "add", ns] for ns in plan.namespaces()]
    cmds += [["ip", "-n", ns, "link", "set", "lo", "up"] for ns in plan.namespaces()]
    cmds += [["ip", "-n", sw, "link", "add", SWITCH_BRIDGE, "type", "bridge"],
             ["ip", "-n", sw, "link", "set", SWITCH_BRIDGE, "up"]]
    for k in range(1, plan.nodes + 1):
        ns, port = plan.node_ns(k), f"n{k}"
        cmds += [["ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port,
                  "netns", sw],
                 ["ip", "-n", sw, "link", "set", port, "master", SWITCH_BRIDGE, "up"],
                 ["ip", "-n", ns, "link", "add", NODE_BRIDGE, "type", "bridge"],
                 ["ip", "-n", ns, "link", "set", "eth0", "master", NODE_BRIDGE, "up"],
                 ["ip", "-n", ns, "link", "set", NODE_BRIDGE, "up"],
                 ["ip", "-n", ns, "address", "add", f"{plan.node_ip(k)}/{plan.prefixlen}",
                  "dev", NODE_BRIDGE]]
    cl = plan.client_ns
    return cmds + [["ip", "-n", cl, "link", "add", "eth0", "type", "veth", "peer", "name", "cl",
                    "netns", sw],
                   ["ip", "-n", sw, "link", "set", "cl", "master", SWITCH_BRIDGE, "up"],
                   ["ip", "-n", cl, "link", "set", "eth0", "up"],
                   ["ip", "-n", cl, "address", "add", f"{plan.client_ip}/{plan.prefixlen}",
                    "dev", "eth0"]]


def _run(cmd: Sequence[str]) -> None:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise errors.CommandError(f"{' '.join(cmd)} failed: "
                                  f"{(proc.stderr or proc.stdout).strip()}")


def existing(plan: NetPlan) -> list[str]:
    """The namespaces of ``plan`` that exist now."""
    return [ns for ns in plan.namespaces() if os.path.exists(os.path.join(NETNS_DIR, ns))]


def create_network(plan: NetPlan) -> None:
    """Build the network; on failure remove what was built and raise."""
    if existing(plan):
        raise errors.OpPrereqError(f"Namespaces {', '.join(existing(plan))} exist already "
                                   "(another cluster with this id?)", errors.ECODE_EXISTS)
    try:
        for cmd in create_commands(plan):
            _run(cmd)
    except BaseException:
        delete_network(plan)
        raise


def pids_in(ns: str) -> list[int]:
    """The processes inside namespace ``ns`` (``ip netns pids``)."""
    proc = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                          check=False)
    return [int(p) for p in proc.stdout.split() if p.isdigit()]


def kill_all(plan: NetPlan, sig: int) -> list[int]:
    """Send ``sig`` to every process left in the cluster's namespaces; their pids."""
    pids = [pid for ns in existing(plan) for pid in pids_in(ns)]
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return pids


def delete_network(plan: NetPlan) -> list[str]:
    """Remove every namespace of the cluster (their links go with them); those removed.
    Processes still inside are the caller's to stop first."""
    removed = []
    for ns in reversed(existing(plan)):
        _run(["ip", "netns", "delete", ns])
        removed.append(ns)
    return removed


def wrapper(ns: str, hosts_file: str | None, env: dict[str, str] | None = None) -> list[str]:
    """The command prefix that runs a command inside namespace ``ns``: its network
    namespace, a private mount namespace with ``hosts_file`` over ``/etc/hosts``,
    with ``env`` added to the environment."""
    prefix = ["nsenter", f"--net={os.path.join(NETNS_DIR, ns)}", "--"]
    if hosts_file:
        prefix += ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                   'mount --bind "$1" /etc/hosts || exit 1; shift; exec "$@"', "sh",
                   hosts_file]
    if env:
        prefix += ["env", *(f"{k}={v}" for k, v in sorted(env.items()))]
    return prefix


_libc: Any = None


def call_in(ns: str, fn: Callable[[], T]) -> T:
    """``fn()`` in a thread that entered network namespace ``ns`` (setns affects only
    the calling thread); sockets it makes stay in that namespace."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    outcome: list[Any] = []

    def run() -> None:
        try:
            fd = os.open(os.path.join(NETNS_DIR, ns), os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({ns}): {os.strerror(err)}")
            finally:
                os.close(fd)
            outcome.append((True, fn()))
        except BaseException as exc:  # re-raised in the caller
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=f"netns-{ns}", daemon=True)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
