"""How the verify units report: Ganeti's message lines, error codes and outcome.

A finding is a line of the job's log, in one of Ganeti's two forms::

    "  - ERROR: node node2.example.com: node setup error: ..."
    "  - ERROR:ENODESETUP:node:node2.example.com:node setup error: ..."

(the second with ``error_codes``).  A code listed in the opcode's
``ignore_errors`` is reported as a WARNING; only ERROR lines make the
unit's result false.  With ``debug_simulate_errors`` every conditional
check reports its finding as if it had failed, as in Ganeti.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import verifycodes
from ganeti.core.opcodes.views import OpClusterVerifyConfig, OpClusterVerifyGroup
from ganeti.core.verifycodes import ErrorCode
from ganeti.master.lu.base import LUContext, submitted_by

__all__ = ["VerifyReporter", "format_finding", "submitted_by"]


def format_finding(ecode: ErrorCode, item: str | None, message: str, level: str,
                   error_codes: bool) -> str:
    """One finding as Ganeti prints it (``item`` None prints as ``None``/nothing)."""
    if error_codes:
        return f"  - {level}:{ecode.code}:{ecode.kind}:{item}:{message}"
    return f"  - {level}: {ecode.kind} {item or ''}: {message}"


class VerifyReporter:
    """Mix-in for the verify units: ``bad`` becomes True on the first ERROR."""

    op: OpClusterVerifyConfig | OpClusterVerifyGroup
    ctx: LUContext
    bad: bool = False

    @property
    def uses_locks(self) -> bool:
        """Verification reads the committed config and takes no locks (as Ganeti's)."""
        return False

    def check_prereq(self) -> None:
        self.bad = False

    def step(self, text: str) -> None:
        """A ``* Verifying ...`` progress line."""
        self.ctx.feedback("message", f"* {text}")

    def note(self, text: str) -> None:
        """A line as it is (``  - NOTICE: ...``, hook output)."""
        self.ctx.feedback("message", text)

    def report(self, ecode: ErrorCode, item: str | None, messages: str | list[str],
               warning: bool = False) -> None:
        """Report one or more findings of ``ecode`` about ``item``."""
        if isinstance(messages, str):
            messages = [messages]
        if not messages:
            return
        level = verifycodes.WARNING if warning else verifycodes.ERROR
        if ecode.code in (self.op.ignore_errors or []):
            level = verifycodes.WARNING
        for message in messages:
            self.ctx.feedback("message", format_finding(ecode, item, message, level,
                                                        bool(self.op.error_codes)))
        if level == verifycodes.ERROR:
            self.bad = True

    def error_if(self, cond: Any, ecode: ErrorCode, item: str | None, message: str,
                 warning: bool = False) -> bool:
        """Report ``message`` if ``cond`` holds (or errors are simulated); ``bool(cond)``."""
        if cond or self.op.debug_simulate_errors:
            self.report(ecode, item, message, warning=warning)
        return bool(cond)

