"""Where every file of a node lives.

Honours Ganeti's virtual-cluster variables exactly as Ganeti does:
``GANETI_ROOTDIR`` prefixes every path and ``GANETI_HOSTNAME`` replaces the
node's host name.  Both are set together or not at all, and the last
component of the root directory must be the host name, so that one machine
can hold many nodes under ``<dir>/<node name>``.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from ganeti.core import constants
from ganeti.core.errors import ConfigurationError

ROOTDIR_ENV = "GANETI_ROOTDIR"
HOSTNAME_ENV = "GANETI_HOSTNAME"

#: Where instance exports live on a node (Ganeti's EXPORT_DIR), below the root.
EXPORT_DIR = "/srv/ganeti/export"
#: Where OS definitions are looked for, in order (Ganeti's OS_SEARCH_PATH); a
#: virtual node has them under its root directory.
OS_SEARCH_PATH = ("/srv/ganeti/os", "/usr/local/lib/ganeti/os", "/usr/lib/ganeti/os",
                  "/usr/share/ganeti/os")


def shipped_os_dir(name: str = "") -> str:
    """The OS definitions this project ships (``share/os/<name>``): in the source tree,
    else where setup.py installs them (``<prefix>/share/ganeti/os``)."""
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "share", "os")
    installed = os.path.join(sys.prefix, "share", "ganeti", "os")
    base = source if os.path.isdir(source) else installed
    return os.path.join(base, name) if name else base


def _resolve_root_and_host(environ: Mapping[str, str]) -> tuple[str, str | None]:
    root = environ.get(ROOTDIR_ENV) or ""
    host = environ.get(HOSTNAME_ENV) or None
    if root:
        if not os.path.isabs(root):
            raise ConfigurationError(f"{ROOTDIR_ENV} must be an absolute path, not {root!r}")
        root = os.path.normpath(root)
    if bool(root) != bool(host):
        raise ConfigurationError(
            f"{ROOTDIR_ENV} and {HOSTNAME_ENV} must be set together (got "
            f"{ROOTDIR_ENV}={root!r}, {HOSTNAME_ENV}={host!r})")
    if root and os.path.basename(root) != host:
        raise ConfigurationError(
            f"the last component of {ROOTDIR_ENV} ({root}) must be the node name {host!r}")
    return root, host


@dataclass(frozen=True)
class Paths:
    """All paths of one node; build with :meth:`from_env` or :meth:`for_node`."""

    root: str
    hostname: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Paths:
        """Paths of the node named by the environment (default: ``os.environ``)."""
        env = os.environ if environ is None else environ
        root, host = _resolve_root_and_host(env)
        return cls(root=root, hostname=host or socket.getfqdn())

    @classmethod
    def for_node(cls, root: str, hostname: str) -> Paths:
        """Paths of a virtual node whose root directory is ``root``."""
        return cls.from_env({ROOTDIR_ENV: root, HOSTNAME_ENV: hostname})

    def env(self) -> dict[str, str]:
        """The environment variables that select this node (empty for a real node)."""
        if not self.root:
            return {}
        return {ROOTDIR_ENV: self.root, HOSTNAME_ENV: self.hostname}

    def _p(self, path: str) -> str:
        return self.root + path

    # Top-level directories
    @property
    def data_dir(self) -> str:
        """Persistent state: config, keys, ssconf, job queue."""
        return self._p("/var/lib/ganeti")

    @property
    def run_dir(self) -> str:
        """Runtime state: pid files, sockets."""
        return self._p("/var/run/ganeti")

    @property
    def log_dir(self) -> str:
        """One log file per daemon."""
        return self._p("/var/log/ganeti")

    @property
    def conf_dir(self) -> str:
        """Administrator-maintained settings (``/etc/ganeti``)."""
        return self._p("/etc/ganeti")

    @property
    def socket_dir(self) -> str:
        """UNIX sockets of the daemons."""
        return os.path.join(self.run_dir, "socket")

    @property
    def luxi_socket(self) -> str:
        """The LUXI socket of the master daemon."""
        return os.path.join(self.socket_dir, "ganeti-query")

    @property
    def wconfd_socket(self) -> str:
        """The WConfD socket (Ganeti's ``ganeti-wconfd``; served by the master daemon)."""
        return os.path.join(self.socket_dir, "ganeti-wconfd")

    # Files in DATA_DIR
    @property
    def config_file(self) -> str:
        """The cluster configuration, ``config.data``."""
        return os.path.join(self.data_dir, "config.data")

    @property
    def server_pem(self) -> str:
        """Cluster certificate and key for node RPC (mutual TLS)."""
        return os.path.join(self.data_dir, "server.pem")

    @property
    def rapi_pem(self) -> str:
        """Certificate and key of the RAPI daemon."""
        return os.path.join(self.data_dir, "rapi.pem")

    @property
    def hmac_key(self) -> str:
        """The confd HMAC key."""
        return os.path.join(self.data_dir, "hmac.key")

    @property
    def cluster_domain_secret(self) -> str:
        """Secret shared between clusters of one domain (instance moves)."""
        return os.path.join(self.data_dir, "cluster-domain-secret")

    @property
    def known_hosts(self) -> str:
        """The cluster's SSH known_hosts file."""
        return os.path.join(self.data_dir, "known_hosts")

    @property
    def ssh_pub_keys(self) -> str:
        """The nodes' public SSH keys (``ganeti_pub_keys``)."""
        return os.path.join(self.data_dir, "ganeti_pub_keys")

    @property
    def rapi_users_dir(self) -> str:
        """Directory of the RAPI users file."""
        return os.path.join(self.data_dir, "rapi")

    @property
    def rapi_users(self) -> str:
        """The RAPI users file."""
        return os.path.join(self.rapi_users_dir, "users")

    @property
    def queue_dir(self) -> str:
        """The job queue."""
        return os.path.join(self.data_dir, "queue")

    @property
    def queue_archive_dir(self) -> str:
        """Archived jobs."""
        return os.path.join(self.queue_dir, "archive")

    @property
    def queue_serial(self) -> str:
        """Last job id handed out."""
        return os.path.join(self.queue_dir, "serial")

    @property
    def queue_version(self) -> str:
        """Job queue format version."""
        return os.path.join(self.queue_dir, "version")

    @property
    def queue_drain(self) -> str:
        """Exists while the queue is drained."""
        return os.path.join(self.queue_dir, "drain")

    @property
    def queue_lock(self) -> str:
        """Lock file of the queue owner."""
        return os.path.join(self.queue_dir, "lock")

    @property
    def watcher_pause_file(self) -> str:
        """Holds the time until which the watcher is paused."""
        return os.path.join(self.data_dir, "watcher.pause")

    @property
    def watcher_lock_file(self) -> str:
        """Taken (shared) by every ganeti-watcher run; Ganeti's LOCK_DIR/ganeti-watcher.lock."""
        return self._p("/var/lock/ganeti-watcher.lock")

    def watcher_group_state_file(self, group_uuid: str) -> str:
        """The watcher's per-group state (boot ids, restart counts), locked while in use."""
        return os.path.join(self.data_dir, f"watcher.{group_uuid}.data")

    def watcher_group_instance_status_file(self, group_uuid: str) -> str:
        """The per-group instance status the watcher writes."""
        return os.path.join(self.data_dir, f"watcher.{group_uuid}.instance-status")

    @property
    def instance_status_file(self) -> str:
        """The merged instance status of every group (RUN_DIR/instance-status)."""
        return os.path.join(self.run_dir, "instance-status")

    @property
    def hooks_base_dir(self) -> str:
        """The per-opcode hook directories ``<hpath>-<phase>.d`` (Ganeti's HOOKS_BASE_DIR,
        CONF_DIR/hooks)."""
        return os.path.join(self.conf_dir, "hooks")

    @property
    def watcher_hooks_dir(self) -> str:
        """Scripts ganeti-watcher runs on every node (CONF_DIR/hooks/watcher)."""
        return os.path.join(self.conf_dir, "hooks", "watcher")

    @property
    def os_search_path(self) -> tuple[str, ...]:
        """The directories searched for OS definitions, in order (:data:`OS_SEARCH_PATH`
        under the node's root)."""
        return tuple(self._p(p) for p in OS_SEARCH_PATH)

    @property
    def export_dir(self) -> str:
        """Instance exports, one directory each (Ganeti's EXPORT_DIR)."""
        return self._p(EXPORT_DIR)

    @property
    def os_log_dir(self) -> str:
        """The logs of OS script runs (Ganeti's LOG_OS_DIR, ``LOG_DIR/os``)."""
        return os.path.join(self.log_dir, "os")

    def ssconf_file(self, key: str) -> str:
        """The ssconf file for ``key`` (e.g. ``master_node``)."""
        return os.path.join(self.data_dir, "ssconf_" + key)

    # Per-daemon files
    def pid_file(self, daemon: str) -> str:
        """``RUN_DIR/<daemon>.pid``."""
        return os.path.join(self.run_dir, daemon + ".pid")

    def log_file(self, daemon: str) -> str:
        """The log file of a daemon under LOG_DIR."""
        return os.path.join(self.log_dir, constants.DAEMON_LOG_FILES.get(daemon, daemon + ".log"))
