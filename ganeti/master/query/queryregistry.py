"""The query registry: every queryable resource, looked up by name.

A resource is a :class:`QuerySource`: its field table (the declarations of
:mod:`ganeti.core.queryfields` bound to the master's getters), the function
answering ``Query(what, fields, filter)`` (which knows where the rows come
from: the job queue, the config, the nodes' live data, the lock monitor)
and, where Ganeti has one, its old-style LUXI method (``QueryNodes``, ...).
LUXI ``Query`` and ``QueryFields``, ``OP_QUERY`` and ``OP_QUERY_FIELDS``
answer through :class:`QueryRegistry`; there is no list of resources
anywhere else on the master.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ganeti.core import query
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.query import Field
from ganeti.core.queryfields import catalog
from ganeti.core.queryfields.locks import LOCK_FIELDS as LOCK_DECLS

#: ``(fields, qfilter) -> response`` (or a Deferred/coroutine of it).
Answer = Callable[[Any, Any], Any]

#: A lock monitor row: name, mode, owners, pending ``(mode, owners)``.
LockInfo = tuple[str, Any, list[str], list[Any]]
LOCK_GETTERS: dict[str, Callable[[LockInfo], Any]] = {
    "name": lambda info: info[0],
    "mode": lambda info: info[1],
    "owner": lambda info: list(info[2]),
    "pending": lambda info: [[mode, list(names)] for mode, names in info[3]],
}
LOCK_TABLE: dict[str, Field[LockInfo]] = query.bind(LOCK_DECLS, LOCK_GETTERS)


@dataclass(frozen=True)
class QuerySource:
    """One queryable resource on the master."""

    what: str
    fields: Mapping[str, Field[Any]]
    answer: Answer
    #: The old-style LUXI method and its implementation, if the resource has one.
    old_style: tuple[str, Callable[..., Any]] | None = None
    #: Further LUXI methods of the resource (extensions), by name.
    extensions: tuple[tuple[str, Callable[..., Any]], ...] = ()


class QueryRegistry:
    """Resources by name; answers Query and QueryFields for each."""

    def __init__(self) -> None:
        self._sources: dict[str, QuerySource] = {}

    def register(self, source: QuerySource) -> None:
        """Add a resource: declared in :mod:`ganeti.core.queryfields.catalog`, once,
        with exactly the declared fields."""
        decls = catalog.RESOURCES.get(source.what)
        if decls is None:
            raise ValueError(f"query resource {source.what!r} is not declared")
        if source.what in self._sources:
            raise ValueError(f"query resource {source.what!r} registered twice")
        if list(source.fields) != list(decls) or any(
                source.fields[n].fielddef() != decls[n].fielddef() for n in decls):
            raise ValueError(f"the fields of {source.what!r} are not its declared ones")
        self._sources[source.what] = source

    def resources(self) -> list[str]:
        """The resources Query and QueryFields answer, by name."""
        return sorted(self._sources)

    def source(self, what: Any) -> QuerySource:
        """The resource ``what``; OpPrereqError (wrong_input) if there is none."""
        if not isinstance(what, str) or what not in self._sources:
            raise OpPrereqError(f"Resource {what!r} cannot be queried yet (known: "
                                f"{', '.join(self.resources())})", ECODE_INVAL)
        return self._sources[what]

    async def query(self, what: Any, fields: Any, qfilter: Any) -> dict[str, Any]:
        """``Query(what, fields, qfilter)``."""
        answer = self.source(what).answer(fields, qfilter)
        if inspect.isawaitable(answer):
            answer = await answer
        result: dict[str, Any] = answer
        return result

    def query_fields(self, what: Any, fields: Any) -> dict[str, Any]:
        """``QueryFields(what, fields)``: the named field definitions, or all by name."""
        return query.query_fields(self.source(what).fields, fields)

    def implementations(self) -> dict[str, Callable[..., Any]]:
        """LUXI method name -> implementation: Query, QueryFields and the old-style
        methods of the registered resources."""
        methods: dict[str, Callable[..., Any]] = {
            "Query": self.query, "QueryFields": self.query_fields}
        for source in self._sources.values():
            if source.old_style is not None:
                methods[source.old_style[0]] = source.old_style[1]
            methods.update(source.extensions)
        return methods


__all__ = ["LOCK_GETTERS", "LOCK_TABLE", "Answer", "LockInfo", "QueryRegistry",
           "QuerySource"]
