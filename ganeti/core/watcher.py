"""What ganeti-watcher and masterd's watcher service share: files and decisions.

Pure code (files are read and written by the callers' blocking helpers here,
never on a reactor):

- the pause file ``DATA_DIR/watcher.pause`` (Ganeti's format: the end of the
  pause as whole seconds since the epoch and a newline; a file that cannot be
  parsed, or whose pause ended more than an hour ago, is removed when read);
- the per-group state file ``DATA_DIR/watcher.<group uuid>.data`` (Ganeti's
  JSON: ``{"instance": {...}, "node": {name: {"bootid": ...}}}``, plus the key
  :data:`KEY_VERIFY_DISKS`, an addition that Ganeti's watcher keeps as it is);
- the opcodes the watcher submits, with the reason trail ``gnt:watcher``;
- the rule that keeps the cron command and the service from submitting the
  same verify-disks twice (:func:`verify_disks_due`).
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
from typing import IO, Any

from ganeti.core import constants, fileutil
from ganeti.core.errors import ECODE_INVAL, OpPrereqError

#: Jobs older than this are archived (``--job-age``; Ganeti's 6 hours).
DEFAULT_JOB_AGE = 6 * 3600
#: A pause file whose pause ended this long ago is removed when read (Ganeti's value).
PAUSE_REMOVE_AFTER = 3600
#: Restart attempts of an instance before the watcher gives up (Ganeti's MAXTRIES).
MAXTRIES = 5
#: Instance records older than this are forgotten (Ganeti's RETRY_EXPIRATION).
RETRY_EXPIRATION = 8 * 3600
#: Minimum seconds between two verify-disks of one group submitted by the cron
#: command: less than the 5-minute cron period, so that the cron command alone
#: behaves as Ganeti's; a recent one submitted by masterd's service is not repeated.
CRON_VERIFY_SPACING = 240
#: Addition to Ganeti's state file: ``{"when": seconds, "job": id, "by": "cron"|"masterd"}``.
KEY_VERIFY_DISKS = "verify_disks"
KEY_BOOT_ID = "bootid"
KEY_RESTART_COUNT = "restart_count"
KEY_RESTART_WHEN = "restart_when"
#: The watcher's reason source (Ganeti's OPCODE_REASON_SRC_WATCHER).
REASON_SOURCE = constants.OPCODE_REASON_SRC_WATCHER
#: The opcode the watcher submits once per node group.
VERIFY_DISKS_OP = "OP_GROUP_VERIFY_DISKS"


# --- the pause file --------------------------------------------------------------

def parse_pause_until(until: Any) -> float | None:
    """Check a ``SetWatcherPause`` argument: None (no pause) or a finite number."""
    if until is None:
        return None
    if isinstance(until, bool) or not isinstance(until, (int, float)) or not math.isfinite(until):
        raise OpPrereqError(f"The watcher pause must be a number of seconds since the epoch "
                            f"or null, not {str(until)[:40]!r}", ECODE_INVAL)
    return until


def pause_file_text(until: float) -> str:
    """The pause file's content for ``until`` (whole seconds, as Ganeti's "%d\\n")."""
    return f"{int(until)}\n"


#: The pause file's mode (Ganeti writes it world-readable).
PAUSE_FILE_MODE = 0o644


def write_pause_file(path: str, until: float | None, durable: bool = True) -> None:
    """Write (``until`` given) or remove (None) the pause file atomically; blocking."""
    if until is None:
        fileutil.remove_file(path)
    else:
        fileutil.atomic_write(path, pause_file_text(until), mode=PAUSE_FILE_MODE,
                              durable=durable)


def read_pause_file(path: str, now: float,
                    remove_after: float = PAUSE_REMOVE_AFTER) -> int | None:
    """Until when the watcher is paused, or None; blocking (a small local file).

    As Ganeti's ``ReadWatcherPauseFile``: an unparsable file is removed, a pause
    that ended more than ``remove_after`` seconds ago is removed, one that ended
    less long ago is kept but means "not paused".
    """
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read(64)
    except FileNotFoundError:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        _remove(path)
        return None
    if now > value + remove_after:
        _remove(path)
        return None
    return value if now <= value else None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# --- the per-group state file ------------------------------------------------------

class StateLocked(Exception):
    """Another watcher (the cron command or masterd's service) holds the state file."""


def open_state_file(path: str) -> IO[str]:
    """Open (creating) and lock a state file exclusively without waiting; blocking.

    :class:`StateLocked` if another process holds it.  The lock is Ganeti's
    (``flock`` on the file itself), so Ganeti's own watcher and ours exclude
    each other too.  Closing the file releases it.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise StateLocked(f"Can't acquire lock on state file {path}") from None
        raise
    return os.fdopen(fd, "r+", encoding="utf-8")


class WatcherState:
    """The content of a per-group state file (Ganeti's layout, unknown keys kept)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = data if data is not None else {}
        if not isinstance(self.data.get("instance"), dict):
            self.data["instance"] = {}
        if not isinstance(self.data.get("node"), dict):
            self.data["node"] = {}
        self._original = self.dump()

    @classmethod
    def load(cls, text: str) -> WatcherState:
        """Parse a state file; anything unreadable counts as empty (as Ganeti)."""
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError:
            data = {}
        return cls(data if isinstance(data, dict) else {})

    @classmethod
    def read_from(cls, f: IO[str]) -> WatcherState:
        """Read a state file opened by :func:`open_state_file`."""
        f.seek(0)
        return cls.load(f.read())

    def dump(self) -> str:
        """The file's text (sorted keys, as Ganeti's serializer)."""
        return json.dumps(self.data, sort_keys=True)

    @property
    def changed(self) -> bool:
        """Whether anything differs from what was loaded."""
        return self.dump() != self._original

    def save(self, f: IO[str], path: str) -> None:
        """Write back in place (the lock is kept) or, if unchanged, touch the file."""
        if not self.changed:
            os.utime(path, None)
            return
        f.seek(0)
        f.truncate()
        f.write(self.dump())
        f.flush()
        os.fsync(f.fileno())
        self._original = self.dump()

    # nodes

    def boot_id(self, node: str) -> str | None:
        """The last boot id seen of ``node``."""
        entry = self.data["node"].get(node)
        return entry.get(KEY_BOOT_ID) if isinstance(entry, dict) else None

    def set_boot_id(self, node: str, boot_id: str) -> None:
        """Remember ``node``'s boot id."""
        entry = self.data["node"].setdefault(node, {})
        if not isinstance(entry, dict):
            entry = self.data["node"][node] = {}
        entry[KEY_BOOT_ID] = boot_id

    def rebooted_nodes(self, boot_ids: dict[str, str | None]) -> list[str]:
        """Nodes whose boot id changed (or was never seen); records the new ids.

        A node that gives no boot id (offline, not answering) is skipped, as
        Ganeti's watcher does.
        """
        rebooted = []
        for node, boot_id in sorted(boot_ids.items()):
            if boot_id and self.boot_id(node) != boot_id:
                rebooted.append(node)
                self.set_boot_id(node, boot_id)
        return rebooted

    # instances (restart bookkeeping; used once instances exist)

    def maintain_instances(self, existing: list[str], now: float) -> None:
        """Forget instances that no longer exist and records older than 8 hours."""
        idata = self.data["instance"]
        for name in list(idata):
            rec = idata[name]
            when = rec.get(KEY_RESTART_WHEN, 0) if isinstance(rec, dict) else 0
            if name not in existing or not isinstance(when, (int, float)) \
                    or when < now - RETRY_EXPIRATION:
                del idata[name]

    def restart_attempts(self, name: str) -> int:
        """How often the watcher tried to restart an instance (Ganeti's counter)."""
        rec = self.data["instance"].get(name)
        count = rec.get(KEY_RESTART_COUNT, 0) if isinstance(rec, dict) else 0
        return count if isinstance(count, int) and not isinstance(count, bool) else 0

    def record_restart_attempt(self, name: str, now: float) -> None:
        rec = self.data["instance"].setdefault(name, {})
        rec[KEY_RESTART_COUNT] = self.restart_attempts(name) + 1
        rec[KEY_RESTART_WHEN] = now

    def forget_instance(self, name: str) -> None:
        self.data["instance"].pop(name, None)

    # the verify-disks record (an addition)

    def last_verify_disks(self) -> tuple[float, int | None]:
        """When the last watcher verify-disks of the group was submitted, and its job."""
        rec = self.data.get(KEY_VERIFY_DISKS)
        if not isinstance(rec, dict):
            return 0.0, None
        when = rec.get("when")
        job = rec.get("job")
        return (float(when) if isinstance(when, (int, float)) else 0.0,
                job if isinstance(job, int) and not isinstance(job, bool) else None)

    def record_verify_disks(self, now: float, job_id: int | None, by: str) -> None:
        """Remember a verify-disks submission."""
        self.data[KEY_VERIFY_DISKS] = {"when": now, "job": job_id, "by": by}


def verify_disks_due(state: WatcherState, now: float, spacing: float) -> bool:
    """Whether a verify-disks may be submitted: the last is ``spacing`` seconds old.

    Both the cron command and masterd's service submit under the state file's
    lock and record what they submitted, so the two never submit one twice.
    A clock that went backwards makes it due.
    """
    last, _ = state.last_verify_disks()
    return not (last <= now < last + spacing)


#: Restart attempts before the watcher gives up on an instance (Ganeti's MAXTRIES).
MAX_RESTARTS = 5
#: Instance states the watcher restarts (admin up, not running) and those it cannot help.
BAD_STATES = frozenset({"ERROR_down"})
HELPLESS_STATES = frozenset({"ERROR_nodedown", "ERROR_nodeoffline"})


def restart_plan(state: WatcherState, statuses: dict[str, str], now: float,
                 log: Any, prune: bool = True) -> list[str]:
    """Ganeti's _CheckInstances bookkeeping: the instances to restart now.

    ``statuses`` maps instance names to their ``status`` query value.  An
    instance in :data:`BAD_STATES` is restarted and the attempt counted; after
    :data:`MAX_RESTARTS` attempts the watcher gives up (one error, then a warning
    per round) until the instance recovers; one that recovered is forgotten
    ("Restart of instance ... succeeded").  ``prune`` (a whole group's statuses)
    also forgets the records of instances not in ``statuses``; a check of some of
    the group's instances (masterd's instance events) passes False.
    """
    if prune:
        state.maintain_instances(list(statuses), now)
    restart = []
    for name, status in sorted(statuses.items()):
        attempts = state.restart_attempts(name)
        if status in BAD_STATES:
            if attempts > MAX_RESTARTS:
                log.warning("Not restarting instance '%s', retries exhausted", name)
                continue
            if attempts == MAX_RESTARTS:
                state.record_restart_attempt(name, now)
                log.error("Could not restart instance '%s' after %s attempts, giving up",
                          name, MAX_RESTARTS)
                continue
            log.info("Restarting instance '%s' (attempt #%s)", name, attempts + 1)
            state.record_restart_attempt(name, now)
            restart.append(name)
        elif attempts:
            state.forget_instance(name)
            if status not in HELPLESS_STATES:
                log.info("Restart of instance '%s' succeeded", name)
    return restart


def restart_opcode(name: str, now: float) -> dict[str, Any]:
    """The startup a watcher submits for an instance that should run."""
    return {"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": name, "force": False,
            "reason": reason(f"Restarting instance {name}", now)}


# --- opcodes -------------------------------------------------------------------------

def reason(message: str, now: float) -> list[list[Any]]:
    """A reason trail with one watcher entry (timestamp in nanoseconds, as Ganeti)."""
    return [[REASON_SOURCE, message, int(now * 1e9)]]


def verify_disks_opcode(group_uuid: str, now: float) -> dict[str, Any]:
    """``OP_GROUP_VERIFY_DISKS`` of one group at low priority, as Ganeti's watcher."""
    return {"OP_ID": VERIFY_DISKS_OP, "group_name": group_uuid,
            "priority": constants.OP_PRIO_LOW,
            "reason": reason(f"Verifying disks of group {group_uuid}", now)}


def offline_disk_instances(result: Any) -> list[str]:
    """The instances whose disks are offline, from a verify-disks result.

    Ganeti's result is ``[node errors, instances with offline disks, missing
    volumes]``; anything else gives an empty list.
    """
    if isinstance(result, list) and len(result) == 3 and isinstance(result[1], list):
        return [x for x in result[1] if isinstance(x, str)]
    return []
