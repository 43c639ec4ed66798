"""Put the cluster (and QA's own bookkeeping) back as it was before a test, after
that test failed halfway; bring the block's instance into the state the next test
expects.  Run by driver.py, with Debian's Ganeti modules and the QA suite.

What a failed QA test may leave behind (see /work/shared/guides/ganeti-qa-notes.md):
queued jobs, the queue drain flag, a paused watcher, changed cluster parameters
(disk templates, storage directories, ``max-running-jobs``), offline, drained or
demoted nodes, extra groups, networks, filters and instances, edits of
``/etc/hosts``, a stale copy of the RAPI certificate, and QA's node and instance
bookkeeping (use counts, "added", "used").
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import qalib
from qa import qa_config, qa_rapi, qa_utils

_baseline: dict[str, Any] = {}


def _out(cmd: list[str]) -> str:
    """The output of ``cmd`` on the master ("" if it fails)."""
    rcode, out, _ = qa_utils.AssertCommand(cmd, fail=None, log_cmd=True)
    return out if rcode == 0 else ""


def _run(cmd: list[str]) -> bool:
    rcode, _, _ = qa_utils.AssertCommand(cmd, fail=None)
    return rcode == 0


def _rows(cmd: list[str]) -> list[list[str]]:
    return [line.split("|") for line in _out(cmd + ["--no-headers", "--separator=|"])
            .splitlines() if line.strip()]


def capture_baseline(ctx: dict[str, Any]) -> None:
    """Remember what the cleanup restores: the cluster's parameters and /etc/hosts."""
    info = qa_utils.GetObjectInfo(["gnt-cluster", "info"])
    params = info.get("Cluster parameters", {})
    _baseline["templates"] = ",".join(
        t.strip() for t in str(params.get("enabled disk templates", "")).split(","))
    _baseline["file_dir"] = params.get("file storage path", "")
    _baseline["shared_dir"] = params.get("shared file storage path", "")
    _baseline["max_running"] = params.get(
        "maximal number of jobs running simultaneously", 20)
    _baseline["pool_size"] = params.get("candidate pool size", 10)
    with open(qalib.load_state()["qa_hosts"], encoding="utf-8") as f:
        _baseline["hosts"] = f.read()
    _baseline["nodes"] = [n.primary for n in qa_config.GetAllNodes()]


def bookkeeping() -> dict[str, Any]:
    """QA's node and instance bookkeeping, to restore after a test."""
    cfg = qa_config.GetConfig()
    return {"nodes": [(n, n._use_count, n._added) for n in cfg["nodes"]],
            "instances": [(i, i._used, i._disk_template) for i in cfg["instances"]]}


def restore_bookkeeping(snapshot: dict[str, Any]) -> None:
    """Undo what a test changed in QA's bookkeeping (e.g. left nodes acquired)."""
    for node, count, added in snapshot["nodes"]:
        node._use_count, node._added = count, added
    for inst, used, template in snapshot["instances"]:
        inst._used, inst._disk_template = used, template


def _restore_hosts() -> None:
    state = qalib.load_state()
    with open(state["qa_hosts"], encoding="utf-8") as f:
        if f.read() == _baseline["hosts"]:
            return
    with open(state["qa_hosts"], "w", encoding="utf-8") as f:
        f.write(_baseline["hosts"])
    qalib.sync_hosts(state)


def after_failure(ctx: dict[str, Any]) -> None:
    """Bring the cluster back to the baseline, leaving the block's instance alone."""
    _restore_hosts()
    # QA blocks the queue with long delay jobs (e.g. "gnt-debug delay --submit 300"
    # before a job it inspects): a failed test leaves them running.
    for job_id, status, summary in _rows(["gnt-job", "list", "-o", "id,status,summary"]):
        if status in ("queued", "waiting"):
            _run(["gnt-job", "cancel", job_id])
        elif status == "running" and "TEST_DELAY" in summary:
            _run(["gnt-job", "cancel", "--kill", "--yes-do-it", job_id])
    _run(["gnt-cluster", "queue", "undrain"])
    _run(["gnt-cluster", "watcher", "continue"])
    _run(["gnt-cluster", "modify",
          f"--enabled-disk-templates={_baseline['templates']}",
          f"--ipolicy-disk-templates={_baseline['templates']}",
          f"--file-storage-dir={_baseline['file_dir']}",
          f"--shared-file-storage-dir={_baseline['shared_dir']}",
          f"--max-running-jobs={_baseline['max_running']}",
          f"--candidate-pool-size={_baseline['pool_size']}"])
    listed = {row[0] for row in _rows(["gnt-node", "list", "-o", "name"])}
    for name in _baseline["nodes"]:
        if name not in listed:
            _run(["gnt-node", "add", "--no-ssh-key-check", "--no-node-setup", name])
    for name, offline, drained, candidate in _rows(
            ["gnt-node", "list", "-o", "name,offline,drained,master_candidate"]):
        if "Y" in (offline, drained) or candidate == "N":
            _run(["gnt-node", "modify", "--force", "--offline=no", "--drained=no",
                  "--master-candidate=yes", name])
    _recover_renamed(ctx)
    for (name,) in _rows(["gnt-instance", "list", "-o", "name"]):
        if name not in ctx.get("fixtures", set()):
            _run(["gnt-instance", "remove", "--force", "--ignore-failures", name])
    for name, nodes in _rows(["gnt-group", "list", "-o", "name,node_list"]):
        if name != ctx["default_group"]:
            if nodes:
                _run(["gnt-group", "assign-nodes", "--force", ctx["default_group"]]
                     + nodes.split(","))
            _run(["gnt-group", "remove", name])
    for (name,) in _rows(["gnt-network", "list", "-o", "name"]):
        _run(["gnt-network", "remove", name])
    for (uuid,) in _rows(["gnt-filter", "list", "-o", "uuid"]):
        _run(["gnt-filter", "delete", uuid])
    try:
        qa_rapi.ReloadCertificates(ensure_presence=False)
    except Exception as exc:
        print(f"cleanup: reloading the RAPI certificate failed: {exc}")


def _recover_renamed(ctx: dict[str, Any]) -> None:
    """A rename test that failed halfway leaves the block's instance under another
    of QA's names: rename it back."""
    fixtures = ctx.get("fixtures", set())
    names = {row[0] for row in _rows(["gnt-instance", "list", "-o", "name"])}
    qa_names = {i.name for i in qa_config.GetConfig()["instances"]}
    for fixture in fixtures - names:
        for other in sorted((names - fixtures) & qa_names):
            _run(["gnt-instance", "shutdown", "--timeout=0", other])
            if _run(["gnt-instance", "rename", "--force", "--no-ip-check",
                     "--no-name-check", other, fixture]):
                names = (names - {other}) | {fixture}
                break


def prepare_instance(inst: Any, state: str | None) -> str | None:
    """Make sure the block's instance exists under its name and is ``state``;
    the reason why not, or None."""
    rows = _rows(["gnt-instance", "list", "-o", "name,admin_state", inst.name])
    if not rows:
        return f"instance {inst.name} is gone (an earlier test renamed or removed it)"
    admin = rows[0][1]
    if state == "up" and admin != "up":
        _run(["gnt-instance", "startup", inst.name])
    elif state == "down" and admin == "up":
        _run(["gnt-instance", "shutdown", "--timeout=0", inst.name])
    elif state is None:
        return None
    rows = _rows(["gnt-instance", "list", "-o", "name,admin_state", inst.name])
    if not rows or (rows[0][1] == "up") != (state == "up"):
        return f"instance {inst.name} could not be brought {state}"
    return None
