"""A virtual node's files before its daemons start, and the loopback addresses of
virtual clusters: what ``ganeti-vcluster create`` prepares on each node (the part
an administrator, or Ganeti's SSH step of ``gnt-node add``, does on a real one)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ganeti.cli import daemons
from ganeti.core import constants, errors, fileutil
from ganeti.core.paths import Paths, shipped_os_dir

if TYPE_CHECKING:
    from ganeti.cli.vcluster import VNode


def node_dirs(paths: Paths) -> list[tuple[str, int]]:
    """The directories a node needs before it is added (what Ganeti's node setup
    leaves behind), with their modes; the master fills them through the node daemon."""
    return [(paths.data_dir, 0o755), (paths.queue_dir, 0o700),
            (paths.queue_archive_dir, 0o700), (paths.run_dir, 0o775),
            (paths.socket_dir, 0o750), (paths.log_dir, 0o750)]


def prepare_node(master: VNode, node: VNode) -> None:
    """Make ``node`` ready to be added: its directories and the cluster certificate.

    On a real cluster ``gnt-node add`` copies ``server.pem`` over SSH; here it
    is copied from the master's DATA_DIR (mode 0600) so that the node daemon
    can start and accept the master's calls.
    """
    fileutil.ensure_dirs(node_dirs(node.paths))
    fileutil.atomic_write(node.paths.server_pem, fileutil.read_file(master.paths.server_pem),
                          mode=0o600)


def link_os_definitions(paths: Paths) -> None:
    """Put the project's own OS definitions (share/os) on a node's OS search path:
    a link each in its first directory, as a package would install them."""
    top = paths.os_search_path[0]
    shipped = shipped_os_dir()
    if not os.path.isdir(shipped):
        return
    os.makedirs(top, exist_ok=True)
    for name in sorted(os.listdir(shipped)):
        link = os.path.join(top, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(shipped, name), link)


def allow_file_storage(paths: Paths, directories: list[str], master_root: str,
                       shared: dict[str, str] | None = None) -> None:
    """List the cluster's file storage directories in the node's
    ``CONF_DIR/file-storage-paths`` (Ganeti's file: without it the node daemon
    accepts no file disk), as an administrator does on a real node, and make them
    below the node's root (the config names the master's; each node daemon uses
    the same place below its own root).  A directory in ``shared`` (the config's
    path -> one directory of the machine) is that directory on every node, as a
    cluster file system is: what ``sharedfile`` needs to move instances."""
    os.makedirs(paths.conf_dir, exist_ok=True)
    fileutil.atomic_write(os.path.join(paths.conf_dir, "file-storage-paths"),
                          "".join(f"{d}\n" for d in directories if d), mode=0o644)
    for d in directories:
        if not d or not d.startswith(master_root + "/"):
            continue
        local = paths.root + d[len(master_root):]
        target = (shared or {}).get(d)
        if target is None:
            os.makedirs(local, 0o750, exist_ok=True)
            continue
        os.makedirs(target, 0o750, exist_ok=True)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        if not os.path.islink(local):
            os.symlink(os.path.abspath(target), local)


def ip_base_of(node: VNode) -> str:
    """The ``--ip-base`` a node's address was made from (``127.0.1.`` for 127.0.1.3)."""
    return node.ip.rsplit(".", 1)[0] + "."


def suggest_ip_base(count: int, avoid: str) -> str | None:
    """A ``127.0.<n>.`` base whose first ``count`` addresses are free on the noded port."""
    for third in range(2, 251):
        base = f"127.0.{third}."
        if base == avoid:
            continue
        try:
            for k in range(1, count + 1):
                daemons.check_address_free(f"{base}{k}", constants.DEFAULT_NODED_PORT)
        except errors.CommandError:
            continue
        return base
    return None


def address_in_use_error(err: daemons.AddressInUse, node: VNode, count: int,
                         directory: str, creating: bool) -> errors.CommandError:
    """The error for a taken node address, with what to do about it."""
    base = ip_base_of(node)
    other = suggest_ip_base(count, base)
    example = f" (for example --ip-base {other})" if other else ""
    if creating:
        advice = f"create the cluster with another --ip-base{example}"
    else:
        advice = (f"or remove this one ('ganeti-vcluster destroy {directory}') and create it "
                  f"again with another --ip-base{example}")
        advice = f"stop the other cluster ('ganeti-vcluster stop <its DIR>'), {advice}"
    return errors.CommandError(
        f"{err.args[0]}. Probably another virtual cluster with --ip-base {base} is running "
        f"(one of its daemons listens on {err.address}:{err.port}); {advice}")
