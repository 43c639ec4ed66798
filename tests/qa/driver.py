"""Run Ganeti's QA test functions one by one against a running cluster, and record
each outcome; started by run.py inside the QA host's namespaces.

Runs under the machine's ``/usr/bin/python3`` with Debian's Ganeti 3.0 modules and
QA suite on ``PYTHONPATH`` (never this project's ``ganeti`` package).  Ganeti's
``ganeti-qa.py`` stops at the first failure; here every test function is called on
its own (in ganeti-qa.py's order, see plan.py), a failure is recorded with the first
lines of its output, and what a failed test may have left behind is cleaned up
(:mod:`cleanup`) before the next one, so that one failure hides nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cleanup
import ganeti.rapi.client
import plan
from qa import colors, qa_config, qa_error, qa_node, qa_rapi


class TestTimeout(Exception):
    """A test ran longer than --timeout."""


def _alarm(signum: int, frame: Any) -> None:
    raise TestTimeout("timed out")


#: Lines of a test's output that say what went wrong.
_TELLING = ("ERROR", "Failure:", "Error:", "error:", "Traceback", "not found")


def _telling(output: str, limit: int = 8) -> list[str]:
    """The first lines of a failure: the telling ones (errors), then the last ones."""
    lines = [ln for ln in output.splitlines() if ln.strip()]
    telling = [ln for ln in lines if any(t in ln for t in _TELLING)][:limit // 2]
    rest = [ln for ln in lines[-limit:] if ln not in telling]
    return telling + rest[-(limit - len(telling)):]


def _function(name: str) -> Any:
    module, func = name.split(".")
    # ganeti-qa.py's own modules are qa.qa_*; a second copy (qa_*) would hold other
    # module state (e.g. qa_rapi's client).
    return getattr(importlib.import_module("qa." + module), func)


class Runner:
    """Runs entries, writes results.json after each."""

    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.selected = set(opts.tests)
        self.results: list[dict[str, Any]] = []
        os.makedirs(opts.logs, exist_ok=True)

    def wanted(self, entry: plan.Entry) -> bool:
        """Whether --tests selects ``entry``."""
        return bool({entry.id, entry.config_name, entry.function.split(".")[-1]}
                    & self.selected) or "all" in self.selected

    def record(self, test_id: str, status: str, seconds: float = 0.0,
               detail: list[str] | None = None) -> None:
        """Add one outcome and rewrite the results file."""
        self.results.append({"id": test_id, "status": status, "seconds": round(seconds, 1),
                             "detail": detail or []})
        with open(self.opts.results, "w", encoding="utf-8") as f:
            json.dump(self.results, f, indent=1)
        line = f"{status.upper():8} {test_id} ({seconds:.1f}s)"
        if detail:
            line += "\n         " + (detail[0][:200])
        print(line, file=sys.__stdout__, flush=True)

    def call(self, test_id: str, fn: Any, args: list[Any]) -> tuple[bool, Any]:
        """Call ``fn(*args)`` with its output in its own log file; record it."""
        safe = test_id.replace("/", "_").replace("(", "_").replace(")", "")
        log_path = os.path.join(self.opts.logs, f"{len(self.results) + 1:03d}-{safe}.log")
        buf = io.StringIO()
        start = time.monotonic()
        ok, value, detail = True, None, None
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(self.opts.timeout)
        try:
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                value = fn(*args)
        except Exception as exc:  # every failure of a test is a result
            ok = False
            first = f"{type(exc).__name__}: {exc}".strip().splitlines() or ["(no message)"]
            detail = first[:3] + ["  | " + ln[:300] for ln in _telling(buf.getvalue())]
            buf.write("\n" + traceback.format_exc())
        finally:
            signal.alarm(0)
            with open(log_path, "w", encoding="utf-8") as f:
                f.write(buf.getvalue())
        self.record(test_id, "pass" if ok else "fail", time.monotonic() - start, detail)
        return ok, value

    def quiet(self, fn: Any, *args: Any) -> Any:
        """Call a helper (setup, cleanup) with its output in the setup log."""
        with open(os.path.join(self.opts.logs, "000-setup-and-cleanup.log"), "a",
                  encoding="utf-8") as f, contextlib.redirect_stdout(f), \
                contextlib.redirect_stderr(f):
            return fn(*args)


def run_cluster_entry(runner: Runner, entry: plan.Entry, ctx: dict[str, Any]) -> None:
    """One test without an instance."""
    nodes = qa_config.AcquireManyNodes(1, exclude=qa_config.GetMasterNode())
    ctx["pnode"] = nodes[0]
    snapshot = cleanup.bookkeeping()
    try:
        args = [ctx[a] for a in entry.args]
        ok, _ = runner.call(entry.id, _function(entry.function), args)
    finally:
        cleanup.restore_bookkeeping(snapshot)
        qa_config.ReleaseManyNodes(nodes)
    if not ok:
        runner.quiet(cleanup.after_failure, ctx)


def run_instance_block(runner: Runner, config_name: str, template: str, create: str,
                       ctx: dict[str, Any]) -> None:
    """Create an instance of ``template``, run the selected instance tests on it,
    remove it."""
    entries = [e for e in plan.INSTANCE if runner.wanted(e)]
    inodes = qa_config.AcquireManyNodes(1)
    block = {**ctx, "inodes": inodes, "pnode_of_inst": inodes[0]}
    block["othernodes"] = qa_config.AcquireManyNodes(1, exclude=inodes)
    block["othernode"] = block["othernodes"][0]
    try:
        ok, inst = runner.call(f"{template}/{create.split('.')[-1]}", _function(create),
                               [inodes])
        if not ok or inst is None:
            for e in entries:
                runner.record(f"{template}/{e.id}", "not run",
                              detail=["the instance could not be created"])
            runner.quiet(cleanup.after_failure, ctx)
            return
        block["inst"], block["inst_name"] = inst, inst.name
        ctx["fixtures"] = {inst.name}
        for e in entries:
            test_id = f"{template}/{e.id}"
            problem = runner.quiet(cleanup.prepare_instance, inst, e.state)
            if problem:
                runner.record(test_id, "not run", detail=[problem])
                continue
            if "export_name" in e.args and not block.get("export_name"):
                runner.record(test_id, "not run", detail=["no export to import"])
                continue
            extra = []
            if "other_name" in e.args or "newinst" in e.args:
                other = qa_config.AcquireInstance()
                extra.append(other)
                block["other_name"], block["newinst"] = other.name, other
            snapshot = cleanup.bookkeeping()
            try:
                ok, value = runner.call(test_id, _function(e.function),
                                        [block[a] for a in e.args])
            finally:
                cleanup.restore_bookkeeping(snapshot)
                for other in extra:
                    if other.used:
                        other.Release()
            if e.function.endswith(".TestInstanceExport") and ok:
                block["export_name"] = value
            if not ok:
                runner.quiet(cleanup.after_failure, ctx)
        runner.quiet(cleanup.prepare_instance, inst, None)
        runner.call(f"{template}/TestInstanceRemove",
                    _function("qa_instance.TestInstanceRemove"), [inst])
    finally:
        ctx["fixtures"] = set()
        if block.get("inst") is not None and block["inst"].used:
            block["inst"].Release()
        qa_config.ReleaseManyNodes(inodes + block["othernodes"])
        runner.quiet(cleanup.after_failure, ctx)


def setup(runner: Runner) -> dict[str, Any]:
    """What ganeti-qa.py's SetupCluster does for a cluster that exists already."""
    qa_config.Load(runner.opts.config)
    qa_config.SetExclusiveStorage(False)
    colors.check_for_colors()
    runner.quiet(qa_rapi.SetupRapi)
    qa_node.MarkNodeAddedAll()
    ctx: dict[str, Any] = {"rapi_getos": qa_rapi.GetOperatingSystems,
                           "default_group": "default", "fixtures": set()}
    runner.quiet(cleanup.capture_baseline, ctx)
    return ctx


def main() -> int:
    """Parse the options, set up, run every selected test."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--config", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--logs", required=True)
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--tests", type=lambda s: s.split(","), default=plan.DEFAULT)
    opts = p.parse_args()
    return int(ganeti.rapi.client.UsesRapiClient(run_all)(Runner(opts)))


def run_all(runner: Runner) -> int:
    """Set up, then run every selected test in plan order."""
    try:
        ctx = setup(runner)
    except (Exception, qa_error.Error) as exc:
        runner.record("setup", "fail", detail=[f"{type(exc).__name__}: {exc}"])
        return 1
    for entry in plan.CLUSTER:
        if runner.wanted(entry):
            run_cluster_entry(runner, entry, ctx)
    for config_name, template, create in plan.TEMPLATES:
        if (config_name in runner.selected or "all" in runner.selected) and \
                qa_config.IsTemplateSupported(template):
            run_instance_block(runner, config_name, template, create, ctx)
    for entry in plan.LATE:
        if runner.wanted(entry):
            run_cluster_entry(runner, entry, ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
