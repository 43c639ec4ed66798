"""The durable job store: Ganeti's queue directory, made fast by a journal.

On disk the queue keeps Ganeti's layout (``job-<id>``, ``serial``, ``version``,
``lock``, ``drain``, ``archive/<id // 10000>/job-<id>``) so that tools and
replication see what they expect.  Durability comes from a write-ahead
journal next to it (``journal.<generation>``): every change (a job's new
state, a serial allocation, an archival) is appended as one JSON line, and a
whole batch of changes costs one ``fdatasync`` (group commit).  After that
the callers are told.  So a job id given to a client, and every state anyone can
observe, is on disk first.

The job files themselves are written off that path by a file loop that
coalesces: each pass writes the latest state of every job that changed
(tmp + rename, no fsync), so a busy job costs one file write per pass, not
one per state.  When a journal generation grows past a size, a new one
starts and the file loop checkpoints the old one: it fsyncs the files and
directories written since the last checkpoint, then deletes the journal.
Recovery at startup replays whatever journals exist over the job files,
moves corrupt job files aside (reported, never dropped silently), never lets
the serial go backwards, consolidates everything into the files and starts a
fresh journal.

A batch is either wholly in the journal or not at all: a short write is
continued, a write or sync that fails rolls the journal back to its last
committed length (see :meth:`JobStore._append`), and nobody is told.  A
failed batch of *new* jobs is refused to its submitter; any other record
(the state of a job that exists) is kept and retried until the disk takes it
again, so a job never loses a state it reached and never shows one it did
not keep.  While that lasts the store reports the failure
(:attr:`JobStore.failure`) and the queue refuses new jobs.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import fileutil, serializer
from ganeti.core.paths import Paths

BlockingRunner = Callable[..., "defer.Deferred[Any]"]
JOBS_PER_ARCHIVE_DIR = 10000
JOURNAL_PREFIX = "journal."
RECORD_START = b'{"t":'
CORRUPT_DIR = "corrupt"
DEFAULT_CHECKPOINT_BYTES = 8 * 1024 * 1024
#: Retries of a journal or file write that failed (disk full, I/O error) start
#: after this many seconds and double up to the maximum.
RETRY_FIRST = 0.05
RETRY_MAX = 1.0
#: Cluster verify warns when the queue's filesystem has less free space than
#: this (bytes, or fraction of its size), and reports an error below 1/16 of it.
LOW_SPACE_BYTES = 128 * 1024 * 1024
LOW_SPACE_FRACTION = 0.02
#: While writes keep failing, the failure is logged again this often (seconds).
FAILURE_LOG_INTERVAL = 60.0


def job_file_name(job_id: int) -> str:
    """``job-<id>``."""
    return f"job-{job_id}"


def _digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` takes "²" and "١"; ``int`` takes " 7\\n")."""
    return text.isascii() and text.isdigit()


def _job_id_of(name: str) -> int | None:
    """The id of a file named exactly ``job-<digits>``, else None."""
    return int(name[4:]) if name.startswith("job-") and _digits(name[4:]) else None


def archive_subdir(job_id: int) -> str:
    """The archive directory of a job: ``<id // 10000>``."""
    return str(job_id // JOBS_PER_ARCHIVE_DIR)


class QueueLockedError(Exception):
    """Another process owns the job queue."""


class JobStoreError(Exception):
    """The store could not make a record durable (its batch was rolled back)."""


@dataclass
class StoreFailure:
    """An episode of failing writes: what failed, since when, how often."""

    message: str
    since: float
    attempts: int = 1
    until: float | None = None  # set when writes work again

    def describe(self) -> str:
        """One line for logs, errors and cluster verify."""
        when = (f"failing since {_clock_text(self.since)}" if self.until is None
                else f"from {_clock_text(self.since)} to {_clock_text(self.until)}")
        return f"{self.message} ({when}, {self.attempts} attempt(s))"


def _clock_text(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))


def _error_text(err: BaseException) -> str:
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


def _parse_job(text: bytes, job_id: int) -> dict[str, Any]:
    return _check_job(serializer.load_json(text), job_id)


def _check_job(data: Any, job_id: int) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("id") != job_id:
        raise ValueError(f"its id {data.get('id')!r} differs from the file name")
    if not isinstance(data.get("ops"), list):
        raise ValueError("'ops' is missing or not a list")
    return data


def _fsync_path(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return  # archived or replaced since: the newer state is journalled
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class JobStore:
    """Group-committed, journalled persistence of job states.

    All public methods except :meth:`recover` run on the reactor; the file
    work happens through ``run_blocking`` (a thread pool).  Saves are applied
    in submission order.
    """

    log = Logger()

    def __init__(self, paths: Paths, run_blocking: BlockingRunner, clock: IReactorTime,
                 durable: bool = True,
                 checkpoint_bytes: int = DEFAULT_CHECKPOINT_BYTES) -> None:
        self.paths = paths
        self.clock = clock
        self.queue_dir = paths.queue_dir
        self._run_blocking = run_blocking
        self._durable = durable
        self._checkpoint_bytes = checkpoint_bytes
        self._generation = 0
        self._journal: Any = None  # the open journal file (binary, append)
        self._journal_size = 0  # committed length of the journal
        self._rollback_due = False  # a failed batch could not be cut off yet
        # The journal's system calls (replaced by fault tests: a full disk, I/O errors).
        self._os_write: Callable[[int, memoryview], int] = os.write
        self._os_fdatasync: Callable[[int], None] = os.fdatasync
        # commit loop (reactor side): (record, waiter, refusable)
        self._pending: list[tuple[dict[str, Any], defer.Deferred[None] | None, bool]] = []
        self._committing = False
        # file loop: handed over by the commit loop, consumed by the file thread
        self._unwritten: dict[int, str] = {}  # job id -> its latest JSON text
        self._archives: list[int] = []
        self._checkpoints: list[tuple[int, Any]] = []
        self._writing_files = False
        self._files_done: defer.Deferred[None] = defer.succeed(None)
        self._archive_waiters: dict[int, list[defer.Deferred[None]]] = {}
        self._dirty: set[str] = set()  # written since the last checkpoint (file thread)
        self._lock_fd: int | None = None
        self.serial = 0
        self.commits = 0  # journal fdatasyncs, for tests and statistics
        self.checkpoints = 0
        # Current episodes of failing writes, by what fails ("journal", "files").
        self._failures: dict[str, StoreFailure] = {}
        #: The last episode that ended, for cluster verify.
        self.last_failure: StoreFailure | None = None
        self._failure_logged = 0.0
        # called (reactor thread) after job files were written and jobs archived
        self.on_written: Callable[[dict[int, str], list[int]], None] | None = None

    # Startup (blocking, before the reactor runs)

    def recover(self, validate: Callable[[int, dict[str, Any]], object] | None = None
                ) -> Recovered:
        """Lock the queue, replay journals, repair and consolidate; return the jobs.

        ``validate(job_id, data)`` may apply a stricter check than the store's
        own; a job file it raises for is moved aside and reported like any
        other corrupt file.
        """
        fileutil.ensure_dirs([(self.queue_dir, 0o700), (self.paths.queue_archive_dir, 0o700)])
        self._lock_queue()
        problems: list[str] = []
        serial = self._read_serial(problems)
        jobs: dict[int, dict[str, Any]] = {}
        for name in os.listdir(self.queue_dir):
            job_id = _job_id_of(name)
            if job_id is None:
                continue
            path = os.path.join(self.queue_dir, name)
            try:
                data = _parse_job(fileutil.read_file(path), job_id)
                if validate is not None:
                    validate(job_id, data)
                jobs[job_id] = data
            except Exception as err:  # anything unreadable is moved aside, never dropped
                problems.append(self._move_aside(path, name, f"job file {name}: {err}"))
        archived_max = max(self._archived_max(), self._corrupt_max())
        generations = sorted(int(n[len(JOURNAL_PREFIX):]) for n in os.listdir(self.queue_dir)
                             if n.startswith(JOURNAL_PREFIX)
                             and _digits(n[len(JOURNAL_PREFIX):]))
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
                                f"{_error_text(err)}; the journals are kept (nothing is "
                                "lost): free space there and start again") from err
        self.serial = serial
        self._generation = (generations[-1] + 1) if generations else 1
        self._open_journal()
        for problem in problems:
            self.log.warn("Job queue recovery: {problem}", problem=problem)
        return Recovered(serial=serial, jobs=jobs, archived_max=archived_max, problems=problems)

    def _lock_queue(self) -> None:
        fd = os.open(self.paths.queue_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EAGAIN, errno.EACCES):
                raise QueueLockedError(f"the job queue {self.queue_dir} is locked by another "
                                       "process (is another ganeti-masterd running?)") from None
            raise
        self._lock_fd = fd

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
            if not _digits(sub) or not os.path.isdir(subdir):
                continue
            for name in os.listdir(subdir):
                if name.startswith("job-") and _digits(name[4:]):
                    best = max(best, int(name[4:]))
        return best

    def _corrupt_max(self) -> int:
        """The highest job id among files moved aside (their ids stay used)."""
        corrupt = os.path.join(self.queue_dir, CORRUPT_DIR)
        if not os.path.isdir(corrupt):
            return 0
        ids = [int(n[4:].split(".")[0]) for n in os.listdir(corrupt)
               if n.startswith("job-") and _digits(n[4:].split(".")[0])]
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
            jobs[job_id] = _check_job(rec["data"], job_id)
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
                                  json.dumps(jobs[job_id]), 0o640, self._durable)
        for job_id in archived:
            target = self._archive_file(job_id)
            if self._durable:
                _fsync_path(target)
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

    def _archive_file(self, job_id: int) -> str:
        """Move a job file into the archive; returns its new path."""
        name = job_file_name(job_id)
        subdir = os.path.join(self.paths.queue_archive_dir, archive_subdir(job_id))
        os.makedirs(subdir, mode=0o700, exist_ok=True)
        target = os.path.join(subdir, name)
        try:
            os.rename(os.path.join(self.queue_dir, name), target)
        except FileNotFoundError:
            pass  # already archived before a crash
        return target

    def _open_journal(self) -> None:
        path = os.path.join(self.queue_dir, f"{JOURNAL_PREFIX}{self._generation}")
        self._journal = open(path, "ab", buffering=0)  # lives as long as the store
        if self._durable:
            fileutil.fsync_dir(self.queue_dir)
        self._journal_size = 0

    def close(self) -> None:
        """Close the journal and release the queue lock (blocking)."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # Changes (on the reactor)

    def allocate_ids(self, count: int) -> list[int]:
        """New job ids; durable with the next commit (which must carry their jobs)."""
        first = self.serial + 1
        self.serial += count
        self._pending.append(({"t": "serial", "serial": self.serial}, None, False))
        return list(range(first, first + count))

    def save(self, job_id: int, data: dict[str, Any]) -> defer.Deferred[None]:
        """Persist a job's state; fires once it is durable (journalled).

        ``data`` is serialised when the batch is written, so the caller must not
        change it in between (pass a fresh ``to_dict()``).  The job file follows
        shortly after, written by the file loop.  If the journal cannot take
        the record it is retried until it is durable, however long that takes.
        """
        return self._submit({"t": "job", "id": job_id, "data": data})

    def save_new(self, jobs: list[tuple[int, dict[str, Any]]]) -> defer.Deferred[None]:
        """Persist newly submitted jobs, all in one batch; fires once all are durable.

        If the journal cannot take that batch, nothing of it is kept and the
        Deferred fails with :class:`JobStoreError` (the submitter is refused).
        """
        if not jobs:
            return defer.succeed(None)
        waiters = [self._submit({"t": "job", "id": job_id, "data": data}, refusable=True,
                                kick=False) for job_id, data in jobs]
        self._kick_commit()
        done: defer.Deferred[None] = defer.Deferred()
        gathered = defer.gatherResults(waiters, consumeErrors=True)
        gathered.addCallbacks(lambda _: done.callback(None),
                              lambda f: done.errback(f.value.subFailure))
        return done

    def archive(self, job_id: int) -> defer.Deferred[None]:
        """Move a finished job into the archive; fires once it is durable and moved."""
        return self._submit({"t": "archive", "id": job_id})

    def _submit(self, record: dict[str, Any], refusable: bool = False, kick: bool = True
                ) -> defer.Deferred[None]:
        d: defer.Deferred[None] = defer.Deferred()
        self._pending.append((record, d, refusable))
        if kick:
            self._kick_commit()
        return d

    def _kick_commit(self) -> None:
        if not self._committing:
            self._committing = True
            defer.Deferred.fromCoroutine(self._commit_loop())

    async def _commit_loop(self) -> None:
        """Journal everything pending, one fdatasync per batch, until nothing is left.

        A batch that fails was rolled back: its refusable records (new jobs)
        are refused, the others go back to the front of the queue and the
        batch is tried again after a growing pause.
        """
        delay = RETRY_FIRST
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                records = [r for r, _, _ in batch]
                try:
                    rotated, texts = await self._run_blocking(self._journal_batch, records)
                except Exception as err:
                    self._note_failure("journal", err)
                    refused = JobStoreError(f"writing the job queue journal failed: "
                                            f"{_error_text(err)}")
                    kept = []
                    for rec, d, refusable in batch:
                        if refusable and d is not None:
                            d.errback(refused)
                        else:
                            kept.append((rec, d, refusable))
                    self._pending = kept + self._pending
                    if self._pending:
                        await task.deferLater(self.clock, delay)
                        delay = min(delay * 2, RETRY_MAX)
                    continue
                delay = RETRY_FIRST
                self._note_success("journal")
                self.commits += 1
                for rec in records:  # hand the files over to the file loop
                    if rec["t"] == "job":
                        self._unwritten[rec["id"]] = texts[rec["id"]]
                    elif rec["t"] == "archive":
                        self._archives.append(rec["id"])
                if rotated is not None:
                    self._checkpoints.append(rotated)
                for rec, d, _ in batch:
                    if d is None:
                        continue
                    if rec["t"] == "archive":  # answered once the file has moved
                        self._archive_waiters.setdefault(rec["id"], []).append(d)
                    else:
                        d.callback(None)
                self._kick_files()
        finally:
            self._committing = False

    @property
    def failure(self) -> StoreFailure | None:
        """The current episode of failing writes (journal first), None while all is well."""
        return self._failures.get("journal") or self._failures.get("files")

    def _note_failure(self, what: str, err: BaseException) -> None:
        now = self.clock.seconds()
        action = {"journal": "writing the job queue journal",
                  "files": "writing job files"}[what]
        message = f"{action} failed: {_error_text(err)}"
        current = self._failures.get(what)
        if current is None:
            self._failures[what] = StoreFailure(message, now)
            self._failure_logged = now
            self.log.error("Job queue: {message}; new jobs are refused and job states are "
                           "kept in memory until the disk takes them again (free space in "
                           "{queue_dir})", message=message, queue_dir=self.queue_dir)
            return
        current.message = message
        current.attempts += 1
        if now - self._failure_logged >= FAILURE_LOG_INTERVAL:
            self._failure_logged = now
            self.log.error("Job queue: still failing: {failure}", failure=current.describe())

    def _note_success(self, what: str) -> None:
        ended = self._failures.pop(what, None)
        if ended is None:
            return
        until = ended.until = self.clock.seconds()
        self.last_failure = ended
        self.log.info("Job queue: writes work again after {seconds:.1f}s ({failure})",
                      seconds=until - ended.since, failure=ended.describe())

    def _journal_batch(self, records: list[dict[str, Any]]
                       ) -> tuple[tuple[int, Any] | None, dict[int, str]]:
        """Append a batch to the journal with one fdatasync (thread).

        Returns the old generation (number, file) for checkpointing when the
        journal has grown past the checkpoint size (a new one is started), and
        each job's latest JSON text, serialised once for journal and file.
        """
        lines = []
        texts: dict[int, str] = {}
        for rec in records:
            if rec["t"] == "job":
                text = json.dumps(rec["data"])
                texts[rec["id"]] = text
                lines.append(f'{{"t":"job","id":{int(rec["id"])},"data":{text}}}\n')
            else:
                lines.append(json.dumps(rec, separators=(",", ":")) + "\n")
        self._append("".join(lines).encode())
        if self._journal_size < self._checkpoint_bytes:
            return None, texts
        old = (self._generation, self._journal)
        try:
            self._generation += 1
            self._open_journal()
        except OSError as err:
            # The batch is committed: a journal that cannot rotate now grows on
            # and rotation is tried again with the next batch.
            self._generation -= 1
            self._journal = old[1]
            self.log.warn("Job queue: starting a new journal failed ({error}); the "
                          "current one grows on", error=_error_text(err))
            return None, texts
        return old, texts

    def _append(self, data: bytes) -> None:
        """Append ``data`` to the journal completely and sync it, or leave no trace (thread).

        ``write`` may write less than asked (a nearly full disk does, without
        an error): the rest is written until done or an error is raised.  On
        any error the journal is cut back to its committed length, so the
        next batch never lands behind a torn record.
        """
        fd = self._journal.fileno()
        if self._rollback_due:
            self._rollback(fd)
        try:
            view = memoryview(data)
            while view:
                written = self._os_write(fd, view)
                if written <= 0:
                    raise OSError(errno.EIO, f"write of the journal wrote {written} bytes")
                view = view[written:]
            if self._durable:
                self._os_fdatasync(fd)
        except BaseException:
            self._rollback_due = True
            try:
                self._rollback(fd)
            except OSError as err:
                self.log.error("Job queue: cutting back the journal failed ({error}); "
                               "tried again before the next write", error=_error_text(err))
            raise
        self._journal_size += len(data)

    def _rollback(self, fd: int) -> None:
        """Cut the journal back to its committed length (thread)."""
        os.ftruncate(fd, self._journal_size)
        if self._durable:
            os.fsync(fd)
        self._rollback_due = False

    # The file loop: job files, archive renames and checkpoints, off the commit path

    def _kick_files(self) -> None:
        if not self._writing_files:
            self._writing_files = True
            self._files_done = defer.Deferred.fromCoroutine(self._file_loop())

    async def _file_loop(self) -> None:
        delay = RETRY_FIRST
        try:
            while self._unwritten or self._archives or self._checkpoints:
                unwritten, self._unwritten = self._unwritten, {}
                archives, self._archives = self._archives, []
                checkpoints, self._checkpoints = self._checkpoints, []
                try:
                    await self._run_blocking(self._write_files, unwritten, archives,
                                             checkpoints, self.serial)
                except Exception as err:
                    # The journal still holds every state; but until these files are
                    # written no journal may be checkpointed away: hand them back
                    # (newer states that came meanwhile win) and try again.
                    self._note_failure("files", err)
                    for job_id, text in unwritten.items():
                        self._unwritten.setdefault(job_id, text)
                    self._archives[:0] = archives
                    self._checkpoints[:0] = checkpoints
                    await task.deferLater(self.clock, delay)
                    delay = min(delay * 2, RETRY_MAX)
                    continue
                delay = RETRY_FIRST
                self._note_success("files")
                if self.on_written is not None and (unwritten or archives):
                    self.on_written(unwritten, archives)
                for job_id in archives:
                    for d in self._archive_waiters.pop(job_id, []):
                        d.callback(None)
        finally:
            self._writing_files = False

    def _write_files(self, unwritten: dict[int, str], archives: list[int],
                     checkpoints: list[tuple[int, Any]], serial: int) -> None:
        """Write the latest state of each job, archive, and checkpoint (thread).

        A checkpoint of a generation is safe here: every state journalled in
        it was handed over before the generation closed, so it is either in
        ``unwritten`` now or was written by an earlier pass (and is dirty).
        """
        for job_id, text in unwritten.items():
            path = os.path.join(self.queue_dir, job_file_name(job_id))
            fileutil.atomic_write(path, text, 0o640, durable=False)
            self._dirty.add(path)
        for job_id in archives:
            target = self._archive_file(job_id)
            self._dirty.update((target, os.path.dirname(target)))
        if not checkpoints:
            return
        fileutil.atomic_write(self.paths.queue_serial, f"{serial}\n", 0o640, self._durable)
        if self._durable:
            for path in self._dirty:
                if os.path.isdir(path):
                    fileutil.fsync_dir(path)
                else:
                    _fsync_path(path)
            fileutil.fsync_dir(self.queue_dir)
        self._dirty = set()
        for gen, journal in checkpoints:
            journal.close()
            fileutil.remove_file(os.path.join(self.queue_dir, f"{JOURNAL_PREFIX}{gen}"))
        if self._durable:
            fileutil.fsync_dir(self.queue_dir)
        self.checkpoints += len(checkpoints)

    def health(self) -> list[tuple[bool, str]]:
        """Problems for cluster verify: ``(is_error, message)`` (blocking: statvfs).

        A write failure going on is an error; one that ended is reported as a
        warning (the administrator should know the disk filled), and so is
        little free space left where the queue lives.
        """
        found: list[tuple[bool, str]] = []
        if self.failure is not None:
            found.append((True, f"the job queue cannot write: {self.failure.describe()}"))
        if self.last_failure is not None:
            found.append((False, "the job queue could not write for a while: "
                                 f"{self.last_failure.describe()}"))
        try:
            st = os.statvfs(self.queue_dir)
        except OSError as err:
            found.append((True, f"cannot check free space in {self.queue_dir}: "
                                f"{_error_text(err)}"))
            return found
        free = st.f_bavail * st.f_frsize
        total = st.f_blocks * st.f_frsize
        if free < LOW_SPACE_BYTES or (total and free / total < LOW_SPACE_FRACTION):
            found.append((free < LOW_SPACE_BYTES // 16,
                          f"only {free // (1024 * 1024)} MiB free of "
                          f"{total // (1024 * 1024)} MiB in {self.queue_dir} (job queue)"))
        return found

    def wait_idle(self) -> defer.Deferred[None]:
        """Fires when the job files have caught up (for shutdown and tests)."""
        if not self._writing_files:
            return defer.succeed(None)
        d: defer.Deferred[None] = defer.Deferred()
        self._files_done.addBoth(lambda _: d.callback(None))
        return d

    # Archived jobs (read on demand, never kept in memory)

    def read_archived(self, job_ids: list[int]) -> defer.Deferred[dict[int, dict[str, Any]]]:
        """The stored JSON of archived jobs that exist (unreadable ones are skipped)."""
        return self._run_blocking(self._read_archived_files, list(job_ids))

    def _read_archived_files(self, job_ids: list[int]) -> dict[int, dict[str, Any]]:
        found = {}
        for job_id in job_ids:
            path = os.path.join(self.paths.queue_archive_dir, archive_subdir(job_id),
                                job_file_name(job_id))
            try:
                found[job_id] = _parse_job(fileutil.read_file(path), job_id)
            except (OSError, ValueError, UnicodeDecodeError):
                continue
        return found

    # The drain flag

    def set_drain(self, drained: bool) -> defer.Deferred[None]:
        """Create or remove ``queue/drain`` durably."""
        return self._run_blocking(self._set_drain_file, drained)

    def _set_drain_file(self, drained: bool) -> None:
        if drained:
            fileutil.atomic_write(self.paths.queue_drain, "", 0o640, self._durable)
        else:
            fileutil.remove_file(self.paths.queue_drain)
            if self._durable:
                fileutil.fsync_dir(self.queue_dir)

    def is_drained(self) -> bool:
        """Whether ``queue/drain`` exists (a stat; cheap)."""
        return os.path.exists(self.paths.queue_drain)
