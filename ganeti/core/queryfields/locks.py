"""The fields of query resource "lock" (Ganeti 3.0's lock monitor)."""

from __future__ import annotations

from ganeti.core import constants as c
from ganeti.core.queryfields.base import FieldDecl, decl_table

LOCK_FIELDS: dict[str, FieldDecl] = decl_table([
    FieldDecl("name", "Name", c.QFT_OTHER, "Lock name"),
    FieldDecl("mode", "Mode", c.QFT_OTHER,
              "Mode in which the lock is currently acquired (exclusive or shared)"),
    FieldDecl("owner", "Owner", c.QFT_OTHER, "Current lock owner(s)"),
    FieldDecl("pending", "Pending", c.QFT_OTHER, "Jobs waiting for the lock"),
])

__all__ = ["LOCK_FIELDS"]
