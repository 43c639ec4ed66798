"""Run inside a fresh network namespace (``unshare --net``) by test_masterip_netns.py:
make a bridge br0, then drive the master IP node calls against it and print what
``ip -o address show dev br0`` says after each step, as JSON on standard output.

Not a test module itself (no ``test_`` prefix); needs root in the namespace.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile

from twisted.internet.task import Clock
from twisted.python.failure import Failure

from ganeti.core.paths import Paths
from ganeti.noded.backend import masterip
from ganeti.noded.backend.context import NodeContext, inline_runner

PARAMS = {"uuid": "u-1", "ip": "10.77.0.254", "netmask": 24, "netdev": "br0",
          "ip_family": socket.AF_INET}


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True,
                          text=True).stdout


def addresses() -> list[str]:
    """The global addresses of br0 as ``addr/prefix label``."""
    out = []
    for line in ip("-o", "address", "show", "dev", "br0").splitlines():
        words = [w.rstrip("\\") for w in line.split()]
        at = words.index("scope") if "scope" in words else -1
        if at < 0 or words[at + 1] != "global":
            continue
        label = words[at + 2] if words[2] == "inet" else ""  # the label (IPv4 only)
        out.append(f"{words[3]} {label}".strip())
    return out


def outcome(d: object) -> str:
    """"ok" or the failure's message (inline runner: the Deferred has fired)."""
    box: list[object] = []
    d.addBoth(box.append)  # type: ignore[attr-defined]
    assert box, "the call did not finish at once"
    return str(box[0].value) if isinstance(box[0], Failure) else "ok"


def main() -> int:
    ip("link", "set", "lo", "up")
    ip("link", "add", "br0", "type", "bridge")
    ip("link", "set", "br0", "up")
    with tempfile.TemporaryDirectory() as tmp:
        ctx = NodeContext(paths=Paths.for_node(os.path.join(tmp, "n1"), "n1"),
                          clock=Clock(), run=inline_runner)
        steps: list[list[object]] = []

        def step(name: str, d: object) -> None:
            steps.append([name, outcome(d), addresses()])

        step("activate", masterip.node_activate_master_ip(ctx, PARAMS, False))
        step("activate again", masterip.node_activate_master_ip(ctx, PARAMS, False))
        step("netmask", masterip.node_change_master_netmask(ctx, 24, 16, "10.77.0.254",
                                                            "br0"))
        step("deactivate old mask", masterip.node_deactivate_master_ip(ctx, PARAMS, False))
        step("deactivate", masterip.node_deactivate_master_ip(
            ctx, {**PARAMS, "netmask": 16}, False))
        step("deactivate again", masterip.node_deactivate_master_ip(
            ctx, {**PARAMS, "netmask": 16}, False))
        v6 = {**PARAMS, "ip": "fd77::fe", "netmask": 64, "ip_family": socket.AF_INET6}
        step("activate v6", masterip.node_activate_master_ip(ctx, v6, False))
        step("deactivate v6", masterip.node_deactivate_master_ip(ctx, v6, False))
        step("no such device", masterip.node_activate_master_ip(
            ctx, {**PARAMS, "netdev": "br9"}, False))
        # not root: the script fails cleanly (exit status 1, the kernel's refusal)
        env = {**masterip.script_env(masterip.parse_master_params(PARAMS))}
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               *masterip.default_script(), "start"], env=env,
                              capture_output=True, text=True, check=False)
        steps.append(["not root", f"{proc.returncode}: {proc.stderr.strip()}", addresses()])
    json.dump(steps, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
