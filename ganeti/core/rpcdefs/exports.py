"""Instance export and import calls (served by ganeti/noded/backend/exports.py).

Ganeti's ``export_list``, ``export_info`` and ``export_remove`` keep their
names and shapes (``export_info`` answers the parsed ``config.ini`` as
``{section: {key: value}}`` instead of its text).  Ganeti moves disk data
between nodes with its import/export daemon; here the data moves through the
node daemons' own calls: the source node dumps a disk with the OS export
script into a hidden staging directory of its export directory
(``export_dump``), the master copies the dump to the target node in chunks
(``export_read`` there, ``export_write`` here, both over the nodes' mutual
TLS), the target node writes ``config.ini`` and renames the staging
directory to the export's name (``export_finalize``).  An import runs the OS
import script with a dump as its standard input (``instance_import_disk``).
"""

from __future__ import annotations

import re
from typing import Any

from ganeti.core.rpcdefs.base import (
    RPC_TMO_1DAY,
    RPC_TMO_FAST,
    RPC_TMO_NORMAL,
    RpcArg,
    RpcCall,
    call,
    is_int,
)
from ganeti.core.rpcdefs.instances import _instance_arg

#: One path component: an export, staging or dump file name.
NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
#: A staging directory's name (``.x-<id>``: hidden from ``export_list``).
STAGING_RE = re.compile(r"\.x-[A-Za-z0-9-]{1,64}")
#: The largest chunk ``export_read`` answers (base64 makes it a third larger).
MAX_CHUNK = 8 * 1024 * 1024


def is_name(v: Any) -> bool:
    """A file or directory name inside the export directory (no path, no dot files)."""
    return isinstance(v, str) and len(v) <= 255 and NAME_RE.fullmatch(v) is not None


def is_staging(v: Any) -> bool:
    """A staging directory name."""
    return isinstance(v, str) and STAGING_RE.fullmatch(v) is not None


def _is_rel_path(v: Any) -> bool:
    # "<export or staging dir>/<file>" below the export directory
    if not isinstance(v, str) or v.count("/") != 1:
        return False
    top, name = v.split("/")
    return (is_name(top) or is_staging(top)) and is_name(name)


def _is_export_path(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 4096 and "\0" not in v


_DEBUG = RpcArg("debug", lambda v: is_int(v) and 0 <= v <= 2, "a debug level (0..2)")
_STAGING = RpcArg("staging", is_staging, "a staging directory name (.x-<id>)")
_DUMP = RpcArg("dump", _is_rel_path, "a dump path below the export directory "
               "(<export>/<file>)")

CALLS: list[RpcCall] = [
    call("export_list", RPC_TMO_FAST,
         "The names of the exports in the node's export directory."),
    call("export_info", RPC_TMO_FAST,
         "An export's config.ini, parsed ({section: {key: value}}).",
         RpcArg("path", _is_export_path, "an export directory (a name or a path below "
                "the export directory)")),
    call("export_remove", RPC_TMO_FAST,
         "Remove an export from the node.",
         RpcArg("export", is_name, "an export name")),
    call("export_dump", RPC_TMO_1DAY,
         "Run the OS export script for one disk of the instance into the staging "
         "directory; the dump's size in bytes.",
         _instance_arg(),
         RpcArg("index", lambda v: is_int(v) and 0 <= v < 16, "a disk index"),
         _STAGING, _DEBUG),
    call("export_read", RPC_TMO_NORMAL,
         "Up to length bytes of a dump at offset, base64-encoded ('' at the end).",
         _DUMP,
         RpcArg("offset", lambda v: is_int(v) and v >= 0, "an offset"),
         RpcArg("length", lambda v: is_int(v) and 0 < v <= MAX_CHUNK,
                f"a length (at most {MAX_CHUNK})")),
    call("export_write", RPC_TMO_NORMAL,
         "Write base64 data at offset into a file of a staging directory (offset 0 "
         "starts the file).",
         _STAGING,
         RpcArg("name", is_name, "a file name"),
         RpcArg("offset", lambda v: is_int(v) and v >= 0, "an offset"),
         RpcArg("data", lambda v: isinstance(v, str), "base64 data")),
    call("export_finalize", RPC_TMO_FAST,
         "Write config.ini into the staging directory and make it the export (replacing "
         "an older one).",
         _STAGING,
         RpcArg("export", is_name, "an export name"),
         RpcArg("config", lambda v: isinstance(v, str), "the text of config.ini")),
    call("export_abort", RPC_TMO_FAST,
         "Remove a staging directory (nothing if there is none).",
         _STAGING),
    call("instance_import_disk", RPC_TMO_1DAY,
         "Run the OS import script for one disk of the instance with a dump on its "
         "standard input.",
         _instance_arg(),
         RpcArg("index", lambda v: is_int(v) and 0 <= v < 16, "a disk index"),
         _DUMP, _DEBUG),
]

__all__ = ["CALLS", "MAX_CHUNK", "NAME_RE", "STAGING_RE", "is_name", "is_staging"]
