"""ganeti-masterd: the only writer of the cluster config, serving LUXI."""

__all__ = [
    "config",
    "jobs",
    "locking",
    "lu",
    "query",
    "service",
    "tap",
    "watcherpause",
    "watchersvc",
]
