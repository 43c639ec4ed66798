"""config_update: a candidate's copy of ``config.data``, kept current by change records.

The master sends each committed batch of changes as a record (the one it
journals, see :mod:`ganeti.core.configtext`): the serial it applies on and
the fragments of the changed objects.  The node keeps its copy of the
config as parts in memory (:class:`~ganeti.core.configtext.TextState`),
applies the record, appends it to its own ``config.data.journal``
(``fdatasync``) and answers true; the complete ``config.data`` (which confd
reads) is rewritten in the background, coalesced, and the journal records it
covers dropped.  A node whose copy is not at the record's base serial (it
was down, is new, or has no copy) answers false and the master uploads the
whole file, which resets this store.

The parts are loaded lazily from the node's ``config.data`` and journal.
Before each record the store checks (one ``stat``) that ``config.data`` is
still the file it last saw; anything else (an upload, a demotion that
removed it) makes it load again.
"""

from __future__ import annotations

import os
from typing import Any

from twisted.internet import defer, task
from twisted.logger import Logger

from ganeti.core import configdraft, configjournal, configtext, fileutil
from ganeti.core.errors import ConfigurationError
from ganeti.noded.backend import confd_role
from ganeti.noded.backend.context import NodeContext, RPCFail

log = Logger()
#: Least time between two rewrites of config.data (the journal keeps the changes meanwhile).
CHECKPOINT_INTERVAL = 1.0
StatKey = tuple[int, int, int]


def _stat(path: str) -> StatKey | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def state_from_text(text: str) -> configtext.TextState:
    """The parts of config text (as written by the master), without building objects."""
    top, cluster, parts = configtext.split(text)
    if cluster is None or not isinstance(top.get("serial_no"), int):
        raise ConfigurationError("config.data has no cluster or serial_no")
    skeleton = {k: ("\x00frag:" + k + "\x00" if k == "cluster" or k in parts else v)
                for k, v in top.items()}
    for cname in configdraft.CONTAINERS:
        parts.setdefault(cname, configtext.ContainerText({}))
    return configtext.TextState(top["serial_no"], configtext.dumps(skeleton), cluster, parts)


def _load(config_file: str) -> tuple[configtext.TextState | None, list[str], StatKey | None]:
    """Blocking: the node's parts (config.data + journal), the journal records, the stat."""
    key = _stat(config_file)
    if key is None:
        return None, [], None
    with open(config_file, "rb") as f:
        text = f.read().decode("utf-8")
    try:
        state = state_from_text(text)
    except (ValueError, ConfigurationError) as err:
        log.warn("Cannot read {path} as parts: {error}", path=config_file, error=err)
        return None, [], key
    payloads, _ = configjournal.read(configjournal.journal_path(config_file))
    kept = []
    for payload in payloads:
        rec = configtext.parse_record(payload)
        if rec["serial"] <= state.serial:
            continue
        if rec["base"] != state.serial:
            break  # a gap: the master will send everything
        state = state.apply_record(rec)
        kept.append(payload)
    return state, kept, key


def _checkpoint(config_file: str, state: configtext.TextState) -> StatKey | None:
    fileutil.atomic_write(config_file, state.render(), 0o640)
    return _stat(config_file)


class ConfigStore:
    """One node's copy of the config as parts; applies records one at a time."""

    def __init__(self, config_file: str) -> None:
        self.config_file = config_file
        self.journal = configjournal.journal_path(config_file)
        self.state: configtext.TextState | None = None
        self.seen: StatKey | None = None  # config.data as last loaded or written
        self.records: list[tuple[int, str]] = []  # journal records past config.data
        self.lock = defer.DeferredLock()
        self.checkpointing = False
        self.roles_changed = False
        self.last_checkpoint = float("-inf")
        self.applied = 0  # records applied (tests, statistics)
        self.checkpoints = 0

    def reset(self) -> None:
        """Forget the parts (config.data was replaced from outside)."""
        self.state = None
        self.seen = None
        self.records = []

    async def apply(self, ctx: NodeContext, text: str) -> bool:
        """Apply one record; False if this copy is not at its base serial."""
        try:
            rec = configtext.parse_record(text)
        except ConfigurationError as err:
            raise RPCFail(f"config_update: {err}") from None
        await self.lock.acquire()
        try:
            if self.state is None or _stat(self.config_file) != self.seen:
                self.state, payloads, self.seen = await ctx.run(_load, self.config_file)
                self.records = [(configtext.parse_record(p)["serial"], p) for p in payloads]
            if self.state is None:
                return False
            if self.state.serial >= rec["serial"]:
                return self.state.serial == rec["serial"]
            if self.state.serial != rec["base"]:
                return False
            new = self.state.apply_record(rec)
            await ctx.run(configjournal.append, self.journal, text)
            self.state = new
            self.records.append((new.serial, text))
            self.applied += 1
            self.roles_changed |= bool(rec.get("roles"))
        finally:
            self.lock.release()
        if not self.checkpointing:
            self.checkpointing = True
            defer.Deferred.fromCoroutine(self._checkpoints(ctx))
        return True

    async def _checkpoints(self, ctx: NodeContext) -> None:
        try:
            while self.state is not None and self.records:
                wait = self.last_checkpoint + CHECKPOINT_INTERVAL - ctx.clock.seconds()
                if wait > 0:
                    await task.deferLater(ctx.clock, wait, lambda: None)
                    continue
                state = self.state
                try:
                    key = await ctx.run(_checkpoint, self.config_file, state)
                except Exception as err:
                    log.error("Writing {path} failed (the journal keeps the changes): "
                              "{error}", path=self.config_file, error=err)
                    return
                await self.lock.acquire()
                try:
                    if self.state is not state and (self.state is None
                                                    or self.state.serial < state.serial):
                        return  # reset meanwhile
                    self.seen = key
                    self.last_checkpoint = ctx.clock.seconds()
                    self.checkpoints += 1
                    keep = [(s, p) for s, p in self.records if s > state.serial]
                    await ctx.run(configjournal.rewrite, self.journal, [p for _, p in keep],
                                  True)
                    self.records = keep
                finally:
                    self.lock.release()
                if self.roles_changed:
                    self.roles_changed = False
                    confd_role.after(ctx, None)
        finally:
            self.checkpointing = False


_STORES: dict[str, ConfigStore] = {}


def store_for(ctx: NodeContext) -> ConfigStore:
    """The store of this node (one per config path: tests run many nodes in one process)."""
    store = _STORES.get(ctx.paths.config_file)
    if store is None:
        store = _STORES[ctx.paths.config_file] = ConfigStore(ctx.paths.config_file)
    return store


def config_update(ctx: NodeContext, record: str) -> defer.Deferred[bool]:
    """The ``config_update`` call."""
    return defer.Deferred.fromCoroutine(store_for(ctx).apply(ctx, record))


def after_upload(ctx: NodeContext, result: Any) -> Any:
    """config.data was uploaded whole: drop the journal (in the thread) and the parts."""
    store = store_for(ctx)
    store.reset()
    d = ctx.run(configjournal.rewrite, store.journal, [], True)
    d.addCallback(lambda _: result)
    return d
