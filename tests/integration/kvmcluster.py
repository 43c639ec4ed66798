"""A namespaced 3-node virtual cluster with real guests, for the kvm integration tests.

:class:`KvmClusterCase` creates the cluster once per class (``ganeti-vcluster create
--namespaces``; each node its own network namespace and libvirtd) and destroys it
whatever happens (a :class:`~tests.integration.clustercase.ClusterCase`); the class
skips with the reason when the machine cannot run it (not root, no
iproute2, QEMU, libvirt, or no guest files: ``make guest``).  :class:`ConsoleLog`
follows a guest's serial console log with ``tail -F`` (a new boot truncates it), and
:class:`SerialShell` runs commands on the guest's serial console (its root shell; one
client at a time).
"""

from __future__ import annotations

import os
import re
import select
import socket
import subprocess
import time

from ganeti.cli import netns, vcluster_ns
from ganeti.cli.guestfiles import find_guest
from tests.integration.clustercase import ClusterCase, VirtualCluster
from tests.integration.helpers import VCLUSTER, run

MARKER = "GANETI-GUEST-READY"
#: A TCG boot takes 3-5 s alone; several processes share two cores in CI.
BOOT_TIMEOUT = 90.0
#: How much slower than a quiet machine a figure may be before a test fails: the
#: issue's 15 s for a healed instance is checked as is unless GANETI_SLOWDOWN
#: says the run shares its cores (make test sets 2: the suite runs three pytest
#: workers side by side).
SLOWDOWN = float(os.environ.get("GANETI_SLOWDOWN", "1"))


def unavailable() -> str | None:
    """Why real guests cannot run here (a skip reason), or None."""
    reason = vcluster_ns.unavailable_reason()
    if reason:
        return reason
    missing = vcluster_ns.libvirt_missing()
    if missing:
        return f"libvirt/QEMU missing: {', '.join(missing)}"
    if find_guest() is None:
        return "no guest kernel and initramfs: run 'make guest' (part of make install as root)"
    return None


def _tail(path: str, lines: int, containing: str = "") -> list[str]:
    """The last ``lines`` lines of a file holding ``containing`` (none if unreadable),
    a line that repeats the one before but for its time stamp left out (libvirtd
    logs one ethtool complaint per device feature)."""
    found: list[str] = []
    last = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if containing not in line:
                    continue
                text = line.split(": ", 1)[-1]
                if text != last:
                    found.append(line.rstrip("\n"))
                last = text
    except OSError:
        return []
    return found[-lines:]


class ConsoleLog:
    """The serial console log of an instance, followed from now on."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # -F: follow by name, across the truncation each start does
        self.proc = subprocess.Popen(["tail", "-n", "+1", "-F", path], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.buf = b""
        self.seen = ""

    def wait_for(self, pattern: str, timeout: float = BOOT_TIMEOUT,
                 partial: bool = False) -> str:
        """Read until a line matches ``pattern`` (a regex); that line. With
        ``partial`` the line read so far counts too (a prompt such as ``login:``
        ends without a newline). AssertionError with the output read so far after
        ``timeout``."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                raw, self.buf = self.buf.split(b"\n", 1)
                line = raw.decode("utf-8", "replace").rstrip("\r")
                self.seen += line + "\n"
                if regex.search(line):
                    return line
            if partial:
                line = self.buf.decode("utf-8", "replace").rstrip("\r")
                if regex.search(line):
                    return line
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r} on {self.path} within "
                                     f"{timeout:g}s; read:\n{self.seen[-3000:]}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise AssertionError(f"tail of {self.path} ended")
                self.buf += chunk

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


class SerialShell:
    """Commands on a guest's root shell through its serial console socket.

    Kernel messages share the console, and the typed line is echoed: each command's
    output is taken between two marker lines that only the shell's expansion makes
    (``$((n))``), so neither the echo nor anything else can forge them."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self.count = 0
        self.data = b""
        self.sock = self.wait_prompt()
        self.run("dmesg -n 1")  # kernel messages off the console from now on

    def wait_prompt(self) -> socket.socket:
        """A connection to the shell.  Right after the ready line the shell may not
        read yet (what is typed before it starts is lost) and QEMU may not take the
        connection at once (seen right after a boot): Enter is pressed each second,
        and the connection made again, until a prompt comes back."""
        deadline = time.monotonic() + self.timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(1.0)
            data = b""
            try:
                sock.connect(self.path)
                for _ in range(3):
                    sock.sendall(b"\n")
                    try:
                        data += sock.recv(65536)
                    except TimeoutError:
                        continue
                    if b"# " in data:
                        sock.settimeout(self.timeout)
                        return sock
            except OSError:
                pass
            sock.close()
            if time.monotonic() > deadline:
                raise AssertionError(f"no shell prompt on {self.path}: {data[-500:]!r}")

    def run(self, command: str) -> str:
        """``command``'s output."""
        self.count += 1
        n = self.count
        self.sock.sendall(f"echo @@B$(({n}))@@; {command}; echo @@E$(({n}))@@\n".encode())
        pattern = re.compile(rf"(?:^|\n)@@B{n}@@\n(.*?)(?:^|\n)@@E{n}@@\n", re.S | re.M)
        deadline = time.monotonic() + self.timeout
        while True:
            text = self.data.decode("utf-8", "replace").replace("\r", "")
            found = pattern.search(text)
            if found:
                self.data = b""
                return found.group(1).strip()
            if time.monotonic() > deadline:
                raise AssertionError(f"no answer to {command!r}: {text[-2000:]!r}")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError(f"console closed while running {command!r}")
            self.data += chunk

    def send(self, text: str) -> None:
        self.sock.sendall(text.encode())

    def close(self) -> None:
        self.sock.close()


class KvmClusterCase(ClusterCase):
    """One namespaced 3-node cluster with libvirt per node for the class; ``dir``,
    ``state`` (its vcluster.json) and ``plan`` (its network) at hand."""

    NODES = 3
    NAMESPACES = True
    # a long directory on purpose: node roots are reached through short links
    # (/run/gvc<id>/<node>), so serial console sockets stay under 107 bytes
    PREFIX = "ganeti-kvm-instances-"
    REQUIRES = (unavailable,)
    START_TIMEOUT = 180
    dir = ""
    tmp = ""
    state: dict = {}

    @classmethod
    def startCluster(cls, cluster: VirtualCluster) -> None:
        cls.tmp, cls.dir = cluster.tmp, cluster.dir  # for start_prefix
        cluster.start(prefix=cls.start_prefix())

    @classmethod
    def setUpCluster(cls) -> None:
        cls.dir = cls.cluster.dir
        cls.state = cls.cluster.state
        cls.plan = netns.NetPlan.from_dict(cls.state["netns"])

    @classmethod
    def start_prefix(cls) -> list[str]:
        """What ``ganeti-vcluster start`` runs under (a subclass's mount namespace:
        every daemon inherits it), after ``create``; none by default."""
        return []

    # --- the cluster -----------------------------------------------------------------

    def node(self, k: int) -> dict:
        return self.state["nodes"][k - 1]

    def node_name(self, k: int) -> str:
        return self.node(k)["name"]

    def instance_name(self, short: str) -> str:
        return f"{short}.{self.state.get('domain', 'vcluster.test')}"

    def exec_in(self, *argv: str, node: str | None = None, client: bool = False,
                check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
        where: list[str] = []
        if node:
            where = ["--node", node.split(".")[0]]
        elif client:
            where = ["--client"]
        try:
            return run([VCLUSTER, "exec", self.dir, *where, "--", *argv], check=check,
                       timeout=timeout)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{self.libvirt_report()}") from None

    def libvirt_report(self, lines: int = 15) -> str:
        """For a failure's message: whether each node's libvirtd runs, and the end of
        its log and of the node daemon's lines about libvirt (a libvirtd that died
        under a call shows as "End of file while reading data")."""
        report = []
        for k in range(1, len(self.state.get("nodes", [])) + 1):
            root = self.node(k)["root"]
            states = ", ".join(f"{s.daemon} {s.state}" + (f" (pid {s.pid})" if s.pid else "")
                               for s in vcluster_ns.libvirt_states(root))
            report.append(f"--- node{k}: {states}")
            log_file = os.path.join(vcluster_ns.libvirt_dir(root, "log"), "libvirtd.log")
            report += [f"  {line}" for line in _tail(log_file, lines)]
            noded_log = os.path.join(root, "var", "log", "ganeti", "node-daemon.log")
            report += [f"  noded: {line}" for line in _tail(noded_log, lines, "libvirt")]
        return "\n".join(report)

    def gnt(self, tool: str, *argv: str, check: bool = True,
            timeout: float = 300) -> subprocess.CompletedProcess:
        return self.exec_in(tool, *argv, check=check, timeout=timeout)

    def run_dir(self, k: int) -> str:
        return os.path.join(self.node(k)["root"], "var", "run", "ganeti")

    def console_log_path(self, k: int, name: str) -> str:
        return os.path.join(self.run_dir(k), "kvm-hypervisor", "console", f"{name}.log")

    def serial_path(self, k: int, name: str) -> str:
        return os.path.join(self.run_dir(k), "kvm-hypervisor", "ctrl", f"{name}.serial")

    def follow(self, k: int, name: str) -> ConsoleLog:
        log = ConsoleLog(self.console_log_path(k, name))
        self.addCleanup(log.close)
        return log

    def shell(self, k: int, name: str) -> SerialShell:
        sh = SerialShell(self.serial_path(k, name))
        self.addCleanup(sh.close)
        return sh

    def virsh(self, k: int, *argv: str) -> str:
        uri = vcluster_ns.libvirt_uri(self.node(k)["root"])
        return run(["virsh", "-c", uri, *argv], timeout=60).stdout

    def domains(self, k: int) -> list[str]:
        return self.virsh(k, "list", "--all", "--name").split()

    def qemu_pids(self, name: str) -> list[int]:
        """The QEMU processes of guest ``name`` of this cluster (their command lines
        name its directory: another cluster's guest of the same name, e.g. a demo's
        ``vm1``, is not this one)."""
        out = subprocess.run(["pgrep", "-f", f"guest={name},"], capture_output=True,
                             text=True, check=False).stdout
        roots = {os.path.realpath(self.node(k)["root"])
                 for k in range(1, len(self.state.get("nodes", [])) + 1)}
        roots |= {self.node(k)["root"] for k in range(1, len(self.state.get("nodes", [])) + 1)}
        pids = []
        for pid in out.split():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().decode(errors="replace")
            except OSError:
                continue  # gone meanwhile
            if any(root in cmdline for root in roots):
                pids.append(int(pid))
        return pids

    def node_links(self, k: int) -> list[str]:
        out = run(["ip", "-n", self.plan.node_ns(k), "-o", "link", "show"]).stdout
        return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()]
