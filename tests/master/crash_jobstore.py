"""Child process for the job store crash test: submits and finishes jobs forever.

Prints ``ack <id>`` once a job's queued state is durable and ``done <id>`` once
its success is; several jobs are in flight at once so batches form.
"""

import functools
import sys

from twisted.internet import reactor, threads
from twisted.python.threadpool import ThreadPool

from ganeti.core.paths import Paths
from ganeti.master.jobs.jobstore import JobStore


def job(job_id, status):
    return {"id": job_id, "ops": [{"input": {"OP_ID": "OP_TEST_DELAY"}, "status": status,
                                   "result": None, "log": [], "priority": 0}]}


def main(root, host, checkpoint_bytes):
    paths = Paths.for_node(root, host)
    pool = ThreadPool(minthreads=2, maxthreads=2)
    store = JobStore(paths, functools.partial(threads.deferToThreadPool, reactor, pool),
                     reactor, checkpoint_bytes=checkpoint_bytes)
    store.recover()
    pool.start()

    def one(_=None):
        (jid,) = store.allocate_ids(1)
        d = store.save(jid, job(jid, "queued"))
        d.addCallback(lambda _: print(f"ack {jid}", flush=True))
        d.addCallback(lambda _: store.save(jid, job(jid, "success")))
        d.addCallback(lambda _: print(f"done {jid}", flush=True))
        d.addCallback(one)

    for _ in range(4):
        one()
    reactor.run()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
