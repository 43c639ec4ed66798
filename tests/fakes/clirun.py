"""Running gnt-* tools in process against an :class:`InProcessMaster`."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from tests.fakes.masterd import InProcessMaster


@dataclass
class Run:
    """What one tool invocation did."""

    code: int
    out: str
    err: str


def delay_op(duration: float = 0.0, **params: Any) -> dict[str, Any]:
    """An OP_TEST_DELAY opcode."""
    op: dict[str, Any] = {"OP_ID": "OP_TEST_DELAY", "duration": duration}
    op.update(params)
    return op


class MasterCliTestCase(SynchronousTestCase):
    """A test case with a whole master daemon on a fake clock and a way to run tools."""

    def setUp(self) -> None:
        self.master = InProcessMaster(self.mktemp())
        self.addCleanup(self.master.stop)
        self.environ = self.master.paths.env()
        self.clients: list[Any] = []

    def _factory(self, paths: Any) -> Any:
        client = self.master.client()
        self.clients.append(client)
        return client

    def run_tool(self, module: Any, *argv: str) -> Run:
        """Run ``module.main(argv)`` with captured output; what it did."""
        out, err = io.StringIO(), io.StringIO()
        code = module.main(list(argv), stdout=out, stderr=err, environ=self.environ,
                           luxi_factory=self._factory)
        return Run(code, out.getvalue(), err.getvalue())

    def submit(self, *ops: dict[str, Any]) -> int:
        """Submit a job directly; its id."""
        return self.master.submit(*ops)

    def job_field(self, job_id: int, name: str) -> Any:
        """One field of a job, as QueryJobs answers it."""
        (row,) = self.master.client().call("QueryJobs", [job_id], [name])
        return None if row is None else row[0]

    def advance(self, seconds: float, step: float = 0.5) -> None:
        """Let simulated time pass (in steps, so timers set by timers fire too)."""
        end = self.master.reactor.seconds() + seconds
        while self.master.reactor.seconds() < end:
            self.master.reactor.advance(min(step, end - self.master.reactor.seconds()))

    def methods(self) -> list[str]:
        """The LUXI methods called so far, in order."""
        return [method for method, _ in self.master.calls]
