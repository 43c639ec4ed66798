"""The RAPI users file (parsing, reloading), Basic credentials, access checks and the
failed-login throttle, on a fake clock."""

import base64
import os

from twisted.internet.task import Clock
from twisted.logger import LogLevel, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import crypto
from ganeti.rapi import errors
from ganeti.rapi.auth import (
    SCHEME_CLEARTEXT,
    SCHEME_HA1,
    SCHEME_UNUSABLE,
    Authenticator,
    LoginThrottle,
    UsersFile,
    UsersFileError,
    parse_basic,
    parse_users,
)
from ganeti.rapi.routing import READ, WRITE, User


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class LogCapture:
    """Collects formatted log events for the duration of a test."""

    def __init__(self, testcase):
        self.events = []
        globalLogPublisher.addObserver(self.events.append)
        testcase.addCleanup(globalLogPublisher.removeObserver, self.events.append)

    def text(self, level=None):
        from twisted.logger import formatEvent
        return "\n".join(formatEvent(e) for e in self.events
                         if level is None or e.get("log_level") == level)


class ParseUsersTest(SynchronousTestCase):
    def test_ganeti_format(self):
        ha1 = crypto.rapi_ha1("jane", "correct-horse")
        users, warnings = parse_users(
            "# comment\n"
            "\n"
            "   # indented comment\n"
            f"jane {{HA1}}{ha1.upper()} write\n"
            "monitor\t{CLEARTEXT}change-me  read\n"
            "ops {cleartext}pw read,write\n"
            "guest testpw\n"
            "lower {ha1}" + crypto.rapi_ha1("lower", "x") + "\n")
        self.assertEqual(warnings, [])
        self.assertEqual(sorted(users), ["guest", "jane", "lower", "monitor", "ops"])
        self.assertEqual(users["jane"].options, frozenset({WRITE}))
        self.assertEqual(users["jane"].scheme, SCHEME_HA1)
        self.assertTrue(users["jane"].check_password("correct-horse"))
        self.assertFalse(users["jane"].check_password("correct-horse "))
        self.assertFalse(users["jane"].check_password(ha1))
        self.assertEqual(users["monitor"].scheme, SCHEME_CLEARTEXT)
        self.assertTrue(users["monitor"].check_password("change-me"))
        self.assertFalse(users["monitor"].check_password("{CLEARTEXT}change-me"))
        self.assertEqual(users["ops"].options, frozenset({READ, WRITE}))
        self.assertTrue(users["ops"].check_password("pw"))
        self.assertEqual(users["guest"].options, frozenset())
        self.assertTrue(users["guest"].check_password("testpw"))
        self.assertTrue(users["lower"].check_password("x"))
        self.assertEqual(users["ops"].user, User("ops", frozenset({READ, WRITE})))

    def test_secrets_are_not_in_repr(self):
        users, _ = parse_users("jane {CLEARTEXT}s3cr3t write\n")
        self.assertNotIn("s3cr3t", repr(users["jane"]))

    def test_unknown_scheme_disables_the_user_without_showing_the_password(self):
        users, warnings = parse_users("ok pw\nbad {SSHA}hunter2 write\nhalf {nobrace\n"
                                      "short {HA1}abc123\n")
        for name in ("bad", "half", "short"):
            self.assertEqual(users[name].scheme, SCHEME_UNUSABLE)
            for password in ("hunter2", "{SSHA}hunter2", "", "nobrace", "abc123"):
                self.assertFalse(users[name].check_password(password))
        self.assertEqual(len(warnings), 3)
        self.assertIn("line 2: user 'bad' has a password with an unknown scheme", warnings[0])
        self.assertIn("line 3:", warnings[1])
        self.assertIn("line 4: the {HA1} password of user 'short' is not 32", warnings[2])
        for text in warnings:
            for secret in ("hunter2", "SSHA", "nobrace", "abc123"):
                self.assertNotIn(secret, text)

    def test_odd_lines(self):
        users, warnings = parse_users("a pw read,admin\nb pw read,,write\nc:d pw\na pw2\n")
        self.assertEqual(users["a"].options, frozenset())  # the later line wins
        self.assertTrue(users["a"].check_password("pw2"))
        self.assertEqual(users["b"].options, frozenset({READ, WRITE}))
        self.assertEqual(len(warnings), 4)
        self.assertIn("unknown option 'admin'", warnings[0])
        self.assertIn("unknown option ''", warnings[1])
        self.assertIn("contains ':'", warnings[2])
        self.assertIn("line 4: user 'a' is defined again", warnings[3])

    def test_malformed_lines(self):
        with self.assertRaises(UsersFileError) as cm:
            parse_users("good pw\nlonely\n")
        self.assertIn("line 2: expected '<name> <password> [<options>]'", str(cm.exception))
        with self.assertRaises(UsersFileError) as cm:
            parse_users("x pw read, write\n")
        self.assertIn("line 1: too many fields", str(cm.exception))


class UsersFileTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.path = os.path.join(os.path.abspath(self.mktemp()), "users")
        os.makedirs(os.path.dirname(self.path))
        self.write("alice alicepw write\n")
        self.users = UsersFile(self.path, self.clock)
        self.log = LogCapture(self)

    def write(self, text, mode="w"):
        with open(self.path, mode if isinstance(text, str) else mode + "b") as f:
            f.write(text)

    def test_first_check_loads(self):
        self.assertEqual(self.users.users, {})
        self.users.maybe_reload()
        self.assertEqual(sorted(self.users.users), ["alice"])
        self.assertIn("Loaded 1 RAPI user(s)", self.log.text())

    def test_change_is_seen_at_most_once_per_interval(self):
        self.users.maybe_reload()
        generation = self.users.generation
        self.write("bob bobpw\n")  # another size: a change even within the same mtime tick
        self.clock.advance(0.5)
        self.users.maybe_reload()
        self.assertEqual(sorted(self.users.users), ["alice"])  # not checked yet
        self.clock.advance(0.5)
        self.users.maybe_reload()
        self.assertEqual(sorted(self.users.users), ["bob"])
        self.assertEqual(self.users.generation, generation + 1)
        # unchanged file: not read again
        self.clock.advance(5)
        self.users.maybe_reload()
        self.assertEqual(self.users.generation, generation + 1)

    def test_replaced_file_is_seen(self):
        self.users.load()
        tmp = self.path + ".new"
        with open(tmp, "w") as f:
            f.write("carol carolpw\n")
        st = os.stat(self.path)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.rename(tmp, self.path)  # same mtime, new inode
        self.clock.advance(1)
        self.users.maybe_reload()
        self.assertEqual(sorted(self.users.users), ["carol"])

    def test_malformed_file_keeps_the_previous_users(self):
        self.users.load()
        for bad, reason in (("alice\n", "line 1: expected"),
                            (b"alice \xff\xfe write\n", "it is not UTF-8 text"),
                            ("x" * 2000 + " pw\n", "larger than")):
            users = UsersFile(self.path, self.clock, max_size=1024)
            users.users = dict(self.users.users)
            self.write(bad)
            self.assertFalse(users.load())
            self.assertEqual(sorted(users.users), ["alice"])
            self.assertIn(reason, self.log.text(LogLevel.error))
        # repeated checks of the same bad file do not re-read it
        self.users.maybe_reload()
        before = len(self.log.events)
        self.clock.advance(2)
        self.users.maybe_reload()
        self.assertEqual(len(self.log.events), before)

    def test_missing_file_means_no_users(self):
        self.users.load()
        os.unlink(self.path)
        self.assertTrue(self.users.load())
        self.assertEqual(self.users.users, {})
        self.assertIn("does not exist: no user can log in", self.log.text(LogLevel.warn))
        self.write("dave davepw\n")
        self.clock.advance(1)
        self.users.maybe_reload()
        self.assertEqual(sorted(self.users.users), ["dave"])

    def test_unreadable_file_keeps_users(self):
        self.users.load()
        os.unlink(self.path)
        os.mkdir(self.path)  # reading a directory fails with an OSError
        self.assertFalse(self.users.load())
        self.assertEqual(sorted(self.users.users), ["alice"])
        self.assertIn("Cannot read the RAPI users file", self.log.text(LogLevel.error))

    def test_warnings_name_the_line_never_the_password(self):
        self.write("eve {MD5}topsecret write\n")
        self.users.load()
        text = self.log.text(LogLevel.warn)
        self.assertIn("line 1: user 'eve' has a password with an unknown scheme", text)
        self.assertNotIn("topsecret", text)


class BasicTest(SynchronousTestCase):
    def test_parse_basic(self):
        self.assertEqual(parse_basic(basic("u", "p:w")), ("u", "p:w"))
        self.assertEqual(parse_basic("  basic " + base64.b64encode(b"u:").decode()), ("u", ""))
        self.assertEqual(parse_basic(basic("jürgen", "pässword")), ("jürgen", "pässword"))
        for bad in ("Basic", "Basic ***", "Basic " + base64.b64encode(b"nocolon").decode(),
                    "Basic " + base64.b64encode(b"\xff:\xfe").decode()):
            self.assertIsNone(parse_basic(bad), bad)
        with self.assertRaises(errors.HttpUnauthorized) as cm:
            parse_basic("Digest username=x")
        self.assertEqual(cm.exception.headers["WWW-Authenticate"],
                         'Basic realm="Ganeti Remote API"')


class AuthenticatorTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        path = os.path.join(os.path.abspath(self.mktemp()), "users")
        os.makedirs(os.path.dirname(path))
        self.path = path
        with open(path, "w") as f:
            f.write("w wpw write\nr rpw read\nn npw\n")
        self.auth = Authenticator(UsersFile(path, self.clock), require_auth=False)

    def test_authenticate(self):
        self.assertIsNone(self.auth.authenticate(None))
        self.assertEqual(self.auth.authenticate(basic("w", "wpw")).name, "w")
        for header in (basic("w", "x"), basic("zz", "wpw"), "Basic !"):
            with self.assertRaises(errors.HttpUnauthorized):
                self.auth.authenticate(header)

    def test_cache_follows_the_users_file(self):
        header = basic("w", "wpw")
        self.assertEqual(self.auth.authenticate(header).name, "w")
        with open(self.path, "w") as f:
            f.write("w changed write\n")
        self.assertEqual(self.auth.authenticate(header).name, "w")  # not re-checked yet
        self.clock.advance(1)
        with self.assertRaises(errors.HttpUnauthorized):
            self.auth.authenticate(header)

    def test_authorize(self):
        self.auth.users.load()
        w, r, n = (self.auth.users.get(name) for name in "wrn")
        self.auth.authorize(None, frozenset())
        for entry in (w, r, n):
            self.auth.authorize(entry, frozenset())
        self.auth.authorize(w, frozenset({WRITE}))
        self.auth.authorize(r, frozenset({READ, WRITE}))
        with self.assertRaises(errors.HttpUnauthorized):
            self.auth.authorize(None, frozenset({WRITE}))
        for entry in (r, n):
            with self.assertRaises(errors.HttpForbidden):
                self.auth.authorize(entry, frozenset({WRITE}))
        strict = Authenticator(self.auth.users, require_auth=True)
        with self.assertRaises(errors.HttpUnauthorized):
            strict.authorize(None, frozenset())
        strict.authorize(n, frozenset())


class LoginThrottleTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.throttle = LoginThrottle(self.clock, threshold=2, window=10, base_delay=0.5,
                                      max_delay=3, max_tracked=3)

    def test_backoff_after_the_threshold(self):
        delays = [self.throttle.failed("a") for _ in range(7)]
        self.assertEqual(delays, [0, 0, 0.5, 1.0, 2.0, 3, 3])
        self.assertEqual(self.throttle.failed("b"), 0)

    def test_window(self):
        for _ in range(3):
            self.throttle.failed("a")
        self.clock.advance(10.5)
        self.assertEqual(self.throttle.failed("a"), 0)  # a new window

    def test_bounded_table(self):
        for i in range(100):
            self.throttle.failed(f"10.0.0.{i}")
        self.assertEqual(len(self.throttle), 3)
        self.clock.advance(11)
        self.throttle.failed("x")
        self.assertEqual(len(self.throttle), 1)  # the stale entries expired

    def test_count_is_kept_while_failures_go_on(self):
        delays = []
        for _ in range(30):  # one failure every 5 s for 150 s: never a quiet window
            delays.append(self.throttle.failed("a"))
            self.clock.advance(5)
        self.assertEqual(delays[-20:], [3] * 20)
        self.assertEqual(self.throttle.failures("a"), 30)
        self.clock.advance(6)  # now 11 s without a failure (window 10)
        self.assertEqual(self.throttle.failures("a"), 0)
        self.assertEqual(self.throttle.failed("a"), 0)

    def test_failures_in_flight_make_the_address_wait(self):
        throttle = LoginThrottle(self.clock, threshold=1, window=60, base_delay=1,
                                 max_delay=8, max_in_flight=2)
        self.assertEqual(throttle.retry_after("a"), 0)
        self.assertEqual([throttle.failed("a") for _ in range(3)], [0, 1, 2])
        self.assertEqual(throttle.retry_after("a"), 1)  # the 1 s answer frees a slot
        self.assertEqual(throttle.retry_after("b"), 0)
        self.clock.advance(1)
        self.assertEqual(throttle.retry_after("a"), 0)
        self.assertEqual(throttle.failed("a"), 4)
        self.assertEqual(throttle.retry_after("a"), 1)
