"""The real-VM part of ganeti-vcluster demo: one kvm instance (QEMU through the node's
libvirtd) with the busybox OS, a ``sharedfile`` disk (the virtual cluster's shared
directory) and a bridged NIC with an address in the node subnet; wait for its ready
line on the serial console, show the console, live-migrate it to a node the
allocator chooses while the client namespace pings it, leave it running with what
to try next."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from ganeti.cli import vcluster_ns
from ganeti.cli.framework import Context
from ganeti.core import constants

#: The demo's real instance: (short name, node index).
KVM_INSTANCE = ("vm1", 1)
#: Seconds the guest may take to print its ready line (TCG boot ~3-5 s, more when
#: the machine is busy).
READY_TIMEOUT = 120.0
READY_MARKER = "GANETI-GUEST-READY"
#: The templates the demo's cluster allows (beside those of its volume groups, if it
#: has them): its guest's disk is ``sharedfile``, which moves (every node reaches the
#: shared directory).
DEMO_TEMPLATES = [constants.DT_FILE, constants.DT_DISKLESS, constants.DT_SHARED_FILE]
#: The guest's memory moves at this rate (MiB/s; Ganeti's default is 32).
DEMO_MIGRATION_BANDWIDTH = 1000
#: Pings to the guest while it migrates: interval and count (busybox ping).
PING_INTERVAL, PING_COUNT = 0.1, 60


def possible(vc: Any) -> bool:
    """Whether the demo can boot a real guest: namespaced, libvirt per node, kvm
    enabled, the guest files there."""
    return bool(vcluster_ns.plan_of(vc) and vc.libvirt
                and vcluster_ns.find_guest() is not None)


def console_log(vc: Any, node: Any, name: str) -> str:
    """``<node RUN_DIR>/kvm-hypervisor/console/<name>.log`` (interfaces item 3)."""
    return os.path.join(node.paths.run_dir, "kvm-hypervisor", "console", f"{name}.log")


def ready(log_text: str, name: str) -> bool:
    """Whether the console output holds the guest's ready line for ``name``."""
    wanted = {name, name.split(".")[0]}
    for line in log_text.splitlines():
        fields = line.strip().split()
        if len(fields) == 2 and fields[0] == READY_MARKER and fields[1] in wanted:
            return True
    return False


#: Terminal control sequences (CSI, OSC, the other ESC sequences) and the other control
#: characters but tab: what a guest's console holds that a terminal would act on.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
                      r"|\x1b[ -/]*[0-~]?|[\x00-\x08\x0b-\x1f\x7f]")


def printable(line: str) -> str:
    """A console line as plain text: busybox's shell asks the terminal where its
    cursor is (``ESC [ 6 n``), and printed as is, the user's terminal would answer
    into the shell's input."""
    return _CONTROL.sub("", line)


def wait_ready(path: str, name: str, timeout: float = READY_TIMEOUT,
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> str | None:
    """The console output once it holds the ready line, None after ``timeout``."""
    deadline = clock() + timeout
    while True:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        if ready(text, name):
            return text
        if clock() >= deadline:
            return None
        sleep(0.25)


def add_command(vc: Any, name: str, node: str, ip: str) -> list[str]:
    """``gnt-instance add`` for the demo's kvm instance."""
    return ["gnt-instance", "add", "-t", constants.DT_SHARED_FILE, "-o", "busybox",
            "-H", constants.HT_KVM,
            "--disk", "0:size=1G", "--net", f"0:ip={ip}", "--no-name-check",
            "--no-ip-check", "-B", "maxmem=128M,minmem=128M", "-n", node, name]


def demonstrate(ctx: Context, vc: Any, run_shown: Callable[..., int],
                existing: set[str]) -> int:
    """Create and boot the instance (start it if it exists: after ``stop`` it is down),
    show its console; the number of failures."""
    plan = vcluster_ns.plan_of(vc)
    assert plan is not None
    short, index = KVM_INSTANCE
    name = f"{short}.{vc.domain}"
    node = vc.nodes[min(index, len(vc.nodes) - 1)]
    ip = plan.instance_ip(0)
    ctx.out("")
    ctx.out(f"A real guest: QEMU through {node.name}'s own libvirtd, a bridged NIC on its "
            f"br0 with {ip}, the busybox OS on a sharedfile disk:")
    templates = ",".join(DEMO_TEMPLATES + ([constants.DT_PLAIN, constants.DT_DRBD8]
                                           if getattr(vc, "lvm", None) else []))
    if name not in existing and run_shown(ctx, vc, [
            "gnt-cluster", "modify", "--enabled-disk-templates", templates,
            "--ipolicy-disk-templates", templates,
            "-H", f"{constants.HT_KVM}:migration_bandwidth={DEMO_MIGRATION_BANDWIDTH}"]) != 0:
        return 1
    node = primary_of(vc, name) or node
    log = console_log(vc, node, name)
    command = (["gnt-instance", "start", name] if name in existing
               else add_command(vc, name, node.name, ip))
    if run_shown(ctx, vc, command) != 0:
        return 1
    text = wait_ready(log, name)
    if text is None:
        ctx.out(f"  no '{READY_MARKER} {name}' in {log} within {READY_TIMEOUT:g}s")
        return 1
    ctx.out(f"Its serial console ({log}):")
    for line in text.rstrip("\n").splitlines()[-15:]:
        ctx.out(f"  | {printable(line)}")
    failed = run_shown(ctx, vc, ["gnt-instance", "list", "-o", "name,hypervisor,status,"
                                 "oper_state,pnode,nic.ips", name])
    failed += migrate_while_pinging(ctx, vc, run_shown, name, ip)
    tool = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "ganeti-vcluster")
    d = shlex.quote(vc.directory)
    ctx.out(f"{name} stays running. Try:")
    ctx.out(f"  {tool} exec {d} -- gnt-instance console {name}   (Ctrl-] leaves)")
    ctx.out(f"  {tool} exec {d} --node {vc.nodes[-1].name.split('.')[0]} -- "
            f"busybox ping -c 3 {ip}")
    ctx.out(f"  {tool} exec {d} --client -- curl -k "
            f"https://{plan.master_ip}:{constants.DEFAULT_RAPI_PORT}/dashboard/")
    return int(failed != 0)


def primary_of(vc: Any, name: str) -> Any:
    """The node that runs ``name`` now (a demo run before may have migrated it); None
    if the cluster does not know it."""
    env = dict(os.environ)
    env.update(vc.node(None).paths.env())
    tool = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "gnt-instance")
    proc = subprocess.run([tool, "list", "--no-headers", "-o", "pnode", name], env=env,
                          capture_output=True, text=True, check=False)
    wanted = proc.stdout.strip() if proc.returncode == 0 else ""
    return next((n for n in vc.nodes if n.name == wanted), None)


def migrate_while_pinging(ctx: Context, vc: Any, run_shown: Callable[..., int], name: str,
                          ip: str) -> int:
    """Live-migrate ``name`` to the node the allocator chooses while the client
    namespace pings the guest; show the pings' summary.  The number of failures."""
    ctx.out("")
    ctx.out(f"Live migration: {name} moves to another node (the allocator chooses it; "
            "its disk is in the shared directory, its memory moves) while the client "
            f"namespace pings {ip} every {PING_INTERVAL:g}s:")
    ping = subprocess.Popen(
        vcluster_ns.exec_argv(vc, None, True, ["busybox", "ping", "-q", "-i",
                                               f"{PING_INTERVAL:g}", "-c", str(PING_COUNT),
                                               ip]),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.0)  # a few answers from the source first
        failed = run_shown(ctx, vc, ["gnt-instance", "migrate", "-f", name])
        out, _ = ping.communicate(timeout=PING_INTERVAL * PING_COUNT + 30)
    finally:
        if ping.poll() is None:
            ping.kill()
            ping.wait()
    for line in out.splitlines():
        if "packets" in line:
            ctx.out(f"  ping {ip}: {line.strip()}")
    failed += run_shown(ctx, vc, ["gnt-instance", "list", "-o", "name,status,oper_state,pnode",
                                  name])
    return int(failed != 0)
