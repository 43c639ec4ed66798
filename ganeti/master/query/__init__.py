"""Queries answered by the master: the registry of queryable resources, their rows
and the config-based LUXI query methods."""

__all__ = [
    "jobquery",
    "nodequeries",
    "queries",
    "queryregistry",
]
