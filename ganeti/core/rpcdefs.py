"""The node RPC call table: every call the master makes to a node daemon, declared once.

ganeti-noded builds its HTTP resources from :data:`CALLS` and checks every
request against it; the master's RPC client (``ganeti.rpc``) takes each call's
timeout from it and checks its own arguments before sending anything.

Wire format (Ganeti's noded convention): ``PUT /<call name>`` with a JSON list
of the positional arguments as the body; the reply body is ``[true, result]``
or ``[false, "error message"]``.
"""

from __future__ import annotations

import base64
import json
import posixpath
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants, serializer

# Timeout classes, in seconds (Ganeti's RPC_TMO_* values).
TMO_FAST = 10
TMO_NORMAL = 60
TMO_SLOW = 900

# Encodings of file contents in upload_file and jobqueue_update (Ganeti's values).
ENCODING_NONE = 0
ENCODING_ZLIB_BASE64 = 1

# Paths travel as they are on a node without GANETI_ROOTDIR; see to_wire_path.
# Names from the wire are matched whole (fullmatch): "$" also matches before a
# final newline, which let ``evil\n`` through.
_SSCONF_KEY_RE = re.compile(r"[a-z0-9_-]+")


class RpcArgumentError(ValueError):
    """A call's arguments do not match the table (HTTP 400 on the node)."""


class RpcReplyError(ValueError):
    """A node's reply body is not ``[bool, value]`` JSON."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, int | float)) and not isinstance(v, bool)


def _is_opt_number(v: Any) -> bool:
    return v is None or _is_number(v)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_opt_str_or_int(v: Any) -> bool:
    return v is None or isinstance(v, str) or _is_int(v)


def _is_content(v: Any) -> bool:
    if isinstance(v, str):
        return True
    return (isinstance(v, list) and len(v) == 2 and v[0] in (ENCODING_NONE, ENCODING_ZLIB_BASE64)
            and isinstance(v[1], str))


def _is_str_dict(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _SSCONF_KEY_RE.fullmatch(k)
                                       and isinstance(x, str) for k, x in v.items())


def _is_rename_list(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v)


def _is_update_list(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and _is_content(p[1])
        for p in v)


def _is_mode(v: Any) -> bool:
    return _is_int(v) and 0 <= v <= 0o7777


def _is_duration(v: Any) -> bool:
    return _is_number(v) and 0 <= v <= TMO_SLOW


def _is_nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def is_wire_path(v: Any) -> bool:
    """An absolute, normalised path (no ``..``, no ``//``, no trailing ``/``)."""
    return (isinstance(v, str) and v.startswith("/") and not v.startswith("//")
            and posixpath.normpath(v) == v and "\0" not in v)


# node_verify: the checks a master may ask for, each with the shape of its value.
VERIFY_CHECKS: dict[str, Callable[[Any], bool]] = {
    "version": lambda v: isinstance(v, bool),
    "filelist": lambda v: isinstance(v, list) and all(is_wire_path(p) for p in v),
    "hostname": lambda v: isinstance(v, bool),
    "time": lambda v: isinstance(v, bool),
    "ssconf": lambda v: isinstance(v, bool),
    "nodesetup": lambda v: isinstance(v, bool),
    "client_cert": lambda v: isinstance(v, bool),
    "hvinfo": lambda v: isinstance(v, bool),
    "accepted_storage_paths": lambda v: isinstance(v, bool),
    "userscripts": lambda v: isinstance(v, list) and all(is_wire_path(p) for p in v),
    "oob_paths": lambda v: isinstance(v, list) and all(is_wire_path(p) for p in v),
    "file_storage_path": lambda v: is_wire_path(v),
    "shared_file_storage_path": lambda v: is_wire_path(v),
    "node_net_test": lambda v: isinstance(v, list) and all(
        isinstance(e, list) and len(e) == 3 and _is_nonempty_str(e[0])
        and _is_nonempty_str(e[1]) and _is_int(e[2]) and 0 < e[2] < 65536 for e in v),
}


def _is_verify_checks(v: Any) -> bool:
    return isinstance(v, dict) and all(
        isinstance(k, str) and k in VERIFY_CHECKS and VERIFY_CHECKS[k](x) for k, x in v.items())


@dataclass(frozen=True)
class RpcArg:
    """One positional argument: name, type check and a description of the shape."""

    name: str
    check: Callable[[Any], bool]
    kind: str


@dataclass(frozen=True)
class RpcCall:
    """One node RPC call: its name, arguments, timeout class and a one-line doc."""

    name: str
    args: tuple[RpcArg, ...]
    timeout: int
    doc: str

    def check_args(self, args: Any) -> list[Any]:
        """``args`` as a list if it matches the declaration, else RpcArgumentError."""
        if not isinstance(args, list):
            raise RpcArgumentError(f"{self.name}: the arguments must be a JSON list, "
                                   f"not {type(args).__name__}")
        if len(args) != len(self.args):
            names = ", ".join(a.name for a in self.args)
            raise RpcArgumentError(f"{self.name} takes {len(self.args)} argument(s) "
                                   f"({names}), {len(args)} given")
        for arg, value in zip(self.args, args, strict=True):
            if not arg.check(value):
                raise RpcArgumentError(f"{self.name}: argument {arg.name} must be "
                                       f"{arg.kind}, got {json.dumps(value)[:80]}")
        return args


def _call(name: str, timeout: int, doc: str, *args: RpcArg) -> RpcCall:
    return RpcCall(name, tuple(args), timeout, doc)


_CALL_LIST = [
    _call("version", TMO_FAST, "The node's internode protocol version (PROTOCOL_VERSION)."),
    _call("node_info", TMO_FAST,
          "Memory (MiB), CPUs and the free/total space (MiB) of the file storage directory."),
    _call("upload_file", TMO_NORMAL,
          "Write one of the files the master distributes (allow-listed), atomically.",
          RpcArg("file_name", _is_str, "an absolute path (string)"),
          RpcArg("content", _is_content, "a string or [encoding, string]"),
          RpcArg("mode", _is_mode, "a file mode (integer 0..0o7777)"),
          RpcArg("uid", _is_opt_str_or_int, "a user name, uid or null (ignored)"),
          RpcArg("gid", _is_opt_str_or_int, "a group name, gid or null (ignored)"),
          RpcArg("atime", _is_opt_number, "a time in seconds or null"),
          RpcArg("mtime", _is_opt_number, "a time in seconds or null")),
    _call("write_ssconf_files", TMO_NORMAL,
          "Replace the ssconf_<key> files given (key -> value).",
          RpcArg("values", _is_str_dict, "an object of ssconf key -> string")),
    _call("jobqueue_update", TMO_FAST,
          "Write one job-queue file (job-<n>, serial, archive/<d>/job-<n>).",
          RpcArg("file_name", _is_str, "a queue file name (string)"),
          RpcArg("content", _is_content, "a string or [encoding, string]")),
    _call("jobqueue_rename", TMO_FAST, "Rename job-queue files, e.g. into the archive.",
          RpcArg("renames", _is_rename_list, "a list of [old, new] name pairs")),
    _call("jobqueue_update_many", TMO_FAST,
          "Write several job-queue files, then apply renames (one replication pass).",
          RpcArg("updates", _is_update_list, "a list of [file name, content] pairs"),
          RpcArg("renames", _is_rename_list, "a list of [old, new] name pairs")),
    _call("jobqueue_purge", TMO_NORMAL, "Remove every job-queue file except the lock."),
    _call("node_verify", TMO_NORMAL,
          "Answer the checks asked for (see ganeti/noded/backend/verify.py).",
          RpcArg("checks", _is_verify_checks,
                 "an object with the optional keys version, hostname, time, ssconf, "
                 "nodesetup, client_cert, hvinfo, accepted_storage_paths (true/false), "
                 "filelist, userscripts, oob_paths (lists of absolute normalised paths), "
                 "file_storage_path, shared_file_storage_path (a path) and node_net_test "
                 "(a list of [name, ip, port])"),
          RpcArg("cluster_name", _is_nonempty_str, "the cluster's name (non-empty string)")),
    _call("node_leave_cluster", TMO_NORMAL,
          "Remove the cluster's files from this node (server.pem last), then stop noded."),
    _call("test_delay", TMO_NORMAL, "Wait the given number of seconds, then succeed.",
          RpcArg("duration", _is_duration, f"a number of seconds (0..{TMO_SLOW})")),
    _call("node_demote_from_mc", TMO_FAST,
          "Back up and remove config.data (the node is no longer a master candidate)."),
    _call("run_oob", TMO_NORMAL,
          "Run '<oob_program> <command> <node>' with a timeout; its JSON output (or null).",
          RpcArg("oob_program", is_wire_path, "an absolute normalised path"),
          RpcArg("command", lambda v: v in constants.OOB_COMMANDS, "an out-of-band command "
                 "(power-on, power-off, power-cycle, power-status, health)"),
          RpcArg("remote_node", _is_nonempty_str, "a node name (non-empty string)"),
          RpcArg("timeout", lambda v: _is_int(v) and 0 < v <= TMO_SLOW,
                 f"a number of seconds (1..{TMO_SLOW})")),
    _call("set_watcher_pause", TMO_NORMAL,
          "Write DATA_DIR/watcher.pause (the end of the pause), or remove it (null).",
          RpcArg("until", _is_opt_number, "a time in seconds or null")),
]

CALLS: dict[str, RpcCall] = {c.name: c for c in _CALL_LIST}


def get_call(name: str) -> RpcCall:
    """The declaration of ``name``; RpcArgumentError if there is none."""
    try:
        return CALLS[name]
    except KeyError:
        raise RpcArgumentError(f"unknown RPC call {name!r}") from None


def encode_request(call: RpcCall, args: list[Any]) -> bytes:
    """The PUT body for ``call`` with ``args`` (checked against the table first)."""
    return json.dumps(call.check_args(list(args))).encode("utf-8")


def encode_reply(success: bool, payload: Any) -> bytes:
    """A reply body: ``[true, result]`` or ``[false, message]``."""
    return json.dumps([bool(success), payload]).encode("utf-8")


def decode_request(call: RpcCall, body: bytes) -> list[Any]:
    """The checked arguments of a PUT body; RpcArgumentError (HTTP 400) if malformed.

    The body is parsed with a bounded nesting depth, so a deeply nested body
    is a bad request like any other malformed one.  An empty body is no JSON
    value at all, which :meth:`RpcCall.check_args` refuses (arguments are a
    JSON list, ``[]`` for none).
    """
    try:
        value = serializer.load_json(body) if body else None
    except serializer.JsonTooDeep as err:
        raise RpcArgumentError(f"{call.name}: the body is not acceptable JSON: {err}") from None
    except ValueError as err:  # UnicodeDecodeError included
        raise RpcArgumentError(f"{call.name}: the body is not JSON: {err}") from None
    return call.check_args(value)


def decode_reply(body: bytes) -> tuple[bool, Any]:
    """``(success, payload)`` from a reply body; RpcReplyError if malformed.

    Node answers are parsed with a bounded nesting depth: a broken or hostile
    node daemon gives a failed result, never an exception in the master.
    """
    try:
        value = serializer.load_json(body)
    except ValueError as err:  # JsonTooDeep and UnicodeDecodeError included
        raise RpcReplyError(f"reply is not JSON: {err}") from None
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], bool)):
        raise RpcReplyError("reply is not [success, payload]")
    return value[0], value[1]


def encode_content(data: bytes | str, compress: bool = False) -> list[Any]:
    """File content for upload_file/jobqueue_update: ``[0, text]`` or ``[1, b64(zlib)]``."""
    if isinstance(data, str):
        if not compress:
            return [ENCODING_NONE, data]
        data = data.encode("utf-8")
    return [ENCODING_ZLIB_BASE64, base64.b64encode(zlib.compress(data)).decode("ascii")]


def decode_content(value: str | list[Any]) -> bytes:
    """The bytes of an encoded content argument (already shape-checked)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    encoding, text = value
    if encoding == ENCODING_NONE:
        return str(text).encode("utf-8")
    try:
        return zlib.decompress(base64.b64decode(str(text), validate=True))
    except (ValueError, zlib.error) as err:
        raise RpcArgumentError(f"content is not valid base64 zlib data: {err}") from None


def to_wire_path(root: str, path: str) -> str:
    """A local path as it travels: without this node's GANETI_ROOTDIR prefix."""
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root):] or "/"
    return path


def from_wire_path(root: str, path: str) -> str:
    """A path from the wire as it is on this node (under GANETI_ROOTDIR, if set)."""
    return root + path if root else path
