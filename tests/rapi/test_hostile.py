"""The RAPI app against hostile requests, on a fake clock: coalescing on the parsed
query, heavy reads bounded per address and run a few at a time (round-robin by
address), parallel password guessing capped in flight (429) with the failure count
kept while guessing goes on, deeply nested JSON bodies, and rate-limited logs."""

from twisted.internet import defer
from twisted.logger import Logger
from twisted.trial.unittest import SynchronousTestCase

from ganeti.rapi.auth import LoginThrottle
from ganeti.rapi.limits import AddressLog, HeavyReads
from ganeti.rapi.routing import BULK, FIELDS, LOCK, REASON, Method, Route, query_key
from tests.rapi.test_server import AppCase, basic

ALICE = "198.51.100.10"
MALLORY = "203.0.113.66"


class QueryKeyTest(SynchronousTestCase):
    def test_same_meaning_same_key(self):
        same = [{"bulk": ["1"]}, {"bulk": ["01"]}, {"bulk": ["20"]}, {"bulk": ["1", "0"]},
                {"bulk": [" 1"]}, {"bulk": ["1"], "reason": ["any"]}]
        self.assertEqual(len({query_key(q) for q in same}), 1)
        self.assertEqual(query_key({"bulk": ["1"], "lock": ["0"]}),
                         query_key({"lock": ["00"], "bulk": ["1"]}))
        self.assertEqual(query_key({"fields": ["name, os"]}),
                         query_key({"fields": ["name,os"]}))

    def test_different_meaning_different_key(self):
        keys = [query_key(q) for q in (
            {}, {"bulk": ["0"]}, {"bulk": ["1"]}, {"bulk": ["yes"]}, {"fields": ["os,name"]},
            {"fields": ["name,os"]}, {"other": ["01"]}, {"other": ["1"]})]
        self.assertEqual(len(set(keys)), len(keys))
        # a bad flag is kept apart from every good one (its handler answers 400)
        self.assertNotEqual(query_key({"bulk": ["yes"]}), query_key({"bulk": ["1"]}))


def heavy_routes(calls):
    """A heavy list whose LUXI call stays pending until the test answers it."""

    def get_jobs(request):
        d = defer.Deferred()
        calls.append((request.flag(BULK), d))
        return d

    return [Route("/2/jobs", {"GET": Method(get_jobs, "jobs", query=(BULK, LOCK, REASON),
                                            heavy=True)}),
            Route("/2/query/{resource}", {
                "PUT": Method(get_jobs, "query", body="json", query=(FIELDS,), heavy=True)}),
            Route("/version", {"GET": Method(lambda r: 2, "version")})]


class CoalescedQueryTest(AppCase):
    def test_equivalent_queries_share_one_run(self):
        calls = []
        app = self.make_app(routes=heavy_routes(calls),
                            heavy=HeavyReads(per_address=50, max_running=2))
        queries = ["bulk=1", "bulk=01", "bulk=20", "lock=0&bulk=1", "bulk=1&lock=00",
                   "bulk=1&reason=x", "reason=y&bulk=3"]
        answers = [app.process("GET", "/2/jobs", q, {}, b"", ALICE) for q in queries]
        self.clock.advance(0)
        self.assertEqual(len(calls), 2)  # bulk=1 and bulk=1&lock=0
        for _, d in calls:
            d.callback([{"id": 1}])
        self.assertEqual({self.successResultOf(a).body for a in answers}, {b'[{"id":1}]'})
        self.assertEqual(app.coalescer.runs, 2)


class HeavyReadsTest(AppCase):
    def setUp(self):
        super().setUp()
        self.calls = []
        self.heavy = HeavyReads(per_address=3, max_running=2)
        self.app = self.make_app(routes=heavy_routes(self.calls), heavy=self.heavy)

    def get(self, ip, query="bulk=1"):
        return self.app.process("GET", "/2/jobs", query, {}, b"", ip)

    def test_per_address_bound_answers_429_with_ganeti_error_body(self):
        waiting = [self.get(MALLORY, f"bulk={n}") for n in range(1, 21)]
        self.clock.advance(0)
        answered = [d for d in waiting if d.called]
        self.assertEqual(len(answered), 17)
        for d in answered:
            response = self.successResultOf(d)
            body = self.assertError(response, 429)
            self.assertIn("Too many large reads in flight", body["message"])
            self.assertIn(("Retry-After", "1"), response.headers)
        self.assertEqual(len(self.calls), 1)  # the three admitted share one run
        # other addresses are not affected, and cheap requests never are
        other = self.get(ALICE, "bulk=0")
        self.assertEqual(self.process("GET", "/version", ip=MALLORY, app=self.app).body, b"2")
        self.clock.advance(0)
        self.assertEqual(len(self.calls), 2)
        for _, d in self.calls:
            d.callback([])
        self.assertEqual(self.successResultOf(other).status, 200)
        # answered: the tickets are free again
        self.assertEqual(self.heavy.in_flight, {})
        self.get(MALLORY)
        self.assertEqual(self.heavy.in_flight, {MALLORY: 1})

    def test_runs_take_slots_round_robin_by_address(self):
        # MALLORY fills both slots and queues a third run; ALICE's run comes next
        first = [self.get(MALLORY, q) for q in ("bulk=1", "bulk=0")]
        self.clock.advance(0)
        third = self.app.process("PUT", "/2/query/job", "", {"content-type": "application/json"},
                                 b"[]", MALLORY)
        alice = self.get(ALICE, "lock=1")
        self.clock.advance(0)
        self.assertEqual((len(self.calls), self.heavy.running, self.heavy.queued), (2, 2, 2))
        self.calls[0][1].callback([])
        self.assertEqual(self.successResultOf(first[0]).status, 200)
        self.assertEqual(len(self.calls), 3)
        self.calls[1][1].callback([])
        self.assertEqual(len(self.calls), 4)
        # both ran; which address went first is the rotation's business, but each got one
        for _, d in self.calls[2:]:
            d.callback([7])
        self.assertEqual(self.successResultOf(third).body, b"[7]")
        self.assertEqual(self.successResultOf(alice).body, b"[7]")
        self.assertEqual((self.heavy.running, self.heavy.queued), (0, 0))

    def test_queued_run_is_joined_by_identical_requests(self):
        self.heavy.per_address = 10
        busy = [self.get(ALICE, q) for q in ("bulk=0", "lock=1")]
        self.clock.advance(0)
        waiting = [self.get(MALLORY)]
        self.clock.advance(0)  # no slot: the batch waits and stays open
        waiting += [self.get(MALLORY, "bulk=02") for _ in range(3)]
        self.clock.advance(0)
        self.assertEqual(len(self.calls), 2)
        self.calls[0][1].callback([])
        self.assertEqual(len(self.calls), 3)
        self.calls[2][1].callback([1])
        self.assertEqual({self.successResultOf(d).body for d in waiting}, {b"[1]"})
        self.calls[1][1].callback([])
        self.assertEqual([self.successResultOf(d).status for d in busy], [200, 200])

    def test_client_gone_while_queued_gives_up_the_wait_and_the_ticket(self):
        busy = [self.get(ALICE, q) for q in ("bulk=0", "lock=1")]
        self.clock.advance(0)
        result = self.app.handle("GET", "/2/jobs", "bulk=1", {}, b"", MALLORY)
        self.clock.advance(0)
        self.assertEqual(self.heavy.queued, 1)
        result.cancel()
        self.failureResultOf(result, defer.CancelledError)
        self.assertEqual((self.heavy.queued, self.heavy.in_flight.get(MALLORY)), (0, None))
        for _, d in self.calls:
            d.callback([])
        self.assertEqual(len(self.calls), 2)
        self.assertEqual([self.successResultOf(d).status for d in busy], [200, 200])

    def test_ticket_is_held_until_the_answer_is_sent(self):
        result = self.app.handle("GET", "/2/jobs", "bulk=1", {}, b"", MALLORY)
        self.clock.advance(0)
        self.calls[0][1].callback([])
        response = self.successResultOf(result)
        self.assertEqual(self.heavy.in_flight, {MALLORY: 1})  # not sent yet
        response.finished()
        response.finished()
        self.assertEqual(self.heavy.in_flight, {})


class LoginThrottleInFlightTest(AppCase):
    def setUp(self):
        super().setUp()
        self.throttle = LoginThrottle(self.clock, threshold=5, window=60, base_delay=0.5,
                                      max_delay=4.0, max_in_flight=2)
        self.app = self.make_app(throttle=self.throttle)

    def attempt(self, password="guess", ip=MALLORY):
        return self.app.process("GET", "/2/things/a", "",
                                {"Authorization": basic("admin", password)}, b"", ip)

    def statuses(self, attempts):
        """The status of each answered attempt (None while it waits); consumes them."""
        self.clock.advance(0)  # GETs of one turn run together at its end
        return [self.successResultOf(d).status if d.called else None for d in attempts]

    def test_parallel_guesses_are_capped_in_flight(self):
        attempts = [self.attempt() for _ in range(200)]
        too_many = self.successResultOf(attempts.pop())
        body = self.assertError(too_many, 429)
        statuses = self.statuses(attempts)
        # 5 answered at once, 2 wait (answered late), the other 193 get 429 unchecked
        self.assertEqual(statuses[:7], [401] * 5 + [None] * 2)
        self.assertEqual(statuses[7:], [429] * 192)
        self.assertIn("Too many failed logins", body["message"])
        self.assertIn(("Retry-After", "1"), too_many.headers)
        # the right password is refused too while the cap is reached: no guess is checked
        self.assertEqual(self.statuses([self.attempt("adminpw")]), [429])
        self.clock.advance(0.5)
        self.assertEqual(self.statuses(attempts[5:6]), [401])
        self.assertNoResult(attempts[6])
        self.clock.advance(0.5)
        self.assertEqual(self.statuses(attempts[6:7]), [401])
        # other addresses and anonymous reads from this one are not affected
        self.assertEqual(self.statuses([self.attempt("adminpw", ip=ALICE)]), [200])
        anonymous = self.app.process("GET", "/2/things/a", "", {}, b"", MALLORY)
        self.assertEqual(self.statuses([anonymous]), [200])

    def test_guessing_rate_is_bounded_and_the_count_kept_across_the_window(self):
        checked = 0
        for _ in range(300):  # five minutes, 200 guesses a second in parallel
            attempts = [self.attempt() for _ in range(200)]
            self.clock.advance(1)
            statuses = self.statuses(attempts)
            checked += statuses.count(401) + statuses.count(None)
            self.assertEqual(statuses.count(200), 0)
        # 5 free, then 2 in flight per delay of at most 4 s: ~2 guesses per 4 s
        self.assertLessEqual(checked, 5 + 2 * (300 // 4 + 4))
        self.assertGreater(self.throttle.failures(MALLORY), 100)  # never reset
        self.clock.advance(61)  # a quiet minute: forgotten
        self.assertEqual(self.throttle.failures(MALLORY), 0)
        self.assertEqual(self.statuses([self.attempt()]), [401])

    def test_the_delay_holds_the_slot_even_if_the_client_leaves(self):
        attempts = [self.attempt() for _ in range(7)]
        for d in attempts[5:]:
            d.cancel()  # the guesser hangs up to free its slots
            self.failureResultOf(d, defer.CancelledError)
        self.assertEqual(self.statuses([self.attempt()]), [429])
        self.clock.advance(1)
        self.assertEqual(self.statuses([self.attempt("adminpw")]), [200])

    def test_throttled_logins_are_logged_once_per_address_and_minute(self):
        events = LogEvents(self)
        for _ in range(3):
            [self.attempt() for _ in range(50)]
        self.assertEqual(len(events.matching("Refusing logins from")), 1)
        self.assertEqual(len(events.matching("Failed logins from")), 1)


class LogEvents:
    def __init__(self, testcase):
        from twisted.logger import globalLogPublisher

        self.events = []
        globalLogPublisher.addObserver(self.events.append)
        testcase.addCleanup(globalLogPublisher.removeObserver, self.events.append)

    def matching(self, text):
        return [e for e in self.events if text in str(e.get("log_format", ""))]


class DeepJsonBodyTest(AppCase):
    def test_deeply_nested_body_is_400_with_ganeti_error_body(self):
        headers = {"Authorization": basic("admin", "adminpw"),
                   "Content-Type": "application/json"}
        events = LogEvents(self)
        for depth in (101, 100_000):
            body = b"[" * depth + b"]" * depth
            response = self.process("PUT", "/2/things/a", headers=headers, body=body)
            error = self.assertError(response, 400)
            self.assertIn("nested more than 100 levels", error["message"])
        self.assertEqual(len(events.matching("Bad request body from")), 1)  # rate-limited
        ok = b"[" * 100 + b"]" * 100
        self.assertEqual(self.process("PUT", "/2/things/a", headers=headers, body=ok).status,
                         200)


class ServerErrorLogTest(AppCase):
    def test_failures_clients_can_repeat_are_logged_once_a_minute(self):
        from ganeti.core import errors as gerrors

        events = LogEvents(self)
        self.luxi.answers["QueryClusterInfo"] = gerrors.ProtocolError("masterd is gone")
        for ip in (ALICE, MALLORY):
            for _ in range(50):
                self.assertEqual(self.process("GET", "/2/info", ip=ip).status, 502)
        [line] = events.matching("RAPI request failed")
        self.assertEqual(line["suppressed"], 0)
        self.clock.advance(60)
        self.process("GET", "/2/info")
        self.assertEqual(events.matching("RAPI request failed")[-1]["suppressed"], 99)


class AddressLogTest(SynchronousTestCase):
    def setUp(self):
        from twisted.internet.task import Clock

        self.clock = Clock()
        self.lines = []
        logger = Logger(observer=self.lines.append)
        self.log = AddressLog(self.clock, logger, interval=60, max_lines=3, max_keys=2)

    def info(self, address, reason="bad"):
        return self.log.info(address, reason, "{address} {reason} {suppressed}")

    def test_one_line_per_address_and_reason_per_interval(self):
        self.assertEqual([self.info("a") for _ in range(5)], [True] + [False] * 4)
        self.assertTrue(self.info("a", "other"))
        self.clock.advance(60)
        self.assertTrue(self.info("a"))
        self.assertEqual(self.lines[-1]["suppressed"], 4)

    def test_lines_per_interval_are_bounded_whatever_the_addresses(self):
        logged = [self.info(f"10.0.0.{i}") for i in range(100)]
        self.assertEqual(logged.count(True), 3)
        self.assertLessEqual(self.log.budget.tracked, 3)
        self.clock.advance(60)
        self.assertTrue(self.info("10.0.0.99"))
        self.assertLessEqual(self.log.budget.tracked, 2)
        self.assertEqual(self.log.suppressed, 97)


class HeavyDeclarationsTest(SynchronousTestCase):
    def test_lists_and_queries_are_heavy(self):
        from ganeti.rapi.routes import ROUTES

        heavy = sorted((r.pattern, m) for r in ROUTES for m, s in r.methods.items()
                       if s.heavy)
        self.assertEqual(heavy, [
            ("/2/filters", "GET"), ("/2/groups", "GET"), ("/2/instances", "GET"),
            ("/2/jobs", "GET"), ("/2/networks", "GET"), ("/2/nodes", "GET"),
            ("/2/os", "GET"), ("/2/query/{resource}", "GET"),
            ("/2/query/{resource}", "PUT")])
