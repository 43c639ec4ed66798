"""The job queue's copies on the master candidates."""

from __future__ import annotations

from typing import Any

from ganeti.core.rpcdefs.base import (
    TMO_FAST,
    TMO_NORMAL,
    RpcArg,
    call,
    is_content,
    is_rename_list,
    is_str,
)


def _is_update_list(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and is_content(p[1])
        for p in v)


CALLS = [
    call("jobqueue_update", TMO_FAST,
         "Write one job-queue file (job-<n>, serial, archive/<d>/job-<n>).",
         RpcArg("file_name", is_str, "a queue file name (string)"),
         RpcArg("content", is_content, "a string or [encoding, string]")),
    call("jobqueue_rename", TMO_FAST, "Rename job-queue files, e.g. into the archive.",
         RpcArg("renames", is_rename_list, "a list of [old, new] name pairs")),
    call("jobqueue_update_many", TMO_FAST,
         "Write several job-queue files, then apply renames (one replication pass).",
         RpcArg("updates", _is_update_list, "a list of [file name, content] pairs"),
         RpcArg("renames", is_rename_list, "a list of [old, new] name pairs")),
    call("jobqueue_purge", TMO_NORMAL, "Remove every job-queue file except the lock."),
]
