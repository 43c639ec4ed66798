"""The job queue's directory on disk: names, the job file check, recovery at start-up.

Recovery (blocking, before the reactor runs) replays whatever journals exist
over the job files, moves corrupt job files aside (reported, never dropped
silently), never lets the serial go backwards, consolidates everything into
the files and deletes the journals it replayed; the store then starts a
fresh journal.  A torn last line is a batch that never committed; a whole
record after a tear on the same line is recovered; a journal with unreadable
lines is kept in ``queue/corrupt/``.  See :mod:`ganeti.master.jobs.jobstore`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.logger import Logger

from ganeti.core import fileutil, serializer
from ganeti.core.paths import Paths

JOBS_PER_ARCHIVE_DIR = 10000
JOURNAL_PREFIX = "journal."
RECORD_START = b'{"t":'
CORRUPT_DIR = "corrupt"


def job_file_name(job_id: int) -> str:
    """``job-<id>``."""
    return f"job-{job_id}"


def digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` takes "²" and "١"; ``int`` takes " 7\\n")."""
    return text.isascii() and text.isdigit()


def job_id_of(name: str) -> int | None:
    """The id of a file named exactly ``job-<digits>``, else None."""
    return int(name[4:]) if name.startswith("job-") and digits(name[4:]) else None


def archive_subdir(job_id: int) -> str:
    """The archive directory of a job: ``<id // 10000>``."""
    return str(job_id // JOBS_PER_ARCHIVE_DIR)


class JobStoreError(Exception):
    """The store could not make a record durable (its batch was rolled back)."""


def error_text(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return f"{err.strerror} (errno {err.errno})"
    return str(err) or type(err).__name__


@dataclass
class Recovered:
    """What :meth:`JobStore.recover` found."""

    serial: int
    jobs: dict[int, dict[str, Any]]
    archived_max: int = 0
    problems: list[str] = field(default_factory=list)


def parse_job(text: bytes, job_id: int) -> dict[str, Any]:
    return check_job(serializer.load_json(text), job_id)


def check_job(data: Any, job_id: int) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("id") != job_id:
        raise ValueError(f"its id {data.get('id')!r} differs from the file name")
    if not isinstance(data.get("ops"), list):
        raise ValueError("'ops' is missing or not a list")
    return data


def fsync_path(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return  # archived or replaced since: the newer state is journalled
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def archive_file(paths: Paths, job_id: int) -> str:
    """Move a job file into the archive; returns its new path."""
    name = job_file_name(job_id)
    subdir = os.path.join(paths.queue_archive_dir, archive_subdir(job_id))
    os.makedirs(subdir, mode=0o700, exist_ok=True)
    target = os.path.join(subdir, name)
    try:
        os.rename(os.path.join(paths.queue_dir, name), target)
    except FileNotFoundError:
        pass  # already archived before a crash
    return target


class QueueRecovery:
    """Brings a (locked) queue directory up to date from its journals."""

    log = Logger()

    def __init__(self, paths: Paths, durable: bool = True) -> None:
        self.paths = paths
        self.queue_dir = paths.queue_dir
        self._durable = durable

    def run(self, validate: Callable[[int, dict[str, Any]], object] | None = None
            ) -> tuple[Recovered, int]:
        """Replay the journals, repair and consolidate; the jobs and the next generation.

        ``validate(job_id, data)`` may apply a stricter check than the store's
        own; a job file it raises for is moved aside and reported like any
        other corrupt file.  Raises :class:`JobStoreError` if the files cannot
        be written (the journals are then kept).
        """
        problems: list[str] = []
        serial = self._read_serial(problems)
        jobs: dict[int, dict[str, Any]] = {}
        for name in os.listdir(self.queue_dir):
            job_id = job_id_of(name)
            if job_id is None:
                continue
            path = os.path.join(self.queue_dir, name)
            try:
                data = parse_job(fileutil.read_file(path), job_id)
                if validate is not None:
                    validate(job_id, data)
                jobs[job_id] = data
            except Exception as err:  # anything unreadable is moved aside, never dropped
                problems.append(self._move_aside(path, name, f"job file {name}: {err}"))
        archived_max = max(self._archived_max(), self._corrupt_max())
        generations = sorted(int(n[len(JOURNAL_PREFIX):]) for n in os.listdir(self.queue_dir)
                             if n.startswith(JOURNAL_PREFIX)
                             and digits(n[len(JOURNAL_PREFIX):]))
        archived: set[int] = set()
        touched: set[int] = set()
        damaged: set[int] = set()
        for gen in generations:
            before = len(problems)
            serial = max(serial, self._replay(gen, jobs, touched, archived, problems))
            if len(problems) > before:
                damaged.add(gen)
        for job_id in archived:
            jobs.pop(job_id, None)
        serial = max([serial, archived_max, *jobs])
        try:
            self._consolidate(jobs, touched - archived, archived, serial, generations,
                              damaged)
        except OSError as err:
            raise JobStoreError(f"cannot bring the job queue in {self.queue_dir} up to date: "
                                f"{error_text(err)}; the journals are kept (nothing is "
                                "lost): free space there and start again") from err
        for problem in problems:
            self.log.warn("Job queue recovery: {problem}", problem=problem)
        next_generation = (generations[-1] + 1) if generations else 1
        return Recovered(serial=serial, jobs=jobs, archived_max=archived_max,
                         problems=problems), next_generation

    def _read_serial(self, problems: list[str]) -> int:
        try:
            text = fileutil.read_file(self.paths.queue_serial).decode("ascii").strip()
            return int(text or "0")
        except FileNotFoundError:
            return 0
        except (ValueError, UnicodeDecodeError):
            problems.append(f"{self.paths.queue_serial} is corrupt; the serial is recomputed "
                            "from the jobs and journals")
            return 0

    def _archived_max(self) -> int:
        best = 0
        archive = self.paths.queue_archive_dir
        for sub in os.listdir(archive):
            subdir = os.path.join(archive, sub)
            if not digits(sub) or not os.path.isdir(subdir):
                continue
            for name in os.listdir(subdir):
                if name.startswith("job-") and digits(name[4:]):
                    best = max(best, int(name[4:]))
        return best

    def _corrupt_max(self) -> int:
        """The highest job id among files moved aside (their ids stay used)."""
        corrupt = os.path.join(self.queue_dir, CORRUPT_DIR)
        if not os.path.isdir(corrupt):
            return 0
        ids = [int(n[4:].split(".")[0]) for n in os.listdir(corrupt)
               if n.startswith("job-") and digits(n[4:].split(".")[0])]
        return max(ids, default=0)

    def _move_aside(self, path: str, name: str, problem: str) -> str:
        corrupt = os.path.join(self.queue_dir, CORRUPT_DIR)
        os.makedirs(corrupt, mode=0o700, exist_ok=True)
        target = os.path.join(corrupt, name)
        suffix = 0
        while os.path.exists(target):
            suffix += 1
            target = os.path.join(corrupt, f"{name}.{suffix}")
        os.rename(path, target)
        return f"{problem}; moved to {target}"

    def _replay(self, gen: int, jobs: dict[int, dict[str, Any]], touched: set[int],
                archived: set[int], problems: list[str]) -> int:
        path = os.path.join(self.queue_dir, f"{JOURNAL_PREFIX}{gen}")
        serial = 0
        lines = fileutil.read_file(path).split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                serial = max(serial, self._apply_record(line, jobs, touched, archived))
                continue
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
                if number == len(lines):  # a torn last line: the batch never committed
                    continue
                problem = f"{path} line {number} is unreadable ({err})"
            # A torn record with a later batch appended to it (a journal written
            # before writes were checked): the record that follows the tear is whole.
            salvaged = self._salvage(line, jobs, touched, archived)
            if salvaged is not None:
                serial = max(serial, salvaged)
                problems.append(f"{problem}; its torn start was skipped and the record "
                                "after it recovered")
            else:
                problems.append(f"{problem}; skipped")
        return serial

    @staticmethod
    def _apply_record(line: bytes, jobs: dict[int, dict[str, Any]], touched: set[int],
                      archived: set[int]) -> int:
        """Apply one journal record; returns the serial it carries (0 if none)."""
        rec = serializer.load_json(line)
        kind = rec["t"]
        if kind == "job":
            job_id = int(rec["id"])
            jobs[job_id] = check_job(rec["data"], job_id)
            touched.add(job_id)
            archived.discard(job_id)
        elif kind == "serial":
            return int(rec["serial"])
        elif kind == "archive":
            archived.add(int(rec["id"]))
        else:
            raise ValueError(f"unknown record type {kind!r}")
        return 0

    def _salvage(self, line: bytes, jobs: dict[int, dict[str, Any]], touched: set[int],
                 archived: set[int]) -> int | None:
        start = line.find(RECORD_START, 1)
        while start != -1:
            try:
                return self._apply_record(line[start:], jobs, touched, archived)
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                start = line.find(RECORD_START, start + 1)
        return None

    def _consolidate(self, jobs: dict[int, dict[str, Any]], touched: set[int],
                     archived: set[int], serial: int, generations: list[int],
                     damaged: set[int]) -> None:
        # Bring the files up to the journals' state, durably, before the journals go.
        for job_id in touched:
            fileutil.atomic_write(os.path.join(self.queue_dir, job_file_name(job_id)),
                                  json.dumps(jobs[job_id], separators=(",", ":")), 0o640,
                                  self._durable)
        for job_id in archived:
            target = archive_file(self.paths, job_id)
            if self._durable:
                fsync_path(target)
                fileutil.fsync_dir(os.path.dirname(target))
        fileutil.atomic_write(self.paths.queue_serial, f"{serial}\n", 0o640, self._durable)
        if not os.path.exists(self.paths.queue_version):
            fileutil.atomic_write(self.paths.queue_version, "1\n", 0o640, self._durable)
        if self._durable:
            fileutil.fsync_dir(self.queue_dir)
        for gen in generations:
            name = f"{JOURNAL_PREFIX}{gen}"
            if gen in damaged:  # kept for the administrator, as corrupt job files are
                self.log.warn("Job queue recovery: {problem}",
                              problem=self._move_aside(os.path.join(self.queue_dir, name),
                                                       name, f"journal {name} had unreadable "
                                                       "lines"))
            else:
                os.unlink(os.path.join(self.queue_dir, name))

