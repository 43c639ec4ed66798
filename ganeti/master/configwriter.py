"""The config writer: the only code that changes ``config.data``.

Changes are functions applied to a copy of the config.  They are serialised
(one after another, in submission order) and committed in groups: all the
changes that queued up while one write was on disk go to disk together in
the next write (group commit), so durability does not cap the change rate at
one fsync per change.  A change is acknowledged only after the file that
contains it is on disk; readers only ever see committed configs.  A change
that raises, or that leaves the config inconsistent, fails alone and changes
nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import config as configmod
from ganeti.core import fileutil
from ganeti.core.errors import ConfigurationError
from ganeti.core.objects import ConfigData

R = TypeVar("R")
BlockingRunner = Callable[..., "defer.Deferred[Any]"]
Listener = Callable[[ConfigData], None]


class ConfigWriter:
    """Serialised, durable, group-committed changes to the cluster config."""

    log = Logger()

    def __init__(self, path: str, cfg: ConfigData, run_blocking: BlockingRunner,
                 clock: IReactorTime, durable: bool = True) -> None:
        self.path = path
        self._config = cfg
        self._run_blocking = run_blocking
        self._clock = clock
        self._durable = durable
        self._queue: list[tuple[Callable[[ConfigData], Any], defer.Deferred[Any]]] = []
        self._flushing = False
        self._listeners: list[Listener] = []
        self.writes = 0  # number of files written, for tests and statistics

    @property
    def config(self) -> ConfigData:
        """The last committed config; treat it as read-only."""
        return self._config

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(config)`` after every commit (e.g. to refresh ssconf)."""
        self._listeners.append(listener)

    def update(self, change: Callable[[ConfigData], R]) -> defer.Deferred[R]:
        """Apply ``change`` to a copy of the config and commit it durably.

        The Deferred fires with ``change``'s return value once the new config
        is on disk, or fails with ``change``'s exception, a
        ``ConfigurationError`` if the result is inconsistent, or the write
        error; in every failure case the config is unchanged.
        """
        d: defer.Deferred[R] = defer.Deferred()
        self._queue.append((change, d))
        if not self._flushing:
            self._flushing = True
            defer.Deferred.fromCoroutine(self._flush_all())
        return d

    async def _flush_all(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                await self._commit(batch)
        finally:
            self._flushing = False

    async def _commit(self, batch: list[tuple[Callable[[ConfigData], Any],
                                              defer.Deferred[Any]]]) -> None:
        candidate = self._config
        accepted: list[tuple[defer.Deferred[Any], Any]] = []
        for change, d in batch:
            trial = copy.deepcopy(candidate)
            try:
                result = change(trial)
                problems = configmod.verify(trial)
                if problems:
                    raise ConfigurationError("the change would make the config "
                                             "inconsistent: " + "; ".join(problems))
            except Exception as err:  # the change fails alone
                d.errback(err)
                continue
            now = self._clock.seconds()
            trial.serial_no += 1
            trial.mtime = now
            candidate = trial
            accepted.append((d, result))
        if not accepted:
            return
        try:
            text = configmod.dump(candidate)
            await self._run_blocking(fileutil.atomic_write, self.path, text, 0o640,
                                     self._durable)
        except Exception as err:
            self.log.error("Writing {path} failed: {error}", path=self.path, error=err)
            for d, _ in accepted:
                d.errback(err)
            return
        self.writes += 1
        self._config = candidate
        for listener in self._listeners:
            try:
                listener(candidate)
            except Exception:
                self.log.failure("Config listener failed")
        for d, result in accepted:
            d.callback(result)
