"""The two sides of the oracle: a real Ganeti 3.0 cluster and our virtual cluster.

Both have three nodes ``node{1,2,3}.example.com`` in ``cluster.example.com``,
the fake hypervisor and the diskless and file disk templates.  Each side runs
Debian's real clients through its own fork server (``forkserver.py``, run by
``/usr/bin/python3`` in the side's environment, with ``PYTHONHASHSEED=0`` so that
the clients' set-ordered output, e.g. option choices, is the same in every run): the
real side inside the namespace of ``realcluster/real_cluster_up.sh``, ours with the
vcluster's GANETI_ROOTDIR.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading

from ganeti.core import config as configmod
from ganeti.core import configjournal, constants, fileutil
from ganeti.noded.hypervisors import fake
from tests.fakes.instances import add_instance
from tests.integration.helpers import VCLUSTER, free_ip_base, run

# {lastjob} is the newest job id of the side, {lastjob-N} the one N before it.
LASTJOB = re.compile(r"\{lastjob(?:-(\d+))?\}")
HERE = os.path.dirname(os.path.abspath(__file__))
FORKSERVER = os.path.join(HERE, "forkserver.py")
SYSTEM_PYTHON = "/usr/bin/python3"
# A copy of the project's real-cluster scripts (GANETI_REAL_TOOLS may name another).
REAL_TOOLS = os.environ.get("GANETI_REAL_TOOLS", os.path.join(HERE, "realcluster"))
REAL_UP = os.path.join(REAL_TOOLS, "real_cluster_up.sh")
REAL_DOWN = os.path.join(REAL_TOOLS, "real_cluster_down.sh")
NODES = ("node1.example.com", "node2.example.com", "node3.example.com")
DOMAIN = "example.com"
# What real_cluster_up.sh passes to `gnt-cluster init`; our side is modified to match.
BOUNDS = ("min:disk-size=0,cpu-count=1,disk-count=0,memory-size=1,nic-count=0,spindle-use=0/"
          "max:disk-size=1048576,cpu-count=8,disk-count=16,memory-size=32768,nic-count=8,"
          "spindle-use=12")
SHAPE = [["gnt-cluster", "modify", "--enabled-disk-templates", "diskless,file",
          "--ipolicy-disk-templates", "diskless,file",
          "--ipolicy-bounds-specs", BOUNDS, "-I", "hail"]]
# Ganeti's init fills the policy's disk templates in the order of a Python set (it varies
# with the init process's hash seed): both sides get the same order after set-up.
REAL_SHAPE = [["gnt-cluster", "modify", "--ipolicy-disk-templates", "diskless,file"]]
# Instances on both sides (on the master node, which no case removes or takes offline):
# a file instance that runs and a diskless one with two NICs that does not.  The real
# side creates them; ours has them written into its config before it starts (the
# logical units that create instances are tested elsewhere), and its fake hypervisor
# is told that the first runs, with the memory Ganeti's fake hypervisor gives it.
INSTANCE_RUNNING = "inst11.example.com"
INSTANCE_STOPPED = "inst12.example.com"
_ADD = ["gnt-instance", "add", "-o", "noop+default", "--no-ip-check", "--no-name-check",
        "-n", "node1.example.com"]
REAL_INSTANCES = [[*_ADD, "-t", "file", "-s", "256M", INSTANCE_RUNNING],
                  [*_ADD, "-t", "diskless", "--no-start", "--net", "0", "--net", "1",
                   INSTANCE_STOPPED]]
# The memory both sides' nodes report: Ganeti's node info (and so hspace's tiered
# allocation, its failure reason) follows /proc/meminfo, which other tests running beside
# the oracle change; each side's daemons see this file over /proc/meminfo instead
# (bind-mounted in their own mount namespace).
MEMINFO = ("MemTotal:       16777216 kB\nMemFree:        12582912 kB\n"
           "MemAvailable:   13631488 kB\nBuffers:          262144 kB\n"
           "Cached:          1048576 kB\nActive:          1572864 kB\n")
# Files the real cluster needs (the script checks these before it starts).
REAL_DAEMONS = ("/usr/sbin/ganeti-noded", "/usr/sbin/ganeti-wconfd", "/usr/sbin/ganeti-luxid",
                "/usr/sbin/ganeti-rapi", "/usr/lib/ganeti/daemon-util",
                "/usr/lib/ganeti/ensure-dirs")


def unavailable() -> str | None:
    """Why the side-by-side oracle cannot run here (a skip reason), or None."""
    if os.geteuid() != 0:
        return "the real Ganeti cluster needs root (a private network namespace)"
    for path in (REAL_UP, REAL_DOWN, SYSTEM_PYTHON, *REAL_DAEMONS,
                 "/usr/share/ganeti/default/ganeti/client/gnt_cluster.py"):
        if not os.path.exists(path):
            return f"{path} is missing ('make install-oracle' installs the real Ganeti 3.0)"
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        return "unshare/nsenter (util-linux) are missing"
    return None


class ForkServer:
    """One fork server process; requests are answered in order (one at a time)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=full_env,
                                     start_new_session=True)
        self.lock = threading.Lock()
        first = self.proc.stdout.readline() if self.proc.stdout else ""
        if not first.startswith('{"ready"'):
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"fork server did not start: {first!r} {err}")

    def request(self, payload: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps(payload) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"fork server died ({self.proc.poll()})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write('{"op": "quit"}\n')
                self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)


class Side:
    """What both sides share: the fork server, job-id tracking, normalisation facts."""

    name = ""
    dir = ""
    rapi_client: dict = {}
    ips: dict[str, str] = {}  # address -> placeholder
    server: ForkServer | None = None

    def __init__(self, tmp: str) -> None:
        self.tmp = tmp
        self.files = os.path.join(tmp, f"files-{self.name}")
        os.makedirs(self.files, exist_ok=True)
        self.max_job = 0
        self.meminfo = os.path.join(tmp, "meminfo")
        with open(self.meminfo, "w", encoding="ascii") as f:
            f.write(MEMINFO)

    @property
    def rapi_url(self) -> str:
        return f"https://{self.rapi_client['host']}:{self.rapi_client['port']}"

    def expand(self, text: str) -> str:
        """Placeholders a case may use in its argv: ``{files}``, ``{rapi}``, ``{rapi_host}``."""
        return (text.replace("{files}", self.files).replace("{rapi}", self.rapi_url)
                .replace("{rapi_host}", self.rapi_client["host"]))

    def run(self, argv: list[str], stdin: str | None = None, timeout: int = 120) -> dict:
        assert self.server is not None
        if any("{lastjob" in a for a in argv):  # the newest job, e.g. one just submitted
            last = self.query_max_job()
            argv = [LASTJOB.sub(lambda m: str(last - int(m.group(1) or 0)), a) for a in argv]
        return self.server.request({"op": "run", "argv": [self.expand(a) for a in argv],
                                    "stdin": stdin, "timeout": timeout})

    def rapi(self, calls: list, timeout: int = 120) -> dict:
        assert self.server is not None
        return self.server.request({"op": "rapi", "client": self.rapi_client,
                                    "calls": calls, "timeout": timeout})

    def query_max_job(self) -> int:
        assert self.server is not None
        answer = self.server.request({"op": "maxjob"})
        if "maxjob" not in answer:
            raise AssertionError(f"{self.name}: cannot list jobs: {answer}")
        self.max_job = max(self.max_job, answer["maxjob"])
        return self.max_job

    def pad_jobs(self, target: int) -> int:
        """Submit short jobs until the newest job id is ``target`` (keeps ids aligned)
        and wait for them; returns how many were added (runner.align_jobs archives
        them)."""
        added = 0
        while self.query_max_job() < target:
            result = self.run(["gnt-debug", "delay", "--submit", "0.001"])
            if result["rc"] != 0:
                raise AssertionError(f"{self.name}: padding job failed: {result}")
            added += 1
        if added:
            self.run(["gnt-job", "wait", str(target)])
        return added

    def archive(self, first: int, last: int) -> None:
        """Archive the jobs ``first..last`` (those not finished stay)."""
        self.run(["gnt-job", "archive", *(str(k) for k in range(first, last + 1))])

    def archive_all(self) -> None:
        """Archive every finished job by id (Ganeti's ``autoarchive all`` archives none)."""
        last = self.query_max_job()
        if last:
            self.run(["gnt-job", "archive", *(str(k) for k in range(1, last + 1))])

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


class RealSide(Side):
    """Real Ganeti 3.0 (wconfd, luxid, rapi, noded x3) in a private namespace."""

    name = "real"

    def __init__(self, tmp: str, lifetime: int = 900) -> None:
        super().__init__(tmp)
        self.dir = os.path.join(tmp, "real")
        self.lifetime = lifetime
        self.rapi_client = {"host": "127.0.44.11", "port": 5080, "user": "admin",
                            "password": "secret"}
        self.ips = {"127.0.44.1": "<ip:master>"}
        self.ips.update({f"127.0.44.1{k}": f"<ip:node{k}>" for k in range(1, 4)})

    def start(self) -> None:
        proc = subprocess.run([REAL_UP, self.dir, str(self.lifetime)], capture_output=True,
                              text=True, timeout=300, check=False)
        if proc.returncode != 0:
            raise AssertionError(f"real_cluster_up.sh failed:\n{proc.stderr[-3000:]}")
        run([os.path.join(self.dir, "nsrun"), "mount", "--bind", self.meminfo, "/proc/meminfo"])
        self.server = ForkServer([os.path.join(self.dir, "gnt"), "env", "-u", "PYTHONPATH",
                                  "PYTHONHASHSEED=0", SYSTEM_PYTHON, "-s", FORKSERVER])
        for argv in REAL_SHAPE + REAL_INSTANCES:
            result = self.run(argv)
            if result.get("rc") != 0:
                raise AssertionError(f"shaping the real cluster failed: {result}")

    def stop(self) -> None:
        self.close()
        if os.path.exists(os.path.join(self.dir, "holder.pid")):
            subprocess.run([REAL_DOWN, self.dir], capture_output=True, timeout=60,
                           check=False)


def write_noop_os(top: str) -> None:
    """The real cluster's OS definition ``noop`` (API 20, variant ``default``, no
    parameters, scripts that succeed; export writes one byte) as the only OS in
    ``top``, so that both sides list, diagnose and run the same OS."""
    shutil.rmtree(top, ignore_errors=True)
    noop = os.path.join(top, "noop")
    os.makedirs(noop)
    for name, text in (("ganeti_api_version", "20\n"), ("variants.list", "default\n"),
                       ("parameters.list", "")):
        with open(os.path.join(noop, name), "w", encoding="ascii") as f:
            f.write(text)
    for script in ("create", "import", "export", "rename", "verify"):
        path = os.path.join(noop, script)
        with open(path, "w", encoding="ascii") as f:
            f.write("#!/bin/sh\n" + ("printf x\n" if script == "export" else "") + "exit 0\n")
        os.chmod(path, 0o755)


class OurSide(Side):
    """Our daemons: ``ganeti-vcluster`` with the same names, shaped like the real one."""

    name = "ours"

    def __init__(self, tmp: str) -> None:
        super().__init__(tmp)
        self.dir = os.path.join(tmp, "ours")
        self.base = free_ip_base(3)
        self.root = os.path.join(self.dir, NODES[0])
        self.ips = {f"{self.base}254": "<ip:master>"}
        self.ips.update({f"{self.base}{k}": f"<ip:node{k}>" for k in range(1, 4)})
        self.shape_results: list[dict] = []

    def start(self) -> None:
        # no volume groups: the real side has none (and no vg_name)
        run([VCLUSTER, "create", self.dir, "--nodes", "3", "--domain", DOMAIN,
             "--ip-base", self.base, "--no-lvm"], timeout=300)
        # As on the real side: the cluster's file storage dir (node 1's) exists.
        os.makedirs(os.path.join(self.root, "srv", "ganeti", "file-storage"), exist_ok=True)
        for node in NODES:  # the real side's only OS, instead of the ones we ship
            write_noop_os(os.path.join(self.dir, node, "srv", "ganeti", "os"))
        self.write_instances()
        # Without masterd's watcher service, as the real side runs no watcher: its
        # verify-disks jobs (the cluster has instances) would shift the job ids.  The
        # daemons read MEMINFO as /proc/meminfo.
        run(["unshare", "-m", "--propagation", "private", "sh", "-c",
             'mount --bind "$1" /proc/meminfo && exec "$2" start "$3"', "sh", self.meminfo,
             VCLUSTER, self.dir], env={"GANETI_WATCHER_INTERVAL": "0"}, timeout=120)
        with open(os.path.join(self.dir, "rapi-credentials"), encoding="utf-8") as f:
            user, password = f.read().split()
        self.rapi_client = {"host": f"{self.base}1", "port": 5080, "user": user,
                            "password": password}
        self.server = ForkServer([SYSTEM_PYTHON, "-s", FORKSERVER],
                                 {"GANETI_ROOTDIR": self.root, "GANETI_HOSTNAME": NODES[0],
                                  "PYTHONHASHSEED": "0", "PYTHONPATH": "",
                                  # Debian's real clients, never ours from the venv
                                  "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        for argv in SHAPE:
            self.shape_results.append(self.run(argv))

    def write_instances(self) -> None:
        """The real side's instances, in our master's config (before it starts)."""
        path = os.path.join(self.root, "var", "lib", "ganeti", "config.data")
        cfg = configmod.load_file(path)
        running = add_instance(cfg, INSTANCE_RUNNING, NODES[0], constants.DT_FILE, (256,),
                               os="noop+default")
        disk_path = cfg.disks[running.disks[0]].logical_id[1]  # the file, as Ganeti's add
        os.makedirs(os.path.dirname(disk_path), exist_ok=True)
        with open(disk_path, "wb") as f:
            f.truncate(256 * 1024 * 1024)
        add_instance(cfg, INSTANCE_STOPPED, NODES[0], nics=2, os="noop+default",
                     admin_state=constants.ADMINST_DOWN)
        problems = configmod.verify(cfg)
        if problems:
            raise AssertionError(f"our instances make the config inconsistent: {problems}")
        cfg.serial_no += 1000  # the other candidates' copies are older: they get it whole
        fileutil.atomic_write(path, configmod.dump(cfg).encode(), mode=0o640)
        journal = configjournal.journal_path(path)
        if os.path.exists(journal):
            os.unlink(journal)
        fake.mark_running(os.path.join(self.root, "var", "run", "ganeti"),
                          INSTANCE_RUNNING, 128, 1)

    def stop(self) -> None:
        self.close()
        if os.path.exists(os.path.join(self.dir, "vcluster.json")):
            run([VCLUSTER, "destroy", self.dir], check=False, timeout=120)
