"""twistd/twist entry point of ganeti-rapi: options, start-up checks, the service tree.

The plugin (``twisted/plugins/ganeti_rapi.py``) composes the RAPI with the
WebSocket feed, which lives in another package; :func:`make_service` takes
the feed as a resource factory and start/stop callables.  :func:`makeService`
builds the daemon without a feed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.application import service
from twisted.python import usage
from twisted.web.resource import IResource

from ganeti import daemon
from ganeti.core import constants, ssconf
from ganeti.core.errors import ConfigurationError, GenericError
from ganeti.core.paths import Paths

if TYPE_CHECKING:
    from ganeti.rapi.service import RapiContextFactory

ANY_ADDRESS = "0.0.0.0"
DEFAULT_MAX_BODY = 1024 * 1024
DEFAULT_MAX_CLIENTS = 1000
#: The environment variable giving --feed-max-pause's default (tests, a virtual cluster).
FEED_MAX_PAUSE_ENV = "GANETI_FEED_MAX_PAUSE"
FEED_MAX_RESYNCS_ENV = "GANETI_FEED_MAX_RESYNCS"
#: Seconds an idle keep-alive connection stays open.
IDLE_TIMEOUT = 60.0
#: The dashboard's files, shipped in the package.
STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


class Options(usage.Options):
    """Command-line options of ganeti-rapi."""

    synopsis = "[options]"
    longdesc = ("The Ganeti remote API daemon: RAPI v2 over HTTPS (DATA_DIR/rapi.pem), "
                "WebSocket job feeds and the web dashboard; a LUXI client of masterd. "
                "Runs only on the master node. GANETI_ROOTDIR and GANETI_HOSTNAME select "
                "a virtual-cluster node. Logs at info level (--debug: debug too) to "
                "twistd's --logfile; SIGHUP reopens it and the access log and re-reads "
                "the users file.")
    optFlags = [
        daemon.DEBUG_FLAG,
        ["require-authentication", None, "Require authentication for every request "
         "(default: read-only resources are open to anonymous clients)"],
        ["no-ssl", None, "Serve plain HTTP instead of HTTPS (for tests only: passwords "
         "travel in clear text)"],
    ]
    optParameters = [
        ["bind", "b", ANY_ADDRESS, "Address to listen on"],
        ["port", "p", constants.DEFAULT_RAPI_PORT, "TCP port to listen on", int],
        ["max-body", None, DEFAULT_MAX_BODY, "Largest request body accepted, in bytes", int],
        ["max-clients", None, DEFAULT_MAX_CLIENTS,
         "Most client connections open at once; more are refused", int],
        ["max-clients-per-address", None, None,
         "Most connections one client address may hold (default: a tenth of "
         "--max-clients); a tenth of --max-clients stays kept for new addresses", int],
        ["request-timeout", None, None,
         "Seconds a connection has to send a complete request (default 10)", float],
        ["feed-max-pause", None, None,
         "Seconds a /2/feed client may stop reading before it is closed (default 60, "
         "or $GANETI_FEED_MAX_PAUSE)", float],
        ["feed-max-resyncs", None, None,
         "Times a /2/feed client may fall behind the history within 60 s before it is "
         "closed (default 3, or $GANETI_FEED_MAX_RESYNCS)", int],
    ]

    def postOptions(self) -> None:
        if not 0 <= self["port"] <= 65535:
            raise usage.UsageError("--port must be between 0 and 65535")
        if self["max-body"] < 1024:
            raise usage.UsageError("--max-body must be at least 1024 bytes")
        if self["max-clients"] < 1:
            raise usage.UsageError("--max-clients must be at least 1")
        per_address = self["max-clients-per-address"]
        if per_address is not None and not 1 <= per_address <= self["max-clients"]:
            raise usage.UsageError("--max-clients-per-address must be between 1 and "
                                   "--max-clients")
        timeout = self["request-timeout"]
        if timeout is not None and not 0.5 <= timeout <= 3600:
            raise usage.UsageError("--request-timeout must be between 0.5 and 3600 seconds")
        self._default_from_env("feed-max-pause", FEED_MAX_PAUSE_ENV, float, 1, 86400)
        self._default_from_env("feed-max-resyncs", FEED_MAX_RESYNCS_ENV, int, 1, 1000)

    def _default_from_env(self, option: str, env: str, kind: type, low: float,
                          high: float) -> None:
        """``option`` from the environment variable ``env`` unless given, then
        checked to lie in ``[low, high]``."""
        if self[option] is None and os.environ.get(env):
            try:
                self[option] = kind(os.environ[env])
            except ValueError:
                raise usage.UsageError(f"{env} must be a {kind.__name__}") from None
        value = self[option]
        if value is not None and not low <= value <= high:
            raise usage.UsageError(f"--{option} must be between {low:g} and {high:g}")

def check_master(paths: Paths) -> None:
    """Refuse to run on a node that ssconf does not name as the master."""
    master = ssconf.read(paths, "master_node")
    if master != paths.hostname:
        raise ConfigurationError(f"this node ({paths.hostname}) is not the master node; "
                                 f"ganeti-rapi runs on the master, {master}")


def startup_paths() -> Paths:
    """This node's paths, after checking that it is the master; exits with a message if not."""
    try:
        paths = Paths.from_env()
        check_master(paths)
    except GenericError as err:
        raise SystemExit(f"ganeti-rapi: cannot start: {err}") from None
    return paths


def load_tls(path: str) -> RapiContextFactory:
    """The server's TLS context from a PEM holding the key, the certificate and any
    chain after it; raises :class:`ConfigurationError` with the reason if unusable."""
    from ganeti.rapi.service import RapiContextFactory

    try:
        with open(path, "rb") as f:
            pem = f.read()
    except OSError as err:
        raise ConfigurationError(f"cannot read {path}: {err.strerror}") from None
    try:
        return RapiContextFactory(pem)
    except ValueError as err:
        raise ConfigurationError(f"{path} does not hold a usable key and certificate: "
                                 f"{err}") from None


def console_relay(reactor: Any, luxi: Any, paths: Paths
                  ) -> Callable[[str, str | None, bool], IResource] | None:
    """The live serial console's resource factory: the relay reaches the nodes
    with the cluster certificate; without a readable server.pem there is none."""
    from twisted.logger import Logger

    from ganeti.rapi.console import ConsoleRelay
    from ganeti.rpc.tls import ClusterCertificate

    try:
        cluster = ClusterCertificate.from_file(paths.server_pem)
    except (OSError, ValueError) as err:
        Logger().warn("No live serial consoles: cannot load {path}: {error}",
                      path=paths.server_pem, error=err)
        return None
    return ConsoleRelay(reactor, luxi, cluster).resource


def make_service(options: Options, paths: Paths | None = None,
                 websocket: Callable[[], IResource] | None = None,
                 on_start: Callable[[], object] | None = None,
                 on_stop: Callable[[], object] | None = None) -> service.IService:
    """Build ganeti-rapi; exits with a message off the master or without a usable rapi.pem.

    The port is listened on when twistd starts the service: one in use fails
    the start with exit status 1 (:mod:`ganeti.daemon`).

    ``websocket`` makes the feed resource served at ``/2/feed``; ``on_start``
    and ``on_stop`` run when the daemon starts and stops (the feed relay).
    """
    from twisted.internet import reactor
    from twisted.logger import Logger

    from ganeti.luxi.twclient import AsyncLuxiClient
    from ganeti.rapi.accesslog import AccessLog
    from ganeti.rapi.auth import UsersFile
    from ganeti.rapi.server import RapiApp
    from ganeti.rapi.service import RapiDaemon
    from ganeti.rapi.web import make_site

    daemon_log = daemon.setup_log(options, "ganeti-rapi")
    if paths is None:
        paths = startup_paths()
    tls = None
    if options["no-ssl"]:
        Logger().warn("*** ganeti-rapi runs WITHOUT TLS (--no-ssl): requests, passwords "
                      "included, travel in clear text. Use this for tests only. ***")
    else:
        try:
            tls = load_tls(paths.rapi_pem)
        except ConfigurationError as err:
            daemon.cannot_start(daemon_log, "ganeti-rapi", str(err))
    luxi = AsyncLuxiClient(reactor, paths.luxi_socket)
    users = UsersFile(paths.rapi_users, reactor)
    access_log = AccessLog(os.path.join(paths.log_dir, constants.RAPI_ACCESS_LOG), reactor)
    static_dir = STATIC_DIR if os.path.isdir(STATIC_DIR) else None
    app = RapiApp(None, luxi, reactor, users, require_auth=options["require-authentication"],
                  max_body=options["max-body"], websocket=websocket, static_dir=static_dir,
                  console=console_relay(reactor, luxi, paths))
    site = make_site(app, access_log, reactor, timeout=IDLE_TIMEOUT,
                     max_clients=options["max-clients"],
                     per_address=options["max-clients-per-address"],
                     request_timeout=options["request-timeout"])
    return RapiDaemon(reactor, site, users, access_log, port=options["port"],
                      bind=options["bind"], tls=tls,
                      max_clients=options["max-clients"], luxi=luxi, on_start=on_start,
                      on_stop=on_stop, daemon_log=daemon_log,
                      install_signal=daemon.sighup_installer(reactor),
                      process_exit=daemon.ProcessExit())


def makeService(options: Options) -> service.IService:
    """ganeti-rapi without the WebSocket feed (the plugin adds it)."""
    return make_service(options)
