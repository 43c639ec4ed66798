"""ganeti-vcluster demo: create and start a cluster if needed, run a few commands against
it (gnt-* over LUXI, one RAPI request, and confd queries), print how to use it.

As root with the guest files, QEMU and libvirt (or with ``--namespaces``) the
cluster is a namespaced one, and the demo ends with a real kvm instance
(:mod:`ganeti.cli.vcluster_demo_kvm`); commands then run on the master "host",
inside its namespace.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys

from ganeti.cli import netns, rapicall, vcluster, vcluster_demo_kvm, vcluster_ns
from ganeti.cli.framework import Context
from ganeti.core import constants


def _run_shown(ctx: Context, vc: vcluster.VCluster, argv: list[str], max_lines: int = 0) -> int:
    env = dict(os.environ)
    env.update(vc.node(None).paths.env())
    env["PATH"] = os.path.dirname(os.path.abspath(sys.executable)) + ":" + env.get("PATH", "")
    ctx.out(f"$ {' '.join(argv)}")
    full = (vcluster_ns.exec_argv(vc, None, False, argv) if vcluster_ns.plan_of(vc)
            else argv)
    try:
        proc = subprocess.run(full, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        ctx.out(f"  {argv[0]}: command not found")
        return 127
    lines = (proc.stdout + proc.stderr).rstrip("\n").splitlines()
    shown = lines[:max_lines] if max_lines else lines
    for line in shown:
        ctx.out(f"  {line}")
    if len(shown) < len(lines):
        ctx.out(f"  ... ({len(lines) - len(shown)} more lines)")
    return proc.returncode


def usage_lines(vc: vcluster.VCluster) -> list[str]:
    """How to use, stop and remove the cluster."""
    tool = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "ganeti-vcluster")
    d = shlex.quote(vc.directory)
    others = [n for n in vc.nodes if not vc.is_master(n)]
    lines = [
        "Use the cluster from your shell, either with",
        f"  eval \"$({tool} env {d})\"",
        "or with these export lines:",
        *(f"  {line}" for line in vcluster.env_lines(vc, vc.node(None))),
        "then try:",
        "  gnt-cluster info; gnt-node list; gnt-instance list; gnt-instance info web1; "
        "gnt-os list; gnt-debug delay 1; gnt-job list; gnt-job info 1; gnt-debug locks",
    ]
    if others:
        lines.append(f"Nodes:   {vc.master} (master), {', '.join(n.name for n in others)}; "
                     f"each under {os.path.join(vc.directory, '<node>')}")
    master = vc.node(None)
    rapi = f"{vc.cluster_name}:{constants.DEFAULT_RAPI_PORT}"
    credentials = shlex.quote(os.path.join(vc.directory, vcluster.CREDENTIALS_FILE))
    plan = vcluster_ns.plan_of(vc)
    inside = f"{tool} exec {d} --client -- " if plan else ""
    # in namespaces, clients reach the cluster at its (live) master IP
    rapi_ip = plan.master_ip if plan else master.ip
    if inside:
        lines += [f"Inside:  {tool} exec {d} [--node NODE | --client] -- CMD   (a node's or "
                  "the client's network namespace, e.g. -- busybox ping -c1 node2)"]
    return lines + [
        f"RAPI:    {inside}curl --cacert {shlex.quote(master.paths.rapi_pem)} --resolve "
        f"{rapi}:{rapi_ip} -u \"$(tr ' ' : < {credentials})\" https://{rapi}/2/info",
        f"         (dashboard, with the instances table: "
        f"https://{rapi_ip}:{constants.DEFAULT_RAPI_PORT}/dashboard/"
        + (", at the master IP, from the client namespace" if inside else "") + ")",
        f"Status:  {tool} status {d}",
        f"Stop:    {tool} stop {d}     (start again with: {tool} start {d})",
        f"Remove:  {tool} destroy {d}",
        f"Logs:    {vc.node(None).paths.log_dir} (each node has its own, under "
        f"{os.path.join(vc.directory, '<node>', 'var/log/ganeti')})",
    ]


#: The job filter rule the demo adds and removes again (a fixed uuid, so that
#: ``gnt-filter replace`` makes running the demo twice harmless).
DEMO_FILTER_UUID = "0d3a0000-0000-4000-8000-000000000001"

#: What ``demo`` shows: (argv, at most this many output lines, 0 for all).
DEMO_COMMANDS: list[tuple[list[str], int]] = [
    (["gnt-cluster", "getmaster"], 0),
    (["gnt-cluster", "version"], 0),
    (["gnt-cluster", "info"], 12),
    (["gnt-node", "list"], 0),
    (["gnt-node", "list", "-o", "name,role,pip,master_candidate"], 0),
    (["gnt-group", "list"], 0),
    (["gnt-cluster", "add-tags", "demo:yes"], 0),
    (["gnt-cluster", "list-tags"], 0),
    (["gnt-filter", "replace", "--priority=10", "--action=RATE_LIMIT 1",
      '--predicates=[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]]',
      "--reason=demo: one delay job at a time", DEMO_FILTER_UUID], 0),
    (["gnt-filter", "list", "-o", "priority,action,predicates"], 0),
    (["gnt-debug", "delay", "--repeat", "2", "0.2"], 0),
    (["gnt-job", "list"], 0),
    (["gnt-job", "list", '"TEST_DELAY(0.2)" in summary and status == "success"'], 0),
    (["gnt-filter", "delete", DEMO_FILTER_UUID], 0),
    (["gnt-debug", "locks"], 0),
    # confd: signed UDP queries to every master candidate, answered from its copy of
    # config.data (not through the master daemon)
    (["ganeti-confd-query", "cluster-master"], 0),
    (["ganeti-confd-query", "mc-pip-list"], 0),
]


def _show_rapi(ctx: Context, vc: vcluster.VCluster) -> int:
    """One authenticated RAPI request (GET /2/info) over verified HTTPS; 0 if it worked."""
    master = vc.node(None)
    url = f"https://{master.ip}:{constants.DEFAULT_RAPI_PORT}/2/info"
    try:
        user, password = rapicall.read_credentials(os.path.join(vc.directory,
                                                                vcluster.CREDENTIALS_FILE))
        plan = vcluster_ns.plan_of(vc)
        where = f", from the client namespace {plan.client_ns}" if plan else ""
        ctx.out(f"$ GET {url}   (HTTPS checked against rapi.pem, as RAPI user {user!r}"
                f"{where})")

        def get() -> tuple[int, object]:
            return rapicall.request(
                master.ip, constants.DEFAULT_RAPI_PORT, "GET", "/2/info",
                context=rapicall.tls_context(master.paths.rapi_pem),
                server_hostname=vc.cluster_name, credentials=(user, password))

        status, info = netns.call_in(plan.client_ns, get) if plan else get()
    except (OSError, ValueError) as err:
        ctx.out(f"  failed: {err}")
        return 1
    if status != 200 or not isinstance(info, dict):
        ctx.out(f"  HTTP {status}: {info}")
        return 1
    ctx.out(f"  HTTP 200: cluster {info.get('name')}, master {info.get('master')}, "
            f"software version {info.get('software_version')}")
    return 0


#: The demo's instances: (short name, node index, or None: placed by the built-in
#: allocator ganeti-place) -- fake hypervisor, a file disk, our busybox OS definition
#: (share/os/busybox).
DEMO_INSTANCES: tuple[tuple[str, int | None], ...] = (("web1", 1), ("web2", None))


def instance_commands(vc: vcluster.VCluster, existing: set[str]) -> list[tuple[list[str], int]]:
    """The instance part of the demo (instances already there are not added again)."""
    names = [f"{short}.{vc.domain}" for short, _ in DEMO_INSTANCES]
    commands: list[tuple[list[str], int]] = [(["gnt-os", "list"], 0)]
    for (short, index), name in zip(DEMO_INSTANCES, names, strict=True):
        if name in existing:
            continue
        where = (["-I", "ganeti-place"] if index is None
                 else ["-n", vc.nodes[min(index, len(vc.nodes) - 1)].name])
        # without busybox-static (make install-os needs root) the OS is not installed
        install = [] if _os_tools_installed() else ["--no-install"]
        # a namespaced cluster's default hypervisor is kvm: these stay on the fake one
        fake = ["-H", constants.HT_FAKE] if vcluster_ns.plan_of(vc) else []
        commands.append((["gnt-instance", "add", "-t", "file", "-o", "busybox", *fake,
                          "--disk", "0:size=1G", "--no-name-check", "--no-ip-check",
                          "-B", "maxmem=128M", "-O", f"marker=hello from {short}",
                          *install, *where, name], 0))
    first = names[0]
    return commands + [
        (["gnt-instance", "list"], 0),
        (["gnt-instance", "info", first], 24),
        (["gnt-instance", "stop", first], 0),
        (["gnt-instance", "list", "-o", "name,status,oper_state,pnode", first], 0),
        (["gnt-instance", "start", first], 0),
        (["gnt-instance", "list", "-o", "name,status,oper_ram,disk.sizes,nic.macs"], 0),
        # how many more of a spec fit, and where (as hspace answers)
        (["gnt-debug", "iallocator", "--dir", "out", "-m", "capacity", "-t", "file", "-p", "4",
          "--memory", "512", "--disks", "1024", "-I", "ganeti-place", "spec"], 6),
    ]


def _os_tools_installed() -> bool:
    """Whether our busybox OS can run here (busybox-static and mkfs.ext4)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return all(shutil.which(tool, path=path) for tool in ("busybox", "mkfs.ext4"))


def _existing_instances(vc: vcluster.VCluster) -> set[str]:
    env = dict(os.environ)
    env.update(vc.node(None).paths.env())
    tool = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "gnt-instance")
    proc = subprocess.run([tool, "list", "--no-headers", "-o", "name"], env=env,
                          capture_output=True, text=True, check=False)
    return set(proc.stdout.split()) if proc.returncode == 0 else set()


def demonstrate(ctx: Context, vc: vcluster.VCluster) -> int:
    """Run :data:`DEMO_COMMANDS`, the instance commands and one RAPI request against the
    master; the number that failed."""
    ctx.out("")
    ctx.out("Demonstration (each command talks LUXI to the master daemon; the tags, the "
            "delay and the listing are jobs):")
    failed = sum(_run_shown(ctx, vc, argv, max_lines) != 0
                 for argv, max_lines in DEMO_COMMANDS)
    ctx.out("")
    ctx.out("Instances on the fake hypervisor, with a file disk each and our busybox OS "
            "definition (its create script builds the root filesystem on the disk):")
    failed += sum(_run_shown(ctx, vc, argv, max_lines) != 0
                  for argv, max_lines in instance_commands(vc, _existing_instances(vc)))
    ctx.out("")
    ctx.out("The same cluster through the remote API (ganeti-rapi, a LUXI client of the "
            "master daemon):")
    failed += _show_rapi(ctx, vc)
    if vcluster_demo_kvm.possible(vc):
        failed += vcluster_demo_kvm.demonstrate(ctx, vc, _run_shown, _existing_instances(vc))
    return failed


def demo_mode(opts: argparse.Namespace) -> str:
    """``namespaces`` or ``loopback``: as asked, else namespaces when a real instance can
    run here (root, iproute2, QEMU, libvirt, the guest files) and no ``--ip-base``."""
    mode = getattr(opts, "mode", None)
    if mode:
        return str(mode)
    if (opts.ip_base == vcluster.DEFAULT_IP_BASE and vcluster_ns.unavailable_reason() is None
            and not vcluster_ns.libvirt_missing() and vcluster_ns.find_guest() is not None):
        return "namespaces"
    return "loopback"


def cmd_demo(ctx: Context, opts: argparse.Namespace) -> int:
    """Create (with 3 nodes) and start the cluster if needed, show what works, print how
    to use it."""
    directory = os.path.abspath(opts.directory)
    if not os.path.exists(os.path.join(directory, vcluster.STATE_FILE)):
        code = vcluster.create(ctx, argparse.Namespace(directory=directory, nodes=opts.nodes,
                                              domain=vcluster.DEFAULT_DOMAIN, ip_base=opts.ip_base,
                                              name=None, command=opts.command,
                                              mode=demo_mode(opts),
                                              subnet=getattr(opts, "subnet", None)),
                      keep_running=True)
        if code != constants.EXIT_SUCCESS:
            return code
        vc = vcluster.VCluster.load(directory)
        failures = demonstrate(ctx, vc)
    else:
        vc = vcluster.VCluster.load(directory)
        if all(st.state == vcluster.daemons.RUNNING for _, st in vcluster.states(vc)):
            ctx.out(f"The virtual cluster in {directory} is already running; leaving it as "
                    "it is.")
            failures = 0
        else:
            vcluster.start_all(vc, ctx)
            failures = demonstrate(ctx, vc)
    if failures:
        ctx.err(f"{failures} demonstration command(s) failed")
        return constants.EXIT_FAILURE
    ctx.out("")
    for line in usage_lines(vc):
        ctx.out(line)
    return constants.EXIT_SUCCESS
