"""ganeti-vcluster: a whole cluster on one machine, for trying things, tests and benchmarks.

Node k of a virtual cluster is ``node<k>.<domain>`` with root directory
``DIR/node<k>.<domain>`` and primary IP ``<ip-base><k>`` (every 127.x.y.z
address reaches the loopback device).  Each node's daemons run with
``GANETI_ROOTDIR``/``GANETI_HOSTNAME`` set to that node, so every path is
private to the node, exactly as on separate machines.

Every node runs ``ganeti-noded`` on ``<its ip>:1811``; the master and the master
candidates run ``ganeti-confd`` on ``<its ip>:1814`` (UDP); node 1, the master,
also runs ``ganeti-masterd`` and ``ganeti-rapi`` (on ``<its ip>:5080``).  The
node daemons run with ``--manage-confd``: a node that becomes a candidate
starts confd, one that stops being one stops it.
``create`` initialises node 1 and adds the other nodes as an administrator
would: it prepares each node (directories and the cluster certificate, which
stands in for the SSH step of Ganeti's ``gnt-node add``), starts the
daemons, submits one ``OP_NODE_ADD`` job per node and stops the daemons
again, so that ``create`` leaves a stopped cluster and ``start`` starts it.

With ``--namespaces`` (root) each node is a "host" of its own instead: a
network namespace with a 10.x address on its bridge ``br0`` and its own
libvirtd (:mod:`ganeti.cli.vcluster_ns`, :mod:`ganeti.cli.netns`).
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from ganeti.cli import daemons, jobs, netns, vcluster_lvm, vcluster_nodes, vcluster_ns
from ganeti.cli.framework import Context, UsageError, format_error
from ganeti.core import bootstrap, constants, errors, fileutil
from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient

DESCRIPTION = __doc__.split("\n\n")[0]
STATE_FILE = "vcluster.json"
CREDENTIALS_FILE = "rapi-credentials"
START_TIMEOUT = 30.0
#: Seconds one OP_NODE_ADD job may take during ``create``.
JOIN_TIMEOUT = 120.0
DEFAULT_DOMAIN = "vcluster.test"
DEFAULT_IP_BASE = "127.0.1."
#: The directory of DIR every node's shared file storage directory is (the cluster
#: file system of a real cluster).
SHARED_FILE_DIR = "shared-file-storage"
#: Number of nodes ``demo`` creates.
DEMO_NODES = 3


@dataclass
class VNode:
    """One node of a virtual cluster."""

    name: str
    ip: str
    root: str

    @property
    def paths(self) -> Paths:
        """This node's paths."""
        return Paths.for_node(self.root, self.name)


@dataclass
class VCluster:
    """What ``create`` recorded in DIR/vcluster.json."""

    directory: str
    cluster_name: str
    domain: str
    master: str
    nodes: list[VNode]
    #: The namespace plan of a namespaced cluster (None: loopback addresses).
    netns: netns.NetPlan | None = None
    #: Whether each node runs its own libvirtd (namespaced clusters only).
    libvirt: bool = False
    #: Each node's volume group (:mod:`ganeti.cli.vcluster_lvm`): ``{"vg": name,
    #: "size_mib": size}``; None: the nodes have none.
    lvm: dict[str, Any] | None = None

    @classmethod
    def load(cls, directory: str) -> VCluster:
        """Read a virtual cluster's description; clear error if DIR is not one."""
        directory = os.path.abspath(directory)
        path = os.path.join(directory, STATE_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise errors.OpPrereqError(
                f"{directory} is not a virtual cluster (no {STATE_FILE}); create one with "
                f"'ganeti-vcluster create {directory}'", errors.ECODE_NOENT) from None
        except ValueError as err:
            raise errors.ConfigurationError(f"{path} is corrupt: {err}") from None
        try:
            nodes = [VNode(**n) for n in data["nodes"]]
            plan = netns.NetPlan.from_dict(data["netns"]) if data.get("netns") else None
            vc = cls(directory, data["cluster_name"], data["domain"], data["master"], nodes,
                     plan, bool(data.get("libvirt", False)), data.get("lvm") or None)
        except (KeyError, TypeError, ValueError) as err:
            raise errors.ConfigurationError(f"{path} is corrupt: missing or bad {err}") from None
        vcluster_ns.link_roots(vc)
        return vc

    def save(self) -> None:
        """Write DIR/vcluster.json."""
        data: dict[str, Any] = {
            "cluster_name": self.cluster_name, "domain": self.domain,
            "master": self.master, "nodes": [asdict(n) for n in self.nodes]}
        if self.netns is not None:
            data.update(netns=self.netns.to_dict(), libvirt=self.libvirt)
        if self.lvm:
            data["lvm"] = self.lvm
        fileutil.atomic_write(os.path.join(self.directory, STATE_FILE),
                              json.dumps(data, indent=2) + "\n", mode=0o644)

    def node(self, name: str | None) -> VNode:
        """A node by full or short name (default: the master)."""
        wanted = name or self.master
        for n in self.nodes:
            if wanted in (n.name, n.name.split(".")[0]):
                return n
        raise errors.OpPrereqError(f"No node {wanted!r} in this virtual cluster "
                                   f"(nodes: {', '.join(n.name for n in self.nodes)})",
                                   errors.ECODE_NOENT)

    def is_master(self, node: VNode) -> bool:
        """Whether ``node`` is the master."""
        return node.name == self.master

    def candidates(self) -> set[str]:
        """Names of the master and the master candidates, as the master's config.data
        says (only the master if it cannot be read)."""
        try:
            with open(self.node(None).paths.config_file, encoding="utf-8") as f:
                raw = json.load(f)
            names = {n["name"] for n in raw["nodes"].values() if n.get("master_candidate")}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            names = set()
        return names | {self.master}

    def daemons_of(self, node: VNode, candidates: set[str] | None = None) -> list[str]:
        """The daemons a node runs, in start order: ganeti-noded, ganeti-confd on the
        master and the candidates, ganeti-masterd and ganeti-rapi on the master."""
        if candidates is None:
            candidates = self.candidates()
        return daemons.daemons_of(self.is_master(node), node.name in candidates)

    def start_order(self) -> list[tuple[VNode, str]]:
        """``(node, daemon)``: every node's node daemon, confd on the candidates, then
        the master daemons."""
        names = self.candidates()
        return daemons.start_order([(n, self.is_master(n)) for n in self.nodes],
                                   [n for n in self.nodes if n.name in names])

    def stop_order(self) -> list[tuple[VNode, str]]:
        """The master daemons, every node daemon, then confd wherever it runs."""
        return daemons.stop_order([(n, self.is_master(n)) for n in self.nodes])


def setup_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", metavar="DIR", help="directory of the virtual cluster")


def setup_create(p: argparse.ArgumentParser) -> None:
    setup_dir(p)
    _setup_nodes(p, 1)
    p.add_argument("--domain", default=DEFAULT_DOMAIN,
                   help="DNS domain of the node names (default: %(default)s)")
    p.add_argument("--name", help="cluster name (default: cluster.<domain>)")
    p.add_argument("--start", action="store_true",
                   help="leave every daemon running once the nodes joined, as 'start' "
                        "would (saves stopping and starting them again)")
    _setup_mode(p, "loopback addresses (default)")
    vcluster_lvm.setup_options(p)


def _setup_mode(p: argparse.ArgumentParser, loopback_help: str) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--namespaces", dest="mode", action="store_const", const="namespaces",
                      help="each node in a network namespace of its own with a 10.x "
                           "address and its own libvirtd (root only)")
    mode.add_argument("--loopback", dest="mode", action="store_const", const="loopback",
                      help=f"nodes on 127.x addresses of this machine: {loopback_help}")
    p.add_argument("--subnet", help="with --namespaces: the cluster's private /24 "
                                    "(default: 10.<x>.0.0/24, x from the cluster id)")


def _setup_nodes(p: argparse.ArgumentParser, default_nodes: int) -> None:
    p.add_argument("--nodes", type=int, default=default_nodes,
                   help="number of nodes; node 1 is the master, the others are added "
                        "with OP_NODE_ADD (default: %(default)s)")
    p.add_argument("--ip-base", default=DEFAULT_IP_BASE,
                   help="node k gets IP <ip-base><k>; its ganeti-noded listens on port "
                        f"{constants.DEFAULT_NODED_PORT} there (the master's ganeti-rapi on "
                        f"{constants.DEFAULT_RAPI_PORT}), so two running virtual clusters "
                        "need different bases (default: %(default)s)")


def setup_demo(p: argparse.ArgumentParser) -> None:
    setup_dir(p)
    _setup_nodes(p, DEMO_NODES)
    _setup_mode(p, "the default unless root with guest files, QEMU and libvirt")


class JoinError(errors.GenericError):
    """Adding a node failed: ``args`` are the node name, the job id and the error."""


def wait_for_job(client: Any, job_id: int, on_log: Any, timeout: float) -> None:
    """Follow a job with WaitForJobChange until it ends; ``on_log(message)`` per log entry."""
    deadline = time.monotonic() + timeout
    prev_info: Any = None
    prev_serial: int | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise errors.OpExecError(f"job {job_id} did not finish within {timeout:g}s")
        answer = client.call("WaitForJobChange", job_id, ["status"], prev_info, prev_serial,
                             max(1.0, min(remaining, 10.0)))
        if not answer:
            raise errors.JobLost(f"Job with id {job_id} lost")
        if answer == jobs.JOB_NOTCHANGED:
            continue
        info, entries = answer
        for serial, _timestamp, log_type, message in entries or []:
            on_log(jobs.format_log_message(log_type, message))
            prev_serial = serial if prev_serial is None else max(prev_serial, serial)
        if not entries and info[0] in (constants.JOB_STATUS_SUCCESS, constants.JOB_STATUS_ERROR,
                                       constants.JOB_STATUS_CANCELING,
                                       constants.JOB_STATUS_CANCELED):
            return
        prev_info = info


def add_node(ctx: Context, vc: VCluster, node: VNode, opts: argparse.Namespace) -> None:
    """Submit OP_NODE_ADD for ``node`` to the master and wait for it; JoinError if it fails."""
    client = ctx.luxi_factory(vc.node(None).paths)
    # job_results and the reason trail want a Context: one bound to the master's client
    mctx = Context(tool=ctx.tool, stdout=ctx.stdout, stderr=ctx.stderr,
                   environ=vc.node(None).paths.env(), luxi_factory=lambda _paths: client)
    op: dict[str, Any] = {"OP_ID": "OP_NODE_ADD", "node_name": node.name,
                          "primary_ip": node.ip, "readd": False}
    jobs.set_generic_options(mctx, opts, [op])
    job_id: int | None = None
    try:
        job_id = int(client.call("SubmitJob", [op]))
        ctx.out(f"Adding {node.name} ({node.ip}): job {job_id}")
        wait_for_job(client, job_id, lambda msg: ctx.out(f"    {msg}"), JOIN_TIMEOUT)
        jobs.job_results(mctx, job_id)
    except errors.GenericError as err:
        raise JoinError(node.name, job_id, err) from None
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()
    ctx.out(f"  {node.name} joined the cluster")


def join_nodes(ctx: Context, vc: VCluster, opts: argparse.Namespace,
               keep_running: bool) -> int:
    """Start every daemon and add nodes 2..N; stop the daemons again unless ``keep_running``."""
    ok = False
    try:
        start_all(vc, ctx)
        for node in vc.nodes:
            if not vc.is_master(node):
                add_node(ctx, vc, node, opts)
        if keep_running:
            settle_confd(vc, ctx)
        ok = True
    except JoinError as err:
        name, job_id, cause = err.args
        job = f" (job {job_id})" if job_id is not None else ""
        ctx.err(f"Adding {name} failed{job}: {format_error(cause)[1]}")
        ctx.err(f"  master daemon log: {vc.node(None).paths.log_file(constants.MASTERD)}")
        ctx.err(f"  node daemon log:   {vc.node(name).paths.log_file(constants.NODED)}")
    except errors.GenericError as err:
        ctx.err(format_error(err)[1])
    finally:
        if not ok or not keep_running:
            stop_all(vc, ctx)
    if not ok:
        vcluster_ns.remove_network(vc, ctx)
        ctx.err(f"The virtual cluster stays in {vc.directory} with its daemons stopped; "
                f"remove it with 'ganeti-vcluster destroy {vc.directory}'.")
        return constants.EXIT_FAILURE
    if len(vc.nodes) > 1:
        ctx.out(f"All {len(vc.nodes)} nodes are in the cluster.")
    if not keep_running:
        ctx.out(f"The daemons are stopped again; start them with 'ganeti-vcluster start "
                f"{vc.directory}'.")
    return constants.EXIT_SUCCESS


def cmd_create(ctx: Context, opts: argparse.Namespace) -> int:
    """Initialise node 1 as master and add the other nodes; leaves the daemons stopped
    (running with ``--start``)."""
    return create(ctx, opts, keep_running=bool(getattr(opts, "start", False)))


def create(ctx: Context, opts: argparse.Namespace, keep_running: bool) -> int:
    """``create``; with ``keep_running`` the daemons stay up after the nodes joined."""
    directory = os.path.abspath(opts.directory)
    if os.path.exists(os.path.join(directory, STATE_FILE)):
        raise errors.OpPrereqError(f"{directory} already holds a virtual cluster; use "
                                   "'start', or 'destroy' it first", errors.ECODE_EXISTS)
    if not 1 <= opts.nodes <= 250:
        raise UsageError("--nodes must be between 1 and 250")
    plan: netns.NetPlan | None = None
    libvirt = False
    settings: dict[str, Any] = {"enabled_hypervisors": [constants.HT_FAKE]}
    if getattr(opts, "mode", None) == "namespaces":
        reason = vcluster_ns.unavailable_reason()
        if reason:
            raise errors.OpPrereqError(f"Cannot use --namespaces: {reason}",
                                       errors.ECODE_ENVIRON)
        plan = netns.new_plan(directory, opts.nodes, getattr(opts, "subnet", None))
        ips = [plan.node_ip(k) for k in range(1, opts.nodes + 1)]
        master_ip = plan.master_ip
        libvirt = not vcluster_ns.libvirt_missing()
        settings = vcluster_ns.cluster_settings(
            plan, vcluster_ns.find_guest() if libvirt else None, libvirt)
    else:
        try:
            ips = [str(ipaddress.ip_address(f"{opts.ip_base}{k}"))
                   for k in range(1, opts.nodes + 1)]
            master_ip = str(ipaddress.ip_address(f"{opts.ip_base}254"))
        except ValueError:
            raise UsageError(f"--ip-base {opts.ip_base!r} plus a node number is not an IP "
                             "address (expected something like 127.0.1.)") from None
    names = [f"node{k}.{opts.domain}" for k in range(1, opts.nodes + 1)]
    nodes = [VNode(name, ip, vcluster_ns.node_root(plan, name) if plan is not None
                   else os.path.join(directory, name)) for name, ip in zip(names, ips, strict=True)]
    vc = VCluster(directory, opts.name or f"cluster.{opts.domain}", opts.domain,
                  nodes[0].name, nodes, plan, plan is not None and libvirt,
                  vcluster_lvm.choice(opts, vcluster_lvm.unavailable_reason()))
    master = nodes[0]
    storage = os.path.join(master.root, "srv", "ganeti")
    init = bootstrap.InitOptions(**{
        "master_ip": master_ip, **settings,
        "cluster_name": vc.cluster_name, "primary_ip": master.ip,
        "enabled_disk_templates": [constants.DT_FILE, constants.DT_DISKLESS,
                                   *(vcluster_lvm.TEMPLATES if vc.lvm else [])],
        "vg_name": vc.lvm["vg"] if vc.lvm else None,
        "file_storage_dir": os.path.join(storage, "file-storage"),
        "shared_file_storage_dir": os.path.join(storage, "shared-file-storage"),
        "gluster_storage_dir": os.path.join(master.paths.run_dir, "gluster")})
    bootstrap.build_config(init, master.paths)  # validate before creating anything
    if plan is None and (len(nodes) > 1 or keep_running):  # are the addresses free?
        for node in nodes:
            try:
                daemons.check_address_free(node.ip, constants.DEFAULT_NODED_PORT)
                if node is master:
                    daemons.check_address_free(node.ip, constants.DEFAULT_RAPI_PORT)
            except daemons.AddressInUse as err:
                raise vcluster_nodes.address_in_use_error(err, node, len(nodes), directory,
                                           creating=True) from None
    os.makedirs(directory, exist_ok=True)
    for node in nodes:
        os.makedirs(os.path.join(directory, node.name), exist_ok=True)
    vcluster_ns.link_roots(vc)
    for node in nodes:
        vcluster_nodes.link_os_definitions(node.paths)
        vcluster_nodes.allow_file_storage(
            node.paths, [init.file_storage_dir, init.shared_file_storage_dir], master.root,
            {init.shared_file_storage_dir: os.path.join(directory, SHARED_FILE_DIR)})
    try:
        if vc.lvm:
            vcluster_lvm.detach_stale()
            for node in nodes:
                vcluster_lvm.create(node.root, vc.lvm["vg"], vc.lvm["size_mib"])
        if plan is not None:
            vcluster_ns.write_hosts(vc)
            for node in nodes if vc.libvirt else []:
                vcluster_ns.write_libvirt_config(node.root, node.ip)
            netns.create_network(plan)
        result = bootstrap.initialise(master.paths, init)
        for node in nodes[1:]:
            vcluster_nodes.prepare_node(master, node)
    except BaseException:
        vcluster_ns.remove_network(vc, ctx)
        vcluster_lvm.remove_all((n.root for n in vc.nodes), vc.lvm)
        for node in nodes:
            shutil.rmtree(os.path.join(directory, node.name), ignore_errors=True)
        vcluster_ns.unlink_roots(vc)
        raise
    fileutil.atomic_write(os.path.join(directory, CREDENTIALS_FILE),
                          f"{result.rapi_user} {result.rapi_password}\n", mode=0o600)
    vc.save()
    ctx.out(f"Created virtual cluster {vc.cluster_name} in {directory}")
    if plan is not None:
        ctx.out(f"  network namespaces {plan.prefix}{{switch,node1..{len(nodes)},client}}, "
                f"subnet {plan.subnet}, master IP {plan.master_ip}, client {plan.client_ip}"
                + (", libvirtd per node" if vc.libvirt else ", no libvirt"))
    for node in nodes:
        role = ("master, initialised" if vc.is_master(node)
                else "prepared: directories and cluster certificate")
        ctx.out(f"  {node.name:<28} {node.ip:<15} {role}")
    if vc.lvm:
        ctx.out(f"  volume group {vc.lvm['vg']} of {vc.lvm['size_mib']} MiB on each node "
                f"(a loop device over <node>/{vcluster_lvm.IMAGE}, sparse)")
    ctx.out(f"RAPI user {result.rapi_user!r}: password saved in "
            f"{os.path.join(directory, CREDENTIALS_FILE)} (mode 0600)")
    if len(nodes) == 1 and not keep_running:
        return constants.EXIT_SUCCESS
    return join_nodes(ctx, vc, opts, keep_running)


def _answers(paths: Paths) -> bool:
    try:
        with LuxiClient(paths.luxi_socket, timeout=2.0, connect_timeout=1.0) as client:
            client.query_config_values(["master_node"])
        return True
    except errors.GenericError:
        return False


def start_all(vc: VCluster, ctx: Context) -> list[str]:
    """Start every daemon that is not running, in start order; returns those started.

    Each started daemon is reported as it comes up.  If one fails, the daemons
    this call started are stopped again and the error is raised.
    """
    started: list[tuple[VNode, str]] = []
    if vc.lvm:  # loop devices do not survive a reboot
        vcluster_lvm.attach_all(n.root for n in vc.nodes)
    vcluster_ns.start_node_services(vc, ctx)
    try:
        for node, daemon in vc.start_order():
            paths = node.paths
            if daemons.state(paths, daemon).state == daemons.RUNNING:
                continue
            offset = daemons.log_size(paths.log_file(daemon))
            wrapper = vcluster_ns.daemon_wrapper(vc, node, daemon)
            try:
                if wrapper:
                    daemons.start_on_node(paths, daemon,
                                          vcluster_ns.listen_address(node, daemon),
                                          wrapper=wrapper)
                else:
                    daemons.start_on_node(paths, daemon, node.ip)
            except daemons.AddressInUse as err:
                if _started_meanwhile(paths, daemon):
                    continue
                raise vcluster_nodes.address_in_use_error(err, node, len(vc.nodes), vc.directory,
                                           creating=False) from None
            except errors.CommandError:
                if _started_meanwhile(paths, daemon):
                    continue
                raise
            started.append((node, daemon))
            if daemon == constants.MASTERD:
                daemons.wait_answering(paths, daemon, functools.partial(_answers, paths),
                                       offset, START_TIMEOUT)
            ctx.out(f"Started {daemon}@{node.name}")
    except BaseException:
        undone = [f"{d}@{n.name}" for n, d in reversed(started) if daemons.stop(n.paths, d)]
        if undone:
            ctx.err(f"Stopped again: {', '.join(undone)}")
        raise
    if any(d == constants.MASTERD for _n, d in started):
        vcluster_ns.wait_master_ip(vc, ctx)
    return [f"{d}@{n.name}" for n, d in started]


def _started_meanwhile(paths: Paths, daemon: str) -> bool:
    """Whether a candidate daemon that failed to start runs anyway: its node daemon
    (``--manage-confd``) started it at the same moment, on a role change."""
    return (daemon in daemons.CANDIDATE_DAEMONS
            and daemons.state(paths, daemon).state == daemons.RUNNING)


def _confd_runs(paths: Paths) -> bool:
    return daemons.state(paths, constants.CONFD).state == daemons.RUNNING


#: Seconds a node daemon may take to start confd after its node became a candidate.
CONFD_SETTLE_TIMEOUT = 30.0


def settle_confd(vc: VCluster, ctx: Context, timeout: float = CONFD_SETTLE_TIMEOUT) -> None:
    """After nodes joined: wait until confd runs on every candidate.

    The node daemons start it themselves when they learn they are candidates;
    reported here.  Where that did not happen within ``timeout``, start_all
    starts it.
    """
    names = vc.candidates()
    waiting = [n for n in vc.nodes if n.name in names and not vc.is_master(n)]
    for node in waiting:
        if daemons.wait_for(functools.partial(_confd_runs, node.paths), timeout):
            ctx.out(f"Started {constants.CONFD}@{node.name} (by its node daemon: "
                    "the node became a master candidate)")
    start_all(vc, ctx)


def stop_all(vc: VCluster, ctx: Context) -> list[str]:
    """Stop every daemon in stop order (master daemon first), then each node's libvirt
    (namespaced clusters); returns those that ran."""
    stopped = [f"{d}@{node.name}" for node, d in vc.stop_order() if daemons.stop(node.paths, d)]
    return stopped + vcluster_ns.stop_node_services(vc, ctx)


def cmd_start(ctx: Context, opts: argparse.Namespace) -> int:
    """Start the daemons that are not running (every node daemon, then the master daemon)
    and wait until they answer."""
    vc = VCluster.load(opts.directory)
    if not start_all(vc, ctx):
        ctx.out("All daemons already running.")
    return constants.EXIT_SUCCESS


def cmd_stop(ctx: Context, opts: argparse.Namespace) -> int:
    """Stop every daemon of every node (the master daemon first) and wait for them to exit."""
    vc = VCluster.load(opts.directory)
    stopped = stop_all(vc, ctx)
    ctx.out(f"Stopped {', '.join(stopped)}." if stopped else "No daemon was running.")
    return constants.EXIT_SUCCESS


def states(vc: VCluster) -> list[tuple[VNode, daemons.DaemonState]]:
    """State of every daemon every node should run, node by node."""
    names = vc.candidates()
    return [(node, daemons.state(node.paths, d)) for node in vc.nodes
            for d in vc.daemons_of(node, names)]


def cmd_status(ctx: Context, opts: argparse.Namespace) -> int:
    """List the daemons with pid and state, confd on every node (``not a candidate``
    where it should not run); exit 1 if a daemon that should run does not."""
    vc = VCluster.load(opts.directory)
    ctx.out(f"{'Node':<28} {'IP':<15} {'Daemon':<16} {'PID':>7}  State")
    names = vc.candidates()
    failed = False
    for node in vc.nodes:
        wanted = vc.daemons_of(node, names)
        shown = wanted if constants.CONFD in wanted else (
            wanted[:len(daemons.NODE_DAEMONS)] + [constants.CONFD]
            + wanted[len(daemons.NODE_DAEMONS):])
        for daemon in shown:
            st = daemons.state(node.paths, daemon)
            text = st.state if daemon in wanted else f"{st.state} (not a candidate)"
            failed = failed or (daemon in wanted and st.state != daemons.RUNNING)
            ctx.out(f"{node.name:<28} {node.ip:<15} {st.daemon:<16} {st.pid or '-':>7}  "
                    f"{text}")
        for st in vcluster_ns.libvirt_states(node.root) if vc.libvirt else []:
            failed = failed or st.state != daemons.RUNNING
            ctx.out(f"{node.name:<28} {node.ip:<15} {st.daemon:<16} {st.pid or '-':>7}  "
                    f"{st.state}")
    return constants.EXIT_FAILURE if failed else constants.EXIT_SUCCESS


def env_lines(vc: VCluster, node: VNode) -> list[str]:
    """Shell lines that point gnt-* tools at ``node``."""
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    return [f"export GANETI_ROOTDIR={shlex.quote(node.root)}",
            f"export GANETI_HOSTNAME={shlex.quote(node.name)}",
            *(f"export {k}={shlex.quote(v)}"
              for k, v in vcluster_lvm.lvm_env(node.root).items()),
            f"export PATH={shlex.quote(bindir)}:\"$PATH\""]


def setup_env(p: argparse.ArgumentParser) -> None:
    setup_dir(p)
    p.add_argument("node", nargs="?", metavar="NODE", help="node name (default: the master)")


def cmd_env(ctx: Context, opts: argparse.Namespace) -> int:
    """Print export lines for a node: eval "$(ganeti-vcluster env DIR)"."""
    vc = VCluster.load(opts.directory)
    for line in env_lines(vc, vc.node(opts.node)):
        ctx.out(line)
    return constants.EXIT_SUCCESS


def cmd_exec(ctx: Context, opts: argparse.Namespace) -> int:
    """Run a command inside a node's (or the client's) namespace; its exit status."""
    vc = VCluster.load(opts.directory)
    node, client, command = vcluster_ns.split_exec_args(opts.node, opts.client,
                                                        list(opts.argv))
    argv = vcluster_ns.exec_argv(vc, node, client, command)
    try:
        return subprocess.run(argv, check=False).returncode
    except OSError as err:
        raise errors.CommandError(f"Cannot run {argv[0]}: {err}") from None


def cmd_destroy(ctx: Context, opts: argparse.Namespace) -> int:
    """Stop every daemon and remove the virtual cluster's directory."""
    vc = VCluster.load(opts.directory)
    stop_all(vc, ctx)
    vcluster_ns.remove_network(vc, ctx)
    vcluster_lvm.remove_all((n.root for n in vc.nodes), vc.lvm)
    shutil.rmtree(vc.directory)
    vcluster_ns.unlink_roots(vc)
    ctx.out(f"Destroyed the virtual cluster in {vc.directory}.")
    return constants.EXIT_SUCCESS
