"""ganeti-confd benchmarks: datagram fuzz (memory) and UDP throughput/latency.

  .venv/bin/python bench/bench_confd.py --fuzz 1000000
      Feeds N random/mutated/mis-signed/expired/replayed/valid datagrams to the
      server protocol in-process; prints RSS before and after and any wrong reply.

  .venv/bin/python bench/bench_confd.py [--procs 2] [--outstanding 16] [--seconds 3]
          [--rounds 3] [--rate Q]
      Starts our confd with twistd on 127.0.0.41 and Debian's Haskell
      ganeti-confd (the copy unpacked at .cache/ganeti-haskell by
      'make install-oracle', else /usr/sbin/ganeti-confd) on 127.0.0.42, both
      on a copy of the same config and key, and measures them alternately,
      --rounds times each: closed-loop load (each process keeps K signed
      requests in flight; every request is new, none is ever re-sent, since
      the server refuses replays) -> replies/s, lost and unsigned replies;
      with --rate, also paced load -> p50/p99 latency.  Prints the ratio of
      the median replies/s, ours/Haskell, and each daemon's CPU time per
      reply (which depends less on what else the machine runs); exits 1 if
      the ratio is below 1.0 or any request of ours was lost.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from ganeti.confd import protocol  # noqa: E402
from tests.confd.test_server import KEY, confd_config_dict  # noqa: E402

BIN = os.path.dirname(os.path.abspath(sys.executable))
HOST = "node1.example.test"
HASKELL_CANDIDATES = (
    os.path.join(ROOT, ".cache", "ganeti-haskell", "root", "usr", "lib", "ganeti", "3.0",
                 "usr", "sbin", "ganeti-confd"),
    "/usr/sbin/ganeti-confd")
QUERIES = [(0, None), (1, HOST), (3, None), (4, None), (5, None), (6, "br1"),
           (2, {"1": "192.0.2.50", "0": "br1"}), (10, "/cluster/cluster_name")]


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fuzz(count: int) -> None:
    from twisted.internet.task import Clock

    from ganeti.confd import protocol
    from ganeti.confd.server import ConfdProtocol
    from tests.confd.test_fuzz import NOW, Fuzzer, deserves_reply
    from tests.confd.test_server import answerer

    clock = Clock()
    clock.advance(NOW)
    proto = ConfdProtocol(clock, KEY, answerer())
    fuzzer = Fuzzer(42)
    fuzzer.sent_valid = fuzzer.sent_valid[-1000:]
    seen: set = set()
    wrong = 0
    before = rss_kib()
    checkpoints = []
    start = time.perf_counter()
    for i in range(count):
        data, _ = fuzzer.next()
        if len(fuzzer.sent_valid) > 2000:
            del fuzzer.sent_valid[:1000]
        reply = proto.handle(data, ("127.0.0.1", 1))
        if (reply is not None) != deserves_reply(data, seen, clock.seconds()):
            wrong += 1
        if i % 1000 == 999:
            # Simulated time runs at 1 s per 1,000 datagrams, so over a million
            # datagrams the 600 s replay window turns over and the cache must
            # stay bounded by the window, not by the run's length.
            clock.advance(1)
            fuzzer.now = clock.seconds()
            if i % 60_000 == 59_999:
                horizon = clock.seconds() - 2 * 300
                seen = {(salt, d) for salt, d in seen
                        if protocol.salt_time(salt) >= horizon}
        if i % 250_000 == 249_999:
            checkpoints.append((i + 1, rss_kib(), len(proto.replays)))
    elapsed = time.perf_counter() - start
    print(f"fuzz: {count} datagrams in {elapsed:.1f}s ({count / elapsed:,.0f}/s), "
          f"answered {proto.stats.answered}, dropped {proto.stats.dropped}, "
          f"wrong replies {wrong}, replay cache {len(proto.replays)} entries, "
          f"RSS {before} KiB -> {rss_kib()} KiB")
    for n, rss, cache in checkpoints:
        print(f"  after {n:>9,} datagrams: RSS {rss} KiB, replay cache {cache} entries")


def write_root(tmp: str) -> dict[str, str]:
    root = os.path.join(tmp, HOST)
    data = os.path.join(root, "var", "lib", "ganeti")
    os.makedirs(data)
    os.makedirs(os.path.join(root, "var", "run", "ganeti"))
    os.makedirs(os.path.join(root, "var", "log", "ganeti"))
    raw = confd_config_dict()

    def fill(disk: dict) -> None:
        # Haskell's config parser wants these on child disks too.
        for key, value in (("serial_no", 1), ("ctime", 0.0), ("mtime", 0.0),
                           ("iv_name", ""), ("spindles", 1), ("forthcoming", False)):
            disk.setdefault(key, value)
        for child in disk.get("children", []):
            fill(child)
    for disk in raw["disks"].values():
        fill(disk)
    with open(os.path.join(data, "config.data"), "w", encoding="utf-8") as f:
        json.dump(raw, f)
    with open(os.path.join(data, "hmac.key"), "wb") as keyfile:
        keyfile.write(KEY)
    return dict(os.environ, GANETI_ROOTDIR=root, GANETI_HOSTNAME=HOST)


def ping(addr: str, port: int, deadline: float = 10.0) -> bool:
    end = time.monotonic() + deadline
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        while time.monotonic() < end:
            s.sendto(protocol.pack_request(KEY, 0, None, f"ping{time.monotonic()}", time.time()),
                     (addr, port))
            try:
                s.recvfrom(65536)
                return True
            except OSError:
                continue
    return False


def worker(args: tuple) -> tuple[int, int, int, int, list[float]]:
    """One load process: closed loop with K in flight, or paced at ``rate`` q/s."""
    addr, port, k, seconds, rate, wid = args
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setblocking(False)
    pending: dict[str, float] = {}
    latencies: list[float] = []
    sent = ok = lost = unsigned = 0
    seq = 0

    def send() -> None:
        nonlocal seq, sent
        seq += 1
        rsalt = f"w{wid}-{seq}"
        rtype, query = QUERIES[seq % len(QUERIES)]
        s.sendto(protocol.pack_request(KEY, rtype, query, rsalt, time.time()), (addr, port))
        pending[rsalt] = time.perf_counter()
        sent += 1

    start = time.perf_counter()
    end = start + seconds
    next_send = start
    if not rate:
        for _ in range(k):
            send()
    while True:
        now = time.perf_counter()
        if now >= end:
            break
        if rate:
            while next_send <= now:
                send()
                next_send += 1.0 / rate
            timeout = max(0.0, min(next_send, end) - now)
        else:
            timeout = min(0.05, end - now)
        ready, _, _ = select.select([s], [], [], timeout)
        if ready:
            while True:
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    break
                try:
                    _, salt = protocol.unpack(KEY, data)
                except protocol.BadMessage:
                    unsigned += 1
                    continue
                sent_at = pending.pop(salt, None)
                if sent_at is None:
                    unsigned += 1
                    continue
                ok += 1
                latencies.append(time.perf_counter() - sent_at)
                if not rate:
                    send()
        now = time.perf_counter()
        for rsalt, t in list(pending.items()):
            if now - t > 1.0:
                del pending[rsalt]
                lost += 1
                if not rate:
                    send()
    time.sleep(0.5)
    try:
        while True:
            data = s.recv(65536)
            _, salt = protocol.unpack(KEY, data)
            if pending.pop(salt, None) is not None:
                ok += 1
    except (BlockingIOError, protocol.BadMessage):
        pass
    lost += len(pending)
    s.close()
    return sent, ok, lost, unsigned, latencies


def load(addr: str, port: int, procs: int, k: int, seconds: float, rate: float) -> dict:
    with multiprocessing.Pool(procs) as pool:
        results = pool.map(worker, [(addr, port, k, seconds, rate / procs if rate else 0, i)
                                    for i in range(procs)])
    lat = sorted(x for r in results for x in r[4])

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
    return {"sent": sum(r[0] for r in results), "ok": sum(r[1] for r in results),
            "lost": sum(r[2] for r in results), "unsigned": sum(r[3] for r in results),
            "rps": sum(r[1] for r in results) / seconds, "p50": pct(0.5), "p99": pct(0.99)}


class Daemon:
    """One confd under test: started once, loaded round after round."""

    def __init__(self, name: str, cmd: list[str], env: dict, addr: str, port: int,
                 logdir: str) -> None:
        self.name, self.addr, self.port = name, addr, port
        self.log = open(os.path.join(logdir, f"{name}.log"), "wb")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=logdir)
        self.ok = ping(addr, port)
        if not self.ok:
            print(f"{name}: did not answer a PING (see {self.log.name})")
        self.closed: list[dict] = []
        self.paced: list[dict] = []

    def cpu_seconds(self) -> float:
        """User plus system CPU time the daemon used so far (all its threads)."""
        with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def run(self, opts: argparse.Namespace) -> None:
        cpu = self.cpu_seconds()
        closed = load(self.addr, self.port, opts.procs, opts.outstanding, opts.seconds, 0)
        closed["cpu_us"] = (self.cpu_seconds() - cpu) / max(closed["ok"], 1) * 1e6
        self.closed.append(closed)
        line = (f"{self.name:>8}: closed loop {opts.procs}x{opts.outstanding}: "
                f"{closed['rps']:>9,.0f} replies/s, {closed['cpu_us']:5.1f} us CPU/reply, "
                f"lost {closed['lost']}, unsigned {closed['unsigned']}, "
                f"p99 {closed['p99']:.2f} ms")
        if opts.rate:
            paced = load(self.addr, self.port, opts.procs, 0, opts.seconds, opts.rate)
            self.paced.append(paced)
            line += (f" | paced {opts.rate:,.0f} q/s: sent {paced['sent']}, ok {paced['ok']}, "
                     f"lost {paced['lost']}, unsigned {paced['unsigned']}, "
                     f"p50 {paced['p50']:.2f} ms, p99 {paced['p99']:.2f} ms")
        print(line, flush=True)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def haskell_binary() -> str | None:
    """Debian's Haskell ganeti-confd: the unpacked oracle copy, else the installed one."""
    for path in HASKELL_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return None


def compare(opts: argparse.Namespace, tmp: str) -> int:
    """Both daemons up at once, measured alternately; the ratio of the medians."""
    env = write_root(tmp)
    ours = Daemon("ours", [os.path.join(BIN, "twistd"), "-n", "--pidfile=", "ganeti-confd",
                           "-b", "127.0.0.41", "-p", str(opts.port)],
                  dict(env, PYTHONPATH=ROOT), "127.0.0.41", opts.port, tmp)
    daemons = [ours]
    haskell = haskell_binary()
    if haskell is None:
        print("haskell: not measured (neither " + " nor ".join(HASKELL_CANDIDATES)
              + " exists; make install-oracle)")
    else:
        daemons.append(Daemon("haskell", [haskell, "-f", "--no-user-checks", "-b", "127.0.0.42",
                                          "-p", str(opts.port)], env, "127.0.0.42", opts.port,
                              tmp))
    try:
        if not all(d.ok for d in daemons):
            return 1
        for rnd in range(opts.rounds):
            # alternate the order, so that neither always runs on a warmer machine
            for d in (daemons if rnd % 2 == 0 else list(reversed(daemons))):
                d.run(opts)
        if len(daemons) < 2:
            return 0
        ratios = [o["rps"] / h["rps"] for o, h in zip(ours.closed, daemons[1].closed,
                                                          strict=True) if h["rps"]]
        ours_med = statistics.median(r["rps"] for r in ours.closed)
        hs_med = statistics.median(r["rps"] for r in daemons[1].closed)
        print(f"ratio ours/haskell (closed loop, replies/s): median of {opts.rounds} rounds "
              f"{ours_med:,.0f} / {hs_med:,.0f} = {ours_med / hs_med:.2f}x "
              f"(per round: {', '.join(f'{r:.2f}' for r in ratios)})")
        ours_cpu = statistics.median(r["cpu_us"] for r in ours.closed)
        hs_cpu = statistics.median(r["cpu_us"] for r in daemons[1].closed)
        print(f"CPU per reply (median): ours {ours_cpu:.1f} us, haskell {hs_cpu:.1f} us "
              f"(replies per CPU-second: {hs_cpu / ours_cpu:.2f}x)")
        lost = sum(r["lost"] + r["unsigned"] for r in ours.closed)
        if lost:
            print(f"ours: {lost} requests lost or answered unsigned")
        return 0 if ours_med >= hs_med and not lost else 1
    finally:
        for d in daemons:
            d.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz", type=int, default=0, help="fuzz N datagrams in-process")
    parser.add_argument("--procs", type=int, default=2, help="load processes")
    parser.add_argument("--outstanding", type=int, default=16,
                        help="requests in flight per process (closed loop)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument("--rounds", type=int, default=3,
                        help="measurements per daemon, alternating (the ratio is of medians)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="also measure latency at this many queries/s (0: not)")
    parser.add_argument("--port", type=int, default=18140)
    opts = parser.parse_args()
    if opts.fuzz:
        fuzz(opts.fuzz)
        return 0
    tmp = tempfile.mkdtemp(prefix="bench-confd-")
    try:
        return compare(opts, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
