"""``gnt-instance list`` and ``/2/instances?bulk=1`` on the master at scale (issue 16).

Builds a config of 20,000 instances on 1,000 nodes (``tests/fakes/configs.grow``:
plain, drbd, file and diskless disks, one NIC each; every node online here), and
answers in-process, as masterd does, with the nodes' runtime data coming from a
fake collector (each node reports its running instances, as the fake hypervisor's
``all_instances_info`` does; the RPC itself is not timed):

- ``Query("instance", [name, os, pnode, status, oper_ram])``: gnt-instance list's
  default fields (live: every primary node is asked once);
- the same with a filter naming one instance (one node asked);
- ``QueryInstances([], I_FIELDS)``: what ``/2/instances?bulk=1`` asks;
- as a baseline, ``Query("node", gnt-node list's default fields)``.

Each figure is the best of ``--repeat`` runs and includes encoding the answer as
JSON (what LUXI sends); the first run of the instance list also sorts the names
(kept with the config afterwards) and is printed separately.

With ``--e2e`` it also measures end to end on a real 3-node virtual cluster whose
master's config is grown the same way (the extra nodes offline, as in
bench_config_scale.py): LUXI ``Query`` from a client, Debian's real
``gnt-instance list`` (the whole process), and ``GET /2/instances?bulk=1`` through
ganeti-rapi over HTTPS.

Run: .venv/bin/python bench/bench_instance_list.py [--instances N] [--nodes N]
[--repeat N] [--e2e].  Never part of the test run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet import defer

from ganeti.core import config as configmod
from ganeti.core.objects import ConfigData, Node
from ganeti.master.query.instancequeries import InstanceQueries
from ganeti.master.query.nodequeries import NodeQueries
from ganeti.rapi.resources.instances import I_FIELDS
from tests.fakes.configs import grow, small_config

LIST_FIELDS = ["name", "os", "pnode", "status", "oper_ram"]
NODE_FIELDS = ["name", "dtotal", "dfree", "mtotal", "mnode", "mfree", "pinst_cnt",
               "sinst_cnt"]


def build(instances: int, nodes: int) -> ConfigData:
    d = grow(small_config().to_dict(), instances, nodes)
    for node in d["nodes"].values():
        node["offline"] = False
    return configmod.parse(d)


def collectors(cfg: ConfigData) -> tuple[Any, Any]:
    running: dict[str, dict[str, Any]] = {u: {} for u in cfg.nodes}
    for inst in cfg.instances.values():
        if inst.admin_state == "up":
            running[inst.primary_node][inst.name] = {"memory": 1024, "vcpus": 1, "state": 0,
                                                     "time": 1.0}

    def instance_info(nodes: list[Node], hvparams: dict[str, Any]) -> dict[str, Any]:
        return {n.uuid: running[n.uuid] for n in nodes}

    def node_info(nodes: list[Node]) -> defer.Deferred[dict[str, Any]]:
        return defer.succeed({n.uuid: {"memory_total": 32768, "memory_free": 16384,
                                       "memory_dom0": 1024, "disk_total": 10 ** 6,
                                       "disk_free": 5 * 10 ** 5, "cpu_total": 8}
                              for n in nodes})
    return instance_info, node_info


def timed(fn: Any, repeat: int) -> tuple[float, int]:
    """Best wall time of ``repeat`` runs (answer + JSON encoding), and the answer size."""
    best, size = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        d = defer.ensureDeferred(fn())
        answer = d.result
        text = json.dumps(answer)
        best = min(best, time.perf_counter() - start)
        size = len(text)
    return best, size


def end_to_end(instances: int, nodes: int, repeat: int) -> str:
    """The same queries through the real daemons and clients; one line of figures."""
    import shutil
    import ssl
    import tempfile
    import urllib.request

    from ganeti.core import configjournal
    from ganeti.core.paths import Paths
    from ganeti.luxi.client import LuxiClient
    from tests.integration.helpers import free_ip_base, node_env, run

    root_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    vcluster = [sys.executable, os.path.join(root_dir, "bin", "ganeti-vcluster")]
    master = "node1.vcluster.test"
    work = tempfile.mkdtemp(prefix="bench-instance-list-")
    directory = os.path.join(work, "vc")
    base = free_ip_base(3)
    run([*vcluster, "create", directory, "--nodes", "3", "--ip-base", base], timeout=300)
    try:
        paths = Paths.for_node(os.path.join(directory, master), master)
        with open(paths.config_file, encoding="utf-8") as f:
            d = json.load(f)
        cfg = configmod.parse(grow(d, instances, nodes))
        with open(paths.config_file, "w", encoding="utf-8") as f:
            f.write(configmod.dump(cfg))
        journal = configjournal.journal_path(paths.config_file)
        if os.path.exists(journal):
            os.unlink(journal)
        run([*vcluster, "start", directory], timeout=600)

        def best(fn: Any) -> float:
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return min(times)

        with LuxiClient(paths.luxi_socket, timeout=120.0) as client:
            luxi = best(lambda: client.call("Query", "instance", LIST_FIELDS, None))
        env = node_env(directory, master)
        cli = best(lambda: run(["/usr/share/ganeti/3.0/gnt-instance", "list"], env=env,
                               timeout=120))
        ours = best(lambda: run([sys.executable, os.path.join(root_dir, "bin", "gnt-instance"),
                                 "list"], env=env, timeout=120))
        with open(os.path.join(directory, "rapi-credentials"), encoding="utf-8") as f:
            user, password = f.read().split()
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://{base}1:5080/2/instances?bulk=1"

        received: list[bytes] = []

        def rapi() -> None:
            with urllib.request.urlopen(url, context=context, timeout=120) as response:
                received.append(response.read())
        bulk = best(rapi)
        start = time.perf_counter()
        json.loads(received[-1])
        decode = time.perf_counter() - start
        return (f"end to end ({len(cfg.instances)} instances, 3 live nodes): LUXI Query of "
                f"the default fields {luxi * 1000:.0f} ms; gnt-instance list (the whole "
                f"process): ours {ours * 1000:.0f} ms, Debian's {cli * 1000:.0f} ms; GET "
                f"/2/instances?bulk=1 over HTTPS to the last byte {bulk * 1000:.0f} ms "
                f"({len(received[-1]) / 1e6:.1f} MB; the client's json.loads of it "
                f"{decode * 1000:.0f} ms more)")
    finally:
        run([*vcluster, "destroy", directory], timeout=300, check=False)
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=20000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--e2e", action="store_true",
                        help="also through the real daemons and clients (a virtual cluster)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    cfg = build(args.instances, args.nodes)
    built = time.perf_counter() - t0
    gc.freeze()  # as masterd does once its config is loaded (ganeti/master/tap.py)
    instance_info, node_info = collectors(cfg)
    iq = InstanceQueries(lambda: cfg, instance_info)
    nq = NodeQueries(lambda: cfg, node_info)
    first, _ = timed(lambda: iq.query_instance(LIST_FIELDS, None), 1)
    listing, list_bytes = timed(lambda: iq.query_instance(LIST_FIELDS, None), args.repeat)
    one_name = sorted(cfg.instances.values(), key=lambda i: i.name)[0].name
    one, _ = timed(lambda: iq.query_instance(LIST_FIELDS, ["=", "name", one_name]),
                   args.repeat)
    bulk, bulk_bytes = timed(lambda: iq.query_instances([], list(I_FIELDS), False),
                             args.repeat)
    nodes, _ = timed(lambda: nq.query_node(NODE_FIELDS, None), max(1, args.repeat // 2))
    print(f"instance list: {len(cfg.instances)} instances on {len(cfg.nodes)} nodes "
          f"(config built in {built:.1f}s); gnt-instance list default fields "
          f"{listing * 1000:.0f} ms ({list_bytes / 1e6:.1f} MB, first run with the sort "
          f"{first * 1000:.0f} ms); one instance by name {one * 1000:.1f} ms; "
          f"/2/instances?bulk=1 (QueryInstances, I_FIELDS) {bulk * 1000:.0f} ms "
          f"({bulk_bytes / 1e6:.1f} MB); baseline gnt-node list default fields "
          f"{nodes * 1000:.0f} ms")
    if args.e2e:
        print(end_to_end(args.instances, args.nodes, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
