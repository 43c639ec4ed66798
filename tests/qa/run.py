#!/usr/bin/python3
"""Run Ganeti's own QA tests (Debian's ganeti-testsuite) against a three-node
namespaced virtual cluster of this checkout, one test at a time, and write a
per-test summary.  See tests/qa/README.md.

Run as root, one run at a time: ``python3 tests/qa/run.py [--tests NAMES]``.
The checkout is the one this file lies in; its tools come from ``<checkout>/.venv``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(os.path.dirname(HERE))
VENV_BIN = os.path.join(CHECKOUT, ".venv", "bin")
VCLUSTER = os.path.join(VENV_BIN, "ganeti-vcluster")
QA_SUITE = "/usr/share/ganeti/testsuite"
GANETI_LIB = "/usr/share/ganeti/3.0"
NOOP_OS = "/usr/share/ganeti/os/noop"
SYSTEM_PYTHON = "/usr/bin/python3"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TEMPLATES = "file,sharedfile,diskless"
#: QA's instance names (resolvable in the cluster's hosts file): host part 100+k.
INSTANCES = 8
#: Debian's packages whose gnt-*/ganeti-* programs must not stand in for ours.
DEBIAN_PACKAGES = ("ganeti", "ganeti-3.0", "ganeti-haskell-3.0", "ganeti-htools-3.0")

sys.path.insert(0, HERE)
import plan  # noqa: E402


def say(msg: str) -> None:
    """Progress on stdout."""
    print(f"[qa] {msg}", flush=True)


def sh(*argv: str, capture: bool = False) -> str:
    """Run a command, fail loudly."""
    proc = subprocess.run(argv, check=False, text=True,
                          capture_output=capture)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(argv)}\n"
                         f"{proc.stdout or ''}{proc.stderr or ''}")
    return proc.stdout or ""


def preflight() -> None:
    """What the run needs on this machine."""
    problems = []
    if os.geteuid() != 0:
        problems.append("run as root (namespaced virtual clusters need it)")
    if not os.access(VCLUSTER, os.X_OK):
        problems.append(f"{VCLUSTER} is missing: run 'make install' in {CHECKOUT}")
    if not os.path.isfile(os.path.join(QA_SUITE, "qa", "ganeti-qa.py")):
        problems.append("Ganeti's QA suite is missing: apt-get install ganeti-testsuite")
    if not os.path.isdir(NOOP_OS):
        problems.append("the noop OS is missing: apt-get install --no-install-recommends "
                        "ganeti-os-noop")
    check = subprocess.run([SYSTEM_PYTHON, "-c", "import ganeti.rapi.client, yaml"],
                           env={"PYTHONPATH": GANETI_LIB}, capture_output=True, check=False,
                           cwd="/")
    if check.returncode != 0:
        problems.append("Debian's Ganeti modules do not import with /usr/bin/python3 "
                        "(python3-pycurl, python3-yaml, python3-openssl?)")
    if problems:
        raise SystemExit("cannot run Ganeti's QA:\n  " + "\n  ".join(problems))


def exec_in(vc: str, *argv: str, node: str | None = None) -> str:
    """``ganeti-vcluster exec`` on the master (or ``node``)."""
    where = ["--node", node] if node else []
    return sh(VCLUSTER, "exec", vc, *where, "--", *argv, capture=True)


def node_environment(vc: str, node: str) -> dict[str, str]:
    """The variables ``ganeti-vcluster exec --node`` sets for a command on ``node``."""
    env = dict(item.split("=", 1) for item in exec_in(vc, "env", "-0", node=node)
               .split("\0") if "=" in item)
    return {k: v for k, v in env.items() if k.startswith("GANETI_")}


def write_blockers(directory: str) -> None:
    """A stub for every gnt-*/ganeti-* program of Debian's Ganeti packages, found on
    the nodes' PATH after this checkout's tools: QA must never run Debian's client
    against our daemons when this checkout lacks a program."""
    os.makedirs(directory, exist_ok=True)
    files = subprocess.run(["dpkg", "-L", *DEBIAN_PACKAGES], capture_output=True,
                           text=True, check=False).stdout.split()
    for path in files:
        name = os.path.basename(path)
        if "/bin/" in path or "/sbin/" in path:
            if name.startswith(("gnt-", "ganeti-")):
                stub = os.path.join(directory, name)
                with open(stub, "w", encoding="utf-8") as f:
                    f.write(f"#!/bin/sh\necho '{name}: command not found (this "
                            "checkout does not provide it)' >&2\nexit 127\n")
                os.chmod(stub, 0o755)


def write_adapters(directory: str) -> None:
    """Programs first on the nodes' PATH that adapt QA to this machine (see README):
    ``gnt-cluster verify`` reports the machine's missing /proc/sysrq-trigger (no
    magic SysRq in this kernel; real Ganeti reports it too) as a warning, not an
    error; ``service`` never runs Debian's init scripts."""
    os.makedirs(directory, exist_ok=True)
    real = os.path.join(VENV_BIN, "gnt-cluster")
    scripts = {
        "gnt-cluster": "#!/bin/sh\n"
                       f"if [ \"$1\" = verify ]; then shift; exec {real} verify "
                       "--ignore-errors=ENODESETUP \"$@\"; fi\n"
                       f"exec {real} \"$@\"\n",
        "service": "#!/bin/sh\necho \"service $*: not on a virtual cluster node\" >&2\n"
                   "exit 1\n",
    }
    for name, text in scripts.items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o755)


def prepare(work: str, vc: str) -> dict[str, Any]:
    """Set the cluster up for QA; write the QA config and the shims' state file."""
    with open(os.path.join(vc, "vcluster.json"), encoding="utf-8") as f:
        desc = json.load(f)
    prefix = f"gvc{desc['netns']['cluster_id']}-"
    net = desc["netns"]["subnet"].rsplit(".", 1)[0]
    say("cluster settings for QA: fake hypervisor, templates " + TEMPLATES)
    exec_in(vc, "gnt-cluster", "modify", "--enabled-hypervisors=fake")
    exec_in(vc, "gnt-cluster", "modify", f"--enabled-disk-templates={TEMPLATES}",
            f"--ipolicy-disk-templates={TEMPLATES}")
    info = exec_in(vc, "gnt-cluster", "info")
    dirs = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
            for line in info.splitlines() if "storage path:" in line}
    qa = os.path.join(work, "qa")
    os.makedirs(qa, exist_ok=True)
    nodes = []
    for k, node in enumerate(desc["nodes"], 1):
        os_dir = os.path.join(vc, node["name"], "srv", "ganeti", "os", "noop")
        shutil.copytree(NOOP_OS, os_dir, symlinks=True)
        nodes.append({"name": node["name"], "ip": node["ip"], "root": node["root"],
                      "netns": f"{prefix}node{k}",
                      "env": node_environment(vc, node["name"])})
    inst_names = [f"inst{i}.{desc['domain']}" for i in range(1, INSTANCES + 1)]
    with open(os.path.join(vc, "hosts"), "a", encoding="utf-8") as f:
        for i, name in enumerate(inst_names, 1):
            f.write(f"{net}.{100 + i}\t{name}\t{name.split('.')[0]}\n")
    say("QA's /etc (a copy; QA replaces its hosts file with mv)")
    etc = os.path.join(qa, "etc")
    sh("cp", "-a", "/etc", etc)
    shutil.copyfile(os.path.join(vc, "hosts"), os.path.join(etc, "hosts"))
    write_blockers(os.path.join(qa, "blockers"))
    write_adapters(os.path.join(qa, "adapt"))
    with open(os.path.join(vc, "rapi-credentials"), encoding="utf-8") as f:
        rapi_user, rapi_password = f.read().split()
    password_file = os.path.join(qa, "rapi-password")
    with open(password_file, "w", encoding="utf-8") as f:
        f.write(rapi_password + "\n")
    os.chmod(password_file, 0o600)
    state = {
        "cluster_name": desc["cluster_name"], "master": desc["master"],
        "master_ip": f"{net}.2", "nodes": nodes, "client_ns": f"{prefix}client",
        "hosts_file": os.path.join(vc, "hosts"), "qa_hosts": os.path.join(etc, "hosts"),
        "node_path": ":".join([os.path.join(qa, "adapt"), VENV_BIN, os.path.join(HERE, "bin"),
                               os.path.join(qa, "blockers"), SYSTEM_PATH]),
    }
    with open(os.path.join(qa, "state.json"), "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1)
    config = {
        "name": desc["cluster_name"],
        "enabled-hypervisors": "fake",
        "enabled-disk-templates": TEMPLATES.split(","),
        "os": "noop",
        "maxmem": "256M", "minmem": "128M",
        # The default instance policy wants disks of 1 GiB at least (file disks are
        # sparse files).
        "disks": [{"size": "1G", "spindles": 1, "growth": "256M"},
                  {"size": "1G", "spindles": 1, "growth": "128M"}],
        # One network: a node's secondary address is its primary one.
        "nodes": [{"primary": n["name"], "secondary": n["ip"]} for n in nodes],
        "instances": [{"name": name} for name in inst_names],
        "default-file-storage-dir": dirs.get("file storage path"),
        "file-storage-dir": dirs.get("file storage path"),
        "default-shared-file-storage-dir": dirs.get("shared file storage path"),
        "shared-file-storage-dir": dirs.get("shared file storage path"),
        "rapi-user": rapi_user, "rapi-password-file": password_file,
        "modify_ssh_setup": False,
        "exclusive-storage": False,
        "options": {"use-iallocators": False},
        # The cluster exists: QA must not create it (nor a RAPI user, nor restart
        # "service ganeti"); everything else is enabled, run.py's selection decides.
        "tests": {"default": True, "create-cluster": False},
    }
    with open(os.path.join(qa, "qa.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    return state


def run_driver(work: str, state: dict[str, Any], tests: list[str], timeout: int) -> None:
    """driver.py in the client namespace (a QA host on the cluster's network), with
    its own copy of /etc bind-mounted over /etc."""
    qa = os.path.join(work, "qa")
    env = {"PATH": os.path.join(HERE, "bin") + ":" + SYSTEM_PATH,
           "PYTHONPATH": ":".join([QA_SUITE, os.path.join(QA_SUITE, "qa"), GANETI_LIB]),
           "GANETI_QA_STATE": os.path.join(qa, "state.json"), "HOME": "/root",
           "LANG": "C.UTF-8"}
    argv = ["nsenter", f"--net=/run/netns/{state['client_ns']}", "--",
            "unshare", "--mount", "--propagation", "private", "--",
            "sh", "-c", 'mount --bind "$1" /etc || exit 1; shift; exec "$@"', "sh",
            os.path.join(qa, "etc"),
            SYSTEM_PYTHON, "-u", os.path.join(HERE, "driver.py"),
            "--config", os.path.join(qa, "qa.json"),
            "--results", os.path.join(qa, "results.json"),
            "--logs", os.path.join(qa, "logs"), "--timeout", str(timeout),
            "--tests", ",".join(tests)]
    subprocess.run(argv, env=env, check=False, cwd="/")


def summarize(work: str, started: float) -> str:
    """The per-test summary: status, id, seconds, first lines of each failure."""
    path = os.path.join(work, "qa", "results.json")
    results = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else []
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    head = subprocess.run(["git", "-C", CHECKOUT, "log", "-1", "--format=%h %s"],
                          capture_output=True, text=True, check=False).stdout.strip()
    lines = [
        "# Ganeti's QA (Debian ganeti-testsuite, /usr/share/ganeti/testsuite/qa) against",
        "# a 3-node namespaced virtual cluster of this checkout; tests/qa/run.py",
        f"# checkout: {head}",
        f"# {len(results)} tests: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + f"; {time.monotonic() - started:.0f}s in all",
        "",
    ]
    for r in results:
        lines.append(f"{r['status'].upper():8} {r['id']}  ({r['seconds']}s)")
        lines += [f"         {d}" for d in r["detail"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    """Create, prepare, run, summarize, tear down."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tests", default="default",
                   help="comma-separated QA config names, function names or test ids; "
                        "'default' (issue 34's selection) or 'all'")
    p.add_argument("--list", action="store_true", help="list the known tests and exit")
    p.add_argument("--dir", help="work directory (default: a new one under /tmp)")
    p.add_argument("--summary", help="also write the summary to this file")
    p.add_argument("--timeout", type=int, default=300, help="seconds per test")
    p.add_argument("--reuse", action="store_true",
                   help="with --dir: run on the cluster a --keep run left there")
    p.add_argument("--keep", action="store_true",
                   help="leave the cluster running (remove it with ganeti-vcluster destroy)")
    opts = p.parse_args()
    if opts.list:
        print("default selection (QA config names):", " ".join(plan.DEFAULT))
        print("\n".join(plan.all_ids()))
        return 0
    preflight()
    tests = plan.DEFAULT if opts.tests == "default" else opts.tests.split(",")
    work = opts.dir or tempfile.mkdtemp(prefix="gqa-", dir="/tmp")
    vc = os.path.join(work, "vc")
    started = time.monotonic()
    say(f"work directory {work}")
    try:
        if opts.reuse:
            with open(os.path.join(work, "qa", "state.json"), encoding="utf-8") as f:
                state = json.load(f)
            shutil.rmtree(os.path.join(work, "qa", "logs"), ignore_errors=True)
        else:
            say("creating a 3-node namespaced virtual cluster")
            sh(VCLUSTER, "create", "--namespaces", "--nodes", "3", vc, capture=True)
            sh(VCLUSTER, "start", vc, capture=True)
            state = prepare(work, vc)
        say("running QA tests (output per test in " + os.path.join(work, "qa", "logs") + ")")
        run_driver(work, state, tests, opts.timeout)
    finally:
        if not opts.keep and os.path.exists(os.path.join(vc, "vcluster.json")):
            say("tearing down the cluster")
            subprocess.run([VCLUSTER, "destroy", vc], check=False, capture_output=True)
            shutil.rmtree(os.path.join(work, "qa", "etc"), ignore_errors=True)
    summary = summarize(work, started)
    with open(os.path.join(work, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(summary)
    if opts.summary:
        with open(opts.summary, "w", encoding="utf-8") as f:
            f.write(summary)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
