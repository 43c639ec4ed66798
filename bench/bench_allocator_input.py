"""The master's side of an allocation: building the version-2 input from a config and
live node data (``ganeti.master.iallocator.build``) and rendering it to JSON, at 10 /
40 / 200 / 1,000 online nodes with 15 instances per node (plain, drbd, file, diskless
in turn).  Both run in the master's I/O pool, not on the reactor; this measures how long
an allocation waits for them before the allocator program starts.

Run: .venv/bin/python bench/bench_allocator_input.py [--sizes 10,40,200,1000]
Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.core import config as configmod
from ganeti.core.placement import model, requests
from ganeti.master.iallocator import build, jobs
from tests.fakes.configs import grow, small_config


def cluster(nodes: int):
    cfg = small_config(enabled_disk_templates=["plain", "drbd", "file", "diskless"])
    data = json.loads(configmod.dump(cfg))
    grow(data, 15 * nodes, nodes)
    for node in data["nodes"].values():
        node["offline"] = False
    return configmod.load(json.dumps(data), check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,40,200,1000")
    args = parser.parse_args()
    print(f"{'nodes':>6} {'instances':>9} {'build s':>8} {'render s':>8} {'MB':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        cfg = cluster(size)
        live = {u: build.LiveNode(memory_total=262144, memory_free=200000, memory_dom0=1024,
                                  cpu_total=64, cpu_dom0=1,
                                  storage={"file": (10**7, 5 * 10**6),
                                           "lvm-vg": (10**7, 5 * 10**6), "lvm-pv": (4, 4)})
                for u in cfg.nodes}
        request = requests.Allocate(name="new.test", memory=1024, vcpus=1,
                                    disk_template="drbd", disks=(model.Disk(10240),),
                                    os="x", hypervisor="fake")
        start = time.perf_counter()
        ialloc = build.build_input(cfg, request, live, {})
        built = time.perf_counter()
        text = jobs.input_text(ialloc)
        done = time.perf_counter()
        print(f"{len(cfg.nodes):>6} {len(cfg.instances):>9} {built - start:>8.2f} "
              f"{done - built:>8.2f} {len(text) / 1e6:>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
