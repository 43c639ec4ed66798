"""The building blocks of the opcode table: :class:`Param` and :class:`OpCode`.

An opcode on the wire is a JSON object: ``OP_ID`` names the operation, the
other keys are its parameters.  Every opcode also takes the common
parameters of :data:`COMMON_PARAMS` (dry run, debug level, priority,
dependencies, comment, reason trail).  :meth:`OpCode.validate` checks a wire
object against the declaration and returns the stored form, with every
parameter present and defaults filled in.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ganeti.core import constants
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.kinds import Kind, KindMismatch

OP_ID_KEY = "OP_ID"
# Matched whole (fullmatch; "$" accepts a final newline), ASCII digits only
# (int() would take "\u0661" or " 7\n" as well).
_OP_ID_RE = re.compile(r"OP_[A-Z0-9]+(?:_[A-Z0-9]+)*")
_JOB_ID_RE = re.compile(constants.JOB_ID_TEMPLATE, re.ASCII)

@dataclass(frozen=True)
class Param:
    """One opcode parameter.

    ``default`` is used when the key is absent (or null while the kind does
    not accept null); ``factory`` builds a fresh default instead, for
    mutable values.  A ``required`` parameter has no default: leaving it out
    is an error.  A ``reserved`` parameter is one of Ganeti's that this
    implementation does not support yet: real Ganeti clients send every
    parameter, mostly as null, so it is accepted while it is absent, null,
    empty or equal to Ganeti's default, refused otherwise, and stored only as
    given (luxid echoes what the client sent, e.g. ``hv_state: {}``; logical
    units never read it).
    """

    name: str
    kind: Kind
    doc: str
    default: Any = None
    factory: Callable[[], Any] | None = None
    required: bool = False
    reserved: bool = False
    #: boolean parameters any of which, when true, makes a required one optional
    #: (OP_INSTANCE_CREATE's name, disks and NICs with ``forthcoming`` or ``commit``)
    unless: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"bad parameter name {self.name!r}")
        if "\n" in self.doc or not self.doc:
            raise ValueError(f"parameter {self.name}: doc must be one line")
        if self.required and (self.default is not None or self.factory is not None):
            raise ValueError(f"parameter {self.name}: required with a default")

    @property
    def strictly_required(self) -> bool:
        """Required whatever the other parameters say."""
        return self.required and not self.unless

    def required_in(self, data: Mapping[str, Any]) -> bool:
        """Whether ``data`` (a wire form) must give this parameter."""
        return self.required and not any(data.get(name) is True for name in self.unless)

    def default_value(self) -> Any:
        """A fresh copy of the default."""
        if self.factory is not None:
            return self.factory()
        return copy.deepcopy(self.default)

    def describe_default(self) -> str:
        """The default as shown in the reference ("required" if none)."""
        if self.required:
            return f"required unless {' or '.join(self.unless)}" if self.unless else "required"
        return kinds.show(self.default_value())


def req(name: str, kind: Kind, doc: str, unless: tuple[str, ...] = ()) -> Param:
    """A required parameter (optional when one of the booleans ``unless`` is true)."""
    return Param(name, kind, doc, required=True, unless=unless)


def opt(name: str, kind: Kind, doc: str, default: Any = None) -> Param:
    """An optional parameter with a default (copied for every opcode)."""
    return Param(name, kind, doc, default=default)


def reserved(name: str, doc: str, default: Any = None) -> Param:
    """A Ganeti parameter not supported yet (accepted only at its default)."""
    return Param(name, kinds.ANY, doc, default=default, reserved=True)


SummaryFormat = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class OpCode:
    """One declared opcode: its id, parameters, documentation and summary.

    ``summary_param`` names the parameter whose value the job summary shows
    in parentheses (``TEST_DELAY(10.0)``); ``summary_format`` turns that
    value into text, or into None to show no parentheses at all.
    """

    op_id: str
    doc: str
    params: tuple[Param, ...] = ()
    summary_param: str | None = None
    summary_format: SummaryFormat | None = None
    _by_name: dict[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _OP_ID_RE.fullmatch(self.op_id):
            raise ValueError(f"bad OP_ID {self.op_id!r}")
        by_name: dict[str, Param] = {}
        for param in COMMON_PARAMS + self.params:
            if param.name in by_name:
                raise ValueError(f"{self.op_id}: parameter {param.name} declared twice")
            by_name[param.name] = param
        if self.summary_param is not None and self.summary_param not in by_name:
            raise ValueError(f"{self.op_id}: unknown summary parameter {self.summary_param}")
        object.__setattr__(self, "_by_name", by_name)

    @property
    def all_params(self) -> tuple[Param, ...]:
        """The common parameters followed by the opcode's own."""
        return COMMON_PARAMS + self.params

    @property
    def stored_params(self) -> tuple[Param, ...]:
        """The parameters kept in the stored form (all but the reserved ones)."""
        return tuple(p for p in self.all_params if not p.reserved)

    def param(self, name: str) -> Param:
        """The parameter called ``name`` (KeyError if there is none)."""
        return self._by_name[name]

    def validate(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Check the wire form and return the stored form (defaults filled in).

        Unknown keys, missing required parameters and values of the wrong
        kind are refused with ``OpPrereqError(..., "wrong_input")`` naming
        the opcode and the parameter.
        """
        unknown = sorted(k for k in data if k != OP_ID_KEY and k not in self._by_name)
        if unknown:
            names = ", ".join(repr(k) for k in unknown)
            raise OpPrereqError(f"Opcode {self.op_id} has no parameter(s) {names}",
                                ECODE_INVAL)
        result: dict[str, Any] = {OP_ID_KEY: self.op_id}
        for param in self.all_params:
            value = data.get(param.name)
            if param.reserved:
                # Real clients send empty values (hv_state={}) to mean "no change".
                empty = isinstance(value, (dict, list, str)) and not value
                if value is not None and not empty and not (
                        type(value) is type(param.default) and value == param.default):
                    raise OpPrereqError(f"Parameter '{self.op_id}.{param.name}' is not "
                                        "supported yet (only null or an empty value is "
                                        "accepted)", ECODE_INVAL)
                if value is not None:  # kept as given (luxid echoes hv_state: {})
                    result[param.name] = copy.deepcopy(value)
                continue
            if value is None and param.required_in(data):
                state = "missing" if param.name not in data else "null"
                raise OpPrereqError(f"Parameter '{self.op_id}.{param.name}' is required "
                                    f"but {state}", ECODE_INVAL)
            if value is None and (param.name not in data or not param.kind.nullable):
                # Absent, or null for a parameter that cannot be null: the
                # default applies (Haskell's luxid reads null as "not given").
                result[param.name] = param.default_value()
                continue
            try:
                result[param.name] = param.kind.check(copy.deepcopy(value))
            except KindMismatch as err:
                raise OpPrereqError(f"Parameter '{self.op_id}.{param.name}{err.path}' "
                                    f"fails validation: {err.describe()}",
                                    ECODE_INVAL) from None
        return result

    def summary(self, op: Mapping[str, Any]) -> str:
        """``OP_ID`` without ``OP_``, plus ``(value)`` of the summary parameter."""
        text = self.op_id[3:]
        if self.summary_param is None:
            return text
        fmt = self.summary_format or default_summary_format
        shown = fmt(op.get(self.summary_param))
        return text if shown is None else f"{text}({shown})"


def haskell_show_double(value: float) -> str:
    """Render a float as Haskell's ``show`` does (``10.0``, ``1.0e-2``, ``1.5e7``).

    Ganeti's luxid builds the summary of OP_TEST_DELAY with ``show`` on the
    duration, so ``gnt-job list`` prints exactly this text.
    """
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value < 0 or (value == 0 and str(value).startswith("-")):
        return "-" + haskell_show_double(-value)
    if value == 0:
        return "0.0"
    if 0.1 <= value < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    # Scientific notation with the shortest round-trip digits (repr gives
    # the same digits as Haskell's floatToDigits).
    _, digit_tuple, exp = Decimal(repr(value)).as_tuple()
    assert isinstance(exp, int)
    exponent = len(digit_tuple) + exp - 1
    digits = "".join(str(d) for d in digit_tuple).rstrip("0") or "0"
    return f"{digits[0]}.{digits[1:] or '0'}e{exponent}"


def default_summary_format(value: Any) -> str | None:
    """Show a summary value: nothing for null, comma-joined lists, Haskell floats."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return haskell_show_double(value)
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


# --- the common parameters -------------------------------------------------

def _job_id_check(value: Any) -> Any:
    if isinstance(value, bool):
        raise KindMismatch("a job id", value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _JOB_ID_RE.fullmatch(value):
        return value
    raise KindMismatch("a job id (integer, negative for relative, or numeric string)", value)


JOB_ID_OR_RELATIVE = Kind("a job id (integer, negative = relative, or numeric string)",
                          _job_id_check)
FINAL_STATUS = kinds.one_of(constants.JOBS_FINALIZED, "one of")
DEPENDENCY = kinds.tuple_of(JOB_ID_OR_RELATIVE, kinds.list_of(FINAL_STATUS),
                            name="a list of [job id, [final statuses]]")
DEPENDS = kinds.maybe(kinds.list_of(DEPENDENCY, name="a list of [job id, [final statuses]]"))
REASON_ENTRY = kinds.tuple_of(kinds.STRING, kinds.STRING, kinds.INT,
                              name="a list of [source, reason, timestamp in ns]")
REASON_TRAIL = kinds.list_of(REASON_ENTRY, name="a list of [source, reason, timestamp in ns]")

COMMON_PARAMS: tuple[Param, ...] = (
    opt("dry_run", kinds.maybe(kinds.BOOL), "Run checks only, change nothing"),
    opt("debug_level", kinds.maybe(kinds.int_range(0)), "Debug level"),
    opt("priority", kinds.one_of(constants.OP_PRIO_SUBMIT_VALID),
        "Opcode priority: -10 high, 0 normal, 10 low", constants.OP_PRIO_DEFAULT),
    opt("depends", DEPENDS,
        "Jobs this opcode waits for: [job id, [final statuses]]; negative ids are "
        "relative to this job"),
    opt("comment", kinds.maybe(kinds.STRING), "Comment describing the purpose of the opcode"),
    Param("reason", REASON_TRAIL, "Reason trail: [source, reason, timestamp in ns] entries",
          factory=list),
)


#: Parameters that Ganeti's luxid writes as null when unset; it leaves out
#: every other unset (optional) parameter of a stored opcode.
NULL_SERIALISED = frozenset({"depends", "comment"})


def echo_form(op: Mapping[str, Any]) -> dict[str, Any]:
    """The opcode as luxid stores and echoes it: unset (null) parameters left out.

    ``op`` is a stored form (:meth:`OpCode.validate`, defaults filled in);
    only ``depends`` and ``comment`` stay when null, as in Ganeti's job files.
    """
    return {k: v for k, v in op.items() if v is not None or k in NULL_SERIALISED}


def luxid_echo(op: Mapping[str, Any], declared: OpCode | None) -> dict[str, Any]:
    """The opcode as Ganeti's luxid answers it (the job field ``ops``).

    luxid reads a job's opcodes into its typed declarations and writes them out
    again, whatever the job file holds (the submitted opcode, or the job process's
    copy with every parameter, unset ones as null).  So, from the declaration:

    - the common parameters come first, then ``OP_ID``, then the opcode's own, in
      the order they are declared;
    - a parameter with a default shows its value, or the default when it is unset
      (``node_setup: false`` for OP_NODE_ADD), reserved ones included;
    - an unset (null) optional parameter is left out, except ``depends`` and
      ``comment`` (:data:`NULL_SERIALISED`), which luxid writes as null;
    - keys the declaration does not know stay, after the declared ones (values a
      logical unit recorded, or an opcode this version does not declare).
    """
    if declared is None:
        return dict(op)
    result: dict[str, Any] = {}

    def put(param: Param) -> None:
        value = op.get(param.name)
        if value is None and not param.required:
            value = param.default_value()
        if value is not None or param.name in NULL_SERIALISED:
            result[param.name] = value

    for param in COMMON_PARAMS:
        put(param)
    result[OP_ID_KEY] = op.get(OP_ID_KEY, declared.op_id)
    for param in declared.params:
        put(param)
    for key, value in op.items():
        if key not in result and key not in declared._by_name and key != OP_ID_KEY:
            result[key] = value
    return result


def with_unset(op: Mapping[str, Any], declared: OpCode | None) -> dict[str, Any]:
    """``op`` (an echo form) with every declared parameter it leaves out set to null.

    Logical units read the full stored form; job files hold the echo form.
    """
    result = {p.name: None for p in declared.stored_params} if declared is not None else {}
    result.update(op)
    return result


def run_form(op: Mapping[str, Any], declared: OpCode | None) -> dict[str, Any]:
    """The opcode as Ganeti stores it once its job has started.

    Ganeti's job process rewrites the job file when the job starts, with every
    parameter of every opcode (unset ones as null) and ``debug_level`` 0 when
    it was not given; until then the file holds luxid's :func:`echo_form`.
    """
    result = with_unset(op, declared)
    if result.get("debug_level") is None:
        result["debug_level"] = 0
    return result


# --- dependencies and reason trail -------------------------------------------

def resolve_depends(depends: Any, own_job_id: int) -> list[list[Any]] | None:
    """Turn relative job ids into absolute ones and check the result.

    ``depends`` is the (validated) value of an opcode's ``depends``.  A
    negative id ``-n`` means "the job submitted n ids before this one"
    (``own_job_id - n``); numeric strings become integers.  A dependency on
    the job itself, or a relative id that reaches before job 1, is refused
    with ``OpPrereqError(..., "wrong_input")``.
    """
    if depends is None:
        return None
    try:
        checked = DEPENDS.check(copy.deepcopy(depends))
    except KindMismatch as err:
        raise OpPrereqError(f"Invalid job dependencies{err.path}: {err.describe()}",
                            ECODE_INVAL) from None
    result: list[list[Any]] = []
    for dep_id, statuses in checked:
        if isinstance(dep_id, int) and dep_id < 0:
            job_id = own_job_id + dep_id
            if job_id < 1:
                raise OpPrereqError(f"Unable to resolve relative job ID {dep_id} "
                                    f"for job {own_job_id}", ECODE_INVAL)
        else:
            job_id = int(dep_id)
        if job_id == own_job_id:
            raise OpPrereqError(f"Job {own_job_id} can't depend on itself", ECODE_INVAL)
        result.append([job_id, list(statuses)])
    return result


def reason_source(op_id: str, prefix: str = constants.OPCODE_REASON_SRC_OPCODE) -> str:
    """``gnt:opcode:test_delay`` for ``OP_TEST_DELAY``."""
    name = op_id[3:] if op_id.startswith("OP_") else op_id
    return f"{prefix}:{name.lower()}"


def reason_entry(op_id: str, job_id: int, index: int, timestamp_ns: int,
                 prefix: str = constants.OPCODE_REASON_SRC_OPCODE) -> list[Any]:
    """The entry the queue appends to opcode ``index`` of job ``job_id``."""
    return [reason_source(op_id, prefix), f"job={job_id};index={index}", timestamp_ns]
