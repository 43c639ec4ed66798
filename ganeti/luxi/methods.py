"""The LUXI method table: names and positional argument shapes, declared once.

The server validates incoming calls against it and the client library
builds its calls from it.  Later issues add their methods here.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


@dataclass(frozen=True)
class Arg:
    """One positional argument: its name, a type check and its description."""

    name: str
    check: Callable[[Any], bool]
    kind: str

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` has the right shape."""
        return self.check(value)


def STR(name: str) -> Arg:
    """A string argument."""
    return Arg(name, lambda v: isinstance(v, str), "string")


def OPT_STR(name: str) -> Arg:
    """A string or null argument."""
    return Arg(name, lambda v: v is None or isinstance(v, str), "string or null")


def STR_LIST(name: str) -> Arg:
    """A list of strings."""
    return Arg(name, _is_str_list, "list of strings")


def INT(name: str) -> Arg:
    """An integer argument."""
    return Arg(name, _is_int, "integer")


def ANY(name: str, kind: str = "value") -> Arg:
    """Any JSON value (checked further by the implementation)."""
    return Arg(name, lambda v: True, kind)


def LIST(name: str, kind: str = "list") -> Arg:
    """A list (items checked by the implementation)."""
    return Arg(name, lambda v: isinstance(v, list), kind)


def OPT_STR_LIST(name: str) -> Arg:
    """A list of strings or null."""
    return Arg(name, lambda v: v is None or _is_str_list(v), "list of strings or null")


def BOOL(name: str) -> Arg:
    """A boolean."""
    return Arg(name, lambda v: isinstance(v, bool), "boolean")


def NUMBER(name: str) -> Arg:
    """An integer or float."""
    return Arg(name, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
               "number")


def JOB_ID(name: str = "job_id") -> Arg:
    """A job id: an integer, or a string of digits (older clients send those)."""
    return Arg(name, lambda v: (_is_int(v) and v >= 0)
               or (isinstance(v, str) and v.isascii() and v.isdigit()),
               "job id (non-negative integer)")


def OPT_INT(name: str) -> Arg:
    """An integer or null argument."""
    return Arg(name, lambda v: v is None or _is_int(v), "integer or null")


_PREVIEW = reprlib.Repr()
_PREVIEW.maxstring = _PREVIEW.maxother = 100


def _preview(value: Any) -> str:
    """A short repr whose cost does not grow with the value (a client's huge argument)."""
    return _PREVIEW.repr(value)[:100]


@dataclass(frozen=True)
class Method:
    """A LUXI method: name, arguments, one-line description."""

    name: str
    args: tuple[Arg, ...]
    doc: str

    def check_args(self, args: list[Any]) -> None:
        """Refuse a wrong argument count or shape with a clear OpPrereqError."""
        if len(args) != len(self.args):
            names = ", ".join(a.name for a in self.args) or "none"
            raise OpPrereqError(
                f"{self.name} takes {len(self.args)} argument(s) ({names}), "
                f"{len(args)} given", ECODE_INVAL)
        for arg, value in zip(self.args, args, strict=True):
            if not arg.accepts(value):
                raise OpPrereqError(
                    f"{self.name}: argument {arg.name!r} must be a {arg.kind}, "
                    f"got {_preview(value)}", ECODE_INVAL)


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("QueryClusterInfo", (), "Cluster parameters and versions"),
    Method("QueryConfigValues", (STR_LIST("fields"),),
           "Selected configuration values (cluster_name, master_node, drain_flag, ...)"),
    Method("QueryTags", (STR("kind"), OPT_STR("name")),
           "Tags of the cluster, a node, a node group, an instance or a network"),
    # The job queue
    Method("SubmitJob", (LIST("ops", "list of opcodes"),), "Submit one job"),
    Method("SubmitJobToDrainedQueue", (LIST("ops", "list of opcodes"),),
           "Submit one job even while the queue is drained"),
    Method("SubmitManyJobs", (LIST("jobs", "list of jobs (lists of opcodes)"),),
           "Submit several jobs; [success, id or message] per job"),
    Method("WaitForJobChange", (JOB_ID(), STR_LIST("fields"), ANY("prev_job_info"),
                                ANY("prev_log_serial"), NUMBER("timeout")),
           "Wait until a job's fields or log change, or the timeout passes"),
    Method("QueryJobs", (ANY("job_ids", "list of job ids or null"), STR_LIST("fields")),
           "Field values of jobs (null for a missing job)"),
    Method("Query", (STR("what"), STR_LIST("fields"), ANY("qfilter", "filter or null")),
           "Query a resource (job, lock, node, group) with a filter"),
    Method("QueryNodes", (ANY("names", "list of node names or null"), STR_LIST("fields"),
                          ANY("use_locking", "boolean")),
           "Field values of nodes (old style; all nodes if no name is given)"),
    Method("QueryGroups", (ANY("names", "list of group names or null"), STR_LIST("fields"),
                           ANY("use_locking", "boolean")),
           "Field values of node groups (old style; all groups if no name is given)"),
    Method("QueryInstances", (ANY("names", "list of instance names or null"),
                              STR_LIST("fields"), ANY("use_locking", "boolean")),
           "Field values of instances (old style; all instances if no name is given)"),
    Method("QueryNetworks", (ANY("names", "list of network names or null"),
                             STR_LIST("fields"), ANY("use_locking", "boolean")),
           "Field values of networks (old style; all networks if no name is given)"),
    Method("QueryExports", (STR_LIST("nodes"), ANY("use_locking", "boolean")),
           "The exports of nodes: {node: [export, ...] or false} (all nodes if none is "
           "given)"),
    Method("QueryFields", (STR("what"), OPT_STR_LIST("fields")),
           "Field definitions of a resource"),
    Method("CancelJob", (JOB_ID(), BOOL("kill")), "Cancel a job; kill interrupts it"),
    Method("ArchiveJob", (JOB_ID(),), "Archive a finished job"),
    Method("AutoArchiveJobs", (NUMBER("age"), NUMBER("timeout")),
           "Archive finished jobs older than age seconds (-1: all)"),
    Method("ChangeJobPriority", (JOB_ID(), INT("priority")),
           "Change the priority of a job's unfinished opcodes"),
    Method("SetDrainFlag", (BOOL("drain"),), "Set or clear the queue's drain flag"),
    Method("SetWatcherPause", (ANY("until", "number or null"),),
           "Pause ganeti-watcher until a time (seconds since the epoch), or end the "
           "pause (null); answers the new value"),
    # Job filter rules (docs/filters.md): changed at once, not through the job queue.
    Method("QueryFilters", (OPT_STR_LIST("uuids"), STR_LIST("fields")),
           "Field values of job filter rules (all rules if no uuid is given)"),
    Method("ReplaceFilter", (OPT_STR("uuid"), ANY("priority", "non-negative integer"),
                             ANY("predicates", "list of predicates"),
                             ANY("action", "filter action"),
                             ANY("reason", "reason trail")),
           "Add a job filter rule (uuid null) or replace the rule with that uuid; "
           "returns its uuid"),
    Method("DeleteFilter", (STR("uuid"),), "Remove a job filter rule"),
    # Extension (docs/luxi.md): QueryInstances with one object per instance, for
    # ganeti-rapi's bulk answers, which it passes on without decoding.
    Method("QueryInstancesBulk", (ANY("names", "list of instance names or null"),
                                  STR_LIST("fields"), ANY("use_locking", "boolean")),
           "Instances as RAPI's ?bulk=1 shows them: an object per instance keyed by "
           "field, beparams with Ganeti's 'memory' key"),
    # Extension (docs/luxi.md): the connection becomes a stream of job events.
    Method("SubscribeEvents", (OPT_INT("since"),),
           "Stream every job event after serial 'since' (null: from now) on this connection"),
]}
