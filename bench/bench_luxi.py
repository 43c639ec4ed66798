"""LUXI request rate against a real ganeti-masterd on a virtual cluster.

Measures QueryConfigValues and QueryClusterInfo round trips on one connection
with the blocking client, and the same client against a trivial echo server
on a UNIX socket (the baseline: what the client and the kernel cost alone).
Run: .venv/bin/python bench/bench_luxi.py [REQUESTS]
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.luxi import wire
from ganeti.luxi.client import LuxiClient

BIN = os.path.dirname(os.path.abspath(sys.executable))


def rate(client, method, args, n):
    start = time.perf_counter()
    for _ in range(n):
        client.call(method, *args)
    return n / (time.perf_counter() - start)


def echo_server(path, ready):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    ready.set()
    conn, _ = srv.accept()
    reply = wire.encode_response(True, ["x"])
    buf = b""
    while True:
        data = conn.recv(65536)
        if not data:
            break
        buf += data
        while b"\x03" in buf:
            _, buf = buf.split(b"\x03", 1)
            conn.sendall(reply)
    conn.close()
    srv.close()


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
        ready = threading.Event()
        t = threading.Thread(target=echo_server, args=(echo_path, ready), daemon=True)
        t.start()
        ready.wait()
        with LuxiClient(echo_path) as c:
            baseline = rate(c, "QueryConfigValues", [["master_node"]], n)
        print(f"luxi: {n} requests per method on one connection; QueryConfigValues "
              f"{values:.0f}/s, QueryClusterInfo {info:.0f}/s; echo-server baseline "
              f"{baseline:.0f}/s (masterd at {values / baseline:.2f} of baseline)")
    finally:
        subprocess.run([tool, "destroy", vc], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
