"""Option groups several gnt-instance commands share (argparse set-up helpers).

Split out of :mod:`ganeti.cli.gnt_instance` so that ``add`` (in
:mod:`ganeti.cli.gnt_instance_add`) and the other commands declare their
options the same way; the values are parsed in
:mod:`ganeti.cli.gnt_instance_opts`.
"""

from __future__ import annotations

import argparse

from ganeti.cli import gnt_instance_opts as iopts
from ganeti.core import constants as c


def instance_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("instance_name", metavar="INSTANCE", help="name of the instance")


def add_keyval(p: argparse.ArgumentParser, *flags: str, dest: str, text: str) -> None:
    p.add_argument(*flags, dest=dest, metavar="KEY=VAL,...", help=text)


def add_osparams_options(p: argparse.ArgumentParser, secret: bool = True) -> None:
    add_keyval(p, "-O", "--os-parameters", dest="osparams", text="OS parameters")
    add_keyval(p, "--os-parameters-private", dest="osparams_private",
               text="private OS parameters (not logged)")
    if secret:
        add_keyval(p, "--os-parameters-secret", dest="osparams_secret",
                   text="secret OS parameters (not logged or stored; give them for "
                        "every operation)")


def keyvals(opts: argparse.Namespace, *names: str) -> None:
    """Parse the ``key=val,...`` options ``names`` of ``opts`` in place ({} if absent)."""
    flags = {"osparams": "-O", "osparams_private": "--os-parameters-private",
             "osparams_secret": "--os-parameters-secret", "beparams": "-B",
             "hvparams": "-H"}
    for name in names:
        setattr(opts, name, iopts.split_keyval(flags[name], getattr(opts, name)))


def add_hv_be_options(p: argparse.ArgumentParser, purpose: str) -> None:
    add_keyval(p, "-H", "--hypervisor-parameters", dest="hvparams",
               text=f"hypervisor parameters {purpose}")
    add_keyval(p, "-B", "--backend-parameters", dest="beparams",
               text=f"backend parameters {purpose}")


def add_file_storage_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file-storage-dir", metavar="DIR",
                   help="directory of file-based disks, relative to the cluster's file "
                        "storage directory")
    p.add_argument("--file-driver", choices=sorted(c.FILE_DRIVERS),
                   help="driver of file-based disks")


def add_shutdown_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shutdown-timeout", type=int, default=c.DEFAULT_SHUTDOWN_TIMEOUT,
                   metavar="SECONDS",
                   help="seconds to wait for the instance to shut down (default: "
                        f"{c.DEFAULT_SHUTDOWN_TIMEOUT})")


#: Flags several commands share: destination, action, help.
FLAGS: dict[str, tuple[str, str, str]] = {
    "--no-ip-check": ("ip_check", "store_false",
                      "do not check that the instance's IP is not in use"),
    "--no-name-check": ("name_check", "store_false",
                        "do not check that the instance's name resolves (implies "
                        "--no-ip-check)"),
    "--no-conflicts-check": ("conflicts_check", "store_false",
                             "do not check for conflicting IPs"),
    "--no-wait-for-sync": ("wait_for_sync", "store_false",
                           "do not wait for the disks to synchronize"),
    "--ignore-ipolicy": ("ignore_ipolicy", "store_true", "ignore instance policy violations"),
    "--force-variant": ("force_variant", "store_true", "accept an unknown OS variant"),
    "--no-remember": ("no_remember", "store_true",
                      "do not record the new state in the configuration"),
    "--ignore-offline": ("ignore_offline", "store_true",
                         "ignore offline nodes and do as much as possible"),
}


def add_flags(p: argparse.ArgumentParser, *flags: str) -> None:
    for flag in flags:
        dest, action, text = FLAGS[flag]
        p.add_argument(flag, dest=dest, action=action, help=text)


def add_force(p: argparse.ArgumentParser, text: str = "force the operation") -> None:
    p.add_argument("-f", "--force", action="store_true", help=text)
