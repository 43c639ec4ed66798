"""``gnt-cluster modify``: Ganeti's options, built into one OP_CLUSTER_SET_PARAMS.

Only the options given become opcode parameters.  Values go to the master as
text where Ganeti's client sends text too; the master coerces them to their
declared types (so RAPI and LUXI callers get the same checks).  Options whose
parameters need node operations this version does not have yet (DRBD helper,
master netdev, hypervisor and disk state, instance communication
network) are sent as given and refused by the master.
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import ipolicy_opts, jobs
from ganeti.cli.framework import Context, UsageError
from ganeti.core import constants, params, uidpool

#: Ganeti's compression tools when ``--compression-tools`` is empty.
DEFAULT_COMPRESSION_TOOLS = ["gzip", "gzip-fast", "gzip-slow"]

DESCRIPTION = ("Change cluster parameters: submits OP_CLUSTER_SET_PARAMS with the "
               "parameters given and waits for the job (unless --submit). Parameter "
               "dicts (-H, -B, -N, -D, --node-parameters, --ipolicy-std-specs) change "
               "only the keys given.")


def _yes_no(p: argparse.ArgumentParser, flag: str, dest: str, text: str) -> None:
    p.add_argument(flag, dest=dest, type=jobs.yes_no, metavar="yes|no", help=text)


def setup(p: argparse.ArgumentParser) -> None:
    """The options of ``gnt-cluster modify`` (Ganeti's, in its man page's order)."""
    p.add_argument("--force", action="store_true", help="force the operation")
    p.add_argument("-g", "--vg-name", dest="vg_name", metavar="VG",
                   help="LVM volume group of plain disks (every node must have it; "
                        "empty: disable lvm storage)")
    p.add_argument("--enabled-hypervisors", metavar="HYPERVISORS",
                   help="comma-separated list of enabled hypervisors")
    p.add_argument("-H", "--hypervisor-parameters", action="append", default=[],
                   metavar="HV:KEY=VAL,...", help="hypervisor defaults (repeatable)")
    p.add_argument("-B", "--backend-parameters", metavar="KEY=VAL,...",
                   help="backend defaults (maxmem, minmem, vcpus, auto_balance, ...)")
    p.add_argument("-N", "--nic-parameters", metavar="KEY=VAL,...",
                   help="NIC defaults (mode, link, vlan)")
    p.add_argument("-D", "--disk-parameters", action="append", default=[],
                   metavar="TEMPLATE:KEY=VAL,...",
                   help="disk parameter defaults of a disk template (repeatable)")
    p.add_argument("--uid-pool", metavar="UIDS",
                   help="set the user-id pool, e.g. 1000-1009,2000 (empty: no uids); "
                        "applied after --add-uids and --remove-uids")
    p.add_argument("--add-uids", metavar="UIDS", help="add these uids to the user-id pool")
    p.add_argument("--remove-uids", metavar="UIDS",
                   help="remove these uids from the user-id pool")
    p.add_argument("-C", "--candidate-pool-size", type=int, metavar="N",
                   help="number of master candidates to keep")
    p.add_argument("--max-running-jobs", type=int, metavar="N",
                   help="maximal number of jobs to run simultaneously")
    p.add_argument("--max-tracked-jobs", type=int, metavar="N",
                   help="maximal number of jobs the scheduler tracks simultaneously")
    _yes_no(p, "--maintain-node-health", "maintain_node_health",
            "whether the watcher maintains node health")
    _yes_no(p, "--prealloc-wipe-disks", "prealloc_wipe_disks",
            "whether to wipe disks before allocating them to instances")
    p.add_argument("-I", "--default-iallocator", metavar="NAME",
                   help="default instance allocator (empty: none)")
    p.add_argument("--default-iallocator-params", metavar="KEY=VAL,...",
                   help="parameters of the default instance allocator")
    p.add_argument("--reserved-lvs", metavar="NAMES",
                   help="comma-separated logical volumes (regular expressions) cluster "
                        "verify ignores (empty: none)")
    p.add_argument("--node-parameters", dest="ndparams", metavar="KEY=VAL,...",
                   help="node parameter defaults (ssh_port, spindle_count, ...)")
    p.add_argument("-m", "--mac-prefix", metavar="PREFIX",
                   help="MAC prefix of instance NICs, XX:XX:XX")
    p.add_argument("--master-netdev", metavar="INTERFACE",
                   help="master network device (not supported by this version yet)")
    p.add_argument("--master-netmask", metavar="NETMASK",
                   help="master IP netmask (prefix length); the master IP moves to it")
    _yes_no(p, "--modify-etc-hosts", "modify_etc_hosts",
            "whether the cluster maintains /etc/hosts")
    _yes_no(p, "--use-external-mip-script", "use_external_mip_script",
            "whether a user script sets the master IP up and down")
    p.add_argument("--hypervisor-state", action="append", default=[], metavar="HV:STATE",
                   help="hypervisor state (not supported by this version yet)")
    p.add_argument("--disk-state", action="append", default=[], metavar="STORAGE:STATE",
                   help="disk state (not supported by this version yet)")
    ipolicy_opts.add_ipolicy_options(p, cluster=True)
    p.add_argument("--enabled-disk-templates", metavar="TEMPLATES",
                   help="comma-separated list of enabled disk templates")
    p.add_argument("--drbd-usermode-helper", metavar="HELPER",
                   help="DRBD user-mode helper (not supported by this version yet)")
    p.add_argument("--file-storage-dir", metavar="DIR",
                   help="directory of file-based disks")
    p.add_argument("--shared-file-storage-dir", metavar="DIR",
                   help="directory of shared-file disks")
    p.add_argument("--compression-tools", metavar="TOOLS",
                   help="comma-separated compression tools Ganeti may use (must include "
                        "gzip; empty: the default set)")
    p.add_argument("--instance-communication-network", metavar="NETWORK",
                   help="instance communication network (not supported by this version "
                        "yet)")
    p.add_argument("--install-image", metavar="IMAGE",
                   help="OS image for running OS scripts safely (absolute path or URL)")
    p.add_argument("--zeroing-image", metavar="IMAGE",
                   help="OS image used to zero instance disks (absolute path or URL)")
    _yes_no(p, "--user-shutdown", "enabled_user_shutdown",
            "whether user shutdown of instances is enabled")
    p.add_argument("--enabled-data-collectors", metavar="NAME=BOOL,...",
                   help="activate (true) or deactivate (false) data collectors")
    p.add_argument("--data-collector-interval", metavar="NAME=SECONDS,...",
                   help="how often data collectors run")
    jobs.add_job_options(p, dry_run=True)


def _uid_ranges(value: str | None) -> list[list[int]] | None:
    if value is None:
        return None
    # Not checked here: the master refuses bad bounds (the job fails, as Ganeti's).
    ranges = uidpool.parse(value)
    return [[lo, hi] for lo, hi in ranges]


def _split(text: str) -> list[str]:
    return [x for x in text.split(",") if x] if text else []


def _data_collectors(opts: argparse.Namespace, op: dict[str, Any]) -> None:
    if opts.enabled_data_collectors:
        values = params.parse_keyval(opts.enabled_data_collectors, "--enabled-data-collectors")
        op["enabled_data_collectors"] = {k: v.lower().startswith("t") for k, v in values.items()}
    if opts.data_collector_interval:
        values = params.parse_keyval(opts.data_collector_interval, "--data-collector-interval")
        try:
            op["data_collector_interval"] = {k: int(1e6 * float(v)) for k, v in values.items()}
        except ValueError:
            raise UsageError("Can't transform all values to integers: "
                             f"{opts.data_collector_interval}") from None
        if any(v <= 0 for v in op["data_collector_interval"].values()):
            raise UsageError("Some interval times where not above zero.")


def modify_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_CLUSTER_SET_PARAMS of ``gnt-cluster modify`` (only what was given)."""
    op: dict[str, Any] = {"OP_ID": "OP_CLUSTER_SET_PARAMS"}
    for name in ("candidate_pool_size", "max_running_jobs", "max_tracked_jobs",
                 "default_iallocator", "vg_name", "maintain_node_health",
                 "prealloc_wipe_disks", "mac_prefix", "master_netdev", "modify_etc_hosts",
                 "use_external_mip_script", "file_storage_dir", "shared_file_storage_dir",
                 "install_image", "zeroing_image", "enabled_user_shutdown",
                 "instance_communication_network"):
        if getattr(opts, name) is not None:
            op[name] = getattr(opts, name)
    if opts.force:
        op["force"] = True
    if opts.drbd_usermode_helper is not None:
        op["drbd_helper"] = opts.drbd_usermode_helper
    if opts.master_netmask is not None:
        try:
            op["master_netmask"] = int(opts.master_netmask)
        except ValueError:
            raise UsageError("The --master-netmask option expects an int parameter.") from None
    if opts.enabled_hypervisors is not None:
        op["enabled_hypervisors"] = opts.enabled_hypervisors.split(",")
    if opts.enabled_disk_templates:
        op["enabled_disk_templates"] = opts.enabled_disk_templates.split(",")
    if opts.hypervisor_parameters:
        op["hvparams"] = jobs.ident_keyval(opts.hypervisor_parameters, "-H", "HYPERVISOR")
    for flag, attr, name in (("-B", "backend_parameters", "beparams"),
                             ("-N", "nic_parameters", "nicparams"),
                             ("--node-parameters", "ndparams", "ndparams"),
                             ("--default-iallocator-params", "default_iallocator_params",
                              "default_iallocator_params")):
        if getattr(opts, attr) is not None:
            op[name] = params.parse_keyval(getattr(opts, attr), flag)
    if opts.disk_parameters:
        op["diskparams"] = jobs.ident_keyval(opts.disk_parameters, "-D", "TEMPLATE")
    if opts.hypervisor_state:
        op["hv_state"] = jobs.ident_keyval(opts.hypervisor_state, "--hypervisor-state", "HV")
    if opts.disk_state:
        op["disk_state"] = jobs.ident_keyval(opts.disk_state, "--disk-state", "STORAGE")
    for name in ("uid_pool", "add_uids", "remove_uids"):
        ranges = _uid_ranges(getattr(opts, name))
        if ranges is not None:
            op[name] = ranges
    if opts.reserved_lvs is not None:
        op["reserved_lvs"] = _split(opts.reserved_lvs)
    if opts.compression_tools is not None:
        op["compression_tools"] = (opts.compression_tools.split(",") if opts.compression_tools
                                   else list(DEFAULT_COMPRESSION_TOOLS))
    _data_collectors(opts, op)
    ipolicy = ipolicy_opts.ipolicy_value(opts, group=False)
    if ipolicy:
        op["ipolicy"] = ipolicy
    return op


def cmd_modify(ctx: Context, opts: argparse.Namespace) -> int:
    """Change cluster parameters: submit OP_CLUSTER_SET_PARAMS and wait."""
    op = modify_opcode(opts)
    if len(op) == 1 or set(op) == {"OP_ID", "force"}:
        ctx.err("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    lvm_templates = (constants.DT_DRBD8, constants.DT_PLAIN)
    if opts.vg_name and op.get("enabled_disk_templates") and not any(
            t in op["enabled_disk_templates"] for t in lvm_templates):
        # Ganeti's client says so and sends the opcode anyway
        ctx.out("You specified a volume group with --vg-name, but you did not enable any "
                f"of the following lvm-based disk templates: {', '.join(lvm_templates)}")
    jobs.submit_or_send(ctx, opts, op)
    return constants.EXIT_SUCCESS
