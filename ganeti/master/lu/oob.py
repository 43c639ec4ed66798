"""OP_OOB_COMMAND: out-of-band power and health commands (Ganeti's LUOobCommand).

A node supports out-of-band management when its (merged) node parameter
``oob_program`` is set.  The master's own node daemon runs
``<oob_program> <command> <node name>`` (RPC ``run_oob``) with the opcode's
timeout; the program answers JSON.  The result is, per node in name order,
``[[RS_NORMAL, name], [status, payload]]``: ``RS_UNAVAIL`` for a node
without a program, ``RS_NODATA`` when the program failed or answered
something invalid (a warning says why).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import task

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, ECODE_NOENT, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.opcodes.views import OpOobCommand
from ganeti.core.query import nice_sort_key
from ganeti.core.rpcdefs import is_wire_path
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE
from ganeti.master.lu.base import ALL_SET, LogicalUnit
from ganeti.master.query.nodequeries import merged_ndparams

#: Commands never run for the master (it would switch itself off).
_SKIP_MASTER = (c.OOB_POWER_OFF, c.OOB_POWER_CYCLE)


def oob_program(cfg: ConfigData, node: Node) -> str:
    """The node's out-of-band program, or "" if it does not support out-of-band."""
    return str(merged_ndparams(cfg, node).get(c.ND_OOB_PROGRAM) or "")


def check_payload(command: str, payload: Any) -> list[str]:
    """What is wrong with a program's answer to ``command`` (Ganeti's checks)."""
    errs = []
    if command == c.OOB_HEALTH:
        if not isinstance(payload, list):
            errs.append(f"command 'health' is expected to return a list but got "
                        f"{type(payload).__name__}")
        else:
            for entry in payload:
                if not (isinstance(entry, list) and len(entry) == 2):
                    errs.append(f"health item {entry!r} is not an [item, status] pair")
                elif entry[1] not in c.OOB_STATUSES:
                    errs.append(f"health item '{entry[0]}' has invalid status '{entry[1]}'")
    elif command == c.OOB_POWER_STATUS:
        if not isinstance(payload, dict) or not isinstance(
                payload.get(c.OOB_POWER_STATUS_POWERED), bool):
            errs.append(f"power-status is expected to return a dict with a boolean "
                        f"'{c.OOB_POWER_STATUS_POWERED}' but got {type(payload).__name__}")
    elif payload is not None:
        errs.append(f"{command} is expected to not return payload but got '{payload}'")
    return errs


class LUOobCommand(LogicalUnit):
    """OP_OOB_COMMAND: run the out-of-band program for the named nodes (all by default)."""

    OP_ID = "OP_OOB_COMMAND"
    REQ_BGL = False
    op: OpOobCommand

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        names = list(self.op.node_uuids or self.op.node_names or [])
        found = [nodesmod.find_node(cfg, name) for name in names]
        self.wanted = [node.uuid for node in found]
        if self.op.node_names and found:  # Ganeti's: recorded in the job's opcode
            self.record_op(node_uuids=self.wanted, node_names=[n.name for n in found])
        self.needed_locks[LEVEL_NODE] = sorted(set(self.wanted)) if self.wanted else ALL_SET

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        command = self.op.command
        master = cfg.nodes[cfg.cluster.master_node]
        if self.wanted:
            uuids = list(dict.fromkeys(self.wanted))
            if command in _SKIP_MASTER and master.uuid in uuids:
                program = oob_program(cfg, master)
                more = (f"run '{program} {command} {master.name}' if you want to operate on "
                        "the master regardless" if program
                        else "it does not support out-of-band operations")
                raise OpPrereqError(f"Operating on the master node {master.name} is not "
                                    f"allowed for {command}; {more}", ECODE_INVAL)
        else:
            uuids = [u for u in cfg.nodes if not (command in _SKIP_MASTER and u == master.uuid)]
            self.record_op(node_uuids=uuids)  # Ganeti's: every node it acts on
        self.nodes: list[Node] = []
        for uuid in uuids:
            node = cfg.nodes.get(uuid)
            if node is None:
                raise OpPrereqError(f"Node {uuid} not found", ECODE_NOENT)
            if (command == c.OOB_POWER_OFF and not self.op.ignore_status
                    and not node.offline):
                raise OpPrereqError(f"Cannot power off node {node.name} because it is not "
                                    "marked offline", ECODE_STATE)
            self.nodes.append(node)
        self.nodes.sort(key=lambda n: nice_sort_key(n.name))
        self.master = master

    def _warn(self, text: str) -> None:
        self.ctx.feedback("message", f" - WARNING: {text}")

    async def _run(self, node: Node, program: str) -> tuple[int, Any]:
        command = self.op.command
        timeout = int(self.op.timeout)
        if not is_wire_path(program):
            self._warn(f"Out-of-band RPC failed on node '{node.name}': the out-of-band "
                       f"program '{program}' is not an absolute path")
            return c.RS_NODATA, None
        # the table's timeout is the program's plus a margin (ganeti/core/rpcdefs/oob.py)
        result = await self.ctx.rpc().call_one(
            self.master, "run_oob", [program, command, node.name, timeout])
        if result.warn(f"Out-of-band RPC failed on node '{node.name}'", self._warn):
            return c.RS_NODATA, None
        errs = check_payload(command, result.payload)
        if errs:
            self._warn(f"Payload returned by node '{node.name}' is not valid: Check of "
                       f"out-of-band payload failed due to {', '.join(errs)}")
            return c.RS_NODATA, None
        if command == c.OOB_HEALTH:
            for item, status in result.payload:
                if status in (c.OOB_STATUS_WARNING, c.OOB_STATUS_CRITICAL):
                    self._warn(f"Item '{item}' on node '{node.name}' has status '{status}'")
        elif command in (c.OOB_POWER_ON, c.OOB_POWER_OFF):
            await self._record_power(node, command == c.OOB_POWER_ON)
        return c.RS_NORMAL, result.payload

    async def _record_power(self, node: Node, powered: bool) -> None:
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            target = cfg.nodes.get(node.uuid)
            if target is None:
                raise OpExecError(f"Node {node.name} disappeared from the configuration")
            target.powered = powered
            target.serial_no += 1
            target.mtime = now
            cfg.cluster.serial_no += 1
            cfg.cluster.mtime = now

        await self.update_config(change)

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        command = self.op.command
        delay = float(self.op.power_delay)
        answer: list[list[list[Any]]] = []
        for index, node in enumerate(self.nodes):
            entry: list[list[Any]] = [[c.RS_NORMAL, node.name]]
            answer.append(entry)
            program = oob_program(cfg, node)
            if not program:
                entry.append([c.RS_UNAVAIL, None])
                continue
            status, payload = await self._run(node, program)
            entry.append([status, payload])
            if (status == c.RS_NORMAL and command == c.OOB_POWER_ON
                    and index < len(self.nodes) - 1 and delay > 0):
                await task.deferLater(self.ctx.clock, delay, lambda: None)
        return answer
