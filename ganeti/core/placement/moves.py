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
(``OP_INSTANCE_MIGRATE`` with ``target_node`` only for non-drbd instances --
``OP_INSTANCE_FAILOVER`` for a forthcoming instance --,
``OP_INSTANCE_REPLACE_DISKS`` in ``replace_new_secondary`` mode), key for key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ganeti.core.placement.nodestate import FAIL_INTERNAL, NO_NODE, Inst, NodeState

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


def failover_opcode(instance: str, target: str | None) -> dict[str, Any]:
    """``OP_INSTANCE_FAILOVER`` as hail writes it for a forthcoming instance, which is
    failed over rather than migrated (``target_node`` only when given)."""
    op: dict[str, Any] = {"OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": instance,
                          "shutdown_timeout": 120, "ignore_consistency": False}
    if target is not None:
        op["target_node"] = target
    op.update({"ignore_ipolicy": False, "cleanup": False})
    return op


def replace_opcode(instance: str, remote_node: str | None) -> dict[str, Any]:
    """``OP_INSTANCE_REPLACE_DISKS`` to a new secondary, as hail writes it."""
    return {"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": instance,
            "early_release": False, "ignore_ipolicy": False,
            "mode": "replace_new_secondary", "disks": [], "remote_node": remote_node}


_STEP_OPCODES: dict[str, Callable[[str, str | None], dict[str, Any]]] = {
    "migrate": migrate_opcode, "replace": replace_opcode}


def step_opcodes(instance: str, steps: tuple[Step, ...],
                 forthcoming: bool = False) -> list[dict[str, Any]]:
    """The opcodes of ``steps`` for ``instance`` (a forthcoming one fails over where a
    real one migrates, as hail's ``iMoveToJob``)."""
    table = {**_STEP_OPCODES, "migrate": failover_opcode} if forthcoming else _STEP_OPCODES
    return [table[action](instance, node) for action, node in steps]


def move_opcodes(instance: str, kind: str, target: str | None,
                 forthcoming: bool = False) -> list[dict[str, Any]]:
    """The opcodes of one move of ``instance`` (hail's ``iMoveToJob``)."""
    return step_opcodes(instance, MOVES[kind].steps(target), forthcoming)




# -- applying a move to the nodes (htools' applyMoveEx) -------------------------------------

#: Position -> the node as it stands (the state's, or an earlier step's).
Lookup = Callable[[int], NodeState]
#: The replaced nodes and the instance after the move, or the failure reason.
Outcome = tuple[dict[int, NodeState], Inst] | str


def _loc_score(p: NodeState, s: NodeState) -> int:
    return len(p.loc_tags & s.loc_tags)


def _failover(node: Lookup, inst: Inst, target: int, force: bool) -> Outcome:
    p, s = inst.pnode, inst.snode
    old_p, old_s = node(p), node(s)
    force_p = old_p.offline or force
    new_p = old_s.remove_sec(inst).add_pri(inst, force_p)
    if isinstance(new_p, str):
        return new_p
    moved = replace(inst, pnode=s, snode=p)
    new_s = old_p.remove_pri(inst).add_sec(moved, s, force_p, ignore_disks=old_p.offline)
    if isinstance(new_s, str):
        return new_s
    return {p: new_s, s: new_p}, moved


def _failover_to_any(node: Lookup, inst: Inst, target: int, force: bool) -> Outcome:
    p = inst.pnode
    old_p = node(p)
    new_t = node(target).add_pri(inst, old_p.offline or force)
    if isinstance(new_t, str):
        return new_t
    return {p: old_p.remove_pri(inst), target: new_t}, replace(inst, pnode=target)


def _replace_primary(node: Lookup, inst: Inst, target: int, force: bool) -> Outcome:
    p, s = inst.pnode, inst.snode
    old_p, tgt = node(p), node(target)
    int_s = node(s).remove_sec(inst)
    moved = replace(inst, pnode=target, loc_score=_loc_score(tgt, int_s))
    force_p = old_p.offline or force
    tmp_s = int_s.add_pri(moved, force_p)  # the secondary runs it during the moves
    if isinstance(tmp_s, str):
        return tmp_s
    new_p = tgt.add_pri(moved, force_p)
    if isinstance(new_p, str):
        return new_p
    new_s = tmp_s.remove_pri(moved).add_sec(moved, target, force_p)
    if isinstance(new_s, str):
        return new_s
    return {p: old_p.remove_pri(inst), s: new_s, target: new_p}, moved


def _replace_secondary(node: Lookup, inst: Inst, target: int, force: bool) -> Outcome:
    p, s = inst.pnode, inst.snode
    pnode, old_s, tgt = node(p), node(s), node(target)
    moved = replace(inst, snode=target, loc_score=_loc_score(pnode, tgt))
    new_s = tgt.add_sec(moved, p, old_s.offline or force)
    if isinstance(new_s, str):
        return new_s
    new_p = pnode.remove_pri(inst).add_pri(moved, True)
    if isinstance(new_p, str):  # pragma: no cover - forced, only hard limits on a node it left
        return new_p
    return {p: new_p, target: new_s, s: old_s.remove_sec(inst)}, moved


def _replace_and_failover(node: Lookup, inst: Inst, target: int, force: bool) -> Outcome:
    p, s = inst.pnode, inst.snode
    old_s, tgt = node(s), node(target)
    int_p = node(p).remove_pri(inst)
    moved = replace(inst, pnode=target, snode=p, loc_score=_loc_score(tgt, int_p))
    new_p = tgt.add_pri(moved, force)
    if isinstance(new_p, str):
        return new_p
    new_s = int_p.add_sec(moved, target, old_s.offline or force)
    if isinstance(new_s, str):
        return new_s
    return {target: new_p, p: new_s, s: old_s.remove_sec(inst)}, moved


def _failover_and_replace(node: Lookup, inst: Inst, target: int, force: bool) -> Outcome:
    p, s = inst.pnode, inst.snode
    old_p, tgt = node(p), node(target)
    int_s = node(s).remove_sec(inst)
    moved = replace(inst, pnode=s, snode=target, loc_score=_loc_score(int_s, tgt))
    force_p = old_p.offline or force
    new_p = int_s.add_pri(moved, force_p)
    if isinstance(new_p, str):
        return new_p
    new_s = tgt.add_sec(moved, s, force_p)
    if isinstance(new_s, str):
        return new_s
    return {target: new_s, s: new_p, p: old_p.remove_pri(inst)}, moved


_APPLY: dict[str, Callable[[Lookup, Inst, int, bool], Outcome]] = {
    FAILOVER: _failover, FAILOVER_TO_ANY: _failover_to_any,
    REPLACE_PRIMARY: _replace_primary, REPLACE_SECONDARY: _replace_secondary,
    REPLACE_AND_FAILOVER: _replace_and_failover, FAILOVER_AND_REPLACE: _failover_and_replace}
#: Kinds that need a secondary (drbd); the others move a one-node instance.
NEEDS_SECONDARY = frozenset({FAILOVER, REPLACE_PRIMARY, REPLACE_SECONDARY,
                             REPLACE_AND_FAILOVER, FAILOVER_AND_REPLACE})


def apply_move(node: Lookup, inst: Inst, kind: str, target: int = NO_NODE,
               force: bool = False) -> Outcome:
    """The nodes ``kind`` of move to ``target`` changes and the instance after it, or
    htools' failure reason; nothing is changed (htools' ``applyMoveEx``).

    ``force`` ignores the soft rules where htools does (it always does so for a
    move off an offline node)."""
    if (kind in NEEDS_SECONDARY) != (inst.snode != NO_NODE):
        return FAIL_INTERNAL
    if kind != FAILOVER and target in (NO_NODE, inst.pnode, inst.snode):
        return FAIL_INTERNAL
    return _APPLY[kind](node, inst, target, force)


# -- one-target moves split: what does not depend on the target, and the target ------------

#: The target node after the move, or why it cannot take the instance.
TargetSide = Callable[[NodeState], NodeState | str]
#: The changes of the instance's own nodes, and the target's side; or a failure reason.
Split = tuple[dict[int, NodeState], TargetSide] | str


def _split_failover_to_any(node: Lookup, inst: Inst, force: bool) -> Split:
    old_p = node(inst.pnode)
    force_p = old_p.offline or force
    return {inst.pnode: old_p.remove_pri(inst)}, lambda t: t.add_pri(inst, force_p)


def _split_replace_secondary(node: Lookup, inst: Inst, force: bool) -> Split:
    p, s = inst.pnode, inst.snode
    old_s = node(s)
    moved = replace(inst, snode=NO_NODE, loc_score=0)
    new_p = node(p).remove_pri(inst).add_pri(moved, True)
    if isinstance(new_p, str):  # pragma: no cover - forced, on a node it left
        return new_p
    force_s = old_s.offline or force
    return ({p: new_p, s: old_s.remove_sec(inst)},
            lambda t: t.add_sec(moved, p, force_s))


def _split_failover_and_replace(node: Lookup, inst: Inst, force: bool) -> Split:
    p, s = inst.pnode, inst.snode
    old_p = node(p)
    moved = replace(inst, pnode=s, snode=NO_NODE, loc_score=0)
    force_p = old_p.offline or force
    new_p = node(s).remove_sec(inst).add_pri(moved, force_p)
    if isinstance(new_p, str):
        return new_p
    return ({s: new_p, p: old_p.remove_pri(inst)},
            lambda t: t.add_sec(moved, s, force_p))


#: The kinds that move an instance to one target node, split (without location tags the
#: instance's own nodes change the same way whatever the target).
SPLIT: dict[str, Callable[[Lookup, Inst, bool], Split]] = {
    FAILOVER_TO_ANY: _split_failover_to_any, REPLACE_SECONDARY: _split_replace_secondary,
    FAILOVER_AND_REPLACE: _split_failover_and_replace}


__all__ = ["FAILOVER", "FAILOVER_AND_REPLACE", "FAILOVER_TO_ANY", "MOVES", "NEEDS_SECONDARY",
           "REPLACE_AND_FAILOVER", "REPLACE_PRIMARY", "REPLACE_SECONDARY", "SPLIT", "Lookup",
           "MoveKind", "Outcome", "Split", "Step", "TargetSide", "apply_move",
           "failover_opcode", "migrate_opcode",
           "move_opcodes", "replace_opcode", "step_opcodes"]
