"""A host-name resolver reading a hosts table, as the C library's ``files`` source
reads ``/etc/hosts`` (the first line naming a host gives its address; the first
line of an address gives its canonical name and aliases), for the master's
:class:`ganeti.master.lu.hostnames.Resolver`."""

from __future__ import annotations

import socket


class HostsResolver:
    """Resolves from ``hosts`` (``/etc/hosts`` text); ``alive`` are the addresses
    where a TCP connection is answered.  ``calls`` records ``(method, argument)``."""

    def __init__(self, hosts: str, alive: tuple[str, ...] = ()) -> None:
        self.lines: list[tuple[str, list[str]]] = []
        for line in hosts.splitlines():
            fields = line.split("#", 1)[0].split()
            if len(fields) >= 2:
                self.lines.append((fields[0], fields[1:]))
        self.alive = set(alive)
        self.calls: list[tuple[str, str]] = []

    def _forward(self, name: str) -> str | None:
        for ip, names in self.lines:
            if name in names:
                return ip
        return None

    def fqdn(self, name: str) -> str:
        self.calls.append(("fqdn", name))
        ip = self._forward(name)
        if ip is None:
            return name
        for addr, names in self.lines:
            if addr == ip:
                return next((n for n in names if "." in n), names[0])
        return name

    def address(self, name: str) -> str:
        self.calls.append(("address", name))
        ip = self._forward(name)
        if ip is None:
            raise OSError(socket.EAI_NONAME, "Name or service not known")
        return ip

    def tcp_ping(self, ip: str, port: int, timeout: float) -> bool:
        self.calls.append(("tcp_ping", ip))
        return ip in self.alive
