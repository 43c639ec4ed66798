"""RAPI authentication: the users file, HTTP Basic credentials, access checks.

The users file (``DATA_DIR/rapi/users``) has Ganeti's format: ``#`` comments
and blank lines are ignored, every other line is ``name password [options]``
with comma-separated options (``read``, ``write``).  A password is
``{CLEARTEXT}secret``, ``{HA1}<md5 hex of name:Ganeti Remote API:secret>``, or
a plain secret that does not start with ``{`` (scheme names are
case-insensitive).  A user whose password has another scheme can never log
in; the line is named in a warning, the password never.

The file is small, so it is read synchronously on the reactor thread when it
changed (at most one ``stat`` per second, on request) or on SIGHUP.  A file
that cannot be parsed leaves the previous users in force.

Failed logins are counted per client address: past a threshold, every
further failure from that address is answered after an exponentially growing
delay (capped), and an address with a few such answers still waiting gets
429 without its credentials being checked, so that guessing passwords is
slow however many connections the guesser opens.
"""

from __future__ import annotations

import base64
import binascii
import collections
import hmac
import os
import re
from dataclasses import dataclass, field

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import crypto
from ganeti.rapi import errors
from ganeti.rapi.routing import READ, WRITE, User

log = Logger()

#: Options a users-file entry may carry; others are ignored with a warning.
KNOWN_OPTIONS = frozenset({READ, WRITE})
#: A users file larger than this is refused (it is read on the reactor thread).
MAX_USERS_FILE = 1024 * 1024
#: The header a 401 answer carries.
WWW_AUTHENTICATE = f'Basic realm="{crypto.RAPI_REALM}"'
SCHEME_CLEARTEXT = "cleartext"
SCHEME_HA1 = "ha1"
#: Marks a user who can never log in (unknown or invalid password scheme).
SCHEME_UNUSABLE = "unusable"
_HEX32 = re.compile(r"[0-9a-fA-F]{32}\Z")


class UsersFileError(ValueError):
    """The users file cannot be parsed; the message names the line."""


@dataclass(frozen=True)
class UserEntry:
    """One user of the users file; the secret is never shown in ``repr``."""

    name: str
    options: frozenset[str]
    scheme: str
    secret: bytes = field(repr=False)

    @property
    def user(self) -> User:
        """What handlers see of this user."""
        return User(self.name, self.options)

    def check_password(self, password: str) -> bool:
        """Whether ``password`` is this user's, compared in constant time."""
        if self.scheme == SCHEME_CLEARTEXT:
            return hmac.compare_digest(password.encode("utf-8"), self.secret)
        if self.scheme == SCHEME_HA1:
            digest = crypto.rapi_ha1(self.name, password).encode("ascii")
            return hmac.compare_digest(digest, self.secret)
        return False


def _parse_password(name: str, password: str, lineno: int,
                    warnings: list[str]) -> tuple[str, bytes]:
    if not password.startswith("{"):
        return SCHEME_CLEARTEXT, password.encode("utf-8")
    end = password.find("}")
    scheme = password[1:end].lower() if end > 0 else None
    value = password[end + 1:] if end > 0 else ""
    if scheme == SCHEME_CLEARTEXT:
        return SCHEME_CLEARTEXT, value.encode("utf-8")
    if scheme == SCHEME_HA1:
        if _HEX32.match(value):
            return SCHEME_HA1, value.lower().encode("ascii")
        warnings.append(f"line {lineno}: the {{HA1}} password of user {name!r} is not 32 "
                        "hexadecimal digits; this user cannot log in")
        return SCHEME_UNUSABLE, b""
    warnings.append(f"line {lineno}: user {name!r} has a password with an unknown scheme "
                    "(known: {CLEARTEXT}, {HA1}, or none); this user cannot log in")
    return SCHEME_UNUSABLE, b""


def parse_users(text: str) -> tuple[dict[str, UserEntry], list[str]]:
    """Parse users-file content; returns the users and warnings (never with passwords).

    Raises :class:`UsersFileError` for a line that is not ``name password
    [options]``.  As in Ganeti, a later line for the same name replaces an
    earlier one (with a warning).
    """
    users: dict[str, UserEntry] = {}
    warnings: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) < 2:
            raise UsersFileError(f"line {lineno}: expected '<name> <password> [<options>]', "
                                 "found only one field")
        if len(fields) > 3:
            raise UsersFileError(f"line {lineno}: too many fields (options are separated by "
                                 "commas without spaces)")
        name, password = fields[0], fields[1]
        options: set[str] = set()
        if len(fields) == 3:
            for option in fields[2].split(","):
                if option not in KNOWN_OPTIONS:
                    warnings.append(f"line {lineno}: user {name!r} has an unknown option "
                                    f"{option!r} (known: read, write); ignored")
                    continue
                options.add(option)
        if ":" in name:
            warnings.append(f"line {lineno}: user name {name!r} contains ':', which HTTP "
                            "Basic authentication cannot carry; this user cannot log in")
        scheme, secret = _parse_password(name, password, lineno, warnings)
        if name in users:
            warnings.append(f"line {lineno}: user {name!r} is defined again; the last "
                            "definition counts")
        users[name] = UserEntry(name, frozenset(options), scheme, secret)
    return users, warnings


Stamp = tuple[int, int, int]


class UsersFile:
    """The users in force, re-read when the file changes or on :meth:`load`.

    :meth:`maybe_reload` costs one ``stat`` at most every ``check_interval``
    seconds of ``clock``; the file is re-read only if its (mtime, size,
    inode) changed.
    """

    def __init__(self, path: str, clock: IReactorTime, check_interval: float = 1.0,
                 max_size: int = MAX_USERS_FILE) -> None:
        self.path = path
        self.clock = clock
        self.check_interval = check_interval
        self.max_size = max_size
        self.users: dict[str, UserEntry] = {}
        #: Bumped whenever the users in force change.
        self.generation = 0
        self._stamp: Stamp | None = None
        self._loaded = False
        self._next_check = 0.0

    def get(self, name: str) -> UserEntry | None:
        """The entry of user ``name``, if any."""
        return self.users.get(name)

    def maybe_reload(self) -> None:
        """Re-read the file if it changed since it was last read (rate-limited)."""
        now = self.clock.seconds()
        if now < self._next_check:
            return
        self._next_check = now + self.check_interval
        try:
            st = os.stat(self.path)
            stamp: Stamp | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        except OSError as err:
            log.error("Cannot check the RAPI users file {path}: {error}", path=self.path,
                      error=err.strerror)
            return
        if not self._loaded or stamp != self._stamp:
            self.load()

    def load(self) -> bool:
        """Read the file now; True if the users in force were replaced.

        A missing file means no users.  An unreadable or malformed file keeps
        the previous users (the error is logged).
        """
        self._loaded = True
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                stamp: Stamp | None = (st.st_mtime_ns, st.st_size, st.st_ino)
                if st.st_size > self.max_size:
                    raise UsersFileError(f"the file is larger than {self.max_size} bytes")
                data = f.read(self.max_size + 1)
            if len(data) > self.max_size:
                raise UsersFileError(f"the file is larger than {self.max_size} bytes")
            users, warnings = parse_users(data.decode("utf-8"))
        except FileNotFoundError:
            self._stamp = None
            if self.users or self.generation == 0:
                log.warn("RAPI users file {path} does not exist: no user can log in",
                         path=self.path)
            return self._replace({})
        except OSError as err:
            log.error("Cannot read the RAPI users file {path} ({error}); keeping the "
                      "previous users", path=self.path, error=err.strerror)
            return False
        except (UnicodeDecodeError, UsersFileError) as err:
            self._stamp = stamp
            reason = "it is not UTF-8 text" if isinstance(err, UnicodeDecodeError) else str(err)
            log.error("RAPI users file {path} is invalid ({reason}); keeping the previous "
                      "users", path=self.path, reason=reason)
            return False
        self._stamp = stamp
        for warning in warnings:
            log.warn("RAPI users file {path}, {warning}", path=self.path, warning=warning)
        log.info("Loaded {count} RAPI user(s) from {path}", count=len(users), path=self.path)
        return self._replace(users)

    def _replace(self, users: dict[str, UserEntry]) -> bool:
        if users == self.users and self.generation:
            return False
        self.users = users
        self.generation += 1
        return True


class LoginThrottle:
    """Slows down password guessing from one client address.

    Failed logins are counted per address.  The count is forgotten only
    after ``window`` seconds without a failure, so guessing that goes on keeps
    its count however long it lasts.  Past ``threshold`` failures, every
    further failure is answered after ``base_delay * 2**k`` seconds (at most
    ``max_delay``), and while its answer waits it is *in flight*: an address
    with ``max_in_flight`` failures in flight gets 429 for every request
    carrying credentials, before they are checked.  So parallel connections
    do not multiply the rate of guesses: at most ``max_in_flight`` per delay.
    The in-flight time is the delay itself, whether or not the client waits
    for the answer.

    At most ``max_tracked`` addresses are remembered; the least recently
    failing are forgotten first.
    """

    def __init__(self, clock: IReactorTime, threshold: int = 5, window: float = 60.0,
                 base_delay: float = 0.5, max_delay: float = 4.0,
                 max_tracked: int = 4096, max_in_flight: int = 2) -> None:
        self.clock = clock
        self.threshold = threshold
        self.window = window
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_tracked = max_tracked
        self.max_in_flight = max_in_flight
        # address -> its failures, least recently failing first
        self._entries: collections.OrderedDict[str, _Failures] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def _expire(self, now: float) -> None:
        entries = self._entries
        while entries:
            oldest = next(iter(entries.values()))
            if (len(entries) <= self.max_tracked and
                    (now - oldest.last <= self.window or oldest.busy_until(now))):
                break
            entries.popitem(last=False)

    def failures(self, address: str) -> int:
        """The failures counted for ``address`` (0 once its window has passed)."""
        entry = self._entries.get(address)
        if entry is None or self.clock.seconds() - entry.last > self.window:
            return 0
        return entry.count

    def retry_after(self, address: str) -> float:
        """0 if a login from ``address`` may be checked now; else the seconds until
        one of its failures in flight is answered (the request gets 429)."""
        entry = self._entries.get(address)
        if entry is None:
            return 0.0
        now = self.clock.seconds()
        pending = entry.busy_until(now)
        if len(pending) < self.max_in_flight:
            return 0.0
        return max(min(pending) - now, 0.001)

    def failed(self, address: str) -> float:
        """Record a failed login from ``address``; the delay its answer gets (seconds)."""
        now = self.clock.seconds()
        entry = self._entries.pop(address, None)
        if entry is None or now - entry.last > self.window:
            entry = _Failures()
        entry.count += 1
        entry.last = now
        self._entries[address] = entry
        self._expire(now)
        excess = entry.count - self.threshold
        if excess <= 0:
            return 0.0
        delay = min(self.max_delay, self.base_delay * 2 ** min(excess - 1, 32))
        entry.busy_until(now).append(now + delay)
        return delay


class _Failures:
    """One address's failed logins: how many, the last one, answers still delayed."""

    __slots__ = ("count", "last", "pending")

    def __init__(self) -> None:
        self.count = 0
        self.last = 0.0
        self.pending: list[float] = []

    def busy_until(self, now: float) -> list[float]:
        """The answer times of failures still in flight at ``now`` (pruned)."""
        if self.pending and min(self.pending) <= now:
            self.pending = [t for t in self.pending if t > now]
        return self.pending


def parse_basic(header: str) -> tuple[str, str] | None:
    """``(user, password)`` from a Basic ``Authorization`` value, or None if malformed.

    Raises :class:`errors.HttpUnauthorized` for another scheme.
    """
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        raise errors.HttpUnauthorized("Only HTTP Basic authentication is supported",
                                      headers={"WWW-Authenticate": WWW_AUTHENTICATE})
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    name, sep, password = decoded.partition(":")
    if not sep:
        return None
    return name, password


def unauthorized(message: str) -> errors.HttpUnauthorized:
    """A 401 with the ``WWW-Authenticate`` challenge of Ganeti's realm."""
    return errors.HttpUnauthorized(message, headers={"WWW-Authenticate": WWW_AUTHENTICATE})


class Authenticator:
    """Checks credentials against the users file and access against a method's options.

    ``verify`` caches the last few successful (header -> user) checks per
    users-file generation, because clients send the same header with every
    request and a hash per request is avoidable work.
    """

    CACHE_SIZE = 256

    def __init__(self, users: UsersFile, require_auth: bool) -> None:
        self.users = users
        self.require_auth = require_auth
        self._cache: dict[str, UserEntry] = {}
        self._cache_generation = -1

    def authenticate(self, header: str | None) -> UserEntry | None:
        """The user of an ``Authorization`` header (None without one).

        Raises a 401 :class:`errors.HttpError` for bad or unusable credentials.
        """
        self.users.maybe_reload()
        if header is None:
            return None
        if self._cache_generation != self.users.generation:
            self._cache.clear()
            self._cache_generation = self.users.generation
        cached = self._cache.get(header)
        if cached is not None:
            return cached
        credentials = parse_basic(header)
        if credentials is None:
            raise unauthorized("Malformed HTTP Basic credentials")
        name, password = credentials
        entry = self.users.get(name)
        if entry is None or not entry.check_password(password):
            raise unauthorized("Authentication failed: unknown user or wrong password")
        if len(self._cache) >= self.CACHE_SIZE:
            self._cache.clear()
        self._cache[header] = entry
        return entry

    def authorize(self, entry: UserEntry | None, access: frozenset[str]) -> None:
        """Raise 401 (anonymous) or 403 (missing option) unless access is granted."""
        if entry is None:
            if access or self.require_auth:
                raise unauthorized("Authentication required")
            return
        if access and not (access & entry.options):
            needed = " or ".join(f"'{a}'" for a in sorted(access))
            raise errors.HttpForbidden(f"User {entry.name!r} lacks the {needed} permission "
                                       "this resource needs")
