"""The output of OS script runs, kept for the master to read while they run.

The master names each OS script run with a run id (the optional last argument
of ``instance_os_add`` and ``instance_run_rename``) and reads its output with
``os_output(run_id, offset)`` while the call is pending, to put it into the
job's log.  This module keeps, per run id, the lines the script wrote, after
:class:`~ganeti.noded.osrun.ScriptLog` replaced the hidden values (the same
text as the run's log file), escaped as Ganeti shows text.

Everything is bounded: a run keeps at most :data:`MAX_LINES` lines and
:data:`MAX_BYTES` characters (then it is marked truncated and the rest is only
in the log file), a line is cut at :data:`MAX_LINE`, an answer carries at most
:data:`MAX_ANSWER_LINES` lines, a finished run is answered for
:data:`KEEP_FINISHED` seconds, and at most :data:`MAX_RUNS` runs are kept (the
oldest finished ones go first).  Reads and writes happen in the reactor
thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Lines of one run kept for the master (its job log shows as many).
MAX_LINES = 1000
#: Characters of one run kept for the master.
MAX_BYTES = 256 * 1024
#: A longer line is cut here (the log file has all of it).
MAX_LINE = 1000
#: Lines in one os_output answer; the master asks again for more.
MAX_ANSWER_LINES = 200
#: Seconds a finished run is still answered (the master's last read comes at once).
KEEP_FINISHED = 600.0
#: Runs kept at most; the oldest finished ones are dropped first.
MAX_RUNS = 64


class RunIdInUse(ValueError):
    """A run with this id is still running."""


@dataclass
class RunOutput:
    """What one run wrote so far."""

    started: float
    lines: list[str] = field(default_factory=list)
    size: int = 0
    truncated: bool = False
    ended: float | None = None
    #: the run's log file as a wire path (None until known, or without a log)
    log_file: str | None = None

    @property
    def done(self) -> bool:
        """The script ended (or the call failed before it started)."""
        return self.ended is not None

    def add(self, line: str) -> None:
        """One line of output (hidden values already replaced)."""
        if self.truncated:
            return
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE] + " ..."
        if len(self.lines) >= MAX_LINES or self.size + len(line) > MAX_BYTES:
            self.truncated = True
            return
        self.lines.append(line)
        self.size += len(line)

    def answer(self, offset: int) -> dict[str, Any]:
        """``os_output``'s answer from line ``offset`` on."""
        offset = min(offset, len(self.lines))
        lines = self.lines[offset:offset + MAX_ANSWER_LINES]
        nxt = offset + len(lines)
        return {"lines": lines, "next": nxt,
                "done": self.done and nxt == len(self.lines),
                "truncated": self.truncated and nxt == len(self.lines),
                "log_file": self.log_file}


class OsRuns:
    """The runs of one node daemon, by run id."""

    def __init__(self) -> None:
        self.runs: dict[str, RunOutput] = {}

    def start(self, run_id: str, now: float) -> RunOutput:
        """A new run; RunIdInUse if a run of that id is still running (a finished
        one of that id is replaced)."""
        self._expire(now)
        old = self.runs.get(run_id)
        if old is not None and not old.done:
            raise RunIdInUse(f"OS script run id {run_id} is in use")
        self.runs.pop(run_id, None)
        run = RunOutput(started=now)
        self.runs[run_id] = run
        return run

    def finish(self, run: RunOutput, now: float) -> None:
        """The run ended (its last line was added)."""
        if run.ended is None:
            run.ended = now

    def get(self, run_id: str, now: float) -> RunOutput | None:
        """The run of that id, None if unknown (or expired)."""
        self._expire(now)
        return self.runs.get(run_id)

    def _expire(self, now: float) -> None:
        for run_id, run in list(self.runs.items()):
            if run.ended is not None and now - run.ended > KEEP_FINISHED:
                del self.runs[run_id]
        finished = sorted((r.ended, run_id) for run_id, r in self.runs.items()
                          if r.ended is not None)
        while len(self.runs) >= MAX_RUNS and finished:
            del self.runs[finished.pop(0)[1]]
