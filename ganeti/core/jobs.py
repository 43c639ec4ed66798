"""Jobs as data: statuses, priorities, timestamps, log entries, job files.

A job is a list of opcodes that run in order.  :class:`QueuedJob` and
:class:`QueuedOpCode` hold exactly what Ganeti keeps in a job file
(``queue/job-<id>``); :meth:`QueuedJob.to_dict` and
:meth:`QueuedJob.from_dict` convert to and from that JSON, and loading
checks every field so that a corrupt file is reported with the place of
the problem (:class:`CorruptJobError`).  Everything here is plain data and
pure functions: the master daemon's queue changes these objects on the
reactor thread and writes them out.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ganeti.core import constants as c
from ganeti.core import opcodes, serializer
from ganeti.core.errors import JobQueueError

# Statuses (jobs and opcodes use the same strings).
QUEUED = c.JOB_STATUS_QUEUED
WAITING = c.JOB_STATUS_WAITING
CANCELING = c.JOB_STATUS_CANCELING
RUNNING = c.JOB_STATUS_RUNNING
CANCELED = c.JOB_STATUS_CANCELED
SUCCESS = c.JOB_STATUS_SUCCESS
ERROR = c.JOB_STATUS_ERROR
#: All statuses in Ganeti's comparison order.
STATUS_ORDER = c.JOB_STATUS_ORDER
ALL_STATUSES = c.JOB_STATUS_ALL
#: A job or opcode in one of these will not change any more.
FINALIZED = c.JOBS_FINALIZED
#: Not started yet (or being canceled before it started).
PENDING = c.JOBS_PENDING

#: ``[seconds, microseconds]``, as Ganeti stores and sends times.
Timestamp = list[int]

_TERMINAL = frozenset({ERROR, CANCELING, CANCELED})
_SOFT = frozenset({SUCCESS, QUEUED})


class CorruptJobError(JobQueueError):
    """A job file (or job data) does not have the shape of a Ganeti job."""


# --- statuses and priorities ---------------------------------------------------

def job_status(op_statuses: Iterable[str]) -> str:
    """The status of a job from the statuses of its opcodes, in order.

    The first opcode in error, canceling or canceled decides; otherwise the
    last one waiting or running does; a job whose opcodes all succeeded
    has succeeded; otherwise (only queued and successful opcodes) it is
    queued.
    """
    status = QUEUED
    all_success = True
    for op_status in op_statuses:
        if op_status not in ALL_STATUSES:
            raise ValueError(f"unknown opcode status {op_status!r}")
        if op_status != SUCCESS:
            all_success = False
        if op_status in _TERMINAL:
            return op_status
        if op_status not in _SOFT:
            status = op_status
    return SUCCESS if all_success else status


def job_priority(ops: Iterable[QueuedOpCode]) -> int:
    """The lowest priority number among unfinished opcodes (default 0)."""
    priorities = [op.priority for op in ops if op.status not in FINALIZED]
    return min(priorities) if priorities else c.OP_PRIO_DEFAULT


# --- timestamps and log entries ------------------------------------------------

def split_time(seconds: float) -> Timestamp:
    """``[seconds, microseconds]`` from a POSIX time (truncated to the µs)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"invalid time {seconds!r}")
    whole, micro = divmod(int(seconds * 1000000), 1000000)
    return [whole, micro]


def merge_time(timestamp: Sequence[int]) -> float:
    """A POSIX time from ``[seconds, microseconds]``."""
    whole, micro = timestamp
    return float(whole) + micro / 1000000.0


def time_ns(seconds: float) -> int:
    """Nanoseconds since the epoch, as reason trails record them."""
    return int(seconds * 1000000000)


def log_entry(serial: int, when: float | Timestamp, log_type: str, message: Any) -> list[Any]:
    """A job log entry ``[serial, [s, us], type, message]``."""
    stamp = split_time(when) if isinstance(when, (int, float)) else list(when)
    return [serial, stamp, log_type, message]


# --- validation helpers for loading ---------------------------------------------

def _fail(where: str, problem: str) -> CorruptJobError:
    return CorruptJobError(f"{where}: {problem}")


def _show(value: Any) -> str:
    return opcodes.kinds.show(value, 60)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _load_timestamp(value: Any, where: str) -> Timestamp | None:
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 2:
        parts = []
        for part in value:
            if isinstance(part, float) and part.is_integer():
                part = int(part)
            if not _is_int(part):
                break
            parts.append(part)
        else:
            if parts[0] >= 0 and 0 <= parts[1] <= 999999:
                return parts
    raise _fail(where, f"expected [seconds, microseconds] or null, got {_show(value)}")


def _load_log(value: Any, where: str) -> list[list[Any]]:
    if not isinstance(value, list):
        raise _fail(where, f"expected a list of log entries, got {_show(value)}")
    entries = []
    for index, entry in enumerate(value):
        here = f"{where}[{index}]"
        if not isinstance(entry, list) or len(entry) != 4:
            raise _fail(here, "expected [serial, [seconds, microseconds], type, message], "
                              f"got {_show(entry)}")
        serial, stamp, log_type, message = entry
        if not _is_int(serial) or serial < 0:
            raise _fail(here, f"log serial must be a non-negative integer, got {_show(serial)}")
        loaded = _load_timestamp(stamp, here)
        if loaded is None:
            raise _fail(here, "log entry has no timestamp")
        if not isinstance(log_type, str):
            raise _fail(here, f"log type must be a string, got {_show(log_type)}")
        entries.append([serial, loaded, log_type, copy.deepcopy(message)])
    return entries


# --- the job file objects ------------------------------------------------------

#: Opcode parameters whose values are private (Ganeti's PRIVATE_PARAMETERS_BLACKLIST):
#: stored and shown as ``"<redacted>"`` for every key they hold while the opcode is
#: queued, as null once it ran (Ganeti 3.0: luxid writes a queued job with
#: ``"<redacted>"``, the job process rewrites it with null).
PRIVATE_PARAMETERS = ("osparams_private", "osparams_secret", "osparams_private_cluster")
#: What a private value reads as in a queued job's file and queries.
REDACTED = "<redacted>"


def redact_private(op: dict[str, Any], mark: Any = None
                   ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``op`` with the values of its private parameters replaced by ``mark`` (per key;
    per OS and key for ``*_cluster``), and those parameters as given (None if there
    were none)."""
    private: dict[str, Any] = {}
    for name in PRIVATE_PARAMETERS:
        value = op.get(name)
        if not isinstance(value, dict) or not value:
            continue
        private[name] = value
        if name.endswith("_cluster"):
            op[name] = {os_name: ({k: mark for k in params} if isinstance(params, dict)
                                  else mark) for os_name, params in value.items()}
        else:
            op[name] = {k: mark for k in value}
    return op, private or None


@dataclass
class QueuedOpCode:
    """One opcode of a job: its input and what happened to it so far.

    ``input`` is the stored form of the opcode (see
    :func:`ganeti.core.opcodes.validate`); ``log`` holds entries
    ``[serial, [s, us], type, message]``; the timestamps are when the
    opcode started (before its locks), began executing (after them) and
    ended.
    """

    input: dict[str, Any]
    status: str = QUEUED
    result: Any = None
    log: list[list[Any]] = field(default_factory=list)
    priority: int = c.OP_PRIO_DEFAULT
    start_timestamp: Timestamp | None = None
    exec_timestamp: Timestamp | None = None
    end_timestamp: Timestamp | None = None

    #: The values of private parameters (Ganeti's PRIVATE_PARAMETERS_BLACKLIST) as
    #: submitted: kept in memory for the unit that runs the opcode, never stored,
    #: queried or logged; ``input`` holds them as null (Ganeti's job files too).
    private: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def new(cls, op: dict[str, Any]) -> QueuedOpCode:
        """A queued opcode for a validated opcode (priority taken from it); private
        parameter values go to :attr:`private`, ``input`` keeps their names."""
        priority = op.get("priority", c.OP_PRIO_DEFAULT)
        stored, private = redact_private(copy.deepcopy(op))
        return cls(input=stored, private=private,
                   priority=priority if _is_int(priority) else c.OP_PRIO_DEFAULT)

    def run_input(self) -> dict[str, Any]:
        """The opcode a unit runs: ``input`` with the private values put back."""
        if not self.private:
            return self.input
        return {**self.input, **self.private}

    @property
    def op_id(self) -> str:
        """The opcode's ``OP_ID``."""
        return str(self.input.get(opcodes.OP_ID_KEY, ""))

    def summary(self) -> str:
        """The opcode's summary text (``TEST_DELAY(1.0)``)."""
        return opcodes.summary(self.input)

    def to_dict(self, deep: bool = True) -> dict[str, Any]:
        """The job-file JSON object of this opcode (fresh copies).

        ``deep=False`` shares the input, the result and the log entries
        (the log list itself is copied): the queue never changes them in
        place once set, so its snapshots need no deep copies.
        """
        op = self.input
        if self.private and self.status == QUEUED:
            op = redact_private(copy.deepcopy(op) if deep else dict(op), REDACTED)[0]
        if not deep:
            return {
                "input": op, "status": self.status, "result": self.result,
                "log": list(self.log), "priority": self.priority,
                "start_timestamp": self.start_timestamp,
                "exec_timestamp": self.exec_timestamp, "end_timestamp": self.end_timestamp,
            }
        return {
            "input": copy.deepcopy(op) if op is self.input else op,
            "status": self.status,
            "result": copy.deepcopy(self.result),
            "log": copy.deepcopy(self.log),
            "priority": self.priority,
            "start_timestamp": copy.copy(self.start_timestamp),
            "exec_timestamp": copy.copy(self.exec_timestamp),
            "end_timestamp": copy.copy(self.end_timestamp),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "opcode") -> QueuedOpCode:
        """Load and check the job-file form; problems raise :class:`CorruptJobError`."""
        if not isinstance(data, dict):
            raise _fail(where, f"expected an object, got {_show(data)}")
        op = data.get("input")
        if not isinstance(op, dict):
            raise _fail(f"{where}.input", f"expected an opcode object, got {_show(op)}")
        op_id = op.get(opcodes.OP_ID_KEY)
        if not isinstance(op_id, str) or not op_id:
            raise _fail(f"{where}.input", f"opcode has no OP_ID (got {_show(op_id)})")
        status = data.get("status")
        if status not in ALL_STATUSES:
            raise _fail(f"{where}.status", f"unknown status {_show(status)}")
        default_prio = op.get("priority", c.OP_PRIO_DEFAULT)
        priority = data.get("priority", default_prio if _is_int(default_prio)
                            else c.OP_PRIO_DEFAULT)
        if not _is_int(priority) or not c.OP_PRIO_HIGHEST <= priority <= c.OP_PRIO_LOWEST:
            raise _fail(f"{where}.priority", f"expected an integer from {c.OP_PRIO_HIGHEST} "
                        f"to {c.OP_PRIO_LOWEST}, got {_show(priority)}")
        return cls(
            # a file never holds private values: a queued job's "<redacted>" reads as null
            input=redact_private(copy.deepcopy(op))[0],
            status=str(status),
            result=copy.deepcopy(data.get("result")),
            log=_load_log(data.get("log", []), f"{where}.log"),
            priority=priority,
            start_timestamp=_load_timestamp(data.get("start_timestamp"),
                                            f"{where}.start_timestamp"),
            exec_timestamp=_load_timestamp(data.get("exec_timestamp"),
                                           f"{where}.exec_timestamp"),
            end_timestamp=_load_timestamp(data.get("end_timestamp"), f"{where}.end_timestamp"),
        )


@dataclass
class QueuedJob:
    """A job: its id, its opcodes and its timestamps (received, started, ended).

    ``livelock`` and ``process_id`` are Ganeti's fields for the process that
    runs the job; they are written only when set.
    """

    id: int
    ops: list[QueuedOpCode]
    received_timestamp: Timestamp | None = None
    start_timestamp: Timestamp | None = None
    end_timestamp: Timestamp | None = None
    livelock: str | None = None
    process_id: int | None = None
    #: Why the job waits (a filter rule, a rate limit, a dependency): runtime
    #: state of the master, never stored in the job file.
    wait_reason: str | None = field(default=None, compare=False)
    #: Whether the job was read from the archive (query field ``archived``): never stored.
    archived: bool = field(default=False, compare=False)

    @classmethod
    def new(cls, job_id: int, ops: Sequence[dict[str, Any]], received: float) -> QueuedJob:
        """A new queued job from stored-form opcodes, received at ``received``."""
        if not ops:
            raise ValueError("a job needs at least one opcode")
        return cls(id=job_id, ops=[QueuedOpCode.new(op) for op in ops],
                   received_timestamp=split_time(received))

    @property
    def status(self) -> str:
        """The job status computed from its opcodes (:func:`job_status`)."""
        return job_status(op.status for op in self.ops)

    @property
    def priority(self) -> int:
        """The job priority (:func:`job_priority`)."""
        return job_priority(self.ops)

    @property
    def finalized(self) -> bool:
        """Whether the job has finished (success, error or canceled)."""
        return self.status in FINALIZED

    @property
    def log_serial(self) -> int:
        """The highest log serial used so far (0 without log entries)."""
        return max((entry[0] for op in self.ops for entry in op.log), default=0)

    def summary(self) -> list[str]:
        """The summary of every opcode."""
        return [op.summary() for op in self.ops]

    def log_entries_since(self, serial: int | None) -> list[list[Any]]:
        """Log entries with a serial above ``serial`` (all for None), in order."""
        return [copy.deepcopy(entry) for op in self.ops for entry in op.log
                if serial is None or entry[0] > serial]

    def to_dict(self, deep: bool = True) -> dict[str, Any]:
        """The job-file JSON object (Ganeti's shape, fresh copies; see QueuedOpCode)."""
        data: dict[str, Any] = {
            "id": self.id,
            "ops": [op.to_dict(deep) for op in self.ops],
            "received_timestamp": copy.copy(self.received_timestamp),
            "start_timestamp": copy.copy(self.start_timestamp),
            "end_timestamp": copy.copy(self.end_timestamp),
        }
        if self.livelock is not None:
            data["livelock"] = self.livelock
        if self.process_id is not None:
            data["process_id"] = self.process_id
        return data

    def to_json(self) -> str:
        """The job file's text."""
        return serializer.dump_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, where: str = "job") -> QueuedJob:
        """Load and check a job-file object; problems raise :class:`CorruptJobError`.

        ``where`` starts every error message (say the file name).  Unknown
        keys are ignored.  Opcode inputs are not checked against the opcode
        table, so jobs with opcodes this implementation does not know still
        load and can be listed.
        """
        if not isinstance(data, dict):
            raise _fail(where, f"expected a JSON object, got {_show(data)}")
        job_id = data.get("id")
        if isinstance(job_id, str) and job_id.isdigit() and job_id.isascii():
            job_id = int(job_id)
        if not _is_int(job_id) or job_id < 0:
            raise _fail(f"{where}.id", f"expected a non-negative integer, got {_show(job_id)}")
        ops = data.get("ops")
        if not isinstance(ops, list) or not ops:
            raise _fail(f"{where}.ops", f"expected a non-empty list of opcodes, got {_show(ops)}")
        livelock = data.get("livelock")
        if livelock is not None and not isinstance(livelock, str):
            raise _fail(f"{where}.livelock", f"expected a path or null, got {_show(livelock)}")
        process_id = data.get("process_id")
        if process_id is not None and (not _is_int(process_id) or process_id < 0):
            raise _fail(f"{where}.process_id",
                        f"expected a process id or null, got {_show(process_id)}")
        return cls(
            id=job_id,
            ops=[QueuedOpCode.from_dict(op, f"{where}.ops[{i}]") for i, op in enumerate(ops)],
            received_timestamp=_load_timestamp(data.get("received_timestamp"),
                                               f"{where}.received_timestamp"),
            start_timestamp=_load_timestamp(data.get("start_timestamp"),
                                            f"{where}.start_timestamp"),
            end_timestamp=_load_timestamp(data.get("end_timestamp"),
                                          f"{where}.end_timestamp"),
            livelock=livelock,
            process_id=process_id,
        )

    @classmethod
    def from_json(cls, text: str | bytes, where: str = "job") -> QueuedJob:
        """Load a job file's text; bad JSON or bad shape raise :class:`CorruptJobError`."""
        try:
            data = serializer.load_json(text)
        except (ValueError, UnicodeDecodeError) as err:
            raise _fail(where, f"not valid JSON ({err})") from None
        return cls.from_dict(data, where)


__all__ = [
    "ALL_STATUSES", "CANCELED", "CANCELING", "ERROR", "FINALIZED", "PENDING", "QUEUED",
    "RUNNING", "STATUS_ORDER", "SUCCESS", "WAITING", "CorruptJobError", "QueuedJob",
    "PRIVATE_PARAMETERS", "QueuedOpCode", "Timestamp", "job_priority", "job_status",
    "log_entry", "merge_time", "redact_private", "split_time", "time_ns",
]

