"""ganeti-vcluster's command table and entry point.

The commands live in :mod:`ganeti.cli.vcluster` (create, start, stop, status,
env, destroy, exec), :mod:`ganeti.cli.vcluster_ns` (exec's arguments) and
:mod:`ganeti.cli.vcluster_demo` (demo); this module joins them, so that neither
imports the other's caller.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ganeti.cli import vcluster, vcluster_demo, vcluster_ns
from ganeti.cli.framework import Command, run_tool

COMMANDS = [
    Command("create", vcluster.cmd_create, "Create a virtual cluster in DIR (daemons left stopped, "
            "or running with --start)",
            vcluster.setup_create),
    Command("start", vcluster.cmd_start, "Start the daemons that are not running (noded on every "
            "node, then masterd)", vcluster.setup_dir),
    Command("stop", vcluster.cmd_stop, "Stop all daemons and wait for them", vcluster.setup_dir),
    Command("status", vcluster.cmd_status, "List daemons with pid and state", vcluster.setup_dir),
    Command("env", vcluster.cmd_env, "Print export lines for a node (default: the master)",
            vcluster.setup_env),
    Command("exec", vcluster.cmd_exec, "Run a command inside a node's (or the client's) "
            "network namespace (clusters made with --namespaces)", vcluster_ns.setup_exec),
    Command("destroy", vcluster.cmd_destroy, "Stop everything and remove DIR", vcluster.setup_dir),
    Command("demo", vcluster_demo.cmd_demo, "Create (3 nodes)/start if needed, demonstrate, "
            "print how to use", vcluster.setup_demo),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/ganeti-vcluster."""
    return run_tool("ganeti-vcluster", vcluster.DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
