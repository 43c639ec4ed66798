"""Hooks: the facts shared by the master (who builds the environment) and the
node daemons (who run the scripts); design: docs/design/hooks.md.

A logical unit with a hooks path (``HPATH``, e.g. ``group-add``) runs, on the
nodes it names, the executables in ``HOOKS_BASE_DIR/<hpath>-<phase>.d/``
(``CONF_DIR/hooks``, Ganeti's ``/etc/ganeti/hooks``) before (``pre``) and
after (``post``) its work.  The values below are Ganeti 3.0's, so scripts
written for Ganeti run unchanged.
"""

from __future__ import annotations

import re
from typing import Any

#: The version of the hooks environment (``GANETI_HOOKS_VERSION``).
HOOKS_VERSION = 2
#: ``PATH`` of every hook script.
HOOKS_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"

PHASE_PRE = "pre"
PHASE_POST = "post"
PHASES = (PHASE_PRE, PHASE_POST)

#: Per-script outcome in a ``hooks_runner`` answer: skipped, failed, succeeded.
HKR_SKIP = 0
HKR_FAIL = 1
HKR_SUCCESS = 2
HKR_ALL = (HKR_SKIP, HKR_FAIL, HKR_SUCCESS)

#: ``GANETI_OBJECT_TYPE`` of a unit's hooks.
HTYPE_CLUSTER = "CLUSTER"
HTYPE_GROUP = "GROUP"
HTYPE_INSTANCE = "INSTANCE"
HTYPE_NETWORK = "NETWORK"
HTYPE_NODE = "NODE"

#: The hooks path run on the master after every opcode that changed the config.
HOOKS_NAME_CFGUPDATE = "config-update"

#: A script runs only if its name matches this whole (run-parts' rule, Ganeti's
#: EXT_PLUGIN_MASK) and it is an executable regular file.
SCRIPT_NAME_RE = re.compile(r"[a-zA-Z0-9_-]+")
#: A hooks path: Ganeti's are lower-case words joined by dashes.
HPATH_RE = re.compile(r"[a-z0-9][a-z0-9-]*")
#: Environment names: ``GANETI_`` and at least one character, no ``=`` and no
#: control character (node names may appear in them, dots included).
ENV_NAME_RE = re.compile(r"GANETI_[^=\x00-\x1f\x7f]+")

#: Most variables and bytes one environment may hold.
MAX_ENV_VARS = 10000
MAX_ENV_BYTES = 1 << 20


def is_hpath(value: Any) -> bool:
    """Whether ``value`` is a hooks path (``group-add``, ``cluster-verify``, ...)."""
    return isinstance(value, str) and len(value) <= 64 and HPATH_RE.fullmatch(value) is not None


def is_phase(value: Any) -> bool:
    """``pre`` or ``post``."""
    return value in PHASES


def env_problem(env: Any) -> str | None:
    """Why ``env`` is not a hooks environment, or None if it is one.

    An environment maps ``GANETI_*`` names (and ``PATH``, which Ganeti's
    master sends too) to strings without NUL bytes.
    """
    if not isinstance(env, dict):
        return "the environment must be an object"
    if len(env) > MAX_ENV_VARS:
        return f"more than {MAX_ENV_VARS} variables"
    size = 0
    for name, value in env.items():
        if not isinstance(name, str) or not (name == "PATH" or ENV_NAME_RE.fullmatch(name)):
            return f"variable name {str(name)[:80]!r} is not GANETI_* or PATH"
        if not isinstance(value, str) or "\x00" in value:
            return f"the value of {name} must be a string without NUL bytes"
        size += len(name) + len(value) + 2
    if size > MAX_ENV_BYTES:
        return f"the environment is larger than {MAX_ENV_BYTES} bytes"
    return None


def is_env(value: Any) -> bool:
    """Whether ``value`` is a valid hooks environment (see :func:`env_problem`)."""
    return env_problem(value) is None


def check_results(value: Any) -> list[tuple[str, int, str]]:
    """A node's ``hooks_runner`` answer as ``(script, status, output)`` tuples.

    Raises ValueError if it is not a list of ``[string, HKR_*, string]``.
    """
    if not isinstance(value, list):
        raise ValueError("not a list")
    out: list[tuple[str, int, str]] = []
    for entry in value:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 3
                and isinstance(entry[0], str) and entry[1] in HKR_ALL
                and not isinstance(entry[1], bool) and isinstance(entry[2], str)):
            raise ValueError(f"bad entry {str(entry)[:80]}")
        out.append((entry[0], int(entry[1]), entry[2]))
    return out
