"""A private libvirtd (and virtlogd) for real-VM tests, as the instances notes describe.

:class:`PrivateLibvirtd` starts ``virtlogd`` and ``libvirtd`` inside a private mount
namespace (``unshare --mount --propagation private``) in which directories under
its own ``base`` are bind-mounted over ``/etc/libvirt``, ``/run/libvirt``,
``/var/lib/libvirt``, ``/var/cache/libvirt`` and ``/var/log/libvirt``, so it shares
nothing with a libvirtd of the machine.  QEMU runs as root (``qemu.conf``: a
throwaway test bed).  ``uri`` is what noded gets in ``GANETI_LIBVIRT_URI``.
:meth:`stop` destroys every domain still running, then ends both daemons and
removes ``base`` if it made it.

Root only; :func:`unavailable_reason` says why it cannot run (tests skip with it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time

from ganeti.core.pidfile import running_pid

DIRS = (("etc", "/etc/libvirt"), ("run", "/run/libvirt"), ("lib", "/var/lib/libvirt"),
        ("cache", "/var/cache/libvirt"), ("log", "/var/log/libvirt"))
TOOLS = ("libvirtd", "virtlogd", "unshare", "mount", "qemu-system-x86_64")
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])

LIBVIRTD_CONF = ('listen_tls = 0\nlisten_tcp = 0\nauth_unix_ro = "none"\n'
                 'auth_unix_rw = "none"\nunix_sock_group = "root"\n'
                 'unix_sock_rw_perms = "0700"\n'
                 'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"\n')
# QEMU as root unless a domain's DAC label says otherwise (security_model=pool):
# libvirt's DAC driver chowns what such a QEMU opens, and gives it back to root; no
# cgroups, which the machine's other libvirtds would share (see ganeti.cli.vcluster_ns)
QEMU_CONF = ('user = "root"\ngroup = "root"\ndynamic_ownership = 1\nremember_owner = 0\n'
             'security_driver = "none"\ncgroup_controllers = [ ]\n')
VIRTLOGD_CONF = 'log_outputs = "3:file:/var/log/libvirt/virtlogd.log"\n'


def unavailable_reason() -> str | None:
    """Why a private libvirtd cannot run here (None if it can)."""
    if os.geteuid() != 0:
        return "a private libvirtd needs root"
    missing = [t for t in TOOLS if not shutil.which(t, path=SBIN)]
    if missing:
        return f"missing {', '.join(missing)}"
    try:
        import libvirt  # noqa: F401
    except ImportError:
        return "libvirt-python is not installed"
    return None


class PrivateLibvirtd:
    """One private libvirtd; ``with PrivateLibvirtd() as lv: lv.uri``."""

    def __init__(self, base: str | None = None, timeout: float = 30.0) -> None:
        self._made = base is None
        # a short path: the socket path must fit a sun_path (108 bytes)
        self.base = base or tempfile.mkdtemp(prefix="glv", dir="/tmp")
        self.timeout = timeout

    def path(self, part: str, *rest: str) -> str:
        return os.path.join(self.base, part, *rest)

    @property
    def socket(self) -> str:
        return self.path("run", "libvirt-sock")

    @property
    def uri(self) -> str:
        return f"qemu+unix:///system?socket={self.socket}"

    def _pid_file(self, daemon: str) -> str:
        return os.path.join(self.base, f"{daemon}.pid")

    def start(self) -> PrivateLibvirtd:
        os.chmod(self.base, 0o755)  # a QEMU under a pool uid must reach its files
        for part, _ in DIRS:
            os.makedirs(self.path(part), 0o755, exist_ok=True)
        for name, text in (("libvirtd.conf", LIBVIRTD_CONF), ("qemu.conf", QEMU_CONF),
                           ("virtlogd.conf", VIRTLOGD_CONF)):
            with open(self.path("etc", name), "w", encoding="utf-8") as f:
                f.write(text)
        for _, target in DIRS:
            os.makedirs(target, exist_ok=True)  # mount points
        self._spawn(with_virtlogd=True)
        return self

    def _spawn(self, with_virtlogd: bool) -> None:
        mounts = "; ".join(f"mount --bind {self.path(part)} {target} || exit 1"
                           for part, target in DIRS)
        virtlogd = (f"virtlogd -d -p {self._pid_file('virtlogd')} || exit 1; "
                    if with_virtlogd else "")
        script = f"{mounts}; {virtlogd}exec libvirtd -d -p {self._pid_file('libvirtd')}"
        env = dict(os.environ, PATH=SBIN)
        subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                        script], check=True, env=env, timeout=self.timeout,
                       stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while not os.path.exists(self.socket):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"libvirtd made no socket at {self.socket}")
            time.sleep(0.05)

    def stop_libvirtd(self) -> None:
        """End libvirtd alone (its guests and virtlogd keep running)."""
        self._kill("libvirtd")
        try:
            os.unlink(self.socket)
        except FileNotFoundError:
            pass

    def start_libvirtd(self) -> None:
        """Start libvirtd again after :meth:`stop_libvirtd` (it finds its guests)."""
        self._spawn(with_virtlogd=False)

    def destroy_domains(self) -> None:
        """Destroy every running domain (QEMU outlives libvirtd otherwise)."""
        import libvirt
        try:
            conn = libvirt.open(self.uri)
        except libvirt.libvirtError:
            return
        try:
            for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
                try:
                    dom.destroy()
                except libvirt.libvirtError:
                    pass
        finally:
            conn.close()

    def pid(self, daemon: str) -> int | None:
        """The daemon's pid while it runs (a number its dead process left in the pid
        file, since given to another process, is not it)."""
        return running_pid(self._pid_file(daemon))

    def _kill(self, daemon: str) -> None:
        pid = self.pid(daemon)
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.pid(daemon) != pid:
                return
            time.sleep(0.05)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def kill_guests(self) -> None:
        """SIGKILL every QEMU whose pid file libvirtd left (a domain it could not
        destroy, say after a failed test restarted it)."""
        qemu_dir = self.path("run", "qemu")
        try:
            names = [n for n in os.listdir(qemu_dir) if n.endswith(".pid")]
        except FileNotFoundError:
            return
        for name in names:
            try:
                with open(os.path.join(qemu_dir, name), encoding="ascii") as f:
                    pid = int(f.read().strip())
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"qemu" not in f.read():
                        continue
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def stop(self) -> None:
        if os.path.exists(self.socket):
            self.destroy_domains()
        self.kill_guests()
        for daemon in ("libvirtd", "virtlogd"):
            self._kill(daemon)
        if self._made:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> PrivateLibvirtd:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
