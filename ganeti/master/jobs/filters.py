"""Job filter rules in the master: the LUXI methods and keeping the queue in step.

Changes to rules bypass the job queue (docs/filters.md: a full queue must not lock
out the administrator): ``ReplaceFilter`` and ``DeleteFilter`` change the
config directly, through the config writer, and the queue applies the new
rules as part of the commit, before the caller gets its answer.
"""

from __future__ import annotations

import uuid as uuidmod
from collections.abc import Callable
from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import constants as c
from ganeti.core import errors, jobfilters, jobs, query
from ganeti.core.jobfilters import CompiledRule
from ganeti.core.objects import ConfigData, FilterRule
from ganeti.core.queryfields.filters import FILTER_FIELDS as FILTER_DECLS
from ganeti.master.config.configwriter import ConfigWriter
from ganeti.master.jobs.jobqueue import JobQueue
from ganeti.master.query.queryregistry import QuerySource


def _getter(name: str) -> Callable[[FilterRule], Any]:
    return lambda rule: getattr(rule, name)


#: The fields of query resource "filter" (declared in ganeti.core.queryfields.filters).
FILTER_FIELDS: dict[str, query.Field[FilterRule]] = query.bind(
    FILTER_DECLS, {name: _getter(name) for name in jobfilters.RULE_FIELDS})


def ordered_rules(cfg: ConfigData) -> list[FilterRule]:
    """The rules of ``cfg`` as Ganeti's luxid lists them: by uuid (not in evaluation
    order, which is by priority, watermark, then uuid)."""
    return sorted(cfg.filters.values(), key=lambda r: r.uuid)


def compiled_rules(cfg: ConfigData) -> list[CompiledRule]:
    """The rules of ``cfg`` ready for the scheduler."""
    return [CompiledRule.from_object(rule) for rule in cfg.filters.values()]


class FilterMethods:
    """QueryFilters, ReplaceFilter, DeleteFilter and Query("filter")."""

    log = Logger()

    def __init__(self, config: ConfigWriter, queue: JobQueue, clock: IReactorTime) -> None:
        self.config = config
        self.queue = queue
        self.clock = clock
        self._applied: dict[str, FilterRule] | None = None
        self.last_evaluated = 0  # job/rule evaluations of the last change of rules
        config.add_listener(self.config_changed)
        self.config_changed(config.config)

    def implementations(self) -> dict[str, Callable[..., Any]]:
        """LUXI method name -> implementation."""
        return {
            "QueryFilters": self.query_filters,
            "ReplaceFilter": self.replace_filter,
            "DeleteFilter": self.delete_filter,
        }

    def config_changed(self, cfg: ConfigData) -> None:
        """After every commit: give the queue the rules if they changed."""
        if self._applied is not None and cfg.filters == self._applied:
            return
        evaluated = self.last_evaluated = self.queue.set_rules(compiled_rules(cfg))
        self._applied = dict(cfg.filters)
        self.log.info("Job filter rules: {count} in force; {evaluated} job/rule "
                      "evaluations", count=len(cfg.filters), evaluated=evaluated)

    # --- queries ---------------------------------------------------------------------

    def _lookup(self, uuids: list[str] | None) -> list[FilterRule]:
        cfg = self.config.config
        if not uuids:
            return ordered_rules(cfg)
        # As Ganeti's luxid: unknown uuids are left out, not an error.
        return [cfg.filters[u] for u in uuids if u in cfg.filters]

    def query_filters(self, uuids: list[str] | None, fields: list[str]) -> list[Any]:
        """QueryFilters: old-style rows, in the order of ``uuids`` (all: by uuid)."""
        return query.Query(FILTER_FIELDS, fields).old_style(self._lookup(uuids))

    def query_source(self) -> QuerySource:
        """Query resource "filter" (:mod:`ganeti.master.query.queryregistry`)."""
        return QuerySource(c.QR_FILTER, FILTER_FIELDS, self.query,
                           ("QueryFilters", self.query_filters))

    def query(self, fields: list[str], qfilter: Any) -> dict[str, Any]:
        """Query("filter", fields, qfilter)."""
        return query.Query(FILTER_FIELDS, fields, qfilter).response(
            ordered_rules(self.config.config))

    # --- changes -----------------------------------------------------------------------

    async def replace_filter(self, uuid: str | None, priority: Any, predicates: Any,
                             action: Any, reason: Any) -> str:
        """Add a rule (``uuid`` null) or replace the rule ``uuid`` (added if unknown)."""
        rule_uuid = str(uuidmod.uuid4()) if uuid is None else jobfilters.check_uuid(uuid)
        priority = jobfilters.check_priority(priority)
        predicates = jobfilters.check_new_predicates(predicates)
        action = jobfilters.check_action(action)
        trail = jobfilters.check_reason_trail(reason)
        trail.append(["luxid", "", jobs.time_ns(self.clock.seconds())])

        def change(cfg: ConfigData) -> str:
            # The highest job id now, taken inside the serialised change.
            old = cfg.filters.get(rule_uuid)
            cfg.filters[rule_uuid] = FilterRule(
                uuid=rule_uuid, watermark=self.queue.store.serial, priority=priority,
                predicates=predicates, action=action, reason_trail=trail,
                serial_no=(old.serial_no or 0) + 1 if old is not None else 1)
            return rule_uuid

        result: str = await self.config.update(change)
        await self.queue.rules_settled()  # in force for every job when the call returns
        self.log.info("Job filter rule {uuid} set: priority {priority}, action {action}, "
                      "predicates {predicates}", uuid=rule_uuid, priority=priority,
                      action=jobfilters.action_text(action), predicates=predicates)
        return result

    async def delete_filter(self, uuid: str) -> None:
        """Remove rule ``uuid`` (an unknown one is a GenericError, as in Ganeti)."""
        if uuid not in self.config.config.filters:
            raise errors.GenericError(f"Filter rule with UUID {uuid} does not exist")

        def change(cfg: ConfigData) -> None:
            if cfg.filters.pop(uuid, None) is None:
                raise errors.GenericError(f"Filter rule with UUID {uuid} does not exist")

        await self.config.update(change)
        await self.queue.rules_settled()
        self.log.info("Job filter rule {uuid} removed", uuid=uuid)
