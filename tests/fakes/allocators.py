"""Instance allocators for in-process masters (whose fake reactor spawns nothing).

:class:`InlineAllocators` answers the master's ``run_text`` as
:class:`ganeti.master.iallocator.runner.AllocatorRunner` does: a name mapped to
a Python function (the parsed input -> the answer, a dict or raw text) is
answered by it; any other name runs the program found on the search path (the
built-in ``ganeti-place`` by this Python) synchronously, with the runner's
error wording.  Every call is recorded with its input.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ganeti.core.errors import OpExecError
from ganeti.master.iallocator import runner

Program = Callable[[dict[str, Any]], Any]


class InlineAllocators:
    """Allocators answered in process (functions) or by real programs, synchronously."""

    def __init__(self, programs: Mapping[str, Program] | None = None,
                 search_path: Sequence[str] = runner.SEARCH_PATH, timeout: float = 120.0
                 ) -> None:
        self.programs = dict(programs or {})
        self.search_path = tuple(search_path)
        self.timeout = timeout
        self.calls: list[tuple[str, dict[str, Any], dict[str, str | None]]] = []

    def inputs(self, name: str) -> list[dict[str, Any]]:
        """The inputs allocator ``name`` was given, in order."""
        return [data for called, data, _ in self.calls if called == name]

    def exists(self, name: str) -> bool:
        return name in self.programs or runner.allocator_command(name, self.search_path) \
            is not None

    async def run_text(self, name: str, input_text: str,
                       params: Mapping[str, str | None] | None = None) -> str:
        self.calls.append((name, json.loads(input_text), dict(params or {})))
        program = self.programs.get(name)
        if program is not None:
            out = program(json.loads(input_text))
            return out if isinstance(out, str) else json.dumps(out)
        command = runner.allocator_command(name, self.search_path)
        if command is None:
            raise OpExecError(f"{runner.FAILURE}: iallocator module '{name}' not found in "
                              "the search path")
        fd, path = tempfile.mkstemp(prefix="ganeti-iallocator.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(input_text)
        try:
            done = subprocess.run([*command, path, *runner.allocator_arguments(params or {})],
                                  capture_output=True, timeout=self.timeout, check=False,
                                  env=dict(os.environ, LC_ALL="C"))
        finally:
            os.unlink(path)
        if done.returncode:
            output = (done.stdout + done.stderr).decode("utf-8", "replace")
            raise OpExecError(f"{runner.FAILURE}: iallocator module '{name}' failed: exited "
                              f"with exit code {done.returncode}, output '{output}'")
        return done.stdout.decode("utf-8")


def answer(result: Any, success: bool = True, info: str = "") -> dict[str, Any]:
    """An allocator's answer."""
    return {"success": success, "info": info, "result": result}


def always(result: Any, success: bool = True, info: str = "") -> Program:
    """A program that always gives the same answer."""
    return lambda _data: answer(result, success, info)


def emptiest(data: dict[str, Any]) -> dict[str, Any]:
    """A tiny allocator: the candidate nodes (``restrict-to-nodes`` or all online,
    undrained, vm_capable ones) with the most free memory, as many as required."""
    request = data["request"]
    allowed = request.get("restrict-to-nodes")
    nodes = [(n.get("free_memory", 0), name) for name, n in data["nodes"].items()
             if not n["offline"] and not n["drained"] and n.get("vm_capable", True)
             and (allowed is None or name in allowed)]
    need = request.get("required_nodes", 1)
    if len(nodes) < need:
        return answer([], False, "not enough nodes")
    nodes.sort(key=lambda p: (-p[0], p[1]))
    return answer([name for _, name in nodes[:need]])


def builtin(data: dict[str, Any]) -> str:
    """ganeti-place, in process (what the program answers, without starting it)."""
    from ganeti.cli import place
    from ganeti.core.placement import solve, wire
    return wire.render_answer(place.run(data, solve.Options()))
