"""Cases: instance commands that change an instance and put it back, or that are refused
(issue 34).  Both sides start with ``inst11`` (file, running) and ``inst12`` (diskless,
stopped) on node1 (sides.py); each case leaves them as it found them.  The names do not
resolve on our side's host, so renames skip the name check (the real client then asks
unless ``-f``)."""

from __future__ import annotations

from tests.integration.oracle.model import cli

RUNNING = "inst11.example.com"
STOPPED = "inst12.example.com"
STATUS = ("gnt-instance", "list", "-o", "name,pnode,snodes,admin_state,status")

CASES = [
    cli("instance-rename-same-name", "gnt-instance", "rename", "--no-name-check",
        "--no-ip-check", "-f", STOPPED, STOPPED, then=[STATUS]),
    cli("instance-modify-online-stopped", "gnt-instance", "modify", "--online", STOPPED,
        then=[STATUS]),
    cli("instance-modify-offline-running", "gnt-instance", "modify", "--offline", RUNNING),
    cli("instance-modify-online-running", "gnt-instance", "modify", "--online", RUNNING),
    cli("instance-modify-new-primary-running", "gnt-instance", "modify", "--new-primary",
        "node2.example.com", RUNNING, then=[STATUS]),
    cli("instance-recreate-disks-running", "gnt-instance", "recreate-disks", "-n",
        "node2.example.com", RUNNING),
    cli("instance-recreate-disks-spindles-running", "gnt-instance", "recreate-disks",
        "--disk=0:spindles=2", RUNNING),
    cli("instance-recreate-disks-diskless", "gnt-instance", "recreate-disks", STOPPED),
    cli("instance-recreate-disks-node-count", "gnt-instance", "recreate-disks", "-n",
        "node2.example.com:node3.example.com", STOPPED),
    cli("instance-recreate-disks-unknown-node", "gnt-instance", "recreate-disks", "-n",
        "nope.example.com", STOPPED),
    cli("instance-recreate-disks-nodes-and-allocator", "gnt-instance", "recreate-disks",
        "-n", "node2.example.com", "-I", "hail", STOPPED),
]
