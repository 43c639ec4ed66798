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
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.logger import Logger

from ganeti.core import fileutil
from ganeti.core.paths import Paths

BlockingRunner = Callable[..., "defer.Deferred[Any]"]
JOBS_PER_ARCHIVE_DIR = 10000
JOURNAL_PREFIX = "journal."
CORRUPT_DIR = "corrupt"
DEFAULT_CHECKPOINT_BYTES = 8 * 1024 * 1024


def job_file_name(job_id: int) -> str:
    """``job-<id>``."""
    return f"job-{job_id}"


def archive_subdir(job_id: int) -> str:
    """The archive directory of a job: ``<id // 10000>``."""
    return str(job_id // JOBS_PER_ARCHIVE_DIR)


class QueueLockedError(Exception):
    """Another process owns the job queue."""


@dataclass
class Recovered:
    """What :meth:`JobStore.recover` found."""

    serial: int
    jobs: dict[int, dict[str, Any]]
    archived_max: int = 0
    problems: list[str] = field(default_factory=list)


def _parse_job(text: bytes, job_id: int) -> dict[str, Any]:
    return _check_job(json.loads(text.decode("utf-8")), job_id)


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

    def __init__(self, paths: Paths, run_blocking: BlockingRunner, durable: bool = True,
                 checkpoint_bytes: int = DEFAULT_CHECKPOINT_BYTES) -> None:
        self.paths = paths
        self.queue_dir = paths.queue_dir
        self._run_blocking = run_blocking
        self._durable = durable
        self._checkpoint_bytes = checkpoint_bytes
        self._generation = 0
        self._journal: Any = None  # the open journal file (binary, append)
        self._journal_size = 0
        # commit loop (reactor side)
        self._pending: list[tuple[dict[str, Any], defer.Deferred[None] | None]] = []
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
            if not name.startswith("job-"):
                continue
            try:
                job_id = int(name[4:])
            except ValueError:
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
                             and n[len(JOURNAL_PREFIX):].isdigit())
        archived: set[int] = set()
        touched: set[int] = set()
        for gen in generations:
            serial = max(serial, self._replay(gen, jobs, touched, archived, problems))
        for job_id in archived:
            jobs.pop(job_id, None)
        serial = max([serial, archived_max, *jobs])
        self._consolidate(jobs, touched - archived, archived, serial, generations)
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
            if not sub.isdigit() or not os.path.isdir(subdir):
                continue
            for name in os.listdir(subdir):
                if name.startswith("job-") and name[4:].isdigit():
                    best = max(best, int(name[4:]))
        return best

    def _corrupt_max(self) -> int:
        """The highest job id among files moved aside (their ids stay used)."""
        corrupt = os.path.join(self.queue_dir, CORRUPT_DIR)
        if not os.path.isdir(corrupt):
            return 0
        ids = [int(n[4:].split(".")[0]) for n in os.listdir(corrupt)
               if n.startswith("job-") and n[4:].split(".")[0].isdigit()]
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
                rec = json.loads(line.decode("utf-8"))
                kind = rec["t"]
                if kind == "job":
                    job_id = int(rec["id"])
                    jobs[job_id] = _check_job(rec["data"], job_id)
                    touched.add(job_id)
                    archived.discard(job_id)
                elif kind == "serial":
                    serial = max(serial, int(rec["serial"]))
                elif kind == "archive":
                    archived.add(int(rec["id"]))
                else:
                    raise ValueError(f"unknown record type {kind!r}")
            except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
                if number == len(lines):  # a torn last line: the batch never committed
                    continue
                problems.append(f"{path} line {number} is unreadable ({err}); skipped")
        return serial

    def _consolidate(self, jobs: dict[int, dict[str, Any]], touched: set[int],
                     archived: set[int], serial: int, generations: list[int]) -> None:
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
            os.unlink(os.path.join(self.queue_dir, f"{JOURNAL_PREFIX}{gen}"))

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
        self._pending.append(({"t": "serial", "serial": self.serial}, None))
        return list(range(first, first + count))

    def save(self, job_id: int, data: dict[str, Any]) -> defer.Deferred[None]:
        """Persist a job's state; fires once it is durable (journalled).

        ``data`` is serialised when the batch is written, so the caller must not
        change it in between (pass a fresh ``to_dict()``).  The job file follows
        shortly after, written by the file loop.
        """
        return self._submit({"t": "job", "id": job_id, "data": data})

    def archive(self, job_id: int) -> defer.Deferred[None]:
        """Move a finished job into the archive; fires once it is durable and moved."""
        return self._submit({"t": "archive", "id": job_id})

    def _submit(self, record: dict[str, Any]) -> defer.Deferred[None]:
        d: defer.Deferred[None] = defer.Deferred()
        self._pending.append((record, d))
        if not self._committing:
            self._committing = True
            defer.Deferred.fromCoroutine(self._commit_loop())
        return d

    async def _commit_loop(self) -> None:
        """Journal everything pending, one fdatasync per batch, until nothing is left."""
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                records = [r for r, _ in batch]
                try:
                    rotated, texts = await self._run_blocking(self._journal_batch, records)
                except Exception as err:
                    self.log.failure("Writing the job queue journal failed")
                    for _, d in batch:
                        if d is not None:
                            d.errback(err)
                    continue
                self.commits += 1
                for rec in records:  # hand the files over to the file loop
                    if rec["t"] == "job":
                        self._unwritten[rec["id"]] = texts[rec["id"]]
                    elif rec["t"] == "archive":
                        self._archives.append(rec["id"])
                if rotated is not None:
                    self._checkpoints.append(rotated)
                for rec, d in batch:
                    if d is None:
                        continue
                    if rec["t"] == "archive":  # answered once the file has moved
                        self._archive_waiters.setdefault(rec["id"], []).append(d)
                    else:
                        d.callback(None)
                self._kick_files()
        finally:
            self._committing = False

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
        data = "".join(lines).encode()
        self._journal.write(data)
        if self._durable:
            os.fdatasync(self._journal.fileno())
        self._journal_size += len(data)
        if self._journal_size < self._checkpoint_bytes:
            return None, texts
        old = (self._generation, self._journal)
        self._generation += 1
        self._open_journal()
        return old, texts

    # The file loop: job files, archive renames and checkpoints, off the commit path

    def _kick_files(self) -> None:
        if not self._writing_files:
            self._writing_files = True
            self._files_done = defer.Deferred.fromCoroutine(self._file_loop())

    async def _file_loop(self) -> None:
        try:
            while self._unwritten or self._archives or self._checkpoints:
                unwritten, self._unwritten = self._unwritten, {}
                archives, self._archives = self._archives, []
                checkpoints, self._checkpoints = self._checkpoints, []
                try:
                    await self._run_blocking(self._write_files, unwritten, archives,
                                             checkpoints, self.serial)
                except Exception:
                    # The journal still holds every state: recovery rewrites the files.
                    self.log.failure("Writing job files failed")
                else:
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
            os.unlink(os.path.join(self.queue_dir, f"{JOURNAL_PREFIX}{gen}"))
        if self._durable:
            fileutil.fsync_dir(self.queue_dir)
        self.checkpoints += len(checkpoints)

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
