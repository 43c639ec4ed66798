"""What the tests of Debian's ganeti-instance-debootstrap share.

The package reads its settings from ``/etc/default/ganeti-instance-debootstrap``
and keeps its cache in ``/var/cache/ganeti-instance-debootstrap``.  A test's
cluster daemons are started in a private mount namespace (:func:`mount_wrapper`)
in which both are the test's own (bind mounts): the suite and mirror apt uses
(the only place packages come from, read from apt's sources at run time),
``PARTITION_STYLE=none`` (a partition table needs device-mapper, missing here)
and a cache outside system directories.  Every namespace and process a daemon
starts (``nsenter --net`` keeps the mount namespace; ``unshare --mount`` copies
it) sees the same two mounts.

The cache (:func:`shared_cache`) is one directory per test process: the first
install runs debootstrap (about 100 s), every later one, in any test of the
process, unpacks its tar.  Sharing is safe: the package writes the tar to a
temporary name and renames it (readers see a whole file or none),
``CLEAN_CACHE`` is empty (nothing is deleted), and all tests use the same suite
and architecture.  ``GANETI_DEBOOTSTRAP_CACHE`` names a directory kept across
runs instead.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import subprocess
import tempfile

PACKAGE_DIR = "/usr/share/ganeti/os/debootstrap"
DEFAULTS = "/etc/default/ganeti-instance-debootstrap"
CACHE = "/var/cache/ganeti-instance-debootstrap"
#: A directory to keep the cache in across runs (else one per test process).
CACHE_ENV = "GANETI_DEBOOTSTRAP_CACHE"

_cache: list[str] = []


def unavailable() -> str | None:
    """Why the package cannot install here (a skip reason), or None."""
    if not (os.path.isdir(PACKAGE_DIR) and os.path.isfile(DEFAULTS) and os.path.isdir(CACHE)
            and shutil.which("debootstrap")):
        return ("ganeti-instance-debootstrap and debootstrap are not installed "
                "(make test installs them)")
    if os.geteuid() != 0:
        return "debootstrap, mount and losetup need root"
    return None


def apt_source() -> tuple[str, str]:
    """The suite and mirror apt installs this machine's packages from."""
    with open("/etc/os-release", encoding="utf-8") as f:
        release = dict(line.strip().split("=", 1) for line in f if "=" in line)
    suite = release["VERSION_CODENAME"].strip('"')
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path, encoding="utf-8") as f:
            for stanza in f.read().split("\n\n"):
                fields = dict(line.split(":", 1) for line in stanza.splitlines()
                              if ":" in line and not line.startswith("#"))
                if suite in fields.get("Suites", "").split():
                    return suite, fields["URIs"].split()[0]
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list", encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                    return suite, words[1]
    raise AssertionError(f"no apt source for {suite}")


def shared_cache() -> str:
    """The cache directory of this test process (made on first use, removed at
    exit), or ``GANETI_DEBOOTSTRAP_CACHE`` (kept)."""
    if not _cache:
        kept = os.environ.get(CACHE_ENV)
        if kept:
            os.makedirs(kept, 0o700, exist_ok=True)
            _cache.append(os.path.abspath(kept))
        else:
            path = tempfile.mkdtemp(prefix="ganeti-debootstrap-cache-")
            atexit.register(shutil.rmtree, path, True)
            _cache.append(path)
    return _cache[0]


def write_defaults(path: str, suite: str, mirror: str) -> None:
    """The package's defaults file for the tests, at ``path``."""
    with open(path, "w", encoding="ascii") as f:
        f.write(f'SUITE="{suite}"\nMIRROR="{mirror}"\nPARTITION_STYLE="none"\n'
                'GENERATE_CACHE="yes"\nCLEAN_CACHE=""\n')


def mount_wrapper(defaults: str, cache: str) -> list[str]:
    """The command prefix that runs a command (``ganeti-vcluster start``) in a new
    private mount namespace with ``defaults`` over :data:`DEFAULTS` and ``cache``
    over :data:`CACHE`."""
    script = 'mount --bind "$1" "$2" && mount --bind "$3" "$4" && shift 4 && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
            defaults, DEFAULTS, cache, CACHE]


def link_os(node_root: str) -> None:
    """Put the package's OS definition on a virtual node's OS search path."""
    os_dir = os.path.join(node_root, "srv", "ganeti", "os")
    os.makedirs(os_dir, exist_ok=True)
    link = os.path.join(os_dir, "debootstrap")
    if not os.path.lexists(link):
        os.symlink(PACKAGE_DIR, link)


def cache_file(cache: str, suite: str) -> str | None:
    """The package's cache tar for ``suite`` in ``cache``, if there is one."""
    found = sorted(glob.glob(os.path.join(cache, f"cache-{suite}-*.tar")))
    return found[0] if found else None


def fill_cache(defaults: str, cache: str, suite: str, timeout: float = 900) -> str:
    """Make sure ``cache`` holds the package's tar for ``suite``; its path.

    A cluster whose nodes are network namespaces cannot reach the mirror, so a
    test that installs there needs the cache first: the package's own ``create``
    runs once on this host (OS API 10 environment, a scratch file as disk 0) under
    :func:`mount_wrapper`, as a node daemon would run it, and leaves the tar."""
    found = cache_file(cache, suite)
    if found:
        return found
    scratch = tempfile.mkdtemp(prefix="ganeti-debootstrap-fill-")
    try:
        image = os.path.join(scratch, "disk0")
        with open(image, "wb") as f:
            f.truncate(1 << 30)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "OS_API_VERSION": "10",
               "INSTANCE_NAME": "cache-fill.invalid", "HYPERVISOR": "kvm",
               "DISK_COUNT": "1", "DISK_0_PATH": image, "NIC_COUNT": "0"}
        done = subprocess.run([*mount_wrapper(defaults, cache), "sh", "-c",
                               f"cd {PACKAGE_DIR} && exec ./create"], env=env,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise AssertionError(f"the package's create failed ({done.returncode}): "
                                 f"{(done.stdout + done.stderr)[-3000:]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    found = cache_file(cache, suite)
    if not found:
        raise AssertionError(f"the package's create left no cache in {cache}")
    return found
