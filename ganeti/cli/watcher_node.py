"""What ganeti-watcher does on every node: daemons, watcher hooks, node health.

- :func:`ensure_node_daemons` starts ``ganeti-noded`` if it is not running, and
  ``ganeti-confd`` on a master candidate (Ganeti starts confd on every node,
  where it idles unless the node is a candidate; ours runs only on candidates);
- :func:`run_watcher_hooks` runs the executables in ``CONF_DIR/hooks/watcher``
  in name order (run-parts rules: names of letters, digits, ``_`` and ``-``),
  logging each outcome, as Ganeti;
- :class:`NodeMaintenance` runs when the cluster's ``maintain_node_health`` is
  set (ssconf ``maintain_node_health``): it asks the master candidates' confd
  for this node's role, and if the cluster has marked the node offline, it
  would shut down the instances and DRBD devices still active here.  Instances
  and DRBD are not written yet, so the lists of things to stop are empty;
  :meth:`NodeMaintenance.running_instances` and
  :meth:`NodeMaintenance.active_drbd_minors` are where they come in;
- :func:`rapi_responding` probes ``GET /version`` over HTTPS (401 counts as
  alive), as Ganeti's watcher does.
"""

from __future__ import annotations

import json
import logging
import os
import re
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from ganeti.cli import daemons
from ganeti.confd import client as confd_client
from ganeti.core import constants, errors, ssconf
from ganeti.core.paths import Paths

log = logging.getLogger("ganeti-watcher")

#: Names run-parts accepts (Ganeti's RUN_PARTS rule).
HOOK_NAME_RE = re.compile(r"[a-zA-Z0-9_-]+")
#: Seconds one watcher hook may run.
HOOK_TIMEOUT = 60.0
#: Seconds the RAPI probe may take.
RAPI_TIMEOUT = 10.0
#: What ``GET /version`` answers (Ganeti's RAPI_VERSION).
RAPI_VERSION = 2


def ssconf_lines(paths: Paths, key: str) -> list[str]:
    """The lines of an ssconf file ([] if it is missing)."""
    try:
        return [line for line in ssconf.read(paths, key).splitlines() if line.strip()]
    except errors.ConfigurationError:
        return []


def is_candidate(paths: Paths) -> bool:
    """Whether ssconf lists this node as a master candidate."""
    return paths.hostname in ssconf_lines(paths, "master_candidates")


def confd_available() -> bool:
    """Whether the ganeti-confd twistd plugin is installed."""
    try:
        from twisted.application.service import IServiceMaker
        from twisted.plugin import getPlugins
        return any(p.tapname == constants.CONFD for p in getPlugins(IServiceMaker))
    except Exception:  # a broken plugin cache: do not start what cannot be found
        return False


def ensure_daemon(paths: Paths, daemon: str, ip: str | None,
                  starter: Callable[[Paths, str, str], int] | None = None) -> bool:
    """Start ``daemon`` if its pid file names no live process; True if it was started."""
    if daemons.state(paths, daemon).state == daemons.RUNNING:
        return False
    if ip is None:
        log.error("Cannot start %s: this node's primary IP is not in ssconf", daemon)
        return False
    log.warning("%s is not running, starting it", daemon)
    try:
        (starter or daemons.start_on_node)(paths, daemon, ip)
    except errors.GenericError as err:
        log.error("Starting %s failed: %s", daemon, err)
        return False
    return True


def ensure_node_daemons(paths: Paths,
                        starter: Callable[[Paths, str, str], int] | None = None) -> list[str]:
    """Start the node's daemons that should run and do not; the ones started."""
    ip = ssconf.node_primary_ip(paths)
    wanted = [constants.NODED]
    if is_candidate(paths) and confd_available():
        wanted.append(constants.CONFD)
    return [d for d in wanted if ensure_daemon(paths, d, ip, starter)]


def run_watcher_hooks(paths: Paths) -> list[tuple[str, str]]:
    """Run the watcher hooks; ``(name, outcome)`` for each file seen."""
    directory = paths.watcher_hooks_dir
    if not os.path.isdir(directory):
        return []
    outcomes = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not (HOOK_NAME_RE.fullmatch(name) and os.path.isfile(path)
                and os.access(path, os.X_OK)):
            log.debug("Watcher hook %s: skipped", name)
            outcomes.append((name, "skipped"))
            continue
        try:
            proc = subprocess.run([path], cwd="/", capture_output=True, text=True,
                                  timeout=HOOK_TIMEOUT, env=dict(os.environ, **paths.env()),
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            log.warning("Watcher hook %s: error (%s)", name, err)
            outcomes.append((name, "error"))
            continue
        output = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            log.warning("Watcher hook %s: failed (exit: %d) (output: %s)", name,
                        proc.returncode, output)
            outcomes.append((name, "failed"))
        else:
            log.debug("Watcher hook %s: success (output: %s)", name, output)
            outcomes.append((name, "success"))
    return outcomes


class NodeMaintenance:
    """Keep a node the cluster marked offline quiet (``maintain_node_health``)."""

    def __init__(self, paths: Paths,
                 ask_role: Callable[[Paths], Any] | None = None) -> None:
        self.paths = paths
        self._ask_role = ask_role or self._confd_role

    @staticmethod
    def should_run(paths: Paths) -> bool:
        """Whether the cluster asks for node health maintenance."""
        values = ssconf_lines(paths, "maintain_node_health")
        return bool(values) and values[0].strip().lower() == "true"

    @staticmethod
    def _confd_role(paths: Paths) -> Any:
        result = confd_client.query_node(paths, "node-role", paths.hostname, coverage=-1)
        if not result.answered:
            log.warning("Confd query timed out, cannot do maintenance actions")
            return None
        if not result.consistent:
            log.warning("Inconsistent replies, not doing anything")
            return None
        return result.answer

    def running_instances(self) -> list[str]:
        """Instances running on this node (none until the hypervisor layer exists)."""
        return []

    def active_drbd_minors(self) -> list[int]:
        """DRBD minors in use on this node (none until DRBD storage exists)."""
        return []

    def run(self) -> list[str]:
        """Ask for our role; if offline, stop what must not run.  What was stopped."""
        try:
            role = self._ask_role(self.paths)
        except (OSError, errors.GenericError, confd_client.ConfdError) as err:
            log.warning("Cannot ask confd for this node's role: %s", err)
            return []
        if role != constants.CONFD_NODE_ROLE_OFFLINE:
            log.debug("Not doing anything for role %s", role)
            return []
        stopped = []
        instances = self.running_instances()
        if instances:
            log.info("Following instances should not be running, shutting them down: %s",
                     ", ".join(instances))
            stopped.extend(instances)
        minors = self.active_drbd_minors()
        if minors:
            log.info("Following DRBD minors should not be active, shutting them down: %s",
                     ", ".join(str(m) for m in minors))
            stopped.extend(f"drbd{m}" for m in minors)
        log.info("Node is offline: %d instance(s) and %d DRBD minor(s) were active",
                 len(instances), len(minors))
        return stopped


def rapi_responding(ip: str, port: int = constants.DEFAULT_RAPI_PORT,
                    timeout: float = RAPI_TIMEOUT) -> bool:
    """Whether RAPI answers ``GET /version`` with version 2 (or 401) over HTTPS."""
    host = f"[{ip}]" if ":" in ip else ip
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a liveness probe, not a trust decision
    try:
        with urllib.request.urlopen(f"https://{host}:{port}/version", timeout=timeout,
                                    context=context) as resp:
            version = json.loads(resp.read(1024))
    except urllib.error.HTTPError as err:
        if err.code == 401:
            return True
        log.warning("RAPI error: %s", err)
        return False
    except (OSError, ValueError) as err:
        log.warning("RAPI connection error: %s", err)
        return False
    log.debug("Reported RAPI version %s", version)
    return bool(version == RAPI_VERSION)
