"""gnt-cluster: initialise, inspect and destroy the cluster."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence
from typing import Any

from ganeti.cli import (
    daemons,
    gnt_cluster_balance,
    gnt_cluster_modify,
    gnt_cluster_verify,
    gnt_cluster_watcher,
    ipolicy_opts,
    jobs,
    table,
)
from ganeti.cli.framework import (
    Command,
    Context,
    UsageError,
    confirm_flag,
    format_value,
    print_tree,
    run_tool,
)
from ganeti.core import bootstrap, constants, errors, params, ssconf, uidpool
from ganeti.core import config as configmod
from ganeti.core.params_cluster import IALLOCATOR_SEARCH_PATH, find_iallocator

DESCRIPTION = ("Ganeti cluster administration: init, info, modify, verify, verify-disks, "
               "balance, redist-conf, activate-master-ip, deactivate-master-ip, "
               "getmaster, version, tags, queue, destroy.")


def _split_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _ident_params(values: list[str], flag: str = "-H",
                  ident: str = "HYPERVISOR") -> dict[str, dict[str, str]]:
    return jobs.ident_keyval(values, flag, ident)


def _hv_params(values: list[str]) -> dict[str, dict[str, str]]:
    return _ident_params(values)


def _setup_init(p: argparse.ArgumentParser) -> None:
    p.add_argument("cluster_name", metavar="CLUSTER_NAME", help="name of the new cluster")
    p.add_argument("--primary-ip", help="primary IP of this node (default: resolve its name)")
    p.add_argument("-s", "--secondary-ip", help="secondary (replication) IP of this node")
    p.add_argument("--master-ip", help="the cluster's master IP (default: resolve "
                                       "CLUSTER_NAME)")
    p.add_argument("--master-netdev", default=constants.DEFAULT_MASTER_NETDEV,
                   help="network device that carries the master IP (default: %(default)s)")
    p.add_argument("--master-netmask", type=int, help="netmask (prefix length) of the "
                                                      "master IP")
    p.add_argument("--enabled-hypervisors", default=constants.HT_KVM,
                   help="comma-separated hypervisors, the first is the default "
                        "(kvm, fake; default: %(default)s)")
    p.add_argument("-H", "--hypervisor-parameters", action="append", default=[],
                   metavar="HV:KEY=VAL,...", help="hypervisor defaults (repeatable)")
    p.add_argument("-B", "--backend-parameters", default="", metavar="KEY=VAL,...",
                   help="backend defaults (maxmem, minmem, vcpus, auto_balance, ...)")
    p.add_argument("-N", "--nic-parameters", default="", metavar="KEY=VAL,...",
                   help="NIC defaults (mode, link, vlan)")
    p.add_argument("--node-parameters", default="", metavar="KEY=VAL,...",
                   help="node parameter defaults (ssh_port, spindle_count, ...)")
    p.add_argument("-C", "--candidate-pool-size", type=int,
                   default=constants.DEFAULT_CANDIDATE_POOL_SIZE,
                   help="number of master candidates to keep (default: %(default)s)")
    p.add_argument("--uid-pool", default="", metavar="UIDS",
                   help="user-id pool, e.g. 1000-1009,2000 (default: empty)")
    p.add_argument("-I", "--default-iallocator", default=None, metavar="NAME",
                   help="default instance allocator, or a comma-separated list tried in "
                        "order (default: hail if it is installed, as Ganeti; without a "
                        "default the built-in ganeti-place is used)")
    p.add_argument("--enabled-disk-templates", default="drbd,plain",
                   help="comma-separated disk templates (default: %(default)s)")
    p.add_argument("--file-storage-dir", default=constants.DEFAULT_FILE_STORAGE_DIR,
                   help="directory for file-based disks (default: %(default)s)")
    p.add_argument("--shared-file-storage-dir",
                   default=constants.DEFAULT_SHARED_FILE_STORAGE_DIR,
                   help="directory for shared file disks (default: %(default)s)")
    p.add_argument("-m", "--mac-prefix", default=constants.DEFAULT_MAC_PREFIX,
                   help="prefix of generated MAC addresses (default: %(default)s)")
    p.add_argument("-g", "--vg-name", help="LVM volume group for plain and drbd disks")
    p.add_argument("--drbd-usermode-helper", help="DRBD user-mode helper")
    p.add_argument("--maintain-node-health", type=jobs.yes_no, default=False, metavar="yes|no",
                   help="let the watcher shut down stray instances (default: no)")
    p.add_argument("--rapi-user", default=bootstrap.DEFAULT_RAPI_USER,
                   help="name of the RAPI user created with write access "
                        "(default: %(default)s)")


#: Ganeti's IALLOC_HAIL: the default allocator of a new cluster where it is installed.
IALLOC_HAIL = "hail"


def default_iallocator(given: str | None,
                       search_path: tuple[str, ...] = IALLOCATOR_SEARCH_PATH) -> str:
    """The cluster's default allocator at init (Ganeti's): the one given, which must
    exist; else hail if it is on the search path; else none (blocking: stats files)."""
    if given:
        find_iallocator(given, search_path)
        return given
    if given is None and any(os.path.isfile(os.path.join(d, IALLOC_HAIL))
                             for d in search_path):
        return IALLOC_HAIL
    return ""


def cmd_init(ctx: Context, opts: argparse.Namespace) -> int:
    """Initialise a new cluster with this node as its master."""
    try:
        opts.default_iallocator = default_iallocator(opts.default_iallocator)
        init = bootstrap.InitOptions(
            cluster_name=opts.cluster_name, primary_ip=opts.primary_ip,
            secondary_ip=opts.secondary_ip, master_ip=opts.master_ip,
            master_netdev=opts.master_netdev, master_netmask=opts.master_netmask,
            enabled_hypervisors=_split_list(opts.enabled_hypervisors),
            hvparams=_hv_params(opts.hypervisor_parameters),
            beparams=params.parse_keyval(opts.backend_parameters, "-B"),
            nicparams=params.parse_keyval(opts.nic_parameters, "-N"),
            ndparams=params.parse_keyval(opts.node_parameters, "--node-parameters"),
            candidate_pool_size=opts.candidate_pool_size, uid_pool=opts.uid_pool,
            default_iallocator=opts.default_iallocator,
            enabled_disk_templates=_split_list(opts.enabled_disk_templates),
            file_storage_dir=opts.file_storage_dir,
            shared_file_storage_dir=opts.shared_file_storage_dir,
            mac_prefix=opts.mac_prefix, vg_name=opts.vg_name,
            drbd_helper=opts.drbd_usermode_helper,
            maintain_node_health=opts.maintain_node_health, rapi_user=opts.rapi_user)
    except errors.OpPrereqError as err:
        raise UsageError(str(err.args[0])) from None
    result = bootstrap.initialise(ctx.paths, init)
    cl = result.config.cluster
    ctx.out(f"Cluster {cl.cluster_name} initialised; this node ({ctx.paths.hostname}) "
            "is its master.")
    ctx.out(f"RAPI user {result.rapi_user!r} (write access), password: {result.rapi_password}")
    ctx.out(f"  The password is shown only this once; {ctx.paths.rapi_users} keeps its "
            "{HA1} hash.")
    ctx.out("Start the master daemon with: twistd --pidfile "
            f"{ctx.paths.pid_file(constants.MASTERD)} --logfile "
            f"{ctx.paths.log_file(constants.MASTERD)} {constants.MASTERD}")
    return constants.EXIT_SUCCESS


def _ts(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "(unknown)"
    return datetime.datetime.fromtimestamp(value).strftime("%Y-%m-%d %H:%M:%S")


def cmd_show_ispecs_cmd(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the ``gnt-cluster init`` command line that recreates the cluster's
    instance specs (Ganeti's ``show-ispecs-cmd``)."""
    info = ctx.luxi().query_cluster_info()
    ctx.out(f"gnt-cluster init{ipolicy_opts.ipolicy_command(info['ipolicy'], False)} "
            f"{info['name']}")
    return constants.EXIT_SUCCESS


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Show the cluster's parameters."""
    info = ctx.luxi().query_cluster_info()
    ctx.out(f"Cluster name: {info['name']}")
    ctx.out(f"Cluster UUID: {info['uuid']}")
    ctx.out(f"Creation time: {_ts(info['ctime'])}")
    ctx.out(f"Modification time: {_ts(info['mtime'])}")
    ctx.out(f"Master node: {info['master']}")
    arch = info["architecture"]
    ctx.out(f"Architecture (this node): {arch[0]} ({arch[1]})")
    ctx.out(f"Tags: {format_value(info['tags'])}")
    ctx.out(f"Default hypervisor: {info['default_hypervisor']}")
    ctx.out(f"Enabled hypervisors: {format_value(info['enabled_hypervisors'])}")
    ctx.out("Hypervisor parameters:")
    # the enabled hypervisors' only, as Ganeti's client (the master lists them all)
    print_tree(ctx, {hv: values for hv, values in info["hvparams"].items()
                     if hv in info["enabled_hypervisors"]}, 1)
    ctx.out("OS-specific hypervisor parameters:")
    print_tree(ctx, info["os_hvp"], 1)
    ctx.out("OS parameters:")
    print_tree(ctx, info["osparams"], 1)
    ctx.out(f"Hidden OSes: {format_value(info['hidden_os'])}")
    ctx.out(f"Blacklisted OSes: {format_value(info['blacklisted_os'])}")
    ctx.out("Cluster parameters:")
    rows = [
        ("candidate pool size", info["candidate_pool_size"]),
        ("maximal number of jobs running simultaneously", info["max_running_jobs"]),
        ("maximal number of jobs simultaneously tracked by the scheduler",
         info["max_tracked_jobs"]),
        ("mac prefix", info["mac_prefix"]),
        ("master netdev", info["master_netdev"]),
        ("master netmask", info["master_netmask"]),
        ("use external master IP address setup script", info["use_external_mip_script"]),
        ("lvm volume group", info["volume_group_name"]),
        ("lvm reserved volumes", info["reserved_lvs"]),
        ("drbd usermode helper", info["drbd_usermode_helper"]),
        ("file storage path", info["file_storage_dir"]),
        ("shared file storage path", info["shared_file_storage_dir"]),
        ("gluster storage path", info["gluster_storage_dir"]),
        ("maintenance of node health", info["maintain_node_health"]),
        ("uid pool", uidpool.format_pool(info["uid_pool"])),
        ("default instance allocator", info["default_iallocator"]),
        ("default instance allocator parameters", info["default_iallocator_params"] or ""),
        ("primary ip version", info["primary_ip_version"]),
        ("preallocation wipe disks", info["prealloc_wipe_disks"]),
        ("enabled disk templates", info["enabled_disk_templates"]),
        ("install image", info["install_image"]),
        ("instance communication network", info["instance_communication_network"]),
        ("zeroing image", info["zeroing_image"]),
        ("compression tools", info["compression_tools"]),
        ("enabled user shutdown", info["enabled_user_shutdown"]),
    ]
    for label, value in rows:
        ctx.out(f"  {label}: {format_value(value)}")
    ctx.out("Default node parameters:")
    print_tree(ctx, info["ndparams"], 1)
    ctx.out("Default instance parameters:")
    print_tree(ctx, info["beparams"], 1)
    ctx.out("Default nic parameters:")
    print_tree(ctx, info["nicparams"], 1)
    ctx.out("Default disk parameters:")
    print_tree(ctx, info["diskparams"], 1)
    # Ganeti's layout exactly: tools read it back as YAML (Ganeti's QA: ParseIPolicy)
    ctx.out(table.format_generic_info([("Instance policy - limits for instances",
                                        ipolicy_opts.policy_info(None, info["ipolicy"],
                                                                 True))]))
    ctx.out("Data collectors:")
    for name in sorted(info["enabled_data_collectors"]):
        ctx.out(f"  {name}: active={info['enabled_data_collectors'][name]}, "
                f"interval={info['data_collector_interval'].get(name, 0) / 1e6:g}s")
    return constants.EXIT_SUCCESS


def cmd_getmaster(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the name of the master node."""
    (master,) = ctx.luxi().query_config_values(["master_node"])
    ctx.out(str(master))
    return constants.EXIT_SUCCESS


def cmd_version(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the versions of the software and its interfaces."""
    info = ctx.luxi().query_cluster_info()
    ctx.out(f"Software version: {info['software_version']}")
    ctx.out(f"Internode protocol: {info['protocol_version']}")
    ctx.out(f"Configuration format: {info['config_version']}")
    ctx.out(f"OS api version: {info['os_api_version']}")
    ctx.out(f"Export interface: {info['export_version']}")
    ctx.out(f"VCS version: {info['vcs_version']}")
    return constants.EXIT_SUCCESS


def cmd_list_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the cluster's tags, one per line."""
    return jobs.list_tags(ctx, constants.TAG_CLUSTER, "")


def _setup_destroy(p: argparse.ArgumentParser) -> None:
    p.add_argument("--yes-do-it", action="store_true",
                   help="confirm that the cluster is to be destroyed")


def cmd_destroy(ctx: Context, opts: argparse.Namespace) -> int:
    """Stop the master's daemons and remove the cluster's state from this node."""
    confirm_flag(opts, "--yes-do-it", "Destroying the cluster")
    paths = ctx.paths
    if not ssconf.is_initialised(paths):
        ctx.err(f"This node ({paths.hostname}) is not part of a cluster.")
        return constants.EXIT_NOTCLUSTER
    if os.path.exists(paths.config_file):
        cfg = configmod.load_file(paths.config_file, check=False)
        master, name = cfg.master.name, cfg.cluster.cluster_name
        others = sorted(n.name for n in cfg.nodes.values()
                        if n.uuid != cfg.cluster.master_node)
        if others or cfg.instances:
            raise errors.OpPrereqError(
                f"The cluster still has {len(others)} other node(s) and "
                f"{len(cfg.instances)} instance(s); remove them first", errors.ECODE_STATE)
    else:  # a node whose config is gone: ssconf still says who the master is
        master, name = ssconf.read(paths, "master_node"), ssconf.read(paths, "cluster_name")
    if master != paths.hostname:
        ctx.err(f"Run this on the master node ({master}), not on {paths.hostname}.")
        return constants.EXIT_NOTMASTER
    for daemon in (*daemons.MASTER_DAEMONS, *daemons.NODE_DAEMONS, *daemons.CANDIDATE_DAEMONS):
        if daemons.stop(paths, daemon):
            ctx.out(f"Stopped {daemon}.")
    removed = bootstrap.destroy(paths)
    ctx.out(f"Cluster {name} destroyed ({len(removed)} files and "
            "directories removed).")
    return constants.EXIT_SUCCESS


# --- queue ---------------------------------------------------------------------

def _setup_queue(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["drain", "undrain", "info"],
                   help="drain: refuse new jobs; undrain: accept them again; info: show "
                        "the drain flag")


def cmd_queue(ctx: Context, opts: argparse.Namespace) -> int:
    """Set, clear or show the job queue's drain flag."""
    if opts.action in ("drain", "undrain"):
        ctx.luxi().call("SetDrainFlag", opts.action == "drain")
    else:
        (drained,) = ctx.luxi().query_config_values(["drain_flag"])
        ctx.out(f"The drain flag is {'set' if drained else 'unset'}")
    return constants.EXIT_SUCCESS


# --- tags ----------------------------------------------------------------------

def cmd_add_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Add tags to the cluster (OP_TAGS_SET)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_SET", constants.TAG_CLUSTER)


def cmd_remove_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove tags from the cluster (OP_TAGS_DEL)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_DEL", constants.TAG_CLUSTER)


def _setup_search_tags(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, submit=False)
    p.add_argument("pattern", metavar="PATTERN", help="regular expression")


def cmd_search_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Print "path tag" for every tag of any object matching PATTERN (OP_TAGS_SEARCH)."""
    result = jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_TAGS_SEARCH",
                                            "pattern": opts.pattern})
    if not result:
        return constants.EXIT_FAILURE
    for path, tag in sorted(result):
        ctx.out(f"{path} {tag}")
    return constants.EXIT_SUCCESS


# --- redist-conf (verify and verify-disks: gnt_cluster_verify) --------------------

verify_opcode = gnt_cluster_verify.verify_opcode  # where it used to live


def _setup_redist_conf(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("--yes-do-it", action="store_true",
                   help="distribute even if the job queue is drained (the job is put into "
                        "the drained queue; waits for it)")


def cmd_redist_conf(ctx: Context, opts: argparse.Namespace) -> int:
    """Push the configuration and ssconf files to the nodes (OP_CLUSTER_REDIST_CONF)."""
    op: dict[str, Any] = {"OP_ID": "OP_CLUSTER_REDIST_CONF"}
    if opts.yes_do_it:
        jobs.set_generic_options(ctx, opts, [op])
        job_id = int(ctx.luxi().call("SubmitJobToDrainedQueue", [op]))
        if opts.print_jobid:
            ctx.out(str(job_id))
        jobs.poll_job(ctx, job_id)
    else:
        jobs.submit_or_send(ctx, opts, op)
    return constants.EXIT_SUCCESS


# --- activate-master-ip, deactivate-master-ip -------------------------------------

def _setup_activate_master_ip(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, submit=False)


def cmd_activate_master_ip(ctx: Context, opts: argparse.Namespace) -> int:
    """Bring the master IP up on the master node (OP_CLUSTER_ACTIVATE_MASTER_IP)."""
    jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_CLUSTER_ACTIVATE_MASTER_IP"})
    return constants.EXIT_SUCCESS


def _setup_deactivate_master_ip(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, submit=False)
    p.add_argument("--yes", dest="confirm", action="store_true",
                   help="do not ask for confirmation")


def cmd_deactivate_master_ip(ctx: Context, opts: argparse.Namespace) -> int:
    """Take the master IP down (OP_CLUSTER_DEACTIVATE_MASTER_IP); asks first, as Ganeti's,
    unless --yes is given (no terminal counts as "no")."""
    if not opts.confirm and not jobs.ask_user(
            "This will disable the master IP. All the open connections to the master IP "
            "will be closed. To reach the master you will need to use its node IP. "
            "Continue?"):
        return constants.EXIT_FAILURE
    jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_CLUSTER_DEACTIVATE_MASTER_IP"})
    return constants.EXIT_SUCCESS


COMMANDS = [
    Command("init", cmd_init, "Initialise a new cluster on this node", _setup_init),
    Command("info", cmd_info, "Show the cluster's parameters"),
    Command("show-ispecs-cmd", cmd_show_ispecs_cmd,
            "Show the command line to re-create the cluster's instance specs"),
    Command("getmaster", cmd_getmaster, "Print the master node's name"),
    Command("version", cmd_version, "Print software and interface versions"),
    Command("modify", gnt_cluster_modify.cmd_modify, "Change the cluster's parameters",
            gnt_cluster_modify.setup, gnt_cluster_modify.DESCRIPTION),
    *gnt_cluster_verify.COMMANDS,
    Command("balance", gnt_cluster_balance.cmd_balance,
            "Compute moves that balance the cluster and execute them",
            gnt_cluster_balance.setup, gnt_cluster_balance.DESCRIPTION),
    Command("redist-conf", cmd_redist_conf,
            "Push the configuration and ssconf files to all nodes", _setup_redist_conf),
    Command("list-tags", cmd_list_tags, "List the cluster's tags"),
    Command("add-tags", cmd_add_tags, "Add tags to the cluster", jobs.add_tag_options),
    Command("remove-tags", cmd_remove_tags, "Remove tags from the cluster",
            jobs.add_tag_options),
    Command("search-tags", cmd_search_tags,
            "Search the tags of every object for a pattern (regex)", _setup_search_tags),
    Command("queue", cmd_queue, "Drain, undrain or show the job queue", _setup_queue),
    Command("watcher", gnt_cluster_watcher.cmd_watcher, "Pause the watcher, end its pause "
            "or show it", gnt_cluster_watcher.setup, gnt_cluster_watcher.DESCRIPTION),
    Command("activate-master-ip", cmd_activate_master_ip, "Activates the master IP",
            _setup_activate_master_ip),
    Command("deactivate-master-ip", cmd_deactivate_master_ip, "Deactivates the master IP",
            _setup_deactivate_master_ip),
    Command("destroy", cmd_destroy, "Destroy the cluster (needs --yes-do-it)", _setup_destroy),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-cluster (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-cluster", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
