"""Bodies on the wire: requests, replies, file contents and paths."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

from ganeti.core import serializer
from ganeti.core.rpcdefs.base import (
    ENCODING_NONE,
    ENCODING_ZLIB_BASE64,
    RpcArgumentError,
    RpcCall,
    RpcReplyError,
)


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
