"""The real-VM part of ganeti-vcluster demo: one kvm instance (QEMU through the node's
libvirtd) with the busybox OS, a file disk and a bridged NIC with an address in the
node subnet; wait for its ready line on the serial console, show the console, leave
it running with what to try next."""

from __future__ import annotations

import os
import re
import shlex
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
    return ["gnt-instance", "add", "-t", "file", "-o", "busybox", "-H", constants.HT_KVM,
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
            f"br0 with {ip}, the busybox OS on a file disk:")
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
    tool = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "ganeti-vcluster")
    d = shlex.quote(vc.directory)
    ctx.out(f"{name} stays running. Try:")
    ctx.out(f"  {tool} exec {d} -- gnt-instance console {name}   (Ctrl-] leaves)")
    ctx.out(f"  {tool} exec {d} --node {vc.nodes[-1].name.split('.')[0]} -- "
            f"busybox ping -c 3 {ip}")
    ctx.out(f"  {tool} exec {d} --client -- curl -k "
            f"https://{plan.master_ip}:{constants.DEFAULT_RAPI_PORT}/dashboard/")
    return int(failed != 0)
