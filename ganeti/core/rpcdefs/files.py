"""Files and config: the files the master distributes and the ssconf values."""

from __future__ import annotations

from typing import Any

from ganeti.core.rpcdefs.base import (
    SSCONF_KEY_RE,
    TMO_NORMAL,
    RpcArg,
    call,
    is_content,
    is_int,
    is_opt_number,
    is_str,
)


def _is_opt_str_or_int(v: Any) -> bool:
    return v is None or isinstance(v, str) or is_int(v)


def _is_str_dict(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and SSCONF_KEY_RE.fullmatch(k)
                                       and isinstance(x, str) for k, x in v.items())


def _is_mode(v: Any) -> bool:
    return is_int(v) and 0 <= v <= 0o7777


CALLS = [
    call("upload_file", TMO_NORMAL,
         "Write one of the files the master distributes (allow-listed), atomically.",
         RpcArg("file_name", is_str, "an absolute path (string)"),
         RpcArg("content", is_content, "a string or [encoding, string]"),
         RpcArg("mode", _is_mode, "a file mode (integer 0..0o7777)"),
         RpcArg("uid", _is_opt_str_or_int, "a user name, uid or null (ignored)"),
         RpcArg("gid", _is_opt_str_or_int, "a group name, gid or null (ignored)"),
         RpcArg("atime", is_opt_number, "a time in seconds or null"),
         RpcArg("mtime", is_opt_number, "a time in seconds or null")),
    call("config_update", TMO_NORMAL,
         "Apply one config change record (as the master journals it) to the node's "
         "config.data; false if the node's copy is not at the record's base serial "
         "(the master then uploads the whole file).",
         RpcArg("record", is_str, "a config change record (JSON text)")),
    call("write_ssconf_files", TMO_NORMAL,
         "Replace the ssconf_<key> files given (key -> value).",
         RpcArg("values", _is_str_dict, "an object of ssconf key -> string")),
]
