"""How long each attempt to take an opcode's locks may wait (reference section 7.4).

An opcode that cannot get all the locks of a level within one attempt's
timeout releases what it took and tries again, so that jobs which need only
some of those locks can run in between (design 2.1, "retry acquiring
locks").  Attempt timeouts grow from :data:`LOCK_ATTEMPTS_MINWAIT` to
:data:`LOCK_ATTEMPTS_MAXWAIT`; once they add up to
:data:`LOCK_ATTEMPTS_TIMEOUT` the strategy is exhausted and the next attempt
blocks (timeout None).

Before blocking, the job executor first makes the opcode more urgent: while
its priority is above :data:`OP_PRIO_HIGHEST`, an attempt that timed out on
an exhausted strategy lowers the priority number by one and restarts the
strategy (:class:`LockAttemptSchedule`, :func:`increase_priority`).  Only an
opcode already at the highest priority waits without a timeout.

Pure code: no clock, no reactor; randomness comes from an injected
``random.Random``.
"""

from __future__ import annotations

import random

#: Opcode priorities: a lower number is more urgent.
OP_PRIO_HIGHEST = -20
OP_PRIO_HIGH = -10
OP_PRIO_NORMAL = 0
OP_PRIO_LOW = 10
OP_PRIO_LOWEST = 19
OP_PRIO_DEFAULT = OP_PRIO_NORMAL

#: First attempt's timeout, and the floor of every later one (seconds).
LOCK_ATTEMPTS_MINWAIT = 5.0
#: Ceiling of one attempt's timeout (seconds).
LOCK_ATTEMPTS_MAXWAIT = 75.0
#: Attempts are generated until their timeouts add up to this (seconds).
LOCK_ATTEMPTS_TIMEOUT = 36000 // (OP_PRIO_DEFAULT - OP_PRIO_HIGHEST)
#: Each timeout handed out is varied by up to this fraction either way.
LOCK_ATTEMPTS_JITTER = 0.05


def attempt_timeouts(minwait: float = LOCK_ATTEMPTS_MINWAIT,
                     maxwait: float = LOCK_ATTEMPTS_MAXWAIT,
                     total: float = LOCK_ATTEMPTS_TIMEOUT) -> tuple[float, ...]:
    """The attempt timeouts without jitter.

    The first is ``minwait``; each next one is ``(previous * 1.05) ** 1.25``
    kept within ``[minwait, maxwait]``; timeouts are added until their sum
    reaches ``total``.
    """
    timeouts = [minwait]
    running = minwait
    while running < total:
        following = min(max((timeouts[-1] * 1.05) ** 1.25, minwait), maxwait)
        timeouts.append(following)
        running += following
    return tuple(timeouts)


#: The default sequence, computed once.
LOCK_ATTEMPT_TIMEOUTS = attempt_timeouts()


class LockAttemptTimeouts:
    """Hands out one attempt timeout after another, then None (block).

    ``rng`` supplies the +/-5 % jitter (``rng.random()``); with None the
    timeouts are exact, which tests use.
    """

    def __init__(self, rng: random.Random | None = None,
                 timeouts: tuple[float, ...] = LOCK_ATTEMPT_TIMEOUTS) -> None:
        self._rng = rng
        self._timeouts = timeouts
        self._next = 0

    def peek(self) -> float | None:
        """The next timeout without jitter and without using it up."""
        if self._next < len(self._timeouts):
            return self._timeouts[self._next]
        return None

    def exhausted(self) -> bool:
        """True once every timeout has been handed out (the next is None)."""
        return self._next >= len(self._timeouts)

    def next_timeout(self) -> float | None:
        """The timeout for the next attempt, or None: wait without a timeout."""
        timeout = self.peek()
        if timeout is None:
            return None
        self._next += 1
        if self._rng is not None:
            spread = timeout * 2 * LOCK_ATTEMPTS_JITTER
            timeout += self._rng.random() * spread - spread / 2
        return timeout


def increase_priority(priority: int) -> int | None:
    """The next more urgent priority, or None if ``priority`` is already the highest."""
    if priority > OP_PRIO_HIGHEST:
        return priority - 1
    return None


class LockAttemptSchedule:
    """An opcode's lock attempts: a priority and a timeout strategy together.

    Usage per attempt: ``timeout = schedule.next_timeout()``; acquire with
    ``schedule.priority`` and that timeout; if it timed out, call
    :meth:`check_priority_increase` before the next attempt.
    """

    def __init__(self, priority: int = OP_PRIO_DEFAULT, rng: random.Random | None = None,
                 timeouts: tuple[float, ...] = LOCK_ATTEMPT_TIMEOUTS) -> None:
        if not OP_PRIO_HIGHEST <= priority <= OP_PRIO_LOWEST:
            raise ValueError(f"priority {priority} is outside "
                             f"[{OP_PRIO_HIGHEST}, {OP_PRIO_LOWEST}]")
        self.priority = priority
        self._rng = rng
        self._timeouts = timeouts
        self.strategy = LockAttemptTimeouts(rng, timeouts)

    def next_timeout(self) -> float | None:
        """The next attempt's timeout (None: block)."""
        return self.strategy.next_timeout()

    def check_priority_increase(self) -> bool:
        """After a timed-out attempt: raise the priority if the strategy is exhausted.

        When the next attempt would block and the priority can still be
        increased, the priority number drops by one, the strategy starts
        again and True is returned; otherwise nothing changes.
        """
        if not self.strategy.exhausted():
            return False
        higher = increase_priority(self.priority)
        if higher is None:
            return False
        self.priority = higher
        self.strategy = LockAttemptTimeouts(self._rng, self._timeouts)
        return True
