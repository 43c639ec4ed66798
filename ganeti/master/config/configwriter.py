"""The config writer: the only code that changes ``config.data``.

Changes are functions applied to a copy-on-write draft of the config
(:mod:`ganeti.core.configdraft`): only the objects a change takes out are
copied, and only those that really differ afterwards make the new version;
everything else is shared with the previous one.  The change is verified
incrementally (:mod:`ganeti.core.configverify`) and serialised by parts
(:mod:`ganeti.core.configtext`): the cost of a change follows the change,
not the config.  docs/design/config-writer.md describes the design.

Changes are serialised (one after another, in submission order) and
committed in groups: all the changes that queued up while one write was on
disk go to disk together in the next write (group commit).  A change is
acknowledged only after it is durable; readers only ever see committed
configs.  A change that raises, or that leaves the config inconsistent,
fails alone and changes nothing.

Durability depends on the size of the config:

- small configs (below ``journal_from`` objects) are written whole, atomically,
  in the thread pool, for every batch, as they always were;
- large configs append one record per batch to ``config.data.journal``
  (:mod:`ganeti.core.configjournal`, ``fdatasync``) and write the complete
  ``config.data`` checkpoint in the background, coalesced (it lags by at most
  one checkpoint); records the checkpoint covers are then dropped.  On a
  clean shutdown (:meth:`ConfigWriter.close`) and after start-up recovery the
  checkpoint is complete and the journal gone.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from twisted.application import service
from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import (
    config_instances,
    configdraft,
    configjournal,
    configtext,
    configverify,
    fileutil,
)
from ganeti.core.configdraft import CONTAINERS, Delta
from ganeti.core.errors import ConfigurationError, OpExecError
from ganeti.core.objects import ConfigData

R = TypeVar("R")
BlockingRunner = Callable[..., "defer.Deferred[Any]"]
Listener = Callable[[ConfigData], None]
#: Default size (nodes + instances + disks) from which changes go through the journal.
JOURNAL_FROM = 2000
#: Least time between two background checkpoints (seconds): under a stream of
#: changes the O(config) checkpoint takes a bounded share of the process.
CHECKPOINT_INTERVAL = 1.0


class ConfigUpdate:
    """What a commit hands to the distributor: the change as a record, the text on demand.

    ``record`` is None when there is no change to send (redistribution):
    then every node gets the whole text.
    """

    def __init__(self, state: configtext.TextState, base: int, record: str | None,
                 run_blocking: BlockingRunner, roles: bool = True) -> None:
        self.state = state
        self.base = base
        self.serial = state.serial
        self.record = record
        self.roles = roles
        self._run_blocking = run_blocking
        self._text: defer.Deferred[str] | None = None

    async def text(self) -> str:
        """The whole ``config.data`` text of this version (rendered in the thread pool)."""
        if self._text is None:
            self._text = self._run_blocking(self.state.render)
        text: str = await self._text
        return text


#: Called after each commit; returns None or an error message that fails the changes
#: of the batch (they stay committed).
Distributor = Callable[[ConfigData, ConfigUpdate, bool], Awaitable["str | None"]]


class _Exclusive:
    """Queued work that runs alone between commits (see update_serialised)."""

    def __init__(self, work: Callable[[], Awaitable[Any]]) -> None:
        self.work = work

    def __call__(self, cfg: ConfigData) -> Any:  # never applied as a change
        raise AssertionError("exclusive work is not a config change")


def _write_whole(path: str, state: configtext.TextState, durable: bool) -> None:
    """Write the complete config (blocking) and drop a journal it makes obsolete."""
    fileutil.atomic_write(path, state.render(), 0o640, durable)
    journal = configjournal.journal_path(path)
    if os.path.exists(journal):
        configjournal.rewrite(journal, [], durable)


def _write_checkpoint(path: str, state: configtext.TextState, durable: bool) -> None:
    """Write the complete config (blocking); the journal stays."""
    fileutil.atomic_write(path, state.render(), 0o640, durable)


def _size(cfg: ConfigData) -> int:
    return len(cfg.nodes) + len(cfg.instances) + len(cfg.disks)


class ConfigWriter:
    """Serialised, durable, group-committed changes to the cluster config."""

    log = Logger()

    def __init__(self, path: str, cfg: ConfigData, run_blocking: BlockingRunner,
                 clock: IReactorTime, durable: bool = True,
                 text: configtext.TextState | None = None, recovered: bool = False,
                 journal_from: int = JOURNAL_FROM,
                 checkpoint_interval: float = CHECKPOINT_INTERVAL) -> None:
        """``text``: the config's text by parts if the loader kept it; ``recovered``:
        the loader replayed a journal, so a complete checkpoint is written first."""
        self.path = path
        self._config = cfg
        if text is None or text.serial != cfg.serial_no:
            text = configtext.TextState.from_config(cfg)
        self._state = text
        self._run_blocking = run_blocking
        self._clock = clock
        self._durable = durable
        self._journal_from = journal_from
        self._queue: list[tuple[Callable[[ConfigData], Any], defer.Deferred[Any]]] = []
        self._flushing = False
        self._listeners: list[Listener] = []
        self._distributor: Distributor | None = None
        self._records: list[tuple[int, str]] = []  # journal records past the checkpoint
        self._checkpoint_serial = cfg.serial_no
        self._checkpointing = False
        self._checkpoint_wanted = False
        self._checkpoint_idle: list[defer.Deferred[None]] = []
        self._checkpoint_interval = checkpoint_interval
        self._last_checkpoint = float("-inf")
        self.writes = 0  # durable commits (whole files or journal records)
        self.checkpoints = 0  # background checkpoints written
        #: the committed config's unique values (MACs, ports, minors, ...), built at
        #: the first change that touches instances, disks or networks (as costly as
        #: their full check), then kept up to date by each change's check
        self._unique: config_instances.UniqueIndex | None = None
        self._unique_mark: int | None = None
        if recovered:
            self._checkpoint_serial = -1
            self._enqueue(_Exclusive(self._recover), defer.Deferred())

    @property
    def config(self) -> ConfigData:
        """The last committed config; treat it as read-only."""
        return self._config

    @property
    def text(self) -> str:
        """The text of the last committed config (O(config): tests and tools only)."""
        return self._state.render()

    @property
    def journal(self) -> str:
        """The journal beside ``path``."""
        return configjournal.journal_path(self.path)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(config)`` after every commit (e.g. to refresh ssconf)."""
        self._listeners.append(listener)

    def set_distributor(self, distributor: Distributor) -> None:
        """Run ``distributor(config, update, False)`` after every commit, before acknowledging.

        Commits stay serialised: the next batch is written only after the
        previous one was distributed, so nodes never get configs out of order.
        """
        self._distributor = distributor

    def update(self, change: Callable[[ConfigData], R]) -> defer.Deferred[R]:
        """Apply ``change`` to a draft of the config and commit it durably.

        The Deferred fires with ``change``'s return value once the new config
        is on disk, or fails with ``change``'s exception, a
        ``ConfigurationError`` if the result is inconsistent, or the write
        error; in every failure case the config is unchanged.
        """
        d: defer.Deferred[R] = defer.Deferred()
        self._enqueue(change, d)
        return d

    def _enqueue(self, item: Callable[[ConfigData], Any], d: defer.Deferred[Any]) -> None:
        self._queue.append((item, d))
        if not self._flushing:
            self._flushing = True
            defer.Deferred.fromCoroutine(self._flush_all())

    async def _flush_all(self) -> None:
        try:
            while self._queue:
                first = self._queue[0][0]
                if isinstance(first, _Exclusive):
                    d, self._queue = self._queue[0][1], self._queue[1:]
                    try:
                        d.callback(await first.work())
                    except Exception as err:
                        d.errback(err)
                    continue
                n = next((i for i, (c, _) in enumerate(self._queue)
                          if isinstance(c, _Exclusive)), len(self._queue))
                batch, self._queue = self._queue[:n], self._queue[n:]
                await self._commit(batch)
        finally:
            self._flushing = False

    def _apply(self, batch: list[tuple[Callable[[ConfigData], Any], defer.Deferred[Any]]]
               ) -> tuple[ConfigData, Delta, list[tuple[defer.Deferred[Any], Any]]]:
        """Run the batch's changes on drafts; the result, its delta and the accepted."""
        base = self._config
        candidate = base
        accepted: list[tuple[defer.Deferred[Any], Any]] = []
        keys: dict[str, set[str]] = {}
        cluster = False
        # where a failed commit takes the index back to (None: it was built during
        # this batch, from uncommitted changes: it is dropped)
        self._unique_mark = self._unique.mark() if self._unique is not None else None
        for change, d in batch:
            draft = configdraft.Draft(candidate)
            try:
                result = change(draft)
                new, delta = configdraft.finish(draft)
                if self._unique is None and configverify.touches_unique_values(delta):
                    self._unique = config_instances.UniqueIndex.of(candidate)
                problems = configverify.verify_delta(candidate, new, delta, self._unique)
                if problems:
                    raise ConfigurationError("the change would make the config "
                                             "inconsistent: " + "; ".join(problems))
            except Exception as err:  # the change fails alone
                d.errback(err)
                continue
            new.serial_no += 1
            new.mtime = self._clock.seconds()
            candidate = new
            accepted.append((d, result))
            cluster |= delta.cluster
            for cname in CONTAINERS:
                touched = [*delta.changed.get(cname, ()), *delta.deleted.get(cname, ())]
                if touched:
                    keys.setdefault(cname, set()).update(touched)
        batch_delta = Delta(cluster=cluster, top=True)
        for cname, touched_keys in keys.items():
            now: dict[str, Any] = getattr(candidate, cname)
            before: dict[str, Any] = getattr(base, cname)
            changed = {k: now[k] for k in sorted(touched_keys)
                       if k in now and now[k] is not before.get(k)}
            deleted = [k for k in sorted(touched_keys) if k not in now and k in before]
            if changed:
                batch_delta.changed[cname] = changed
            if deleted:
                batch_delta.deleted[cname] = deleted
        return candidate, batch_delta, accepted

    async def _commit(self, batch: list[tuple[Callable[[ConfigData], Any],
                                              defer.Deferred[Any]]]) -> None:
        base = self._config
        candidate, delta, accepted = self._apply(batch)
        if not accepted:
            return
        roles = (delta.touched("nodes")
                 or candidate.cluster.master_node != base.cluster.master_node)
        try:
            state = self._state.derive(candidate, delta)
            record = state.record(base.serial_no, delta, roles)
            journaled = _size(candidate) >= self._journal_from
            if journaled:
                await self._run_blocking(configjournal.append, self.journal, record,
                                         self._durable)
            else:
                await self._run_blocking(_write_whole, self.path, state, self._durable)
        except Exception as err:
            self.log.error("Writing {path} failed: {error}", path=self.path, error=err)
            if self._unique is not None:
                if self._unique_mark is None:
                    self._unique = None
                else:
                    self._unique.rollback(self._unique_mark)
            for d, _ in accepted:
                d.errback(err)
            return
        if self._unique is not None:
            self._unique.forget()
        self.writes += 1
        self._config = candidate
        self._state = state
        if journaled:
            self._records.append((state.serial, record))
            self._kick_checkpoint()
        else:
            self._records = []
            self._checkpoint_serial = state.serial
        for listener in self._listeners:
            try:
                listener(candidate)
            except Exception:
                self.log.failure("Config listener failed")
        # small configs go whole to the candidates too, as they always did
        update = ConfigUpdate(state, base.serial_no, record if journaled else None,
                              self._run_blocking, roles)
        problem = await self.distribute(candidate, update)
        for d, result in accepted:
            if problem is None:
                d.callback(result)
            else:
                d.errback(OpExecError(problem))

    # --- checkpoints --------------------------------------------------------------

    def _kick_checkpoint(self) -> None:
        if self._checkpointing:
            self._checkpoint_wanted = True
            return
        self._checkpointing = True
        defer.Deferred.fromCoroutine(self._checkpoint_loop())

    async def _checkpoint_loop(self) -> None:
        try:
            while True:
                wait = self._last_checkpoint + self._checkpoint_interval - self._clock.seconds()
                if wait > 0:
                    await task.deferLater(self._clock, wait, lambda: None)
                self._checkpoint_wanted = False
                state = self._state
                if state.serial == self._checkpoint_serial:
                    break
                try:
                    await self._run_blocking(_write_checkpoint, self.path, state,
                                             self._durable)
                except Exception as err:
                    self.log.error("Writing the checkpoint {path} failed (the journal keeps "
                                   "the changes): {error}", path=self.path, error=err)
                    break
                self._checkpoint_serial = state.serial
                self._last_checkpoint = self._clock.seconds()
                self.checkpoints += 1
                if any(serial <= state.serial for serial, _ in self._records):
                    self._enqueue(_Exclusive(self._trim), defer.Deferred())
                if not self._checkpoint_wanted:
                    break
        finally:
            self._checkpointing = False
            waiters, self._checkpoint_idle = self._checkpoint_idle, []
            for d in waiters:
                d.callback(None)

    async def _trim(self) -> None:
        """Drop the journal records the checkpoint holds (runs between commits)."""
        keep = [(s, r) for s, r in self._records if s > self._checkpoint_serial]
        if len(keep) == len(self._records):
            return
        try:
            await self._run_blocking(configjournal.rewrite, self.journal,
                                     [r for _, r in keep], self._durable)
        except Exception as err:
            self.log.error("Trimming {path} failed: {error}", path=self.journal, error=err)
            return
        self._records = keep

    async def _recover(self) -> None:
        """After a replayed journal: a complete checkpoint, then no journal."""
        await self._run_blocking(_write_whole, self.path, self._state, self._durable)
        self._checkpoint_serial = self._state.serial
        self._records = []

    def checkpoint_idle(self) -> defer.Deferred[None]:
        """Fires when no checkpoint is being written (tests)."""
        if not self._checkpointing:
            return defer.succeed(None)
        d: defer.Deferred[None] = defer.Deferred()
        self._checkpoint_idle.append(d)
        return d

    async def close(self) -> None:
        """Clean shutdown: finish queued work; leave a complete checkpoint and no journal."""
        async def final() -> None:
            await self.checkpoint_idle()
            if self._checkpoint_serial != self._state.serial or self._records:
                await self._recover()
        await self.update_serialised(final)

    # --- distribution -------------------------------------------------------------

    async def distribute(self, cfg: ConfigData, update: ConfigUpdate,
                         force: bool = False) -> str | None:
        """Run the distributor (if any) on a committed config; never raises.

        ``force`` sends everything to every node, not only what changed.
        """
        if self._distributor is None:
            return None
        try:
            return await self._distributor(cfg, update, force)
        except Exception as err:
            self.log.failure("Distributing the configuration failed")
            return f"distributing the configuration failed: {err}"

    async def redistribute(self) -> str | None:
        """Distribute the current config again (redist-conf); serialised with commits."""
        async def run() -> str | None:
            update = ConfigUpdate(self._state, self._state.serial, None, self._run_blocking)
            return await self.distribute(self._config, update, True)
        return await self.update_serialised(run)

    async def update_serialised(self, work: Callable[[], Awaitable[R]]) -> R:
        """Run ``work`` between two commits (no commit runs meanwhile)."""
        d: defer.Deferred[Any] = defer.Deferred()
        self._enqueue(_Exclusive(work), d)
        result: R = await d
        return result


class ConfigWriterService(service.Service):
    """Closes the writer on stop: a complete checkpoint, no journal (clean shutdown)."""

    def __init__(self, writer: ConfigWriter) -> None:
        self.writer = writer

    def stopService(self) -> Any:
        super().stopService()
        d = defer.Deferred.fromCoroutine(self.writer.close())
        d.addErrback(lambda f: ConfigWriter.log.failure("Closing the config writer", f))
        return d
