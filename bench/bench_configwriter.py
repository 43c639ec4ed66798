"""Config writer: durable changes per second, one at a time vs group commit.

Both modes write with fsync (tmp, fsync, rename, fsync dir) on the same disk in
the same run; the ratio is what group commit buys.  Run: .venv/bin/python
bench/bench_configwriter.py [CHANGES]
"""

import functools
import os
import sys
import tempfile
import time

from twisted.internet import defer, task, threads
from twisted.python.threadpool import ThreadPool

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.core import config as configmod
from ganeti.master.config.configwriter import ConfigWriter
from tests.fakes.configs import small_config


def change(cfg):
    cfg.cluster.tags.append(f"t{cfg.serial_no}")


async def run(reactor, changes):
    pool = ThreadPool(minthreads=1, maxthreads=4)
    pool.start()
    run_blocking = functools.partial(threads.deferToThreadPool, reactor, pool)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("sequential", "concurrent"):
            path = os.path.join(tmp, f"{mode}.data")
            with open(path, "w") as f:
                f.write(configmod.dump(small_config()))
            writer = ConfigWriter(path, configmod.load_file(path), run_blocking, reactor)
            start = time.perf_counter()
            if mode == "sequential":
                for _ in range(changes):
                    await writer.update(change)
            else:
                await defer.gatherResults([writer.update(change) for _ in range(changes)])
            elapsed = time.perf_counter() - start
            assert len(configmod.load_file(path).cluster.tags) == changes
            results[mode] = (changes / elapsed, writer.writes)
    pool.stop()
    seq, conc = results["sequential"], results["concurrent"]
    print(f"configwriter: {changes} durable changes; one at a time {seq[0]:.0f}/s "
          f"({seq[1]} writes); submitted together {conc[0]:.0f}/s ({conc[1]} writes); "
          f"group commit speed-up x{conc[0] / seq[0]:.1f}")


def main(reactor, changes="300"):
    return defer.Deferred.fromCoroutine(run(reactor, int(changes)))


if __name__ == "__main__":
    task.react(main, sys.argv[1:])
