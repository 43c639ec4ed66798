"""Child process for the crash test: commits config changes forever through ConfigWriter.

Prints ``ack <serial_no>`` after each acknowledged change, so the parent knows
what must survive a SIGKILL.
"""

import functools
import sys

from twisted.internet import reactor, threads
from twisted.python.threadpool import ThreadPool

from ganeti.core import config as configmod
from ganeti.master.config.configwriter import ConfigWriter


def main(path: str) -> None:
    cfg = configmod.load_file(path)  # before any thread exists, so a failure exits
    pool = ThreadPool(minthreads=1, maxthreads=2)
    pool.start()
    writer = ConfigWriter(path, cfg,
                          functools.partial(threads.deferToThreadPool, reactor, pool), reactor)

    def change(cfg):
        cfg.cluster.tags.append(f"t{cfg.serial_no}")
        cfg.cluster.serial_no += 1
        return cfg.serial_no + 1  # the serial this change commits

    def submit(_=None):
        d = writer.update(change)
        d.addCallback(lambda serial: sys.stdout.write(f"ack {serial}\n") or sys.stdout.flush())
        d.addCallback(submit)

    for _ in range(3):  # several changes in flight exercise group commit
        submit()
    reactor.run()


if __name__ == "__main__":
    main(sys.argv[1])
