"""RAPI request rate of a real ganeti-rapi (and of Ganeti 3.0's, as a baseline).

Starts a one-node virtual cluster (noded, masterd, ganeti-rapi), finishes one
job, then measures ``GET /2/jobs/<id>`` and ``GET /2/info`` (both with Basic
credentials, as Ganeti's client sends them) in two ways:

* keep-alive: concurrent persistent HTTPS connections, requests one after
  another on each;
* new connection: a new TLS connection for every request, as Ganeti's RAPI
  client does (``Connection: close``, full handshakes).

The load comes from W separate processes running a minimal HTTP/1.1 client
over Python's ssl (certificate verified against rapi.pem), and, if ``wrk`` is
installed, from wrk with 2W connections (it costs far less CPU per request,
which matters on a small machine where clients and servers share the CPUs).
Each line also gives the CPU time ganeti-rapi and ganeti-masterd spent per
request (from /proc), which stays meaningful when other work shares the
machine.  Then, if Debian's Ganeti 3.0 is installed, its ``ganeti-rapi``
(Python, ``/usr/share/ganeti/3.0``) runs under ``/usr/bin/python3`` on a copy
of the master's node directory whose LUXI socket points at our masterd, and
gets the same load.  The last line is a JSON summary; the targets count as met
with the faster of the two clients.
Run: .venv/bin/python bench/bench_rapi.py [SECONDS [WORKERS]]
"""

import base64
import json
import multiprocessing
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.cli import rapicall, vcluster_nodes
from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient

BIN = os.path.dirname(os.path.abspath(sys.executable))
VCLUSTER = os.path.join(BIN, "ganeti-vcluster")
NODE = "node1.vcluster.test"
CLUSTER = "cluster.vcluster.test"
PORT = 5080
BASELINE_PORT = 5081
GANETI_SHARE = "/usr/share/ganeti/3.0"
DEBIAN_PYTHON = "/usr/bin/python3"
# Ganeti 3.0's ganeti-rapi insists on running as the gnt-rapi user; the bench runs as
# root on a private copy of the node, so that check is switched off (nothing else).
BASELINE_MAIN = """
import sys
sys.path.insert(0, %r)
import ganeti.daemon
ganeti.daemon._VerifyDaemonUser = lambda name: (True, 0, 0)
import ganeti.server.rapi as main
sys.argv = ["ganeti-rapi", "-f", "-b", sys.argv[1], "-p", sys.argv[2]]
sys.exit(main.Main())
"""


class Client:
    """A minimal HTTP/1.1 client: one request at a time, Content-Length framed answers."""

    def __init__(self, ip, port, cafile, keepalive):
        self.ip, self.port, self.keepalive = ip, port, keepalive
        self.ctx = ssl.create_default_context(cafile=cafile)
        self.sock = None
        self.buf = b""
        self.handshakes = 0

    def connect(self):
        raw = socket.create_connection((self.ip, self.port), timeout=30)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self.ctx.wrap_socket(raw, server_hostname=CLUSTER)
        self.buf = b""
        self.handshakes += 1

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def get(self, request):
        if self.sock is None:
            self.connect()
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed before the answer")
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lower = head.lower()
        length = int(lower.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed in the body")
            rest += chunk
        self.buf = rest[length:]
        status = int(head[9:12])
        if not self.keepalive or b"connection: close" in lower:
            self.close()
        return status


def worker(args):
    ip, port, cafile, path, auth, keepalive, start, duration = args
    headers = [f"GET {path} HTTP/1.1", f"Host: {CLUSTER}:{port}",
               f"Authorization: Basic {auth}", "Accept: application/json"]
    if not keepalive:
        headers.append("Connection: close")
    request = ("\r\n".join(headers) + "\r\n\r\n").encode()
    client = Client(ip, port, cafile, keepalive)
    while time.time() < start:
        time.sleep(0.001)
    end = start + duration
    done = errors = 0
    while time.time() < end:
        try:
            status = client.get(request)
        except OSError:
            client.close()
            errors += 1
            continue
        done += 1
        if status != 200:
            errors += 1
    client.close()
    return done, errors, client.handshakes


def load(pool, workers, ip, port, cafile, path, auth, keepalive, duration):
    """Requests/s over ``workers`` processes for ``duration`` seconds (after a warm-up)."""
    args = (ip, port, cafile, path, auth, keepalive, time.time() + 0.3, 0.5)
    pool.map(worker, [args] * workers)  # warm-up: connections, caches
    args = (ip, port, cafile, path, auth, keepalive, time.time() + 0.3, duration)
    results = pool.map(worker, [args] * workers)
    done = sum(r[0] for r in results)
    errors = sum(r[1] for r in results)
    return done / duration, errors, sum(r[2] for r in results)


def run_wrk(ip, port, path, auth, duration, connections, keepalive=True):
    """wrk's requests/s and request count (``Connection: close`` for new connections),
    or None if wrk is not installed or failed."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    argv = [wrk, "-t2", f"-c{connections}", f"-d{max(1, round(duration))}s",
            "-H", f"Authorization: Basic {auth}"]
    if not keepalive:
        argv += ["-H", "Connection: close"]
    proc = subprocess.run(argv + [f"https://{ip}:{port}{path}"], capture_output=True,
                          text=True)
    rate = count = None
    for line in proc.stdout.splitlines():
        if line.startswith("Requests/sec:"):
            rate = float(line.split()[1])
        elif "requests in" in line:
            count = int(line.split()[0])
        elif "Non-2xx" in line:
            return None
    return (rate, count) if rate is not None and count else None


def read_pid(path):
    with open(path, encoding="ascii") as f:
        return int(f.read())


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_port(ip, port, proc=None, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            socket.create_connection((ip, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def start_baseline(tmp, master_root, ip):
    """Ganeti 3.0's ganeti-rapi on a copy of the master's node directory, or a reason."""
    if not os.path.isdir(os.path.join(GANETI_SHARE, "ganeti", "server")):
        return None, f"Debian's ganeti-3.0 is not installed ({GANETI_SHARE} missing)"
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        return None, f"{DEBIAN_PYTHON} is missing"
    src = Paths.for_node(master_root, NODE)
    root = os.path.join(tmp, "baseline", NODE)
    copy = Paths.for_node(root, NODE)
    for d in (copy.rapi_users_dir, copy.socket_dir, copy.log_dir):
        os.makedirs(d)
    for name in os.listdir(src.data_dir):
        if name.startswith("ssconf_") or name in ("rapi.pem", "config.data"):
            shutil.copy(os.path.join(src.data_dir, name), copy.data_dir)
    shutil.copy(src.rapi_users, copy.rapi_users)
    os.symlink(src.luxi_socket, copy.luxi_socket)  # LUXI goes to our masterd
    out = open(os.path.join(tmp, "baseline.log"), "wb")
    proc = subprocess.Popen([DEBIAN_PYTHON, "-I", "-c", BASELINE_MAIN % GANETI_SHARE, ip,
                             str(BASELINE_PORT)], env=dict(os.environ, **copy.env()),
                            stdout=out, stderr=subprocess.STDOUT, cwd="/",
                            start_new_session=True)
    if not wait_port(ip, BASELINE_PORT, proc):
        proc.kill()
        with open(os.path.join(tmp, "baseline.log"), errors="replace") as f:
            tail = " | ".join(f.read().strip().splitlines()[-3:])
        return None, f"Ganeti 3.0's ganeti-rapi did not start: {tail or 'no output'}"
    return proc, None


def stop_baseline(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def measure(pool, label, ip, port, cafile, paths, auth, duration, workers, pids):
    """Python clients, then wrk (if installed), for every path and both modes.

    ``pids``: processes whose CPU time per request is reported (the server's share of
    the machine, whatever else runs on it)."""
    rows = []
    for path in paths:
        for keepalive in (True, False):
            mode = "keep-alive" if keepalive else "new connection"
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            rate, errors, handshakes = load(pool, workers, ip, port, cafile, path, auth,
                                            keepalive, duration)
            count = rate * (duration + 0.5)  # the warm-up runs at about the same rate
            cpu = "; ".join(f"{name} {(cpu_seconds(pid) - before[name]) / count * 1e6:.0f} "
                            "us/req" for name, pid in pids.items())
            rows.append((label, path, mode, "python", rate))
            print(f"  {label:<22} GET {path:<14} {mode:<15} python {rate:7.0f} req/s"
                  f"   (errors {errors}, TLS handshakes {handshakes}; CPU {cpu})", flush=True)
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            wrk = run_wrk(ip, port, path, auth, duration, workers * 2, keepalive)
            if wrk is None:
                continue
            cpu = "; ".join(f"{name} {(cpu_seconds(pid) - before[name]) / wrk[1] * 1e6:.0f} "
                            "us/req" for name, pid in pids.items())
            rows.append((label, path, mode, "wrk", wrk[0]))
            print(f"  {label:<22} GET {path:<14} {mode:<15} wrk    {wrk[0]:7.0f} req/s"
                  f"   ({workers * 2} connections; CPU {cpu})", flush=True)
    return rows


def main(duration, workers):
    tmp = tempfile.mkdtemp(prefix="bench-rapi-")
    vc = os.path.join(tmp, "vc")
    base = vcluster_nodes.suggest_ip_base(1, avoid="127.0.1.")
    ip = f"{base}1"
    baseline = None
    try:
        subprocess.run([VCLUSTER, "create", vc, "--ip-base", base], check=True,
                       capture_output=True)
        subprocess.run([VCLUSTER, "start", vc], check=True, capture_output=True)
        root = os.path.join(vc, NODE)
        paths = Paths.for_node(root, NODE)
        user, password = rapicall.read_credentials(os.path.join(vc, "rapi-credentials"))
        auth = base64.b64encode(f"{user}:{password}".encode()).decode()
        with LuxiClient(paths.luxi_socket) as c:
            job = c.call("SubmitJob", [{"OP_ID": "OP_TEST_DELAY", "duration": 0}])
            c.call("WaitForJobChange", job, ["status"], None, None, 10)
        status, info = rapicall.request(ip, PORT, "GET", f"/2/jobs/{job}",
                                        context=rapicall.tls_context(paths.rapi_pem),
                                        server_hostname=CLUSTER, credentials=(user, password))
        assert status == 200 and info["status"] == "success", (status, info)
        targets = [f"/2/jobs/{job}", "/2/info"]
        print(f"rapi: {workers} client processes, {duration:g}s per measurement, "
              f"{os.cpu_count()} CPUs; job {job}; Basic credentials on every request")
        if shutil.which("wrk") is None:
            print("  (wrk is not installed: measured with the Python clients only)")
        pids = {name: read_pid(paths.pid_file(daemon))
                for name, daemon in (("rapi", "ganeti-rapi"), ("masterd", "ganeti-masterd"))}
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            rows = measure(pool, "ganeti-twisted", ip, PORT, paths.rapi_pem, targets, auth,
                           duration, workers, pids)
            baseline, reason = start_baseline(tmp, root, ip)
            if baseline is None:
                print(f"  Ganeti 3.0 baseline not measured: {reason}")
            else:
                rows += measure(pool, "Ganeti 3.0 ganeti-rapi", ip, BASELINE_PORT,
                                paths.rapi_pem, targets, auth, duration, workers,
                                {"masterd": pids["masterd"]})
        summary = {}
        for mode, key in (("keep-alive", "keepalive"), ("new connection", "newconn")):
            for client in ("python", "wrk"):
                rates = [r[4] for r in rows
                         if r[0] == "ganeti-twisted" and r[2] == mode and r[3] == client]
                if rates:
                    summary[f"{key}_{client}_min_rps"] = round(min(rates))
        best_keep = max(v for k, v in summary.items() if k.startswith("keepalive"))
        best_new = max(v for k, v in summary.items() if k.startswith("newconn"))
        print(json.dumps({"bench": "rapi", **summary, "targets": [3000, 400],
                          "met": best_keep >= 3000 and best_new >= 400,
                          "load_average": os.getloadavg()[0]}))
    finally:
        if baseline is not None:
            stop_baseline(baseline)
        subprocess.run([VCLUSTER, "destroy", vc], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
        raise SystemExit(__doc__)
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0,
         int(sys.argv[2]) if len(sys.argv) > 2 else 4)
