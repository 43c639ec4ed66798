"""twistd/twist entry point of ganeti-confd: options and the service tree."""

from __future__ import annotations

from twisted.application import service
from twisted.python import usage

from ganeti import daemon
from ganeti.core import constants, ssconf
from ganeti.core.errors import GenericError
from ganeti.core.paths import Paths

ANY_ADDRESS = "0.0.0.0"


class Options(usage.Options):
    """Command-line options of ganeti-confd."""

    synopsis = "[options]"
    longdesc = ("The Ganeti configuration query daemon: answers HMAC-signed read-only "
                "queries over UDP from this master candidate's copy of config.data. "
                "GANETI_ROOTDIR and GANETI_HOSTNAME select a virtual-cluster node. "
                "Logs at info level (--debug: debug too) to twistd's --logfile; SIGHUP "
                "reopens it and re-reads the config.")
    optFlags = [daemon.DEBUG_FLAG]
    optParameters = [
        ["bind", "b", None,
         "Address to listen on (default: this node's primary IP from ssconf, else 0.0.0.0)"],
        ["port", "p", constants.DEFAULT_CONFD_PORT, "UDP port to listen on", int],
    ]

    def postOptions(self) -> None:
        if not 0 <= self["port"] <= 65535:
            raise usage.UsageError("--port must be between 0 and 65535")


def makeService(options: Options) -> service.IService:
    """Build the confd daemon; exits 1 with a message on a node that may not serve.

    The UDP port is bound when twistd starts the service: one in use fails the
    start with exit status 1 (:mod:`ganeti.daemon`).
    """
    from twisted.internet import reactor

    from ganeti.confd.server import ConfdProtocol
    from ganeti.confd.service import ConfdDaemon, load_snapshot

    daemon_log = daemon.setup_log(options, "ganeti-confd")
    try:
        paths = Paths.from_env()
        first = load_snapshot(paths)
    except (GenericError, OSError, ValueError) as err:
        daemon.cannot_start(daemon_log, "ganeti-confd", str(err))
    if not first.candidate:
        daemon.cannot_start(daemon_log, "ganeti-confd", f"{first.why_not}; confd runs "
                            "only on the master and master candidates", what="not starting")
    bind = options["bind"] or ssconf.node_primary_ip(paths) or ANY_ADDRESS
    protocol = ConfdProtocol(reactor)
    return ConfdDaemon(reactor, paths, protocol, port=options["port"], bind=bind,
                       first=first, daemon_log=daemon_log,
                       install_signal=daemon.sighup_installer(reactor),
                       process_exit=daemon.ProcessExit())
