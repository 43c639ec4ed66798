"""Ganeti's error classes and their wire encoding.

Errors cross LUXI (and later RAPI and job results) as ``["ClassName", [args]]``
so that existing Ganeti clients re-raise the same class.  The class names and
the error codes below are therefore part of the wire protocol.
"""

from __future__ import annotations

from typing import Any

# Error codes carried as the second argument of OpPrereqError and friends.
ECODE_RESOLVER = "resolver_error"
ECODE_NORES = "insufficient_resources"
ECODE_TEMP_NORES = "temp_insufficient_resources"
ECODE_INVAL = "wrong_input"
ECODE_STATE = "wrong_state"
ECODE_NOENT = "unknown_entity"
ECODE_EXISTS = "already_exists"
ECODE_NOTUNIQUE = "resource_not_unique"
ECODE_FAULT = "internal_error"
ECODE_ENVIRON = "environment_error"

ECODE_ALL = frozenset({
    ECODE_RESOLVER, ECODE_NORES, ECODE_TEMP_NORES, ECODE_INVAL, ECODE_STATE,
    ECODE_NOENT, ECODE_EXISTS, ECODE_NOTUNIQUE, ECODE_FAULT, ECODE_ENVIRON,
})


class GenericError(Exception):
    """Base class of every Ganeti error."""


class ConfigurationError(GenericError):
    """The cluster configuration is invalid or inconsistent."""


class ConfigVersionMismatch(ConfigurationError):
    """The configuration file has a version this code does not understand."""


class ReservationError(GenericError):
    """A resource (MAC, IP, port, DRBD minor, LV name) is reserved or in use already."""


class ProgrammerError(GenericError):
    """A bug: an internal invariant was violated."""


class ParameterError(GenericError):
    """A parameter (query field, config value) is not known."""


class TypeEnforcementError(GenericError):
    """A parameter value cannot be coerced to its declared type (Ganeti's name)."""


class HypervisorError(GenericError):
    """A hypervisor parameter is not valid for its hypervisor (Ganeti's name)."""


class ResultValidationError(GenericError):
    """An instance allocator's answer does not have the shape its request asks for."""


class OpPrereqError(GenericError):
    """A prerequisite of an operation does not hold; args are (message, ecode)."""


class RemoteError(GenericError):
    """A remote node could not be asked (Ganeti's RemoteError)."""


class OpExecError(GenericError):
    """An operation failed while executing."""


class HooksFailure(GenericError):
    """Hooks could not be run (e.g. no node answered)."""


class HooksAbort(HooksFailure):
    """A pre hook failed, so the operation was not run; args[0] is a list of
    ``(node, script, output)``."""


class OpCodeUnknown(GenericError):
    """An opcode id is not known."""


class JobLost(GenericError):
    """A job cannot be found."""


class JobQueueError(GenericError):
    """The job queue failed."""


class JobQueueDrainError(JobQueueError):
    """The job queue is drained and refuses new jobs."""


class JobQueueFull(JobQueueError):
    """The job queue is full."""


class LockError(GenericError):
    """A lock could not be acquired or was used wrongly."""


class TagError(GenericError):
    """A tag is invalid or tag limits are exceeded."""


class CommandError(GenericError):
    """An external command failed."""


class AddressPoolError(GenericError):
    """An IP address pool operation failed (Ganeti's name): not in the network, taken, full."""


class ParseError(GenericError):
    """A value could not be parsed."""


class LuxiError(GenericError):
    """A LUXI-level error."""


class QueryFilterParseError(ParseError):
    """A query filter could not be parsed."""


class ProtocolError(GenericError):
    """The peer violated the wire protocol (framing, JSON, message shape)."""


class ConnectionClosedError(ProtocolError):
    """The peer closed the connection before answering."""


class TimeoutError(ProtocolError):  # Ganeti's own name on the wire
    """The peer did not answer in time."""


class RequestError(ProtocolError):
    """The peer answered with an error we cannot map to a class."""


class NoMasterError(ProtocolError):
    """The master daemon cannot be reached."""


class PermissionError(ProtocolError):  # Ganeti's own name on the wire
    """The client may not use the master socket."""


_CLASSES: dict[str, type[GenericError]] = {
    cls.__name__: cls
    for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, GenericError)
}


def encode_exception(err: BaseException) -> list[Any]:
    """Return the wire form ``[class name, [args]]`` of an exception.

    Exceptions that are not Ganeti errors are reported as ``GenericError`` so
    that no internal class names leak and every client can decode them.
    """
    if isinstance(err, GenericError):
        name = type(err).__name__
        if name not in _CLASSES:  # a subclass defined elsewhere
            name = next(c.__name__ for c in type(err).__mro__ if c.__name__ in _CLASSES)
        return [name, [_jsonable(a) for a in err.args]]
    return ["GenericError", [f"{type(err).__name__}: {err}"]]


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return value
    return str(value)


def decode_exception(value: Any) -> GenericError | None:
    """Turn ``[class name, [args]]`` back into an exception, or None if it is not one."""
    if (isinstance(value, (list, tuple)) and len(value) == 2
            and isinstance(value[0], str) and isinstance(value[1], (list, tuple))):
        cls = _CLASSES.get(value[0])
        if cls is not None:
            return cls(*value[1])
    return None


def error_code(err: BaseException) -> str | None:
    """The Ganeti error code carried by an exception, if any."""
    if len(err.args) >= 2 and isinstance(err.args[1], str) and err.args[1] in ECODE_ALL:
        return err.args[1]
    return None
