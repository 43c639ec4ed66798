"""WebSocket job feeds for real: TLS sockets on a real reactor, and a virtual cluster.

``TLSFeedTest`` serves the relay's resource from a plain twisted.web site over
real TLS, fed by a fake event source, and checks resume exactness and slow
consumers at the socket level (backpressure through TLSMemoryBIOProtocol).
``ClusterFeedTest`` runs a real masterd and ganeti-rapi on a virtual cluster,
submits OP_TEST_DELAY jobs, and reads ``/2/feed`` with a blocking client:
disconnect and resume with the last serial, and a slow consumer whose socket
stops reading while the daemon's memory stays bounded.
"""

from __future__ import annotations

import json
import os
import threading
import time

from twisted.internet import defer, reactor
from twisted.internet.endpoints import SSL4ClientEndpoint, SSL4ServerEndpoint
from twisted.internet.ssl import Certificate, CertificateOptions, optionsForClientTLS
from twisted.trial.unittest import TestCase
from twisted.web.resource import Resource
from twisted.web.server import Site

from ganeti.cli import rapicall
from ganeti.core import constants, crypto
from ganeti.feeds.relay import FeedRelay
from ganeti.feeds.websocket import feed_resource
from tests.feeds import rawclient
from tests.feeds.fakes import FakeEventSource, job
from tests.feeds.wsclient import BlockingFeedClient, FeedClosed
from tests.integration.clustercase import ClusterCase
from tests.integration.jobtools import delay, wait_for_jobs

_PEM = {}


def server_pem():
    if "pem" not in _PEM:
        _PEM["pem"] = crypto.generate_self_signed("localhost")
    return _PEM["pem"]


def tls_options(pem):
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from OpenSSL import crypto as ocrypto
    key = serialization.load_pem_private_key(pem, password=None)
    cert = x509.load_pem_x509_certificate(pem)
    return CertificateOptions(privateKey=ocrypto.PKey.from_cryptography_key(key),
                              certificate=ocrypto.X509.from_cryptography(cert))


def tcp_buffered(feed_protocol):
    """Bytes waiting in the server's TCP transport under the TLS layer of a feed connection."""
    tls = feed_protocol.transport
    tcp = tls.transport
    return len(tcp.dataBuffer) - tcp.offset + tcp._tempDataLen


class TLSFeedTest(TestCase):
    """The relay and resource on real TLS sockets, with a fake masterd stream."""

    timeout = 120

    async def setUpAsync(self, **relay_options):
        pem = server_pem()
        self.source = FakeEventSource()
        self.relay = FeedRelay(reactor, self.source, **relay_options)
        self.relay.start()
        self.source.connect(100)
        self.serial = 100
        root = Resource()
        two = Resource()
        root.putChild(b"2", two)
        two.putChild(b"feed", feed_resource(self.relay, reactor))
        endpoint = SSL4ServerEndpoint(reactor, 0, tls_options(pem), interface="127.0.0.1")
        self.port = await endpoint.listen(Site(root))
        self.addCleanup(self._shutdown)
        self.clients = []
        self.trust = Certificate.loadPEM(pem)

    async def _shutdown(self):
        for client in self.clients:
            if client.transport is not None and client.transport.connected:
                client.transport.abortConnection()
        await defer.DeferredList([c.closed for c in self.clients if not c.closed.called])
        # The server sees each connection end in a later turn of the reactor.
        while self.relay.clients:
            await _turn()
        self.relay.stop()
        await self.port.stopListening()

    async def connect(self, subscribe=None):
        endpoint = SSL4ClientEndpoint(reactor, "127.0.0.1", self.port.getHost().port,
                                      optionsForClientTLS("localhost", trustRoot=self.trust))
        client = await endpoint.connect(rawclient.factory())
        self.clients.append(client)
        head = await client.opened
        self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
        if subscribe is not None:
            client.send(dict({"type": "subscribe", "jobs": "all"}, **subscribe))
            await client.wait(lambda ms: any(m["type"] == "subscribed" for m in ms))
        return client

    async def emit(self, count, waiter, size=0):
        """Emit ``count`` events and wait until ``waiter`` has them all."""
        events = []
        for _ in range(count):
            self.serial += 1
            event = job(self.serial, job_id=self.serial % 7)
            if size:
                event["log"] = [[1, [0, 0], "message", "x" * size]]
            events.append(event)
        self.source.emit(*events)
        last = self.serial
        await waiter.wait(lambda ms: bool(ms) and ms[-1].get("serial") == last)

    def server_side(self, paused=None):
        return [c for c in self.relay.clients if paused is None or c.paused == paused]

    async def test_reconnect_with_last_serial_gets_exactly_what_was_missed(self):
        await self.setUpAsync(history=1000)
        steady = await self.connect({})
        first = await self.connect({})
        for _ in range(5):
            await self.emit(7, steady)
        first.transport.abortConnection()  # mid-stream: the serials it got are all it has
        await first.closed
        last_seen = first.serials()[-1]
        for _ in range(5):
            await self.emit(7, steady)
        again = await self.connect({"since": last_seen})
        for _ in range(3):
            await self.emit(5, steady)
        await again.wait(lambda ms: ms and ms[-1].get("serial") == self.serial)
        combined = first.serials() + again.serials()
        self.assertEqual(combined, steady.serials())
        self.assertEqual(len(set(combined)), len(combined))
        self.assertEqual(steady.serials(), list(range(101, self.serial + 1)))

    async def test_a_socket_that_stops_reading_pauses_the_client_and_memory_stays_bounded(self):
        await self.setUpAsync(history=500, max_pause=600)
        steady = await self.connect({})
        slow = await self.connect({"jobs": list(range(7))})  # its own group
        slow.transport.pauseProducing()  # the client stops reading its socket
        batches = 0
        while not self.server_side(paused=True):
            await self.emit(50, steady, size=4000)
            batches += 1
            self.assertLess(batches, 400, "the server never saw the client's buffer fill")
        [paused] = self.server_side(paused=True)
        self.assertFalse(paused.live)
        slow_proto = paused.sink
        peak = tcp_buffered(slow_proto)
        # Many more events while it does not read: nothing more is buffered for it.
        for _ in range(40):
            await self.emit(50, steady, size=4000)
            self.assertLessEqual(tcp_buffered(slow_proto), peak)
        self.assertLess(peak, 1024 * 1024)
        self.assertEqual(paused._control, type(paused._control)())
        # It reads again: it is told to resync (it fell out of the 500-event history)
        # and then continues live from the resync serial.
        slow.transport.resumeProducing()
        await slow.wait(lambda ms: any(m["type"] == "resync" for m in ms))
        resync = next(m for m in slow.messages if m["type"] == "resync")
        self.assertEqual(resync["code"], "slow_consumer")
        await self.emit(10, steady)
        await slow.wait(lambda ms: ms[-1].get("serial") == self.serial)
        after = [s for s in slow.serials() if s > resync["serial"]]
        self.assertEqual(after, list(range(resync["serial"] + 1, self.serial + 1)))
        before = [s for s in slow.serials() if s <= resync["serial"]]
        self.assertEqual(before, list(range(101, 101 + len(before))))

    async def test_a_short_stall_loses_nothing(self):
        await self.setUpAsync(history=10000, max_pause=600)
        steady = await self.connect({})
        slow = await self.connect({"jobs": list(range(7))})
        slow.transport.pauseProducing()
        while not self.server_side(paused=True):
            await self.emit(50, steady, size=4000)
        await self.emit(100, steady, size=100)
        slow.transport.resumeProducing()
        await slow.wait(lambda ms: ms[-1].get("serial") == self.serial)
        self.assertEqual(slow.serials(), steady.serials())
        self.assertEqual([m for m in slow.messages if m["type"] == "resync"], [])

    async def test_a_client_that_never_reads_again_is_closed(self):
        await self.setUpAsync(history=500, max_pause=0.5)
        steady = await self.connect({})
        slow = await self.connect({"jobs": list(range(7))})
        slow.transport.pauseProducing()
        while not self.server_side(paused=True):
            await self.emit(50, steady, size=4000)
        while self.relay.stats["closed_slow"] == 0:
            await _turn()
        self.assertEqual(len(self.relay.clients), 1)
        # The client notices once it reads again: the data that made it, then the end.
        slow.transport.resumeProducing()
        await slow.closed


def _turn():
    d = defer.Deferred()
    reactor.callLater(0.001, d.callback, None)
    return d


# The real stack: masterd + ganeti-rapi on a virtual cluster.


def rss_kib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


class ClusterFeedTest(ClusterCase):
    """A real masterd and ganeti-rapi; feed clients over verified TLS with Basic auth."""

    cluster = None

    #: The relay's pause limit for this cluster's ganeti-rapi: the slow consumer
    #: must outlast 8,000 jobs, which a loaded CI machine runs in more than the
    #: default 60 s.
    FEED_MAX_PAUSE = 600

    PREFIX = "ganeti-feeds-"

    @classmethod
    def make_cluster(cls, **overrides):
        # and a reader that falls behind now and then while the machine is busy
        # (the 4 KiB window of the slow one) is not closed for falling behind often
        os.environ["GANETI_FEED_MAX_PAUSE"] = str(cls.FEED_MAX_PAUSE)
        os.environ["GANETI_FEED_MAX_RESYNCS"] = "100"
        try:
            return super().make_cluster(**overrides)
        finally:
            del os.environ["GANETI_FEED_MAX_PAUSE"], os.environ["GANETI_FEED_MAX_RESYNCS"]

    @classmethod
    def setUpCluster(cls):
        with open(os.path.join(cls.cluster.dir, "vcluster.json"), encoding="utf-8") as f:
            cls.cluster_name = json.load(f)["cluster_name"]
        cls.user, cls.password = rapicall.read_credentials(
            os.path.join(cls.cluster.dir, "rapi-credentials"))
        cls.ca = os.path.join(cls.cluster.root, "var/lib/ganeti/rapi.pem")
        with open(os.path.join(cls.cluster.root, "var/run/ganeti/ganeti-rapi.pid"),
                  encoding="ascii") as f:
            cls.rapi_pid = int(f.read().strip())

    def setUp(self):
        self.luxi = self.cluster.client()
        self.addCleanup(self.luxi.close)

    def feed(self, rcvbuf=None, **subscription):
        client = BlockingFeedClient(self.cluster.ips[0], constants.DEFAULT_RAPI_PORT,
                                    self.user, self.password, cafile=self.ca,
                                    server_hostname=self.cluster_name, rcvbuf=rcvbuf)
        self.addCleanup(client.close)
        client.connect()
        client.subscribe(**subscription)
        return client

    def run_jobs(self, count, archive=False):
        ids = self.luxi.call("SubmitManyJobs", [[delay(0.01)] for _ in range(count)])
        ids = [jid for ok, jid in ids if ok]
        self.assertEqual(len(ids), count)
        statuses = wait_for_jobs(self.luxi, ids, timeout=120)
        self.assertEqual(set(statuses.values()), {"success"})
        if archive:
            self.luxi.call("AutoArchiveJobs", 0, 60)  # keeps the queue below its limit
        return ids

    def test_resume_after_disconnect_gets_exactly_the_missed_events(self):
        steady = self.feed(jobs="all")
        first = self.feed(jobs="all")
        ids = self.run_jobs(20)
        first.read_until(lambda c: c.has_final(ids[:10]))
        last_seen = first.serials()[-1]
        first.close()  # mid-stream: what it has not read yet is lost with the socket
        ids += self.run_jobs(30)
        again = self.feed(jobs="all", since=last_seen)
        ids += self.run_jobs(10)
        steady.read_until(lambda c: c.has_final(ids))
        again.read_until(lambda c: c.serials() and c.serials()[-1] >= steady.serials()[-1])
        combined = first.serials() + again.serials()
        self.assertEqual(combined, steady.serials())
        self.assertEqual(len(set(combined)), len(combined))
        # Every job event of masterd is there: serials are contiguous, 3 events a job.
        serials = steady.serials()
        self.assertEqual(serials, list(range(serials[0], serials[0] + len(serials))))
        self.assertEqual([(m["id"], m["status"]) for m in steady.events()
                          if m["id"] == ids[-1]],
                         [(ids[-1], "queued"), (ids[-1], "running"), (ids[-1], "success")])
        self.assertEqual(again.of_type("resync"), [])
        self.assertEqual(steady.events()[-1]["ops"], ["OP_TEST_DELAY"])
        steady.check_no_silent_gap()

    def test_slow_consumer_does_not_grow_the_daemon(self):
        steady = self.feed(jobs="all")
        slow = self.feed(jobs="all", opcode=["OP_TEST_DELAY"], rcvbuf=4096)
        stop_steady = self.drain(steady)
        stop_slow = self.drain(slow)
        self.addCleanup(stop_steady)
        # Fill the relay's history (10,000 events) while both read: its size is the
        # daemon's steady state.
        for _ in range(12):
            self.run_jobs(300, archive=True)
        stop_slow()
        before = rss_kib(self.rapi_pid)
        samples = []
        # Now ``slow`` stops reading: 8,000 jobs (32,000 events, ~12 MB of JSON) go by,
        # more than the socket buffers and the relay's history hold (half as many all
        # fit).  They must go by within the relay's pause limit (FEED_MAX_PAUSE), after
        # which a client that does not read is closed: about 26 s on a quiet machine.
        began = time.monotonic()
        for _ in range(16):
            self.run_jobs(500, archive=True)
            samples.append(rss_kib(self.rapi_pid))
        paused = time.monotonic() - began
        self.assertLess(paused, self.FEED_MAX_PAUSE - 5,
                        "the jobs took so long that the relay's pause limit may have "
                        "closed the slow client")
        growth = max(samples) - before
        self.assertLess(growth, 4 * 1024, f"RSS before {before} KiB, then {samples}")
        # Reading again, it gets what was in flight, then a resync (it fell out of the
        # history), then live events: never a silent gap.
        slow.read_until(lambda c: c.of_type("resync"), timeout=60)
        self.assertEqual(slow.of_type("resync")[0]["code"], "slow_consumer")
        ids = self.run_jobs(5)
        slow.read_until(lambda c: c.has_final(ids))
        slow.check_no_silent_gap()

    def drain(self, client):
        """Read ``client`` in a thread until the returned function is called."""
        stop = threading.Event()
        reader = threading.Thread(target=_drain, args=(client, stop), daemon=True)
        reader.start()

        def stopper():
            stop.set()
            reader.join(10)
        return stopper


def _drain(client, stop):
    while not stop.is_set():
        try:
            client.read_for(0.2)
        except (FeedClosed, OSError):
            return
