"""``ganeti-noded``, ``ganeti-rapi``, ``ganeti-confd``, ``ganeti-masterd``, and Ganeti's
``ganeti-luxid`` and ``ganeti-wconfd``: the daemons' program names, as Ganeti ships
them.

Each daemon is a twistd plugin; these programs start it as the node's daemon
(``twistd --pidfile RUN_DIR/<daemon>.pid --logfile LOG_DIR/<its log> --umask 0027
<plugin> [options]``, in the background unless ``-f``/``--foreground``), and answer
``--version`` and ``--help`` themselves.  Ganeti 3.0 runs ``ganeti-luxid`` (queries
and jobs) and ``ganeti-wconfd`` (configuration and locks) as two daemons; here
``ganeti-masterd`` holds both roles (it serves both sockets), so these two names
start ``ganeti-masterd`` unless it already runs on this node, in which case they
say so and exit 0 (Ganeti's start-up scripts start both).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TextIO

from ganeti import version
from ganeti.cli import daemons
from ganeti.core import constants
from ganeti.core.paths import Paths

#: Program name -> the plugin it runs.
PROGRAMS: dict[str, str] = {
    "ganeti-noded": constants.NODED, "ganeti-rapi": constants.RAPI,
    "ganeti-confd": constants.CONFD, "ganeti-masterd": constants.MASTERD,
    "ganeti-luxid": constants.MASTERD, "ganeti-wconfd": constants.MASTERD,
}


def version_line(program: str) -> str:
    """What ``--version`` prints (the first line of Ganeti's, with our package)."""
    return (f"{program} (ganeti-twisted {version.PACKAGE_VERSION}) "
            f"{constants.RELEASE_VERSION}")


def usage(program: str) -> str:
    """What ``--help`` prints."""
    plugin = PROGRAMS[program]
    role = (f"\nGaneti runs {program} as a daemon of its own; here {plugin} holds its "
            f"role.\nIf {plugin} already runs, this says so and exits 0.\n"
            if plugin != program else "")
    return (f"Usage: {program} [-f|--foreground] [{plugin} options]\n"
            f"       {program} --version | --help\n\n"
            f"Starts {plugin} (twistd plugin) with this node's pid file and log file, in the "
            "background\nunless -f is given. Its options: twistd "
            f"{plugin} --help; man {plugin}(8).\n{role}")


def main(program: str, argv: Sequence[str] | None = None, stdout: TextIO | None = None,
         environ: dict[str, str] | None = None) -> int:
    """Answer ``--version``/``--help``, else start the daemon (replaces this process)."""
    out = sys.stdout if stdout is None else stdout
    args = list(sys.argv[1:] if argv is None else argv)
    plugin = PROGRAMS[program]
    if "--version" in args:
        out.write(version_line(program) + "\n")
        return constants.EXIT_SUCCESS
    if "-h" in args or "--help" in args:
        out.write(usage(program))
        return constants.EXIT_SUCCESS
    paths = Paths.from_env(os.environ if environ is None else environ)
    if plugin != program and daemons.state(paths, plugin).state == daemons.RUNNING:
        out.write(f"{program}: {plugin}, which holds this role, is running\n")
        return constants.EXIT_SUCCESS
    foreground = [a for a in args if a in ("-f", "--foreground")]
    rest = [a for a in args if a not in foreground]
    os.makedirs(paths.run_dir, exist_ok=True)
    os.makedirs(paths.log_dir, exist_ok=True)
    twistd = daemons.twistd_path()
    cmd = [twistd, "--pidfile", paths.pid_file(plugin), "--logfile",
           paths.log_file(plugin), "--umask", "0027", *(["--nodaemon"] if foreground else []),
           plugin, *rest]
    os.execv(twistd, cmd)
    return constants.EXIT_FAILURE  # pragma: no cover (execv does not return)
