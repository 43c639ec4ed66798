"""ganeti-twisted: a Ganeti-compatible cluster virtualization manager on Twisted."""

__all__ = [
    "cli",
    "confd",
    "core",
    "daemon",
    "feeds",
    "luxi",
    "master",
    "noded",
    "rapi",
    "rpc",
    "version",
]
