"""A fake clock that runs one reactor turn at a time."""

from twisted.internet.task import Clock


class TurnClock(Clock):
    """Runs one reactor turn: the calls due when the turn starts, not the
    ``callLater(0)`` calls those make (``advance(0)`` runs those too)."""

    def turn(self):
        due = [call for call in self.calls if call.getTime() <= self.seconds()]
        for call in due:
            self.calls.remove(call)
            call.called = 1
            call.func(*call.args, **call.kw)
