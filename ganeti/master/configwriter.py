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
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import config as configmod
from ganeti.core import fileutil
from ganeti.core.errors import ConfigurationError, OpExecError
from ganeti.core.objects import ConfigData

R = TypeVar("R")
BlockingRunner = Callable[..., "defer.Deferred[Any]"]
Listener = Callable[[ConfigData], None]
#: Called after each commit with the new config and its text; returns None or an error
#: message that fails the changes of the batch (they stay committed).
Distributor = Callable[[ConfigData, str, bool], Awaitable["str | None"]]  # (cfg, text, force)


class _Exclusive:
    """Queued work that runs alone between commits (see update_serialised)."""

    def __init__(self, work: Callable[[], Awaitable[Any]]) -> None:
        self.work = work

    def __call__(self, cfg: ConfigData) -> Any:  # never applied as a change
        raise AssertionError("exclusive work is not a config change")


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
        self._distributor: Distributor | None = None
        self.text: str | None = None  # the text of the last committed config, once known
        self.writes = 0  # number of files written, for tests and statistics

    @property
    def config(self) -> ConfigData:
        """The last committed config; treat it as read-only."""
        return self._config

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(config)`` after every commit (e.g. to refresh ssconf)."""
        self._listeners.append(listener)

    def set_distributor(self, distributor: Distributor) -> None:
        """Run ``distributor(config, text, False)`` after every commit, before acknowledging.

        Commits stay serialised: the next batch is written only after the
        previous one was distributed, so nodes never get configs out of order.
        """
        self._distributor = distributor

    def update(self, change: Callable[[ConfigData], R]) -> defer.Deferred[R]:
        """Apply ``change`` to a copy of the config and commit it durably.

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
        self.text = text
        for listener in self._listeners:
            try:
                listener(candidate)
            except Exception:
                self.log.failure("Config listener failed")
        problem = await self.distribute(candidate, text)
        for d, result in accepted:
            if problem is None:
                d.callback(result)
            else:
                d.errback(OpExecError(problem))

    async def distribute(self, cfg: ConfigData, text: str, force: bool = False) -> str | None:
        """Run the distributor (if any) on a committed config; never raises.

        ``force`` sends everything to every node, not only what changed.
        """
        if self._distributor is None:
            return None
        try:
            return await self._distributor(cfg, text, force)
        except Exception as err:
            self.log.failure("Distributing the configuration failed")
            return f"distributing the configuration failed: {err}"

    async def redistribute(self) -> str | None:
        """Distribute the current config again (redist-conf); serialised with commits."""
        async def run() -> str | None:
            text = self.text if self.text is not None else configmod.dump(self._config)
            return await self.distribute(self._config, text, True)
        return await self.update_serialised(run)

    async def update_serialised(self, work: Callable[[], Awaitable[R]]) -> R:
        """Run ``work`` between two commits (no commit runs meanwhile)."""
        d: defer.Deferred[Any] = defer.Deferred()
        self._enqueue(_Exclusive(work), d)
        result: R = await d
        return result
