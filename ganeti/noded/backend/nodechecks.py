"""The machine checks of node_verify: setup, certificate, memory, scripts, storage, network.

Each function is blocking and runs in the thread pool (through
:func:`ganeti.noded.backend.verify.collect`).  Paths arrive as wire paths
and are looked up under this node's root first (a virtual cluster), then
as they are.
"""

from __future__ import annotations

import os
import socket
import stat
from typing import Any

from ganeti.core import certverify, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend.info import collect_node_info
from ganeti.noded.bdev import files
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.files import FILE_STORAGE_PATHS

#: Seconds a node daemon port may take to accept a connection (Ganeti: 10).
TCP_PING_TIMEOUT = 10.0

_FORBIDDEN_STORAGE = frozenset(
    ["/boot", "/dev", "/etc", "/home", "/proc", "/root", "/sys"]
    + [f"{prefix}/{d}" for prefix in ("", "/usr", "/usr/local")
       for d in ("bin", "lib", "lib32", "lib64", "sbin")])


def local_path(paths: Paths, wire: str) -> str:
    """Where a wire path lives on this node: under its root if it exists there."""
    rooted = rpcdefs.from_wire_path(paths.root, wire)
    if rooted != wire and not os.path.lexists(rooted) and os.path.lexists(wire):
        return wire
    return rooted


def node_setup(proc: str = "/proc", sys_dir: str = "/sys") -> list[str]:
    """What is wrong with this machine's setup (Ganeti's checks of /sys and /proc)."""
    problems = []
    if not (os.path.isdir(os.path.join(sys_dir, "block"))
            and os.path.isdir(os.path.join(sys_dir, "class/net"))):
        problems.append("The sysfs filesytem doesn't seem to be mounted under /sys, "
                        "missing required directories /sys/block and /sys/class/net")
    if not (os.path.isdir(os.path.join(proc, "sys"))
            and os.path.isfile(os.path.join(proc, "sysrq-trigger"))):
        problems.append("The procfs filesystem doesn't seem to be mounted under /proc, "
                        "missing required directory /proc/sys and the file "
                        "/proc/sysrq-trigger")
    return problems


def client_cert(paths: Paths, now: float) -> list[Any]:
    """``[None, digest]`` for a good node certificate, else ``[level, message]``."""
    try:
        with open(paths.server_pem, "rb") as f:
            pem: bytes | None = f.read()
    except FileNotFoundError:
        pem = None
    except OSError as err:
        return ["ERROR", f"Failed to load X509 certificate {paths.server_pem}: {err}"]
    if pem is None:
        return ["ERROR", "The client certificate does not exist. Run 'gnt-cluster "
                         "renew-crypto --new-node-certificates' to create client "
                         "certificates for all nodes."]
    level, message = certverify.verify_certificate(pem, paths.server_pem, now)
    if level is not None:
        return [level, message]
    return [None, certverify.certificate_digest(pem)]


def is_executable(path: str) -> bool:
    """A regular file its owner may execute."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IXUSR)


def oob_path(path: str, shown: str) -> str | None:
    """None if ``path`` is a usable out-of-band helper, else what is wrong."""
    try:
        st = os.stat(path)
    except OSError as err:
        return f"error stating out of band helper: {err}"
    if not stat.S_ISREG(st.st_mode):
        return f"out of band helper {shown} is not a file"
    if not st.st_mode & stat.S_IXUSR:
        return f"out of band helper {shown} is not executable"
    return None


def storage_path_problem(paths: Paths, wire: str) -> str | None:
    """None if the storage directory is usable, else why not (Ganeti's
    ``CheckFileStoragePath``: the node must allow it in its ``file-storage-paths``, the
    directory itself or one below a listed one, then it must exist and be writable)."""
    try:
        normalised = files.check_acceptable(paths, wire, exact_match_ok=True)
    except BlockDeviceError as err:
        return str(err)
    path = local_path(paths, normalised)
    if not os.path.isdir(path):
        return f"Path '{wire}' is not existing or not a directory."
    if not os.access(path, os.W_OK):
        return f"Path '{wire}' is not writable"
    return None


def wrong_storage_paths(paths: Paths) -> list[str]:
    """Listed file storage directories that are relative or under a system directory."""
    try:
        with open(os.path.join(paths.conf_dir, FILE_STORAGE_PATHS), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    listed = [os.path.normpath(line.strip()) for line in lines
              if line.strip() and not line.strip().startswith("#")]

    def wrong(path: str) -> bool:
        return not os.path.isabs(path) or any(
            path == bad or path.startswith(bad + "/") for bad in _FORBIDDEN_STORAGE)
    return sorted(p for p in listed if wrong(p))


def net_test(targets: list[list[Any]]) -> dict[str, str]:
    """``{name: message}`` for each node whose daemon port does not accept a connection."""
    failed: dict[str, str] = {}
    for name, ip, port in targets:
        try:
            with socket.create_connection((ip, port), timeout=TCP_PING_TIMEOUT):
                pass
        except OSError:
            failed[name] = "failure using the primary interface(s)"
    return failed


def collect_more(paths: Paths, checks: dict[str, Any], result: dict[str, Any],
                 now: float) -> None:
    """Add the answers to the machine checks in ``checks`` to ``result`` (blocking)."""
    if checks.get("nodesetup"):
        result["nodesetup"] = node_setup()
    if checks.get("client_cert"):
        result["client_cert"] = client_cert(paths, now)
    if checks.get("hvinfo"):
        info = collect_node_info(paths)
        result["hvinfo"] = {"memory_free": info["memory_free"],
                            "memory_total": info["memory_total"]}
    if "userscripts" in checks:
        result["userscripts"] = [p for p in checks["userscripts"]
                                 if not is_executable(local_path(paths, p))]
    if "oob_paths" in checks:
        result["oob_paths"] = [oob_path(local_path(paths, p), p) for p in checks["oob_paths"]]
    for key in ("file_storage_path", "shared_file_storage_path"):
        if checks.get(key):
            problem = storage_path_problem(paths, checks[key])
            if problem is not None:
                result[key] = problem
    if checks.get("accepted_storage_paths"):
        result["accepted_storage_paths"] = wrong_storage_paths(paths)
    if "node_net_test" in checks:
        result["node_net_test"] = net_test(checks["node_net_test"])
