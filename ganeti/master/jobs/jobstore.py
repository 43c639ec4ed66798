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
Recovery at startup (:mod:`ganeti.master.jobs.jobrecovery`) replays whatever
journals exist over the job files and consolidates them; then a fresh
journal starts.

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
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import fileutil
from ganeti.core.paths import Paths
from ganeti.master.jobs.jobrecovery import (
    JOURNAL_PREFIX,
    JobStoreError,
    QueueRecovery,
    Recovered,
    archive_file,
    archive_subdir,
    error_text,
    fsync_path,
    job_file_name,
    job_id_of,
    parse_job,
)

__all__ = ["JobStore", "JobStoreError", "QueueLockedError", "Recovered", "StoreFailure",
           "archive_subdir", "job_file_name"]

BlockingRunner = Callable[..., "defer.Deferred[Any]"]
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


class QueueLockedError(Exception):
    """Another process owns the job queue."""


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
        other corrupt file (:class:`~ganeti.master.jobs.jobrecovery.QueueRecovery`).
        """
        fileutil.ensure_dirs([(self.queue_dir, 0o700), (self.paths.queue_archive_dir, 0o700)])
        self._lock_queue()
        recovered, self._generation = QueueRecovery(self.paths, self._durable).run(validate)
        self.serial = recovered.serial
        self._open_journal()
        return recovered

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
                                            f"{error_text(err)}")
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
        message = f"{action} failed: {error_text(err)}"
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
                # compact, as Ganeti 3.0's luxid writes job files
                text = json.dumps(rec["data"], separators=(",", ":"))
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
                          "current one grows on", error=error_text(err))
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
                               "tried again before the next write", error=error_text(err))
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
            target = archive_file(self.paths, job_id)
            self._dirty.update((target, os.path.dirname(target)))
        if not checkpoints:
            return
        fileutil.atomic_write(self.paths.queue_serial, f"{serial}\n", 0o640, self._durable)
        if self._durable:
            for path in self._dirty:
                if os.path.isdir(path):
                    fileutil.fsync_dir(path)
                else:
                    fsync_path(path)
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
                                f"{error_text(err)}"))
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

    def archived_ids(self) -> defer.Deferred[list[int]]:
        """The ids of all archived jobs (``archive/<n>/job-<id>``), sorted."""
        return self._run_blocking(self._list_archive)

    def _list_archive(self) -> list[int]:
        found: list[int] = []
        archive = self.paths.queue_archive_dir
        try:
            subdirs = os.listdir(archive)
        except OSError:
            return []
        for sub in subdirs:
            if not sub.isascii() or not sub.isdigit():
                continue
            try:
                names = os.listdir(os.path.join(archive, sub))
            except OSError:
                continue
            found.extend(job_id for job_id in map(job_id_of, names) if job_id is not None)
        return sorted(found)

    def _read_archived_files(self, job_ids: list[int]) -> dict[int, dict[str, Any]]:
        found = {}
        for job_id in job_ids:
            path = os.path.join(self.paths.queue_archive_dir, archive_subdir(job_id),
                                job_file_name(job_id))
            try:
                found[job_id] = parse_job(fileutil.read_file(path), job_id)
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
