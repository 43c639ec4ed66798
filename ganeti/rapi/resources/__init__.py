"""The RAPI v2 resources, one module per kind of object.

Each module declares its routes (``ROUTES``); :mod:`ganeti.rapi.routes`
puts them together in the table the server dispatches from.
"""

__all__ = ["cluster", "common", "filters", "groups", "jobs", "nodes", "query"]
