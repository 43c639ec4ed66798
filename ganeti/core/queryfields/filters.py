"""The fields of query resource "filter" (job filter rules, ``gnt-filter list-fields``)."""

from __future__ import annotations

from ganeti.core import constants as c
from ganeti.core import jobfilters
from ganeti.core.queryfields.base import FieldDecl, decl_table

_TITLES_DOCS = {
    "uuid": ("UUID", "Filter ID"),
    "watermark": ("Watermark", "Highest job ID used at the time when the filter was added"),
    "priority": ("Priority", "Filter priority"),
    "predicates": ("Predicates", "List of filter predicates"),
    "action": ("Action", "Filter action"),
    "reason_trail": ("ReasonTrail", "Reason why this filter was added"),
}

#: In the order of a rule's fields (:data:`ganeti.core.jobfilters.RULE_FIELDS`).
FILTER_FIELDS: dict[str, FieldDecl] = decl_table(
    FieldDecl(name, _TITLES_DOCS[name][0], c.QFT_OTHER, _TITLES_DOCS[name][1])
    for name in jobfilters.RULE_FIELDS)

__all__ = ["FILTER_FIELDS"]
