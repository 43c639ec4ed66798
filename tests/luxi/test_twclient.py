"""The asynchronous LUXI client and event stream, against a real LUXI server on a UNIX socket."""

import os
import socket
import tempfile
import time

from twisted.internet import defer, reactor, task
from twisted.trial.unittest import TestCase

from ganeti.core import errors
from ganeti.core.serializer import MAX_JSON_DEPTH
from ganeti.luxi.client import BacklogRetry
from ganeti.luxi.methods import METHODS, STR, Method
from ganeti.luxi.server import LuxiDispatcher, LuxiServerFactory
from ganeti.luxi.twclient import AsyncLuxiClient, EventStreamClient
from ganeti.master.jobs.events import EventBus, subscribe_events_method
from tests.luxi.test_client import full_backlog

TABLE = dict(METHODS)
TABLE["Echo"] = Method("Echo", (STR("text"),), "test")
TABLE["Slow"] = Method("Slow", (), "test")
TABLE["Deep"] = Method("Deep", (), "test")


def nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


class Server:
    """A LUXI server with Echo, Slow (answered by the test), QueryTags (fails) and events."""

    def __init__(self, path):
        self.path = path
        self.slow = []
        self.bus = EventBus(reactor)
        self.port = None

        def slow():
            d = defer.Deferred()
            self.slow.append(d)
            return d

        def query_tags(kind, name):
            raise errors.OpPrereqError(f"Node name {name} not found", errors.ECODE_NOENT)

        impls = {"Echo": lambda text: text, "Slow": slow, "QueryTags": query_tags,
                 "Deep": lambda: nested(MAX_JSON_DEPTH + 1),
                 "SubscribeEvents": subscribe_events_method(self.bus)}
        self.factory = LuxiServerFactory(LuxiDispatcher(impls, TABLE), clock=reactor)
        self.protocols = []
        build = self.factory.buildProtocol

        def tracked(addr):
            proto = build(addr)
            self.protocols.append(proto)
            return proto

        self.factory.buildProtocol = tracked

    def listen(self):
        self.port = reactor.listenUNIX(self.path, self.factory)

    async def stop(self):
        for proto in self.protocols:
            if proto.transport is not None:
                proto.transport.abortConnection()
        self.protocols.clear()
        if self.port is not None:
            await self.port.stopListening()
            self.port = None
        for d in self.slow:
            if not d.called:
                d.callback("late")


def until(check, interval=0.005, limit=2000):
    """Fires once ``check()`` is true (polling the real reactor, without sleeping a thread)."""
    async def run():
        for _ in range(limit):
            if check():
                return
            await task.deferLater(reactor, interval, lambda: None)
        raise AssertionError("condition not reached")
    return defer.Deferred.fromCoroutine(run())


class AsyncLuxiClientTest(TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="luxi-", dir="/tmp")
        self.server = Server(os.path.join(self.dir, "sock"))
        self.server.listen()
        self.clients = []

    async def tearDown(self):
        for client in self.clients:
            client.close()
        await self.server.stop()
        # Let the closed connections finish (trial checks for a clean reactor).
        await task.deferLater(reactor, 0, lambda: None)

    def client(self, **kw):
        client = AsyncLuxiClient(reactor, self.server.path, **kw)
        self.clients.append(client)
        return client

    async def test_call_and_decoded_error(self):
        client = self.client()
        self.assertEqual(await client.call("Echo", "hi"), "hi")
        with self.assertRaises(errors.OpPrereqError) as cm:
            await client.call("QueryTags", "node", "nope")
        self.assertEqual(cm.exception.args, ("Node name nope not found", "unknown_entity"))

    async def test_call_raw_hands_over_the_text(self):
        client = self.client()
        raw = await client.call_raw("Echo", 'say "hi"')
        self.assertEqual(raw.text, b'"say \\"hi\\""')
        self.assertEqual(raw.value(), 'say "hi"')
        with self.assertRaises(errors.OpPrereqError):
            await client.call_raw("QueryTags", "node", "nope")
        with self.assertRaises(errors.OpPrereqError):  # arguments checked before sending
            await client.call_raw("QueryInstancesBulk", None, "name", False)

    async def test_bad_arguments_fail_before_sending(self):
        client = self.client()
        with self.assertRaises(errors.OpPrereqError):
            await client.call("QueryTags", 1, None)
        self.assertEqual(client.connections, 0)

    async def test_slow_call_does_not_block_others(self):
        client = self.client()
        slow = client.call("Slow")
        await until(lambda: self.server.slow)
        self.assertEqual(await client.call("Echo", "fast"), "fast")
        self.assertFalse(slow.called)
        self.server.slow[0].callback("done")
        self.assertEqual(await slow, "done")
        self.assertEqual(client.connections, 2)

    async def test_pool_limit_queues_calls(self):
        client = self.client(pool_size=1)
        slow = client.call("Slow")
        echo = client.call("Echo", "queued")
        await until(lambda: self.server.slow)
        self.assertFalse(echo.called)
        self.server.slow[0].callback("done")
        self.assertEqual(await slow, "done")
        self.assertEqual(await echo, "queued")
        self.assertEqual(client.connections, 1)

    async def test_many_concurrent_calls(self):
        client = self.client(pool_size=4)
        results = await defer.gatherResults([client.call("Echo", str(i)) for i in range(200)])
        self.assertEqual(results, [str(i) for i in range(200)])
        self.assertLessEqual(client.connections, 4)

    async def test_no_master_then_master_back(self):
        client = self.client()
        self.assertEqual(await client.call("Echo", "a"), "a")
        await self.server.stop()
        with self.assertRaises((errors.NoMasterError, errors.ConnectionClosedError)):
            await client.call("Echo", "b")
        with self.assertRaises(errors.NoMasterError):
            await client.call("Echo", "c")
        self.server.listen()
        self.assertEqual(await client.call("Echo", "d"), "d")

    async def test_timeout(self):
        client = self.client(timeout=0.05)
        with self.assertRaises(errors.TimeoutError):
            await client.call("Slow")
        self.assertEqual(await client.call("Echo", "after"), "after")

    async def test_too_deep_answer_is_a_clean_error(self):
        client = self.client()
        with self.assertRaises(errors.ProtocolError) as cm:
            await client.call("Deep")
        self.assertIn("nested more than", str(cm.exception))
        self.assertEqual(await client.call("Echo", "after"), "after")


class BacklogTest(TestCase):
    """A listening socket whose backlog is full and which is never accept()ed:
    connecting gets EAGAIN, which is retried for the connect timeout."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="luxi-", dir="/tmp")
        self.server = Server(os.path.join(self.dir, "sock"))  # not listening by itself
        self.raw = full_backlog(self.server.path)
        self.clients = []

    async def tearDown(self):
        for client in self.clients:
            client.close()
        await self.server.stop()
        for s in self.raw:
            s.close()
        await task.deferLater(reactor, 0, lambda: None)

    def client(self, **kw):
        client = AsyncLuxiClient(reactor, self.server.path,
                                 retry=BacklogRetry(first=0.005, longest=0.02), **kw)
        self.clients.append(client)
        return client

    async def test_full_backlog_is_retried_then_no_master(self):
        client = self.client(connect_timeout=0.2)
        started = time.monotonic()
        with self.assertRaises(errors.NoMasterError) as cm:
            await client.call("Echo", "x")
        self.assertGreaterEqual(time.monotonic() - started, 0.2)
        self.assertIn("Resource temporarily unavailable", str(cm.exception))
        self.assertIn("backlog stayed full", str(cm.exception))

    async def test_call_goes_through_once_masterd_accepts(self):
        client = self.client(connect_timeout=10)
        call = client.call("Echo", "through")
        await task.deferLater(reactor, 0.1, lambda: None)
        self.assertFalse(call.called)  # still retrying
        listener, filler = self.raw
        accepted, _ = listener.accept()  # masterd takes the waiting connection ...
        accepted.close()
        # ... and from now on serves the socket (the reactor takes the listener over)
        listener.setblocking(False)
        self.server.port = reactor.adoptStreamPort(listener.fileno(), socket.AF_UNIX,
                                                   self.server.factory)
        self.assertEqual(await call, "through")


class EventStreamClientTest(TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="luxi-", dir="/tmp")
        self.server = Server(os.path.join(self.dir, "sock"))
        self.server.listen()
        self.events = []
        self.states = []
        self.stream = EventStreamClient(reactor, self.server.path, retry_initial=0.01,
                                        retry_max=0.05)

    async def tearDown(self):
        self.stream.stop()
        await self.server.stop()
        await task.deferLater(reactor, 0, lambda: None)

    def start(self):
        self.stream.start(self.events.extend, lambda up, reply: self.states.append(up))

    def serials(self):
        return [e["serial"] for e in self.events]

    async def test_events_arrive_in_batches_and_resume_after_reconnect(self):
        self.start()
        await until(lambda: self.stream.connected)
        first = [self.server.bus.publish("job", {"id": i}).serial for i in range(3)]
        await until(lambda: len(self.events) == 3)
        self.assertEqual(self.serials(), first)
        # masterd goes away; events published meanwhile are kept in its history
        await self.server.stop()
        await until(lambda: not self.stream.connected)
        missed = [self.server.bus.publish("job", {"id": i}).serial for i in range(3, 6)]
        self.server.listen()
        await until(lambda: len(self.events) == 6)
        self.assertEqual(self.serials(), first + missed)
        self.assertEqual(self.states, [True, False, True])
        self.assertEqual(self.stream.last_serial, missed[-1])

    async def test_too_deep_event_reconnects_cleanly(self):
        self.start()
        await until(lambda: self.stream.connected)
        self.server.bus.publish("job", {"id": 1, "x": nested(MAX_JSON_DEPTH + 5)})
        await until(lambda: self.states == [True, False, True])
        # the consumer is told to re-read the state; the poison event is not replayed
        self.assertEqual(self.events, [{"kind": "resync",
                                        "reason": "unreadable event from masterd"}])
        serial = self.server.bus.publish("job", {"id": 2}).serial
        await until(lambda: len(self.events) == 2)
        self.assertEqual(self.events[1]["serial"], serial)
        self.assertEqual(self.states, [True, False, True])

    async def test_resync_when_too_old(self):
        self.stream.last_serial = 1  # far older than the bus's history
        self.start()
        await until(lambda: self.events)
        self.assertEqual(self.events[0]["kind"], "resync")
        self.assertEqual(self.stream.last_serial, self.server.bus.last_serial)

    async def test_retries_until_masterd_listens(self):
        await self.server.stop()
        self.start()
        await task.deferLater(reactor, 0.05, lambda: None)
        self.assertFalse(self.stream.connected)
        self.server.listen()
        await until(lambda: self.stream.connected)
        serial = self.server.bus.publish("job", {"id": 1}).serial
        await until(lambda: self.events)
        self.assertEqual(self.serials(), [serial])
