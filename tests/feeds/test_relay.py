"""The feed relay on a fake clock and a fake event source: filters, batching, resume, resync,
upstream changes and slow consumers."""

import inspect
import json

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.feeds.protocol import Filter, Subscribe
from ganeti.feeds.relay import EventSource, FeedRelay
from ganeti.luxi.twclient import EventStreamClient
from tests.feeds.fakes import FakeEventSource, RecordingSink, archive, job

FLUSH = 0.025


def sub(jobs=None, status=None, opcode=None, since=None):
    return Subscribe(Filter(frozenset(jobs) if jobs is not None else None,
                            frozenset(status) if status else None,
                            frozenset(opcode) if opcode else None), since)


class RelayTestCase(SynchronousTestCase):
    history = 100

    def setUp(self):
        self.clock = Clock()
        self.clock.advance(1000)
        self.source = FakeEventSource()
        self.relay = FeedRelay(self.clock, self.source, history=self.history,
                               flush_interval=FLUSH, max_pause=60, catchup_events=10)
        self.relay.start()
        self.source.connect(100)
        self.serial = 100

    def client(self, request=None):
        sink = RecordingSink()
        sink.client = self.relay.connect(sink)
        if request is not None:
            sink.client.subscribe(request)
        return sink

    def emit(self, count=1, **fields):
        events = []
        for _ in range(count):
            self.serial += 1
            events.append(job(self.serial, **fields))
        self.source.emit(*events)
        return [e["serial"] for e in events]

    def settle(self):
        """Run every flush and catch-up step that is due, without moving time much."""
        for _ in range(10000):
            if not self.clock.getDelayedCalls():
                return
            calls = sorted(c.getTime() for c in self.clock.getDelayedCalls())
            if calls[0] > self.clock.seconds() + FLUSH:
                return
            self.clock.advance(max(0, calls[0] - self.clock.seconds()))
        raise AssertionError("the relay never settles")


class SourceInterfaceTest(SynchronousTestCase):
    def test_fake_and_real_source_match_the_protocol(self):
        for cls in (FakeEventSource, EventStreamClient):
            for name in ("start", "stop"):
                expected = list(inspect.signature(getattr(EventSource, name)).parameters)
                got = list(inspect.signature(getattr(cls, name)).parameters)
                self.assertEqual(got, expected, f"{cls.__name__}.{name}")


class SubscribeTest(RelayTestCase):
    def test_subscribed_then_live_events(self):
        sink = self.client(sub())
        self.assertEqual(sink.messages(), [{"type": "subscribed", "serial": 100, "oldest": 101}])
        self.emit(2)
        self.assertEqual(sink.serials(), [101, 102])
        self.assertEqual(sink.events()[0]["type"], "job")

    def test_nothing_before_subscribing_and_after_unsubscribing(self):
        sink = self.client()
        self.emit()
        self.assertEqual(sink.messages(), [])
        sink.client.subscribe(sub())
        self.emit()
        self.clock.advance(1)
        sink.client.unsubscribe()
        self.clock.advance(1)
        self.emit()
        self.clock.advance(1)
        self.assertEqual(sink.serials(), [102])
        self.assertEqual(self.relay.group_count, 0)

    def test_filters(self):
        by_job = self.client(sub(jobs=[2]))
        by_status = self.client(sub(status=["success"]))
        by_opcode = self.client(sub(opcode=["OP_OTHER"]))
        everything = self.client(sub())
        self.source.emit(job(101, job_id=1, status="running"),
                         job(102, job_id=2, status="running"),
                         job(103, job_id=2, status="success", ops=("OP_OTHER",)),
                         job(104, job_id=3, status="success", ops=None),
                         archive(105, 2),
                         {"serial": 106, "kind": "future-kind", "time": 1.0})
        self.assertEqual(by_job.serials(), [102, 103, 105])
        self.assertEqual(by_status.serials(), [103, 104, 105])
        self.assertEqual(by_opcode.serials(), [103, 105])
        self.assertEqual(everything.serials(), [101, 102, 103, 104, 105])

    def test_resubscribing_replaces_the_filter(self):
        sink = self.client(sub(jobs=[1]))
        sink.client.subscribe(sub(jobs=[2]))
        self.source.emit(job(101, job_id=1), job(102, job_id=2))
        self.assertEqual(sink.serials(), [102])

    def test_invalid_request_answer(self):
        sink = self.client()
        sink.client.send_error("nope")
        self.assertEqual(sink.messages(), [{"type": "error", "message": "nope"}])


class BatchingTest(RelayTestCase):
    def test_first_event_at_once_then_one_batch_per_interval(self):
        sink = self.client(sub())
        sink.clear()
        self.emit()
        self.assertEqual(len(sink.batches), 1)
        for _ in range(5):
            self.clock.advance(0.004)
            self.emit()
        self.assertEqual(len(sink.batches), 1)  # coalescing
        self.clock.advance(FLUSH)
        self.assertEqual(len(sink.batches), 2)
        self.assertEqual([len(json.loads(b.payload)) for b in sink.batches], [1, 5])
        # Quiet again: the next event goes out at once.
        self.clock.advance(1)
        self.emit()
        self.assertEqual(len(sink.batches), 3)

    def test_one_read_is_one_batch(self):
        sink = self.client(sub())
        sink.clear()
        self.emit(50)
        self.assertEqual(len(sink.batches), 1)
        self.assertEqual(sink.serials(), list(range(101, 151)))

    def test_clients_with_the_same_filter_share_the_encoded_batch(self):
        sinks = [self.client(sub()) for _ in range(3)] + [self.client(sub(jobs=[1]))]
        for sink in sinks:
            sink.clear()
        self.emit(3)
        batches = [sink.batches[0] for sink in sinks]
        self.assertIs(batches[0], batches[1])
        self.assertIs(batches[1], batches[2])
        self.assertEqual(batches[0].payload, batches[3].payload)  # same events, own group
        self.assertEqual(self.relay.group_count, 2)
        self.assertEqual(self.relay.stats["batches"], 2)


class ResumeTest(RelayTestCase):
    def test_reconnect_with_last_serial_gets_exactly_the_missed_events(self):
        steady = self.client(sub())
        first = self.client(sub())
        for _ in range(5):
            self.emit(3)
            self.clock.advance(0.01)
        self.settle()
        last_seen = first.serials()[-1]
        first.client.disconnect()  # mid-stream
        for _ in range(7):
            self.emit(2)
            self.clock.advance(0.01)
        again = self.client(sub(since=last_seen))
        for _ in range(3):
            self.emit(2)
            self.clock.advance(0.01)
        self.settle()
        combined = first.serials() + again.serials()
        self.assertEqual(combined, steady.serials())
        self.assertEqual(len(set(combined)), len(combined))
        self.assertEqual(again.messages()[0]["type"], "subscribed")

    def test_resume_with_pending_events_does_not_duplicate(self):
        steady = self.client(sub())
        self.emit()  # flushed at once
        self.emit(3)  # pending in the flush interval
        again = self.client(sub(since=102))
        self.settle()
        self.assertEqual(again.serials(), [103, 104])
        self.assertEqual(steady.serials(), [101, 102, 103, 104])

    def test_replay_is_filtered_and_chunked(self):
        self.emit(25, job_id=1)
        self.emit(25, job_id=2)
        sink = self.client(sub(jobs=[2], since=100))
        self.assertEqual(len(sink.events()), 10)  # catchup_events per step
        self.settle()
        self.assertEqual(sink.serials(), list(range(126, 151)))
        self.emit(job_id=2)
        self.settle()
        self.assertEqual(sink.serials()[-1], 151)

    def test_since_equal_to_last_replays_nothing(self):
        self.emit(3)
        sink = self.client(sub(since=103))
        self.emit()
        self.settle()
        self.assertEqual(sink.serials(), [104])
        self.assertEqual(sink.of_type("resync"), [])

    def test_too_old_since_gets_resync_then_live(self):
        self.emit(self.history + 20)
        oldest = self.relay.oldest
        self.assertEqual(oldest, 100 + 20 + 1)
        sink = self.client(sub(since=oldest - 2))
        subscribed, resync = sink.messages()
        self.assertEqual(subscribed, {"type": "subscribed", "serial": 220, "oldest": oldest})
        self.assertEqual((resync["type"], resync["serial"], resync["code"]),
                         ("resync", 220, "too_old"))
        self.emit()
        self.settle()
        self.assertEqual(sink.serials(), [221])
        # The oldest resumable serial still works.
        oldest = self.relay.oldest
        exact = self.client(sub(since=oldest - 1))
        self.settle()
        self.assertEqual(exact.serials(), list(range(oldest, 222)))
        self.assertEqual(exact.of_type("resync"), [])

    def test_since_from_the_future_gets_resync(self):
        sink = self.client(sub(since=5000))
        self.assertEqual(sink.of_type("resync")[0]["code"], "unknown_serial")


class UpstreamTest(RelayTestCase):
    def test_masterd_resync_clears_history_and_resyncs_everybody(self):
        live = self.client(sub(jobs=[9]))
        self.emit(5)
        self.source.emit({"serial": 5000, "kind": "resync", "time": 1.0, "oldest": 4990,
                          "last": 5000, "requested": 105})
        resync = live.of_type("resync")
        self.assertEqual([(r["serial"], r["code"]) for r in resync], [(5000, "upstream")])
        self.assertEqual(self.relay.oldest, 5001)
        self.source.emit(job(5001, job_id=9))
        self.settle()
        self.assertEqual(live.serials(), [5001])
        late = self.client(sub(since=104))
        self.assertEqual(late.of_type("resync")[0]["code"], "too_old")

    def test_masterd_overflow_resync_without_serial(self):
        live = self.client(sub())
        self.emit(2)
        self.source.emit({"kind": "resync", "reason": "the client did not read fast enough",
                          "dropped": 40, "last_dropped_serial": 142}, job(143))
        self.settle()
        self.assertEqual(live.of_type("resync")[0]["serial"], 142)
        self.assertEqual(live.serials(), [101, 102, 143])

    def test_serial_gap_is_a_resync(self):
        live = self.client(sub())
        self.emit()
        self.source.emit(job(110))
        self.settle()
        self.assertEqual(live.of_type("resync")[0]["serial"], 109)
        self.assertEqual(live.serials(), [101, 110])

    def test_duplicates_are_dropped(self):
        live = self.client(sub())
        self.source.emit(job(101), job(101), job(100), job(102))
        self.settle()
        self.assertEqual(live.serials(), [101, 102])
        self.assertEqual(self.relay.stats["duplicates"], 2)

    def test_lagging_client_behind_an_upstream_resync(self):
        sink = self.client(sub())
        sink.client.pause()
        self.emit(3)
        self.source.emit({"serial": 5000, "kind": "resync", "time": 1.0})
        self.source.emit(job(5001))
        sink.clear()
        sink.client.resume()
        self.settle()
        self.assertEqual([(m["type"], m.get("code")) for m in sink.messages()],
                         [("resync", "upstream"), ("job", None)])
        self.assertEqual(sink.serials(), [5001])

    def test_serials_going_back_on_reconnect_is_a_resync(self):
        live = self.client(sub())
        self.emit(2)
        self.source.disconnect()
        self.source.connect(50)
        self.source.emit(job(51))
        self.settle()
        self.assertEqual(live.of_type("resync")[0]["serial"], 50)
        self.assertEqual(live.serials(), [101, 102, 51])

    def test_upstream_state_messages(self):
        live = self.client(sub())
        idle = self.client()
        self.source.disconnect()
        self.source.connect(100)  # the stream resumes where it was
        self.emit()
        expected = [{"type": "upstream", "connected": False},
                    {"type": "upstream", "connected": True}]
        self.assertEqual(live.of_type("upstream"), expected)
        self.assertEqual(idle.of_type("upstream"), expected)
        self.assertEqual(live.serials(), [101])
        self.assertEqual(live.of_type("resync"), [])

    def test_subscription_before_masterd_answers_is_served_when_it_does(self):
        relay = FeedRelay(self.clock, source := FakeEventSource())
        relay.start()
        sink = RecordingSink()
        relay.connect(sink).subscribe(sub())
        resuming = RecordingSink()
        relay.connect(resuming).subscribe(sub(since=7))
        self.assertEqual(sink.messages(), [{"type": "upstream", "connected": False}])
        source.connect(10)
        source.emit(job(11))
        self.assertEqual([m["type"] for m in sink.messages()],
                         ["upstream", "upstream", "subscribed", "job"])
        self.assertEqual(resuming.of_type("resync")[0]["code"], "too_old")

    def test_stop_closes_clients_and_the_source(self):
        sink = self.client(sub())
        self.emit(3)
        self.relay.stop()
        self.assertEqual(self.source.stopped, 1)
        self.assertEqual((sink.closed, sink.aborted), ("the feed is shutting down", False))
        self.assertEqual(self.relay.clients, set())
        self.assertEqual(self.clock.getDelayedCalls(), [])


class SlowConsumerTest(RelayTestCase):
    history = 1000

    def test_short_pause_loses_nothing(self):
        steady = self.client(sub())
        slow = self.client(sub())
        self.emit(5)
        slow.client.pause()
        for _ in range(20):
            self.emit(3)
            self.clock.advance(0.01)
        self.assertEqual(slow.serials(), list(range(101, 106)))
        self.assertFalse(slow.client.live)
        slow.client.resume()
        self.settle()
        self.emit()
        self.settle()
        self.assertEqual(slow.serials(), steady.serials())
        self.assertTrue(slow.client.live)

    def test_clients_catching_up_together_share_chunks(self):
        slow = [self.client(sub()) for _ in range(3)]
        for sink in slow:
            sink.client.pause()
            sink.clear()
        self.emit(25)
        self.settle()
        for sink in slow:
            sink.client.resume()
        self.settle()
        for sink in slow:
            self.assertEqual(sink.serials(), list(range(101, 126)))
        self.assertIs(slow[0].batches[0], slow[2].batches[0])
        self.assertEqual(self.relay.stats["catchup_batches"], 3)  # 25 events, 10 a chunk

    def test_pause_while_writing_a_catch_up_chunk(self):
        steady = self.client(sub())
        slow = self.client(sub())
        slow.client.pause()
        self.emit(100)
        self.settle()

        def pause_again(batch):
            slow.on_write = None
            slow.client.pause()
        slow.on_write = pause_again
        slow.client.resume()
        self.assertEqual(len(slow.events()), 10)
        self.settle()
        self.assertEqual(len(slow.events()), 10)  # paused: no more steps
        slow.client.resume()
        self.settle()
        self.assertEqual(slow.serials(), steady.serials())

    def test_falling_out_of_the_history_gives_a_resync(self):
        slow = self.client(sub())
        slow.client.pause()
        self.emit(self.history + 5)
        slow.client.resume()
        self.assertEqual([(m["type"], m.get("code"), m.get("serial")) for m in slow.messages()],
                         [("subscribed", None, 100), ("resync", "slow_consumer", 1105)])
        self.emit()
        self.settle()
        self.assertEqual(slow.serials(), [1106])

    def test_repeated_resyncs_close_the_client(self):
        slow = self.client(sub())
        for _ in range(3):
            slow.client.pause()
            self.emit(self.history + 5)
            self.clock.advance(FLUSH)
            slow.client.resume()
        self.assertEqual(len(slow.of_type("resync")), 2)
        self.assertTrue(slow.aborted)
        self.assertIn("fell behind the history 3 times", slow.closed)
        self.assertNotIn(slow.client, self.relay.clients)

    def test_resyncs_far_apart_are_tolerated(self):
        slow = self.client(sub())
        for _ in range(5):
            slow.client.pause()
            self.emit(self.history + 5)
            slow.client.resume()
            self.clock.advance(61)
        self.assertIsNone(slow.closed)
        self.assertEqual(len(slow.of_type("resync")), 5)

    def test_paused_too_long_is_closed(self):
        slow = self.client(sub())
        slow.client.pause()
        self.clock.advance(59)
        self.assertIsNone(slow.closed)
        self.clock.advance(1)
        self.assertTrue(slow.aborted)
        self.assertIn("did not read for 60s", slow.closed)

    def test_pause_deadline_restarts_with_each_pause(self):
        slow = self.client(sub())
        slow.client.pause()
        self.clock.advance(50)
        slow.client.resume()
        slow.client.pause()
        self.clock.advance(50)
        self.assertIsNone(slow.closed)
        self.clock.advance(10)
        self.assertIsNotNone(slow.closed)

    def test_control_messages_wait_while_paused_and_are_capped(self):
        slow = self.client(sub())
        slow.clear()
        slow.client.pause()
        slow.client.send_error("one")
        slow.client.subscribe(sub(jobs=[1]))
        self.assertEqual(slow.messages(), [])
        slow.client.resume()
        self.assertEqual([m["type"] for m in slow.messages()], ["error", "subscribed"])
        slow.client.pause()
        for _ in range(self.relay.max_control + 1):
            slow.client.send_error("spam")
        self.assertIn("too many messages", slow.closed)

    def test_memory_stays_bounded_over_100k_events(self):
        self.relay.catchup_events = 500
        steady = self.client(sub())
        slow = self.client(sub())
        slow.client.pause()
        written = []
        steady.on_write = lambda batch: written.append(len(batch.payload))
        steady.batches = _Discard()
        for _ in range(1000):
            self.emit(100)
            self.clock.advance(FLUSH)
            self.assertLessEqual(len(self.relay._history), self.history)
            self.assertEqual(len(slow.client._control), 0)
            if _ == 500:
                slow.client.resume()  # it reads for a while...
                self.settle()
                slow.client.pause()  # ...and stops again
        self.assertEqual(len(written), 1000)
        self.assertLessEqual(len(slow.batches), 4)
        # It never got more than its replay chunks; now it is closed for not reading.
        self.clock.advance(60)
        self.assertTrue(slow.aborted)
        self.assertEqual(self.relay.clients, {steady.client})


class _Discard(list):
    def append(self, item):
        pass
