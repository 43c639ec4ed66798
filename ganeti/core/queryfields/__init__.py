"""Query field declarations, one module per resource, declared once.

:mod:`~ganeti.core.queryfields.base` defines a declaration (name, title,
kind, doc, whether it needs live data, the JSON schema of its values);
:mod:`~ganeti.core.queryfields.catalog` lists the resources and their
tables.  Getters are not here: the master binds them by name
(:func:`ganeti.core.query.bind`).
"""

__all__ = ["base", "catalog", "filters", "jobs", "locks", "nodes"]
