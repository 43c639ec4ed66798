"""The ``wait_reason`` of masterd's job events reaches feed subscribers unchanged:
live, through a subscription filter, and in a replay after a reconnection."""

import json

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.feeds import protocol
from ganeti.feeds.protocol import Filter, Subscribe
from ganeti.feeds.relay import FeedRelay
from tests.feeds.fakes import FakeEventSource, RecordingSink, job

RULE = "0c6e1f2a-8b1d-4f8e-9d55-3b5c0a0e2f41"
PAUSED = f"paused by filter rule {RULE} (PAUSE, reason 'maintenance: \"pink\" bunny')"
HELD = f"paused by filter rule {RULE} (PAUSE) before its next opcode"
BUCKET = "rate-limited by bucket '2:evacuate': 2 running"


def with_reason(serial, reason, job_id=7, status="queued"):
    """A masterd job event as jobqueue publishes it, with its wait_reason."""
    event = job(serial, job_id=job_id, status=status)
    event["wait_reason"] = reason
    return event


class WaitReasonTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.clock.advance(1000)
        self.source = FakeEventSource()
        self.relay = FeedRelay(self.clock, self.source, flush_interval=0.025)
        self.relay.start()
        self.source.connect(100)

    def client(self, jobs=None, status=None, since=None):
        sink = RecordingSink()
        sink.client = self.relay.connect(sink)
        sink.client.subscribe(Subscribe(Filter(
            None if jobs is None else frozenset(jobs),
            None if status is None else frozenset(status)), since))
        return sink

    def emit_lifecycle(self):
        """A job paused by a rule, released (the reason goes first), run, held, ended."""
        events = [with_reason(101, PAUSED), with_reason(102, None),
                  with_reason(103, None, status="running"),
                  with_reason(104, HELD, status="running"),
                  with_reason(105, None, status="running"),
                  with_reason(106, None, status="success"),
                  with_reason(107, BUCKET, job_id=8)]
        for event in events:  # one read each: several flushes, not one batch
            self.source.emit(event)
            self.clock.advance(1)
        return events

    def reasons(self, sink):
        # m["wait_reason"]: a key left out would fail here; null must stay null
        return [(m["serial"], m["id"], m["status"], m["wait_reason"]) for m in sink.events()]

    def test_live_subscribers_get_the_reason_as_masterd_sent_it(self):
        everything = self.client()
        queued = self.client(status=["queued"])
        other_job = self.client(jobs=[8])
        self.emit_lifecycle()
        self.assertEqual(self.reasons(everything), [
            (101, 7, "queued", PAUSED), (102, 7, "queued", None),
            (103, 7, "running", None), (104, 7, "running", HELD),
            (105, 7, "running", None), (106, 7, "success", None),
            (107, 8, "queued", BUCKET)])
        self.assertEqual(self.reasons(queued), [(101, 7, "queued", PAUSED),
                                                (102, 7, "queued", None),
                                                (107, 8, "queued", BUCKET)])
        self.assertEqual(self.reasons(other_job), [(107, 8, "queued", BUCKET)])

    def test_a_replay_carries_the_reasons_too(self):
        events = self.emit_lifecycle()
        late = self.client(since=100)
        self.clock.advance(1)
        self.assertEqual(self.reasons(late), [
            (e["serial"], e["id"], e["status"], e["wait_reason"]) for e in events])

    def test_the_message_is_the_event_with_type_for_kind(self):
        event = with_reason(101, PAUSED)
        entry = protocol.entry_from_event(event, 101)
        expected = {k: v for k, v in event.items() if k != "kind"}
        expected["type"] = "job"
        self.assertEqual(json.loads(entry.data), expected)

    def test_events_without_the_key_stay_without_it(self):
        # an older masterd: the feed does not invent a reason
        sink = self.client()
        self.source.emit(job(101, job_id=7, status="queued"))
        (message,) = sink.events()
        self.assertNotIn("wait_reason", message)
