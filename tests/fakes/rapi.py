"""Calling RAPI handlers in tests: a LUXI adapter onto an in-process master daemon,
and a request builder.

:class:`MasterLuxi` is the ``Luxi`` interface handlers use (``call(method,
*args) -> Deferred``), answered by the real :class:`MasterDaemon` of an
:class:`InProcessMaster`: every call is checked against the LUXI method
table, encoded and decoded with the real wire format (so failures arrive as
the decoded Ganeti error classes), and dispatched.  :func:`call_handler`
runs a handler to completion, advancing the master's fake clock while it
waits (WaitForJobChange, jobs with delays).
"""

from __future__ import annotations

import inspect
from typing import Any
from urllib.parse import parse_qs

from twisted.internet import defer
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from ganeti.luxi import wire
from ganeti.luxi.methods import METHODS
from ganeti.luxi.server import RequestRefused
from ganeti.rapi import routing
from ganeti.rapi.routing import READ, WRITE, Request, User
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import master_with_nodes

ADMIN = User("admin", frozenset({READ, WRITE}))


class MasterLuxi:
    """The async LUXI client interface, answered by an in-process master daemon."""

    def __init__(self, master: InProcessMaster) -> None:
        self.master = master
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        #: The ids of the jobs created through this client.
        self.job_ids: list[int] = []

    def call(self, method: str, *args: Any) -> defer.Deferred[Any]:
        spec = METHODS.get(method)
        if spec is not None:
            spec.check_args(list(args))  # as the real client does
        self.calls.append((method, args))
        frame = wire.encode_request(method, list(args))[:-1]
        name, wire_args = wire.parse_request(frame)
        d = self.master.dispatcher.dispatch(name, wire_args)

        def encode(outcome: Any) -> Any:
            if isinstance(outcome, Failure):
                err = outcome.value
                if isinstance(err, RequestRefused):
                    response = wire.encode_response(False, str(err.args[0]))
                else:
                    response = wire.encode_error(err)
            else:
                response = wire.encode_response(True, outcome)
                if method == "SubmitJob":
                    self.job_ids.append(int(outcome))
            return wire.parse_response(response[:-1])

        return d.addBoth(encode)

    def call_raw(self, method: str, *args: Any) -> defer.Deferred[wire.RawJson]:
        """``call``, the result as its JSON text (as the real client hands it over)."""
        return self.call(method, *args).addCallback(
            lambda result: wire.parse_response_raw(wire.encode_response(True, result)[:-1]))

    def methods(self) -> list[str]:
        """The LUXI methods called so far."""
        return [method for method, _ in self.calls]

    def submitted(self) -> int:
        """How many jobs were created through this client."""
        return len(self.job_ids)


def make_request(luxi: MasterLuxi, method: str, path: str, query: str = "",
                 body: Any = None, user: User | None = ADMIN,
                 routes: list[routing.Route] | None = None) -> Request:
    """A Request for ``method path?query`` as the server would build it (404 if no route)."""
    from ganeti.rapi.routes import ROUTES

    found = routing.match(routes if routes is not None else ROUTES, path)
    if found is None:
        raise LookupError(f"no route for {path}")
    route, params = found
    return Request(method=method, path=path, params=params,
                   query=parse_qs(query, keep_blank_values=True), body=body, user=user,
                   luxi=luxi, clock=luxi.master.reactor, route=route)


def run_handler(handler: Any, request: Request) -> defer.Deferred[Any]:
    """Call a handler as the server does: a value, a Deferred or a coroutine, as a Deferred."""
    try:
        result = handler(request)
    except Exception:
        return defer.fail()
    if inspect.iscoroutine(result):
        return defer.Deferred.fromCoroutine(result)
    return defer.maybeDeferred(lambda: result)


def call_handler(luxi: MasterLuxi, method: str, path: str, query: str = "",
                 body: Any = None, user: User | None = ADMIN) -> Any:
    """Run the handler of ``method path`` to completion; its value, or the Failure."""
    request = make_request(luxi, method, path, query, body, user)
    assert request.route is not None
    if method not in request.route.methods:
        raise LookupError(f"{method} is not a method of {path}")
    d = run_handler(request.route.methods[method].handler, request)
    return luxi.master.run_until(d)


class RapiTestCase(SynchronousTestCase):
    """A whole master daemon on a fake clock whose node RPC reaches in-process node
    daemons: node1.test (the master) and, once :meth:`add_node` ran, node2.test."""

    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, 2)
        self.luxi = MasterLuxi(self.master)

    # calling handlers

    def call(self, method: str, path: str, query: str = "", body: Any = None) -> Any:
        """The handler's value; a failure is re-raised."""
        outcome = call_handler(self.luxi, method, path, query, body)
        if isinstance(outcome, Failure):
            outcome.raiseException()
        if isinstance(outcome, wire.RawJson):  # sent as it came: the body's value
            return outcome.value()
        return outcome

    def get(self, path: str, query: str = "") -> Any:
        return self.call("GET", path, query)

    def refused(self, error: type[Exception], method: str, path: str, query: str = "",
                body: Any = None) -> Exception:
        """Assert that the call fails with ``error`` and submits no job; the error."""
        before = self.luxi.submitted()
        queue_before = len(self.master.daemon.queue.jobs)
        outcome = call_handler(self.luxi, method, path, query, body)
        if not isinstance(outcome, Failure):
            raise AssertionError(f"{method} {path}?{query} answered {outcome!r}, "
                                 f"expected {error.__name__}")
        if not outcome.check(error):
            outcome.raiseException()
        self.assertEqual(self.luxi.submitted(), before, "a job was submitted")
        self.assertEqual(len(self.master.daemon.queue.jobs), queue_before,
                         "the queue holds a new job")
        return outcome.value

    # jobs

    def wait_job(self, job_id: int) -> dict[str, Any]:
        """Wait (in simulated time) until the job is finished; its J_FIELDS."""
        client = self.master.client()
        prev, serial = None, None
        for _ in range(1000):
            info, logs = client.call("WaitForJobChange", job_id, ["status"], prev, serial, 60)
            prev = info
            serial = max([serial or 0, *(entry[0] for entry in logs)])
            if info[0] in ("success", "error", "canceled"):
                return dict(self.get(f"/2/jobs/{job_id}"))
        raise AssertionError(f"job {job_id} did not finish")

    def succeeds(self, job_id: Any) -> dict[str, Any]:
        """Assert that ``job_id`` is an integer job id whose job succeeds; the job."""
        self.assertIsInstance(job_id, int)
        job = self.wait_job(job_id)
        self.assertEqual(job["status"], "success", job["opresult"])
        return job

    def add_node(self) -> None:
        """Add node2.test to the cluster (OP_NODE_ADD); forgets the calls it made."""
        job_id = self.master.submit({"OP_ID": "OP_NODE_ADD", "node_name": "node2.test",
                                     "primary_ip": "127.0.1.2"})
        self.succeeds(job_id)
        self.luxi.calls.clear()
