"""The namespaced mode of ganeti-vcluster: every node a "host" of its own.

Each node's daemons run inside its network namespace (:mod:`ganeti.cli.netns`)
on its 10.x address, with ``DIR/hosts`` as their ``/etc/hosts``; each node has
its own ``virtlogd`` and ``libvirtd``, started inside the node's network
namespace and a private mount namespace in which the node's directories
``<root>/libvirt/{etc,run,lib,cache,log}`` lie over ``/etc/libvirt``,
``/run/libvirt``, ``/var/lib/libvirt``, ``/var/cache/libvirt`` and
``/var/log/libvirt``.  The node daemon stays in the machine's mount namespace
and reaches its libvirtd at the real path of the socket,
``<root>/libvirt/run/libvirt-sock``, through ``GANETI_LIBVIRT_URI``.

QEMU runs as root (``qemu.conf``): the guests' disks, kernels and console
sockets lie under node roots only root may enter, the cluster is a throwaway
test bed inside private namespaces, and no security driver can label files in
bind-mounted private directories anyway.  Nor does a node's libvirtd use cgroups
(``cgroup_controllers = [ ]``): libvirt names a guest's cgroup after its domain id
and name only, in the machine-wide hierarchy, so two nodes' libvirtds (of one
cluster during a migration, or of two clusters on one machine) would share, limit
and empty each other's guests' cgroups.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

from ganeti.cli import daemons, netns, vcluster_lvm
from ganeti.cli.framework import Context, UsageError
from ganeti.core import constants, errors
from ganeti.core.pidfile import running_pid

#: The machine directories each node's libvirtd sees replaced by its own.
LIBVIRT_DIRS = (("etc", "/etc/libvirt"), ("run", "/run/libvirt"), ("lib", "/var/lib/libvirt"),
                ("cache", "/var/cache/libvirt"), ("log", "/var/log/libvirt"))
LIBVIRT_DAEMONS = ("virtlogd", "libvirtd")
#: Seconds a node's libvirtd may take to create its socket (measured: well under 0.1 s).
LIBVIRT_TIMEOUT = 30.0
#: Longest path of a Unix socket (sun_path) on Linux, with its NUL.
SUN_PATH_MAX = 108
#: Where the QEMU capabilities libvirtd probed are kept for the machine: each new
#: node's libvirtd would otherwise run QEMU to probe them again at its first use
#: (~8 s each); libvirt checks a cached file (QEMU's and libvirtd's binaries, the
#: kernel, the host CPU) and probes again if it no longer holds.
CAPS_CACHE_ENV = "GANETI_VCLUSTER_CAPS_CACHE"
CAPS_CACHE = "/var/cache/ganeti-vcluster/qemu-capabilities"
CAPS_SUBDIR = os.path.join("qemu", "capabilities")
HOSTS_FILE = "hosts"
TOOLS = ("ip", "nsenter", "unshare", "mount")
LIBVIRT_TOOLS = ("libvirtd", "virtlogd", "virsh", "qemu-system-x86_64")
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def missing_tools(tools: tuple[str, ...]) -> list[str]:
    """Those of ``tools`` not found on PATH (or in /usr/sbin, /sbin)."""
    return [t for t in tools if not shutil.which(t, path=SBIN_PATH)]


def unavailable_reason() -> str | None:
    """Why the namespaced mode cannot run here (None if it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = missing_tools(TOOLS)
    if missing:
        return f"missing {', '.join(missing)} (install iproute2 and util-linux)"
    return None


def libvirt_missing() -> list[str]:
    """What per-node libvirt needs and is not installed."""
    return missing_tools(LIBVIRT_TOOLS)


def find_guest() -> Any:
    """The guest files (:mod:`ganeti.cli.guestfiles`, interfaces item 1) or None."""
    try:
        module = importlib.import_module("ganeti.cli.guestfiles")
    except ImportError:
        return None
    return module.find_guest()


# -- short node roots ------------------------------------------------------------------

#: Where a namespaced cluster's node roots are reached by short paths: a QEMU serial
#: console socket lives under its node's root, and a UNIX socket path has at most 107
#: bytes, whatever directory the cluster was created in.
SHORT_ROOT_BASE = "/run"


def short_root_dir(plan: netns.NetPlan) -> str:
    """``/run/gvc<id>``: the cluster's directory of node root links."""
    return os.path.join(SHORT_ROOT_BASE, plan.prefix.rstrip("-"))


def node_root(plan: netns.NetPlan, name: str) -> str:
    """The root of node ``name`` as its daemons see it: a link to ``DIR/<name>``."""
    return os.path.join(short_root_dir(plan), name)


def link_roots(vc: Any) -> None:
    """Make (again: /run is emptied at boot) each node root link to ``DIR/<name>``."""
    plan = plan_of(vc)
    if plan is None:
        return
    for node in vc.nodes:
        target = os.path.join(vc.directory, node.name)
        if node.root == target or os.path.islink(node.root):
            continue
        os.makedirs(os.path.dirname(node.root), mode=0o755, exist_ok=True)
        os.symlink(target, node.root)


def unlink_roots(vc: Any) -> None:
    """Remove the node root links (never what they point to)."""
    plan = plan_of(vc)
    if plan is not None:
        shutil.rmtree(short_root_dir(plan), ignore_errors=True)


# -- per-node libvirt -----------------------------------------------------------------

def libvirt_dir(root: str, part: str = "") -> str:
    """``<root>/libvirt[/part]``: the node's own libvirt directories."""
    return os.path.join(root, "libvirt", part) if part else os.path.join(root, "libvirt")


def libvirt_socket(root: str) -> str:
    """The real path of the node's libvirtd socket."""
    return os.path.join(libvirt_dir(root, "run"), "libvirt-sock")


def libvirt_uri(root: str) -> str:
    """What the node daemon gets in ``GANETI_LIBVIRT_URI``."""
    return f"qemu+unix:///system?socket={libvirt_socket(root)}"


def libvirtd_conf(ip: str) -> str:
    """libvirtd.conf: Unix socket for root only, TCP (for migrations) on the node's
    address without authentication (only the cluster's namespaces can reach it)."""
    return ("# written by ganeti-vcluster: this node's own libvirtd\n"
            "listen_tls = 0\nlisten_tcp = 1\n"
            f'listen_addr = "{ip}"\nauth_tcp = "none"\n'
            'auth_unix_ro = "none"\nauth_unix_rw = "none"\n'
            'unix_sock_group = "root"\nunix_sock_rw_perms = "0700"\n'
            'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"\n')


QEMU_CONF = ("# written by ganeti-vcluster: QEMU as root, no labelling, no cgroups "
             "(see vcluster_ns)\n"
             'user = "root"\ngroup = "root"\ndynamic_ownership = 0\nremember_owner = 0\n'
             'security_driver = "none"\ncgroup_controllers = [ ]\n')
VIRTLOGD_CONF = 'log_outputs = "3:file:/var/log/libvirt/virtlogd.log"\n'


def write_libvirt_config(root: str, ip: str) -> None:
    """Make the node's libvirt directories and its minimal configuration."""
    for part, _ in LIBVIRT_DIRS:
        os.makedirs(libvirt_dir(root, part), 0o700, exist_ok=True)
    for name, text in (("libvirtd.conf", libvirtd_conf(ip)), ("qemu.conf", QEMU_CONF),
                       ("virtlogd.conf", VIRTLOGD_CONF)):
        with open(os.path.join(libvirt_dir(root, "etc"), name), "w", encoding="utf-8") as f:
            f.write(text)
    if len(libvirt_socket(root).encode()) >= SUN_PATH_MAX:
        raise errors.OpPrereqError(f"{libvirt_socket(root)} is too long for a Unix socket; "
                                   "use a shorter DIR", errors.ECODE_INVAL)


def caps_cache_dir() -> str:
    """The machine's store of probed QEMU capabilities (see :data:`CAPS_CACHE`)."""
    return os.environ.get(CAPS_CACHE_ENV) or CAPS_CACHE


def _copy_caps(src: str, dst: str, replace: bool) -> int:
    """Copy the capability files (``*.xml``, regular files) of ``src`` to ``dst``,
    each through a temporary name; ``replace`` also overwrites those ``dst`` has.
    How many were copied; nothing if ``src`` is missing."""
    try:
        names = sorted(os.listdir(src))
    except OSError:
        return 0
    copied = 0
    for name in names:
        path = os.path.join(src, name)
        target = os.path.join(dst, name)
        if (not name.endswith(".xml") or os.path.islink(path) or not os.path.isfile(path)
                or (not replace and os.path.exists(target))):
            continue
        os.makedirs(dst, 0o700, exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        try:
            shutil.copyfile(path, tmp)
            os.replace(tmp, target)
            copied += 1
        except OSError:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return copied


def seed_caps(root: str) -> int:
    """Give a node's libvirt cache the machine's probed QEMU capabilities (those it
    has not got); how many files."""
    return _copy_caps(caps_cache_dir(), os.path.join(libvirt_dir(root, "cache"), CAPS_SUBDIR),
                      replace=False)


def keep_caps(root: str) -> int:
    """Keep what a node's libvirtd probed for the next nodes; how many files."""
    return _copy_caps(os.path.join(libvirt_dir(root, "cache"), CAPS_SUBDIR), caps_cache_dir(),
                      replace=True)


def libvirt_pid_file(root: str, daemon: str) -> str:
    """Where ``virtlogd``/``libvirtd`` of the node write their pid."""
    return os.path.join(libvirt_dir(root), f"{daemon}.pid")


def libvirt_command(ns: str, root: str) -> list[str]:
    """The command that starts the node's virtlogd and libvirtd (both daemonise) inside
    its network namespace and a private mount namespace with the node's directories,
    under a subreaper that collects their orphans (each QEMU) as they end
    (:mod:`ganeti.cli.subreaper`: libvirtd reports a crashed guest only once its QEMU
    has been collected)."""
    mounts = "; ".join(f"mount --bind {libvirt_dir(root, part)} {target} || exit 1"
                       for part, target in LIBVIRT_DIRS)
    script = (f"{mounts}; virtlogd -d -p {libvirt_pid_file(root, 'virtlogd')} || exit 1; "
              f"exec libvirtd -d -l -p {libvirt_pid_file(root, 'libvirtd')}")
    return ["nsenter", f"--net={os.path.join(netns.NETNS_DIR, ns)}", "--", "unshare",
            "--mount", "--propagation", "private", "--", sys.executable, "-m",
            "ganeti.cli.subreaper", "--", "sh", "-c", script]


def fix_kvm_device(path: str = "/dev/kvm") -> bool:
    """Give ``/dev/kvm`` group kvm and mode 0660 as udev would (without it every
    libvirt define re-probes QEMU for ~52 s); True if it was changed."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    try:
        import grp
        gid = grp.getgrnam("kvm").gr_gid
    except (KeyError, ImportError):
        return False
    if st.st_gid == gid and st.st_mode & 0o777 == 0o660:
        return False
    os.chown(path, -1, gid)
    os.chmod(path, 0o660)
    return True


def libvirt_running(root: str) -> bool:
    """Whether the node's libvirtd runs."""
    return running_pid(libvirt_pid_file(root, "libvirtd")) is not None


def start_libvirt(ns: str, root: str, ip: str, timeout: float = LIBVIRT_TIMEOUT) -> float:
    """Start the node's virtlogd and libvirtd unless running; seconds until its socket
    appeared (0 if it ran already)."""
    if libvirt_running(root):
        return 0.0
    stop_libvirt(root)  # a lone virtlogd, stale pid files
    write_libvirt_config(root, ip)
    seed_caps(root)
    fix_kvm_device()
    for _, target in LIBVIRT_DIRS:  # mount points must exist on the machine
        os.makedirs(target, exist_ok=True)
    sock = libvirt_socket(root)
    if os.path.exists(sock):
        os.unlink(sock)
    began = time.monotonic()
    proc = subprocess.run(libvirt_command(ns, root), capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise errors.CommandError(f"libvirtd in {ns} failed to start: "
                                  f"{(proc.stderr or proc.stdout).strip()}")
    if not daemons.wait_for(lambda: os.path.exists(sock), timeout):
        stop_libvirt(root)
        raise errors.CommandError(f"libvirtd in {ns} made no socket {sock} within {timeout:g}s "
                                  f"(see {libvirt_dir(root, 'log')})")
    return time.monotonic() - began


def libvirt_states(root: str) -> list[daemons.DaemonState]:
    """State of the node's virtlogd and libvirtd, from their pid files."""
    return [daemons.pid_file_state(daemon, libvirt_pid_file(root, daemon))
            for daemon in LIBVIRT_DAEMONS]


def running_domains(root: str) -> list[str]:
    """Names of the domains the node's libvirtd runs ([] if it does not answer)."""
    if not libvirt_running(root):
        return []
    proc = subprocess.run(["virsh", "-c", libvirt_uri(root), "list", "--name"],
                          capture_output=True, text=True, check=False, timeout=60)
    return [n for n in proc.stdout.split() if n] if proc.returncode == 0 else []


def stop_libvirt(root: str) -> list[str]:
    """Destroy the node's running domains (as pulling the plug would), stop its
    libvirtd and virtlogd; what was stopped (``domain <name>``, daemon names)."""
    done = []
    for name in running_domains(root):
        subprocess.run(["virsh", "-c", libvirt_uri(root), "destroy", name],
                       capture_output=True, check=False, timeout=60)
        done.append(f"domain {name}")
    if libvirt_running(root):
        keep_caps(root)
    for daemon in reversed(LIBVIRT_DAEMONS):
        pid_file = libvirt_pid_file(root, daemon)
        pid = running_pid(pid_file)  # not whoever got the number of a dead one
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            gone = functools.partial(daemons.owner_gone, pid, pid_file)
            if not daemons.wait_for(gone, 15.0):
                os.kill(pid, signal.SIGKILL)
                daemons.wait_for(gone, 5.0)
            done.append(daemon)
        if os.path.exists(pid_file):
            os.unlink(pid_file)
    return done


# -- the cluster ----------------------------------------------------------------------

def plan_of(vc: Any) -> netns.NetPlan | None:
    """The namespace plan of a loaded virtual cluster (None in loopback mode)."""
    return getattr(vc, "netns", None)


def node_index(vc: Any, node: Any) -> int:
    """Node k (from 1) of the cluster."""
    return [n.name for n in vc.nodes].index(node.name) + 1


def hosts_file(vc: Any) -> str:
    """``DIR/hosts``: every name of the cluster with its namespace address."""
    return os.path.join(vc.directory, HOSTS_FILE)


def write_hosts(vc: Any) -> None:
    """Write ``DIR/hosts`` for a namespaced cluster."""
    plan = plan_of(vc)
    assert plan is not None
    with open(hosts_file(vc), "w", encoding="utf-8") as f:
        f.write(netns.hosts_text(plan, vc.cluster_name, [n.name for n in vc.nodes], vc.domain))


def daemon_wrapper(vc: Any, node: Any, daemon: str) -> list[str]:
    """The command prefix for ``daemon`` of ``node`` ([] in loopback mode)."""
    plan = plan_of(vc)
    if plan is None:
        return []
    env = ({"GANETI_LIBVIRT_URI": libvirt_uri(node.root)}
           if vc.libvirt and daemon == constants.NODED else None)
    return netns.wrapper(plan.node_ns(node_index(vc, node)), hosts_file(vc), env)


def listen_address(node: Any, daemon: str) -> str:
    """Where ``daemon`` of a namespaced node listens: its node's address, except
    ganeti-rapi, which listens on every address of the master's namespace (as
    Ganeti's does), so that it answers on the master IP too."""
    return "0.0.0.0" if daemon == constants.RAPI else str(node.ip)


def cluster_settings(plan: netns.NetPlan, guest: Any, with_kvm: bool) -> dict[str, Any]:
    """The :class:`ganeti.core.bootstrap.InitOptions` fields of a namespaced cluster:
    kvm (default when the guest files exist) and fake, bridged NICs on ``br0``, the
    master IP on ``br0`` of the master with the subnet's netmask."""
    settings: dict[str, Any] = {
        "master_ip": plan.master_ip, "master_netdev": netns.NODE_BRIDGE,
        "master_netmask": plan.prefixlen,
        "nicparams": {constants.NIC_MODE: constants.NIC_MODE_BRIDGED,
                      constants.NIC_LINK: netns.NODE_BRIDGE},
        "enabled_hypervisors": [constants.HT_FAKE]}
    if not with_kvm:
        return settings
    settings["enabled_hypervisors"] = [constants.HT_FAKE, constants.HT_KVM]
    if guest is not None:
        settings["enabled_hypervisors"] = [constants.HT_KVM, constants.HT_FAKE]
        settings["hvparams"] = {constants.HT_KVM: {
            "kernel_path": str(guest.kernel), "initrd_path": str(guest.initrd),
            "root_path": str(guest.root_path), "kernel_args": str(guest.kernel_args),
            "serial_console": True, "disk_type": "paravirtual", "nic_type": "paravirtual"}}
    return settings


def start_node_services(vc: Any, ctx: Context) -> None:
    """Before any daemon starts: the network (again, after a reboot) and every node's
    libvirtd."""
    plan = plan_of(vc)
    if plan is None:
        return
    if len(netns.existing(plan)) != len(plan.namespaces()):
        netns.kill_all(plan, signal.SIGKILL)
        netns.delete_network(plan)
        netns.create_network(plan)
        ctx.out(f"Created the network namespaces {plan.prefix}* ({plan.subnet})")
    if not vc.libvirt:
        return
    for k, node in enumerate(vc.nodes, 1):
        took = start_libvirt(plan.node_ns(k), node.root, node.ip)
        if took:
            ctx.out(f"Started libvirtd@{node.name} ({took:.2f}s)")


#: Seconds masterd may take to bring the master IP up once it answers (Ganeti's
#: setup script pings the address for ~1 s and announces it with 3 ARPs, ~2 s).
MASTER_IP_TIMEOUT = 30.0


def master_ip_up(plan: netns.NetPlan) -> bool:
    """Whether the master IP is on the master node's br0."""
    proc = subprocess.run(["ip", "-n", plan.node_ns(1), "-o", "-4", "address", "show",
                           "dev", "br0"], capture_output=True, text=True, check=False)
    return f" {plan.master_ip}/" in proc.stdout


def wait_master_ip(vc: Any, ctx: Context, timeout: float = MASTER_IP_TIMEOUT) -> bool:
    """After masterd started: wait until it has activated the master IP (what clients
    at the cluster's address need), and say so; a warning if it did not."""
    plan = plan_of(vc)
    if plan is None:
        return False
    if daemons.wait_for(functools.partial(master_ip_up, plan), timeout, interval=0.2):
        ctx.out(f"Master IP {plan.master_ip} up on {vc.master}'s br0")
        return True
    ctx.err(f"Warning: the master IP {plan.master_ip} is not up after {timeout:g}s "
            "(see the master daemon's log)")
    return False


def stop_node_services(vc: Any, ctx: Context) -> list[str]:
    """After the daemons stopped: every node's domains and libvirt daemons."""
    if plan_of(vc) is None or not vc.libvirt:
        return []
    return [f"{what}@{node.name}" for node in reversed(vc.nodes)
            for what in stop_libvirt(node.root)]


def remove_network(vc: Any, ctx: Context) -> None:
    """Kill what is left inside the cluster's namespaces, then remove them."""
    plan = plan_of(vc)
    if plan is None:
        return
    if netns.kill_all(plan, signal.SIGTERM):
        daemons.wait_for(lambda: not any(netns.pids_in(ns) for ns in netns.existing(plan)),
                         10.0)
        leftover = netns.kill_all(plan, signal.SIGKILL)
        if leftover:
            ctx.err(f"Killed leftover processes {', '.join(map(str, leftover))}")
            daemons.wait_for(lambda: not any(netns.pids_in(ns) for ns in netns.existing(plan)),
                             5.0)
    removed = netns.delete_network(plan)
    if removed:
        ctx.out(f"Removed network namespaces {', '.join(removed)}")


# -- ganeti-vcluster exec -------------------------------------------------------------

def setup_exec(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", metavar="DIR", help="directory of the virtual cluster")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--node", help="run in this node's namespace (default: the master)")
    where.add_argument("--client", action="store_true",
                       help="run in the client namespace (on the cluster's network, no node)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD",
                   help="the command and its arguments, after '--' (--node/--client may "
                        "also come after DIR)")


def split_exec_args(node: str | None, client: bool,
                    argv: list[str]) -> tuple[str | None, bool, list[str]]:
    """``--node NAME``/``--client`` given after DIR (argparse leaves them in the
    remainder) and the command after ``--``: ``(node, client, command)``."""
    rest = list(argv)
    while rest and rest[0] != "--":
        if rest[0] == "--client":
            client = True
            rest.pop(0)
        elif rest[0] == "--node" and len(rest) > 1:
            node = rest[1]
            del rest[:2]
        elif rest[0].startswith("--node="):
            node = rest.pop(0).split("=", 1)[1]
        else:
            break
    if rest and rest[0] == "--":
        rest.pop(0)
    if node and client:
        raise UsageError("exec: give --node or --client, not both")
    return node, client, rest


def exec_argv(vc: Any, node: str | None, client: bool, argv: list[str]) -> list[str]:
    """The full command line of ``exec``: the namespace wrapper, the node's environment
    (GANETI_ROOTDIR/GANETI_HOSTNAME, its LVM_SYSTEM_DIR; none for the client), then
    ``argv``."""
    plan = plan_of(vc)
    if plan is None:
        raise errors.OpPrereqError(f"{vc.directory} is a loopback virtual cluster; 'exec' "
                                   "needs one created with --namespaces", errors.ECODE_INVAL)
    if not argv:
        raise UsageError("exec needs a command after '--'")
    if client:
        return netns.wrapper(plan.client_ns, hosts_file(vc)) + argv
    target = vc.node(node)
    env = dict(target.paths.env())
    env.update(vcluster_lvm.lvm_env(target.root))
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    env["PATH"] = f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    if vc.libvirt:
        env["GANETI_LIBVIRT_URI"] = libvirt_uri(target.root)
    return netns.wrapper(plan.node_ns(node_index(vc, target)), hosts_file(vc), env) + argv

