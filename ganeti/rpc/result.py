"""The outcome of one node RPC call on one node, and Ganeti's ways of acting on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ganeti.core.errors import OpExecError, OpPrereqError


@dataclass(frozen=True)
class RpcResult:
    """The outcome of one call on one node.

    ``success`` with ``payload`` when the node ran the call; otherwise
    ``fail_msg`` says why (node error, HTTP error, connection, timeout), and
    ``offline`` is set when the node was not contacted because it is offline.
    ``call`` names the call, so that errors can say what failed where.
    """

    node: str
    success: bool
    payload: Any = None
    fail_msg: str | None = None
    offline: bool = False
    call: str = ""

    def raise_if_failed(self, msg: str | None = None, prereq: bool = False,
                        ecode: str | None = None) -> None:
        """Raise if the call failed (Ganeti's ``RpcResult.Raise``).

        The message is ``"<msg>: <fail_msg>"``, or without ``msg``
        ``"Call '<call>' to node '<node>' has failed: <fail_msg>"``.  The
        error is OpPrereqError with ``prereq`` (checks before any change),
        else OpExecError; ``ecode`` is Ganeti's error code to carry.
        """
        if self.success:
            return
        reason = self.fail_msg or "failed"
        text = (f"{msg}: {reason}" if msg
                else f"Call '{self.call}' to node '{self.node}' has failed: {reason}")
        cls = OpPrereqError if prereq else OpExecError
        if ecode is not None:
            raise cls(text, ecode)
        raise cls(text)

    def warn(self, msg: str, feedback: Callable[[str], Any]) -> bool:
        """If the call failed, report ``"<msg>: <fail_msg>"`` through ``feedback``
        (Ganeti's ``RpcResult.Warn``); whether it failed."""
        if self.success:
            return False
        feedback(f"{msg}: {self.fail_msg or 'failed'}")
        return True
