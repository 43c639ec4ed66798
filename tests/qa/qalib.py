"""What the QA runner's ``ssh``/``scp`` shims share: the cluster's state file,
host name lookup and running a command "on" a node.

Ganeti's QA reaches every node with ``ssh -lroot NODE 'COMMAND'``.  Here a node is a
network namespace of a namespaced virtual cluster (``ganeti-vcluster create
--namespaces``), so "on NODE" means: inside that node's network namespace, with the
environment ``ganeti-vcluster exec --node NODE`` gives (``GANETI_ROOTDIR``,
``GANETI_HOSTNAME``, this checkout's tools first on ``PATH``), in a private mount
namespace where the node's own directories lie over the standard paths
(:data:`MAPPED_DIRS`), so that QA's ``cat /var/lib/ganeti/rapi.pem`` or ``ls
/srv/ganeti/os`` read that node's files, as on a real node.

Standard library only: the shims run under the machine's ``/usr/bin/python3``
next to Debian's Ganeti modules, never this project's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

#: Environment variable naming the runner's state file (``DIR/qa/state.json``).
STATE_ENV = "GANETI_QA_STATE"

#: The standard paths QA reads or writes on a node, mapped to ``<node root><path>``.
MAPPED_DIRS = ("/var/lib/ganeti", "/var/log/ganeti", "/etc/ganeti", "/srv")

#: ssh's options that take an argument (``-o X`` or ``-oX``).
SSH_ARG_OPTS = set("BbcDEeFIiJLlmOoPpQRSWw")

#: The script that runs a command on a node, inside its namespaces: bind-mount the
#: node's directories, then run the command as ssh does (the login shell, bash).
NODE_SCRIPT = f"""
root="$1"; shift
for d in {" ".join(MAPPED_DIRS)}; do
  mount --bind "$root$d" "$d" || exit 255
done
cd /root 2>/dev/null || cd /
exec bash -c "$1"
"""


def load_state() -> dict[str, Any]:
    """The runner's state file: nodes, namespaces, environments, hosts files."""
    path = os.environ.get(STATE_ENV)
    if not path:
        sys.stderr.write(f"ssh: {STATE_ENV} is not set (run through tests/qa/run.py)\n")
        sys.exit(255)
    with open(path, encoding="utf-8") as f:
        state: dict[str, Any] = json.load(f)
    return state


def find_node(state: dict[str, Any], host: str) -> dict[str, Any] | None:
    """The node whose name, short name or address is ``host`` (``user@`` dropped);
    the cluster name means the master."""
    host = host.rsplit("@", 1)[-1].rstrip(".")
    if host in (state["cluster_name"], state["cluster_name"].split(".")[0], state["master_ip"]):
        host = state["master"]
    for node in state["nodes"]:
        if host in (node["name"], node["name"].split(".")[0], node["ip"]):
            return node
    return None


def node_path(node: dict[str, Any] | None, path: str) -> str:
    """Where ``path`` as seen on ``node`` lies on the machine (None: the QA host)."""
    if node is None:
        return os.path.abspath(path)
    path = os.path.normpath(path)
    for d in MAPPED_DIRS:
        if path == d or path.startswith(d + "/"):
            return os.path.realpath(node["root"]) + path
    return os.path.realpath(path)


def node_argv(state: dict[str, Any], node: dict[str, Any], command: str) -> list[str]:
    """The command line that runs the shell command ``command`` on ``node``."""
    return ["nsenter", f"--net=/run/netns/{node['netns']}", "--",
            "unshare", "--mount", "--propagation", "private", "--",
            "sh", "-c", NODE_SCRIPT, "sh", node["root"], command]


def node_env(state: dict[str, Any], node: dict[str, Any]) -> dict[str, str]:
    """The environment of a command on ``node``: what ``ganeti-vcluster exec`` sets
    for it, QA's shims and blockers after this checkout's tools on ``PATH``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GANETI_") and k not in ("PYTHONPATH", "PATH")}
    env.update(node["env"])
    env[STATE_ENV] = os.environ[STATE_ENV]
    env["PATH"] = state["node_path"]
    env["HOME"] = "/root"
    return env


def sync_hosts(state: dict[str, Any]) -> None:
    """Copy QA's ``/etc/hosts`` (a file QA may replace with ``mv``) into the cluster's
    hosts file in place: the daemons see that file through a bind mount, which
    follows its inode, so it is rewritten, never replaced."""
    try:
        with open(state["qa_hosts"], encoding="utf-8") as f:
            wanted = f.read()
        with open(state["hosts_file"], "r+", encoding="utf-8") as f:
            if f.read() == wanted:
                return
            f.seek(0)
            f.write(wanted)
            f.truncate()
    except OSError as err:
        sys.stderr.write(f"ssh shim: cannot sync the hosts file: {err}\n")


def run_on(state: dict[str, Any], node: dict[str, Any], command: str,
           **kwargs: Any) -> int:
    """Run ``command`` on ``node``; its exit status (255 if killed by a signal)."""
    proc = subprocess.run(node_argv(state, node, command), env=node_env(state, node),
                          check=False, **kwargs)
    sync_hosts(state)
    return proc.returncode if proc.returncode >= 0 else 255
