"""The node-local implementations of the RPC calls, one module per domain.

Each handler takes a :class:`NodeContext` and the call's checked arguments and
returns a value or a Deferred.  Raising :class:`RPCFail` answers
``[false, message]``; arguments the handler itself finds invalid (a queue file
name, a file outside the upload list) also raise RPCFail, because the table's
shape check has already passed.
"""

__all__ = [
    "blockdev",
    "cluster",
    "confd_role",
    "configstore",
    "context",
    "delay",
    "files",
    "hooks",
    "info",
    "jobqueue",
    "nodechecks",
    "oob",
    "osdefs",
    "registry",
    "roles",
    "ssconf",
    "storage",
    "verify",
    "watcher",
]
