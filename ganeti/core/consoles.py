"""How to reach an instance's console: Ganeti's console object (``InstanceConsole``).

Pure: the master computes it from the config (``OP_INSTANCE_CONSOLE`` and the
``console`` query field), as Ganeti's hypervisor classes do.  A kvm instance
with ``serial_console`` gets an ``ssh`` console whose command attaches socat to
the serial socket QEMU serves on the primary node
(``RUN_DIR/kvm-hypervisor/ctrl/<name>.serial``), with Ganeti's detach key
(``^]``); else, with ``vnc_bind_address`` and a VNC port, a ``vnc`` console;
else a message.

In a virtual cluster every node's root directory is a sibling of this
process's ``GANETI_ROOTDIR`` named after the node (Ganeti's vcluster layout),
so the master can name the socket path on another node.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ganeti.core import constants as c
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.params_fill import fill_hv, fill_nd
from ganeti.core.paths import ROOTDIR_ENV, Paths

CONS_MESSAGE = "msg"
CONS_SSH = "ssh"
CONS_VNC = "vnc"
CONS_SPICE = "spice"
#: The user Ganeti's ssh console logs in as.
SSH_CONSOLE_USER = "root"
SOCAT = "socat"
#: Ganeti's console detach key: Ctrl-] (as telnet and virsh console).
ESCAPE_CODE = 0x1D
ESCAPE_KEY = "^]"
VNC_BASE_PORT = 5900
FAKE_CONSOLE_MESSAGE = "Console not available for fake hypervisor"
IP4_ADDRESS_ANY = "0.0.0.0"
#: Under a node's RUN_DIR: QEMU's serial socket and the log of its output.
KVM_DIR = "kvm-hypervisor"


def serial_socket_path(run_dir: str, instance: str) -> str:
    """The unix socket QEMU serves the serial console of ``instance`` on."""
    return os.path.join(run_dir, KVM_DIR, "ctrl", f"{instance}.serial")


def serial_log_path(run_dir: str, instance: str) -> str:
    """The log of everything the instance wrote to its serial console."""
    return os.path.join(run_dir, KVM_DIR, "console", f"{instance}.log")


def node_paths(node_name: str, environ: Mapping[str, str] | None = None) -> Paths:
    """The paths of node ``node_name`` as seen from this process: the real paths on
    a real cluster, the sibling root directory in a virtual one."""
    env = os.environ if environ is None else environ
    own_root = env.get(ROOTDIR_ENV) or ""
    if not own_root:
        return Paths(root="", hostname=node_name)
    return Paths(root=os.path.join(os.path.dirname(os.path.normpath(own_root)), node_name),
                 hostname=node_name)


def socat_command(socket_path: str) -> list[str]:
    """socat on the terminal, raw, no echo, ``^]`` detaches; the other end the socket."""
    return [SOCAT, f"STDIO,raw,echo=0,escape=0x{ESCAPE_CODE:x}", f"UNIX-CONNECT:{socket_path}"]


def message(instance: str, text: str) -> dict[str, Any]:
    """A console that is only a message."""
    return {"instance": instance, "kind": CONS_MESSAGE, "message": text}


def kvm_console(instance: str, network_port: int | None, hvparams: Mapping[str, Any],
                node_name: str, ssh_port: int | None,
                environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Ganeti's console object of a running kvm instance (see the module docstring)."""
    if hvparams.get("serial_console"):
        path = serial_socket_path(node_paths(node_name, environ).run_dir, instance)
        console: dict[str, Any] = {"instance": instance, "kind": CONS_SSH, "host": node_name,
                                   "user": SSH_CONSOLE_USER, "command": socat_command(path)}
        if ssh_port:
            console["port"] = int(ssh_port)
        return console
    vnc_bind = hvparams.get("vnc_bind_address")
    if vnc_bind and network_port and network_port > VNC_BASE_PORT:
        return {"instance": instance, "kind": CONS_VNC, "host": vnc_bind,
                "port": network_port, "display": network_port - VNC_BASE_PORT}
    spice_bind = hvparams.get("spice_bind")
    if spice_bind and network_port:
        return {"instance": instance, "kind": CONS_SPICE, "host": spice_bind,
                "port": network_port}
    return message(instance, f"No serial shell for instance {instance}")


def socket_of_command(command: Any) -> str | None:
    """The unix socket a console command built by :func:`socat_command` attaches to."""
    if isinstance(command, list) and command and command[0] == SOCAT:
        last = command[-1]
        if isinstance(last, str) and last.startswith("UNIX-CONNECT:"):
            return last[len("UNIX-CONNECT:"):]
    return None


def instance_console(cfg: ConfigData, inst: Instance,
                     environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The console object of a running instance, from the config (Ganeti's
    ``GetInstanceConsole`` with the cluster-filled parameters)."""
    if inst.hypervisor == c.HT_FAKE:
        return message(inst.name, FAKE_CONSOLE_MESSAGE)
    node = cfg.nodes.get(inst.primary_node)
    if node is None:
        return message(inst.name, f"Primary node of instance {inst.name} is unknown")
    if inst.hypervisor != c.HT_KVM:
        return message(inst.name, f"Console of {inst.hypervisor} instances is not "
                                  f"available (node {node.name})")
    hvparams = fill_hv(cfg.cluster, inst.hypervisor, inst.os, inst.hvparams)
    ndparams = fill_nd(cfg.cluster, cfg.nodegroups.get(node.group), node)
    return kvm_console(inst.name, inst.network_port, hvparams, node.name,
                       ndparams.get(c.ND_SSH_PORT), environ)
