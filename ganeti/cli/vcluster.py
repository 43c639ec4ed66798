"""ganeti-vcluster: a whole cluster on one machine, for trying things, tests and benchmarks.

Node k of a virtual cluster is ``node<k>.<domain>`` with root directory
``DIR/node<k>.<domain>`` and primary IP ``<ip-base><k>`` (every 127.x.y.z
address reaches the loopback device).  Each node's daemons run with
``GANETI_ROOTDIR``/``GANETI_HOSTNAME`` set to that node, so every path is
private to the node, exactly as on separate machines.
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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ganeti.cli import daemons
from ganeti.cli.framework import Command, Context, UsageError, run_tool
from ganeti.core import bootstrap, constants, errors, fileutil
from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient

DESCRIPTION = __doc__.split("\n\n")[0]
STATE_FILE = "vcluster.json"
CREDENTIALS_FILE = "rapi-credentials"
START_TIMEOUT = 30.0


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
            return cls(directory, data["cluster_name"], data["domain"], data["master"], nodes)
        except (KeyError, TypeError) as err:
            raise errors.ConfigurationError(f"{path} is corrupt: missing or bad {err}") from None

    def save(self) -> None:
        """Write DIR/vcluster.json."""
        data = {"cluster_name": self.cluster_name, "domain": self.domain,
                "master": self.master, "nodes": [asdict(n) for n in self.nodes]}
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

    def daemons_of(self, node: VNode) -> list[str]:
        """The daemons a node runs (the node daemon arrives with its issue)."""
        return list(daemons.MASTER_DAEMONS) if node.name == self.master else []


def _setup_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", metavar="DIR", help="directory of the virtual cluster")


def _setup_create(p: argparse.ArgumentParser) -> None:
    _setup_dir(p)
    p.add_argument("--nodes", type=int, default=1, help="number of nodes (default: 1)")
    p.add_argument("--domain", default="vcluster.test",
                   help="DNS domain of the node names (default: %(default)s)")
    p.add_argument("--ip-base", default="127.0.1.",
                   help="node k gets IP <ip-base><k> (default: %(default)s)")
    p.add_argument("--name", help="cluster name (default: cluster.<domain>)")


def cmd_create(ctx: Context, opts: argparse.Namespace) -> int:
    """Create the node directories and initialise node 1 as master."""
    directory = os.path.abspath(opts.directory)
    if os.path.exists(os.path.join(directory, STATE_FILE)):
        raise errors.OpPrereqError(f"{directory} already holds a virtual cluster; use "
                                   "'start', or 'destroy' it first", errors.ECODE_EXISTS)
    if not 1 <= opts.nodes <= 250:
        raise UsageError("--nodes must be between 1 and 250")
    try:
        ips = [str(ipaddress.ip_address(f"{opts.ip_base}{k}")) for k in range(1, opts.nodes + 1)]
        master_ip = str(ipaddress.ip_address(f"{opts.ip_base}254"))
    except ValueError:
        raise UsageError(f"--ip-base {opts.ip_base!r} plus a node number is not an IP "
                         "address (expected something like 127.0.1.)") from None
    nodes = [VNode(f"node{k}.{opts.domain}", ips[k - 1],
                   os.path.join(directory, f"node{k}.{opts.domain}"))
             for k in range(1, opts.nodes + 1)]
    vc = VCluster(directory, opts.name or f"cluster.{opts.domain}", opts.domain,
                  nodes[0].name, nodes)
    master = nodes[0]
    storage = os.path.join(master.root, "srv", "ganeti")
    init = bootstrap.InitOptions(
        cluster_name=vc.cluster_name, primary_ip=master.ip, master_ip=master_ip,
        enabled_hypervisors=[constants.HT_FAKE],
        enabled_disk_templates=[constants.DT_FILE, constants.DT_DISKLESS],
        file_storage_dir=os.path.join(storage, "file-storage"),
        shared_file_storage_dir=os.path.join(storage, "shared-file-storage"),
        gluster_storage_dir=os.path.join(master.paths.run_dir, "gluster"))
    bootstrap.build_config(init, master.paths)  # validate before creating anything
    os.makedirs(directory, exist_ok=True)
    for node in nodes:
        os.makedirs(node.root, exist_ok=True)
    try:
        result = bootstrap.initialise(master.paths, init)
    except BaseException:
        for node in nodes:
            shutil.rmtree(node.root, ignore_errors=True)
        raise
    fileutil.atomic_write(os.path.join(directory, CREDENTIALS_FILE),
                          f"{result.rapi_user} {result.rapi_password}\n", mode=0o600)
    vc.save()
    ctx.out(f"Created virtual cluster {vc.cluster_name} in {directory}")
    for node in nodes:
        role = "master" if node.name == vc.master else "not yet joined (needs ganeti-noded)"
        ctx.out(f"  {node.name:<28} {node.ip:<15} {role}")
    ctx.out(f"RAPI user {result.rapi_user!r}: password saved in "
            f"{os.path.join(directory, CREDENTIALS_FILE)} (mode 0600)")
    return constants.EXIT_SUCCESS


def _answers(paths: Paths) -> bool:
    try:
        with LuxiClient(paths.luxi_socket, timeout=2.0, connect_timeout=1.0) as client:
            client.query_config_values(["master_node"])
        return True
    except errors.GenericError:
        return False


def start_all(vc: VCluster, ctx: Context) -> list[str]:
    """Start every daemon that is not running; returns those started."""
    started = []
    for node in vc.nodes:
        for daemon in vc.daemons_of(node):
            paths = node.paths
            if daemons.state(paths, daemon).state == daemons.RUNNING:
                continue
            daemons.start(paths, daemon)
            started.append(f"{daemon}@{node.name}")
            if daemon == constants.MASTERD and not daemons.wait_for(
                    functools.partial(_answers, paths), START_TIMEOUT):
                raise errors.CommandError(
                    f"{daemon} on {node.name} did not answer on {paths.luxi_socket} within "
                    f"{START_TIMEOUT:g}s; see {paths.log_file(daemon)}")
    return started


def cmd_start(ctx: Context, opts: argparse.Namespace) -> int:
    """Start the daemons that are not running and wait until they answer."""
    vc = VCluster.load(opts.directory)
    started = start_all(vc, ctx)
    ctx.out(f"Started {', '.join(started)}." if started else "All daemons already running.")
    return constants.EXIT_SUCCESS


def cmd_stop(ctx: Context, opts: argparse.Namespace) -> int:
    """Stop every daemon of every node and wait for them to exit."""
    vc = VCluster.load(opts.directory)
    stopped = [f"{d}@{node.name}" for node in vc.nodes for d in vc.daemons_of(node)
               if daemons.stop(node.paths, d)]
    ctx.out(f"Stopped {', '.join(stopped)}." if stopped else "No daemon was running.")
    return constants.EXIT_SUCCESS


def states(vc: VCluster) -> list[tuple[VNode, daemons.DaemonState]]:
    """State of every daemon of every node."""
    return [(node, daemons.state(node.paths, d)) for node in vc.nodes
            for d in vc.daemons_of(node)]


def cmd_status(ctx: Context, opts: argparse.Namespace) -> int:
    """List the daemons with pid and state; exit 1 if any is not running."""
    vc = VCluster.load(opts.directory)
    ctx.out(f"{'Node':<28} {'Daemon':<16} {'PID':>7}  State")
    rows = states(vc)
    for node, st in rows:
        ctx.out(f"{node.name:<28} {st.daemon:<16} {st.pid or '-':>7}  {st.state}")
    return (constants.EXIT_SUCCESS if all(st.state == daemons.RUNNING for _, st in rows)
            else constants.EXIT_FAILURE)


def env_lines(vc: VCluster, node: VNode) -> list[str]:
    """Shell lines that point gnt-* tools at ``node``."""
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    return [f"export GANETI_ROOTDIR={shlex.quote(node.root)}",
            f"export GANETI_HOSTNAME={shlex.quote(node.name)}",
            f"export PATH={shlex.quote(bindir)}:\"$PATH\""]


def _setup_env(p: argparse.ArgumentParser) -> None:
    _setup_dir(p)
    p.add_argument("node", nargs="?", metavar="NODE", help="node name (default: the master)")


def cmd_env(ctx: Context, opts: argparse.Namespace) -> int:
    """Print export lines for a node: eval "$(ganeti-vcluster env DIR)"."""
    vc = VCluster.load(opts.directory)
    for line in env_lines(vc, vc.node(opts.node)):
        ctx.out(line)
    return constants.EXIT_SUCCESS


def cmd_destroy(ctx: Context, opts: argparse.Namespace) -> int:
    """Stop every daemon and remove the virtual cluster's directory."""
    vc = VCluster.load(opts.directory)
    for node in vc.nodes:
        for d in vc.daemons_of(node):
            daemons.stop(node.paths, d)
    shutil.rmtree(vc.directory)
    ctx.out(f"Destroyed the virtual cluster in {vc.directory}.")
    return constants.EXIT_SUCCESS


def _run_shown(ctx: Context, vc: VCluster, argv: list[str], max_lines: int = 0) -> int:
    env = dict(os.environ)
    env.update(vc.node(None).paths.env())
    env["PATH"] = os.path.dirname(os.path.abspath(sys.executable)) + ":" + env.get("PATH", "")
    ctx.out(f"$ {' '.join(argv)}")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    lines = (proc.stdout + proc.stderr).rstrip("\n").splitlines()
    shown = lines[:max_lines] if max_lines else lines
    for line in shown:
        ctx.out(f"  {line}")
    if len(shown) < len(lines):
        ctx.out(f"  ... ({len(lines) - len(shown)} more lines)")
    return proc.returncode


def usage_lines(vc: VCluster) -> list[str]:
    """How to use, stop and remove the cluster."""
    tool = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "ganeti-vcluster")
    d = shlex.quote(vc.directory)
    return [
        "Use the cluster from your shell, either with",
        f"  eval \"$({tool} env {d})\"",
        "or with these export lines:",
        *(f"  {line}" for line in env_lines(vc, vc.node(None))),
        "then try:",
        "  gnt-cluster info; gnt-debug delay 1; gnt-job list; gnt-job info 1; "
        "gnt-debug locks",
        f"Status:  {tool} status {d}",
        f"Stop:    {tool} stop {d}     (start again with: {tool} start {d})",
        f"Remove:  {tool} destroy {d}",
        f"Logs:    {vc.node(None).paths.log_dir}",
    ]


def cmd_demo(ctx: Context, opts: argparse.Namespace) -> int:
    """Create and start the cluster if needed, show what works, print how to use it."""
    directory = os.path.abspath(opts.directory)
    if not os.path.exists(os.path.join(directory, STATE_FILE)):
        cmd_create(ctx, argparse.Namespace(directory=directory, nodes=1,
                                           domain="vcluster.test", ip_base="127.0.1.",
                                           name=None))
    vc = VCluster.load(directory)
    if all(st.state == daemons.RUNNING for _, st in states(vc)):
        ctx.out(f"The virtual cluster in {directory} is already running; leaving it as it is.")
    else:
        started = start_all(vc, ctx)
        ctx.out(f"Started {', '.join(started)}.")
        ctx.out("")
        ctx.out("Demonstration (each command talks LUXI to the master daemon; the tags, the "
                "delay and the listing are jobs):")
        failures = 0
        for argv, max_lines in ((["gnt-cluster", "getmaster"], 0),
                                (["gnt-cluster", "version"], 0),
                                (["gnt-cluster", "info"], 12),
                                (["gnt-cluster", "add-tags", "demo:yes"], 0),
                                (["gnt-cluster", "list-tags"], 0),
                                (["gnt-debug", "delay", "--repeat", "2", "0.2"], 0),
                                (["gnt-job", "list"], 0),
                                (["gnt-debug", "locks"], 0)):
            failures += _run_shown(ctx, vc, argv, max_lines) != 0
        if failures:
            ctx.err(f"{failures} demonstration command(s) failed")
            return constants.EXIT_FAILURE
    ctx.out("")
    for line in usage_lines(vc):
        ctx.out(line)
    return constants.EXIT_SUCCESS


COMMANDS = [
    Command("create", cmd_create, "Create a virtual cluster in DIR", _setup_create),
    Command("start", cmd_start, "Start the daemons that are not running", _setup_dir),
    Command("stop", cmd_stop, "Stop all daemons and wait for them", _setup_dir),
    Command("status", cmd_status, "List daemons with pid and state", _setup_dir),
    Command("env", cmd_env, "Print export lines for a node (default: the master)",
            _setup_env),
    Command("destroy", cmd_destroy, "Stop everything and remove DIR", _setup_dir),
    Command("demo", cmd_demo, "Create/start if needed, demonstrate, print how to use",
            _setup_dir),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/ganeti-vcluster."""
    return run_tool("ganeti-vcluster", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
