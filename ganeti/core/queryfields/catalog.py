"""Every query resource and its field declarations: the one list of what can be queried.

A resource is added here with its table (for instances, networks, OSes
and exports: a module beside :mod:`~ganeti.core.queryfields.nodes`); the
master then registers the getters and the row source
(:mod:`ganeti.master.query.queryregistry`), and LUXI ``Query``/``QueryFields``,
``OP_QUERY``, the command-line tools and the remote API follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.queryfields.base import FieldDecl
from ganeti.core.queryfields.exports import EXPORT_FIELDS
from ganeti.core.queryfields.filters import FILTER_FIELDS
from ganeti.core.queryfields.instances import INSTANCE_FIELDS
from ganeti.core.queryfields.jobs import JOB_FIELDS
from ganeti.core.queryfields.locks import LOCK_FIELDS
from ganeti.core.queryfields.networks import NETWORK_FIELDS
from ganeti.core.queryfields.nodes import GROUP_FIELDS, NODE_FIELDS
from ganeti.core.queryfields.os import OS_FIELDS

#: Field tables by resource name ("what" of Query / QueryFields).
RESOURCES: dict[str, Mapping[str, FieldDecl]] = {
    c.QR_JOB: JOB_FIELDS,
    c.QR_LOCK: LOCK_FIELDS,
    c.QR_NODE: NODE_FIELDS,
    c.QR_GROUP: GROUP_FIELDS,
    c.QR_FILTER: FILTER_FIELDS,
    c.QR_OS: OS_FIELDS,
    c.QR_NETWORK: NETWORK_FIELDS,
    c.QR_INSTANCE: INSTANCE_FIELDS,
    c.QR_EXPORT: EXPORT_FIELDS,
}

#: What ``OP_QUERY`` and ``OP_QUERY_FIELDS`` take (the job filter rules are
#: queried through LUXI only, as in Ganeti).
VIA_OPCODE: tuple[str, ...] = tuple(sorted(set(RESOURCES) & c.QR_VIA_OPCODE))


def resource_fields(what: Any) -> Mapping[str, FieldDecl]:
    """The field table of a resource; unknown resources are ``wrong_input``."""
    if not isinstance(what, str) or what not in RESOURCES:
        known = ", ".join(sorted(RESOURCES))
        raise OpPrereqError(f"Unknown query resource {what!r:.40} (known: {known})",
                            ECODE_INVAL)
    return RESOURCES[what]


__all__ = ["RESOURCES", "VIA_OPCODE", "resource_fields"]
