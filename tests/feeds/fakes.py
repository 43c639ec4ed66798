"""Fakes for the feed tests: masterd's event stream and a recording sink."""

from __future__ import annotations

import json

from ganeti.feeds.relay import Batch


class FakeEventSource:
    """Stands in for ganeti.luxi.twclient.EventStreamClient (signatures checked in a test)."""

    def __init__(self):
        self.on_events = None
        self.on_state = None
        self.started = 0
        self.stopped = 0

    def start(self, on_events, on_state=None):
        self.on_events = on_events
        self.on_state = on_state
        self.started += 1

    def stop(self):
        self.stopped += 1

    # Test controls

    def connect(self, last_serial, oldest_serial=None):
        self.on_state(True, {"last_serial": last_serial,
                             "oldest_serial": oldest_serial or last_serial + 1})

    def disconnect(self):
        self.on_state(False, None)

    def emit(self, *events):
        self.on_events(list(events))


def job(serial, job_id=1, status="running", ops=("OP_TEST_DELAY",), time=1000.0, log=()):
    """A masterd job event in the LUXI stream's form."""
    event = {"serial": serial, "kind": "job", "time": time + serial / 1000.0, "id": job_id,
             "status": status, "opstatus": [status] * len(ops or ()),
             "priority": 0, "log": list(log), "received_ts": [1000, 0],
             "start_ts": None, "end_ts": None}
    if ops is not None:
        event["ops"] = list(ops)
        event["summary"] = [op[3:] for op in ops]
    return event


def archive(serial, job_id):
    return {"serial": serial, "kind": "archive", "time": 1000.0, "id": job_id}


class RecordingSink:
    """A relay sink that decodes what it is sent; ``paused`` is up to the test."""

    def __init__(self):
        self.batches = []
        self.closed = None
        self.aborted = None
        self.client = None
        self.on_write = None

    def write_batch(self, batch):
        assert isinstance(batch, Batch)
        self.batches.append(batch)
        if self.on_write is not None:
            self.on_write(batch)

    def close_feed(self, reason, abort):
        self.closed = reason
        self.aborted = abort

    # Helpers

    def messages(self):
        return [m for b in self.batches for m in json.loads(b.payload)]

    def events(self):
        return [m for m in self.messages() if m["type"] in ("job", "archive")]

    def serials(self):
        return [m["serial"] for m in self.events()]

    def of_type(self, kind):
        return [m for m in self.messages() if m["type"] == kind]

    def clear(self):
        self.batches.clear()
