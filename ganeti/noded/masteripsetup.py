"""The default master IP setup script: ``python -m ganeti.noded.masteripsetup start|stop``.

Our counterpart of Ganeti's ``tools/master-ip-setup``, with the same interface:
the action as the only argument and the address in the environment
(``MASTER_NETDEV``, ``MASTER_IP``, ``MASTER_NETMASK``, ``CLUSTER_IP_VERSION``).
Exit status 0 on success (messages on standard output), 1 with the reason on
standard error otherwise.  Everything is validated before any command runs, and
the commands are argument lists (no shell).

``start`` adds ``IP/NETMASK`` to ``NETDEV`` (label ``NETDEV:0``), then announces
it (gratuitous ARP with ``arping``, or ``ndisc6`` for IPv6; best effort).  It
does nothing when the kernel already treats the address as local (``ip route
get`` answers ``local``): the address is up here already, or it lies in a
loopback range such as the ``127.x`` master IP of a loopback virtual cluster.
It refuses when another machine answers on the address (``fping``, as Ganeti's
script; skipped where ``fping`` is not installed).

``stop`` removes ``IP/NETMASK`` from ``NETDEV``; if the address is not there it
does nothing, unless the address sits on another device (an error, as
Ganeti's: that is not ours to remove).
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

START = "start"
STOP = "stop"
ACTIONS = (START, STOP)

#: A network device name as Linux accepts it (at most 15 bytes, no ``/``, blanks or
#: ``:``, the label separator); full match only.
NETDEV_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}")

_DIGITS_RE = re.compile(r"[0-9]{1,3}")

IP_COMMAND = "ip"
#: Ganeti's probe of the address on the network: 5 packets, 200 ms apart.
FPING_ARGS = ("-c", "5", "-p", "200")
#: The extra search path Ganeti's script uses for its tools.
SEARCH_PATH = "/sbin:/usr/sbin:/usr/local/sbin:/bin:/usr/bin:/usr/local/bin"

#: Runs a command: ``(exit status, output)``; status 127 when it cannot be started.
CommandRunner = Callable[[Sequence[str]], tuple[int, str]]
#: Whether a program is installed.
Which = Callable[[str], bool]


class SetupError(Exception):
    """The action failed; the message says why (exit status 1)."""


@dataclass(frozen=True)
class MasterAddress:
    """The validated environment of one run."""

    netdev: str
    ip: str
    netmask: int
    version: int

    @property
    def cidr(self) -> str:
        """``IP/NETMASK``."""
        return f"{self.ip}/{self.netmask}"


def check_netdev(value: object) -> str:
    """``value`` if it is a device name we may pass to ``ip``, or "" (no device: the
    address can only be one the machine already has); SetupError otherwise."""
    if value == "":
        return ""
    if not isinstance(value, str) or not NETDEV_RE.fullmatch(value) or value in (".", ".."):
        raise SetupError(f"Invalid master network device {value!r}")
    return value


def check_address(ip: object, netmask: object, version: object) -> tuple[str, int, int]:
    """The normalised ``(ip, netmask, version)``; SetupError for anything invalid.

    ``netmask`` and ``version`` may be strings (the environment) or integers.
    """
    ver = int(str(version)) if _DIGITS_RE.fullmatch(str(version)) else -1
    if isinstance(version, bool) or ver not in (4, 6):
        raise SetupError(f"Invalid cluster IP version specified: {version}")
    try:
        addr = ipaddress.ip_address(str(ip)) if isinstance(ip, str) else None
    except ValueError:
        addr = None
    if addr is None or addr.version != ver:
        raise SetupError(f"Invalid master IP {ip!r} for IP version {ver}")
    bits = 32 if ver == 4 else 128
    text = str(netmask)
    if isinstance(netmask, bool) or not _DIGITS_RE.fullmatch(text) or not 0 < int(text) <= bits:
        raise SetupError(f"Invalid master netmask {netmask!r} (1..{bits})")
    return str(addr), int(text), ver


def address_from_env(environ: Mapping[str, str]) -> MasterAddress:
    """The four variables, validated; SetupError names the first that is missing or bad."""
    for name in ("MASTER_NETDEV", "MASTER_IP", "MASTER_NETMASK", "CLUSTER_IP_VERSION"):
        if name not in environ:
            raise SetupError(f"{name} is not set")
    netdev = check_netdev(environ["MASTER_NETDEV"])
    ip, netmask, version = check_address(environ["MASTER_IP"], environ["MASTER_NETMASK"],
                                         environ["CLUSTER_IP_VERSION"])
    return MasterAddress(netdev, ip, netmask, version)


# --- the commands (pure: unit-tested) ----------------------------------------

def add_command(addr: MasterAddress) -> list[str]:
    """``ip address add IP/NETMASK dev NETDEV [label NETDEV:0]`` (labels are IPv4 only)."""
    cmd = [IP_COMMAND, "address", "add", addr.cidr, "dev", addr.netdev]
    if addr.version == 4:
        cmd += ["label", f"{addr.netdev}:0"]
    return cmd


def del_command(addr: MasterAddress) -> list[str]:
    """``ip address del IP/NETMASK dev NETDEV``."""
    return [IP_COMMAND, "address", "del", addr.cidr, "dev", addr.netdev]


def announce_command(addr: MasterAddress) -> list[str]:
    """Gratuitous ARP (IPv4) or an unsolicited neighbour advertisement probe (IPv6)."""
    if addr.version == 4:
        return ["arping", "-q", "-U", "-c", "3", "-I", addr.netdev, "-s", addr.ip, addr.ip]
    return ["ndisc6", "-q", "-r", "3", addr.ip, addr.netdev]


def route_command(addr: MasterAddress) -> list[str]:
    """``ip -o route get IP``: its first word is ``local`` for an address of this machine."""
    return [IP_COMMAND, f"-{addr.version}", "-o", "route", "get", addr.ip]


def list_command(addr: MasterAddress) -> list[str]:
    """``ip -o address show``: every address of every device, one a line."""
    return [IP_COMMAND, f"-{addr.version}", "-o", "address", "show"]


def probe_command(addr: MasterAddress) -> list[str]:
    """``fping``: exit status 0 when something answers on the address."""
    return ["fping", *FPING_ARGS, addr.ip]


def parse_addresses(output: str) -> list[tuple[str, str]]:
    """``(device, address/prefix)`` pairs from ``ip -o address show`` output."""
    pairs: list[tuple[str, str]] = []
    for line in output.splitlines():
        words = line.split()
        # "<index>: <dev> inet|inet6 <addr>/<prefix> ..."
        if len(words) >= 4 and words[2] in ("inet", "inet6"):
            pairs.append((words[1].split("@", 1)[0], words[3]))
    return pairs


def _same_ip(cidr: str, ip: str) -> bool:
    try:
        return ipaddress.ip_interface(cidr).ip == ipaddress.ip_address(ip)
    except ValueError:
        return False


# --- the actions --------------------------------------------------------------

def start(addr: MasterAddress, run: CommandRunner, which: Which) -> str:
    """Bring the address up; the message to print.  SetupError if it cannot."""
    status, output = run(route_command(addr))
    if status == 0 and output.split()[:1] == ["local"]:
        return (f"Master IP address {addr.ip} already configured on this machine. "
                "Doing nothing.")
    if not addr.netdev:
        raise SetupError(f"Error: master IP address {addr.ip} is not configured on this "
                         "machine and the cluster has no master network device.")
    if which("fping"):
        status, _ = run(probe_command(addr))
        if status == 0:
            raise SetupError(f"Error: master IP address {addr.ip} configured on another "
                             "machine.")
    status, output = run(add_command(addr))
    if status != 0:
        raise SetupError("Error during the activation of the master IP address "
                         f"{addr.cidr} on {addr.netdev}: {output.strip()}")
    tool = "arping" if addr.version == 4 else "ndisc6"
    if which(tool):
        run(announce_command(addr))  # best effort, as Ganeti's
    return f"Master IP address {addr.cidr} activated on {addr.netdev}."


def stop(addr: MasterAddress, run: CommandRunner) -> str:
    """Take the address down; the message to print.  SetupError if it cannot."""
    status, output = run(list_command(addr))
    if status != 0:
        raise SetupError(f"Cannot list the addresses of this machine: {output.strip()}")
    pairs = parse_addresses(output)
    if not addr.netdev or (addr.netdev, addr.cidr) not in pairs:
        elsewhere = sorted({f"{cidr} on {dev}" for dev, cidr in pairs
                            if _same_ip(cidr, addr.ip)})
        if elsewhere:
            raise SetupError(f"Error: master IP address {addr.ip} configured on wrong "
                             f"device or netmask ({', '.join(elsewhere)}; expected "
                             f"{addr.cidr} on {addr.netdev or 'a device'}), "
                             "can't shut it down.")
        return "Master IP address not configured on this machine. Doing nothing."
    status, output = run(del_command(addr))
    if status != 0:
        raise SetupError("Error during the deactivation of the master IP address "
                         f"{addr.cidr} on {addr.netdev}: {output.strip()}")
    return f"Master IP address {addr.cidr} removed from {addr.netdev}."


def change_netmask(addr: MasterAddress, new_netmask: int, run: CommandRunner) -> str:
    """Ganeti's ChangeMasterNetmask: add ``IP/new`` to the device, then remove ``IP/old``;
    the message to log.

    Nothing changes when the address is local without being configured on the
    device (a loopback range).  SetupError if the address is not up here or a
    command fails.
    """
    status, output = run(route_command(addr))
    if status != 0 or output.split()[:1] != ["local"]:
        raise SetupError("The master IP address is not up, not attempting to change its "
                         "netmask")
    status, output = run(list_command(addr))
    if status != 0:
        raise SetupError(f"Cannot list the addresses of this machine: {output.strip()}")
    if not addr.netdev or (addr.netdev, addr.cidr) not in parse_addresses(output):
        return (f"Master IP address {addr.ip} is local but not configured as {addr.cidr} "
                f"on {addr.netdev or 'any device'}; nothing to change.")
    new = MasterAddress(addr.netdev, addr.ip, new_netmask, addr.version)
    status, output = run(add_command(new))
    if status != 0:
        raise SetupError(f"Could not set the new netmask on the master IP address: "
                         f"{output.strip()}")
    status, output = run(del_command(addr))
    if status != 0:
        raise SetupError("Could not bring down the master IP address with the old netmask: "
                         f"{output.strip()}")
    return f"Master IP address netmask changed to {new.cidr} on {addr.netdev}."


def run_command(argv: Sequence[str]) -> tuple[int, str]:
    """Run one command (blocking; this is the script's own process); status and output."""
    path = shutil.which(argv[0], path=SEARCH_PATH)
    if path is None:
        return 127, f"{argv[0]}: command not found"
    try:
        proc = subprocess.run([path, *argv[1:]], capture_output=True, timeout=30,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, f"{argv[0]}: {err}"
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")


def installed(program: str) -> bool:
    """Whether ``program`` is on the script's search path."""
    return shutil.which(program, path=SEARCH_PATH) is not None


def main(argv: Sequence[str], environ: Mapping[str, str],
         run: CommandRunner = run_command, which: Which = installed) -> int:
    """The script: exit status 0 or 1."""
    if len(argv) != 1 or argv[0] not in ACTIONS:
        print(f"Usage: master-ip-setup {{{'|'.join(ACTIONS)}}}", file=sys.stderr)
        return 1
    try:
        addr = address_from_env(environ)
        message = start(addr, run, which) if argv[0] == START else stop(addr, run)
    except SetupError as err:
        print(err, file=sys.stderr)
        return 1
    print(message)
    return 0


if __name__ == "__main__":  # pragma: no cover (run as a program by noded)
    import os

    sys.exit(main(sys.argv[1:], os.environ))
