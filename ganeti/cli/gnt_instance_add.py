"""gnt-instance add: the options (``gnt-backup import`` takes them too), the
OP_INSTANCE_CREATE they make (Ganeti's checks first) and the command.

``--forthcoming`` and ``--commit`` (reservations) are in
:mod:`ganeti.cli.gnt_instance_forthcoming`.
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import gnt_instance_args as iargs
from ganeti.cli import gnt_instance_forthcoming as reservation
from ganeti.cli import gnt_instance_opts as iopts
from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants as c


def setup_add(p: argparse.ArgumentParser, name_optional: bool = False) -> None:
    """The options of ``add`` (``gnt-backup import`` takes them too;
    ``name_optional``: ``add``'s name, which ``--forthcoming`` may leave out)."""
    p.add_argument("-t", "--disk-template", choices=sorted(c.DISK_TEMPLATES),
                   metavar="TEMPLATE",
                   help=f"disk template ({', '.join(sorted(c.DISK_TEMPLATES))}; default: "
                        "the cluster's first enabled one)")
    p.add_argument("-n", "--node", metavar="PNODE[:SNODE]",
                   help="primary node and, for mirrored templates, secondary node")
    p.add_argument("-I", "--iallocator", metavar="NAME",
                   help="choose the nodes with this allocator ('.': the cluster's "
                        "default)")
    p.add_argument("-g", "--node-group", dest="nodegroup", metavar="GROUP",
                   help="node group for the allocator (name or UUID)")
    p.add_argument("-o", "--os-type", dest="os", metavar="OS",
                   help="operating system (OS definition[+variant])")
    iargs.add_flags(p, "--force-variant")
    p.add_argument("--disk", dest="disks", action="append", default=[],
                   metavar="N:size=SIZE,mode=ro|rw,vg=VG,adopt=LV,...",
                   help="disk N (repeatable)")
    p.add_argument("-s", "--os-size", dest="sd_size", type=iopts.unit_type,
                   metavar="SIZE", help="one disk of this size (MiB unless a unit is "
                                        "given)")
    p.add_argument("--net", dest="nics", action="append", default=[],
                   metavar="N:mac=MAC,ip=IP,mode=MODE,link=LINK,network=NET,vlan=VLAN,...",
                   help="NIC N (repeatable; default: one NIC with the cluster's "
                        "parameters)")
    p.add_argument("--no-nics", action="store_true",
                   help="create no network cards for the instance")
    iargs.add_keyval(p, "-B", "--backend-parameters", dest="beparams",
                     text="backend parameters (maxmem, minmem, vcpus, ...)")
    p.add_argument("-H", "--hypervisor-parameters", dest="hypervisor",
                   metavar="HYPERVISOR[:KEY=VAL,...]",
                   help="hypervisor and hypervisor parameters")
    iargs.add_osparams_options(p)
    iargs.add_file_storage_options(p)
    p.add_argument("--no-start", dest="start", action="store_false",
                   help="do not start the instance after creating it")
    p.add_argument("--no-install", action="store_true",
                   help="do not install the OS (implies --no-start)")
    iargs.add_flags(p, "--no-ip-check", "--no-name-check", "--no-conflicts-check",
                    "--no-wait-for-sync")
    p.add_argument("--opportunistic-locking", action="store_true",
                   help="with an allocator, use only the nodes whose locks are free")
    iargs.add_flags(p, "--ignore-ipolicy")
    p.add_argument("--tags", metavar="TAG,...", help="comma-separated tags of the instance")
    jobs.add_job_options(p, dry_run=True)
    if name_optional:
        p.add_argument("instance_name", metavar="INSTANCE", nargs="?",
                       help="name of the new instance (optional with --forthcoming)")
    else:
        p.add_argument("instance_name", metavar="INSTANCE", help="name of the new instance")


def setup_add_command(p: argparse.ArgumentParser) -> None:
    setup_add(p, name_optional=True)
    reservation.add_options(p)  # after the job options, where Ganeti lists them


def add_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_INSTANCE_CREATE of ``gnt-instance add`` (Ganeti's checks first)."""
    pnode, snode = iopts.split_node_option(opts.node)
    hypervisor: str | None = None
    hvparams: Any = {}
    if opts.hypervisor:
        # (``no_HV`` gives False, refused as Ganeti does when it types the dict)
        hypervisor, hvparams = iopts.split_ident_keyval("-H", opts.hypervisor)
    if opts.nics:
        nics = iopts.parse_nics(opts.nics)
    elif opts.no_nics:
        nics = []
    else:
        nics = [{}]  # one NIC with the cluster's defaults
    disks = ([] if reservation.reserving(opts) and not reservation.disks_given(opts)
             else iopts.parse_create_disks(opts.disks, opts.sd_size, opts.disk_template))
    iargs.keyvals(opts, "beparams", "osparams", "osparams_private", "osparams_secret")
    op: dict[str, Any] = {
        "OP_ID": "OP_INSTANCE_CREATE", "instance_name": opts.instance_name,
        "mode": "create", "disks": disks, "nics": nics,
        "beparams": iopts.typed_beparams(opts.beparams),
        "hvparams": iopts.typed_hvparams(hvparams),
        "osparams": opts.osparams, "osparams_private": opts.osparams_private,
        "osparams_secret": opts.osparams_secret,
        "start": opts.start, "no_install": opts.no_install,
        "force_variant": opts.force_variant, "ip_check": opts.ip_check,
        "name_check": opts.name_check, "conflicts_check": opts.conflicts_check,
        "wait_for_sync": opts.wait_for_sync, "ignore_ipolicy": opts.ignore_ipolicy,
        "opportunistic_locking": opts.opportunistic_locking,
        "identify_defaults": False,
        "tags": opts.tags.split(",") if opts.tags is not None else [],
    }
    optional = {"disk_template": opts.disk_template, "pnode": pnode, "snode": snode,
                "iallocator": opts.iallocator, "group_name": opts.nodegroup,
                "os_type": opts.os, "hypervisor": hypervisor,
                "file_storage_dir": opts.file_storage_dir, "file_driver": opts.file_driver}
    op.update({key: value for key, value in optional.items() if value is not None})
    return reservation.complete_opcode(op, opts)


def cmd_add(ctx: Context, opts: argparse.Namespace) -> int:
    """Create an instance (OP_INSTANCE_CREATE) and wait for the job; with --dry-run,
    print the nodes it would be created on; with --forthcoming, the reservation's
    UUID and nodes."""
    reservation.check(opts)
    result = jobs.submit_or_send(ctx, opts, add_opcode(opts))
    if getattr(opts, "dry_run", False) and isinstance(result, list):
        ctx.out(reservation.dry_run_text(opts, result)
                or f"Dry run: instance {opts.instance_name} would be created on "
                   f"{', '.join(map(str, result))}")
    elif result is not jobs.SUBMITTED:
        reservation.report(ctx, opts, result)
    return c.EXIT_SUCCESS
