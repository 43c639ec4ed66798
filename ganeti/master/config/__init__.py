"""The cluster config on the master: the config writer, replication to the nodes,
node roles and the jobs' temporary reservations."""

__all__ = [
    "configwriter",
    "nodes",
    "replication",
    "reservations",
]
