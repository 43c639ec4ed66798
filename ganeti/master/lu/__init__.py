"""Logical units: the code behind each opcode, one module per domain.

:mod:`.base` holds the contract every LU follows (docs/design/lu-contract.md),
:mod:`.registry` the table from OP_ID to LU class, :mod:`.hooks` the hooks
runner.
"""

__all__ = [
    "base",
    "cluster",
    "group",
    "hooks",
    "node",
    "node_modify",
    "oob",
    "query",
    "registry",
    "tags",
    "test",
    "testsocket",
    "verify",
    "verify_disks",
    "verify_group",
    "verify_report",
]
