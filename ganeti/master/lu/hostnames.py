"""Host names as the instance units check them: Ganeti's ``netutils.Hostname``
(the name's FQDN as ``socket.getfqdn`` finds it, then its address),
``CheckHostnameSane`` (the resolved name must start with the given one, by
whole labels) and ``TcpPing`` (an address is "in use" when a TCP connection to
it is accepted *or refused*: either way a host answered).

Name resolution is the master's :class:`Resolver`, injected through the unit's
context (:attr:`ganeti.master.lu.base.LUContext.resolver`): the real daemon
uses the system resolver (a namespaced virtual cluster bind-mounts its own
hosts file over ``/etc/hosts`` for its daemons, so they resolve the cluster's
names), tests a hosts table of their own.  Resolving blocks, so it runs in the
context's thread pool.
"""

from __future__ import annotations

import errno
import re
import socket
from typing import TYPE_CHECKING, Protocol

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, ECODE_NOTUNIQUE, ECODE_RESOLVER, OpPrereqError

if TYPE_CHECKING:  # base imports this module (the resolver of LUContext)
    from ganeti.master.lu.base import LogicalUnit

#: Ganeti's ``Hostname._VALID_NAME_RE`` (underscores allowed, as Ganeti does).
_VALID_NAME_RE = re.compile(r"^[a-z0-9._-]{1,255}$")
#: Ganeti's ``TCP_PING_TIMEOUT`` (seconds).
TCP_PING_TIMEOUT = 10.0


class Resolver(Protocol):
    """What the units ask about host names (blocking calls)."""

    def fqdn(self, name: str) -> str:
        """``socket.getfqdn(name)``: the first name with a dot among those of the
        address ``name`` resolves to, ``name`` itself if it does not resolve."""

    def address(self, name: str) -> str:
        """The first address ``name`` resolves to (any family); ``OSError`` with
        ``(code, text)`` args if it does not."""

    def tcp_ping(self, ip: str, port: int, timeout: float) -> bool:
        """Whether a host answers a TCP connection to ``ip:port`` (accepted or
        refused) within ``timeout`` seconds."""


class SystemResolver:
    """The system's resolver (``/etc/hosts``, DNS, ... as the C library has it)."""

    def fqdn(self, name: str) -> str:
        return socket.getfqdn(name)

    def address(self, name: str) -> str:
        infos = socket.getaddrinfo(name, None)
        if not infos:
            raise OSError(0, "Unknown error in getaddrinfo(): no address")
        return str(infos[0][4][0])

    def tcp_ping(self, ip: str, port: int, timeout: float) -> bool:
        family = socket.AF_INET6 if ":" in ip else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect((ip, port))
        except TimeoutError:
            return False
        except OSError as err:
            return err.errno == errno.ECONNREFUSED
        finally:
            sock.close()
        return True


def normalize(name: str) -> str:
    """Ganeti's ``Hostname.GetNormalizedName``: lower case, valid characters, no
    empty label; a trailing dot dropped."""
    name = name.lower()
    if not _VALID_NAME_RE.match(name) or ".." in name or name.startswith("."):
        raise OpPrereqError(f"Invalid hostname '{name}'", ECODE_INVAL)
    return name.rstrip(".")


def match_name_component(key: str, names: list[str]) -> str | None:
    """Ganeti's ``MatchNameComponent`` (case-sensitive): the one name of ``names``
    that is ``key`` or starts with ``key`` followed by a dot; None if none or
    several."""
    if key in names:
        return key
    pattern = re.compile(r"^" + re.escape(key) + r"(\..*)?$")
    found = [n for n in names if pattern.match(n)]
    return found[0] if len(found) == 1 else None


def resolve(resolver: Resolver, name: str) -> tuple[str, str]:
    """Ganeti's ``GetHostname(name)``: ``(FQDN, address)`` (blocking);
    OpPrereqError ``resolver_error`` if the name does not resolve."""
    fqdn = normalize(resolver.fqdn(name))
    try:
        ip = resolver.address(fqdn)
    except OSError as err:
        text = err.args[1] if len(err.args) > 1 else str(err)
        raise OpPrereqError(f"The given name ({fqdn}) does not resolve: {text}",
                            ECODE_RESOLVER) from None
    return fqdn, ip


async def check_hostname_sane(lu: LogicalUnit, name: str) -> tuple[str, str]:
    """Ganeti's ``CheckHostnameSane``: ``name`` resolved to ``(FQDN, address)``; the
    FQDN must be ``name`` or start with it (whole labels), else OpPrereqError
    ``wrong_input``.  A different FQDN is logged as Ganeti's LogInfo."""
    fqdn, ip = await lu.ctx.run_blocking(resolve, lu.ctx.resolver, name)
    if fqdn != name:
        lu.ctx.feedback(c.ELOG_MESSAGE, f" - INFO: Resolved given name '{name}' to '{fqdn}'")
    if match_name_component(name, [fqdn]) is None:
        raise OpPrereqError(f"Resolved hostname '{fqdn}' does not look the same as given "
                            f"hostname '{name}'", ECODE_INVAL)
    return fqdn, ip


async def check_ip_free(lu: LogicalUnit, ip: str, name: str) -> None:
    """Ganeti's IP check: OpPrereqError ``resource_not_unique`` if a host answers at
    ``ip`` (on the node daemon's port, as Ganeti's ``TcpPing``)."""
    if await lu.ctx.run_blocking(lu.ctx.resolver.tcp_ping, ip, c.DEFAULT_NODED_PORT,
                                 TCP_PING_TIMEOUT):
        raise OpPrereqError(f"IP {ip} of instance {name} already in use", ECODE_NOTUNIQUE)


__all__ = ["TCP_PING_TIMEOUT", "Resolver", "SystemResolver", "check_hostname_sane",
           "check_ip_free", "match_name_component", "normalize", "resolve"]
