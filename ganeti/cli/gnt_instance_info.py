"""gnt-instance info and console: OP_INSTANCE_QUERY_DATA's answer and the
instance's console description, shown as Ganeti's tool shows them."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ganeti.cli import jobs, table
from ganeti.cli.framework import Context
from ganeti.core import consoles, errors
from ganeti.core import constants as c

#: Ganeti's local disk status values (``LDS_*``) in a block device status.
LDS_UNKNOWN = 3
LDS_FAULTY = 4
VNC_BASE_PORT = 5900
IP4_ADDRESS_ANY = "0.0.0.0"
HV_VNC_BIND_ADDRESS = "vnc_bind_address"
#: Console kinds of an instance's console description.
CONS_MESSAGE = "msg"
CONS_VNC = "vnc"
CONS_SPICE = "spice"
CONS_SSH = "ssh"


# --- info --------------------------------------------------------------------------

def _disk_details(dev: Mapping[str, Any]) -> list[Any]:
    """The logical id of a disk: DRBD ends and port, ``vg/lv``, or as it is."""
    if dev.get("dev_type") == c.DT_DRBD8 and dev.get("drbd_info"):
        drbd = dev["drbd_info"]
        return [("nodeA", f"{drbd['primary_node']}, minor={drbd['primary_minor']}"),
                ("nodeB", f"{drbd['secondary_node']}, minor={drbd['secondary_minor']}"),
                ("port", str(drbd["port"]))]
    logical_id = dev["logical_id"]
    if dev.get("dev_type") == c.DT_PLAIN and isinstance(logical_id, list) \
            and len(logical_id) == 2:
        return [f"{logical_id[0]}/{logical_id[1]}"]
    return [str(logical_id)]


def _device_status(dev_type: str, status: Sequence[Any] | None) -> str:
    """One line for a device's status on a node (Ganeti's wording)."""
    if not status:
        return "not active"
    path, major, minor, sync_percent, eta, degraded, ldisk = status
    text = (f"{path} ({'N/A' if major is None else major}:"
            f"{'N/A' if minor is None else minor})")
    if dev_type == c.DT_DRBD8:
        if sync_percent is not None:
            sync_text = f"*RECOVERING* {sync_percent:5.2f}%,"
            sync_text += f" ETA {eta}s" if eta else " ETA unknown"
        else:
            sync_text = "in sync"
        ldisk_text = (" *MISSING DISK*" if ldisk == LDS_FAULTY
                      else " *UNCERTAIN STATE*" if ldisk == LDS_UNKNOWN else "")
        text += f" {sync_text}, status {'*DEGRADED*' if degraded else 'ok'}{ldisk_text}"
    elif dev_type == c.DT_PLAIN and ldisk == LDS_FAULTY:
        text += " *FAILED* (failed drive?)"
    return text


def block_device_info(index: int, top_level: bool, dev: Mapping[str, Any]) -> list[Any]:
    """A disk (or child device) for info output (Ganeti's ``_FormatBlockDevInfo``)."""
    if top_level:
        title = dev["iv_name"] if dev.get("iv_name") is not None else f"disk {index}"
    else:
        title = f"child {index}"
    size = dev.get("size")
    nice_size = table.format_unit(size, "h") if isinstance(size, int) else str(size)
    data: list[Any] = [(title, f"{dev.get('dev_type')}, size {nice_size}")]
    if top_level:
        if dev.get("spindles") is not None:
            data.append(("spindles", dev["spindles"]))
        data.append(("access mode", dev.get("mode")))
    if dev.get("logical_id") is not None:
        details = _disk_details(dev)
        if len(details) == 1:
            data.append(("logical_id", details[0]))
        else:
            data.extend(details)
    if dev.get("pstatus"):
        data.append(("on primary", _device_status(dev.get("dev_type", ""), dev["pstatus"])))
    if dev.get("sstatus"):
        data.append(("on secondary", _device_status(dev.get("dev_type", ""),
                                                    dev["sstatus"])))
    data.append(("name", dev.get("name")))
    data.append(("UUID", dev.get("uuid")))
    if dev.get("children"):
        data.append(("child devices", [block_device_info(i, False, child)
                                       for i, child in enumerate(dev["children"])]))
    return data


def nic_info(index: int, nic: Sequence[Any]) -> list[Any]:
    """A NIC for info output; ``nic`` is the 9-tuple of the hooks' NIC format."""
    name, uuid, ip, mac, mode, link, vlan, _, netinfo = nic
    network = netinfo["name"] if netinfo else None
    return [(f"nic/{index}", ""), ("MAC", str(mac)), ("IP", str(ip)), ("mode", str(mode)),
            ("link", str(link)), ("vlan", str(vlan)), ("network", str(network)),
            ("UUID", str(uuid)), ("name", str(name))]


def _nodes_info(inst: Mapping[str, Any]) -> list[Any]:
    secondaries = ", ".join(
        f"{name} (group {group}, group UUID {group_uuid})"
        for name, group, group_uuid in zip(inst.get("snodes", []),
                                           inst.get("snodes_group_names", []),
                                           inst.get("snodes_group_uuids", []), strict=False))
    return [[("primary", inst["pnode"]),
             ("group", f"{inst.get('pnode_group_name')} (UUID {inst.get('pnode_group_uuid')})")],
            [("secondaries", secondaries)]]


def _vnc_console(inst: Mapping[str, Any]) -> str | None:
    bind = (inst.get("hv_actual") or {}).get(HV_VNC_BIND_ADDRESS)
    if not bind:
        return None
    port = inst.get("network_port")
    display = int(port) - VNC_BASE_PORT if isinstance(port, int) else 0
    if display > 0 and bind == IP4_ADDRESS_ANY:
        where = f"{inst['pnode']}:{port} (display {display})"
    elif display > 0 and _is_ipv4(bind):
        where = f"{bind}:{port} (node {inst['pnode']}) (display {display})"
    else:  # a socket file
        where = f"{inst['pnode']}:{bind}"
    return f"vnc to {where}"


def _is_ipv4(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts)


def instance_info(inst: Mapping[str, Any]) -> list[Any]:
    """What ``gnt-instance info`` shows of one instance (Ganeti's order and words)."""
    state = f"configured to be {inst.get('config_state')}"
    if inst.get("run_state"):
        state += f", actual state is {inst['run_state']}"
    info: list[Any] = [
        ("Instance name", inst["name"]),
        ("UUID", inst.get("uuid")),
        ("Serial number", str(inst.get("serial_no"))),
        ("Creation time", table.format_time(inst.get("ctime"))),
        ("Modification time", table.format_time(inst.get("mtime"))),
        ("State", state),
        ("Nodes", _nodes_info(inst)),
        ("Operating system", inst.get("os")),
        ("Operating system parameters",
         table.format_params_info(inst.get("os_instance"), inst.get("os_actual") or {})),
    ]
    if "network_port" in inst:
        info.append(("Allocated network port", str(inst["network_port"])))
    info.append(("Hypervisor", inst.get("hypervisor")))
    console = _vnc_console(inst)
    if console:
        info.append(("console connection", console))
    be_actual = dict(inst.get("be_actual") or {})
    if c.BE_MAXMEM in be_actual:
        be_actual["memory"] = be_actual[c.BE_MAXMEM]  # Ganeti's deprecated name, shown too
    info.extend([
        ("Hypervisor parameters",
         table.format_params_info(inst.get("hv_instance"), inst.get("hv_actual") or {})),
        ("Back-end parameters", table.format_params_info(inst.get("be_instance"), be_actual)),
        ("NICs", [nic_info(i, nic) for i, nic in enumerate(inst.get("nics") or [])]),
        ("Disk template", inst.get("disk_template")),
        ("Disks", [block_device_info(i, True, dev)
                   for i, dev in enumerate(inst.get("disks") or [])]),
    ])
    return info


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Show instances' configuration and (unless --static) run-time state."""
    if not opts.names and not opts.show_all:
        ctx.err("No instance selected. Please pass in --all if you want to query all "
                "instances.\nNote that this can take a long time on a big cluster.")
        return c.EXIT_FAILURE
    if opts.names and opts.show_all:
        ctx.err("Cannot use --all if you specify instance names.")
        return c.EXIT_FAILURE
    op = {"OP_ID": "OP_INSTANCE_QUERY_DATA", "instances": list(opts.names),
          "static": opts.static, "use_locking": not opts.static}
    result = jobs.submit_opcode(ctx, opts, op)
    if not result:
        ctx.out("No instances.")
        return c.EXIT_FAILURE
    ctx.out(table.format_generic_info([instance_info(inst) for inst in result.values()]))
    return c.EXIT_SUCCESS


# --- console -----------------------------------------------------------------------

def ssh_console_command(ctx: Context, console: Mapping[str, Any],
                        cluster_name: str) -> list[str]:
    """The ssh command line to an SSH console (Ganeti's options for it)."""
    command = console.get("command")
    if not isinstance(command, str):
        command = shlex.join(str(arg) for arg in command or [])
    argv = ["ssh", "-oEscapeChar=none", "-oHashKnownHosts=no",
            f"-oGlobalKnownHostsFile={ctx.paths.known_hosts}",
            "-oUserKnownHostsFile=/dev/null", "-oCheckHostIp=no", "-oConnectTimeout=10",
            f"-oHostKeyAlias={cluster_name}"]
    if console.get("port"):
        argv.append(f"-oPort={int(console['port'])}")
    argv += ["-oBatchMode=yes", "-oStrictHostKeyChecking=yes", "-t", "-t",
             f"{console.get('user')}@{console.get('host')}", command]
    return argv


def local_console_command(ctx: Context, console: Mapping[str, Any],
                          exists: Callable[[str], bool] = os.path.exists) -> list[str] | None:
    """The console command to run on this machine instead of through ssh: when the
    console's node is this machine, or its serial socket is reachable from here
    (the nodes of a virtual cluster share one filesystem); None otherwise."""
    command = console.get("command")
    if not isinstance(command, list) or not command:
        return None
    socket_path = consoles.socket_of_command(command)
    if socket_path is None:
        return None
    if console.get("host") == ctx.paths.hostname or exists(socket_path):
        return [str(arg) for arg in command]
    return None


def _run_local(ctx: Context, argv: list[str], instance: Any,
               run: Callable[[list[str]], int], which: Callable[[str], str | None]) -> None:
    """Run a local console command; a clear error when its program is missing."""
    if which(argv[0]) is None:
        raise errors.OpExecError(f"Cannot connect to the console of instance {instance}: "
                                 f"'{argv[0]}' is not installed on this machine (install "
                                 f"it, e.g. 'apt-get install {argv[0]}')")
    ctx.err(f"Connected to the serial console of {instance}; press "
            f"{consoles.ESCAPE_KEY} (Ctrl-]) to detach.")
    if run(argv) != 0:
        raise errors.OpExecError(f"Connection to console of instance {instance} failed "
                                 "(is it still running?)")


def show_console(ctx: Context, console: Mapping[str, Any], show_command: bool,
                 cluster_name: str,
                 run: Callable[[list[str]], int] = subprocess.call,
                 which: Callable[[str], str | None] = shutil.which,
                 exists: Callable[[str], bool] = os.path.exists) -> int:
    """Act on a console description: print a message or where to connect, or
    run (or show with --show-cmd) the command of an SSH console.  The command
    runs here when the serial socket is reachable from here, else through ssh;
    ``--show-cmd`` always prints the ssh command, as Ganeti's tool does."""
    kind = console.get("kind")
    instance = console.get("instance")
    if kind == CONS_MESSAGE:
        ctx.out(str(console.get("message")))
    elif kind == CONS_VNC:
        host, port = console.get("host"), console.get("port")
        ctx.out(f"Instance {instance} has VNC listening on {host}:{port} (display "
                f"{console.get('display')}), URL <vnc://{host}:{port}/>")
    elif kind == CONS_SPICE:
        ctx.out(f"Instance {instance} has SPICE listening on {console.get('host')}:"
                f"{console.get('port')}")
    elif kind == CONS_SSH:
        argv = ssh_console_command(ctx, console, cluster_name)
        local = None if show_command else local_console_command(ctx, console, exists)
        if show_command:
            ctx.out(shlex.join(argv))
        elif local is not None:
            _run_local(ctx, local, instance, run, which)
        elif run(argv) != 0:
            raise errors.OpExecError(f"Connection to console of instance {instance} "
                                     "failed, please check cluster configuration")
    else:
        raise errors.GenericError(f"Unknown console type '{kind}'")
    return c.EXIT_SUCCESS


def cmd_console(ctx: Context, opts: argparse.Namespace) -> int:
    """Connect to an instance's console (or show how); the ``console`` field tells how."""
    (cluster_name,) = ctx.luxi().call("QueryConfigValues", ["cluster_name"])
    rows = table.query_rows(ctx, c.QR_INSTANCE, ["console", "oper_state"],
                            [opts.instance_name])
    if not rows:
        raise errors.OpPrereqError(f"Instance '{opts.instance_name}' does not exist",
                                   errors.ECODE_NOENT)
    console, running = rows[0]
    if not console:
        if running:
            raise errors.OpExecError(f"Console information for instance "
                                     f"{opts.instance_name} is unavailable")
        raise errors.OpExecError(f"Instance {opts.instance_name} is not running, can't "
                                 "get console")
    return show_console(ctx, console, opts.show_command, cluster_name)
