"""Instance moves as htools names them, and the opcodes that carry each one out.

A move changes the nodes of one placed instance (hbal's ``IMove``):
``failover`` swaps a drbd instance's primary and secondary; ``failover-to-any``
migrates an externally mirrored or shared instance to any node;
``replace-secondary`` gives a drbd instance a new secondary;
``replace-primary`` (failover, new secondary, failover) a new primary;
``replace-and-failover`` a new primary with the old primary as secondary;
``failover-and-replace`` the old secondary as primary and a new secondary.
:data:`MOVES` holds, per kind, the nodes after the move and the steps Ganeti
runs; :func:`move_opcodes` renders a move as the opcodes hail emits for it
(``OP_INSTANCE_MIGRATE`` with ``target_node`` only for non-drbd instances,
``OP_INSTANCE_REPLACE_DISKS`` in ``replace_new_secondary`` mode), key for key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FAILOVER = "failover"
FAILOVER_TO_ANY = "failover-to-any"
REPLACE_PRIMARY = "replace-primary"
REPLACE_SECONDARY = "replace-secondary"
REPLACE_AND_FAILOVER = "replace-and-failover"
FAILOVER_AND_REPLACE = "failover-and-replace"

#: A step: ("migrate", target or None) or ("replace", new secondary).
Step = tuple[str, str | None]


@dataclass(frozen=True)
class MoveKind:
    """One kind of move: where the instance ends and the steps that take it there."""

    name: str
    #: (primary, secondary, target) -> the new nodes, primary first.
    nodes: Callable[[str, str | None, str | None], tuple[str, ...]]
    #: target -> the steps, in order.
    steps: Callable[[str | None], tuple[Step, ...]]


def _both(primary: str, secondary: str | None) -> tuple[str, str]:
    if secondary is None:
        raise ValueError("this move needs an instance with a secondary node")
    return primary, secondary


def _target(target: str | None) -> str:
    if target is None:
        raise ValueError("this move needs a target node")
    return target


MOVES: dict[str, MoveKind] = {kind.name: kind for kind in (
    MoveKind(FAILOVER, lambda p, s, t: _both(p, s)[::-1], lambda t: (("migrate", None),)),
    MoveKind(FAILOVER_TO_ANY, lambda p, s, t: (_target(t),),
             lambda t: (("migrate", _target(t)),)),
    MoveKind(REPLACE_SECONDARY, lambda p, s, t: (_both(p, s)[0], _target(t)),
             lambda t: (("replace", _target(t)),)),
    MoveKind(REPLACE_PRIMARY, lambda p, s, t: (_target(t), _both(p, s)[1]),
             lambda t: (("migrate", None), ("replace", _target(t)), ("migrate", None))),
    MoveKind(REPLACE_AND_FAILOVER, lambda p, s, t: (_target(t), _both(p, s)[0]),
             lambda t: (("replace", _target(t)), ("migrate", None))),
    MoveKind(FAILOVER_AND_REPLACE, lambda p, s, t: (_both(p, s)[1], _target(t)),
             lambda t: (("migrate", None), ("replace", _target(t)))),
)}


def migrate_opcode(instance: str, target: str | None) -> dict[str, Any]:
    """``OP_INSTANCE_MIGRATE`` as hail writes it (``target_node`` only when given)."""
    op: dict[str, Any] = {"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": instance}
    if target is not None:
        op["target_node"] = target
    op.update({"allow_runtime_changes": False, "ignore_ipolicy": False, "cleanup": False,
               "allow_failover": True, "ignore_hvversions": True})
    return op


def replace_opcode(instance: str, remote_node: str | None) -> dict[str, Any]:
    """``OP_INSTANCE_REPLACE_DISKS`` to a new secondary, as hail writes it."""
    return {"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": instance,
            "early_release": False, "ignore_ipolicy": False,
            "mode": "replace_new_secondary", "disks": [], "remote_node": remote_node}


_STEP_OPCODES: dict[str, Callable[[str, str | None], dict[str, Any]]] = {
    "migrate": migrate_opcode, "replace": replace_opcode}


def step_opcodes(instance: str, steps: tuple[Step, ...]) -> list[dict[str, Any]]:
    """The opcodes of ``steps`` for ``instance``."""
    return [_STEP_OPCODES[action](instance, node) for action, node in steps]


def move_opcodes(instance: str, kind: str, target: str | None) -> list[dict[str, Any]]:
    """The opcodes of one move of ``instance`` (hail's ``iMoveToJob``)."""
    return step_opcodes(instance, MOVES[kind].steps(target))


__all__ = ["FAILOVER", "FAILOVER_AND_REPLACE", "FAILOVER_TO_ANY", "MOVES", "REPLACE_AND_FAILOVER",
           "REPLACE_PRIMARY", "REPLACE_SECONDARY", "MoveKind", "Step", "migrate_opcode",
           "move_opcodes", "replace_opcode", "step_opcodes"]
