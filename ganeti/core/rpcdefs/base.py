"""The building blocks of the node RPC table: declarations, shape checks, timeouts.

A call is declared once as an :class:`RpcCall`: its name, its positional
arguments (:class:`RpcArg`, each with a shape check and, optionally, an
encoder run on the master), its timeout (a class below or a function of the
arguments) and, optionally, a decoder of the node's answer.  The domain
modules of this package hold the declarations; ``ganeti.core.rpcdefs``
assembles them into one table.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Timeout classes of the calls this project had first, in seconds.  These calls
# only touch small local files, so a node that does not answer within them is
# treated as failed quickly (replication and verify depend on it).
TMO_FAST = 10
TMO_NORMAL = 60
TMO_SLOW = 900

# Ganeti's timeout classes (its RPC_TMO_* constants), for calls that start real
# work on a node: its guideline is URGENT for calls the watcher makes, FAST for
# trivial reads, NORMAL for most calls, SLOW and beyond for long operations
# (instance installation is declared with a whole day).
RPC_TMO_URGENT = 60
RPC_TMO_FAST = 5 * 60
RPC_TMO_NORMAL = 15 * 60
RPC_TMO_SLOW = 3600
RPC_TMO_4HRS = 4 * 3600
RPC_TMO_1DAY = 86400

#: The longest timeout a declaration or a per-call override may ask for.
MAX_TIMEOUT = RPC_TMO_1DAY

# Encodings of file contents in upload_file and jobqueue_update (Ganeti's values).
ENCODING_NONE = 0
ENCODING_ZLIB_BASE64 = 1


class RpcArgumentError(ValueError):
    """A call's arguments do not match the table (HTTP 400 on the node)."""


class RpcReplyError(ValueError):
    """A node's reply body is not ``[bool, value]`` JSON, or its payload is not
    what the call's decoder accepts."""


# -- shape checks shared by the domain modules ----------------------------------------

def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    return (isinstance(v, int | float)) and not isinstance(v, bool)


def is_opt_number(v: Any) -> bool:
    return v is None or is_number(v)


def is_str(v: Any) -> bool:
    return isinstance(v, str)


def is_nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def is_wire_path(v: Any) -> bool:
    """An absolute, normalised path (no ``..``, no ``//``, no trailing ``/``)."""
    return (isinstance(v, str) and v.startswith("/") and not v.startswith("//")
            and posixpath.normpath(v) == v and "\0" not in v)


def is_content(v: Any) -> bool:
    """File content: a string or ``[encoding, string]``."""
    if isinstance(v, str):
        return True
    return (isinstance(v, list) and len(v) == 2 and v[0] in (ENCODING_NONE, ENCODING_ZLIB_BASE64)
            and isinstance(v[1], str))


def is_rename_list(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v)


# Names from the wire are matched whole (fullmatch): "$" also matches before a
# final newline, which let ``evil\n`` through.
SSCONF_KEY_RE = re.compile(r"[a-z0-9_-]+")


# -- timeouts -------------------------------------------------------------------------

Timeout = int | float | Callable[[Sequence[Any]], float]


def check_timeout(value: Any, what: str = "timeout") -> float:
    """``value`` as seconds if it is a positive finite number up to :data:`MAX_TIMEOUT`."""
    if not is_number(value) or not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise RpcArgumentError(f"{what} must be a number of seconds in (0, {MAX_TIMEOUT}], "
                               f"got {value!r}")
    return float(value)


# -- declarations ---------------------------------------------------------------------

@dataclass(frozen=True)
class EncodeContext:
    """What a master-side encoder may use: the config and, for per-node
    encoders, the name of the node the body is for (None otherwise)."""

    config: Any = None
    node: str | None = None


Encoder = Callable[[Any, EncodeContext], Any]


@dataclass(frozen=True)
class RpcArg:
    """One positional argument.

    ``check`` validates the value as it travels (on the master before sending,
    on the node on receipt); ``kind`` describes that shape in error messages.
    ``encode`` (master only) turns the caller's value into the wire value, with
    the config at hand (Ganeti's argument encoders, e.g. an instance with its
    filled parameters); ``per_node`` encoders also see the target node, so each
    node gets its own body.
    """

    name: str
    check: Callable[[Any], bool]
    kind: str
    encode: Encoder | None = None
    per_node: bool = False
    #: may be left out (only trailing arguments): a call that an older node daemon
    #: also takes without it, e.g. the run id of ``instance_os_add``
    optional: bool = False


@dataclass(frozen=True)
class RpcCall:
    """One node RPC call: name, arguments, timeout, doc and result decoder.

    ``timeout`` is seconds or a function of the (caller's) arguments, as
    Ganeti's ``test_delay`` whose timeout follows its duration.  ``decode``
    turns a successful payload into what callers get; it raises ValueError
    (or TypeError/KeyError) for a payload it does not accept, which fails the
    result of that node.
    """

    name: str
    args: tuple[RpcArg, ...]
    timeout: Timeout
    doc: str
    decode: Callable[[Any], Any] | None = field(default=None)

    def timeout_for(self, args: Sequence[Any]) -> float:
        """The timeout in seconds for a call with ``args`` (the caller's values)."""
        value = self.timeout(args) if callable(self.timeout) else self.timeout
        return check_timeout(value, f"{self.name}: the declared timeout")

    @property
    def required_count(self) -> int:
        """How many arguments a call must have (those before the optional ones)."""
        return next((i for i, a in enumerate(self.args) if a.optional), len(self.args))

    @property
    def per_node(self) -> bool:
        """Whether each node gets its own body (an argument has a per-node encoder)."""
        return any(a.per_node for a in self.args)

    def check_args(self, args: Any) -> list[Any]:
        """``args`` as a list if it matches the declaration, else RpcArgumentError."""
        if not isinstance(args, list):
            raise RpcArgumentError(f"{self.name}: the arguments must be a JSON list, "
                                   f"not {type(args).__name__}")
        if not self.required_count <= len(args) <= len(self.args):
            names = ", ".join(a.name for a in self.args)
            count = (f"{self.required_count} to {len(self.args)}"
                     if self.required_count < len(self.args) else str(len(self.args)))
            raise RpcArgumentError(f"{self.name} takes {count} argument(s) "
                                   f"({names}), {len(args)} given")
        for arg, value in zip(self.args, args, strict=False):
            if not arg.check(value):
                raise RpcArgumentError(f"{self.name}: argument {arg.name} must be "
                                       f"{arg.kind}, got {_short_json(value)}")
        return args

    def encode_args(self, args: Sequence[Any], ctx: EncodeContext) -> list[Any]:
        """The wire values of ``args``: each argument's encoder applied (master side).

        Raises RpcArgumentError if the count is wrong or an encoder refuses
        its value; the result still has to pass :meth:`check_args`.
        """
        values = list(args)
        if not self.required_count <= len(values) <= len(self.args):
            return values  # check_args reports the count
        out: list[Any] = []
        for arg, value in zip(self.args, values, strict=False):
            if arg.encode is None:
                out.append(value)
                continue
            try:
                out.append(arg.encode(value, ctx))
            except (ValueError, TypeError, KeyError) as err:
                raise RpcArgumentError(f"{self.name}: cannot encode argument {arg.name}: "
                                       f"{err}") from None
        return out

    def decode_payload(self, payload: Any) -> Any:
        """A successful payload through the declared decoder; RpcReplyError if refused."""
        if self.decode is None:
            return payload
        try:
            return self.decode(payload)
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise RpcReplyError(f"unexpected {self.name} result: {err}") from None


def _short_json(value: Any) -> str:
    try:
        return json.dumps(value)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def call(name: str, timeout: Timeout, doc: str, *args: RpcArg,
         decode: Callable[[Any], Any] | None = None) -> RpcCall:
    """Shorthand for a declaration."""
    return RpcCall(name, tuple(args), timeout, doc, decode)
