"""LUXI request rate against a real ganeti-masterd on a virtual cluster.

Measures QueryConfigValues and QueryClusterInfo round trips on one connection
with the blocking client, and the same client against a minimal Twisted server
in its own process that answers every frame at once (the baseline: what the
client, the kernel and the reactor cost without any LUXI work).
Run: .venv/bin/python bench/bench_luxi.py [REQUESTS]
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.luxi.client import LuxiClient

BIN = os.path.dirname(os.path.abspath(sys.executable))


def rate(client, method, args, n):
    start = time.perf_counter()
    for _ in range(n):
        client.call(method, *args)
    return n / (time.perf_counter() - start)


ECHO_SERVER = """
import sys
from twisted.internet import protocol, reactor
class Echo(protocol.Protocol):
    def dataReceived(self, data):
        for _ in range(data.count(b"\\x03")):
            self.transport.write(b'{"success":true,"result":["x"]}\\x03')
reactor.listenUNIX(sys.argv[1], protocol.Factory.forProtocol(Echo))
reactor.run()
"""


def wait_for_socket(path, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{path} did not come up")


def main(n):
    tmp = tempfile.mkdtemp(prefix="bench-luxi-")
    vc = os.path.join(tmp, "vc")
    tool = os.path.join(BIN, "ganeti-vcluster")
    try:
        subprocess.run([tool, "create", vc], check=True, capture_output=True)
        subprocess.run([tool, "start", vc], check=True, capture_output=True)
        sock = os.path.join(vc, "node1.vcluster.test/var/run/ganeti/socket/ganeti-query")
        with LuxiClient(sock) as c:
            rate(c, "QueryConfigValues", [["master_node"]], 200)  # warm up
            values = rate(c, "QueryConfigValues", [["master_node"]], n)
            info = rate(c, "QueryClusterInfo", [], n)
        echo_path = os.path.join(tmp, "echo.sock")
        echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, echo_path])
        try:
            wait_for_socket(echo_path)
            with LuxiClient(echo_path) as c:
                rate(c, "QueryConfigValues", [["master_node"]], 200)
                baseline = rate(c, "QueryConfigValues", [["master_node"]], n)
        finally:
            echo.terminate()
            echo.wait()
        print(f"luxi: {n} requests per method on one connection; QueryConfigValues "
              f"{values:.0f}/s, QueryClusterInfo {info:.0f}/s; minimal Twisted server in its "
              f"own process (the floor) {baseline:.0f}/s; masterd QueryConfigValues at "
              f"{values / baseline:.2f} of the floor")
    finally:
        subprocess.run([tool, "destroy", vc], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
