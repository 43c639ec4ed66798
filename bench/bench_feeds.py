"""WebSocket job feeds under load: many subscribers to all jobs of a real cluster.

A one-node virtual cluster runs masterd and ganeti-rapi (restarted here with a
connection limit above the number of subscribers).  S subscribers connect to
``wss://<master>:5080/2/feed`` with Basic auth and subscribe to all jobs,
spread over P client processes.  OP_TEST_DELAY jobs (duration 0) are then
submitted at R jobs/s for D seconds.  Reported per phase:

* delivery: whether every subscriber got every event exactly once (contiguous
  serials, the same first and last serial for all, 3 events per job), resyncs;
* latency from the event's creation in masterd (its ``time``) to its receipt
  by the client: p50, p99, max;
* CPU seconds used during the run by masterd and by ganeti-rapi (from
  /proc/<pid>/stat), and ganeti-rapi's RSS.

Phases: 10 subscribers, then S, so that masterd's CPU can be compared: it must
not grow with the number of subscribers (the relay holds one stream).

The clients are node.js with the ``ws`` package when node is there (installed
with npm into .cache/bench-node on first use; a benchmark-only tool, never a
requirement of the project), else a Python asyncio client (slower: it needs
more CPU than the server on a small machine).

Run: .venv/bin/python bench/bench_feeds.py [--subscribers 1000] [--rate 200]
     [--duration 20] [--procs 4] [--python-clients] [--profile rapi.svg]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from ganeti.cli import rapicall  # noqa: E402
from ganeti.luxi.client import LuxiClient  # noqa: E402

BIN = os.path.dirname(os.path.abspath(sys.executable))
VCLUSTER = os.path.join(BIN, "ganeti-vcluster")
NODE = "node1.vcluster.test"
RAPI_PORT = 5080
OP = {"OP_ID": "OP_TEST_DELAY", "duration": 0}
EVENTS_PER_JOB = 3  # queued, running, success
NODE_DIR = os.path.join(ROOT, ".cache", "bench-node")
BUCKET_MS = 0.25
BUCKETS = 40000  # up to 10 s; the last bucket counts everything slower

NODE_CLIENT = r"""
const WebSocket = require('ws');
const fs = require('fs');
const [url, user, pass, caPath, servername, countArg] = process.argv.slice(2);
const count = parseInt(countArg, 10);
const ca = fs.readFileSync(caPath);
const auth = 'Basic ' + Buffer.from(user + ':' + pass).toString('base64');
const BUCKET_MS = %(bucket)s, BUCKETS = %(buckets)d;
const hist = new Array(BUCKETS).fill(0);
let maxLatency = 0, subscribed = 0, closed = 0;
const clients = [];
const EVENT = /\{"type":"(\w+)"(?:,"serial":(\d+)(?:,"time":([0-9.e+-]+))?)?/g;
function connect(i, st, attempt) {
  if (!st) {
    st = {first: null, last: null, count: 0, gaps: 0, dups: 0, resyncs: 0, errors: 0,
          subscribed: false};
    clients.push(st);
  }
  const ws = new WebSocket(url, {ca, servername, headers: {Authorization: auth},
                                 perMessageDeflate: false, skipUTF8Validation: true});
  ws.on('open', () => ws.send('{"type":"subscribe","jobs":"all"}'));
  ws.on('close', () => {
    closed++;
    // A connection lost before it subscribed (a storm of handshakes) is retried.
    if (!st.subscribed && attempt < 20) setTimeout(() => connect(i, st, attempt + 1), 200);
  });
  ws.on('error', (e) => { st.errors++; console.error('client ' + i + ': ' + e.message); });
  ws.on('message', (data) => {
    const now = (performance.timeOrigin + performance.now()) / 1000;
    // Minimal work per message: the fields a check needs, found with a regular
    // expression instead of parsing every event (the server writes
    // "type", "serial", "time" first in each message).
    const text = data.toString('latin1');
    EVENT.lastIndex = 0;
    let m;
    while ((m = EVENT.exec(text)) !== null) {
      const type = m[1];
      if (type === 'job' || type === 'archive') {
        const serial = Number(m[2]);
        if (st.last !== null && serial !== st.last + 1) {
          if (serial <= st.last) st.dups++; else st.gaps++;
        }
        if (st.first === null) st.first = serial;
        st.last = serial; st.count++;
        const ms = (now - Number(m[3])) * 1000;
        if (ms > maxLatency) maxLatency = ms;
        hist[Math.min(BUCKETS - 1, Math.max(0, Math.floor(ms / BUCKET_MS)))]++;
      } else if (type === 'subscribed') {
        st.subscribed = true;
        if (++subscribed === count) console.log('ready');
      } else if (type === 'resync') { st.resyncs++; }
      else if (type === 'error') { st.errors++; }
    }
  });
}
let i = 0;
function more() {  // connect in small batches: TLS handshakes cost the server CPU
  for (let k = 0; k < 25 && i < count; k++) connect(i++, null, 0);
  if (i < count) setTimeout(more, 20);
}
more();
let input = '';
process.stdin.on('data', (chunk) => {
  input += chunk;
  let nl;
  while ((nl = input.indexOf('\n')) >= 0) {
    const command = input.slice(0, nl).trim();
    input = input.slice(nl + 1);
    // exit only once the report is written: a pipe takes 64 KiB at a time
    const done = command === 'stop' ? () => process.exit(0) : undefined;
    process.stdout.write(JSON.stringify({clients, hist, maxLatency, closed}) + '\n', done);
  }
});
"""

PY_CLIENT = r"""
import asyncio, base64, json, os, ssl, struct, sys, time
url_host, port, user, password, ca, servername, count = sys.argv[1:8]
port, count = int(port), int(count)
BUCKET_MS, BUCKETS = %(bucket)s, %(buckets)d
hist = [0] * BUCKETS
state = {"max": 0.0, "subscribed": 0}
clients = []

async def client():
    st = {"first": None, "last": None, "count": 0, "gaps": 0, "dups": 0, "resyncs": 0,
          "errors": 0}
    clients.append(st)
    ctx = ssl.create_default_context(cafile=ca)
    reader, writer = await asyncio.open_connection(url_host, port, ssl=ctx,
                                                   server_hostname=servername)
    key = base64.b64encode(os.urandom(16)).decode()
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    writer.write((f"GET /2/feed HTTP/1.1\r\nHost: {url_host}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  f"Sec-WebSocket-Version: 13\r\nAuthorization: Basic {token}\r\n\r\n").encode())
    await reader.readuntil(b"\r\n\r\n")
    sub = b'{"type":"subscribe","jobs":"all"}'
    writer.write(bytes([0x81, 0x80 | len(sub)]) + b"\0\0\0\0" + sub)
    while True:
        head = await reader.readexactly(2)
        n = head[1] & 0x7F
        if n == 126:
            n = struct.unpack("!H", await reader.readexactly(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", await reader.readexactly(8))[0]
        payload = await reader.readexactly(n)
        op = head[0] & 0x0F
        if op == 9:
            writer.write(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
            continue
        if op != 1:
            continue
        now = time.time()
        for m in json.loads(payload):
            t = m["type"]
            if t == "job" or t == "archive":
                s = m["serial"]
                if st["last"] is not None and s != st["last"] + 1:
                    st["dups" if s <= st["last"] else "gaps"] += 1
                if st["first"] is None:
                    st["first"] = s
                st["last"] = s
                st["count"] += 1
                ms = (now - m["time"]) * 1000
                state["max"] = max(state["max"], ms)
                hist[min(BUCKETS - 1, max(0, int(ms / BUCKET_MS)))] += 1
            elif t == "subscribed":
                state["subscribed"] += 1
                if state["subscribed"] == count:
                    print("ready", flush=True)
            elif t == "resync":
                st["resyncs"] += 1

async def main():
    tasks = []
    for i in range(count):
        tasks.append(asyncio.ensure_future(client()))
        if i %% 25 == 24:
            await asyncio.sleep(0.02)
    loop = asyncio.get_running_loop()
    while True:
        command = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        print(json.dumps({"clients": clients, "hist": hist, "maxLatency": state["max"],
                          "closed": 0}), flush=True)
        if command == "stop":
            os._exit(0)

asyncio.run(main())
"""


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """(busy, steal, total) jiffies of the whole machine (steal: taken by the hypervisor)."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    steal = values[7] if len(values) > 7 else 0
    total = sum(values[:8])
    return total - idle - steal, steal, total


def rss_mib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def read_pid(path):
    with open(path, encoding="ascii") as f:
        return int(f.read().strip())


def free_ip_base():
    from ganeti.cli import daemons
    from ganeti.core import constants
    thirds = list(range(2, 251))
    random.shuffle(thirds)
    for third in thirds:
        base = f"127.0.{third}."
        try:
            daemons.check_address_free(base + "1", constants.DEFAULT_NODED_PORT)
            daemons.check_address_free(base + "1", RAPI_PORT)
        except daemons.AddressInUse:
            continue
        return base
    raise SystemExit("no free 127.0.x. address range")


class Cluster:
    """A one-node virtual cluster whose ganeti-rapi is restarted with a higher client limit."""

    def __init__(self, max_clients):
        self.tmp = tempfile.mkdtemp(prefix="bench-feeds-")
        self.dir = os.path.join(self.tmp, "vc")
        self.ip = free_ip_base() + "1"
        self.root = os.path.join(self.dir, NODE)
        self.env = dict(os.environ, GANETI_ROOTDIR=self.root, GANETI_HOSTNAME=NODE)
        self.max_clients = max_clients
        self.rapi_pid = None

    def start(self):
        base = self.ip[:-1]
        subprocess.run([VCLUSTER, "create", self.dir, "--ip-base", base], check=True,
                       capture_output=True)
        subprocess.run([VCLUSTER, "start", self.dir], check=True, capture_output=True)
        run_dir = os.path.join(self.root, "var/run/ganeti")
        self.masterd_pid = read_pid(os.path.join(run_dir, "ganeti-masterd.pid"))
        # Restart ganeti-rapi with room for every subscriber.
        pid_file = os.path.join(run_dir, "ganeti-rapi.pid")
        old = read_pid(pid_file)
        os.kill(old, 15)
        for _ in range(100):
            if not os.path.exists(f"/proc/{old}"):
                break
            time.sleep(0.05)
        log = os.path.join(self.root, "var/log/ganeti/rapi-daemon.log")
        self.rapi = subprocess.Popen(
            [os.path.join(BIN, "twistd"), "-n", "--pidfile", pid_file, "--logfile", log,
             "ganeti-rapi", "--bind", self.ip, "--port", str(RAPI_PORT),
             "--max-clients", str(self.max_clients),
             # every subscriber comes from this one address
             "--max-clients-per-address", str(self.max_clients // 2)], env=self.env)
        self.rapi_pid = self.rapi.pid
        for _ in range(200):
            try:
                rapicall.request(self.ip, RAPI_PORT, "GET", "/2/info", context=self.tls(),
                                 server_hostname=self.name, credentials=self.credentials())
                break
            except OSError:
                time.sleep(0.05)
        with open(os.path.join(self.dir, "vcluster.json"), encoding="utf-8") as f:
            assert json.load(f)["cluster_name"] == self.name

    name = "cluster.vcluster.test"

    @property
    def ca(self):
        return os.path.join(self.root, "var/lib/ganeti/rapi.pem")

    def tls(self):
        return rapicall.tls_context(self.ca)

    def credentials(self):
        return rapicall.read_credentials(os.path.join(self.dir, "rapi-credentials"))

    def luxi(self):
        return LuxiClient(os.path.join(self.root, "var/run/ganeti/socket/ganeti-query"),
                          timeout=120)

    def destroy(self):
        if self.rapi_pid is not None:
            self.rapi.terminate()
            self.rapi.wait(30)
        subprocess.run([VCLUSTER, "destroy", self.dir], capture_output=True, check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)


def node_available():
    if shutil.which("node") is None:
        return False
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "ws")):
        if shutil.which("npm") is None:
            return False
        os.makedirs(NODE_DIR, exist_ok=True)
        proc = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund",
                               "--prefix", NODE_DIR, "ws@8"], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"npm install ws failed, using Python clients: {proc.stderr[-300:]}")
            return False
    return True


class Clients:
    """P client processes holding S subscriptions to all jobs between them."""

    def __init__(self, cluster, subscribers, procs, use_node):
        self.procs = []
        user, password = cluster.credentials()
        per = [subscribers // procs + (1 if i < subscribers % procs else 0)
               for i in range(procs)]
        workdir = tempfile.mkdtemp(prefix="bench-feeds-clients-")
        self.workdir = workdir
        fill = {"bucket": BUCKET_MS, "buckets": BUCKETS}
        if use_node:
            script = os.path.join(NODE_DIR, "feed_client.js")
            with open(script, "w", encoding="utf-8") as f:
                f.write(NODE_CLIENT % fill)
        else:
            script = os.path.join(workdir, "feed_client.py")
            with open(script, "w", encoding="utf-8") as f:
                f.write(PY_CLIENT % fill)
        for count in per:
            if count == 0:
                continue
            if use_node:
                argv = ["node", script, f"wss://{cluster.ip}:{RAPI_PORT}/2/feed", user,
                        password, cluster.ca, cluster.name, str(count)]
            else:
                argv = [sys.executable, script, cluster.ip, str(RAPI_PORT), user, password,
                        cluster.ca, cluster.name, str(count)]
            self.procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE,
                                               stdout=subprocess.PIPE, text=True,
                                               cwd=NODE_DIR if use_node else workdir))

    def wait_ready(self, timeout=120):
        import select
        deadline = time.monotonic() + timeout
        for proc in self.procs:
            ready, _, _ = select.select([proc.stdout], [], [],
                                        max(0.0, deadline - time.monotonic()))
            line = proc.stdout.readline().strip() if ready else "(timeout)"
            if line != "ready":
                raise SystemExit(f"a client process did not get ready: {line!r}")

    def results(self, command="stop"):
        merged = {"clients": [], "hist": [0] * BUCKETS, "maxLatency": 0.0}
        for proc in self.procs:
            proc.stdin.write(command + "\n")
            proc.stdin.flush()
        for proc in self.procs:
            data = json.loads(proc.stdout.readline())
            if command == "stop":
                proc.wait(30)
            merged["clients"] += data["clients"]
            merged["hist"] = [a + b for a, b in zip(merged["hist"], data["hist"], strict=True)]
            merged["maxLatency"] = max(merged["maxLatency"], data["maxLatency"])
        if command == "stop":
            shutil.rmtree(self.workdir, ignore_errors=True)
        return merged

    def kill(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def percentile(hist, fraction):
    total = sum(hist)
    if not total:
        return float("nan")
    rank = fraction * (total - 1)
    seen = 0
    for i, n in enumerate(hist):
        seen += n
        if seen > rank:
            return (i + 0.5) * BUCKET_MS
    return BUCKETS * BUCKET_MS


def submit(luxi, rate, duration):
    """Submit OP_TEST_DELAY jobs at ``rate`` per second for ``duration`` seconds."""
    ids = []
    start = time.monotonic()
    total = int(rate * duration)
    while len(ids) < total:
        due = min(total, int((time.monotonic() - start) * rate) + 1)
        if due > len(ids):
            batch = due - len(ids)
            ids += [jid for ok, jid in luxi.call("SubmitManyJobs", [[OP]] * batch) if ok]
        next_at = start + len(ids) / rate
        pause = next_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    return ids, time.monotonic() - start


def wait_all(luxi, ids, timeout=300):
    deadline = time.monotonic() + timeout
    pending = list(ids)
    while pending:
        rows = luxi.call("QueryJobs", pending[:2000], ["status"])
        done = {j for j, row in zip(pending[:2000], rows, strict=True)
                if row and row[0] in ("success", "error", "canceled")}
        pending = [j for j in pending if j not in done]
        if pending:
            if time.monotonic() > deadline:
                raise SystemExit(f"{len(pending)} jobs did not finish")
            luxi.call("WaitForJobChange", pending[0], ["status"], None, None, 2)


def phase(cluster, subscribers, args, use_node, profile=None):
    clients = Clients(cluster, subscribers, min(args.procs, subscribers), use_node)
    try:
        clients.wait_ready()
        luxi = cluster.luxi()
        time.sleep(1.0)  # let the connection storm settle
        m0, r0 = cpu_seconds(cluster.masterd_pid), cpu_seconds(cluster.rapi_pid)
        c0 = sum(cpu_seconds(p.pid) for p in clients.procs)
        t0 = time.monotonic()
        k0 = machine_cpu()
        spy = None
        if profile:
            spy = subprocess.Popen([os.path.join(BIN, "py-spy"), "record", "-o", profile,
                                    "-p", str(cluster.rapi_pid), "-d",
                                    str(int(args.duration)), "-r", "50"]
                                   + ([] if profile.endswith(".svg") else ["-f", "raw"]),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ids, took = submit(luxi, args.rate, args.duration)
        wait_all(luxi, ids)
        m1, r1 = cpu_seconds(cluster.masterd_pid), cpu_seconds(cluster.rapi_pid)
        c1 = sum(cpu_seconds(p.pid) for p in clients.procs)
        wall = time.monotonic() - t0
        k1 = machine_cpu()
        rss = rss_mib(cluster.rapi_pid)
        done_at = time.monotonic()
        expected = len(ids) * EVENTS_PER_JOB
        while True:  # until every subscriber has every event (or a minute passed)
            time.sleep(0.5)
            status = clients.results("stats")
            if (all(c["count"] >= expected for c in status["clients"])
                    or time.monotonic() - done_at > args.drain):
                break
        drain = time.monotonic() - done_at
        if spy is not None:
            spy.wait()
        results = clients.results()
        luxi.call("AutoArchiveJobs", -1, 60)
        luxi.close()
    finally:
        clients.kill()
    stats = results["clients"]
    firsts = {c["first"] for c in stats}
    lasts = {c["last"] for c in stats}
    complete = sum(1 for c in stats if c["count"] == expected and not c["gaps"]
                   and not c["dups"])
    hist = results["hist"]
    return {
        "subscribers": len(stats), "jobs": len(ids), "submit_s": took,
        "expected": expected, "complete": complete,
        "gaps": sum(c["gaps"] for c in stats), "dups": sum(c["dups"] for c in stats),
        "resyncs": sum(c["resyncs"] for c in stats), "errors": sum(c["errors"] for c in stats),
        "same_range": len(firsts) == 1 and len(lasts) == 1,
        "p50": percentile(hist, 0.5), "p99": percentile(hist, 0.99),
        "max": results["maxLatency"], "deliveries": sum(hist),
        "masterd_cpu": m1 - m0, "rapi_cpu": r1 - r0, "rapi_rss": rss,
        "clients_cpu": c1 - c0, "wall": wall, "drain": drain,
        "busy": (k1[0] - k0[0]) / max(1, k1[2] - k0[2]),
        "steal": (k1[1] - k0[1]) / max(1, k1[2] - k0[2]),
    }


def report(r):
    ok = r["complete"] == r["subscribers"] and r["same_range"]
    print(f"  {r['subscribers']:5d} subscribers, {r['jobs']} jobs in {r['submit_s']:.1f}s: "
          f"{r['complete']}/{r['subscribers']} got all {r['expected']} events "
          f"({'OK' if ok else 'MISSING'}; gaps {r['gaps']}, duplicates {r['dups']}, "
          f"resyncs {r['resyncs']}, errors {r['errors']}); the last event arrived "
          f"{r['drain']:.1f}s after the last job ended")
    print(f"        latency masterd->client: p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms, "
          f"max {r['max']:.1f} ms over {r['deliveries']} deliveries")
    print(f"        CPU during the run ({r['wall']:.1f}s): masterd {r['masterd_cpu']:.2f}s, "
          f"ganeti-rapi {r['rapi_cpu']:.2f}s, clients {r['clients_cpu']:.2f}s; "
          f"ganeti-rapi RSS {r['rapi_rss']:.0f} MiB")
    print(f"        machine: {r['busy']:.0%} busy, {r['steal']:.0%} stolen by the hypervisor")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--baseline", type=int, default=10)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--python-clients", action="store_true")
    parser.add_argument("--drain", type=float, default=60.0,
                        help="seconds to wait for late deliveries after the last job")
    parser.add_argument("--profile", help="py-spy flame graph of ganeti-rapi (big phase)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    use_node = not args.python_clients and node_available()
    print(f"bench_feeds: {args.rate:g} jobs/s for {args.duration:g}s, clients: "
          f"{'node ws' if use_node else 'python asyncio'} x {args.procs} processes, "
          f"{os.cpu_count()} CPUs")
    # a tenth of the places stays kept for new addresses: room for all, from one address
    cluster = Cluster(max_clients=2 * args.subscribers + 100)
    try:
        cluster.start()
        small = phase(cluster, args.baseline, args, use_node)
        report(small)
        big = phase(cluster, args.subscribers, args, use_node, profile=args.profile)
        report(big)
    finally:
        cluster.destroy()
    ratio = big["masterd_cpu"] / small["masterd_cpu"] if small["masterd_cpu"] else 0
    print(f"masterd CPU with {big['subscribers']} vs {small['subscribers']} subscribers: "
          f"{ratio:.2f}x; p99 with {big['subscribers']}: {big['p99']:.1f} ms")


if __name__ == "__main__":
    main()
