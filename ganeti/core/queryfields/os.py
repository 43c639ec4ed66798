"""Query fields of operating systems (``Query("os")``, OP_OS_DIAGNOSE): Ganeti 3.0's
names, titles, kinds and docs (its ``_BuildOsFields``).

An OS's values come from the ``os_diagnose`` answers of the online
vm-capable nodes (merged as Ganeti's ``LUOsDiagnose`` merges them) and from
the cluster's ``hidden_os``, ``blacklisted_os``, ``os_hvp`` and ``osparams``.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import FieldDecl, decl_table

_OBJECT: dict[str, Any] = {"type": "object"}
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}

OS_FIELDS: dict[str, FieldDecl] = decl_table([
    FieldDecl("api_versions", "ApiVersions", c.QFT_OTHER, "Operating system API versions",
              schema={"type": "array", "items": {"type": "integer"}}),
    FieldDecl("blacklisted", "Blacklisted", c.QFT_BOOL,
              "Whether operating system is blacklisted"),
    FieldDecl("hidden", "Hidden", c.QFT_BOOL, "Whether operating system is hidden"),
    FieldDecl("name", "Name", c.QFT_TEXT, "Operating system name"),
    FieldDecl("node_status", "NodeStatus", c.QFT_OTHER, "Status from node", schema=_OBJECT),
    FieldDecl("os_hvp", "OsHypervisorParams", c.QFT_OTHER,
              "Operating system specific hypervisor parameters", schema=_OBJECT),
    FieldDecl("osparams", "OsParameters", c.QFT_OTHER,
              "Operating system specific parameters", schema=_OBJECT),
    FieldDecl("parameters", "Parameters", c.QFT_OTHER, "Operating system parameters",
              schema={"type": "array", "items": _STRINGS}),
    FieldDecl("trusted", "Trusted", c.QFT_BOOL, "Whether this OS is trusted"),
    FieldDecl("valid", "Valid", c.QFT_BOOL, "Whether operating system definition is valid"),
    FieldDecl("variants", "Variants", c.QFT_OTHER, "Operating system variants",
              schema=_STRINGS),
])

__all__ = ["OS_FIELDS"]
