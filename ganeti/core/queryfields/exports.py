"""Query fields of instance exports (``Query("export")``, ``gnt-backup list``):
Ganeti 3.0's names, titles, kinds and docs (its ``_BuildExportFields``).

A row is one export on one node; a node whose ``export_list`` failed gives one
row with its name and no data for ``export``.
"""

from __future__ import annotations

from ganeti.core import constants as c
from ganeti.core.queryfields.base import FieldDecl, decl_table

EXPORT_FIELDS: dict[str, FieldDecl] = decl_table([
    FieldDecl("node", "Node", c.QFT_TEXT, "Node name", hostname=True),
    FieldDecl("export", "Export", c.QFT_TEXT, "Export name"),
])

__all__ = ["EXPORT_FIELDS"]
